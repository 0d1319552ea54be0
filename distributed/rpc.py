"""torch.distributed.rpc over tidal's control plane: init_rpc, rpc_sync, rpc_async, remote, RRef, shutdown.

Each worker runs one server thread reading its inbox in the job's key-value store (on the rank-0 coordinator): a
sender takes the next number of the destination's inbox (an atomic add) and stores its message under it; the
destination reads the numbers in order, runs requests on a thread pool and sends replies to the caller's inbox the
same way. Messages use the control plane's signed wire encoding, never pickle: a function travels as its module and
qualified name (found again by import on the callee, as pickle finds functions; lambdas and local functions are
refused), values as plain data, tensors (dtype, shape, bytes), RRefs (owner and id), WorkerInfos, and objects of
importable classes as their class name and attribute dict (rebuilt without __init__, as unpickling rebuilds them).

An RRef's value lives on its owner until shutdown (torch frees it when the last user reference is gone; tidal keeps
it: a worker's owned values are its own memory for the life of the RPC group).
"""
from __future__ import annotations

import builtins
import enum
import importlib
import inspect
import itertools
import pickle
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from .. import ops
from ..nn.parameter import Parameter
from ..tensor import dtype as dt
from ..tensor import device
from ..tensor import Tensor
from ..utils._pytree import tree_leaves
from ..utils.futures import Future
from . import autograd_contexts as dist_autograd

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "RRef", "WorkerInfo", "get_worker_info",
           "BackendType", "RpcBackendOptions", "TensorPipeRpcBackendOptions", "is_available", "functions",
           "DEFAULT_RPC_TIMEOUT_SEC", "UNSET_RPC_TIMEOUT"]

DEFAULT_RPC_TIMEOUT_SEC = 60.0
UNSET_RPC_TIMEOUT = -1.0
_FOREVER = 10 ** 7  # seconds: the server thread's wait for its next message
_TAG = "\x00rpc"     # the key marking an encoded tensor, RRef, WorkerInfo or object in a message


def is_available() -> bool:
    """True: tidal's RPC runs over its control plane."""
    return True


class BackendType(enum.Enum):
    """The RPC backends torch names (tidal's one transport stands for TensorPipe)."""
    TENSORPIPE = "TENSORPIPE"


class RpcBackendOptions:
    """The options every RPC backend takes: the default timeout (seconds) and the rendezvous method."""

    def __init__(self, rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC, init_method: str = "env://") -> None:
        self.rpc_timeout = rpc_timeout
        self.init_method = init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """TensorPipe's options: worker threads (the size of the pool running incoming requests), timeout, init
    method; device maps are refused (tidal's RPC moves CPU tensors)."""

    def __init__(self, *, num_worker_threads: int = 16, rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC,
                 init_method: str = "env://", device_maps: dict | None = None, devices: list | None = None,
                 _transports=None, _channels=None) -> None:
        super().__init__(rpc_timeout, init_method)
        if device_maps or devices:
            raise NotImplementedError("TensorPipeRpcBackendOptions: device_maps and devices are not supported by "
                                      "tidal's RPC (tensors travel through the CPU)")
        self.num_worker_threads = num_worker_threads
        self.device_maps = {}
        self.devices = []

    def set_device_map(self, to: str, device_map: dict) -> None:
        """Refused: tidal's RPC moves CPU tensors only."""
        raise NotImplementedError("set_device_map: tidal's RPC moves CPU tensors only")


class WorkerInfo:
    """A worker's name and id (its rank in the RPC group)."""

    def __init__(self, name: str, id: int) -> None:
        self.name, self.id = name, id

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __eq__(self, other) -> bool:
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self) -> int:
        return hash((self.name, self.id))


# -- the agent: this worker's end of the RPC group ------------------------------------------------------------

_agent: list = [None]


def _current() -> "_Agent":
    agent = _agent[0]
    if agent is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc first.")
    return agent


class _Agent:
    """The server thread, the pool running requests, the pending calls and the owned RRef values."""

    def __init__(self, name: str, options: TensorPipeRpcBackendOptions, owns_group: bool) -> None:
        from ..comm.process_group import default_group  # comm loads on first use (keeps import light)
        self.group = default_group()
        self.control = self.group.control
        self.rank = self.group.rank()
        self.options = options
        self.owns_group = owns_group
        names = self.control.all_gather_object(name)
        if len(set(names)) != len(names):
            raise RuntimeError(f"init_rpc: worker names must be unique, got {names}")
        self.infos = [WorkerInfo(n, i) for i, n in enumerate(names)]
        self.by_name = {info.name: info for info in self.infos}
        self.pool = ThreadPoolExecutor(max(1, options.num_worker_threads), thread_name_prefix="rpc-worker")
        self.ids = itertools.count()
        self.lock = threading.Condition()
        self.pending: dict = {}   # call id -> Future
        self.calls: dict = {}     # call id -> (destination, autograd context, tensors sent requiring grad)
        self.owned: dict = {}     # rref id -> ("value", v) or ("error", message)
        self.server = threading.Thread(target=self._serve, name="rpc-server", daemon=True)
        self.server.start()
        self.control.barrier("rpc-init")

    # -- messages ---------------------------------------------------------------------------------------
    def _post(self, dst: int, message: dict) -> None:
        from ..comm import wire  # comm loads on first use (keeps import light)
        number = self.control.add(f"__rpc/{dst}/count")
        self.control.set(f"__rpc/{dst}/in/{number}", wire.encode(message))

    def _serve(self) -> None:
        from ..comm import wire  # comm loads on first use (keeps import light)
        for number in itertools.count(1):
            key = f"__rpc/{self.rank}/in/{number}"
            try:
                raw = self.control.get(key, True, _FOREVER)
                self.control.delete(key)
            except Exception as e:  # the job ended (a rank died, the group closed): fail what still waits
                self._fail_pending(e)
                return
            message = wire.decode(raw)
            op = message.get("op")
            if op == "stop":
                return
            if op == "reply":
                self._settle(message)
            else:
                self.pool.submit(self._handle, message)

    def _fail_pending(self, error: Exception) -> None:
        with self.lock:
            pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(RuntimeError(f"RPC: the RPC group ended before the reply came ({error})"))

    def call(self, dst: int, message: dict, sent: list | None = None):
        """Send a request; a Future of its reply's value (`sent`: the tensors requiring grad it carries, which a
        reply made in a distributed autograd context is joined to)."""
        future = Future()
        call = f"{self.rank}:{next(self.ids)}"
        ctx = dist_autograd.current()
        if ctx is not None and "ctx" not in message:
            message = dict(message, ctx=ctx)
        with self.lock:
            self.pending[call] = future
            self.calls[call] = (dst, message.get("ctx"), sent or [])
        self._post(dst, dict(message, call=call, src=self.rank))
        return future

    def _settle(self, message: dict) -> None:
        with self.lock:
            future = self.pending.pop(message["call"], None)
            dst, ctx, sent = self.calls.pop(message["call"], (None, None, []))
        if future is None:
            return
        if "error" in message:
            future.set_exception(_remote_error(*message["error"]))
        else:
            try:
                value = decode(message["value"])
                if message.get("autograd") and ctx is not None:
                    value = dist_autograd.bridge(dst, ctx, sent, value, self._asker(dst, ctx, message["call"]))
                future.set_result(value)
            except Exception as e:  # (a value this worker cannot rebuild)
                future.set_exception(e)

    def _asker(self, dst: int, ctx: int, call: str) -> Callable:
        """How the caller's backward asks `dst` for the rest of a call's gradient: the result's gradients sent, the
        arguments' returned (distributed autograd's _RecvBackward node calls it)."""
        def ask(grads: list) -> list:
            future = self.call(dst, {"op": "backward", "ctx": ctx, "backward_call": call, "grads": encode(grads)})
            return _wait(future, self.options.rpc_timeout or DEFAULT_RPC_TIMEOUT_SEC)
        return ask

    def _reply(self, message: dict, value=None, error: BaseException | None = None, prefix: bool = True,
               autograd: bool = False) -> None:
        reply = {"op": "reply", "call": message["call"], "autograd": autograd}
        if error is not None:  # (torch's words: a failed call's message names its type first, a failed remote's not)
            info = self.infos[self.rank]
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            head = f"{type(error).__name__}: " if prefix else ""
            reply["error"] = [type(error).__name__, f"{head}On {info}:\n{error!r}\n{text}"]
        else:
            try:
                reply["value"] = encode(value)
            except Exception as e:
                return self._reply(message, error=e)
        self._post(message["src"], reply)

    # -- requests ---------------------------------------------------------------------------------------
    def _handle(self, message: dict) -> None:
        dist_autograd._local.ctx = message.get("ctx")  # (nested calls carry the caller's context on)
        try:
            self._handle_in_context(message)
        finally:
            dist_autograd._local.ctx = None

    def _handle_in_context(self, message: dict) -> None:
        op = message["op"]
        if op == "release":
            dist_autograd.release(message["ctx"])
            return self._reply(message, None)
        if op == "backward":
            try:
                grads = dist_autograd.remote_backward(message["ctx"], message["backward_call"],
                                                      decode(message["grads"]))
            except BaseException as e:
                return self._reply(message, error=e)
            return self._reply(message, grads)
        try:
            if op == "fetch":
                try:
                    value = self.value_of(message["rref"])
                except BaseException as e:  # (remote() failed: its error, as torch words it)
                    return self._reply(message, error=e, prefix=False)
                recorded = message.get("ctx") is not None and dist_autograd.record_call(
                    message["ctx"], message["call"], None, value)  # (to_here in a context: backward comes here)
                return self._reply(message, value, autograd=recorded)
            if op == "method":
                fn = getattr(self.value_of(message["rref"]), message["name"])
            else:
                fn = _resolve(message["fn"])
            args, kwargs = decode(message["args"]), decode(message["kwargs"])
            message["decoded_args"] = (args, kwargs)
            result = fn(*args, **kwargs)
        except BaseException as e:  # (the caller gets the error, this worker carries on)
            if message.get("owner_id") is not None:
                self.store(message["owner_id"], ("error", e))
            return self._reply(message, error=e)
        if isinstance(result, Future) and getattr(fn, "_wrapped_async_rpc_function", False):
            result.add_done_callback(lambda f: self._finish(message, f))  # (@async_execution: reply when done)
            return
        self._finish_value(message, result)

    def _finish(self, message: dict, future) -> None:
        try:
            value = future.value()
        except BaseException as e:
            if message.get("owner_id") is not None:
                self.store(message["owner_id"], ("error", e))
            return self._reply(message, error=e)
        self._finish_value(message, value)

    def _finish_value(self, message: dict, value) -> None:
        if message.get("owner_id") is not None:  # remote(): keep the value here, reply with an acknowledgement
            self.store(message["owner_id"], ("value", value))
            return self._reply(message, None)
        recorded = False
        if message.get("ctx") is not None:  # (distributed autograd: the caller's backward will come back here)
            recorded = dist_autograd.record_call(message["ctx"], message["call"], message.get("decoded_args"),
                                                 value)
        self._reply(message, value, autograd=recorded)

    def store(self, rref_id: str, entry: tuple) -> None:
        """Own `entry` under `rref_id` (and wake whoever waits for it)."""
        with self.lock:
            self.owned[rref_id] = entry
            self.lock.notify_all()

    def value_of(self, rref_id: str, timeout: float | None = None):
        """The value an owned RRef holds, waiting for remote() to make it."""
        with self.lock:
            if not self.lock.wait_for(lambda: rref_id in self.owned, timeout):
                raise RuntimeError(f"RRef {rref_id}: its value was not created within {timeout} s")
            kind, value = self.owned[rref_id]
        if kind == "error":
            raise value
        return value

    def new_rref_id(self) -> str:
        """A globally unique RRef id: (creating worker, local counter)."""
        return f"{self.rank}:{next(self.ids)}"

    def info(self, to) -> WorkerInfo:
        """The WorkerInfo of a worker named by name, id or WorkerInfo."""
        if isinstance(to, WorkerInfo):
            return to
        if isinstance(to, str):
            if to not in self.by_name:
                raise RuntimeError(f"name:{self.infos[self.rank].name},rank:{self.rank} could not find destination "
                                   f"name {to}")
            return self.by_name[to]
        if isinstance(to, int) and 0 <= to < len(self.infos):
            return self.infos[to]
        raise RuntimeError(f"RPC: unknown destination worker {to!r}")

    def close(self) -> None:
        """Stop the server thread and the pool."""
        self._post(self.rank, {"op": "stop"})
        self.server.join(timeout=30)
        self.pool.shutdown(wait=True)


def _remote_error(name: str, message: str) -> BaseException:
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass
    return RuntimeError(message)


# -- encoding: functions by name, values as plain data -------------------------------------------------------


def _fn_ref(fn: Callable) -> list:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if module is None or qualname is None or "<" in qualname:
        raise pickle.PicklingError(f"Can't pickle {fn!r}: attribute lookup {qualname} on {module} failed")
    try:
        found = _resolve([module, qualname])
    except (ImportError, AttributeError):
        found = None
    if found is not fn and getattr(found, "__wrapped__", None) is not fn:
        raise pickle.PicklingError(f"Can't pickle {fn!r}: it's not the same object as {module}.{qualname}")
    return [module, qualname]


def _resolve(ref: list):
    module, qualname = ref
    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def encode(value) -> Any:
    """`value` as plain data for the wire (tensors, RRefs, WorkerInfos and objects as tagged dicts)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, Tensor):
        import numpy as np
        t = value.detach()
        array = np.ascontiguousarray(t.cpu().numpy())
        return {_TAG: "tensor", "dtype": str(t.dtype).split(".")[-1], "np": array.dtype.str, "shape": list(t.shape),
                "data": array.tobytes(), "grad": bool(value.requires_grad),
                "parameter": type(value).__name__ == "Parameter"}
    if isinstance(value, RRef):
        return {_TAG: "rref", "owner": value._owner, "id": value._id}
    if isinstance(value, WorkerInfo):
        return {_TAG: "worker", "name": value.name, "id": value.id}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return tuple(encode(v) for v in value)
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return {_TAG: type(value).__name__, "items": [encode(v) for v in value]}
    kind = type(value).__name__
    if kind in ("dtype", "device"):
        return {_TAG: kind, "name": str(value).split(".")[-1]}
    if isinstance(value, type) or inspect.isroutine(value):
        return {_TAG: "function", "ref": _fn_ref(value)}
    if hasattr(value, "__dict__") and not inspect.ismodule(value):
        return {_TAG: "object", "class": _fn_ref(type(value)), "state": encode(dict(vars(value)))}
    raise TypeError(f"RPC: cannot send a value of type {type(value).__name__} (tidal's RPC sends plain data, "
                    "tensors, RRefs and objects of importable classes)")


def decode(value) -> Any:
    """The value `encode` made plain."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, tuple):
        return tuple(decode(v) for v in value)
    if not isinstance(value, dict):
        return value
    kind = value.get(_TAG)
    if kind is None:
        return {k: decode(v) for k, v in value.items()}
    if kind == "tensor":
        import numpy as np
        dtype = dt.from_name(value["dtype"])
        array = np.frombuffer(value["data"], dtype=np.dtype(value["np"])).reshape(value["shape"]).copy()
        t = ops.from_numpy(array)
        if t.dtype is not dtype:
            t = t.to(dtype)
        if value.get("parameter"):
            return Parameter(t, requires_grad=value["grad"])
        return t.requires_grad_(True) if value["grad"] and t.is_floating_point() else t
    if kind in ("set", "frozenset"):
        return (set if kind == "set" else frozenset)(decode(v) for v in value["items"])
    if kind == "rref":
        return RRef._user(value["owner"], value["id"])
    if kind == "worker":
        return WorkerInfo(value["name"], value["id"])
    if kind == "dtype":
        return dt.from_name(value["name"])
    if kind == "device":
        return device(value["name"])
    if kind == "function":
        return _resolve(value["ref"])
    if kind == "object":
        cls = _resolve(value["class"])
        obj = cls.__new__(cls)
        obj.__dict__.update(decode(value["state"]))
        return obj
    raise ValueError(f"RPC: unknown encoded value {kind!r}")


# -- the public calls ---------------------------------------------------------------------------------------


def _timeout(timeout: float) -> float:
    return _current().options.rpc_timeout if timeout is None or timeout < 0 else timeout


def _request(to, func, args, kwargs, extra: dict | None = None):
    agent = _current()
    info = agent.info(to)
    message = {"op": "call", "fn": _fn_ref(func), "args": encode(tuple(args or ())),
               "kwargs": encode(dict(kwargs or {}))}
    message.update(extra or {})
    return agent.call(info.id, message, _grad_tensors((args, kwargs)))


def _grad_tensors(tree) -> list:
    """The tensors requiring grad among a call's arguments, in the order the callee decodes them."""
    return [t for t in tree_leaves(tree) if isinstance(t, Tensor) and t.requires_grad and t.is_floating_point()]


def _wait(future, timeout: float):
    """The future's value, or torch's timeout error after `timeout` seconds (0: no limit)."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if timeout and not done.wait(timeout):
        raise RuntimeError(f"RPC ran for more than set timeout ({int(timeout * 1000)} ms) and will now be marked "
                           "with an error")
    return future.wait()


def rpc_sync(to, func: Callable, args: tuple | None = None, kwargs: dict | None = None,
             timeout: float = UNSET_RPC_TIMEOUT):
    """Run `func(*args, **kwargs)` on worker `to` (name, id or WorkerInfo) and return its result."""
    return _wait(_request(to, func, args, kwargs), _timeout(timeout))


def rpc_async(to, func: Callable, args: tuple | None = None, kwargs: dict | None = None,
              timeout: float = UNSET_RPC_TIMEOUT):
    """Run `func(*args, **kwargs)` on worker `to`; a torch.futures.Future of its result."""
    return _request(to, func, args, kwargs)


def remote(to, func: Callable, args: tuple | None = None, kwargs: dict | None = None,
           timeout: float = UNSET_RPC_TIMEOUT) -> "RRef":
    """Run `func(*args, **kwargs)` on worker `to`, keeping the result there; an RRef to it."""
    agent = _current()
    owner = agent.info(to).id
    rref = RRef._user(owner, agent.new_rref_id())
    rref._created = _request(owner, func, args, kwargs, {"owner_id": rref._id})
    return rref


class RRef:
    """A reference to a value living on its owner worker: `RRef(value)` makes one owned here; remote() makes one
    owned by the worker that ran the function."""

    def __init__(self, value=None, type_hint=None) -> None:
        agent = _current()
        self._owner, self._id = agent.rank, agent.new_rref_id()
        self._created = None
        agent.store(self._id, ("value", value))

    @classmethod
    def _user(cls, owner: int, rref_id: str) -> "RRef":
        rref = cls.__new__(cls)
        rref._owner, rref._id, rref._created = owner, rref_id, None
        return rref

    def is_owner(self) -> bool:
        """Whether this worker owns the value."""
        return self._owner == _current().rank

    def owner(self) -> WorkerInfo:
        """The owner's WorkerInfo."""
        return _current().infos[self._owner]

    def owner_name(self) -> str:
        """The owner's name."""
        return self.owner().name

    def confirmed_by_owner(self) -> bool:
        """Whether the owner holds the value (remote() finished there)."""
        return self._created is None or self._created.done()

    def local_value(self):
        """The value, on its owner; torch's RuntimeError elsewhere."""
        agent = _current()
        if not self.is_owner():
            raise RuntimeError(f"For {self!r}, can't call localValue() on user {agent.infos[agent.rank]}. Call it on "
                               f"owner {self.owner()}")
        return agent.value_of(self._id)

    def to_here(self, timeout: float = UNSET_RPC_TIMEOUT):
        """A copy of the value here (the value itself on its owner)."""
        agent = _current()
        if self.is_owner():
            return agent.value_of(self._id, _timeout(timeout) or None)
        return _wait(agent.call(self._owner, {"op": "fetch", "rref": self._id}), _timeout(timeout))

    def rpc_sync(self, timeout: float = UNSET_RPC_TIMEOUT) -> "_MethodProxy":
        """`rref.rpc_sync().method(*args)`: the owned object's method run on the owner, its result returned."""
        return _MethodProxy(self, "sync", timeout)

    def rpc_async(self, timeout: float = UNSET_RPC_TIMEOUT) -> "_MethodProxy":
        """`rref.rpc_async().method(*args)`: a Future of the method's result."""
        return _MethodProxy(self, "async", timeout)

    def remote(self, timeout: float = UNSET_RPC_TIMEOUT) -> "_MethodProxy":
        """`rref.remote().method(*args)`: an RRef to the method's result, kept on the owner."""
        return _MethodProxy(self, "remote", timeout)

    def __repr__(self) -> str:
        created, local = self._id.split(":")
        kind = "OwnerRRef" if _agent[0] is not None and self.is_owner() else "UserRRef"
        return f"{kind}(rref_id=GloballyUniqueId(created_on={created}, local_id={local}))"

    def __reduce__(self):
        raise RuntimeError("RRef is only picklable as an RPC argument (tidal sends it by owner and id)")


class _MethodProxy:
    """The methods of an RRef's value, called on its owner."""

    def __init__(self, rref: RRef, mode: str, timeout: float) -> None:
        self._rref, self._mode, self._timeout = rref, mode, timeout

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("__"):
            raise AttributeError(name)
        rref, mode, timeout = self._rref, self._mode, self._timeout

        def call(*args, **kwargs):
            agent = _current()
            message = {"op": "method", "rref": rref._id, "name": name, "args": encode(args),
                       "kwargs": encode(kwargs)}
            if mode == "remote":
                result = RRef._user(rref._owner, agent.new_rref_id())
                message["owner_id"] = result._id
                result._created = agent.call(rref._owner, message)
                return result
            future = agent.call(rref._owner, message, _grad_tensors((args, kwargs)))
            return future if mode == "async" else _wait(future, _timeout(timeout))
        return call


def get_worker_info(worker_name: str | None = None) -> WorkerInfo:
    """This worker's WorkerInfo, or that of the worker named `worker_name`."""
    agent = _current()
    return agent.infos[agent.rank] if worker_name is None else agent.info(worker_name)


def init_rpc(name: str, backend=None, rank: int = -1, world_size: int | None = None,
             rpc_backend_options: RpcBackendOptions | None = None) -> None:
    """Join the RPC group as worker `name` (rank and world size as given or from the launcher's environment);
    the default process group is made if there is none (and destroyed by shutdown())."""
    from ..comm import process_group as pg  # comm loads on first use (keeps import light)
    if _agent[0] is not None:
        raise RuntimeError("RPC is already initialized")
    if backend is not None and backend is not BackendType.TENSORPIPE:
        raise RuntimeError(f"init_rpc: unknown backend {backend!r} (tidal offers BackendType.TENSORPIPE)")
    options = rpc_backend_options or TensorPipeRpcBackendOptions()
    if not isinstance(options, TensorPipeRpcBackendOptions):
        options = TensorPipeRpcBackendOptions(rpc_timeout=options.rpc_timeout, init_method=options.init_method)
    owns = not pg.is_initialized()
    if owns:
        kwargs = {} if rank is None or rank < 0 else {"rank": rank}
        if world_size is not None:
            kwargs["world_size"] = world_size
        pg.init_process_group("gloo", **kwargs)
    _agent[0] = _Agent(name, options, owns)


def shutdown(graceful: bool = True, timeout: float = 0) -> None:
    """Leave the RPC group: when graceful, wait until every worker's outstanding calls are answered."""
    agent = _current()
    if graceful:
        while True:
            with agent.lock:
                pending = list(agent.pending.values())
            if not pending:
                break
            for future in pending:
                try:
                    future.wait()
                except Exception:
                    pass
        agent.control.barrier("rpc-shutdown")
    agent.close()
    _agent[0] = None
    if agent.owns_group:
        from ..comm import process_group as pg  # comm loads on first use (keeps import light)
        pg.destroy_process_group()


class _Functions:
    """torch.distributed.rpc.functions: async_execution."""

    @staticmethod
    def async_execution(fn: Callable) -> Callable:
        """Mark `fn` as returning a Future: the callee replies when the Future completes."""
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        wrapper._wrapped_async_rpc_function = True
        return wrapper


functions = _Functions()
