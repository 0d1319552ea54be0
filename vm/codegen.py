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

    __slots__ = ("lines", "n_in", "out_vars", "key", "numpy_fn")

    def __init__(self, lines: tuple, n_in: int, out_vars: tuple):
        self.lines = lines          # (template, argument names): ("as_float32({0} + {1})", ("i0", "i1"))
        self.n_in = n_in
        self.out_vars = out_vars    # which temporaries are written to outputs, in order
        self.key = (lines, n_in, out_vars)
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
    return _numpy_only is None or not any(_numpy_only.search(template) for template, _ in prog.lines)


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


def run_numpy(prog: Program, ins: list, outs: list) -> None:
    """Evaluate `prog` with NumPy and store into `outs`."""
    results = numpy_function(prog)(*ins)
    for out, res in zip(outs, results):
        np.copyto(out, res, casting="unsafe")


def _kernel_source(prog: Program, ndim: int, in_is_array: tuple) -> str:
    n_out = len(prog.out_vars)
    outs = [f"o{k}" for k in range(n_out)]
    params = ", ".join(outs + [f"i{k}" for k in range(prog.n_in)])
    idx = ", ".join(f"j{d}" for d in range(ndim)) if ndim else "()"
    lines = [f"def kernel({params}):"]
    indent = "    "
    for d in range(ndim):
        lines.append(f"{indent}for j{d} in range(o0.shape[{d}]):")
        indent += "    "
    body = [f"{indent}a{k} = i{k}[{idx}]" for k, is_arr in enumerate(in_is_array) if is_arr]
    rename = {f"i{k}": f"a{k}" for k, is_arr in enumerate(in_is_array) if is_arr}
    body.append(prog.source_body(indent, rename).rstrip("\n"))
    for k, var in enumerate(prog.out_vars):
        body.append(f"{indent}o{k}[{idx}] = {var}")
    return "\n".join(lines + body) + "\n"


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
        digest = hashlib.sha1(src.encode()).hexdigest()[:20]
        path = os.path.join(_cache_dir(), f"k_{digest}.py")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        name = f"tidal_kernel_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        fn = _compiled[key] = module.kernel
    return fn


def run_compiled(prog: Program, ins: list, outs: list) -> None:
    """Run `prog` as one compiled loop over the outputs' shape (inputs broadcast to it)."""
    shape = outs[0].shape
    arrays = []
    flat = all(o.flags.c_contiguous for o in outs)
    for x in ins:
        if isinstance(x, np.ndarray):
            if x.shape != shape:
                x = np.broadcast_to(x, shape)
                flat = False
            elif not x.flags.c_contiguous:
                flat = False
        arrays.append(x)
    if flat:
        outs = [o.reshape(-1) for o in outs]
        arrays = [x.reshape(-1) if isinstance(x, np.ndarray) else x for x in arrays]
        ndim = 1
    else:
        ndim = len(shape)
    in_is_array = tuple(isinstance(x, np.ndarray) for x in arrays)
    if any(a.dtype.kind not in "biuf" or a.dtype.itemsize == 2 and a.dtype.kind == "f"
           for a in arrays if isinstance(a, np.ndarray)):
        return run_numpy(prog, ins, outs)  # 16-bit floats: numba has no scalar type for them
    compiled_kernel(prog, ndim, in_is_array)(*outs, *arrays)
