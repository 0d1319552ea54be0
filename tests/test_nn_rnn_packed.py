"""tidal.nn.utils.rnn (PackedSequence, packing and padding) and the recurrent layers on packed input, against
torch with identical weights: data, batch sizes, permutations, outputs, final states, gradients, errors."""
from __future__ import annotations

import pytest
import torch
from torch.nn.utils import rnn as torch_rnn

import tidal
from nn_helpers import assert_close, assert_grads_close, load_from_torch, pair, torch_repr
from tidal.nn.modules import rnn as tnn
from tidal.nn.utils import rnn as tidal_rnn

LENGTHS = [3, 5, 2, 5, 1]  # unsorted, with a tie


def assert_packed_equal(packed, ref) -> None:
    assert isinstance(packed, tidal_rnn.PackedSequence)
    assert_close(packed.data, ref.data)
    assert packed.batch_sizes.tolist() == ref.batch_sizes.tolist()
    for got, want in ((packed.sorted_indices, ref.sorted_indices), (packed.unsorted_indices, ref.unsorted_indices)):
        assert (got is None) == (want is None)
        if got is not None:
            assert got.tolist() == want.tolist()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_then_pad_round_trip(rng, batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    shape = (len(lengths), 6, 2) if batch_first else (6, len(lengths), 2)
    x, xr = pair(rng, shape, requires_grad=True)
    packed = tidal_rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
    ref = torch_rnn.pack_padded_sequence(xr, torch.tensor(lengths), batch_first, enforce_sorted)
    assert_packed_equal(packed, ref)
    padded, out_lengths = tidal_rnn.pad_packed_sequence(packed, batch_first, padding_value=-1.0, total_length=7)
    ref_padded, ref_lengths = torch_rnn.pad_packed_sequence(ref, batch_first, padding_value=-1.0, total_length=7)
    assert_close(padded, ref_padded)
    assert out_lengths.tolist() == ref_lengths.tolist() and out_lengths.dtype == tidal.int64
    weight, ref_weight = pair(rng, tuple(ref_padded.shape))
    (padded * weight).sum().backward()
    (ref_padded * ref_weight).sum().backward()
    assert_grads_close([(x, xr)])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(rng, batch_first, padding_side):
    seqs = [pair(rng, (n, 2)) for n in (2, 4, 1)]
    out = tidal_rnn.pad_sequence([s for s, _ in seqs], batch_first, 0.5, padding_side)
    ref = torch_rnn.pad_sequence([r for _, r in seqs], batch_first, 0.5, padding_side)
    assert_close(out, ref)


@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_sequence_and_unpack(rng, enforce_sorted):
    sizes = (4, 2, 1) if enforce_sorted else (2, 4, 1)
    seqs = [pair(rng, (n, 3)) for n in sizes]
    packed = tidal_rnn.pack_sequence([s for s, _ in seqs], enforce_sorted)
    ref = torch_rnn.pack_sequence([r for _, r in seqs], enforce_sorted)
    assert_packed_equal(packed, ref)
    for got, want in zip(tidal_rnn.unpack_sequence(packed), torch_rnn.unpack_sequence(ref)):
        assert_close(got, want)
    padded, lengths = torch_rnn.pad_packed_sequence(ref)
    pieces = tidal_rnn.unpad_sequence(tidal.tensor(padded.numpy()), tidal.tensor(lengths.numpy()))
    for got, want in zip(pieces, torch_rnn.unpad_sequence(padded, lengths)):
        assert_close(got, want)


def test_packed_sequence_object():
    packed = tidal_rnn.pack_sequence([tidal.ones(2), tidal.ones(1)])
    assert repr(packed) == torch_repr(repr(torch_rnn.pack_sequence([torch.ones(2), torch.ones(1)])))
    assert packed.double().data.dtype == tidal.float64 and not packed.is_cuda
    assert packed.to(tidal.float32) is packed
    assert tidal_rnn.invert_permutation(tidal.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert tidal_rnn.invert_permutation(None) is None
    data, batch_sizes, _, _ = packed
    assert tidal_rnn.PackedSequence((data, batch_sizes)).batch_sizes.tolist() == [2, 1]


ERROR_CASES = [
    lambda lib, utils: utils.pack_padded_sequence(lib.zeros(3, 3), [1, 3, 2]),
    lambda lib, utils: utils.pack_padded_sequence(lib.zeros(3, 3), [3, 0, 2], enforce_sorted=False),
    lambda lib, utils: utils.pack_padded_sequence(lib.zeros(3, 3), [3, 2]),
    lambda lib, utils: utils.pad_packed_sequence(utils.pack_sequence([lib.ones(3), lib.ones(2)]), total_length=2),
]


@pytest.mark.parametrize("make", ERROR_CASES, ids=["unsorted", "zero_length", "length_count", "total_length"])
def test_errors(make):
    with pytest.raises(Exception) as ref_info:
        make(torch, torch_rnn)
    with pytest.raises(type(ref_info.value)) as info:
        make(tidal, tidal_rnn)
    assert str(info.value) == str(ref_info.value)


KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("GRU", {}), ("LSTM", {}), ("LSTM", {"proj_size": 2})]


@pytest.mark.parametrize("kind", KINDS, ids=["rnn_tanh", "rnn_relu", "gru", "lstm", "lstm_proj"])
@pytest.mark.parametrize("given_state", [False, True], ids=["zeros", "hx"])
def test_layers_on_packed_input(rng, kind, given_state):
    name, kwargs = kind
    ref = getattr(torch.nn, name)(3, 4, num_layers=2, bidirectional=True, **kwargs).double()
    mod = getattr(tnn, name)(3, 4, num_layers=2, bidirectional=True, **kwargs).double()
    load_from_torch(mod, ref)
    x, xr = pair(rng, (6, len(LENGTHS), 3), requires_grad=True)
    packed = tidal_rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False)
    ref_packed = torch_rnn.pack_padded_sequence(xr, LENGTHS, enforce_sorted=False)
    ref_params = dict(ref.named_parameters())
    leaves = [(x, xr)] + [(p, ref_params[n]) for n, p in mod.named_parameters()]
    args, ref_args = (packed,), (ref_packed,)
    if given_state:
        h, hr = pair(rng, (4, len(LENGTHS), kwargs.get("proj_size", 4)), requires_grad=True)
        leaves.append((h, hr))
        if name == "LSTM":
            c, cr = pair(rng, (4, len(LENGTHS), 4), requires_grad=True)
            leaves.append((c, cr))
            args, ref_args = (packed, (h, c)), (ref_packed, (hr, cr))
        else:
            args, ref_args = (packed, h), (ref_packed, hr)
    (out, state), (ref_out, ref_state) = mod(*args), ref(*ref_args)
    assert_packed_equal(out, ref_out)
    states = state if isinstance(state, tuple) else (state,)
    ref_states = ref_state if isinstance(ref_state, tuple) else (ref_state,)
    loss, ref_loss = 0, 0
    for got, want in zip((out.data,) + states, (ref_out.data,) + ref_states):
        assert_close(got, want)
        weight, ref_weight = pair(rng, tuple(want.shape))
        loss, ref_loss = loss + (got * weight).sum(), ref_loss + (want * ref_weight).sum()
    loss.backward()
    ref_loss.backward()
    assert_grads_close(leaves)


def test_packed_batch_first_and_dropout(rng):
    """batch_first does not change how a packed input is read; eval mode turns inter-layer dropout off."""
    ref = torch.nn.GRU(3, 4, num_layers=2, batch_first=True, dropout=0.5).double().eval()
    mod = tnn.GRU(3, 4, num_layers=2, batch_first=True, dropout=0.5).double().eval()
    load_from_torch(mod, ref)
    x, xr = pair(rng, (len(LENGTHS), 6, 3))
    out, h = mod(tidal_rnn.pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False))
    ref_out, ref_h = ref(torch_rnn.pack_padded_sequence(xr, LENGTHS, batch_first=True, enforce_sorted=False))
    assert_packed_equal(out, ref_out)
    assert_close(h, ref_h)
