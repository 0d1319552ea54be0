"""tidal.compat: the torch-shaped namespace, install() and the script runner, checked against real torch.

install() is only ever called in subprocesses: in this process `torch` must stay the real one.
"""
import inspect
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc


def run_python(args, cwd, env_extra=None, check=True):
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


# -- the namespace -------------------------------------------------------------------------------------------
COMMON_NAMES = """
Tensor Size dtype device Generator float32 float float64 double float16 half bfloat16 int8 int16 short int32 int
int64 long uint8 bool tensor as_tensor from_numpy zeros ones full empty zeros_like ones_like full_like empty_like
rand randn randint randperm rand_like randn_like randint_like normal bernoulli multinomial arange linspace logspace
eye cat concat stack split chunk reshape flatten squeeze unsqueeze transpose permute t narrow gather scatter
index_select masked_fill masked_select where nonzero unique sort argsort topk kthvalue flip roll tril triu add sub
mul div true_divide floor_divide remainder fmod pow exp log log1p log2 log10 sqrt rsqrt abs neg sign sin cos tan tanh
sigmoid relu clamp clip round floor ceil trunc erf lerp maximum minimum sum mean std var prod max min amax amin
argmax argmin all any norm logsumexp cumsum cumprod softmax log_softmax matmul mm bmm einsum outer dot addmm baddbmm
tensordot isnan isinf isfinite eq ne lt le gt ge logical_and logical_or logical_not count_nonzero broadcast_tensors
broadcast_to repeat_interleave searchsorted tile vstack hstack swapaxes unbind movedim clone manual_seed seed
initial_seed get_rng_state set_rng_state no_grad enable_grad set_grad_enabled is_grad_enabled inference_mode save load
is_tensor is_floating_point numel get_default_dtype set_default_dtype set_printoptions finfo iinfo set_num_threads
get_num_threads compile nn optim utils autograd cuda backends amp autocast GradScaler distributed testing onnx jit
version use_deterministic_algorithms are_deterministic_algorithms_enabled set_float32_matmul_precision
get_float32_matmul_precision strided contiguous_format channels_last preserve_format FloatTensor LongTensor typename
pi inf nan e
""".split()
# torch functions the op library gained after this list was written
LATER_OPS = "equal allclose isclose meshgrid diag cdist bincount linalg triu_indices tril_indices histc diff".split()


def test_common_torch_names_exist():
    assert [n for n in COMMON_NAMES if not hasattr(torch, n)] == []  # the list itself is torch's
    assert [n for n in COMMON_NAMES if not hasattr(tc, n)] == []


@pytest.mark.parametrize("name", LATER_OPS)
def test_later_op_names(name):
    assert hasattr(tc, name)


def test_names_are_tidal_objects():
    assert tc.Tensor is tidal.Tensor and tc.zeros is tidal.zeros and tc.no_grad is tidal.no_grad
    assert tc.nn.Linear is tidal.nn.Linear and tc.nn.functional is tidal.nn.functional
    assert tc.optim is tidal.optim and tc.utils.data.DataLoader is tidal.utils.data.DataLoader
    assert tc.autograd.grad is tidal.autograd.grad and tc.autograd.Function is tidal.autograd.Function
    assert tc.nn.utils.rnn.pad_sequence is tidal.nn.utils.rnn.pad_sequence
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        tc.no_such_name


@pytest.mark.parametrize("alias,real", [("long", "int64"), ("float", "float32"), ("half", "float16"),
                                        ("double", "float64"), ("int", "int32"), ("short", "int16"), ("bool", "bool")])
def test_dtype_aliases(alias, real):
    assert getattr(torch, alias) is getattr(torch, real)
    assert getattr(tc, alias) is tidal.tensor([], dtype=getattr(tc, alias)).dtype
    assert getattr(tc, alias).name == real


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    ours, theirs = tc.finfo(getattr(tc, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    ours, theirs = tc.iinfo(getattr(tc, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.max, ours.min, ours.dtype) == (theirs.bits, theirs.max, theirs.min, theirs.dtype)
    assert repr(ours) == repr(theirs)


def test_finfo_iinfo_errors_and_default():
    assert tc.finfo() == tc.finfo(tc.get_default_dtype())
    with pytest.raises(TypeError, match=r"torch.finfo\(\) requires a floating point input type"):
        tc.finfo(tc.int32)
    with pytest.raises(TypeError, match=r"torch.iinfo\(\) requires an integer input type"):
        tc.iinfo(tc.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        tc.iinfo(tc.bool)
    with pytest.raises(TypeError, match="must be torch.dtype, not str"):
        tc.finfo("float32")


def test_default_dtype_round_trip():
    try:
        tc.set_default_dtype(tc.float64)
        assert tc.get_default_dtype() is tc.float64 and tc.zeros(1).dtype is tc.float64
        assert tc.finfo().bits == 64
    finally:
        tc.set_default_dtype(tc.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        tc.set_default_dtype(tc.int64)


def test_tensor_predicates_and_typename():
    x, n = tc.ones(2, 3), tc.arange(3)
    assert tc.is_tensor(x) and not tc.is_tensor(np.ones(2)) and tc.numel(x) == 6
    assert tc.is_floating_point(x) and not tc.is_floating_point(n) and not tc.is_complex(x)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        tc.is_floating_point(1.0)
    for obj in (1, "s", torch.nn.Linear):
        assert tc.typename(obj) == torch.typename(obj)
    assert tc.typename(x) == torch.typename(torch.ones(1)) == "torch.FloatTensor"
    assert tc.typename(n) == "torch.LongTensor"


def test_compile_and_jit_pass_through():
    def f(x):
        return x + 1

    model = tc.nn.Linear(2, 2)
    assert tc.compile(f) is f and tc.compile(model)._orig_mod is model  # torch's OptimizedModule wrapper
    assert tc.compile(mode="max-autotune")(f) is f and tc.compile()(f) is f

    @tc.compile
    def g(x):
        return x * 2

    @tc.compile(fullgraph=True, dynamic=False)
    def h(x):
        return x * 3
    assert g(2) == 4 and h(2) == 6
    with pytest.raises(AssertionError, match="A callable function is expected"):
        tc.compile(3)
    assert tc.jit.script(model) is model and tc.jit.trace(f, (tc.ones(1),)) is f
    assert tc.jit.ignore(f) is f and tc.jit.ignore(drop=True)(f) is f and not tc.jit.is_scripting()


def test_threads_and_global_knobs_in_a_subprocess(tmp_path):
    code = textwrap.dedent("""
        import json, tidal.compat as torch
        out = {"default": torch.get_num_threads()}
        torch.set_num_threads(1)
        out["after"] = torch.get_num_threads()
        errors = []
        for bad in (0, -1, 1.5):
            try:
                torch.set_num_threads(bad)
            except RuntimeError as e:
                errors.append(str(e))
        out["errors"] = errors
        out["interop"] = torch.get_num_interop_threads() > 0
        print(json.dumps(out))
    """)
    out = json.loads(run_python(["-c", code], tmp_path).stdout)
    assert out["default"] >= 1 and out["after"] == 1 and out["interop"]
    assert out["errors"] == ["set_num_threads expects a positive integer"] * 2 + \
        ["set_num_threads expects an int, but got float"]


def test_deterministic_and_matmul_precision():
    assert not tc.are_deterministic_algorithms_enabled()
    try:
        tc.use_deterministic_algorithms(True, warn_only=True)
        assert tc.are_deterministic_algorithms_enabled() and tc.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tc.use_deterministic_algorithms(False)
    assert not tc.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError, match="must be bool"):
        tc.use_deterministic_algorithms(1)
    before = tc.get_float32_matmul_precision()
    assert before == torch.get_float32_matmul_precision() == "highest"
    try:
        tc.set_float32_matmul_precision("high")
        assert tc.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="is not one of"):
            tc.set_float32_matmul_precision("bogus")
        assert tc.get_float32_matmul_precision() == "high"
    finally:
        tc.set_float32_matmul_precision(before)


# -- cuda, backends, amp, distributed, onnx ----------------------------------------------------------------
def test_cuda_as_on_a_cpu_only_torch():
    cuda = tc.cuda
    assert cuda.is_available() is torch.cuda.is_available() is False
    assert cuda.device_count() == torch.cuda.device_count() == 0
    assert not cuda.is_initialized() and not cuda.is_bf16_supported()
    for call in (cuda.manual_seed, cuda.manual_seed_all):
        assert call(123) is None
    assert cuda.synchronize() is None and cuda.empty_cache() is None
    assert cuda.memory_allocated() == cuda.max_memory_allocated() == cuda.memory_reserved() == 0
    for needs_device in (cuda.current_device, cuda.get_device_name, cuda.get_device_capability, cuda.init):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            needs_device()
    with pytest.raises(RuntimeError, match="requires CUDA support"):
        cuda.Stream()
    with cuda.device(0):
        pass
    assert tc.version.cuda is None and torch.version.cuda is None


def test_tensor_cuda_fails_without_a_gpu():
    with pytest.raises((AssertionError, RuntimeError)):
        tc.ones(2).cuda()
    with pytest.raises((AssertionError, RuntimeError)):
        tc.ones(2).to("cuda")


def test_backend_flags_are_settable(monkeypatch):
    cudnn, matmul = tc.backends.cudnn, tc.backends.cuda.matmul
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name), name
        monkeypatch.setattr(cudnn, name, not getattr(cudnn, name))
    assert matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False
    saved = matmul.allow_tf32
    try:
        matmul.allow_tf32 = True
        assert tc.backends.cuda.matmul.allow_tf32 is True
    finally:
        matmul.allow_tf32 = saved
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo = 1
    assert not cudnn.is_available() and cudnn.version() is None
    assert not tc.backends.mps.is_available() and not tc.backends.mps.is_built()
    assert not tc.backends.cuda.is_built()


def test_cudnn_flags_context_restores():
    before = (tc.backends.cudnn.enabled, tc.backends.cudnn.benchmark)
    with tc.backends.cudnn.flags(enabled=False, benchmark=True):
        assert (tc.backends.cudnn.enabled, tc.backends.cudnn.benchmark) == (False, True)
    assert (tc.backends.cudnn.enabled, tc.backends.cudnn.benchmark) == before
    with tc.backends.cuda.sdp_kernel(enable_flash=False):
        assert not tc.backends.cuda.flash_sdp_enabled()
    assert tc.backends.cuda.flash_sdp_enabled()


def test_autocast_blocks():
    x = tc.ones(2, 2)
    with tc.autocast(device_type="cpu", dtype=tc.bfloat16):
        assert (x @ x).dtype is tc.bfloat16  # as torch (tests/test_tutorials_training_recipes.py compares the rest)
    with tc.amp.autocast("cpu", enabled=False):
        pass
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = tc.autocast("cuda")
    with ctx:
        assert (x + 1).dtype is tc.float32
    with pytest.warns(FutureWarning, match="deprecated"):
        ctx = tc.cuda.amp.autocast(enabled=False)
    with ctx:
        pass

    @tc.autocast("cpu")
    def double(t):
        return t * 2
    assert double(x).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tc.autocast(0)
    assert not tc.is_autocast_enabled()


def test_disabled_grad_scaler_passes_through():
    w = tc.ones(2, requires_grad=True)
    opt = tc.optim.SGD([w], lr=0.5)
    scaler = tc.amp.GradScaler(enabled=False)
    loss = (w * 3).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    assert scaler.unscale_(opt) is None
    assert scaler.step(opt) is None and scaler.update() is None
    assert w.detach().tolist() == [-0.5, -0.5]
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    scaler.load_state_dict({})
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        assert not tc.amp.GradScaler().is_enabled()
    with pytest.warns(FutureWarning, match="deprecated"):
        legacy = tc.cuda.amp.GradScaler(enabled=False)
    assert scaler.scale(7) == 7 and legacy.get_scale() == 1.0


def _scaler_run(lib, amp):
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    history = []
    grads = [[1., 1., 1.], [float("inf"), 0., 0.], [0.5, 0.5, 0.5], [1., 2., 3.], [1., 1., float("nan")]]
    for step, g in enumerate(grads):
        opt.zero_grad()
        scaler.scale((w * lib.tensor(g)).sum()).backward()
        if step == 3:
            scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), np.round(w.detach().numpy(), 5).tolist(), scaler.state_dict()))
    return history


def test_enabled_cpu_grad_scaler_matches_torch():
    assert _scaler_run(tc, tc.amp) == _scaler_run(torch, torch.amp)
    scaler = tc.amp.GradScaler("cpu")
    w = tc.ones(1, requires_grad=True)
    opt = tc.optim.SGD([w], lr=0.1)
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)


def test_distributed_onnx_and_version():
    dist = tc.distributed
    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        tc.nn.parallel.DistributedDataParallel(tc.nn.Linear(1, 1))
    assert not tc.onnx.is_in_onnx_export()
    with pytest.raises(NotImplementedError):
        tc.onnx.export(tc.nn.Linear(1, 1), (tc.ones(1),), "m.onnx")
    assert isinstance(tc.__version__, str) and tc.__version__.startswith("2.") and tc.version.__version__


def test_data_parallel_runs_the_module():
    inner = tc.nn.Linear(3, 2)
    dp = tc.nn.DataParallel(inner)
    x = tc.randn(4, 3)
    assert dp.module is inner
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert sorted(dp.state_dict()) == ["module.bias", "module.weight"]


# -- legacy spellings ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"])
def test_legacy_typed_constructors(name):
    ours, theirs = getattr(tc, name), getattr(torch, name)
    assert str(ours([1, 0, 2]).dtype).split(".")[1] == str(theirs([1, 0, 2]).dtype).split(".")[1]
    assert ours([1, 0, 2]).tolist() == theirs([1, 0, 2]).tolist()
    assert tuple(ours(2, 3).shape) == (2, 3) and tuple(ours().shape) == (0,)
    assert tuple(ours(tc.Size([4])).shape) == (4,)
    assert isinstance(ours([1]), ours) and not isinstance(tc.ones(1, dtype=tc.int8), ours)
    with pytest.raises(TypeError, match="data must be a sequence"):
        ours(2.5)


def test_variable_and_anomaly_flags():
    x = tc.ones(2)
    v = tc.autograd.Variable(x, requires_grad=True)
    assert v.requires_grad and not x.requires_grad and tc.autograd.Variable(x).tolist() == [1.0, 1.0]
    with tc.autograd.detect_anomaly():
        assert tc.autograd.is_anomaly_enabled()
    assert not tc.autograd.is_anomaly_enabled()


def test_layout_and_constants():
    assert repr(tc.strided) == repr(torch.strided) and repr(tc.contiguous_format) == repr(torch.contiguous_format)
    assert (tc.pi, tc.e, tc.inf) == (torch.pi, torch.e, torch.inf) and np.isnan(tc.nan) and tc.newaxis is None


# -- inspect.signature --------------------------------------------------------------------------------------
SIGNED = """nn.Linear nn.Conv2d nn.LSTM nn.Embedding nn.LayerNorm nn.Dropout nn.CrossEntropyLoss nn.Sequential
nn.MultiheadAttention nn.TransformerEncoderLayer nn.DataParallel optim.SGD optim.Adam optim.AdamW optim.RMSprop
optim.lr_scheduler.StepLR optim.lr_scheduler.CosineAnnealingLR optim.lr_scheduler.LambdaLR utils.data.DataLoader
utils.data.TensorDataset utils.data.RandomSampler amp.GradScaler amp.autocast compile testing.assert_close
testing.make_tensor nn.utils.clip_grad_norm_ nn.functional.cross_entropy""".split()


def _resolve(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("path", SIGNED)
def test_signatures_carry_torch_parameters(path):
    ours = inspect.signature(_resolve(tc, path)).parameters
    theirs = inspect.signature(_resolve(torch, path)).parameters
    wanted = [n for n, p in theirs.items() if not n.startswith("_") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    has_kwargs = any(p.kind is p.VAR_KEYWORD for p in ours.values())
    missing = [n for n in wanted if n not in ours and not has_kwargs]
    assert missing == []


@pytest.mark.parametrize("path", ["Generator", "device", "finfo", "iinfo", "Size", "no_grad", "autocast",
                                  "cuda.amp.GradScaler", "nn.Module", "nn.Parameter"])
def test_signature_works(path):
    inspect.signature(_resolve(tc, path))


# -- the Tensor long tail, against torch ------------------------------------------------------------------------
def _base(lib):
    return lib.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])


def _set_data(lib):
    t = _base(lib)
    t.data = lib.zeros(4)
    return tuple(t.shape), t.sum().item()


def _grad_flow(lib):
    t = _base(lib).requires_grad_()
    y = t * 2
    y.retain_grad()
    (y * y).sum().backward()
    return t.grad.tolist(), y.grad.tolist(), t.is_leaf, y.is_leaf


TENSOR_TAIL = {
    "data": lambda lib: (tuple(_base(lib).requires_grad_().data.shape), _base(lib).requires_grad_().data.requires_grad),
    "data_set": _set_data,
    "grad_and_is_leaf": _grad_flow,
    "shape_size_dim": lambda lib: (tuple(_base(lib).shape), _base(lib).size(-1), _base(lib).dim(), _base(lib).ndim),
    "numel": lambda lib: (_base(lib).numel(), _base(lib).nelement()),
    "type": lambda lib: (_base(lib).type(), _base(lib).type("torch.LongTensor").tolist()),
    "new_zeros": lambda lib: (_base(lib).new_zeros(2, 2).tolist(), _base(lib).new_zeros((1, 3)).tolist()),
    "uniform_": lambda lib: bool(((_base(lib).uniform_(2, 3) >= 2) & (_base(lib).uniform_(2, 3) < 3)).all()),
    "normal_": lambda lib: tuple(_base(lib).normal_(0, 1).shape),
    "masked_fill_": lambda lib: _base(lib).masked_fill_(_base(lib) > 1, 0.0).tolist(),
    "add_alpha": lambda lib: _base(lib).add_(_base(lib), alpha=2).tolist(),
    "item_tolist": lambda lib: (_base(lib)[0, 0].item(), _base(lib).tolist()),
    "cpu_to": lambda lib: (_base(lib).cpu().tolist(), _base(lib).to("cpu").tolist(), str(_base(lib).device)),
    "numpy_detach_clone": lambda lib: (_base(lib).numpy().tolist(), _base(lib).detach().tolist(),
                                       _base(lib).clone().tolist()),
    "data_ptr_is_cuda": lambda lib: (_base(lib).data_ptr() > 0, _base(lib).is_cuda),
    "zero_copy_": lambda lib: (_base(lib).zero_().tolist(), _base(lib).copy_(lib.ones(3)).tolist()),
    "expand_view_as": lambda lib: (lib.ones(1, 3).expand_as(_base(lib)).tolist(),
                                   _base(lib).view(6).view_as(_base(lib)).tolist()),
    "type_as": lambda lib: _base(lib).type_as(lib.ones(1, dtype=lib.int64)).tolist(),
    "casts": lambda lib: (_base(lib).long().tolist(), _base(lib).int().tolist(), _base(lib).bool().tolist(),
                          _base(lib).half().float().tolist(), _base(lib).double().tolist()),
    "argmax_max_topk": lambda lib: (_base(lib).argmax().item(), _base(lib).max(1).values.tolist(),
                                    _base(lib).max(1).indices.tolist(), _base(lib).topk(2).indices.tolist()),
    "eq_sum": lambda lib: (_base(lib).eq(1.5).tolist(), _base(lib).sum().item(), _base(lib).sum(1).tolist()),
    "get_device": lambda lib: _base(lib).get_device(),
}


@pytest.mark.parametrize("name", sorted(TENSOR_TAIL))
def test_tensor_long_tail_matches_torch(name):
    assert TENSOR_TAIL[name](tidal) == TENSOR_TAIL[name](torch)


# -- install() and the runner, in subprocesses ------------------------------------------------------------------
INSTALL_CHECK = """
import importlib, json, sys
import tidal, tidal.compat
tidal.compat.install()
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.cuda.amp import GradScaler
import torch.nn.modules.linear
import torch.autograd.function
out = {"torch_is_compat": torch is tidal.compat, "F": F is tidal.nn.functional,
       "loader": DataLoader is tidal.utils.data.DataLoader, "linear": torch.nn.modules.linear.Linear is tidal.nn.Linear,
       "spec_kept": tidal.nn.modules.linear.__spec__.name == "tidal.nn.modules.linear",
       "submodules": {s: importlib.import_module("torch." + s).__name__ for s in SUBMODULES}}
try:
    import torch.no_such_module
except ModuleNotFoundError as e:
    out["missing"] = str(e)
import pickle
x = torch.ones(2)
values = (x, torch.nn.Parameter(x), x.shape, x.dtype, x.device)
out["types"] = [repr(type(v)) for v in values]
out["pickled"] = [repr(type(pickle.loads(pickle.dumps(v)))) for v in values]
tidal.compat.uninstall()
out["uninstalled"] = "torch" not in sys.modules
out["types_after"] = [repr(type(v)) for v in values]
print(json.dumps(out))
"""


def test_install_makes_torch_resolve_to_tidal(tmp_path):
    from tidal.compat._importer import SUBMODULES
    code = INSTALL_CHECK.replace("SUBMODULES", repr(SUBMODULES))
    out = json.loads(run_python(["-c", code], tmp_path).stdout)
    assert all(out[k] for k in ("torch_is_compat", "F", "loader", "linear", "spec_kept", "uninstalled"))
    assert out["missing"] == "No module named 'torch.no_such_module'"
    required = ["nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn", "nn.parallel", "optim",
                "optim.lr_scheduler", "utils.data", "utils.data.dataloader", "autograd", "cuda", "cuda.amp", "amp",
                "backends", "backends.cudnn", "distributed", "testing", "onnx"]
    assert set(required) <= set(out["submodules"])
    assert all(name.startswith("tidal.") for name in out["submodules"].values())
    x = torch.ones(2)  # (the real torch, in this process)
    theirs = [repr(type(v)) for v in (x, torch.nn.Parameter(x), x.shape, x.dtype, x.device)]
    assert out["types"] == out["pickled"] == theirs  # type(x) prints as under torch, and pickles by that name
    assert out["types_after"] == ["<class 'tidal.tensor.tensor.Tensor'>", "<class 'tidal.nn.parameter.Parameter'>",
                                  "<class 'tidal.tensor.tensor.Size'>", "<class 'tidal.tensor.dtype.dtype'>",
                                  "<class 'tidal.tensor.device.device'>"]


PROBE_SCRIPT = """
import json, os, pickle, sys

class Point:
    def __init__(self, x):
        self.x = x

main = sys.modules["__main__"]
out = {"argv": sys.argv, "file": __file__, "name": __name__, "path0": sys.path[0],
       "main_is_me": main.__dict__ is globals(), "package": __package__, "spec": __spec__ is None,
       "builtins": type(__builtins__).__name__,
       "dunders": sorted(k for k in vars(main) if k.startswith("__")),
       "pickled": pickle.loads(pickle.dumps(Point(3))).x}
if os.environ.get("EXPECT_TIDAL"):
    import torch
    import torch.nn.functional as F
    out["torch"] = torch.__name__
    out["relu"] = F.relu(torch.tensor([-1.0, 2.0])).tolist()
if __name__ == "__main__":
    print(json.dumps(out))
"""


def test_runner_runs_a_script_as_python_would(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(PROBE_SCRIPT)
    (tmp_path / "link.py").symlink_to(tmp_path / "pkg" / "train.py")
    for path in ("pkg/train.py", "link.py"):
        direct = json.loads(run_python([path, "a", "--lr", "0.1"], tmp_path).stdout)
        shimmed = json.loads(run_python(["-m", "tidal.compat", path, "a", "--lr", "0.1"], tmp_path,
                                        {"EXPECT_TIDAL": "1"}).stdout)
        assert shimmed.pop("torch") == "tidal.compat" and shimmed.pop("relu") == [0.0, 2.0]
        assert shimmed == direct
        assert direct["argv"] == [path, "a", "--lr", "0.1"] and direct["path0"] == str(tmp_path / "pkg")


def test_runner_runs_a_module_as_python_m_would(tmp_path):
    (tmp_path / "probe_mod.py").write_text(PROBE_SCRIPT)
    direct = json.loads(run_python(["-m", "probe_mod", "x"], tmp_path).stdout)
    shimmed = json.loads(run_python(["-m", "tidal.compat", "-m", "probe_mod", "x"], tmp_path,
                                    {"EXPECT_TIDAL": "1"}).stdout)
    assert shimmed.pop("torch") == "tidal.compat"
    shimmed.pop("relu")
    assert shimmed == direct and direct["argv"] == [str(tmp_path / "probe_mod.py"), "x"]


def test_runner_exit_status_and_errors(tmp_path):
    (tmp_path / "bye.py").write_text("import sys, torch\nsys.exit(3)\n")
    (tmp_path / "boom.py").write_text("import torch\nraise ValueError('boom')\n")
    assert run_python(["-m", "tidal.compat", "bye.py"], tmp_path, check=False).returncode == 3
    failed = run_python(["-m", "tidal.compat", "boom.py"], tmp_path, check=False)
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr
    missing = run_python(["-m", "tidal.compat", "absent.py"], tmp_path, check=False)
    assert missing.returncode == 2 and "can't open file" in missing.stderr


def test_shim_never_installed_in_this_process():
    assert not tc.is_installed() and torch.__name__ == "torch" and hasattr(torch, "_C")
