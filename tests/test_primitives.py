"""Primitive records (ops/dispatch/primitive.py): each op declared once, reached by an op database.

Every record must be covered by torch's op database (tests/torch_op_db.py drives it against tidal) or by
tidal's own sample database (tests/tidal_sample_db.py); a record declares its kernels per device type, its
backward and what that backward reads, and calling it runs, differentiates and double-differentiates.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch
import tidal_sample_db
import torch_op_db
from tidal.ops.dispatch import kernel_launch
from tidal.ops.rowwise import attention_rows, ctc, nll_rows, norm_rows  # noqa: F401  (loaded on first use: their records count too)
from tidal.ops.factories import transfer  # noqa: F401  (loaded on first use too: its record counts)
from tidal.ops.dispatch.primitive import DEVICE_TYPES, PRIMITIVES, Primitive, Saved, saves
from tidal.ops.movement.view_grads import overload


# Records no op database names directly: the public op (its database name) whose tests run the record.
REACHED_THROUGH = {
    "max_all": "max", "min_all": "min", "median_all": "median", "prod_half": "prod", "getitem": "__getitem__",
    "var_mean": "var_mean", "std_mean": "std_mean",
    "fft_c2c": "fft.fft", "fft_r2c": "fft.rfft", "fft_c2r": "fft.irfft",
    "ctc_loss_backward": "nn.functional.ctc_loss",
    "im2col": "nn.functional.unfold", "col2im": "nn.functional.unfold",  # (col2im: unfold's gradient)
    "avg_pool2d_backward": "nn.functional.avg_pool2d",
    "adaptive_avg_pool2d_backward": "nn.functional.adaptive_avg_pool2d",
    "max_pool2d_with_indices": "nn.functional.max_pool2d", "max_pool3d_with_indices": "nn.functional.max_pool3d",
    "max_pool_gather": "nn.functional.max_pool2d", "max_pool_scatter": "nn.functional.max_pool2d",
    "_softmax": "softmax", "_log_softmax": "log_softmax", "_log_softmax_backward_data": "log_softmax",
    "_safe_softmax": "nn.functional.scaled_dot_product_attention",  # (a masked row of the composite)
    "native_layer_norm_backward": "native_layer_norm", "nll_loss_backward": "nn.functional.nll_loss",
    "_scaled_dot_product_flash_attention_for_cpu": "nn.functional.scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "nn.functional.scaled_dot_product_attention",
    "_packed_attention": "nn.functional.multi_head_attention_forward",
    "_packed_attention_backward": "nn.functional.multi_head_attention_forward",
    "convolution": "nn.functional.conv2d", "convolution_backward_input": "nn.functional.conv_transpose2d",
    "convolution_backward_weight": "nn.functional.conv2d",
    "segment_sum": "repeat_interleave",  # (repeat_interleave's gradient by counts)
    "strided_transfer": "as_strided", "as_strided_parts": "view_as_real",  # (view gradients; writes into parts)
    "_to_copy": "to", "to_device": "to", "alias": "as_subclass",
    "native_norm": "nn.functional.group_norm", "embedding_lookup": "nn.functional.embedding",
    "getitem_view": "__getitem__", "setitem": "__setitem__",
    "lu_permutation": "lu_unpack", "no_derivative": "linalg.ldl_solve",
    # samplers (the in-place methods' kernels) and a sample's nodes; the elementwise composites' nodes
    "uniform_": "uniform", "normal_": "normal", "bernoulli_": "bernoulli", "cauchy_": "cauchy",
    "exponential_": "exponential", "geometric_": "geometric", "log_normal_": "log_normal", "random_": "randint",
    "rrelu_noise": "nn.functional.rrelu", "sampled": "normal", "sampled_inplace": "uniform",
    "sampled_no_derivative": "bernoulli", "copy_": "to", "round_decimals": "round", "special_igamma": "igamma",
    "special_igammac": "igammac", "standard_gamma": "_standard_gamma",  # (its node: the sample db's gamma draws)
    "div_rounded": "div",  # (div's floor and trunc rounding: DivBackward2's zero gradient)
}


# Records no op database can reach, and the test that runs them against torch: collectives need ranks; the
# optimizers' multi-tensor update runs inside optimizer.step()
REACHED_BY_TEST = {
    "all_reduce_sum": ("test_nn_surface.py", "test_sync_batch_norm_across_ranks_matches_the_whole_batch"),
    "foreach_update": ("test_foreach_one_pass.py", "test_one_pass_updates_keep_the_bits_and_torchs_values"),
    "optimizer_step_counts": ("test_optim_step_tensors_s20.py", "test_step_is_a_0d_scalar_tensor_as_torch"),
    "_thnn_fused_lstm_cell": ("test_recurrent_cells.py", "test_layers_values_and_gradients_as_torch"),
    "_thnn_fused_lstm_cell_backward": ("test_recurrent_cells.py", "test_layers_values_and_gradients_as_torch"),
    "_thnn_fused_gru_cell": ("test_recurrent_cells.py", "test_layers_values_and_gradients_as_torch"),
    "_thnn_fused_gru_cell_backward": ("test_recurrent_cells.py", "test_layers_values_and_gradients_as_torch"),
    # the nodes of in-place elu/celu/selu/leaky_relu, which save their result
    "elu_result": ("test_programs_s19.py", "test_inplace_activations_that_save_their_result"),
    "leaky_relu_result": ("test_programs_s19.py", "test_inplace_activations_that_save_their_result"),
    # the node of a conj view's imaginary part (torch's negative bit), reached through its gradient
    "_neg_view": ("test_conj_views.py", "test_gradients"),
}


def _database_names() -> set:
    names = set()
    for op, _ in torch_op_db.PRESENT:
        names.add(op.name)
        names.update(a.name for a in op.aliases)
    names.update(r.name for r in tidal_sample_db.RECORDS)
    return names


def _covered(name: str, database: set) -> bool:
    """A record is covered when a database entry is its name (dots as underscores, namespaces dropped: the
    record `linalg_vector_norm` is `linalg.vector_norm`, `avg_pool2d` is `nn.functional.avg_pool2d`), or the op
    it is reached through is one."""
    if name in REACHED_BY_TEST:
        return True
    spellings = {name, REACHED_THROUGH.get(name)}
    for entry in database:
        if entry in spellings or entry.replace(".", "_") == name or entry.rsplit(".", 1)[-1] == name:
            return True
    return False


def test_every_primitive_has_an_op_database_entry():
    database = _database_names()
    missing = sorted(name for name in PRIMITIVES if not _covered(name, database))
    assert not missing, f"primitives no op database reaches (add an entry, or to REACHED_THROUGH): {missing}"
    assert not [name for name in REACHED_THROUGH.values() if name not in database]
    for test_file, test_name in REACHED_BY_TEST.values():  # (the named test exists)
        assert f"def {test_name}(" in (Path(__file__).parent / test_file).read_text()


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_record_declares_a_cpu_kernel_and_shows_every_slot(name):
    record = PRIMITIVES[name]
    kernels = record.kernels()
    assert tuple(kernels) == DEVICE_TYPES
    if record.shapes is None and kernels["cpu"] is None:  # a composite's node (computed from other ops)
        assert set(kernels.values()) == {None} and callable(record.backward)
        assert repr(record) == f"Primitive('{name}', cpu=none, cuda=none, backward=yes)"
        return
    assert callable(kernels["cpu"])
    assert kernel_launch.kernel_for(name, tidal.device("cpu")) is kernels["cpu"]
    assert f"Primitive('{name}', cpu=yes" in repr(record)


def test_saves_names_and_refusals():
    assert saves("input0", "output1") == (Saved(False, 0), Saved(True, 1))
    with pytest.raises(ValueError, match="expected names like 'input0'"):
        saves("grad0")
    with pytest.raises(ValueError, match="expected names like 'input0'"):
        saves("input")


@pytest.fixture
def square_sums():
    """A toy primitive declared for the test: c * sum(x ** 2) over the last dim, its backward in tidal ops."""
    def shapes(inputs, attrs):
        x = inputs[0]
        if x.ndim == 0:
            raise RuntimeError("square_sums_s17: expected at least 1 dim")
        return [(tuple(x.shape[:-1]), x.dtype)]

    def cpu(ins, outs, attrs):
        outs[0][...] = (ins[0] ** 2).sum(-1) * attrs

    def backward(node, g):
        (x,) = node.saved_tensors
        return g.unsqueeze(-1) * x * (2 * node.attrs)

    record = Primitive("square_sums_s17", shapes, cpu=cpu, backward=backward, saved=("input0",))
    yield record
    del PRIMITIVES["square_sums_s17"]
    del kernel_launch._kernels["square_sums_s17", "cpu"]


def test_a_declared_record_runs_and_differentiates_twice(square_sums):
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = tidal.tensor(host, requires_grad=True)
    y = square_sums((x,), 3.0)
    assert type(y.grad_fn).__name__ == "SquareSumsS17Backward0"
    np.testing.assert_allclose(y.detach().numpy(), (host ** 2).sum(-1) * 3.0)
    (g,) = tidal.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 6.0 * host)
    (gg,) = tidal.autograd.grad((g * g).sum(), x)  # sum((6x)^2) -> 72 x
    np.testing.assert_allclose(gg.numpy(), 72.0 * host)
    with pytest.raises(RuntimeError, match="square_sums_s17: expected at least 1 dim"):
        square_sums((tidal.tensor(1.0),), 1.0)
    assert square_sums((x.detach(),), 1.0).grad_fn is None  # nothing requires grad: no node


def test_a_record_declared_twice_is_refused(square_sums):
    with pytest.raises(ValueError, match="primitive 'square_sums_s17' is declared twice"):
        Primitive("square_sums_s17", square_sums.shapes, cpu=lambda ins, outs, attrs: None)


def test_in_place_write_records_on_the_target():
    x = tidal.tensor([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]], requires_grad=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    y, ty = x * 1, tx * 1
    y.cumprod_(1)
    ty.cumprod_(1)
    assert y._version == ty._version == 1
    (g,) = tidal.autograd.grad((y * y).sum(), x)
    (tg,) = torch.autograd.grad((ty * ty).sum(), tx)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6)


DTYPES = ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 2), False), ((), True)])
def test_hash_tensor_matches_torch(dtype, dim, keepdim):
    host = np.random.default_rng(7).standard_normal((3, 4, 5)) * 50
    tx = torch.tensor(host).to(getattr(torch, dtype))
    x = ttorch.tensor(tx.to(torch.float64).numpy()).to(getattr(ttorch, dtype))
    if dim is None:
        got, want = ttorch.hash_tensor(x), torch.hash_tensor(tx)
    else:
        got, want = ttorch.hash_tensor(x, dim, keepdim=keepdim), torch.hash_tensor(tx, dim, keepdim=keepdim)
    assert got.dtype is ttorch.uint64 and tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()
    assert x.transpose(0, 2).hash_tensor(1).tolist() == tx.transpose(0, 2).hash_tensor(1).tolist()


@pytest.mark.parametrize("call,exc,message", [
    (lambda L: L.hash_tensor(L.ones(2), mode=1), RuntimeError, "Unknown hash_tensor mode: 1"),
    (lambda L: L.hash_tensor(L.ones(2, dtype=L.complex64)), NotImplementedError,
     "\"xor_sum_cpu\" not implemented for 'ComplexFloat'"),
    (lambda L: L.hash_tensor(L.ones(2, dtype=L.uint32)), NotImplementedError,
     "\"xor_sum_cpu\" not implemented for 'UInt32'"),
    (lambda L: L.hash_tensor(L.ones(2, 0), 1), IndexError, "hash_tensor: Expected reduction dim 1 to have non-zero"),
    (lambda L: L.hash_tensor(L.empty(0)), RuntimeError, "Expected reduction dim to be specified for input.numel"),
    (lambda L: L.hash_tensor(L.ones(2), 3), IndexError, "Dimension out of range"),
])
def test_hash_tensor_errors_match_torch(call, exc, message):
    for lib in (torch, ttorch):
        with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")):
            call(lib)


def test_record_options_edges_attached_outputs_and_overload_names():
    """grad_inputs: an index input gets no edge; grad_outputs: the node sits on the values only; node=: the
    overload's name."""
    def shapes(inputs, attrs):
        return [(tuple(inputs[1].shape), inputs[0].dtype), (tuple(inputs[1].shape), tidal.int64)]

    def cpu(ins, outs, attrs):
        outs[0][...] = ins[0][ins[1]]
        outs[1][...] = ins[1]

    def backward(node, g):
        (index,) = node.saved_tensors
        return tidal.zeros(node.attrs, dtype=g.dtype).index_add(0, index, g), None

    record = Primitive("pick_s17", shapes, cpu=cpu, backward=backward, saved=("input1",),
                       node_attrs=lambda inputs, attrs: tuple(inputs[0].shape), grad_inputs=(0,), grad_outputs=(0,))
    try:
        x = tidal.tensor([1.0, 2.0, 3.0], requires_grad=True)
        index = tidal.tensor([2, 0, 2])
        values, positions = record((x, index), None, node=overload("pick_s17", 1))
        assert type(values.grad_fn).__name__ == "PickS17Backward1" and positions.grad_fn is None
        assert len(values.grad_fn.next_functions) == 1  # (no edge for the index, as torch's)
        (g,) = tidal.autograd.grad((values * tidal.tensor([1.0, 10.0, 100.0])).sum(), x)
        assert g.tolist() == [10.0, 0.0, 101.0] and positions.tolist() == [2, 0, 2]
    finally:
        del PRIMITIVES["pick_s17"]
        del kernel_launch._kernels["pick_s17", "cpu"]
