"""torch.distributed.rpc between two workers: rpc_sync/rpc_async/remote by name, id and WorkerInfo, remote errors,
RRefs (to_here, owner, local values, method proxies, RRefs passed on as arguments and fetched back from inside a
call), futures with then(), @async_execution, a module kept on the other worker, torch's errors, shutdown.

Run with `torchrun --nproc-per-node 2 rpc_basics.py` or under `python -m tidal.comm.launch --nproc-per-node 2 -m
tidal.compat rpc_basics.py`. Worker 0 prints JSON."""
import json
import os

import torch
import torch.distributed.rpc as rpc
import torch.nn as nn


def add(a, b=0):
    return a + b


def boom(x):
    raise ValueError(f"bad {x}")


def first_line(e):
    return [type(e).__name__, str(e).split("\n")[0]]


class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

    def scale(self, k):
        self.v = self.v * k
        return self.v


def ones(n):
    return torch.ones(n)


def owned_sum(rref):
    return rref.local_value().sum()  # (called on the owner)


def fetch_back(rref):
    return rref.to_here() * 2  # (an RPC back to the caller while the caller waits for this one)


@rpc.functions.async_execution
def later(x):
    fut = torch.futures.Future()
    fut.set_result(x + 100)
    return fut.then(lambda f: f.value() * 2)


rank = int(os.environ["RANK"])
rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2,
             rpc_backend_options=rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=30))
out = {}
if rank == 0:
    x = torch.arange(6.0).reshape(2, 3)
    out["sync"] = rpc.rpc_sync("worker1", add, args=(x, 3)).tolist()
    fut = rpc.rpc_async("worker1", torch.add, args=(x, x))
    out["is_future"] = type(fut).__name__ == "Future" and callable(fut.then)
    out["async"] = fut.wait().tolist()
    out["dtypes"] = [str(rpc.rpc_sync("worker1", add, args=(torch.tensor([1, 2]), 1)).dtype),
                     rpc.rpc_sync("worker1", add, args=(torch.ones(2, dtype=torch.float64), 1)).dtype == torch.float64]
    out["plain"] = rpc.rpc_sync("worker1", add, args=([1, 2], [3])), rpc.rpc_sync("worker1", add, args=("a", "b"))
    try:
        rpc.rpc_sync("worker1", boom, args=(3,))
    except ValueError as e:
        out["err"] = first_line(e) + [str(e).split("\n")[1]]
    box = rpc.remote("worker1", Box, args=(torch.tensor([2.0]),))
    out["owner"] = [repr(box.owner()), box.owner_name(), box.is_owner()]
    out["to_here"] = box.to_here().v.tolist()
    out["method"] = box.rpc_sync().scale(3).tolist()
    out["method_async"] = box.rpc_async().get().wait().tolist()
    out["remote_method"] = box.remote().get().to_here().tolist()
    out["confirmed"] = box.confirmed_by_owner()
    try:
        box.local_value()
    except RuntimeError as e:
        out["local_err"] = "can't call localValue() on user WorkerInfo(id=0, name=worker0)" in str(e)
    try:
        box.rpc_sync().scale("x", "y")
    except TypeError as e:
        out["method_err"] = first_line(e)[0]
    failed = rpc.remote("worker1", boom, args=(4,))
    try:
        failed.to_here()
    except ValueError as e:
        out["remote_err"] = first_line(e)
    mine = rpc.RRef(torch.tensor([5.0, 6.0]))
    out["local"] = [mine.is_owner(), mine.local_value().tolist(), mine.owner_name(), mine.to_here().tolist()]
    out["rref_arg_owner"] = rpc.rpc_sync("worker1", owned_sum, args=(rpc.remote("worker1", ones, args=(4,)),)).item()
    out["rref_arg_back"] = rpc.rpc_sync("worker1", fetch_back, args=(mine,)).tolist()
    out["info"] = [repr(rpc.get_worker_info()), repr(rpc.get_worker_info("worker1")), rpc.get_worker_info("worker1").id]
    try:
        rpc.rpc_sync("nobody", add, args=(1, 2))
    except RuntimeError as e:
        out["bad_name"] = first_line(e)
    out["targets"] = [rpc.rpc_sync(1, add, args=(1, 2)), rpc.rpc_sync(rpc.get_worker_info("worker1"), add, args=(1, 2)),
                      rpc.rpc_sync("worker1", add, args=(1,), kwargs={"b": 5}), rpc.rpc_sync("worker0", add, args=(1, 2))]
    try:
        rpc.rpc_sync("worker1", lambda v: v, args=(1,))
    except Exception as e:
        out["lambda"] = [type(e).__name__, str(e).startswith("Can't pickle <function <lambda>")]
    out["then"] = rpc.rpc_async("worker1", add, args=(1, 2)).then(lambda f: f.value() * 10).wait()
    out["async_execution"] = rpc.rpc_sync("worker1", later, args=(1,))
    torch.manual_seed(0)
    layer = rpc.remote("worker1", nn.Linear, args=(3, 2))
    weight = layer.rpc_sync().state_dict()["weight"]
    out["module"] = torch.allclose(layer.rpc_sync().forward(x), x @ weight.t() + layer.rpc_sync().state_dict()["bias"])
    out["many"] = [f.wait() for f in [rpc.rpc_async("worker1", add, args=(i, i)) for i in range(8)]]
rpc.shutdown()
if rank == 0:
    print(json.dumps({"framework": torch.__name__, **out}))
