"""Checks that the ranks of a group issue the same collectives.

Always on, and cheap: every collective starts with a header to each peer of its group, carried
by the data plane (`agree`): the op, dtype, element count, reduce op or root, and for
all-to-alls the elements sent to that peer. The ranks compare headers before any data moves, so
different collectives, or the same one with other dtypes or sizes (even of the same byte
count), raise `CollectiveMismatchError` on every rank instead of returning garbage or hanging;
the group stays usable. Point-to-point messages carry the same header (`p2p_header`,
`verify_p2p`). A collective against a control-plane call (a barrier, an object exchange) is
caught by the coordinator: both share the group's call count, and a collective stalled on its
headers reports its call number (see `tidal.comm.coordinator`).

Debug mode (TIDAL_COMM_CHECK=1): before a collective moves any data, the ranks of its group
exchange a fingerprint of the call through the control plane: the op, its tensors' dtypes and
shapes, the reduce op and root, and the user's call site. If the ranks disagree, every rank
raises `CollectiveMismatchError` naming both calls and their call sites. All-to-alls are also
checked pairwise: what rank i sends rank j must be what rank j expects from rank i. Checked:
every collective of tidal.comm.collectives and `barrier`; point-to-point send/recv are not (they
pair two ranks, possibly with any source, not a whole group). It costs one control-plane round
trip per call; with the mode off, callers test `ENABLED` and nothing else.

A rank that never reaches its call leaves the others waiting while it runs; once it exits, their
calls fail within seconds (its connections close).
"""
from __future__ import annotations

import os
import sys

from ..tensor import dtype as dt
from . import ring
from .base import CollectiveMismatchError, CommError, ReduceOp

__all__ = ["ENABLED", "CollectiveMismatchError", "set_enabled", "verify", "call_header", "agree", "p2p_header",
           "verify_p2p"]

ENABLED = os.environ.get("TIDAL_COMM_CHECK", "0").strip().lower() not in ("", "0", "false", "no", "off")
_CONTROL_OP = "collective check"       # the control-plane call the fingerprints travel in
_UNCHECKED = ("send", "recv")


def set_enabled(flag: bool) -> None:
    """Turn the check on or off in this process (every rank of a job must agree)."""
    global ENABLED
    ENABLED = bool(flag)


def _tensor(t) -> str:
    return f"{t.dtype.name}[{', '.join(map(str, t.shape))}]"


def _op(reduction) -> str:
    return reduction[0].op.name      # collectives._reduction names the ReduceOp on its combine function


def _describe(name: str, group, reads: list, writes: list, extra) -> tuple[str, list | None, list | None]:
    """(the call as every rank must issue it, elements sent to each peer, elements expected from each)
    for the arguments `collectives._queue` gets; the per-peer counts only for all-to-alls."""
    if name == "all_reduce":
        return f"all_reduce({_tensor(reads[0])}, {_op(extra)})", None, None
    if name == "broadcast":
        return f"broadcast({_tensor(reads[0])}, src={group.ranks[extra]})", None, None
    if name == "reduce":
        root, reduction = extra
        return f"reduce({_tensor(reads[0])}, {_op(reduction)}, dst={group.ranks[root]})", None, None
    if name == "all_gather":
        return f"all_gather({_tensor(reads[0])})", None, None
    if name == "all_gather_into_tensor":
        return f"all_gather_into_tensor({_tensor(reads[0])} -> {_tensor(writes[0])})", None, None
    if name == "reduce_scatter":
        return f"reduce_scatter({_tensor(writes[0])}, {_op(extra)})", None, None
    if name == "reduce_scatter_tensor":
        return f"reduce_scatter_tensor({_tensor(reads[0])} -> {_tensor(writes[0])}, {_op(extra)})", None, None
    if name == "all_to_all":
        return (f"all_to_all({reads[0].dtype.name})", [t.numel() for t in reads], [t.numel() for t in writes])
    if name == "all_to_all_single":
        in_bounds, out_bounds = extra
        return (f"all_to_all_single({reads[0].dtype.name})", [b - a for a, b in zip(in_bounds, in_bounds[1:])],
                [b - a for a, b in zip(out_bounds, out_bounds[1:])])
    if name == "barrier":
        return "barrier()", None, None
    return f"{name}({', '.join(_tensor(t) for t in reads)})", None, None


def _call_site() -> str:
    """'file.py:line' of the innermost frame outside tidal (the user's call)."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "tidal" and not module.startswith("tidal."):
            path = frame.f_code.co_filename
            relative = os.path.relpath(path) if os.path.isabs(path) else path
            return f"{path if relative.startswith('..') else relative}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def verify(name: str, group, reads: list = (), writes: list = (), extra=None) -> None:
    """Compare this call with the other ranks' calls at the same point; raise on any difference."""
    if name in _UNCHECKED or group.size() == 1:
        return
    number = group.state["check_calls"] = group.state.get("check_calls", 0) + 1
    call, sends, receives = _describe(name, group, list(reads), list(writes), extra)
    site = _call_site()
    where = f"collective mismatch at call #{number} in group {list(group.ranks)}"
    try:  # a call of its own name: the coordinator tells it apart from new_group's and barrier's gathers
        records = group.control._gather(_CONTROL_OP, {"call": call, "site": site, "sends": sends,
                                                      "receives": receives})
    except CommError as exc:
        if "ranks disagree on control call" not in str(exc):
            raise
        # another rank made a different control-plane call (new_group, an object exchange...) here
        raise CollectiveMismatchError(f"{where}: rank {group.ranks[group.rank()]} called {call} at {site} but "
                                      f"another rank made a different control call ({exc})") from None
    problem = _disagreement(group.ranks, records) or _unpaired(group.ranks, records)
    if problem:
        raise CollectiveMismatchError(f"{where}: {problem}")


def _disagreement(ranks, records: list) -> str | None:
    """'rank 0 called X at a.py:3 but rank 1 called Y at a.py:5', or None when all calls agree."""
    by_call: dict = {}
    for rank, record in zip(ranks, records):
        by_call.setdefault(record["call"], []).append((rank, record["site"]))
    if len(by_call) == 1:
        return None
    parts = []
    for call, callers in by_call.items():
        who = f"rank {callers[0][0]}" if len(callers) == 1 else f"ranks {', '.join(str(r) for r, _ in callers)}"
        parts.append(f"{who} called {call} at {callers[0][1]}")
    return parts[0] + " but " + "; ".join(parts[1:])


def _unpaired(ranks, records: list) -> str | None:
    """For all-to-alls: the first pair of ranks whose sent and expected element counts differ."""
    if records[0]["sends"] is None:
        return None
    call = records[0]["call"].split("(")[0]
    for i, sender in enumerate(records):
        for j, receiver in enumerate(records):
            if sender["sends"][j] != receiver["receives"][i]:
                return (f"{call} at {sender['site']}: rank {ranks[i]} sends {sender['sends'][j]} elements to rank "
                        f"{ranks[j]} but rank {ranks[j]} expects {receiver['receives'][i]} from rank {ranks[i]}")
    return None


# -- the always-on check: headers on the data plane --------------------------------------------------
# An op code per data movement: calls that move data alike share one (all_gather_into_tensor is an
# all_gather on the wire). ring.OP_SEND is the last.
_OPS = ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "send")
_FAMILY = {"all_gather_into_tensor": "all_gather", "reduce_scatter_tensor": "reduce_scatter",
           "all_to_all_single": "all_to_all", "recv": "send"}
assert _OPS.index("send") + 1 == ring.OP_SEND
_NONE = -1


def _dtype_code(t) -> int:
    return dt.ALL.index(t.dtype) + 1


def call_header(name: str, group, reads: list, writes: list, extra, key: str) -> tuple:
    """What `agree` compares for a collective queued by `collectives._queue` as the group's call
    `key`: (group ranks, the values every rank sends every peer, elements sent to each peer,
    elements expected from each (the last two only for all-to-alls), `key`)."""
    family = _FAMILY.get(name, name)
    op = _OPS.index(family) + 1
    arg, sends, receives = _NONE, None, None
    if family in ("all_reduce", "reduce_scatter"):
        arg = extra[0].op.value
    elif family == "broadcast":
        arg = extra
    elif family == "reduce":
        arg = (extra[0] << 8) | extra[1][0].op.value
    if name == "all_to_all":
        sends, receives = [t.numel() for t in reads], [t.numel() for t in writes]
    elif name == "all_to_all_single":
        sends, receives = ([b - a for a, b in zip(bounds, bounds[1:])] for bounds in extra)
    tensor = writes[0] if family == "reduce_scatter" else reads[0]
    count = _NONE if sends is not None else tensor.numel()
    return tuple(group.ranks), (op, _dtype_code(tensor), count, arg), sends, receives, key


def describe_call(call: tuple) -> str:
    """'all_reduce(float32, 16 elements, SUM)' for a `call_header`."""
    return _describe_header(call[1], call[0])


def _describe_header(values: tuple, ranks) -> str:
    """'all_reduce(float32, 16 elements, SUM)' for the first four header values."""
    op, dtype, count, arg = values[:4]
    name = _OPS[op - 1] if 0 < op <= len(_OPS) else f"op {op}"
    kind = dt.ALL[dtype - 1].name if 0 < dtype <= len(dt.ALL) else f"dtype {dtype}"
    parts = [kind] + ([f"{count} element{'s' if count != 1 else ''}"] if count != _NONE else [])

    def reduce_op(value):
        return ReduceOp(value).name if value in {op.value for op in ReduceOp} else f"op {value}"

    def rank(index):
        return ranks[index] if 0 <= index < len(ranks) else f"? ({index})"
    if name in ("all_reduce", "reduce_scatter"):
        parts.append(reduce_op(arg))
    elif name == "broadcast":
        parts.append(f"src={rank(arg)}")
    elif name == "reduce":
        parts += [reduce_op(arg & 0xFF), f"dst={rank(arg >> 8)}"]
    elif name == "send":
        parts.append(f"tag={arg}")
    return f"{name}({', '.join(parts)})"


def agree(mesh, call: tuple) -> None:
    """Exchange `call`'s header with every peer of the mesh and compare, before any data moves;
    every rank sees every header, so all raise the same `CollectiveMismatchError` (or none does)."""
    ranks, base, sends, receives, key = call
    mesh.calls += 1
    stale = mesh.broken()
    if stale:
        raise CollectiveMismatchError(f"tidal.comm: {_describe_header(base, ranks)}: the data plane of group "
                                      f"{list(ranks)} is out of step since an earlier mismatch ({stale}); "
                                      "make a new group")
    me, n = mesh.rank, mesh.size
    for peer in range(n):
        if peer != me:
            mesh.send_header(peer, (*base, _NONE if sends is None else sends[peer],
                                    _NONE if receives is None else receives[peer], 0))
    theirs = {me: (*base, _NONE, _NONE, 0)}
    mesh.waiting_call = (key, _describe_header(base, ranks))   # if it stalls: is a peer in a control call?
    try:
        for peer in range(n):
            if peer != me:
                theirs[peer] = mesh.recv_header(peer)
    finally:
        mesh.waiting_call = None
    where = f"collective mismatch at data-plane call #{mesh.calls} in group {list(ranks)}"
    stray = [p for p in range(n) if theirs[p] is None]
    if stray:
        raise CollectiveMismatchError(f"{where}: rank {ranks[me]} called {_describe_header(base, ranks)} but got "
                                      f"data from rank {ranks[stray[0]]} where a call's header was due (the ranks "
                                      "are out of step since an earlier call)")
    calls = {p: _describe_header(theirs[p], ranks) for p in range(n)}
    if len(set(calls.values())) > 1:
        by_call: dict = {}
        for p in range(n):
            by_call.setdefault(calls[p], []).append(str(ranks[p]))
        parts = [f"rank{'s' if len(who) > 1 else ''} {', '.join(who)} called {call}" for call, who in by_call.items()]
        raise CollectiveMismatchError(f"{where}: {parts[0]} but {'; '.join(parts[1:])}")
    if sends is not None:
        pairs = [(me, p, sends[p], theirs[p][5]) for p in range(n) if p != me]
        pairs += [(p, me, theirs[p][4], receives[p]) for p in range(n) if p != me]
        for src, dst, sent, expected in sorted(pairs):
            if sent != expected:
                raise CollectiveMismatchError(f"{where}: {calls[me].split('(')[0]}: rank {ranks[src]} sends {sent} "
                                              f"elements to rank {ranks[dst]} but rank {ranks[dst]} expects "
                                              f"{expected} from rank {ranks[src]}")


def p2p_header(tensor, tag: int) -> tuple:
    """The header of a point-to-point send of `tensor` with `tag`."""
    return (ring.OP_SEND, _dtype_code(tensor), tensor.numel(), tag, _NONE, _NONE, tensor.dtype.itemsize)


def verify_p2p(ranks, me: int, expected: tuple, peer: int, header: tuple | None) -> None:
    """Raise unless `header`, from group rank `peer`, is the send that `expected` describes."""
    if header == expected:
        return
    want = _describe_header(expected, ranks).replace("send(", "recv(", 1)
    got = "data that is not a message's header" if header is None else _describe_header(header, ranks)
    if header is not None and header[0] == ring.OP_SEND:
        got = "send" + got[len("send"):]
    raise CollectiveMismatchError(f"tidal.comm: rank {ranks[me]} called {want} from rank {ranks[peer]}, which sent "
                                  f"{got} (sends and receives must match in order, tag, dtype and size)")
