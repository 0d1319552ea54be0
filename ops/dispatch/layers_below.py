"""What ops hands the layers below it when it loads: autograd's engine ops and Tensor's constructors (autograd and
tensor sit below ops and never import it)."""
from __future__ import annotations

from ...autograd import hooks
from ...tensor.tensor import FROM_OPS
from ..complex_numbers import tensors as complex_tensors
from ..elementwise import arithmetic, copies, derivatives
from ..factories import creation, from_data
from ..movement import many_dims, memory_format, shape_ops, view_grads
from ..random import rng
from . import autocast

hooks.register(
    zeros=creation.zeros, zeros_like=creation.zeros_like, ones_like=creation.ones_like, empty=creation.empty,
    tensor=from_data.tensor, stack=shape_ops.stack,
    clone=copies.clone, fill_=copies.fill_, ne=arithmetic.ne, where=arithmetic.where, convert=copies.convert,
    parts_node=complex_tensors.parts_node, strided_node=view_grads.strided_node,
    as_parts=complex_tensors.as_parts, from_parts=complex_tensors.from_parts, transfer=view_grads.transfer,
    non_overlapping_and_dense=memory_format.non_overlapping_and_dense, laid_out=memory_format.laid_out,
    elementwise_backward=derivatives._backward, elementwise_reads=derivatives._READS,
    autocast_dtype=autocast.enabled_dtype, default_generator=rng.default_generator,
)

FROM_OPS.legacy_new, FROM_OPS.from_numpy = creation.legacy_new, from_data.from_numpy
FROM_OPS.tolist_many_dims = many_dims.tolist
