"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): The chatbot, extending autograd, module internals."""
import random

import numpy as np
import pytest
import torch as real_torch

import tidal
from test_examples_programs import init_weights, run_both
from tutorial_data import uniform


# -- Chatbot tutorial: packed sequences, Luong attention, masked loss -------------------------------------------------
def chatbot(T):
    """The chatbot tutorial's pieces: zeroPadding with itertools.zip_longest, binaryMatrix -> torch.BoolTensor,
    an EncoderRNN over nn.utils.rnn.pack_padded_sequence / pad_packed_sequence with a bidirectional GRU whose
    halves are summed, Luong attention ('dot', 'general', 'concat'), LuongAttnDecoderRNN, maskNLLLoss with
    torch.gather and masked_select, clip_grad_norm_, two Adam optimizers, and GreedySearchDecoder."""
    import itertools
    nn, F = T.nn, T.nn.functional
    PAD_token, SOS_token, EOS_token, hidden_size, voc = 0, 1, 2, 8, 12

    def zeroPadding(l, fillvalue=PAD_token):
        return list(itertools.zip_longest(*l, fillvalue=fillvalue))

    def binaryMatrix(l):
        return [[0 if token == PAD_token else 1 for token in seq] for seq in l]

    rng = np.random.default_rng(170)
    inputs = sorted(([int(v) for v in rng.integers(3, voc, n)] + [EOS_token] for n in (5, 3, 4)), key=len,
                    reverse=True)
    outputs = [[int(v) for v in rng.integers(3, voc, n)] + [EOS_token] for n in (2, 4, 3)]
    lengths = T.tensor([len(s) for s in inputs])
    input_variable = T.LongTensor(zeroPadding(inputs))
    padded = zeroPadding(outputs)
    mask = T.BoolTensor(binaryMatrix(padded))
    target_variable = T.LongTensor(padded)
    max_target_len = max(len(s) for s in outputs)

    class EncoderRNN(nn.Module):
        def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
            super().__init__()
            self.n_layers, self.hidden_size, self.embedding = n_layers, hidden_size, embedding
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout),
                              bidirectional=True)

        def forward(self, input_seq, input_lengths, hidden=None):
            embedded = self.embedding(input_seq)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
            outputs, hidden = self.gru(packed, hidden)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
            outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
            return outputs, hidden

    class Attn(nn.Module):
        def __init__(self, method, hidden_size):
            super().__init__()
            self.method, self.hidden_size = method, hidden_size
            if self.method == "general":
                self.attn = nn.Linear(self.hidden_size, hidden_size)
            elif self.method == "concat":
                self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
                self.v = nn.Parameter(T.FloatTensor(hidden_size))

        def dot_score(self, hidden, encoder_output):
            return T.sum(hidden * encoder_output, dim=2)

        def general_score(self, hidden, encoder_output):
            return T.sum(hidden * self.attn(encoder_output), dim=2)

        def concat_score(self, hidden, encoder_output):
            energy = self.attn(T.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)).tanh()
            return T.sum(self.v * energy, dim=2)

        def forward(self, hidden, encoder_outputs):
            attn_energies = getattr(self, self.method + "_score")(hidden, encoder_outputs)
            attn_energies = attn_energies.t()
            return F.softmax(attn_energies, dim=1).unsqueeze(1)

    class LuongAttnDecoderRNN(nn.Module):
        def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
            super().__init__()
            self.embedding = embedding
            self.embedding_dropout = nn.Dropout(dropout)
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
            self.concat = nn.Linear(hidden_size * 2, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)
            self.attn = Attn(attn_model, hidden_size)

        def forward(self, input_step, last_hidden, encoder_outputs):
            embedded = self.embedding_dropout(self.embedding(input_step))
            rnn_output, hidden = self.gru(embedded, last_hidden)
            attn_weights = self.attn(rnn_output, encoder_outputs)
            context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
            rnn_output, context = rnn_output.squeeze(0), context.squeeze(1)
            concat_output = T.tanh(self.concat(T.cat((rnn_output, context), 1)))
            return F.softmax(self.out(concat_output), dim=1), hidden

    def maskNLLLoss(inp, target, mask):
        nTotal = mask.sum()
        crossEntropy = -T.log(T.gather(inp, 1, target.view(-1, 1)).squeeze(1))
        loss = crossEntropy.masked_select(mask).mean()
        return loss, nTotal.item()

    class GreedySearchDecoder(nn.Module):
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder, self.decoder = encoder, decoder

        def forward(self, input_seq, input_length, max_length):
            encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
            decoder_hidden = encoder_hidden[:self.decoder.gru.num_layers]
            decoder_input = T.ones(1, 1, dtype=T.long) * SOS_token
            all_tokens, all_scores = T.zeros([0], dtype=T.long), T.zeros([0])
            for _ in range(max_length):
                decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
                decoder_scores, decoder_input = T.max(decoder_output, dim=1)
                all_tokens = T.cat((all_tokens, decoder_input), dim=0)
                all_scores = T.cat((all_scores, decoder_scores), dim=0)
                decoder_input = T.unsqueeze(decoder_input, 0)
            return all_tokens, all_scores

    results = {"lengths": lengths, "mask": mask}
    for attn_model in ("dot", "general", "concat"):
        embedding = nn.Embedding(voc, hidden_size)
        encoder = EncoderRNN(hidden_size, embedding)
        decoder = LuongAttnDecoderRNN(attn_model, embedding, hidden_size, voc, dropout=0.0)
        init_weights(T, encoder, 171)
        init_weights(T, decoder, 172)
        encoder_optimizer = T.optim.Adam(encoder.parameters(), lr=1e-3)
        decoder_optimizer = T.optim.Adam(decoder.parameters(), lr=5e-3)
        encoder.train(), decoder.train()
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
        decoder_input = T.LongTensor([[SOS_token for _ in range(3)]])
        decoder_hidden = encoder_hidden[:decoder.gru.num_layers]
        loss, print_losses, n_totals = 0, [], 0
        for t in range(max_target_len):
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
            decoder_input = target_variable[t].view(1, -1)
            mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
            loss += mask_loss
            print_losses.append(mask_loss.item() * nTotal)
            n_totals += nTotal
        loss.backward()
        nn.utils.clip_grad_norm_(encoder.parameters(), 50.0)
        nn.utils.clip_grad_norm_(decoder.parameters(), 50.0)
        encoder_optimizer.step()
        decoder_optimizer.step()
        encoder.eval(), decoder.eval()
        with T.no_grad():
            tokens, scores = GreedySearchDecoder(encoder, decoder)(input_variable[:, :1], lengths[:1], 4)
        results[attn_model] = [sum(print_losses) / n_totals, encoder_outputs, tokens, scores,
                               decoder.concat.weight]
    return results


def test_chatbot():
    run_both(chatbot)


# -- Extending autograd, double backward, nn.Module internals --------------------------------------------------------
def extending_autograd(T):
    """Custom Functions as the docs' 'Extending torch.autograd' and the double-backward tutorial write them:
    LinearFunction with ctx.needs_input_grad, MulConstant with a non-tensor argument, a Function returning
    two outputs with mark_non_differentiable (sort), Square/Exp whose backward is differentiable (double
    backward through autograd.grad(create_graph=True)), once_differentiable, and gradcheck in float64."""
    from torch.autograd.function import once_differentiable as _real_once  # noqa: F401 (the docs' import)
    Function = T.autograd.Function

    class LinearFunction(Function):
        @staticmethod
        def forward(input, weight, bias):
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def setup_context(ctx, inputs, output):
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight, bias)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class Sort(Function):
        @staticmethod
        def forward(ctx, x):
            sorted_, idx = x.sort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return sorted_, idx

        @staticmethod
        def backward(ctx, g1, g2):
            x, idx = ctx.saved_tensors
            grad_input = T.zeros_like(x)
            grad_input.index_add_(0, idx, g1)
            return grad_input

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 2 * x

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            result = T.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return grad_out * result

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 3 * x ** 2

    x = T.tensor(uniform((4, 3), 180).astype(np.float64), requires_grad=True)
    w = T.tensor(uniform((2, 3), 181).astype(np.float64), requires_grad=True)
    b = T.tensor(uniform((2,), 182).astype(np.float64), requires_grad=True)
    out = {"gradcheck": T.autograd.gradcheck(LinearFunction.apply, (x, w, b), eps=1e-6, atol=1e-4)}
    y = LinearFunction.apply(x, w.detach(), b)
    y.sum().backward()
    out["linear"] = [y, x.grad, b.grad, w.grad is None]
    v = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
    m = MulConstant.apply(v, 2.5)
    m.backward(T.ones(3))
    out["mul_constant"] = [m, v.grad]
    s, idx = Sort.apply(T.tensor([3.0, 1.0, 2.0], requires_grad=True))
    out["sort"] = [s, idx, idx.requires_grad, s.requires_grad]
    z = T.tensor([0.5, 1.5], requires_grad=True)
    for fn in (Square, Exp):
        y = fn.apply(z)
        (g,) = T.autograd.grad(y.sum(), z, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), z)
        out[fn.__name__] = [y, g, gg, T.autograd.gradgradcheck(fn.apply, (z.detach().double().requires_grad_(),))]
    y = Cube.apply(z)
    (g,) = T.autograd.grad(y.sum(), z, create_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):  # torch's backward ran without a graph
        g.sum().backward()
    out["cube"] = [g, g.requires_grad]
    return out


def test_extending_autograd():
    run_both(extending_autograd)


def module_internals(T, tmp_path):
    """The nn.Module tutorial and the parametrization / pruning tutorials: a hand-written MyLinear with
    nn.Parameter and register_buffer (persistent or not), named_modules/named_buffers/state_dict keys, apply()
    of an init function, to(dtype), train/eval flags, forward pre/post hooks changing inputs and outputs, a
    Symmetric parametrization (with right_inverse) registered on a Linear, remove_parametrizations, and
    l1_unstructured/random_unstructured/ln_structured pruning with prune.remove."""
    import importlib
    nn = T.nn
    # `import torch.nn.utils.prune as prune` (the runner maps it; in-process tidal.compat has them as attributes)
    parametrize, prune = (importlib.import_module(f"torch.nn.utils.{name}") if T is real_torch
                          else getattr(nn.utils, name) for name in ("parametrize", "prune"))

    class MyLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight = nn.Parameter(T.from_numpy(uniform((in_features, out_features), 190)))
            self.bias = nn.Parameter(T.from_numpy(uniform((out_features,), 191)))
            self.register_buffer("running", T.zeros(out_features))
            self.register_buffer("scratch", T.ones(1), persistent=False)

        def forward(self, input):
            out = (input @ self.weight) + self.bias
            if self.training:
                self.running.add_(out.detach().mean(0))
            return out

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l0 = MyLinear(4, 3)
            self.l1 = MyLinear(3, 1)

        def forward(self, x):
            return self.l1(T.relu(self.l0(x)))

    net = Net()
    x = T.from_numpy(uniform((5, 4), 192))
    calls = []
    pre = net.l0.register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
    post = net.register_forward_hook(lambda m, inp, output: output + 1)
    net.l1.register_forward_hook(lambda m, inp, output: calls.append(m.training))
    first = net(x)
    pre.remove()
    post.remove()
    net.eval()
    second = net(x)

    @T.no_grad()
    def init_weights_fn(m):
        if isinstance(m, MyLinear):
            m.weight.fill_(0.25)
            m.bias.zero_()

    net.apply(init_weights_fn)
    third = net.to(T.float64)(x.double())
    out = {"first": first, "second": second, "third": third, "calls": calls,
           "modules": [n for n, _ in net.named_modules()], "buffers": [n for n, _ in net.named_buffers()],
           "state": list(net.state_dict()), "dtype": str(net.l0.weight.dtype).split(".")[1]}

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    layer = nn.Linear(3, 3)
    init_weights(T, layer, 193)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    W = layer.weight
    sym = [W, T.allclose(W, W.T), parametrize.is_parametrized(layer), type(layer).__name__,
           list(layer.state_dict())]
    layer(T.ones(2, 3)).sum().backward()
    sym.append(layer.parametrizations.weight.original.grad)
    layer.weight = T.from_numpy(uniform((3, 3), 194))
    sym.append(layer.parametrizations.weight.original)
    parametrize.remove_parametrizations(layer, "weight")
    sym += [type(layer).__name__, list(layer.state_dict()), layer.weight]
    out["parametrize"] = sym

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 3, 3)
            self.fc1 = nn.Linear(12, 4)

        def forward(self, x):
            return self.fc1(T.flatten(T.relu(self.conv1(x)), 1))

    model = LeNet()
    init_weights(T, model, 195)
    module = model.conv1
    prune.l1_unstructured(module, name="bias", amount=1)
    prune.ln_structured(module, name="weight", amount=0.34, n=2, dim=0)
    prune.l1_unstructured(model.fc1, name="weight", amount=0.5)
    pruned = [sorted(n for n, _ in module.named_parameters()), sorted(n for n, _ in module.named_buffers()),
              module.bias_mask, module.weight_mask.sum(), float(T.sum(model.fc1.weight == 0)),
              list(module._forward_pre_hooks.keys()) != [], model(T.ones(1, 1, 4, 4))]
    prune.remove(module, "weight")
    pruned += [sorted(n for n, _ in module.named_parameters()), module.weight, list(model.state_dict())]
    out["prune"] = pruned
    return out


def test_module_internals(tmp_path):
    run_both(module_internals, tmp_path=tmp_path)
