"""Kernels generated from scalar expressions: a NumPy path and compiled (numba) loops.

An elementwise instruction carries an expression template such as "f32({0} + {1})".
The names it uses come from a vocabulary that the op layer registers: a NumPy
namespace for whole-array evaluation and a module that compiled kernels import.
The VM composes templates and compiles them; it never learns what they mean.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
import sys
import threading
from time import perf_counter as _clock

import numpy as np

from . import intra_op

_numpy_ns: dict = {"np": np}
_compiled_vocab_module: str | None = None
_vocab_hash = ""
_numpy_only: re.Pattern | None = None
_numpy_only_names: tuple = ()
_complex_module: str | None = None  # what kernels of complex-valued programs import too (register_complex_vocabulary)
_complex_hash = ""
_complex_compiles: tuple = ()     # NumPy-only names that the complex module defines
_complex_wrong: tuple = ()        # names compiled wrong for complex values
_complex_numpy_only: re.Pattern | None = None
_complex_cuda_module: str | None = None  # the same for CUDA kernels (vm/codegen_cuda.py)
_cache: dict = {}          # source key -> python function (NumPy path)
_compiled: dict = {}       # source key -> numba dispatcher
_kernel_files: dict = {}  # (program key, variant) -> (module name, path) of its generated file
_kernel_names: dict = {}  # the same for files only named (see _warming), not written
_lock = threading.Lock()


def register_vocabulary(numpy_ns: dict, compiled_module: str, numpy_only: tuple = (), imports: tuple = ()) -> None:
    """Set the names expressions may use: a NumPy namespace, a module for compiled kernels,
    and the names only the NumPy path has (expressions using them are never compiled).
    `imports`: modules the compiled module takes constants from (their source keys the kernel cache too)."""
    global _compiled_vocab_module, _vocab_hash, _numpy_only_names
    if numpy_only:
        _numpy_only_names = tuple(numpy_only)
    _numpy_ns.update(numpy_ns)
    _compiled_vocab_module = compiled_module
    digest = hashlib.sha1()
    for module in (compiled_module,) + tuple(imports):
        with open(importlib.util.find_spec(module).origin, "rb") as f:
            digest.update(f.read())
    _vocab_hash = digest.hexdigest()[:12]
    _name_rules()


def register_complex_vocabulary(module: str, compiles: tuple = (), numpy_only: tuple = (),
                                cuda_module: str | None = None, imports: tuple = ()) -> None:
    """Programs computing on complex values: their compiled kernels also import `module` (after the
    vocabulary, so its names, `np` included, replace the vocabulary's), which defines `compiles` (names
    otherwise NumPy-only); `numpy_only`: names whose compiled versions are wrong for complex values (a
    complex-valued program using one runs on the NumPy path); `cuda_module`: what CUDA kernels of
    complex programs import last (a GPU has no NumPy path: it compiles every name); `imports`: modules
    these take code from (their source keys the kernel cache too)."""
    global _complex_module, _complex_hash, _complex_compiles, _complex_wrong, _complex_cuda_module
    digest = hashlib.sha1()
    for name in (module,) + ((cuda_module,) if cuda_module else ()) + tuple(imports):
        with open(importlib.util.find_spec(name).origin, "rb") as f:
            digest.update(f.read())
    _complex_hash = digest.hexdigest()[:12]
    _complex_module, _complex_compiles, _complex_wrong = module, tuple(compiles), tuple(numpy_only)
    _complex_cuda_module = cuda_module
    _name_rules()


def _calls_of(names) -> re.Pattern | None:
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\(") if names else None


def _name_rules() -> None:
    # the NumPy-only names, for real programs and for complex-valued ones
    global _numpy_only, _complex_numpy_only
    _numpy_only = _calls_of(_numpy_only_names)
    _complex_numpy_only = _calls_of([n for n in _numpy_only_names if n not in _complex_compiles]
                                    + list(_complex_wrong))


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


def is_compilable(prog: Program, complex_values: bool = False) -> bool:
    """Whether every name `prog` uses exists in the compiled vocabulary (and, for a program computing
    on complex values, in the complex one, and compiles right for them)."""
    if _compiled_vocab_module is None or (complex_values and _complex_module is None):
        return False
    numpy_only = _complex_numpy_only if complex_values else _numpy_only
    templates = [template for template, _ in prog.lines] + list(prog.reduction[1:] if prog.reduction else ())
    return numpy_only is None or not any(numpy_only.search(template) for template in templates)


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
    out = outs[0]
    if not out.size:  # no element to compute: NumPy would still evaluate checks on the inputs (a zero divisor)
        return
    fn = numpy_function(prog)
    if out.size >= 2 * CHUNK_ELEMENTS and prog.n_in and _chunkable(ins, outs):
        # in pieces that fit in cache: a program's temporaries are then never written to memory
        # (whole-array temporaries cost a pass to memory each, and page faults when fresh)
        axis = next(d for d, n in enumerate(out.shape) if n > 1)
        n = out.shape[axis]
        step = max(1, CHUNK_ELEMENTS * n // out.size)
        lead = [slice(None)] * axis
        cuts = [_cut_of(a, out.ndim, axis, n) for a in ins]
        for start in range(0, n, step):
            part = (*lead, slice(start, start + step))
            results = fn(*[a if cut is None else a[part[cut:]] for a, cut in zip(ins, cuts)])
            for o, res in zip(outs, results):
                np.copyto(o[part], res, casting="unsafe")
        return
    results = fn(*ins)
    for out, res in zip(outs, results):
        np.copyto(out, res, casting="unsafe")


CHUNK_ELEMENTS = 16384  # per piece of a large NumPy-path program: its float32/64 temporaries stay in L2


def _cut_of(a, ndim: int, axis: int, n: int):
    """How to slice input `a` along the output's `axis`: None (a scalar, or broadcast along it), else
    the number of leading output dims `a` lacks (the slice tuple drops that many entries)."""
    if a.__class__ is not np.ndarray:
        return None
    lack = ndim - a.ndim
    if axis < lack or a.shape[axis - lack] != n:
        return None
    return lack


def _chunkable(ins: list, outs: list) -> bool:
    # a program run piece by piece must not read what an earlier piece wrote: an output that
    # shares memory with an input is allowed only as that very array (elementwise in place)
    for o in outs:
        for a in ins:
            if a.__class__ is np.ndarray and np.may_share_memory(o, a) and not (
                    a.shape == o.shape and a.strides == o.strides
                    and a.__array_interface__["data"][0] == o.__array_interface__["data"][0]):
                return False
    return True


def input_index(shape: tuple, ndim: int) -> str:
    """How a loop over `ndim` output dims (j0, j1...) indexes an input of `shape`: aligned on the
    right, a size-1 dim reads its only element (broadcasting without a broadcast view)."""
    lead = ndim - len(shape)
    return ", ".join("0" if n == 1 else f"j{d + lead}" for d, n in enumerate(shape)) if shape else "()"


COMPLEX = "complex"  # the last item of a loop layout whose values are complex (its kernel has its own file)
PARALLEL = "parallel"  # the last item of a loop layout whose outer loop splits over threads (vm/intra_op.py)



class _DivisionsAsCalls(ast.NodeTransformer):
    # a / b as np.true_divide(a, b): numba's `/` raises ZeroDivisionError for a complex zero divisor,
    # its true_divide gives NumPy's inf/nan (as torch)
    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Div):
            fn = ast.Attribute(ast.Name("np", ast.Load()), "true_divide", ast.Load())
            return ast.Call(fn, [node.left, node.right], [])
        return node


def divisions_as_calls(src: str) -> str:
    """Kernel source `src` with every `a / b` written np.true_divide(a, b) (complex programs' kernels)."""
    return ast.unparse(ast.fix_missing_locations(_DivisionsAsCalls().visit(ast.parse(src)))) + "\n"


# The source of a kernel that ends in a reduction: vm/fusion_reduce.py writes it (it builds on this module) and
# registers its writer here when it loads, which vm/__init__ does before any kernel is compiled
reduce_source = None  # (prog, variant) -> source


def _kernel_source(prog: Program, variant: tuple) -> str:
    if variant[-1] == COMPLEX:
        return divisions_as_calls(_kernel_source(prog, variant[:-1]))
    if prog.reduction is not None:
        return reduce_source(prog, variant)
    n_out = len(prog.out_vars)
    params = ", ".join([f"o{k}" for k in range(n_out)] + [f"i{k}" for k in range(prog.n_in)])
    lines = [f"def kernel({params}):"]
    outer = "range"
    if variant[-1] == PARALLEL:  # the outer loop's iterations split over numba's threads
        variant, outer = variant[:-1], "prange"
    if variant[0] == "flat":  # every array C-contiguous and of the output's shape: one loop
        _, in_is_array, aliases = variant
        lines.append("    n = o0.size")
        lines += [f"    o{k} = o{k}.reshape(n)" for k in range(n_out)]
        lines += [f"    i{k} = i{k}.reshape(n)" for k, is_arr in enumerate(in_is_array) if is_arr]
        lines += alias_lines(aliases)
        lines.append(f"    for j in {outer}(n):")
        return "\n".join(lines + element_body(prog, in_is_array, "j", "        ")) + "\n"
    _, ndim, in_idx, aliases = variant
    lines += alias_lines(aliases)
    indent = "    "
    for d in range(ndim):
        lines.append(f"{indent}for j{d} in {outer if d == 0 else 'range'}(o0.shape[{d}]):")
        indent += "    "
    idx = ", ".join(f"j{d}" for d in range(ndim)) if ndim else "()"
    in_is_array = tuple(i is not None for i in in_idx)
    return "\n".join(lines + element_body(prog, in_is_array, idx, indent, in_idx)) + "\n"


def aliases(outs: list, ins: list) -> tuple:
    """(input number, output number) of each input that is an output's very array (an in-place op, `x += y`)."""
    found = ()
    for k, o in enumerate(outs):
        for m, x in enumerate(ins):
            if x is o:
                found += ((m, k),)
    return found


def alias_lines(pairs: tuple) -> list:
    """Kernel lines reading each aliased input through its output: with two names for one array, the compiled
    loop checks for overlap at run time and takes its scalar version (2.5x slower: a gradient accumulated in
    place); with one name it vectorizes (each element is read before it is written, at the same index)."""
    return [f"    i{m} = o{k}" for m, k in pairs]


def element_body(prog: Program, in_is_array: tuple, idx: str, indent: str, in_idx: tuple | None = None) -> list:
    """The code for one output element, shared by every backend's kernel template: load the
    array inputs `i<k>` at index `idx` (or each at its own `in_idx[k]`), evaluate the SSA lines,
    store outputs `o<k>` at `idx`."""
    body = [f"{indent}a{k} = i{k}[{idx if in_idx is None else in_idx[k]}]"
            for k, is_arr in enumerate(in_is_array) if is_arr]
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


def _kernel_file(prog: Program, variant: tuple, write: bool = True) -> tuple:
    # (module name, path) of the generated file of `prog`'s loop in layout `variant`, written if new
    # (unless not `write`: then only named)
    key = (prog.key, variant)
    found = _kernel_files.get(key)
    if found is None and not write:
        found = _kernel_names.get(key)
    if found is None:
        # numba caches by file and function: one generated file per kernel source
        complex_values = variant[-1] == COMPLEX
        src = (f"# generated by tidal; vocabulary {_vocab_hash}"
               + (f", complex vocabulary {_complex_hash}\n" if complex_values else "\n")
               + f"import numpy as np\nfrom numba import njit, prange\nfrom {_compiled_vocab_module} import *\n"
               + (f"from {_complex_module} import *\n" if complex_values else "")
               + f"\n@njit(cache=True, nogil=True, error_model='numpy'{_parallel_flag(variant)})\n"
               + _kernel_source(prog, variant))
        found = (_kernel_files if write else _kernel_names)[key] = generated_file(src, write=write)
    return found


def _parallel_flag(variant: tuple) -> str:
    return ", parallel=True" if variant[-1] == PARALLEL else ""


def compiled_kernel(prog: Program, variant: tuple):
    """A numba-compiled loop for `prog` in loop layout `variant`, cached on disk by its source."""
    key = (prog.key, variant)
    fn = _compiled.get(key)
    if fn is not None:
        return fn
    with _lock:
        fn = _compiled.get(key)
        if fn is None:
            fn = _compiled[key] = import_file(*_kernel_file(prog, variant)).kernel
    return fn


def generated_file(src: str, prefix: str = "k", write: bool = True) -> tuple:
    """(module name, path) of generated kernel source, written to a file in the cache directory named
    by its hash (numba's on-disk cache is keyed by file and function, so each source gets its own file)."""
    digest = hashlib.sha1(src.encode()).hexdigest()[:20]
    path = os.path.join(_cache_dir(), f"{prefix}_{digest}.py")
    if write and not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    # numba's cache records the module name: CPU kernels keep the name they were cached under
    return (f"tidal_kernel_{digest}" if prefix == "k" else f"tidal_kernel_{prefix}_{digest}"), path


def load_generated(src: str, prefix: str = "k"):
    """Import generated kernel source (see generated_file)."""
    return import_file(*generated_file(src, prefix))


# Two threads importing numba at once (the compiler thread loading a kernel, a VM worker building a
# special-function ufunc or calling a pool kernel for the first time) can deadlock in numba's circular
# imports (Python raises _DeadlockError): every import of a module that imports numba takes this lock.
_numba_lock = threading.RLock()


def import_numba_user(name: str, package: str | None = None):
    """Module `name` (one that imports numba; relative to `package`), imported under the numba lock."""
    with _numba_lock:
        return importlib.import_module(name, package)


def import_file(name: str, path: str):
    """The module `name` loaded from `path` (once per process; generated kernels import numba)."""
    module = sys.modules.get(name)
    if module is None:
        with _numba_lock:
            module = sys.modules.get(name)
            if module is None:
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
    return module


def _dummy_spec(a):
    # what numba types an argument on (dtype, ndim, layout, writeable), in a form that survives
    # pickling to the compile process (a pickled strided array arrives contiguous)
    if not isinstance(a, np.ndarray):
        return a.__class__(0)
    return (a.dtype.str, a.ndim, a.ndim == 0 or a.flags.c_contiguous, a.flags.writeable)


def _dummy(spec):
    # a tiny array numba types exactly as `spec` says: its last dim has two elements (one reachable
    # through a stride of two when strided), the others one, so a loop over any dummy output reads
    # no dummy input out of bounds
    if not isinstance(spec, tuple):
        return spec
    dtype, ndim, contiguous, writeable = spec
    if ndim == 0:
        out = np.zeros((), dtype)
    elif contiguous:
        out = np.zeros((1,) * (ndim - 1) + (2,), dtype)
    else:
        out = np.zeros((1,) * (ndim - 1) + (4,), dtype)[..., ::2]
    out.flags.writeable = writeable
    return out


def compile_kernel_file(name: str, path: str, specs: list) -> None:
    """Compile generated file `path`'s kernel for arguments like `specs` (the compile process runs this)."""
    import_file(name, path).kernel(*[_dummy(s) for s in specs])


class _Compiler:
    """Compiles kernels in the background so a hot group never stalls the program: until its
    kernel is ready, the group keeps running on the NumPy path. numba's compiler is Python code
    that would hold the program's GIL for most of a second per kernel, so a helper process
    (vm/compile_server.py) compiles into numba's on-disk cache and this thread then only loads the
    result; where the process cannot run, this thread compiles itself."""

    def __init__(self):
        self.ready: set = set()
        self.pending: set = set()
        self.generation = 0  # bumped whenever a kernel becomes ready: callers re-look only then
        self._requests = 0   # requests made: the queue's tie-break (keys and loaders do not compare)
        self._queue = None
        self._server = None  # the compile process, started with the thread; False once it failed
        self.in_process = os.environ.get("TIDAL_COMPILE_PROCESS", "1") == "0"

    def request(self, key, load, remote: tuple | None = None, first: bool = False) -> None:
        """Make `key` ready in the background: the compile process runs `remote` (module name, file
        path or None, function name, arguments) to fill numba's on-disk cache, then this thread
        calls `load()`, which loads the result (or compiles it here). `first` jumps the queue."""
        if key in self.pending:
            return
        self.pending.add(key)
        if self._queue is None:
            import queue
            self._queue = queue.PriorityQueue()
            threading.Thread(target=self._work, name="tidal-compiler", daemon=True).start()
        self._requests += 1
        self._queue.put((0 if first else 1, self._requests, key, load, remote))

    def mark_ready(self, key) -> None:
        """Record that `key`'s kernel is loaded (the generation tells replayed steps to look again)."""
        self.ready.add(key)
        self.generation += 1

    def _work(self) -> None:
        from . import blas_threads  # loaded by the worker thread, on first use
        held = False
        while True:
            _, _, key, load, remote = self._queue.get()
            if not held:  # the compiler takes a core that a threaded BLAS call would wait for
                blas_threads.hold()
                held = True
            try:
                if remote is not None:
                    self._compile_elsewhere(remote)
                load()
                self.mark_ready(key)
            except Exception:  # noqa: BLE001 - the caller simply stays on the NumPy path
                pass
            if self._queue.empty():
                blas_threads.release()
                held = False

    def _compile_elsewhere(self, remote: tuple) -> None:
        # ask the compile process to fill numba's on-disk cache; returns when it did (or failed:
        # load() then compiles in this process)
        if self.in_process or self._server is False:
            return
        import base64
        import pickle
        try:
            if self._server is None:
                self._server = self._start()
            self._server.stdin.write(base64.b64encode(pickle.dumps((0,) + remote)) + b"\n")
            self._server.stdin.flush()
            line = self._server.stdout.readline()
            if not line:
                raise OSError("the compile process ended")
        except (OSError, ValueError, pickle.PickleError):
            self._server = False  # from now on, compile in this process

    @staticmethod
    def _start():
        import subprocess
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        return subprocess.Popen([sys.executable, "-m", f"{__package__}.compile_server"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


compiler = _Compiler()
background = os.environ.get("TIDAL_COMPILE_BACKGROUND", "1") != "0"
_ready_calls: dict = {}  # call key (program, array types and shapes) -> compiled kernel to call
intra_op.on_change(_ready_calls.clear)  # a key's kernel is parallel or serial by then-allowed (variants differ)
_kernel_modules: dict = {}  # module name -> a kernel module whose kernels are compiled and loaded (kernel_module)
_failed_modules: set = set()  # kernel modules whose load failed in the calling thread
_full_names: dict = {}  # (name, package) -> the module's absolute name


def kernel_module(name: str, package: str | None = None, spent: float = 0.0):
    """Module `name` of hand-written numba kernels (one with a `warm()` that calls each on tiny arrays of the
    types the program passes), once they are compiled and loaded; else None, and the caller runs its NumPy
    path. Nothing starts before numba is loaded (a first small program does not pay for its import), unless
    the callers' NumPy path has proven hot: `spent` is the seconds this call's NumPy path is expected to take,
    and past `compile_heat` of them the module is loaded anyway (a program of convolutions alone). Then
    the compile process compiles the module into numba's on-disk cache in the background and the compiler
    thread loads it, as for generated kernels (in this thread when background compiling is off)."""
    full = _full_names.get((name, package))
    if full is None:  # (resolved once: callers ask on every kernel call until the module is loaded)
        full = _full_names[name, package] = importlib.util.resolve_name(name, package) if name.startswith(".") \
            else name
    module = _kernel_modules.get(full)
    if module is not None:
        return module
    key = ("module", full)
    stored = _stored_keys.get(key)
    if stored is None:
        spec = importlib.util.find_spec(full)
        stored = _stored_keys[key] = spec is not None and spec.origin is not None and in_disk_cache(spec.origin)
    if not _numba_imported():
        # (a module stored in its package's __pycache__ does not pay towards numba's import: that cache is there in
        # any run after the first, also with an empty kernel cache, and a fresh program's first steps would pay for
        # numba's set-up; once a generated kernel brings numba in, every module loads at its next call)
        heat = _heat[key] = _heat.get(key, 0.0) + spent
        if heat < compile_heat:
            return None

    def load(here: bool = False):
        loaded = import_numba_user(full)
        if background and not here and intra_op.parallel():  # (on the compiler thread: its warm-up starts no pool)
            intra_op.serial_here()
        loaded.warm()  # from the on-disk cache the compile process filled (or compiled here)
        _kernel_modules[full] = loaded

    # a call whose NumPy path alone costs more than loading the stored module (numba's import included) loads it
    # here and runs compiled (a program's first draw of millions of random values, in a run after the first)
    here = stored and spent >= (sync_load_s if _numba_imported() else sync_load_s + numba_import_s)
    if not background or here:
        if full in _failed_modules:
            return None
        try:
            load(here)
        except Exception:  # noqa: BLE001 - the caller keeps its NumPy path for good, as after a background failure
            _failed_modules.add(full)
            return None
        return _kernel_modules[full]
    compiler.request(key, load, None if stored else (full, None, "warm", ()), first=True)
    return None


sync_load_s, numba_import_s = 0.1, 0.4  # about what loading a stored kernel module costs here, and numba's import


# When a background compile starts (ski rental): compiling a kernel costs about half a second of a core
# (and numba's import, once, in this process), which a 2-core machine takes from the program itself.
# So a call key first runs on the NumPy path until its heat -- NumPy seconds spent on it, each run
# counted as at least `heat_floor` s (a short run gains most from one compiled call over several
# NumPy calls) -- reaches `compile_heat` s. The first steps of a fresh program then compile only what
# has proven hot, rather than every group seen twice.
compile_heat = float(os.environ.get("TIDAL_COMPILE_HEAT", "0.2"))
heat_floor = 0.002
_heat: dict = {}  # call key -> NumPy seconds (with the floor) spent on it so far


def _warming(key: tuple, fallback, stored=None) -> bool:
    """Run `fallback` (the NumPy path) and add its time to `key`'s heat, if `key` is still colder than
    compile_heat (then True: nothing to compile yet); else False. `stored()` says whether the key's
    kernel is in numba's on-disk cache (asked once per key): such a key is warm enough at load_heat."""
    if not background:
        return False
    heat = _heat.get(key, 0.0)
    if heat >= compile_heat:
        return False
    is_stored = stored is not None and _stored_keys.get(key)
    if is_stored is None:
        is_stored = _stored_keys[key] = stored()
    if is_stored and heat >= load_heat and (_numba_imported() or _heat.get(_STORED, 0.0) >= numba_heat):
        return False
    if len(_heat) > 65536:  # a program of ever-new shapes: forget, rather than grow
        _heat.clear()
        _stored_keys.clear()
    t = _clock()
    fallback()
    spent = _clock() - t
    spent = spent if spent > heat_floor else heat_floor
    _heat[key] = heat + spent
    if is_stored and not _numba_imported():
        _heat[_STORED] = _heat.get(_STORED, 0.0) + spent
    return True


# A kernel an earlier process compiled is in numba's on-disk cache: loading it costs milliseconds, not the
# half second of a compile, so it is bought after `load_heat` NumPy seconds of its own (a program's second
# run reaches compiled speed in ~15 steps rather than ~100). numba's import and set-up (about half a second of
# GIL-bound work, once) is shared by them all: until it is paid, the stored keys' NumPy time also heats one key,
# _STORED, and they load once it passes `numba_heat` (the ski-rental break-even: the tiny GPT's second run pays
# about 0.6 s more in its first 20 steps, and is ~2 s ahead by step 100).
load_heat = 0.02
numba_heat = 0.5
_STORED = ("stored kernels",)
_stored_keys: dict = {}  # call key -> whether its kernel is in numba's on-disk cache
_cache_listing: dict = {}  # a __pycache__ folder -> the file stems with a numba index there (read once)


def _numba_imported() -> bool:
    return "numba" in sys.modules


def kernel_stored(prog: Program, variant: tuple) -> bool:
    """Whether `prog`'s loop in layout `variant` is in numba's on-disk cache (its file is named, not written)."""
    return in_disk_cache(_kernel_file(prog, variant, False)[1])


def in_disk_cache(path: str) -> bool:
    """Whether numba's on-disk cache holds an index for the kernel file (or module) at `path`."""
    folder, base = os.path.split(path)
    pycache = os.path.join(folder, "__pycache__")
    stems = _cache_listing.get(pycache)
    if stems is None:
        try:
            names = os.listdir(pycache)
        except OSError:
            names = []
        stems = _cache_listing[pycache] = {n.split(".", 1)[0] for n in names if n.endswith(".nbi")}
    return os.path.splitext(base)[0] in stems


def _array_key(x):
    return (x.dtype, x.shape, x.strides) if x.__class__ is np.ndarray else x.__class__


def kernel_key(prog: Program, call: list, outs: list, ins: list) -> tuple:
    """The key a compiled kernel is kept under: `call`'s arrays (see _call_key) and which of `ins` are `outs`'
    very arrays (an in-place call's kernel reads them through the output: alias_lines)."""
    return _call_key(prog, call) + aliases(outs, ins)


def _call_key(prog: Program, arrays: list) -> tuple:
    # everything numba types on (dtype, ndim, layout) and the loop layout depends on (shapes)
    return (prog,) + tuple([_array_key(x) for x in arrays])


def _compilable_array(x, kinds: str = "biuf") -> bool:
    # numba has no 16-bit float scalars; other NumPy arrays (views, subclasses) take the NumPy path
    return x.__class__ is not np.ndarray or (x.dtype.kind in kinds
                                             and not (x.dtype.kind == "f" and x.dtype.itemsize == 2))


def _direct(fn, args: list, n_extents: int):
    # the machine-code entry of the overload numba chose for these arguments' types, called without
    # numba's dispatcher (which types every argument again on each call: about 1 us): a call key
    # fixes each array's dtype, dimensions and layout, so the same overload serves every call of
    # the key. Python ints are typed by value (int64 or uint64), so their calls keep the dispatcher.
    if any(a.__class__ is int for a in args[:len(args) - n_extents]):
        return fn
    try:
        compiled = fn.overloads.get(tuple([fn.typeof_pyval(a) for a in args]))
    except Exception:  # noqa: BLE001 - numba internals changed: the dispatcher still works
        return fn
    return fn if compiled is None else compiled.entry_point


def _entered(fn):
    # a parallel kernel's call: this thread's numba thread count set first (vm/intra_op.py)
    enter = intra_op.enter

    def call(*args):
        enter()
        fn(*args)
    return call


def launch_compiled(key: tuple, prog: Program, variant, call: list, fallback, n_extents: int = 0) -> None:
    """Call `prog`'s kernel for `variant` on `call` (compiled now, or in the background while
    `fallback()` runs the NumPy path); `key` is the call's _call_key. The last `n_extents`
    arguments are loop extents: the background compile passes 0 for them."""
    if len(_ready_calls) > 65536:  # a program of ever-new shapes: forget, rather than grow
        _ready_calls.clear()
    parallel = variant[-1] == PARALLEL
    if not background:
        fn = compiled_kernel(prog, variant)
        if parallel:
            if not intra_op.parallel():  # numba's threading layer turned out unsafe: the serial variant next time
                return fallback()
            intra_op.enter()
        fn(*call)
        _ready_calls[key] = _entered(_direct(fn, call, n_extents)) if parallel else _direct(fn, call, n_extents)
        compiler.mark_ready(key)
        return
    arrays = call[:len(call) - n_extents]
    specs = [_dummy_spec(a) for a in arrays] + [0] * n_extents

    def load():  # on the compiler thread: importing the kernel's file imports numba (a second, once)
        fn = compiled_kernel(prog, variant)
        if parallel:
            if not intra_op.parallel():
                raise RuntimeError("no thread-safe threading layer")  # (the key stays on NumPy; see parallel())
            intra_op.serial_here()  # (the warm-up call starts no pool on the compiler thread)
        dummies = [_dummy(s) for s in specs]
        fn(*dummies)  # loads what the compile process built (or compiles here)
        _ready_calls[key] = _entered(_direct(fn, dummies, n_extents)) if parallel else _direct(fn, dummies, n_extents)

    remote = None if _stored_keys.get(key) else (__name__, None, "compile_kernel_file",
                                                   (*_kernel_file(prog, variant), specs))
    compiler.request(key, load, remote)  # (a stored kernel: this process's compiler thread just loads it)
    fallback()


def unbroadcast(x):
    """`x` with each dim it broadcasts by a 0 stride cut to its one row there: kernels index a size-1 dim at 0
    (input_index), and the cut array is a plain (often C-contiguous) one that numba's loops vectorize, where the
    expanded view types as 'A' layout: a GELU backward over an expanded gradient ran 2.3x slower."""
    if x.__class__ is np.ndarray and 0 in x.strides and x.size > 1:
        return x[tuple([slice(0, 1) if st == 0 else slice(None) for st in x.strides])]
    return x


def unbroadcast_all(arrays: list) -> list:
    """`arrays` through `unbroadcast` (the same list when none broadcasts by a 0 stride)."""
    for x in arrays:
        if x.__class__ is np.ndarray and 0 in x.strides:
            return [unbroadcast(y) for y in arrays]
    return arrays


def ready_kernel(prog: Program, ins: list, outs: list):
    """`prog`'s compiled loop bound as a kernel (ins, outs, attrs) for arrays of exactly these types and
    layouts, once compiled (else None): a replayed window calls it without working out the call key."""
    cut = unbroadcast_all(ins)
    call = outs + cut
    if call[0].__class__ is not np.ndarray:
        return None
    fn = _ready_calls.get(kernel_key(prog, call, outs, ins))
    if fn is None:
        return None
    if cut is not ins:  # (the replayed window's inputs broadcast the same way)
        return lambda ins, outs, attrs: fn(*outs, *unbroadcast_all(ins))
    return lambda ins, outs, attrs: fn(*outs, *ins)


def _elementwise_variant(outs: list, ins: list) -> tuple:
    shape = outs[0].shape
    arrays = [x for x in ins if x.__class__ is np.ndarray]
    # complex values anywhere (arrays or NumPy scalars): the complex vocabulary's own kernel file
    tail = (COMPLEX,) if any(getattr(x, "dtype", _REAL).kind == "c" for x in outs + ins) else ()
    if not tail and shape and (len(shape) == 1 or shape[0] > 1) and intra_op.wide(outs[0].size):
        tail = (PARALLEL,)
    if all(x.shape == shape and x.flags.c_contiguous for x in arrays) and all(o.flags.c_contiguous for o in outs):
        return ("flat", tuple(x.__class__ is np.ndarray for x in ins), aliases(outs, ins)) + tail
    ndim = len(shape)
    return ("nd", ndim, tuple(input_index(x.shape, ndim) if x.__class__ is np.ndarray else None for x in ins),
            aliases(outs, ins)) + tail


_REAL = np.dtype(np.float64)  # the kind of a Python number (which has no dtype) in _elementwise_variant


def run_compiled(prog: Program, ins: list, outs: list) -> None:
    """Run `prog` as one compiled loop over the outputs' shape (inputs broadcast to it);
    NumPy evaluates it while its compiled loop is still being built."""
    if device_runners and outs[0].__class__ in device_runners:
        return device_runners[outs[0].__class__](prog, ins, outs)
    ins = unbroadcast_all(ins)
    call = outs + ins
    key = kernel_key(prog, call, outs, ins)
    fn = _ready_calls.get(key)
    if fn is not None:
        fn(*call)
        return
    if key in compiler.pending or not all(_compilable_array(x, "biufc") for x in call):  # (pending: being built)
        return run_numpy(prog, ins, outs)
    fallback = lambda: run_numpy(prog, ins, outs)  # noqa: E731
    if _warming(key, fallback, lambda: kernel_stored(prog, _elementwise_variant(outs, ins))):
        return
    variant = _elementwise_variant(outs, ins)
    if variant[-1] == COMPLEX and not is_compilable(prog, True):  # a program compiled for real values
        return run_numpy(prog, ins, outs)
    launch_compiled(key, prog, variant, call, fallback)
