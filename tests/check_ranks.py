"""Rank side of tests/test_comm_check.py (collective-order checking, TIDAL_COMM_CHECK=1) and of
tests/test_compat_distributed.py (torch.distributed names on tidal.comm). Every function runs on
each rank of a comm_ranks.RankPool and returns plain data for the test to compare. Like
comm_ranks, this module imports neither pytest nor tidal.comm at the top."""
import numpy as np

import tidal


def _C():
    from tidal.comm import collectives
    return collectives


def _rank() -> int:
    from tidal import comm
    return comm.get_rank()


# -- order checking --------------------------------------------------------------------------------
# Each case: what rank 0 calls and what rank 1 calls, at the same point of their programs.
def _mismatched_calls(kind: str) -> tuple:
    C = _C()
    from tidal import comm
    t44, t4 = tidal.ones(4, 4), tidal.ones(4)
    cases = {
        "op": (lambda: C.all_reduce(t44),
               lambda: C.broadcast(t4, src=0)),
        "shape": (lambda: C.all_reduce(tidal.ones(4)),
                  lambda: C.all_reduce(tidal.ones(5))),
        "dtype": (lambda: C.all_reduce(tidal.ones(3)),
                  lambda: C.all_reduce(tidal.ones(3, dtype=tidal.float64))),
        "reduce_op": (lambda: C.all_reduce(tidal.ones(3), op=C.ReduceOp.SUM),
                      lambda: C.all_reduce(tidal.ones(3), op=C.ReduceOp.MAX)),
        "root": (lambda: C.broadcast(tidal.ones(2), src=0),
                 lambda: C.broadcast(tidal.ones(2), src=1)),
        "barrier": (lambda: comm.barrier(),
                    lambda: C.all_gather([tidal.ones(2), tidal.ones(2)], tidal.ones(2))),
        "async": (lambda: C.all_reduce(tidal.ones(2), async_op=True).wait(),
                  lambda: C.reduce_scatter_tensor(tidal.ones(1), tidal.ones(2), async_op=True).wait()),
        "splits": (lambda: C.all_to_all_single(tidal.ones(4), tidal.ones(4), [1, 3], [1, 3]),
                   lambda: C.all_to_all_single(tidal.ones(4), tidal.ones(4), [2, 2], [2, 2])),
    }
    return cases[kind]


def mismatch(kind: str) -> dict:
    """Issue this rank's side of case `kind`; the error (type, message), the line of the call, and
    whether the group still works afterwards."""
    call = _mismatched_calls(kind)[_rank()]
    outcome = {"line": call.__code__.co_firstlineno}
    try:
        call()
        tidal.sync()
        outcome.update(type=None, message=None)
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        outcome.update(type=type(exc).__name__, message=str(exc))
    outcome["after"] = _still_works()
    return outcome


def _still_works() -> list:
    t = tidal.full((3,), float(_rank() + 1))
    _C().all_reduce(t)
    return t.numpy().tolist()


def mismatch_in_subgroup() -> dict:
    """A mismatch inside a group made with new_group names that group's call counter."""
    from tidal import comm
    C = _C()
    group = comm.new_group([0, 1])
    C.all_reduce(tidal.ones(2), group=group)  # call #1 agrees
    try:
        if _rank() == 0:
            C.all_reduce(tidal.ones(2), group=group)
        else:
            C.reduce(tidal.ones(2), dst=1, group=group)
        return {"message": None}
    except Exception as exc:  # noqa: BLE001
        return {"type": type(exc).__name__, "message": str(exc), "after": _still_works()}


def mismatch_with_control_call() -> dict:
    """One rank's collective meets another rank's new_group (a control-plane call)."""
    from tidal import comm
    try:
        if _rank() == 0:
            _C().all_reduce(tidal.ones(2))
        else:
            comm.new_group([0, 1])
        return {"message": None}
    except Exception as exc:  # noqa: BLE001
        return {"type": type(exc).__name__, "message": str(exc)}


def agreeing_sequence() -> list:
    """Every checked collective, issued alike on every rank; each result against NumPy."""
    from tidal import comm
    C = _C()
    rank, size = comm.get_rank(), comm.get_world_size()
    failures = []

    def expect(what, got, want):
        if not np.array_equal(np.asarray(got), np.asarray(want)):
            failures.append(f"{what}: got {got}, want {want}")

    t = tidal.full((2, 3), float(rank + 1))
    C.all_reduce(t)
    expect("all_reduce", t.numpy(), np.full((2, 3), size * (size + 1) / 2, np.float32))
    t = tidal.full((2,), float(rank))
    C.broadcast(t, src=size - 1)
    expect("broadcast", t.numpy(), np.full(2, size - 1, np.float32))
    t = tidal.full((2,), float(rank + 1), dtype=tidal.int64)
    C.reduce(t, dst=0, op=C.ReduceOp.MAX)
    expect("reduce", t.numpy(), np.full(2, size if rank == 0 else rank + 1, np.int64))
    outs = [tidal.zeros(2) for _ in range(size)]
    C.all_gather(outs, tidal.full((2,), float(rank)))
    expect("all_gather", [o.numpy()[0] for o in outs], np.arange(size, dtype=np.float32))
    out = tidal.zeros(2 * size)
    C.all_gather_into_tensor(out, tidal.full((2,), float(rank)))
    expect("all_gather_into_tensor", out.numpy(), np.repeat(np.arange(size, dtype=np.float32), 2))
    out = tidal.zeros(2)
    C.reduce_scatter(out, [tidal.full((2,), float(k)) for k in range(size)])
    expect("reduce_scatter", out.numpy(), np.full(2, size * rank, np.float32))
    out = tidal.zeros(1)
    C.reduce_scatter_tensor(out, tidal.arange(size, dtype=tidal.float32), op=C.ReduceOp.AVG, async_op=True).wait()
    expect("reduce_scatter_tensor", out.numpy(), np.full(1, rank, np.float32))
    outs = [tidal.zeros(k + 1) for k in range(size)]  # uneven sizes agree pairwise
    C.all_to_all(outs, [tidal.full((rank + 1,), float(10 * rank + k)) for k in range(size)])
    expect("all_to_all", [o.numpy()[0] for o in outs], [10 * k + rank for k in range(size)])
    sizes_out = [rank + 1] * size   # rank r gets r + 1 elements from everyone
    sizes_in = [k + 1 for k in range(size)]
    out = tidal.zeros(sum(sizes_out))
    C.all_to_all_single(out, tidal.full((sum(sizes_in),), float(rank)), sizes_out, sizes_in)
    expect("all_to_all_single", out.numpy(), np.repeat(np.arange(size, dtype=np.float32), rank + 1))
    comm.barrier()
    if rank == 0:  # point-to-point calls are not checked: only one side calls
        C.send(tidal.ones(2), dst=1)
    elif rank == 1:
        t = tidal.zeros(2)
        C.recv(t, src=0)
        expect("recv", t.numpy(), np.ones(2, np.float32))
    C.all_reduce(tidal.ones(1))
    return failures


def check_mode() -> dict:
    """Whether the check is on, and whether a collective reaches it."""
    from tidal.comm import check
    C = _C()
    calls = []
    original = check.verify
    check.verify = lambda *args, **kwargs: calls.append(args[0]) or original(*args, **kwargs)
    try:
        C.all_reduce(tidal.ones(2))
    finally:
        check.verify = original
    return {"enabled": check.ENABLED, "verified": calls}


# -- torch.distributed names (tidal.compat) on the ranks ------------------------------------------------
def compat_collectives() -> list:
    """torch.distributed calls, spelled as a PyTorch script spells them, against NumPy."""
    import tidal.compat as torch
    from tidal import comm
    dist = torch.distributed
    rank, size = dist.get_rank(), dist.get_world_size()
    failures = []

    def expect(what, got, want):
        if not np.array_equal(np.asarray(got), np.asarray(want)):
            failures.append(f"{what}: got {got}, want {want}")

    expect("initialized", [dist.is_initialized(), dist.get_backend(), rank, size],
           [True, "gloo", comm.get_rank(), comm.get_world_size()])
    expect("WORLD", [dist.group.WORLD is comm.default_group(), dist.GroupMember.WORLD is comm.default_group()],
           [True, True])
    expect("ranks", dist.get_process_group_ranks(dist.group.WORLD), list(range(size)))
    t = torch.full((2, 2), float(rank + 1))
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    expect("Work", [isinstance(work, dist.Work), work.wait()], [True, True])
    expect("all_reduce AVG", t.numpy(), np.full((2, 2), (size + 1) / 2, np.float32))
    t = torch.tensor([rank, rank + 1])
    dist.broadcast(t, src=1)
    expect("broadcast", t.numpy(), [1, 2])
    t = torch.tensor([float(rank + 1)])
    dist.reduce(t, dst=0, op=dist.ReduceOp.PRODUCT)
    expect("reduce", t.numpy(), [float(np.prod(np.arange(1, size + 1)))] if rank == 0 else [rank + 1.0])
    outs = [torch.zeros(3, dtype=torch.int32) for _ in range(size)]
    dist.all_gather(outs, torch.full((3,), rank, dtype=torch.int32))
    expect("all_gather", torch.stack(outs).numpy(), np.repeat(np.arange(size, dtype=np.int32)[:, None], 3, 1))
    out = torch.zeros(size, 2)
    dist.all_gather_into_tensor(out, torch.full((1, 2), float(rank)))
    expect("all_gather_into_tensor", out.numpy()[:, 0], np.arange(size, dtype=np.float32))
    out = torch.zeros(2)
    dist.reduce_scatter(out, [torch.full((2,), float(k + rank)) for k in range(size)], op=dist.ReduceOp.MAX)
    expect("reduce_scatter", out.numpy(), np.full(2, rank + size - 1, np.float32))
    out = torch.zeros(1)
    dist.reduce_scatter_tensor(out, torch.ones(size))
    expect("reduce_scatter_tensor", out.numpy(), [float(size)])
    outs = [torch.zeros(1) for _ in range(size)]
    dist.all_to_all(outs, [torch.tensor([float(10 * rank + k)]) for k in range(size)])
    expect("all_to_all", torch.cat(outs).numpy(), [10.0 * k + rank for k in range(size)])
    out = torch.zeros(size)
    dist.all_to_all_single(out, torch.arange(size, dtype=torch.float32) + 10 * rank)
    expect("all_to_all_single", out.numpy(), [10.0 * k + rank for k in range(size)])
    peer = (rank + 1) % size
    got = torch.zeros(2)
    sent = dist.isend(torch.full((2,), float(rank)), dst=peer)
    dist.recv(got, src=(rank - 1) % size)
    sent.wait()
    expect("isend/recv", got.numpy(), np.full(2, (rank - 1) % size, np.float32))
    got = torch.zeros(1)
    # (a receive posted before this rank's own send would hold up the send: one comm stream runs both)
    if rank == 0:
        dist.send(torch.tensor([5.0]), dst=1)
    elif rank == 1:
        receiving = dist.irecv(got, src=0)
        expect("irecv Work", isinstance(receiving, dist.Work), True)
        receiving.wait()
        expect("send/irecv", got.numpy(), [5.0])
    dist.barrier()
    pair = dist.new_group([0, 1])
    t = torch.ones(1)
    dist.all_reduce(t, group=pair)
    expect("new_group", [t.item(), dist.get_world_size(pair), dist.get_rank(pair)],
           [2.0 if rank < 2 else 1.0, 2 if rank < 2 else -1, rank if rank < 2 else -1])
    objects = [None] * size
    dist.all_gather_object(objects, {"rank": rank, "name": f"r{rank}"})
    expect("all_gather_object", [o["rank"] for o in objects], list(range(size)))
    objects = [rank, "x"] if rank == 1 else [None, None]
    dist.broadcast_object_list(objects, src=1)
    expect("broadcast_object_list", objects, [1, "x"])
    return failures


def compat_ddp_step() -> list:
    """torch.nn.parallel.DistributedDataParallel on the ranks: the gradients are averaged."""
    import tidal.compat as torch
    dist = torch.distributed
    rank, size = dist.get_rank(), dist.get_world_size()
    model = torch.nn.Linear(3, 1, bias=False)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp(torch.full((1, 3), float(rank + 1))).sum().backward()
    want = np.full((1, 3), (size + 1) / 2, np.float32)  # the mean over ranks of d(sum(w @ x))/dw = x
    return [] if np.allclose(model.weight.grad.numpy(), want) else [f"grad {model.weight.grad.numpy()}"]
