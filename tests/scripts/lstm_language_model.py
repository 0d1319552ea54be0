"""Word-level LSTM language model (embedding, LSTM, linear decoder) with truncated BPTT and gradient clipping."""
import math

import numpy as np
import torch
import torch.nn as nn

from _common import init_params, report


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers = nlayers
        self.nhid = nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return torch.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    """Detach hidden states from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def make_corpus(rng, ntoken, length):
    """A Markov chain over a small vocabulary: each word has a few likely successors."""
    successors = rng.integers(0, ntoken, size=(ntoken, 2))
    words = [0]
    for _ in range(length - 1):
        words.append(int(successors[words[-1], rng.integers(0, 2)]) if rng.random() < 0.95 else int(rng.integers(ntoken)))
    return np.array(words, dtype=np.int64)


torch.manual_seed(0)
ntokens, bptt, lr, clip = 24, 8, 5.0, 0.5
train_data = batchify(torch.from_numpy(make_corpus(np.random.default_rng(4), ntokens, 4 * 8 * 6 + 1)), 4)

model = RNNModel(ntokens, 16, 32, 2, dropout=0.0)
init_params(model)
criterion = nn.NLLLoss()

losses = []
for epoch in range(5):
    model.train()
    hidden = model.init_hidden(4)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i, bptt)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    print(f"epoch {epoch} ppl {math.exp(losses[-1]):.2f}")
report(losses)
