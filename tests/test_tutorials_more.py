"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): Text classification, model ensembling, nn.Transformer
translation, the AMP recipe, torch.compile, DataLoader."""
import math
import random

import numpy as np
import torch as real_torch

import tidal
from test_examples_programs import init_weights, run_both
from tutorial_data import uniform


# -- text classification (EmbeddingBag), model ensembling (torch.func) -----------------------------------------------
def text_classification(T):
    """The text-classification tutorial: collate_batch building a flat text tensor with offsets from
    torch.tensor(offsets[:-1]).cumsum(dim=0), nn.EmbeddingBag(mode='mean') called with (text, offsets),
    init_weights with uniform_/zero_ (overwritten by the shared weights), CrossEntropyLoss, SGD,
    clip_grad_norm_(0.1), StepLR(1.0, gamma=0.1), random_split with a seeded generator, evaluate()."""
    nn = T.nn
    rng = np.random.default_rng(230)
    samples = [(int(rng.integers(0, 4)), [int(v) for v in rng.integers(0, 20, int(rng.integers(2, 7)))])
               for _ in range(12)]

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(_label)
            processed_text = T.tensor(_text, dtype=T.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = T.tensor(label_list, dtype=T.int64)
        offsets = T.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = T.cat(text_list)
        return label_list, text_list, offsets

    class TextClassificationModel(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_class):
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
            self.fc = nn.Linear(embed_dim, num_class)
            self.init_weights()

        def init_weights(self):
            initrange = 0.5
            self.embedding.weight.data.uniform_(-initrange, initrange)
            self.fc.weight.data.uniform_(-initrange, initrange)
            self.fc.bias.data.zero_()

        def forward(self, text, offsets):
            return self.fc(self.embedding(text, offsets))

    model = TextClassificationModel(20, 8, 4)
    init_weights(T, model, 231)
    criterion = nn.CrossEntropyLoss()
    optimizer = T.optim.SGD(model.parameters(), lr=5)
    scheduler = T.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    loader = T.utils.data.DataLoader(samples, batch_size=4, shuffle=False, collate_fn=collate_batch)
    losses = []
    for epoch in range(2):
        model.train()
        for label, text, offsets in loader:
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    total_acc, total_count = 0, 0
    with T.no_grad():
        for label, text, offsets in loader:
            predicted_label = model(text, offsets)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    split = T.utils.data.random_split(samples, [9, 3], generator=T.Generator().manual_seed(42))
    return {"losses": losses, "acc": total_acc / total_count, "lr": scheduler.get_last_lr(),
            "split": [len(split[0]), len(split[1])], "offsets": collate_batch(samples[:3])[2],
            "bag": model.embedding(T.tensor([1, 2, 4, 5, 4, 3]), T.tensor([0, 2]))}


def test_text_classification():
    run_both(text_classification)


def model_ensembling(T):
    """The model-ensembling tutorial: stack_module_state of several MLPs, a 'meta' base model replaced here by
    copy.deepcopy (tidal has no meta device), functional_call vmapped over the stacked parameters, with
    in_dims=(0, 0, None) for one minibatch shared and (0, 0, 0) for one per model; results against a loop."""
    import copy
    nn, F, func = T.nn, T.nn.functional, T.func

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(12, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    num_models = 3
    models = []
    for k in range(num_models):
        m = SimpleMLP()
        init_weights(T, m, 240 + k)
        models.append(m)
    minibatches = T.from_numpy(uniform((num_models, 4, 3, 4), 245))
    minibatch = minibatches[0]
    predictions_diff_minibatch_loop = [model(mb) for model, mb in zip(models, minibatches)]
    predictions2 = [model(minibatch) for model in models]
    params, buffers = func.stack_module_state(models)
    base_model = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return func.functional_call(base_model, (params, buffers), (x,))

    predictions1_vmap = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    predictions2_vmap = func.vmap(fmodel)(params, buffers, minibatches)
    return {"loop1": predictions2, "vmap1": predictions1_vmap, "loop2": predictions_diff_minibatch_loop,
            "vmap2": predictions2_vmap, "keys": sorted(params), "shape": list(params["fc1.weight"].shape)}


def test_model_ensembling():
    run_both(model_ensembling)


# -- Language translation with nn.Transformer ------------------------------------------------------------------------
def transformer_translation(T):
    """The nn.Transformer translation tutorial: PositionalEncoding and TokenEmbedding modules, Seq2SeqTransformer
    (nn.Transformer with encode/decode), generate_square_subsequent_mask from triu(ones) == 1 turned into a float
    mask with masked_fill(-inf / 0.0), boolean padding masks (src == PAD_IDX).transpose(0, 1), cross_entropy with
    ignore_index, Adam(betas=(0.9, 0.98), eps=1e-9), and greedy_decode growing ys with
    torch.ones(1, 1).type_as(src.data).fill_(next_word)."""
    nn = T.nn
    PAD_IDX, BOS_IDX, EOS_IDX, SRC_V, TGT_V, EMB = 1, 2, 3, 15, 13, 16

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, dropout, maxlen=50):
            super().__init__()
            den = T.exp(- T.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = T.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = T.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = T.sin(pos * den)
            pos_embedding[:, 1::2] = T.cos(pos * den)
            pos_embedding = pos_embedding.unsqueeze(-2)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("pos_embedding", pos_embedding)

        def forward(self, token_embedding):
            return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

    class TokenEmbedding(nn.Module):
        def __init__(self, vocab_size, emb_size):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_size)
            self.emb_size = emb_size

        def forward(self, tokens):
            return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size,
                     tgt_vocab_size, dim_feedforward=32, dropout=0.0):
            super().__init__()
            self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                              num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                              dropout=dropout)
            self.generator = nn.Linear(emb_size, tgt_vocab_size)
            self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
            self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
            self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                    memory_key_padding_mask):
            src_emb = self.positional_encoding(self.src_tok_emb(src))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                    memory_key_padding_mask)
            return self.generator(outs)

        def encode(self, src, src_mask):
            return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

        def decode(self, tgt, memory, tgt_mask):
            return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)

    def generate_square_subsequent_mask(sz):
        mask = (T.triu(T.ones((sz, sz))) == 1).transpose(0, 1)
        return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))

    def create_mask(src, tgt):
        src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
        tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
        src_mask = T.zeros((src_seq_len, src_seq_len)).type(T.bool)
        src_padding_mask = (src == PAD_IDX).transpose(0, 1)
        tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    rng = np.random.default_rng(250)

    def batch(vocab, lengths):
        seqs = [[BOS_IDX] + [int(v) for v in rng.integers(4, vocab, n)] + [EOS_IDX] for n in lengths]
        width = max(len(s) for s in seqs)
        return T.tensor([s + [PAD_IDX] * (width - len(s)) for s in seqs]).t().contiguous()  # (seq, batch)

    src, tgt = batch(SRC_V, (4, 2, 3)), batch(TGT_V, (3, 4, 1))
    transformer = Seq2SeqTransformer(1, 1, EMB, 2, SRC_V, TGT_V)
    init_weights(T, transformer, 251)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = T.optim.Adam(transformer.parameters(), lr=0.0001, betas=(0.9, 0.98), eps=1e-9)
    transformer.train()
    losses = []
    for _ in range(2):
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = transformer(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                             src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    def greedy_decode(model, src, src_mask, max_len, start_symbol):
        memory = model.encode(src, src_mask)
        ys = T.ones(1, 1).fill_(start_symbol).type(T.long)
        for i in range(max_len - 1):
            tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(T.bool)
            out = model.decode(ys, memory, tgt_mask)
            out = out.transpose(0, 1)
            prob = model.generator(out[:, -1])
            _, next_word = T.max(prob, dim=1)
            next_word = next_word.item()
            ys = T.cat([ys, T.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
            if next_word == EOS_IDX:
                break
        return ys

    transformer.eval()
    one = src[:, :1]
    decoded = greedy_decode(transformer, one, T.zeros(one.shape[0], one.shape[0]).type(T.bool), 5, BOS_IDX)
    return {"losses": losses, "mask": generate_square_subsequent_mask(4), "decoded": decoded.flatten()}


def test_transformer_translation():
    run_both(transformer_translation)


def transformer_warnings(T):
    """The warnings torch gives the transformer tutorials: enable_nested_tensor with a layer that rules out the
    fast path (batch_first False, norm_first, an odd head count), and padding and attention masks of different
    types (bool and float) in TransformerEncoder, TransformerEncoderLayer and MultiheadAttention."""
    import warnings
    nn = T.nn
    src = T.ones(3, 2, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1, enable_nested_tensor=False)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True, norm_first=True), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(9, 3, batch_first=True), 1)
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dropout=0.0), 1, enable_nested_tensor=False)
        encoder(src, mask=T.zeros(3, 3), src_key_padding_mask=T.zeros(2, 3).bool())
        encoder.layers[0](src, src_mask=T.zeros(3, 3).bool(), src_key_padding_mask=T.zeros(2, 3))
        nn.MultiheadAttention(8, 2)(src, src, src, key_padding_mask=T.zeros(2, 3).bool(), attn_mask=T.zeros(3, 3))
        nn.MultiheadAttention(8, 2)(src, src, src, key_padding_mask=T.zeros(2, 3).bool(),
                                    attn_mask=T.zeros(3, 3).bool())
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_transformer_warnings():
    run_both(transformer_warnings)


def amp_recipe(T):
    """The Automatic Mixed Precision recipe's training loop on the CPU: autocast(bfloat16) around forward and
    loss, GradScaler scale/backward/unscale_/clip_grad_norm_/step/update, zero_grad(set_to_none=True), and the
    scaler's state_dict saved with the checkpoint."""
    nn = T.nn
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    init_weights(T, net, 228)
    opt = T.optim.SGD(net.parameters(), lr=0.01)
    scaler = T.amp.GradScaler("cpu")
    data, targets = T.from_numpy(uniform((3, 6, 8), 229)), T.from_numpy(uniform((3, 6, 4), 230))
    losses = []
    for inp, target in zip(data, targets):
        with T.autocast(device_type="cpu", dtype=T.bfloat16):
            output = net(inp)
            loss = nn.functional.mse_loss(output, target)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    state = scaler.state_dict()
    return {"losses": losses, "weight": net[0].weight, "scale": state["scale"], "dtype": str(output.dtype)[-8:]}


def test_amp_recipe():
    run_both(amp_recipe, rtol=1e-2, atol=1e-3)  # bfloat16 matmuls: rounding differs with the summation order


def compile_intro(T, tmp_path):
    """The torch.compile introduction as it runs eagerly: torch.compile(model) gives an OptimizedModule holding
    `_orig_mod` (state_dict keys prefixed '_orig_mod.', attributes read through, eval() reaching the original),
    a compiled function and decorator, mode/fullgraph/dynamic arguments, torch._dynamo.reset and config,
    torch.compiler.is_compiling; the TorchScript save/load round trip of the save-load tutorial."""
    import importlib
    nn = T.nn
    dynamo = importlib.import_module("torch._dynamo") if T is real_torch else T._dynamo
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    init_weights(T, model, 260)
    x = T.from_numpy(uniform((5, 3), 261))
    opt_model = T.compile(model)
    opt_model.eval()
    out = {"type": type(opt_model).__name__, "keys": list(opt_model.state_dict()), "out": opt_model(x),
           "training": [opt_model.training, model.training], "attr": getattr(opt_model, "0").weight,
           "repr": repr(opt_model).replace("tidal.", "torch."), "orig": opt_model._orig_mod is model}

    @T.compile
    def foo(a, b):
        return T.sin(a) + T.cos(b)

    opt_foo = T.compile(foo, mode="reduce-overhead", fullgraph=True, dynamic=False)
    out["foo"] = [foo(x, x), opt_foo(x, x)]
    dynamo.reset()
    dynamo.config.suppress_errors = True
    out["compiling"] = [T.compiler.is_compiling(), dynamo.is_compiling()]
    path = tmp_path / f"scripted_{T.__name__}.pt"
    model_scripted = T.jit.script(model)
    T.jit.save(model_scripted, path)
    loaded = T.jit.load(path)
    loaded.eval()
    out["jit"] = loaded(x)
    model2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model2.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in opt_model.state_dict().items()})
    out["reloaded"] = model2(x)
    return out


def test_compile_intro(tmp_path):
    run_both(compile_intro, tmp_path=tmp_path)


def dataloader_tour(T):
    """The data tutorial's DataLoader features: dict/namedtuple/str samples collated, Subset/ConcatDataset/
    StackDataset, BatchSampler with and without drop_last, an IterableDataset splitting its range with
    get_worker_info across two workers, persistent workers with pin_memory (and torch's warning when no
    accelerator is there to pin for), SubsetRandomSampler, fractional random_split lengths."""
    import collections
    import warnings
    data = T.utils.data
    Point = collections.namedtuple("Point", "x y")

    class DictDS(data.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"a": T.tensor([i, i + 1.0]), "b": i, "p": Point(i, float(i)), "s": f"s{i}"}

    class Ranged(data.IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = data.get_worker_info()
            if info is None:
                return iter(range(self.start, self.end))
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            s = self.start + info.id * per
            return iter(range(s, min(s + per, self.end)))

    ds = data.TensorDataset(T.arange(10.0).view(5, 2), T.arange(5))
    out = {"dict": [[b["a"], b["b"], list(b["p"]), b["s"]] for b in data.DataLoader(DictDS(), batch_size=2)],
           "subset": [len(data.Subset(ds, [0, 2])), list(data.Subset(ds, [0, 2])[1]), len(data.ConcatDataset([ds, ds])),
                      list(data.ConcatDataset([ds, ds])[7]), data.StackDataset(ds, ds)[1][0][1]],
           "batches": [list(data.BatchSampler(data.SequentialSampler(range(7)), batch_size=3, drop_last=d))
                       for d in (False, True)],
           "iterable": [list(data.DataLoader(Ranged(3, 7))), sorted(int(v) for v in
                                                                   data.DataLoader(Ranged(3, 11), num_workers=2))],
           "subset_sampler": len(list(data.DataLoader(ds, sampler=data.SubsetRandomSampler([0, 1, 2])))),
           "split": [len(s) for s in data.random_split(range(10), [0.7, 0.3], generator=T.Generator().manual_seed(0))]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = data.DataLoader(ds, batch_size=2, drop_last=True, pin_memory=True, num_workers=2,
                                 persistent_workers=True)
        out["pinned"] = [[b[1] for b in loader], [b[1] for b in loader], len(loader)]
        list(data.DataLoader(ds, pin_memory=True, pin_memory_device="cpu"))
    out["warnings"] = [str(w.message) for w in caught]
    return out


def test_dataloader_tour():
    run_both(dataloader_tour)
