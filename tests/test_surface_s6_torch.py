"""The torch.* names added by the s6 surface pass, each compared with real torch 2.13: TorchVersion, futures,
Stream/Event, errors and flags, importable modules, cdist/from_dlpack keywords, embedding_bag, SobolEngine, out=,
Generator and PackedSequence extras."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from torch_compare import check


def _pair(*shape, seed=0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (torch.tensor(a, requires_grad=requires_grad), tidal.tensor(a, requires_grad=requires_grad))


# ---- small torch.* names: version, futures, streams, errors, flags, importable modules ----------

@pytest.mark.parametrize("other", ["2.0", "2.13", "2.13.0", "2.13.1", "2.13.0rc1", "2.14.0.dev20260101", "1.13.1",
                                   (2, 13), (2, 12, 9), (3,), "parrot"])
def test_torch_version_compares_as_torch(other):
    ref = torch.torch_version.TorchVersion("2.13.0+tidal")
    mine = tc.__version__
    assert isinstance(mine, str) and mine == "2.13.0+tidal" and type(mine).__name__ == "TorchVersion"
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
        assert getattr(mine, op)(other) == getattr(ref, op)(other), (op, other)
    assert {mine: 1}["2.13.0+tidal"] == 1


def test_futures_as_torch():
    results = []
    for lib in (torch, tc):
        F, out = lib.futures.Future, []
        f = F()
        out.append(f.done())
        f.set_result(3)
        with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete again"):
            f.set_result(4)
        out += [f.wait(), f.value(), f.done()]
        g = F()
        g.set_exception(ValueError("bad"))
        for call in (g.wait, g.value):
            with pytest.raises(ValueError, match="bad"):
                call()
        out.append(f.then(lambda fut: fut.wait() + 1).wait())
        with pytest.raises(RuntimeError, match="Got the following error when running the callback: "
                                               "ZeroDivisionError: division by zero"):
            f.then(lambda fut: 1 / 0).wait()
        late, seen = F(), []
        late.add_done_callback(lambda fut: seen.append(fut.value()))
        late.set_result(7)
        out.append(seen)
        out.append([x.wait() for x in lib.futures.collect_all([f, late]).wait()])
        out.append(lib.futures.wait_all([f, late]))
        with pytest.raises(ValueError, match="bad"):
            lib.futures.wait_all([f, g])
        with pytest.raises(AssertionError, match="3 is of type <class 'int'>, not an Exception."):
            F().set_exception(3)
        results.append(out)
    assert results[1] == results[0]


def test_generic_stream_and_event_on_cpu():
    for lib in (torch, tc):
        s, e = lib.Stream("cpu"), lib.Event()
        assert repr(s) == "torch.Stream device_type=cpu, device_index=-1, stream_id=0"
        assert repr(lib.Event(enable_timing=True)) == ("torch.Event device_type=cpu, device_index=-1, event_flag=1, "
                                                       "event_id=0")
        assert s == lib.Stream() and hash(s) == hash(lib.Stream()) and s.device_type == 0 and str(s.device) == "cpu"
        assert s.query() and e.query() and s.is_capturing() is False
        s.synchronize(), e.synchronize(), e.wait(), s.wait_event(e)
        for call in (lambda: s.wait_stream(lib.Stream()), s.record_event, e.record):
            with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
                call()
        with pytest.raises(ValueError, match="Both events must be created with argument 'enable_timing=True'."):
            e.elapsed_time(e)
        with pytest.raises(NotImplementedError, match="torch.Event ipc is not supported yet"):
            e.ipc_handle()
        with pytest.raises(RuntimeError, match="PyTorch is not linked with support for cuda devices"):
            lib.Stream("cuda")


def test_errors_flags_and_aliases():
    for name in ("OutOfMemoryError", "AcceleratorError"):
        assert issubclass(getattr(tc, name), RuntimeError)
    assert tc.OutOfMemoryError is tc.cuda.OutOfMemoryError
    assert tc.legacy_contiguous_format is tc.contiguous_format
    assert repr(tc.legacy_contiguous_format) == repr(torch.legacy_contiguous_format)
    assert tc.has_lapack is True and tc.has_spectral is True
    assert tc.has_mkl == tc.backends.mkl.is_available() and tc.has_openmp == tc.backends.openmp.is_available()
    assert tc.nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": tc.float64}}) == \
        {"device": "cpu", "dtype": tc.float64}
    for lib in (torch, tc):
        with pytest.raises(TypeError, match="unexpected kwargs"):
            lib.nn.factory_kwargs({"bias": True})
        with pytest.raises(TypeError, match="dtype specified twice, in \\*\\*kwargs and in factory_kwargs"):
            lib.nn.factory_kwargs({"dtype": lib.float32, "factory_kwargs": {"dtype": lib.float32}})
    assert tc.nn.utils.rnn.bind(None, abs) is None and tc.nn.utils.rnn.bind(-2, abs) == 2
    assert issubclass(tc.nn.utils.rnn.PackedSequence, tc.nn.utils.rnn.PackedSequence_)
    assert tc.nn.utils.rnn.PackedSequence_._fields == torch.nn.utils.rnn.PackedSequence_._fields


def test_modules_scripts_import(tmp_path):
    """`import torch.linalg`, torch.types, torch.functional, torch.futures, torch.nn.common_types... resolve."""
    import subprocess
    import sys
    script = tmp_path / "imports.py"
    script.write_text(
        "import torch.linalg, torch.types, torch.functional, torch.futures, torch.cpu, torch.nn.grad\n"
        "from torch.linalg import norm, vector_norm\n"
        "from torch.nn.common_types import _size_2_t\n"
        "from torch.nn.attention import SDPBackend, sdpa_kernel\n"
        "from torch.nn.attention.bias import causal_lower_right\n"
        "from torch.nn.utils.fusion import fuse_conv_bn_eval\n"
        "from torch.nn.utils.stateless import functional_call\n"
        "from torch.torch_version import TorchVersion\n"
        "from torch.types import Device, Number\n"
        "x = torch.tensor([3.0, 4.0])\n"
        "assert float(norm(x)) == 5.0 and torch.functional.einsum('i,i->', x, x).item() == 25.0\n"
        "assert torch.__version__ >= (2, 0) and torch.linalg.__name__.startswith('tidal')\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-m", "tidal.compat", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
    torch_linalg = {n for n in dir(torch.linalg) if not n.startswith("_") and callable(getattr(torch.linalg, n))}
    assert torch_linalg <= set(tc.linalg.__all__)
    assert sorted(tc.functional.__all__) == sorted(torch.functional.__all__)


def test_cdist_compute_modes():
    (ta, ma), (tb, mb) = _pair(5, 3, seed=5), _pair(4, 3, seed=6)
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        check(tc.cdist(ma, mb, compute_mode=mode), torch.cdist(ta, tb, compute_mode=mode), rtol=1e-5, atol=1e-5)
    for lib, a, b in ((torch, ta, tb), (tc, ma, mb)):
        for bad in (None, "x"):
            with pytest.raises(ValueError, match=f"{bad} is not a valid value for compute_mode"):
                lib.cdist(a, b, compute_mode=bad)


def test_from_dlpack_copy_and_device():
    for lib in (torch, tc):
        a = np.arange(3.0)
        copied = lib.from_dlpack(a, copy=True)
        shared = lib.from_dlpack(a, device="cpu")
        a[0] = 9.0
        assert copied.tolist() == [0.0, 1.0, 2.0] and shared.tolist() == [9.0, 1.0, 2.0]
        x = lib.arange(3.0)
        y = lib.from_dlpack(x, copy=True)
        y[0] = 5.0
        assert x.tolist() == [0.0, 1.0, 2.0]


# ---- torch.embedding_bag (ATen signature) -------------------------------------------------------

@pytest.mark.parametrize("offsets,mode,weighted,last,pad,dtype", [
    ([0, 4], 0, False, False, None, np.float32), ([0, 4], 0, False, False, None, np.float64),
    ([0, 4], 1, False, False, None, np.float32), ([0, 4], 2, False, False, None, np.float32),
    ([0, 4, 8], 0, False, True, None, np.float32), ([0, 4], 0, False, False, 2, np.float32),
    ([0, 4], 1, False, False, 2, np.float32), ([0, 4], 2, False, False, 4, np.float32),
    ([0, 4, 4], 2, False, False, None, np.float32), ([0, 4, 4], 1, False, False, None, np.float32),
    ([0, 4], 0, True, False, None, np.float32), ([0, 4], 1, False, False, -1, np.float32)])
def test_aten_embedding_bag(offsets, mode, weighted, last, pad, dtype):
    """All four results (output, offset2bag, bag_size, max_indices) and the weight's gradient, as torch's."""
    w = np.random.default_rng(7).standard_normal((10, 3)).astype(dtype)
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array(offsets)
    psw = np.linspace(0, 1, 8).astype(dtype) if weighted else None
    results = []
    for lib in (torch, tc):
        weight = lib.tensor(w, requires_grad=True)
        out = lib.embedding_bag(weight, lib.tensor(idx), lib.tensor(off), False, mode, False,
                                None if psw is None else lib.tensor(psw), last, pad)
        out[0].square().sum().backward()
        results.append(list(out) + [weight.grad])
    for mine, ref in zip(results[1], results[0]):
        check(mine, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="argument 'offsets' \\(position 3\\) must be Tensor, not NoneType"):
        tc.embedding_bag(tc.tensor(w), tc.tensor(idx), None)


# ---- torch.quasirandom.SobolEngine --------------------------------------------------------------

@pytest.mark.parametrize("dimension", [1, 7, 1111])
def test_sobol_unscrambled_as_torch(dimension):
    pytest.importorskip("scipy")  # tidal reads Joe and Kuo's direction numbers from SciPy's copy
    ref, mine = torch.quasirandom.SobolEngine(dimension), tc.quasirandom.SobolEngine(dimension)
    assert repr(mine) == repr(ref)
    check(mine.sobolstate, ref.sobolstate)
    for step in (lambda e, lib: e.draw(), lambda e, lib: e.draw(5, dtype=lib.float64),
                 lambda e, lib: e.fast_forward(4).draw(6, dtype=lib.float64), lambda e, lib: e.draw_base2(4),
                 lambda e, lib: e.reset().fast_forward(3).draw(2)):
        check(step(mine, tc), step(ref, torch))
    assert mine.num_generated == ref.num_generated
    out = tc.empty(0)
    assert mine.draw(2, out=out) is out and tuple(out.shape) == (2, dimension)


def test_sobol_scrambled_and_errors():
    pytest.importorskip("scipy")
    from tidal.compat import quasirandom as q
    # the linear matrix scramble, fed torch's random bits, gives torch's scrambled directions
    g = torch.Generator().manual_seed(5)
    ltm = torch.randint(2, (3, 30, 30), generator=g).tril()
    state = torch.zeros(3, 30, dtype=torch.long)
    torch._sobol_engine_initialize_state_(state, 3)
    torch._sobol_engine_scramble_(state, ltm, 3)
    bits = np.int64(1) << np.arange(29, -1, -1, dtype=np.int64)
    lower = ltm.numpy().astype(np.int64)
    lower[:, np.arange(30), np.arange(30)] = 1
    ours = q._parity((lower @ bits)[:, None, :] & q._direction_numbers(3, 30)[:, :, None]) @ bits
    np.testing.assert_array_equal(ours, state.numpy())
    e = tc.quasirandom.SobolEngine(3, scramble=True, seed=1)
    assert repr(e) == repr(torch.quasirandom.SobolEngine(3, scramble=True, seed=1))
    pts = e.draw_base2(6).numpy()
    assert tc.quasirandom.SobolEngine(3, scramble=True, seed=1).draw(64).equal(tc.tensor(pts))
    for column in pts.T:  # a scrambled (0, m, 1)-net: one point in each of the 2**m strata
        assert sorted(np.floor(column * 64).astype(int).tolist()) == list(range(64))
    for lib in (torch, tc):
        eng = lib.quasirandom.SobolEngine(2)
        eng.draw(3)
        with pytest.raises(ValueError, match=r"3 points have been previously generated, then: n=3\+2\*\*1=5"):
            eng.draw_base2(1)
        with pytest.raises(ValueError, match=r"Supported range of dimensionality for SobolEngine is \[1, 21201\]"):
            lib.quasirandom.SobolEngine(0)


# ---- out= on the torch functions that take it ---------------------------------------------------

def _out_calls(lib, x, y, i, b):
    return {
        "absolute": lambda o: lib.absolute(x, out=o), "all": lambda o: lib.all(b, 1, out=o),
        "any": lambda o: lib.any(b, out=o), "argmax": lambda o: lib.argmax(x, 1, out=o),
        "argmin": lambda o: lib.argmin(x, 0, True, out=o), "clamp_min": lambda o: lib.clamp_min(x, 0.5, out=o),
        "column_stack": lambda o: lib.column_stack((x, y), out=o), "cumprod": lambda o: lib.cumprod(x, 1, out=o),
        "cumsum": lambda o: lib.cumsum(x, 0, out=o), "diff": lambda o: lib.diff(x, out=o),
        "float_power": lambda o: lib.float_power(x.abs(), 2, out=o), "hstack": lambda o: lib.hstack((x, y), out=o),
        "igamma": lambda o: lib.igamma(x.abs(), y.abs(), out=o),
        "index_add": lambda o: lib.index_add(x, 0, i, y[:2], out=o), "isin": lambda o: lib.isin(i, i + 1, out=o),
        "lerp": lambda o: lib.lerp(x, y, 0.3, out=o), "log_softmax": lambda o: lib.log_softmax(x, 1, out=o),
        "logcumsumexp": lambda o: lib.logcumsumexp(x, 1, out=o), "logsumexp": lambda o: lib.logsumexp(x, 1, out=o),
        "max": lambda o: lib.max(x, 1, out=o), "max2": lambda o: lib.max(x, y, out=o),
        "mean": lambda o: lib.mean(x, 1, out=o), "mean_all": lambda o: lib.mean(x, out=o),
        "msort": lambda o: lib.msort(x, out=o), "nanmean": lambda o: lib.nanmean(x, 0, out=o),
        "nansum": lambda o: lib.nansum(x, 1, out=o), "neg": lambda o: lib.neg(x, out=o),
        "norm": lambda o: lib.norm(x, 2, 1, out=o), "prod": lambda o: lib.prod(x, 1, out=o),
        "renorm": lambda o: lib.renorm(x, 2, 0, 1.0, out=o), "softmax": lambda o: lib.softmax(x, 1, out=o),
        "square": lambda o: lib.square(x, out=o), "std": lambda o: lib.std(x, 1, out=o),
        "sum": lambda o: lib.sum(x, 1, out=o), "var": lambda o: lib.var(x, 0, out=o),
        "vstack": lambda o: lib.vstack((x, y), out=o), "where": lambda o: lib.where(b, x, y, out=o)}


@pytest.mark.parametrize("out_dtype", ["float32", "int64", "bool", "float64"])
def test_out_argument_as_torch(out_dtype):
    """Each function with out=: same values and dtype written into out (and out returned), or torch's error."""
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    per_lib = []
    for lib in (torch, tc):
        x, y = lib.tensor(xa), lib.tensor(ya)
        per_lib.append((lib, _out_calls(lib, x, y, lib.tensor([0, 2]), x > 0)))
    (_, ref_calls), (_, my_calls) = per_lib
    for name in ref_calls:
        seen = []
        for (lib, calls) in per_lib:
            plain = calls[name](None)
            want = getattr(lib, out_dtype)
            out = tuple(lib.empty(0, dtype=lib.int64 if k else want) for k in range(len(plain))) \
                if isinstance(plain, tuple) else lib.empty(2, dtype=want)  # 2 elements: resized, with a warning
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    got = calls[name](out)
                outs = got if isinstance(got, tuple) else (got,)
                same = all(a is b for a, b in zip(outs, out if isinstance(out, tuple) else (out,)))
                warned = any("resized" in str(w.message) for w in caught)
                seen.append(("ok", [(str(t.dtype).split(".")[-1], t.numpy().tolist()) for t in outs], same, warned))
            except Exception as e:  # noqa: BLE001 - the error itself is compared
                seen.append((type(e).__name__, str(e)))
        ref, mine = seen
        if ref[0] == "ok":
            assert mine[0] == "ok", (name, mine)
            assert [d for d, _ in mine[1]] == [d for d, _ in ref[1]] and mine[2:] == ref[2:], name
            for (_, m), (_, r) in zip(mine[1], ref[1]):
                np.testing.assert_allclose(np.asarray(m, float), np.asarray(r, float), rtol=1e-5, atol=1e-6,
                                           err_msg=name)
        else:
            assert mine == ref, name


def test_out_argument_refuses_grad_and_shows_in_signature():
    import inspect
    x = tc.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"sum\(\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        tc.sum(x, 0, out=tc.empty(0))
    with tc.no_grad():
        assert tc.sum(x, 0, out=tc.empty(0)).item() == 3.0
    assert "out" in inspect.signature(tc.mean).parameters and "out" in inspect.signature(tc.hstack).parameters


def test_out_and_keywords_of_special_searchsorted_and_friends():
    results = []
    for lib in (torch, tc):
        x = lib.tensor(np.linspace(0.1, 2, 6, dtype=np.float32))
        calls = [lambda: lib.special.entr(x, out=lib.empty(0)),
                 lambda: lib.special.entr(x, out=lib.empty(0, dtype=lib.long)),
                 lambda: lib.special.i0e(x, out=lib.empty(0, dtype=lib.float64)),
                 lambda: lib.special.gammainc(x, x, out=lib.empty(0)),
                 lambda: lib.searchsorted(lib.tensor([0.5, 1.0]), x, out=lib.empty(0, dtype=lib.long)),
                 lambda: lib.bucketize(x, lib.tensor([0.5]), out=lib.empty(0)),
                 lambda: lib.bucketize(x, lib.tensor([0.5]), out_int32=True, out=lib.empty(0, dtype=lib.int32)),
                 lambda: lib.promote_types(type1=lib.int32, type2=lib.float32),
                 lambda: lib.range(0, 2, layout=lib.strided),
                 lambda: x.cpu(memory_format=lib.contiguous_format)]
        seen = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.range's deprecation
            for call in calls:
                try:
                    r = call()
                    seen.append((str(getattr(r, "dtype", r)).split(".")[-1],
                                 np.round(r.numpy(), 5).tolist() if hasattr(r, "numpy") else None))
                except Exception as e:  # noqa: BLE001 - the error itself is compared
                    seen.append((type(e).__name__, str(e)))
        results.append(seen)
    assert results[1] == results[0]


def test_generator_and_packed_sequence_extras():
    for lib in (torch, tc):
        g = lib.Generator()
        g.manual_seed(3)
        lib.rand(2, generator=g)
        twin = g.clone_state()
        assert twin is not g and twin.initial_seed() == 3
        assert lib.rand(3, generator=g).tolist() == lib.rand(3, generator=twin).tolist()
        for call in (g.get_offset, lambda: g.set_offset(5)):
            with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
                call()
        with pytest.raises(NotImplementedError, match="graphsafe_get_state is not supported in this Generator"):
            g.graphsafe_get_state()
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(3), lib.ones(2)])
        assert [str(p.data.dtype).split(".")[-1] for p in (packed.byte(), packed.char(), packed.short())] == \
            ["uint8", "int8", "int16"]
        assert packed.is_pinned() is False and packed.short().batch_sizes.tolist() == [2, 2, 1]


def test_torch_keyword_names():
    """Keywords torch's schemas name: *_like pin_memory, input2/input3, sections/indices, mat1/mat2..., from."""
    results = []
    for lib in (torch, tc):
        x = lib.tensor(np.arange(16.0).reshape(4, 4))
        spd = lib.tensor(np.array([[4.0, 1.0], [1.0, 3.0]]))
        m = lib.tensor(np.random.default_rng(2).standard_normal((4, 4)))  # well conditioned, for geqrf
        calls = [lambda: lib.zeros_like(x, pin_memory=False), lambda: lib.rand_like(x, pin_memory=False).shape,
                 lambda: lib.full_like(x, 2, pin_memory=False),
                 lambda: lib.cholesky_solve(lib.tensor([[1.0], [2.0]], dtype=lib.float64),
                                            input2=lib.linalg.cholesky(spd)),
                 lambda: lib.hsplit(x, sections=2), lambda: lib.hsplit(x, indices=[1]), lambda: lib.vsplit(x, [1, 3]),
                 lambda: x.clone().addmm_(mat1=x, mat2=x), lambda: x.clone().addmm_(x, mat2=x, beta=2),
                 lambda: lib.ones(4, dtype=x.dtype).addmv_(mat=x, vec=lib.ones(4, dtype=x.dtype)),
                 lambda: x[None].clone().baddbmm_(batch1=x[None], batch2=x[None]),
                 lambda: x.clone().addbmm_(batch1=x[None], batch2=x[None], alpha=0.5),
                 lambda: lib.result_type(tensor=x, other=1), lambda: lib.orgqr(m, input2=lib.geqrf(m)[1]),
                 lambda: lib.ormqr(m, input2=lib.geqrf(m)[1], input3=x), lambda: x[:1].expand(4, 4, implicit=False),
                 lambda: bool((x.clone().uniform_(**{"from": 2, "to": 3}) >= 2).all()),
                 lambda: bool((x.clone().random_(**{"from": 5, "to": 6}) == 5).all())]
        seen = []
        for call in calls:
            r = call()
            items = r if isinstance(r, tuple) else (r,)
            seen.append([np.round(i.numpy(), 4).tolist() if hasattr(i, "numpy") else str(i).split(".")[-1]
                         for i in items])
        results.append(seen)
    assert results[1] == results[0]


def test_removed_linalg_names_keep_torch_signatures():
    import inspect
    for name in ("lstsq", "solve", "symeig"):
        assert list(inspect.signature(getattr(tc, name)).parameters)[0] == "input"
        with pytest.raises(RuntimeError, match="This function was deprecated since version 1.9 and is now removed"):
            getattr(tc, name)(input=tc.ones(2, 2), **({} if name == "symeig" else {"A": tc.ones(2, 2)}))
    assert inspect.signature(tc.nn.init.orthogonal_).parameters["gain"].default == \
        inspect.signature(torch.nn.init.orthogonal_).parameters["gain"].default


@pytest.mark.parametrize("indices,offsets", [([1, 2, 4, 5], [0, 3, 2]), ([1, 2, 40], [0]), ([1, -1, 4], [0]),
                                             ([1, 2, 4, 5], [1, 3])])
def test_functional_embedding_bag_errors_as_torch(indices, offsets):
    w = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    messages = []
    for lib in (torch, tc):
        with pytest.raises(RuntimeError) as err:
            lib.nn.functional.embedding_bag(lib.tensor(indices), lib.tensor(w), lib.tensor(offsets), mode="sum")
        messages.append(str(err.value).split("\n")[0])
    assert messages[1] == messages[0]
