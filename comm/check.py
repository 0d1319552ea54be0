"""Debug mode for collective order (TIDAL_COMM_CHECK=1).

Before a collective moves any data, the ranks of its group exchange a fingerprint of the call
through the control plane: the op, its tensors' dtypes and shapes, the reduce op and root, and
the user's call site. If the ranks disagree, every rank raises `CollectiveMismatchError` naming
both calls, instead of deadlocking in the data plane. All-to-alls are also checked pairwise:
what rank i sends rank j must be what rank j expects from rank i.

Checked: every collective of tidal.comm.collectives and `barrier`. Point-to-point send/recv are
not (they pair two ranks, possibly with any source, not a whole group). The check costs one
control-plane round trip per call; with the mode off, callers test `ENABLED` and nothing else.
A rank that never reaches its call still leaves the others waiting (until the group's timeout).
"""
from __future__ import annotations

import os
import sys

from .base import CommError

__all__ = ["ENABLED", "CollectiveMismatchError", "set_enabled", "verify"]

ENABLED = os.environ.get("TIDAL_COMM_CHECK", "0").strip().lower() not in ("", "0", "false", "no", "off")
_CONTROL_OP = "collective check"       # the control-plane call the fingerprints travel in
_UNCHECKED = ("send", "recv")


class CollectiveMismatchError(CommError):
    """The ranks of a group issued different collectives at the same point of their programs."""


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
