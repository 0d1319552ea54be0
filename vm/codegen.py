"""Kernels generated from scalar expressions: a NumPy path and compiled (numba) loops.

An elementwise instruction carries an expression template such as "f32({0} + {1})".
The names it uses come from a vocabulary that the op layer registers: a NumPy
namespace for whole-array evaluation and a module that compiled kernels import.
The VM composes templates and compiles them; it never learns what they mean.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import threading

import numpy as np

_numpy_ns: dict = {"np": np}
_compiled_vocab_module: str | None = None
_vocab_hash = ""
_numpy_only: re.Pattern | None = None
_cache: dict = {}          # source key -> python function (NumPy path)
_compiled: dict = {}       # source key -> numba dispatcher
_lock = threading.Lock()


def register_vocabulary(numpy_ns: dict, compiled_module: str, numpy_only: tuple = ()) -> None:
    """Set the names expressions may use: a NumPy namespace, a module for compiled kernels,
    and the names only the NumPy path has (expressions using them are never compiled)."""
    global _compiled_vocab_module, _vocab_hash, _numpy_only
    if numpy_only:
        _numpy_only = re.compile(r"\b(" + "|".join(numpy_only) + r")\(")
    _numpy_ns.update(numpy_ns)
    _compiled_vocab_module = compiled_module
    spec = importlib.util.find_spec(compiled_module)
    with open(spec.origin, "rb") as f:
        _vocab_hash = hashlib.sha1(f.read()).hexdigest()[:12]


class Program:
    """A straight-line elementwise program: SSA lines over inputs, some results stored."""

    __slots__ = ("lines", "n_in", "out_vars", "key", "numpy_fn", "reduction")

    def __init__(self, lines: tuple, n_in: int, out_vars: tuple, reduction: tuple | None = None):
        self.lines = lines          # (template, argument names): ("as_float32({0} + {1})", ("i0", "i1"))
        self.n_in = n_in
        self.out_vars = out_vars    # which temporaries are written to outputs, in order
        self.reduction = reduction  # (reduced temporary, init, combine, finish) or None: see fusion_reduce
        self.key = (lines, n_in, out_vars) if reduction is None else (lines, n_in, out_vars, reduction)
        self.numpy_fn = None

    def source_body(self, indent: str, rename: dict | None = None) -> str:
        """The SSA lines as Python statements (`rename` maps input names to local names)."""
        out = []
        for k, (template, args) in enumerate(self.lines):
            if rename:
                args = [rename.get(a, a) for a in args]
            out.append(f"{indent}t{k} = {template.format(*args)}\n")
        return "".join(out)


def is_compilable(prog: Program) -> bool:
    """Whether every name `prog` uses exists in the compiled vocabulary."""
    if _compiled_vocab_module is None:
        return False
    templates = [template for template, _ in prog.lines] + list(prog.reduction[1:] if prog.reduction else ())
    return _numpy_only is None or not any(_numpy_only.search(template) for template in templates)


def numpy_function(prog: Program):
    """A function evaluating `prog` on whole NumPy arrays, returning the stored temporaries."""
    fn = _cache.get(prog.key)
    if fn is None:
        args = ", ".join(f"i{k}" for k in range(prog.n_in))
        src = f"def _f({args}):\n{prog.source_body('    ')}    return ({', '.join(prog.out_vars)},)\n"
        scope: dict = {}
        exec(compile(src, "<tidal elementwise>", "exec"), _numpy_ns, scope)
        fn = _cache[prog.key] = scope["_f"]
    return fn


device_runners: dict = {}  # device array type -> runner(prog, ins, outs): a device backend's kernels


# Like PyTorch, 0/0 or log(0) give nan/inf silently: kernels run with NumPy's floating-point
# errors ignored. Entering np.errstate per kernel costs ~2 us, so the state is set once per
# worker thread (quiet_thread) and around each inline batch (quiet/unquiet, which restore the
# caller's state); both set NumPy's error-state context variable directly where it exists.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _errstate_var
    with np.errstate(all="ignore"):
        _IGNORE_ALL = _errstate_var.get()
except (ImportError, AttributeError):  # another NumPy layout: the public, slower way
    _errstate_var = None


def quiet_thread() -> None:
    """Ignore NumPy floating-point errors for the rest of this (worker) thread."""
    np.seterr(all="ignore")


def quiet():
    """Ignore NumPy floating-point errors until `unquiet(token)`; returns the token."""
    if _errstate_var is not None:
        return _errstate_var.set(_IGNORE_ALL)
    state = np.errstate(all="ignore")
    state.__enter__()
    return state


def unquiet(token) -> None:
    """Restore the NumPy error state `quiet` replaced."""
    if _errstate_var is not None:
        _errstate_var.reset(token)
    else:
        token.__exit__(None, None, None)


def run_numpy(prog: Program, ins: list, outs: list) -> None:
    """Evaluate `prog` with NumPy and store into `outs` (device arrays go to their backend's runner);
    the caller has NumPy's floating-point errors ignored (see quiet)."""
    if device_runners and outs[0].__class__ in device_runners:
        return device_runners[outs[0].__class__](prog, ins, outs)
    results = numpy_function(prog)(*ins)
    for out, res in zip(outs, results):
        np.copyto(out, res, casting="unsafe")


def _kernel_source(prog: Program, ndim: int, in_is_array: tuple) -> str:
    if prog.reduction is not None:
        from .fusion_reduce import reduce_kernel_source
        return reduce_kernel_source(prog, ndim, in_is_array)
    n_out = len(prog.out_vars)
    outs = [f"o{k}" for k in range(n_out)]
    params = ", ".join(outs + [f"i{k}" for k in range(prog.n_in)])
    idx = ", ".join(f"j{d}" for d in range(ndim)) if ndim else "()"
    lines = [f"def kernel({params}):"]
    indent = "    "
    for d in range(ndim):
        lines.append(f"{indent}for j{d} in range(o0.shape[{d}]):")
        indent += "    "
    return "\n".join(lines + element_body(prog, in_is_array, idx, indent)) + "\n"


def element_body(prog: Program, in_is_array: tuple, idx: str, indent: str) -> list:
    """The code for one output element, shared by every backend's kernel template: load the
    array inputs `i<k>` at index `idx`, evaluate the SSA lines, store outputs `o<k>` at `idx`."""
    body = [f"{indent}a{k} = i{k}[{idx}]" for k, is_arr in enumerate(in_is_array) if is_arr]
    rename = {f"i{k}": f"a{k}" for k, is_arr in enumerate(in_is_array) if is_arr}
    body.append(prog.source_body(indent, rename).rstrip("\n"))
    for k, var in enumerate(prog.out_vars):
        body.append(f"{indent}o{k}[{idx}] = {var}")
    return body


def _cache_dir() -> str:
    root = os.environ.get("TIDAL_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "tidal")
    path = os.path.join(root, "kernels")
    os.makedirs(path, exist_ok=True)
    return path


def compiled_kernel(prog: Program, ndim: int, in_is_array: tuple):
    """A numba-compiled loop for `prog` over `ndim` dimensions, cached on disk by its source."""
    key = (prog.key, ndim, in_is_array)
    fn = _compiled.get(key)
    if fn is not None:
        return fn
    with _lock:
        fn = _compiled.get(key)
        if fn is not None:
            return fn
        body = _kernel_source(prog, ndim, in_is_array)
        # numba caches by file and function: one generated file per kernel source
        src = (f"# generated by tidal; vocabulary {_vocab_hash}\n"
               f"import numpy as np\nfrom numba import njit\nfrom {_compiled_vocab_module} import *\n\n"
               f"@njit(cache=True, nogil=True, error_model='numpy')\n{body}")
        fn = _compiled[key] = load_generated(src).kernel
    return fn


def load_generated(src: str, prefix: str = "k"):
    """Import generated kernel source from a file in the cache directory named by its hash
    (numba's on-disk cache is keyed by file and function, so each source gets its own file)."""
    digest = hashlib.sha1(src.encode()).hexdigest()[:20]
    path = os.path.join(_cache_dir(), f"{prefix}_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    # numba's cache records the module name: CPU kernels keep the name they were cached under
    name = f"tidal_kernel_{digest}" if prefix == "k" else f"tidal_kernel_{prefix}_{digest}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def _signature(arrays: list) -> tuple:
    return tuple((a.dtype.str, a.ndim, a.flags.c_contiguous, a.flags.writeable) if isinstance(a, np.ndarray)
                 else type(a) for a in arrays)


def _dummy(sig_item):
    # a small array numba types exactly like the real one (dtype, ndim, layout, writeable)
    if not isinstance(sig_item, tuple):
        return sig_item(0)
    dtype, ndim, contiguous, writeable = sig_item
    if ndim == 0 or contiguous:
        arr = np.zeros((1,) * ndim, dtype)
    else:
        arr = np.zeros((2,) * (ndim - 1) + (4,), dtype)[..., ::2]
    arr.flags.writeable = writeable
    return arr


class _Compiler:
    """Compiles kernels on a background thread so a hot group never stalls the program:
    until its kernel is ready, the group keeps running on the NumPy path."""

    def __init__(self):
        self.ready: set = set()
        self.pending: set = set()
        self._queue = None

    def request(self, key, prog: Program, ndim: int, in_is_array: tuple, sig: tuple) -> None:
        if key in self.pending:
            return
        self.pending.add(key)
        if self._queue is None:
            import queue
            self._queue = queue.SimpleQueue()
            threading.Thread(target=self._work, name="tidal-compiler", daemon=True).start()
        self._queue.put((key, prog, ndim, in_is_array, sig))

    def _work(self) -> None:
        while True:
            key, prog, ndim, in_is_array, sig = self._queue.get()
            try:
                compiled_kernel(prog, ndim, in_is_array)(*[_dummy(s) for s in sig])
                self.ready.add(key)
            except Exception:  # noqa: BLE001 - the group simply stays on the NumPy path
                pass


compiler = _Compiler()
background = os.environ.get("TIDAL_COMPILE_BACKGROUND", "1") != "0"


def run_compiled(prog: Program, ins: list, outs: list) -> None:
    """Run `prog` as one compiled loop over the outputs' shape (inputs broadcast to it);
    NumPy evaluates it while its compiled loop is still being built."""
    if device_runners and outs[0].__class__ in device_runners:
        return device_runners[outs[0].__class__](prog, ins, outs)
    shape = outs[0].shape
    args = []
    flat = all(o.flags.c_contiguous for o in outs)
    for x in ins:
        if isinstance(x, np.ndarray):
            if x.dtype.kind not in "biuf" or (x.dtype.kind == "f" and x.dtype.itemsize == 2):
                return run_numpy(prog, ins, outs)  # numba has no 16-bit float scalars
            if x.shape != shape:
                x = np.broadcast_to(x, shape)
                flat = False
            elif not x.flags.c_contiguous:
                flat = False
        args.append(x)
    if flat:
        loop_outs = [o.reshape(-1) for o in outs]
        args = [x.reshape(-1) if isinstance(x, np.ndarray) else x for x in args]
        ndim = 1
    else:
        loop_outs = outs
        ndim = len(shape)
    in_is_array = tuple(isinstance(x, np.ndarray) for x in args)
    call = loop_outs + args
    sig = _signature(call)
    key = (prog.key, ndim, in_is_array, sig)
    if key in compiler.ready or not background:
        compiled_kernel(prog, ndim, in_is_array)(*call)
        compiler.ready.add(key)
        return
    compiler.request(key, prog, ndim, in_is_array, sig)
    run_numpy(prog, ins, outs)
