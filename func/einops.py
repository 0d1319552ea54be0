"""torch.func.rearrange: einops-style axis rearrangement ("b (h w) c -> b c h w") as one reshape, permute and
reshape. A pattern names each input dimension as a group of axes (a name, a parenthesized composition, `1` for a
unit axis, `...` for the dimensions not named); the right side lists the same axes in their new order and
grouping. Sizes of decomposed axes come from `axes_lengths` (one per group may be left to infer)."""
from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..tensor import Tensor

__all__ = ["rearrange"]

_ELLIPSIS = "\u2026"  # `...` as one token


def _check_name(name: str) -> None:
    if not name.isidentifier():
        raise ValueError(f"Invalid axis identifier: {name}\nnot a valid python identifier")
    if name != "_" and (name.startswith("_") or name.endswith("_")):
        raise ValueError(f"Invalid axis identifier: {name}\naxis name should should not start or end with "
                         "underscore")


def _parse(side: str) -> tuple:
    """The groups of one side (lists of axis names; [] for a unit axis; the string ELLIPSIS for a bare `...`,
    which stands for several dimensions), whether `...` appears, and whether it is inside parentheses."""
    text = side.replace("...", f" {_ELLIPSIS} ")
    groups: list = []
    current: list | None = None
    seen: set = set()
    ellipsis = in_parens = False
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            if current is not None:
                raise ValueError("Axis composition is one-level (brackets inside brackets not allowed)")
            current = []
            continue
        if token == ")":
            if current is None:
                raise ValueError("Brackets are not balanced")
            groups.append(current)
            current = None
            continue
        if token == _ELLIPSIS:
            if ellipsis:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            ellipsis, in_parens = True, current is not None
            (current if current is not None else groups).append(_ELLIPSIS)  # alone: the string, not a group
            continue
        if token.isdecimal():
            if int(token) != 1:
                raise ValueError("rearrange only supports unnamed axes of size 1")
            if current is None:
                groups.append([])
            continue
        if any(c not in "_" and not c.isalnum() for c in token):
            raise ValueError(f"Unknown character '{next(c for c in token if c != '_' and not c.isalnum())}'")
        _check_name(token)
        if token in seen:
            raise ValueError(f"Indexing expression contains duplicate dimension '{token}'")
        seen.add(token)
        if current is None:
            groups.append([token])
        else:
            current.append(token)
    if current is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{side}'")
    return groups, ellipsis, in_parens


def rearrange(tensor: Any, pattern: str, **axes_lengths: int) -> Tensor:
    """`tensor` (or a list of tensors, stacked first) rearranged by `pattern`, e.g. 'b h w c -> b c h w',
    'b (h h1) (w w1) c -> b h w (c h1 w1)' with h1=2, w1=2."""
    if not isinstance(tensor, Tensor):
        tensor = ops.stack(list(tensor))
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    if "..." in axes_lengths:
        raise ValueError("'...' is not an allowed axis identifier")
    left, left_dots, left_dots_grouped = _parse(left_text)
    right, right_dots, _ = _parse(right_text)
    if not left_dots and right_dots:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left_dots and left_dots_grouped:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    def names(groups: list) -> set:
        return {a for g in groups for a in ([g] if isinstance(g, str) else g)}
    difference = names(left) ^ names(right)
    if difference:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on both): {difference}")
    unmatched = axes_lengths.keys() - names(left)
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
    ndim = tensor.dim()
    if left_dots:
        named = len(left) - 1
        if named > ndim:
            raise ValueError(f"Number of dimensions in pattern ({named}) must be less than or equal to the number "
                             f"of dimensions in the tensor ({ndim})")
        extra = [f"{_ELLIPSIS}{i}" for i in range(ndim - named)]
    else:
        if len(left) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left)}) must be equal to the number of "
                             f"dimensions in the tensor ({ndim})")
        extra = []

    def expand(groups: list) -> list:
        """A bare `...` becomes one group per dimension it stands for; `(... x)` merges them inline."""
        out: list = []
        for g in groups:
            if isinstance(g, str):
                out.extend([e] for e in extra)
            else:
                out.append([e for a in g for e in (extra if a == _ELLIPSIS else [a])])
        return out
    left, right = expand(left), expand(right)
    sizes: dict = dict(axes_lengths)
    for group, length in zip(left, tensor.shape):
        unknown = [a for a in group if a not in sizes]
        known = math.prod(sizes[a] for a in group if a in sizes)
        if len(unknown) > 1:
            raise ValueError(f"Could not infer sizes for {set(unknown)}")
        if unknown:
            if known == 0 or length % known:
                raise ValueError(f"Shape mismatch, can't divide axis of length {length} in chunks of {known}")
            sizes[unknown[0]] = length // known
        elif known != length:
            raise ValueError(f"Shape mismatch, {length} != {known}")
    elementary = [a for g in left for a in g]
    out = tensor.reshape([sizes[a] for a in elementary])
    order = [a for g in right for a in g]
    perm = [elementary.index(a) for a in order]
    if perm != list(range(len(perm))):
        out = out.permute(perm)
    return out.reshape([math.prod(sizes[a] for a in g) for g in right])
