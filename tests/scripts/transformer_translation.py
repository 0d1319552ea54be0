"""Seq2seq "translation" with nn.Transformer (the PyTorch tutorial's shape): token embeddings scaled by sqrt(d),
sinusoidal positions, padding and causal masks, label-smoothed cross-entropy ignoring padding, Adam, greedy
decoding. The task maps a digit string to its reverse shifted by one."""
import math

import numpy as np
import torch
import torch.nn as nn

from _common import init_params, report

PAD, BOS, EOS, VOCAB = 0, 1, 2, 13
D_MODEL = 16


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, maxlen=32):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pe = torch.zeros((maxlen, emb_size))
        pe[:, 0::2] = torch.sin(pos * den)
        pe[:, 1::2] = torch.cos(pos * den)
        self.register_buffer("pos_embedding", pe.unsqueeze(-2))

    def forward(self, tokens):
        return tokens + self.pos_embedding[:tokens.size(0), :]


class Seq2SeqTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.Transformer(d_model=D_MODEL, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=32, dropout=0.0)
        self.generator = nn.Linear(D_MODEL, VOCAB)
        self.src_tok_emb = nn.Embedding(VOCAB, D_MODEL)
        self.tgt_tok_emb = nn.Embedding(VOCAB, D_MODEL)
        self.positional_encoding = PositionalEncoding(D_MODEL)

    def embed(self, emb, tokens):
        return self.positional_encoding(emb(tokens.long()) * math.sqrt(D_MODEL))

    def forward(self, src, tgt, tgt_mask, src_padding_mask, tgt_padding_mask):
        outs = self.transformer(self.embed(self.src_tok_emb, src), self.embed(self.tgt_tok_emb, tgt), None, tgt_mask,
                                None, src_padding_mask, tgt_padding_mask, src_padding_mask)
        return self.generator(outs)

    def encode(self, src):
        return self.transformer.encoder(self.embed(self.src_tok_emb, src))

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.embed(self.tgt_tok_emb, tgt), memory, tgt_mask)


def make_batch(rng, batch):
    """(S, N) sources and targets: random digit strings of varied length, padded; target = reversed + 1."""
    srcs, tgts = [], []
    for _ in range(batch):
        digits = rng.integers(3, VOCAB - 1, size=rng.integers(3, 7))
        srcs.append([BOS, *digits, EOS])
        tgts.append([BOS, *(digits[::-1] + 1), EOS])
    width = max(len(s) for s in srcs)
    pad = lambda rows: np.array([r + [PAD] * (width - len(r)) for r in rows], dtype=np.int64).T
    return torch.from_numpy(pad(srcs)), torch.from_numpy(pad(tgts))


def create_mask(src, tgt):
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
    return tgt_mask, (src == PAD).transpose(0, 1), (tgt == PAD).transpose(0, 1)


torch.manual_seed(0)
model = Seq2SeqTransformer()
init_params(model)
loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
rng = np.random.default_rng(3)

losses = []
model.train()
for step in range(14):
    src, tgt = make_batch(rng, 8)
    tgt_input = tgt[:-1, :]
    tgt_mask, src_pad, tgt_pad = create_mask(src, tgt_input)
    logits = model(src, tgt_input, tgt_mask, src_pad, tgt_pad)
    optimizer.zero_grad()
    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1))
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

# greedy decoding of one fixed sentence: report the logits of the first decoded step
model.eval()
with torch.no_grad():
    src = torch.tensor([[BOS, 4, 5, 6, EOS]]).T
    memory = model.encode(src)
    ys = torch.full((1, 1), BOS, dtype=torch.long)
    for _ in range(3):
        out = model.decode(ys, memory, nn.Transformer.generate_square_subsequent_mask(ys.size(0)).bool())
        prob = model.generator(out[-1])
        ys = torch.cat([ys, prob.argmax(dim=1, keepdim=True)], dim=0)
    first = model.generator(model.decode(ys[:1], memory, None)[-1])

report(losses, first_logits=first[0].tolist(), memory_norm=float(memory.norm()))
