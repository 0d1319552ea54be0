"""The models of the training-step and memory cases, written once against PyTorch's API.

Every factory takes the framework's top-level module (`tidal` or `torch`) and builds the
same architecture, optimizer and batch from it, so the two runs differ only in the runtime.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Trainer:
    """A model with its optimizer and one fixed batch; `step()` runs one training step."""

    model: object
    optimizer: object
    inputs: object
    targets: object
    loss_fn: Callable

    def zero_grad(self) -> None:
        """Drop the gradients (set to None, as both frameworks do by default)."""
        self.optimizer.zero_grad()

    def step(self):
        """Forward, loss, backward and the optimizer update; returns the loss (not synced)."""
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(self.inputs), self.targets)
        loss.backward()
        self.optimizer.step()
        return loss


def _batch(lib, host_inputs: np.ndarray, host_targets: np.ndarray):
    return lib.tensor(host_inputs), lib.tensor(host_targets)


def _next_token(lib, make_model, vocab: int, block: int, batch: int, seed: int, optimizer) -> Trainer:
    """A language model's Trainer: the model made after seeding the framework, a batch of random tokens (each
    position's target the next token), `optimizer(parameters)`, cross-entropy over the vocabulary."""
    lib.manual_seed(0)
    model = make_model()
    tokens = np.random.default_rng(seed).integers(0, vocab, (batch, block + 1))
    x, y = _batch(lib, tokens[:, :-1], tokens[:, 1:])

    def loss_fn(logits, targets):
        return lib.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    return Trainer(model, optimizer(model.parameters()), x, y, loss_fn)


def mlp(lib, batch: int) -> Trainer:
    """784-512-512-10 with ReLU, cross-entropy, SGD with momentum."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    rng = np.random.default_rng(0)
    x, y = _batch(lib, rng.standard_normal((batch, 784), dtype=np.float32), rng.integers(0, 10, batch))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return Trainer(model, opt, x, y, nn.functional.cross_entropy)


def cnn(lib, batch: int) -> Trainer:
    """Two 3x3 conv + ReLU + 2x2 max-pool stages and a linear head on 1x28x28, Adam."""
    nn = lib.nn
    conv, pool = nn.Conv2d, nn.MaxPool2d
    lib.manual_seed(0)
    model = nn.Sequential(conv(1, 16, 3, padding=1), nn.ReLU(), pool(2),
                          conv(16, 32, 3, padding=1), nn.ReLU(), pool(2),
                          nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    rng = np.random.default_rng(0)
    x, y = _batch(lib, rng.standard_normal((batch, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, batch))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    return Trainer(model, opt, x, y, nn.functional.cross_entropy)


GPT_VOCAB, GPT_BLOCK, GPT_WIDTH, GPT_HEADS, GPT_LAYERS = 65, 32, 64, 4, 2


def gpt(lib, batch: int) -> Trainer:
    """A 2-layer pre-norm causal transformer (width 64, block 32, vocab 65), AdamW."""
    nn = lib.nn

    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
            self.pos = nn.Embedding(GPT_BLOCK, GPT_WIDTH)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(GPT_WIDTH, GPT_HEADS, 4 * GPT_WIDTH, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True) for _ in range(GPT_LAYERS))
            self.norm = nn.LayerNorm(GPT_WIDTH)
            self.head = nn.Linear(GPT_WIDTH, GPT_VOCAB)
            self.register_buffer("positions", lib.arange(GPT_BLOCK))
            self.register_buffer("mask", lib.triu(lib.full((GPT_BLOCK, GPT_BLOCK), float("-inf")), diagonal=1))

        def forward(self, idx):
            x = self.tok(idx) + self.pos(self.positions)
            for block in self.blocks:
                x = block(x, src_mask=self.mask, is_causal=True)
            return self.head(self.norm(x))

    return _next_token(lib, TinyGPT, GPT_VOCAB, GPT_BLOCK, batch, 0, lambda ps: lib.optim.AdamW(ps, lr=3e-4))


LM_VOCAB, LM_BLOCK, LM_WIDTH, LM_HEADS, LM_LAYERS = 100, 16, 64, 4, 2


def lm(lib, batch: int) -> Trainer:
    """A 2-layer post-norm transformer language model (nn.TransformerEncoder, width 64, block 16,
    vocab 100) with a causal mask, AdamW."""
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(LM_VOCAB, LM_WIDTH)
            self.pos = nn.Parameter(lib.zeros(LM_BLOCK, LM_WIDTH))
            layer = nn.TransformerEncoderLayer(LM_WIDTH, LM_HEADS, 4 * LM_WIDTH, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, LM_LAYERS, enable_nested_tensor=False)
            self.head = nn.Linear(LM_WIDTH, LM_VOCAB)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(LM_BLOCK))

        def forward(self, idx):
            return self.head(self.encoder(self.embed(idx) + self.pos, mask=self.mask, is_causal=True))

    return _next_token(lib, LM, LM_VOCAB, LM_BLOCK, batch, 1, lambda ps: lib.optim.AdamW(ps, lr=1e-3))


RNN_VOCAB, RNN_BLOCK, RNN_EMBED, RNN_HIDDEN = 65, 32, 64, 128


def rnn(lib, batch: int) -> Trainer:
    """A character-level LSTM language model (embedding 64, one LSTM layer of 128, block 32, vocab 65), Adam."""
    nn = lib.nn

    class CharRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(RNN_VOCAB, RNN_EMBED)
            self.lstm = nn.LSTM(RNN_EMBED, RNN_HIDDEN, batch_first=True)
            self.head = nn.Linear(RNN_HIDDEN, RNN_VOCAB)

        def forward(self, idx):
            out, _ = self.lstm(self.embed(idx))
            return self.head(out)

    return _next_token(lib, CharRNN, RNN_VOCAB, RNN_BLOCK, batch, 2, lambda ps: lib.optim.Adam(ps, lr=2e-3))


MODELS = {"mlp": mlp, "cnn": cnn, "gpt": gpt, "lm": lm, "rnn": rnn}
TITLES = {"mlp": "MLP 784-512-512-10", "cnn": "small CNN", "gpt": "tiny GPT", "lm": "2-layer transformer LM",
          "rnn": "char LSTM LM"}


BATCH = {"mlp": 128, "cnn": 64, "gpt": 32, "lm": 32, "rnn": 32}
QUICK_BATCH = {"mlp": 16, "cnn": 8, "gpt": 4, "lm": 4, "rnn": 4}


def batch_size(name: str, quick: bool = False) -> int:
    """The batch a model is measured with (smaller with `--quick`)."""
    return (QUICK_BATCH if quick else BATCH)[name]


def build(name: str, lib, quick: bool = False) -> Trainer:
    """The named model's Trainer in framework `lib` at the default (or quick) batch size."""
    return MODELS[name](lib, batch_size(name, quick))
