"""vmap: map a function over a dimension of its inputs.

The function runs once, on batched values (batching.BatchedTensor: a tensor whose dim 0 is the batch of this vmap
level, the rest the sample the function sees). Each op it calls goes through its family's batching rule
(batching_rules.py), which runs the op once for the whole batch; an op without a rule runs once per sample on the
slices and is stacked, with a one-time warning naming it. Nested vmaps nest the batched values, one level each;
gradients flow through the ops the rules call, so grad(vmap(f)) differentiates them, and grad inside vmap
(vmap(grad(f)), per-sample gradients) differentiates the batched values (func/transforms.py lifts them).

Random ops: randomness="error" refuses them as torch does; "different" stays batched when every random draw was made
by an op on batched values (dropout, rand_like: one draw for the batch gives each sample its own numbers), "same"
when none was (a draw on unbatched values is shared by every sample); other programs take the loop below.

Where the batched run cannot be trusted, vmap falls back to running the whole function once per batch element
and stacking the results (exact, but a Python loop; a one-time warning says why): when the batched run raised
(an op that does not take batched values, such as a Tensor method of a plain tensor given a batched argument, or
a check that reads data differing across the batch) and no mapped input was written in place, and for the random
draws above. In-place writes to tensors vmap does not map over are refused, as the loop refuses them.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from .. import ops
from ..nn import Module
from ..ops.dispatch import torch_function as _torch_function
from ..ops.random import rng as _rng
from ..tensor import Tensor
from . import batching_linalg, batching_nn, batching_rules  # noqa: F401 - fill batching.RULES
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from .batching import ACCOUNTS, LEVELS, BatchedTensor, Level, draws

__all__ = ["vmap"]

RULES_ON = [True]  # whether vmap runs functions on batched values (False: always once per batch element)
# (composites that attach autograd nodes by hand refuse tensor-likes while batched values are live: Primitive.attach)
_LIVE = _torch_function.TENSOR_LIKES_LIVE
_warned: set = set()
_FELL_BACK = object()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=4)


def _rng_marks() -> dict:
    return {kind: (gen._seed, gen._offset) for kind, gen in _rng._defaults.items()}


def _rng_states() -> dict:
    return {kind: gen.get_state() for kind, gen in _rng._defaults.items()}


def _func_name(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


def _batch_size(flat_args: list, flat_dims: list, in_dims, name: str) -> int:
    sizes = []
    for x, d in zip(flat_args, flat_dims):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims must be int or None for "
                             f"every input, got {d!r}")
        if not isinstance(x, (Tensor, BatchedTensor)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(x)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {x.dim()} so expected in_dim to satisfy "
                             f"-{x.dim()} <= in_dim < {x.dim()}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got all in_dims=None; at least one input "
                         "must be mapped over.")
    if len(set(sizes)) != 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise NotImplementedError("vmap over a dimension of size 0: tidal runs the function once per batch "
                                  "element, so it cannot infer the shapes of an empty batch's outputs")
    return sizes[0]


def _unmapped(func: Callable, flat_args: list, flat_dims: list) -> list:
    """The tensors the per-sample calls share: inputs not mapped over (in_dims None), tensors captured in
    func's closure, and a module's (func's or a captured one's) parameters and buffers."""
    found = [x.value if isinstance(x, BatchedTensor) else x for x, d in zip(flat_args, flat_dims)
             if d is None and isinstance(x, (Tensor, BatchedTensor))]
    owners = [func] + [c.cell_contents for c in (getattr(func, "__closure__", None) or ())
                       if c.cell_contents is not None]
    for obj in owners:
        if isinstance(obj, Tensor):
            found.append(obj)
        elif isinstance(obj, Module):
            found.extend(obj.parameters())
            found.extend(obj.buffers())
    return found


def _check_unwritten(shared: list, versions: list, name: str) -> None:
    """Raise if a per-sample call wrote in place to a shared tensor: torch writes it once (or refuses), a loop
    over the samples would write it once per sample."""
    if any(t._version != v for t, v in zip(shared, versions)):
        raise RuntimeError(f"vmap({name}, ...): the function wrote in place to a tensor it does not map over (an "
                           "input with in_dims=None, or one it captures, such as a BatchNorm module's running "
                           "stats in training mode). tidal's vmap runs the function once per batch element, so "
                           "the write would happen once per element; write out of place, map over that tensor, "
                           "or (for batch norm) use eval mode, track_running_stats=False or "
                           "torch.func.replace_all_batch_norm_modules_")


def _stack_outputs(per_sample: list, out_dims, name: str) -> Any:
    leaves0, spec = tree_flatten(per_sample[0])
    dims = broadcast_prefix(out_dims, per_sample[0], "out_dims") if isinstance(out_dims, (tuple, list, dict)) \
        else [out_dims] * len(leaves0)
    columns = [tree_flatten(s)[0] for s in per_sample]
    result = []
    for k, (leaf, d) in enumerate(zip(leaves0, dims)):
        if d is None:
            result.append(leaf)
            continue
        _check_out_dim(name, leaf, d)
        result.append(ops.stack([col[k] for col in columns], dim=d))
    return tree_unflatten(result, spec)


def _check_out_dim(name: str, leaf, d) -> None:
    """torch's errors for an output that is not a tensor, or an out_dim outside its dims."""
    if not isinstance(leaf, (Tensor, BatchedTensor)):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(leaf)}. Did you "
                         "mean to set out_dims= to None for output?")
    if not isinstance(d, int) or not -(leaf.dim() + 1) <= d <= leaf.dim():
        raise ValueError(f"vmap({name}, ...): Got out_dim={d} for an output, but it is a Tensor of "
                         f"dimensionality {leaf.dim()} so expected out_dim to satisfy "
                         f"-{leaf.dim() + 1} <= out_dim <= {leaf.dim()}.")


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """`func` mapped over dimension `in_dims` of its inputs, results stacked along `out_dims`."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if not isinstance(in_dims, (int, tuple, list, dict)) and in_dims is not None:
        raise ValueError(f"vmap({_func_name(func)}, in_dims={in_dims}, ...): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        name = _func_name(func)
        if isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
                                 f"the structure of `inputs`. in_dims has structure {len(in_dims)} entries but "
                                 f"inputs has {len(args)}.")
            dims_tree = in_dims
        else:
            dims_tree = (in_dims,) * len(args)
        flat_args, spec = tree_flatten(args)
        flat_dims = broadcast_prefix(dims_tree, args, "in_dims")
        size = _batch_size(flat_args, flat_dims, in_dims, name)
        if RULES_ON[0]:
            result = _batched_run(func, flat_args, flat_dims, spec, kwargs, size, out_dims, name, chunk_size,
                                  randomness)
            if result is not _FELL_BACK:
                return result
        return _loop(func, flat_args, flat_dims, spec, kwargs, size, out_dims, name, randomness)
    return wrapped


def _loop(func: Callable, flat_args: list, flat_dims: list, spec, kwargs: dict, size: int, out_dims, name: str,
          randomness: str) -> Any:
    """The whole function once per batch element, the results stacked."""
    _warn_once("loop", "tidal.func.vmap: running the function once per batch element and stacking the results "
                       "(correct, but no faster than a Python loop)" + ("" if randomness == "error" else
                       f" because randomness={randomness!r} needs each sample's own random draws"))
    start = _rng_states() if randomness == "same" else None
    shared = _unmapped(func, flat_args, flat_dims)
    versions = [t._version for t in shared]
    samples = []
    for i in range(size):
        if start is not None:
            for kind, state in start.items():
                _rng._defaults[kind].set_state(state)
        sliced = [x if d is None else x.select(d, i) for x, d in zip(flat_args, flat_dims)]
        before = _rng_marks() if randomness == "error" else None
        samples.append(func(*tree_unflatten(sliced, spec), **kwargs))
        _check_unwritten(shared, versions, name)
        if before is not None and _rng_marks() != before:
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                               "use the 'same' or 'different' randomness flags on vmap or perform the "
                               "randomness operation out of vmap")
    return _stack_outputs(samples, out_dims, name)


class _RandomOpCalled(Exception):
    pass


def _batched_run(func: Callable, flat_args: list, flat_dims: list, spec, kwargs: dict, size: int, out_dims,
                 name: str, chunk_size: int | None, randomness: str = "error") -> Any:
    """`func` run once on batched values (in chunks of `chunk_size`), or _FELL_BACK where that cannot be trusted."""
    if chunk_size is not None and chunk_size < size:
        parts = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            chunk = [x if d is None else x.narrow(d, start, n) for x, d in zip(flat_args, flat_dims)]
            part = _batched_run(func, chunk, flat_dims, spec, kwargs, n, out_dims, name, None, randomness)
            if part is _FELL_BACK:
                return part
            parts.append(part)
        return _cat_chunks(parts, out_dims)
    marks, states = _rng_marks(), _rng_states()
    shared = _unmapped(func, flat_args, flat_dims)
    versions = [t._version for t in shared]
    mapped = [_plain(x) for x, d in zip(flat_args, flat_dims) if d is not None]
    written = [t._version for t in mapped]
    refused = False
    level = Level(size)
    LEVELS.append(level)
    _LIVE[0] += 1
    account: list = []
    if randomness != "error":
        ACCOUNTS.append(account)
    try:
        batched = [x if d is None else BatchedTensor(x.movedim(d, 0), level) for x, d in zip(flat_args, flat_dims)]
        out = func(*tree_unflatten(batched, spec), **kwargs)
        if any(t._version != v for t, v in zip(shared, versions)):
            refused = True  # (not run again: torch writes once, tidal refuses as its loop would)
            _check_unwritten(shared, versions, name)
        if _rng_marks() != marks and not _draws_batched(randomness, marks, _rng_marks(), account):
            raise _RandomOpCalled(f"a random op whose draws cannot be batched with randomness={randomness!r}")
        return _unbatch_outputs(out, level, out_dims, name)
    except Exception as e:  # (the loop gives the user's error where the function itself is wrong)
        if refused or any(t._version != v for t, v in zip(mapped, written)):
            raise  # (a mapped input written in place: running the function again would see the write)
        for kind, state in states.items():
            _rng._defaults[kind].set_state(state)
        what = f"{type(e).__name__}: {e}".splitlines()[0][:200]
        _warn_once(f"fell back {name}", f"tidal.func.vmap({name}): the batched run stopped ({what}); running the "
                                        "function once per batch element instead")
        return _FELL_BACK
    finally:
        LEVELS.remove(level)
        _LIVE[0] -= 1
        if account in ACCOUNTS:
            ACCOUNTS.remove(account)


def _draws_batched(randomness: str, start: dict, end: dict, account: list) -> bool:
    """Whether the random draws of a batched run are those `randomness` asks for: 'different', every draw made by an
    op on batched values (one draw for the whole batch, each sample its own numbers); 'same', no draw made by one
    (an op on unbatched values draws once, shared by every sample). Else the loop runs the function per sample."""
    if randomness == "error":
        return False
    total = draws(start, end)
    if total is None:
        return False
    batched: dict = {}
    for before, after in account:
        d = draws(before, after)
        if d is None:
            return False
        for kind, n in d.items():
            batched[kind] = batched.get(kind, 0) + n
    if randomness == "different":
        return all(batched.get(kind, 0) == n for kind, n in total.items())
    return not any(batched.values())


def _plain(x):
    """The plain tensor under a (nested vmap's) batched value."""
    while isinstance(x, BatchedTensor):
        x = x.value
    return x


def _unbatch_outputs(out, level: Level, out_dims, name: str) -> Any:
    """The function's outputs with this level's batch dim at `out_dims` (unbatched ones expanded over it)."""
    leaves, spec = tree_flatten(out)
    dims = broadcast_prefix(out_dims, out, "out_dims") if isinstance(out_dims, (tuple, list, dict)) \
        else [out_dims] * len(leaves)
    result = []
    for leaf, d in zip(leaves, dims):
        mine = isinstance(leaf, BatchedTensor) and leaf.level is level
        if d is None:
            if mine:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(leaf)
            continue
        _check_out_dim(name, leaf, d)
        value = leaf.value if mine else leaf.unsqueeze(0).expand(level.size, *leaf.shape)
        result.append(value if d % (leaf.dim() + 1) == 0 else value.movedim(0, d))
    return tree_unflatten(result, spec)


def _cat_chunks(parts: list, out_dims) -> Any:
    leaves0, spec = tree_flatten(parts[0])
    dims = broadcast_prefix(out_dims, parts[0], "out_dims") if isinstance(out_dims, (tuple, list, dict)) \
        else [out_dims] * len(leaves0)
    columns = [tree_flatten(p)[0] for p in parts]
    result = [leaf if d is None else ops.cat([c[k] for c in columns], d) for k, (leaf, d) in
              enumerate(zip(leaves0, dims))]
    return tree_unflatten(result, spec)
