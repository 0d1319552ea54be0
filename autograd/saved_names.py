"""`grad_fn._saved_<name>`: what a node saved, under torch's names (derivatives.yaml's argument names).

    y = a * b
    y.grad_fn._saved_self is a, y.grad_fn._saved_other is b   # True True
    (a @ w).grad_fn._saved_mat2, x.sum(1).grad_fn._saved_dim    # w, (1,)

One mechanism, from data: holding nodes give the inputs they hold (`HELD_INPUTS`, held_inputs.py); elementwise
nodes name the inputs their formulas read (ops/elementwise/derivatives.py) when the node is its op's own, and
`ELEMENTWISE_NAMES` rows where torch's names differ (pow with a number, clamp_min, a composite's last node named
after it: silu's division); every other node class torch users meet most has a row in `NODE_NAMES`: torch's name ->
where tidal's node keeps that value (a saved tensor, an input's shape, a field of its attributes), with torch's
conversions (an int64 argument read back unsigned: ignore_index -100 as 2**64 - 100). A composite's last node named
after torch's (torch_node) keeps another op's values, so no `NODE_NAMES` row reads it. A name gives None where the
inputs that needed it did not require grad, as torch's undefined saved variables do. Saved tensors are read through
the node's saved tensors, so reading raises torch's error once backward freed them and runs saved_tensors_hooks'
unpack hook. A name with no source raises AttributeError, as for a name torch's node does not have (also for the
few values tidal does not keep). Known difference: reductions' dims are the node's normalized dims (torch keeps
them as given: -1 reads back as 2**64 - 1; softmax's are kept as given), and a view's start/end are not kept.
"""
from __future__ import annotations

import math

from . import hooks

__all__ = ["saved_value", "SAVED_NAMES", "NODE_NAMES", "ELEMENTWISE_NAMES", "HELD_INPUTS"]

# input names of elementwise ops whose torch schema does not call them self/other
_ARG_NAMES = {"pow": ("self", "exponent"), "float_power": ("self", "exponent"),
              "where": ("condition", "self", "other"), "lerp": ("self", "end", "weight"),
              "clamp": ("self", "min", "max"),
              "addcmul": ("self", "tensor1", "tensor2"), "addcdiv": ("self", "tensor1", "tensor2"),
              "masked_fill": ("self", "mask", "value")}
_DEFAULT = ("self", "other")

# a source: ("saved", k) the node's k-th saved tensor, ("sizes", k) input k's shape, ("strides", k) saved tensor
# k's strides (contiguous ones of input k's shape where it was not saved; none for an input without an edge), ("attr", key) the node's attrs[key] (an
# index or a field name), ("attrs",) the attrs themselves, ("const", value); an optional third item converts it
_U64 = "unsigned"  # an int64 argument torch reads back as uint64 (-1: 2**64 - 1)
_PRODUCT = "product"  # a shape's element count
_INVERSE = "inverse"  # the inverse permutation
_TUPLE = "tuple"
_FLAT = "flat"  # a per-channel statistic kept broadcastable (1, C, 1): torch's is (C,)
_REDUCTION = "reduction"  # 'none' | 'mean' | 'sum' as torch's enum (0, 1, 2)
_SPATIAL = "spatial"  # per canonical (2-D or 3-D) spatial dim of a convolution: its own (conv1d's last one)
_SPATIAL_PAIRS = "before"  # (before, after) pads per canonical dim: torch's symmetric padding is the befores
_ZEROS = "zeros"  # zeros per spatial dim (a plain convolution's output padding)
_BEFORES = "befores"  # (before, after) pads per dim of a pool (torch's pools are 2-D or 3-D there too)
_APPROXIMATE = "approximate"  # gelu's op: gelu or gelu_tanh
_ELU_ALPHA = "elu_alpha"  # elu's attrs keep alpha * scale (selu's 1.758...): torch keeps alpha
_SPLIT = "split"  # a join's (op, dim, piece shapes): torch's split_size, the first piece's extent
_JOINED = "joined"  # ... and the joined input's shape
_FIRST = "first"
_SCALAR = "scalar"  # a number kept as a float: torch's Scalar reads back an int where it was one

_MATMUL = {"self": ("saved", 0), "mat2": ("saved", 1), "self_sym_sizes": ("sizes", 0),
           "mat2_sym_sizes": ("sizes", 1), "self_sym_strides": ("strides", 0), "mat2_sym_strides": ("strides", 1)}
_SUM = {"dim": ("attr", "axes"), "keepdim": ("attr", "keepdim"), "self_sym_sizes": ("attr", "shape")}
_MEAN = {**_SUM, "self_sym_numel": ("attr", "shape", _PRODUCT)}
_SIZES = {"self_sym_sizes": ("attrs",)}
_SOFTMAX = {"dim": ("attrs", None, _U64), "result": ("saved", 0)}  # (the dim as given: -1 reads 2**64 - 1)
_EXTREMES = {"dim": ("attr", "axes"), "keepdim": ("attr", "keepdim"), "self": ("saved", 0), "result": ("saved", 1)}
_INDEXED = {"dim": ("attr", "axes", _FIRST), "keepdim": ("attr", "keepdim"), "indices": ("saved", 0),
            "self_sym_sizes": ("attr", "shape")}
_SELECTED = {"dim": ("attr", 1), "indices": ("saved", 0), "self_sym_sizes": ("attr", 0, _TUPLE)}

NODE_NAMES = {
    # the matmul family (tidal's inputs: addmm's mat1, mat2, then its bias)
    "MmBackward0": _MATMUL,
    "BmmBackward0": {"self": ("saved", 0), "mat2": ("saved", 1)},
    "DotBackward0": {"self": ("saved", 0), "tensor": ("saved", 1)},
    "MvBackward0": {"self": ("saved", 0), "vec": ("saved", 1)},
    "BaddbmmBackward0": {"batch1": ("saved", 0), "batch2": ("saved", 1), "alpha": ("attr", 2, _SCALAR),
                         "beta": ("attr", 3, _SCALAR)},
    "AddmmBackward0": {"mat1": ("saved", 0), "mat2": ("saved", 1), "alpha": ("attr", 2, _SCALAR),
                       "beta": ("attr", 3, _SCALAR),
                       "mat1_sym_sizes": ("sizes", 0), "mat2_sym_sizes": ("sizes", 1),
                       "mat1_sym_strides": ("strides", 0), "mat2_sym_strides": ("strides", 1)},
    # reductions (attrs: a reduce.Reduced)
    "SumBackward0": {"self_sym_sizes": ("attr", "shape")},
    "SumBackward1": _SUM,
    "MeanBackward0": {"self_sym_sizes": ("attr", "shape"), "self_sym_numel": ("attr", "shape", _PRODUCT)},
    "MeanBackward1": _MEAN,
    "MaxBackward1": {"self": ("saved", 0), "result": ("saved", 1)},
    "MinBackward1": {"self": ("saved", 0), "result": ("saved", 1)},
    "VarBackward0": {"self": ("saved", 0), "dim": ("attr", "axes"), "keepdim": ("attr", "keepdim"),
                     "correction": ("attr", "extra", _FIRST)},
    "StdBackward0": {"self": ("saved", 0), "dim": ("attr", "axes"), "keepdim": ("attr", "keepdim"),
                     "correction": ("attr", "extra", _FIRST), "result": ("saved", 1)},
    "LinalgVectorNormBackward0": {"self": ("saved", 0), "result": ("saved", 1), "keepdim": ("attr", "keepdim"),
                                  "ord": ("attr", "extra", _SCALAR)},
    # views and reshapes (attrs: the input's shape, or the view's own)
    "ViewBackward0": _SIZES,
    "ExpandBackward0": _SIZES,
    "SqueezeBackward0": _SIZES,
    "SqueezeBackward1": _SIZES,
    "PermuteBackward0": {"dims": ("attrs", None, _INVERSE)},
    "TransposeBackward0": {"dim0": ("attr", 0), "dim1": ("attr", 1)},
    # indexing
    "IndexBackward0": {"indices": ("attrs", None, "indices"), "self_sym_sizes": ("attr", 0, _TUPLE)},
    "GatherBackward0": {"dim": ("attr", 1), "index": ("saved", 0), "self": ("saved", 1),
                        "sparse_grad": ("const", False)},
    "IndexSelectBackward0": {"dim": ("attr", 1), "index": ("saved", 0), "self_sym_sizes": ("attr", 0, _TUPLE)},
    "EmbeddingBackward0": {"indices": ("saved", 0), "weight_sym_argsize_0": ("attr", 0),
                           "padding_idx": ("attr", 1, _U64), "scale_grad_by_freq": ("attr", 2),
                           "sparse": ("attr", 3)},
    "MaskedFillBackward0": {"mask": ("saved", 0)},
    "CumsumBackward0": {"dim": ("attr", "axes", _FIRST)},
    "CumprodBackward0": {"dim": ("attr", "axes", _FIRST), "self": ("saved", 0), "result": ("saved", 1)},
    "ProdBackward0": {"self": ("saved", 0), "result": ("saved", 1)},
    "ProdBackward1": {"dim": ("attr", "axes", _FIRST), "keepdim": ("attr", "keepdim"), "self": ("saved", 0),
                      "result": ("saved", 1)},
    "AmaxBackward0": _EXTREMES,
    "AminBackward0": _EXTREMES,
    "LogsumexpBackward0": _EXTREMES,
    "MaxBackward0": _INDEXED,
    "MinBackward0": _INDEXED,
    "MedianBackward1": _INDEXED,
    "NanmedianBackward1": _INDEXED,
    "ModeBackward0": _INDEXED,
    "KthvalueBackward0": {**_SELECTED, "keepdim": ("attr", 2)},
    "SortBackward0": _SELECTED,
    # joins and splits (a split's attrs: the join that is its gradient, its dim, the pieces' shapes)
    "SplitBackward0": {"dim": ("attr", 1), "split_size": ("attrs", None, _SPLIT),
                       "self_sym_sizes": ("attrs", None, _JOINED)},
    "UnbindBackward0": {"dim": ("attr", 1)},
    "CatBackward0": {"dim": ("attr", 0)},
    "StackBackward0": {"dim": ("attrs",)},
    "FlipBackward0": {"dims": ("attrs", None, _TUPLE)},
    "RollBackward0": {"shifts": ("attr", 0), "dims": ("attr", 1)},
    "TrilBackward0": {"diagonal": ("attr", 0)},
    "TriuBackward0": {"diagonal": ("attr", 0)},
    # the softmax family (attrs: the dim)
    "SoftmaxBackward0": _SOFTMAX,
    "LogSoftmaxBackward0": _SOFTMAX,
    # losses (the composites' held inputs come from held_inputs.py)
    "NllLossBackward0": {"ignore_index": ("attr", 0, _U64), "reduction": ("attr", 1, _REDUCTION),
                         "target": ("saved", 0), "total_weight": ("saved", 1)},
    "NllLoss2DBackward0": {"ignore_index": ("attr", 0, _U64), "reduction": ("attr", 1, _REDUCTION),
                           "target": ("saved", 0), "total_weight": ("saved", 1)},
    # convolution (attrs: a conv.ConvGeometry) and norms
    "ConvolutionBackward0": {"input": ("saved", 0), "weight": ("saved", 1), "stride": ("attr", "stride", _SPATIAL),
                             "dilation": ("attr", "dilation", _SPATIAL), "groups": ("attr", "groups"),
                             "padding": ("attr", "pads", _SPATIAL_PAIRS), "transposed": ("const", False),
                             "output_padding": ("attr", "stride", _ZEROS)},
    "AvgPool2DBackward0": {"self": ("saved", 0), "kernel_size": ("attr", "kernel"),
                           "padding": ("attr", "pads", _BEFORES)},
    "AvgPool3DBackward0": {"self": ("saved", 0), "kernel_size": ("attr", "kernel"),
                           "padding": ("attr", "pads", _BEFORES)},
    "MaxPool2DWithIndicesBackward0": {"self": ("saved", 1), "result1": ("saved", 0), "kernel_size": ("attr", "kernel"),
                                      "padding": ("attr", "pads", _BEFORES), "dilation": ("attr", "dilation")},
    # activations whose nodes keep their numbers (attrs)
    "LeakyReluBackward0": {"self": ("saved", 0), "negative_slope": ("attr", 0)},
    "EluBackward0": {"self": ("saved", 0), "alpha": ("attrs", None, _ELU_ALPHA), "scale": ("attr", 1, _SCALAR),
                     "input_scale": ("attr", 2, _SCALAR)},
    "SoftplusBackward0": {"self": ("saved", 0), "beta": ("attr", 0, _SCALAR), "threshold": ("attr", 1, _SCALAR)},
    "HardtanhBackward0": {"self": ("saved", 0), "min_val": ("attr", 0), "max_val": ("attr", 1)},
    "CeluBackward0": {"self": ("saved", 0), "alpha": ("attr", 0, _SCALAR)},
    "SoftshrinkBackward0": {"self": ("saved", 0), "lambd": ("attr", 0)},
    "NativeLayerNormBackward0": {"input": ("saved", 0), "result1": ("saved", 1), "result2": ("saved", 2),
                                 "weight": ("saved", 3)},
    "NativeBatchNormBackward0": {"input": ("saved", 0), "result1": ("saved", 1, _FLAT),
                                 "result2": ("saved", 2, _FLAT), "weight": ("saved", 3), "eps": ("attr", 1)},
}

# elementwise nodes whose torch names differ from their op's inputs (saved: 0 the result, 1 + k input k), their own
# or a composite's last node named after it (silu's division)
ELEMENTWISE_NAMES = {
    "PowBackward0": {"self": ("saved", 1), "exponent": ("saved", 2)},
    "ClampMinBackward0": {"self": ("saved", 1), "min": ("saved", 2)},
    "ClampMaxBackward0": {"self": ("saved", 1), "max": ("saved", 3)},
    "LerpBackward0": {"weight": ("saved", 3)},
    "PolygammaBackward0": {"self": ("saved", 1), "n": ("saved", 2)},
    "GeluBackward0": {"self": ("saved", 1), "approximate": ("attr", 0, _APPROXIMATE)},
    "SiluBackward0": {"self": ("saved", 1)},
    "MishBackward0": {"self": ("saved", 1)},
    "FmodBackward0": {},
    "RemainderBackward0": {},
}

# the inputs torch's node of a composite saves (derivatives.yaml's names, in the composite's argument order), by the
# composite's node name (ops/dispatch/node_names.torch_node): its node holds them (held_inputs.py), so a write into
# one before backward is refused as in torch
HELD_INPUTS = {"mse_loss": ("self", "target"), "smooth_l1_loss": ("self", "target"), "huber_loss": ("self", "target"),
               "cdist": ("x1", "x2"), "_euclidean_dist": ("x1", "x2"), "dist": ("self", "other"), "glu": ("self",),
               "PdistBackward0": ("self",), "grid_sampler_2d": ("input", "grid"), "grid_sampler_3d": ("input", "grid"),
               "native_batch_norm": ("input", "weight", "running_mean", "running_var")}  # (batch_norm's eval mode)

SAVED_NAMES = frozenset({"result", *_DEFAULT, *(n for names in _ARG_NAMES.values() for n in names),
                         *(n for table in (NODE_NAMES, ELEMENTWISE_NAMES) for row in table.values() for n in row),
                         *(n for names in HELD_INPUTS.values() for n in names)})
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _elementwise_names(node) -> dict:
    """{name: place in the node's saved tuple} for an elementwise node."""
    op = node.attrs[0]
    reads = set().union(*hooks.elementwise_reads[op])  # 1: the output, 2 + k: input k
    inputs = _ARG_NAMES.get(op, _DEFAULT if len(node.attrs[1]) <= 2 else ())
    names = {"result": 0} if 1 in reads else {}
    names.update({name: k + 1 for k, name in enumerate(inputs) if k + 2 in reads})
    return names


def _attr(node, key):
    attrs = node.attrs
    return getattr(attrs, key) if isinstance(key, str) else attrs[key]


def _strides(node, k: int) -> tuple:
    meta = node._input_meta[k]
    if meta is None:  # (torch keeps an input's strides for its own gradient only)
        return ()
    t = node.saved_tensors[k]
    if t is not None:
        return tuple(t.stride())
    shape, strides, step = meta[0], [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _read(node, source: tuple):
    kind = source[0]
    if kind == "saved":
        return node.saved_tensors[source[1]]
    if kind == "sizes":  # (an input without an edge has no meta: its saved tensor's, where saved)
        meta = node._input_meta[source[1]]
        if meta is None:
            t = node.saved_tensors[source[1]]
            return None if t is None else tuple(t.shape)
        return tuple(meta[0])
    if kind == "strides":
        return _strides(node, source[1])
    if kind == "attr":
        return _attr(node, source[1])
    if kind == "attrs":
        return node.attrs
    return source[1]  # "const"


def _convert(node, value, how: str):
    if value is None:
        return None
    if how == _U64:
        return value % 2 ** 64
    if how == _PRODUCT:
        return math.prod(value)
    if how == _INVERSE:
        inverse = [0] * len(value)
        for k, d in enumerate(value):
            inverse[d] = k
        return tuple(inverse)
    if how == _TUPLE:
        return tuple(value)
    if how in (_SPATIAL, _SPATIAL_PAIRS, _ZEROS):
        value = value[0::2] if how == _SPATIAL_PAIRS else value
        n = len(node.attrs.weight) - 2  # (a convolution's weight: its spatial dims as the user wrote them)
        return tuple(value[len(value) - n:]) if how != _ZEROS else (0,) * n
    if how == _APPROXIMATE:
        return "tanh" if value == "gelu_tanh" else "none"
    if how == _ELU_ALPHA:
        alpha = value[0] / value[1] if value[1] else value[0]
        return int(alpha) if alpha.is_integer() else alpha
    if how == _BEFORES:
        return tuple(value[0::2])
    if how in (_SPLIT, _JOINED):
        _, dim, shapes = value
        if how == _SPLIT:
            return shapes[0][dim]
        joined = list(shapes[0])
        joined[dim] = sum(shape[dim] for shape in shapes)
        return tuple(joined)
    if how == _FIRST:
        return value[0]
    if how == _SCALAR:
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if how == _FLAT:
        return value.reshape(-1)
    if how == _REDUCTION:
        return _REDUCTIONS[value]
    if how == "indices":  # (the input's shape, the dims indexed): torch's indices tuple, None at the dims left
        dims, tensors = value[1], node.saved_tensors
        out = [None] * (max(dims) + 1)
        for d, t in zip(dims, tensors):
            out[d] = t
        return tuple(out)
    raise AssertionError(how)


_OP_OF_CLASS: dict = {}  # node class name -> the op its name spells (PowBackward1 -> "Pow")


def _own_elementwise(node) -> bool:
    """Whether an elementwise node is its op's own (AddBackward0 of add), not a composite's last node named after
    the composite (silu's division as SiluBackward0): the op's input names are torch's only for the former."""
    cls = type(node).__name__
    stem = _OP_OF_CLASS.get(cls)
    if stem is None:
        stem = _OP_OF_CLASS[cls] = cls[:cls.rindex("Backward")]
    return stem == "".join(p.title() for p in node.attrs[0].split("_"))


def saved_value(node, name: str):
    """The value node `node` saved under torch's name `name` (e.g. 'self', 'other', 'result', 'dim')."""
    cls = type(node)
    if name in getattr(node, "held_names", ()) and node.names_held:
        return node.held(name)
    if node.backward_fn is hooks.elementwise_backward:
        row = ELEMENTWISE_NAMES.get(cls.__name__)
        if row is None:
            names = _elementwise_names(node) if _own_elementwise(node) else {}
            if name in names:
                return node.saved_tensors[names[name]]
            row = {}
    else:  # (a composite's last node named after the composite keeps another op's values: no row reads it)
        row = {} if getattr(cls, "names_a_composite", False) else NODE_NAMES.get(cls.__name__, {})
    source = row.get(name)
    if source is not None:
        value = _read(node, source)
        return value if len(source) < 3 else _convert(node, value, source[2])
    raise AttributeError(f"'{cls.__name__}' object has no attribute '_saved_{name}'")
