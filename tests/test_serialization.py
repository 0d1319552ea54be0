"""tidal.save / tidal.load against real torch: both directions, every dtype, views, state dicts,
restricted unpickling, atomic saves."""
import io
import os
import pickle
import stat
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as tnn
import tidal.optim as toptim
from tidal import serialization as S

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 4), (2, 0, 3)]


def _values(rng, shape, name):
    if name == "bool":
        return rng.random(shape) > 0.5
    if name in ("uint8",):
        return rng.integers(0, 255, shape)
    if name.startswith("int"):
        return rng.integers(-100, 100, shape)
    return rng.standard_normal(shape) * 10


def _tidal_tensor(arr, name):
    return tidal.tensor(np.asarray(arr, np.float32) if name == "bfloat16" else arr, dtype=getattr(tidal, name))


def _as_np(t):
    """Values of a tidal or torch tensor as NumPy (bfloat16 widened), for exact comparison."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return (t.detach().float() if t.dtype == tidal.bfloat16 else t.detach()).numpy()


def _same(tidal_t, torch_t):
    assert str(tidal_t.dtype).split(".")[1] == str(torch_t.dtype).split(".")[1]
    assert tuple(tidal_t.shape) == tuple(torch_t.shape)
    np.testing.assert_array_equal(_as_np(tidal_t), _as_np(torch_t))


def _views(t):
    """The tensor, a transposed view and a sliced view with an offset (when the shape allows)."""
    out = [t]
    if t.dim() >= 2:
        out.append(t.transpose(0, 1))
        out.append(t[1:, ::2])
    elif t.dim() == 1 and t.shape[0] > 2:
        out.append(t[1::2])
    return out


# -- tidal.save -> torch.load ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", DTYPES)
def test_tidal_to_torch_every_dtype(tmp_path, rng, name):
    tensors = [v for shape in SHAPES for v in _views(_tidal_tensor(_values(rng, shape, name), name))]
    S.save(tensors, tmp_path / "x.pt")
    loaded = torch.load(tmp_path / "x.pt", weights_only=True)
    assert len(loaded) == len(tensors)
    for ours, theirs in zip(tensors, loaded):
        _same(ours, theirs)
        assert theirs.stride() == ours.stride() and theirs.storage_offset() == ours.storage_offset()


@pytest.mark.parametrize("name", DTYPES)
def test_torch_to_tidal_every_dtype(tmp_path, rng, name):
    base = [torch.from_numpy(np.asarray(_values(rng, s, name))).to(getattr(torch, name)) for s in SHAPES]
    tensors = [v for t in base for v in ([t] + ([t.t(), t[1:, ::2]] if t.dim() == 2 else []) +
                                         ([t[1::2]] if t.dim() == 1 and len(t) > 2 else []))]
    torch.save(tensors, tmp_path / "x.pt")
    loaded = S.load(tmp_path / "x.pt")
    for ours, theirs in zip(loaded, tensors):
        assert isinstance(ours, tidal.Tensor)
        _same(ours, theirs)
        assert ours.stride() == theirs.stride() and ours.storage_offset() == theirs.storage_offset()


def test_zero_dim_and_pending_work_are_saved(tmp_path):
    a = tidal.arange(6.0)
    b = (a * 2 + 1)[2]  # queued on the VM when saved
    S.save({"b": b, "s": tidal.tensor(7, dtype=tidal.int16)}, tmp_path / "x.pt")
    got = torch.load(tmp_path / "x.pt")
    assert got["b"].shape == () and got["b"].item() == 5.0
    assert got["s"].dtype == torch.int16 and got["s"].item() == 7


# -- shared storage -------------------------------------------------------------------------------------------
def test_views_share_storage_in_torch(tmp_path):
    x = tidal.arange(12.0).reshape(3, 4)
    S.save({"x": x, "row": x[1], "t": x.t(), "other": tidal.ones(2)}, tmp_path / "v.pt")
    got = torch.load(tmp_path / "v.pt")
    ptr = got["x"].untyped_storage().data_ptr()
    assert got["row"].untyped_storage().data_ptr() == ptr and got["t"].untyped_storage().data_ptr() == ptr
    assert got["other"].untyped_storage().data_ptr() != ptr
    assert got["row"].storage_offset() == 4
    got["x"][1, 0] = 100.0
    assert got["row"][0].item() == 100.0 and got["t"][0, 1].item() == 100.0
    with zipfile.ZipFile(tmp_path / "v.pt") as zf:  # one record per storage
        assert sorted(n for n in zf.namelist() if "/data/" in n) == ["v/data/0", "v/data/1"]


def test_views_share_storage_in_tidal(tmp_path):
    x = torch.arange(12.0).reshape(3, 4)
    torch.save({"x": x, "row": x[1], "t": x.t()}, tmp_path / "v.pt")
    got = S.load(tmp_path / "v.pt")
    assert got["x"].untyped_storage_id() == got["row"].untyped_storage_id() == got["t"].untyped_storage_id()
    got["x"][1, 0] = 100.0
    assert got["row"][0].item() == 100.0 and got["t"][0, 1].item() == 100.0


def test_same_tensor_twice_is_one_object(tmp_path):
    x = tidal.ones(3)
    S.save([x, x], tmp_path / "a.pt")
    a, b = torch.load(tmp_path / "a.pt")
    assert a is b
    torch.save([a, a], tmp_path / "b.pt")
    c, d = S.load(tmp_path / "b.pt")
    assert c is d


# -- state dicts and checkpoints ----------------------------------------------------------------------------------
def test_module_state_dict_both_ways(tmp_path):
    ours = tnn.Linear(4, 3)
    S.save(ours.state_dict(), tmp_path / "ours.pt")
    theirs = torch.nn.Linear(4, 3)
    loaded = torch.load(tmp_path / "ours.pt", weights_only=True)
    assert isinstance(loaded, OrderedDict) and list(loaded) == ["weight", "bias"]
    theirs.load_state_dict(loaded)
    np.testing.assert_array_equal(theirs.weight.detach().numpy(), ours.weight.detach().numpy())

    theirs = torch.nn.Linear(4, 3)
    torch.save(theirs.state_dict(), tmp_path / "theirs.pt")
    loaded = S.load(tmp_path / "theirs.pt")
    assert isinstance(loaded, OrderedDict) and loaded._metadata == {"": {"version": 1}}
    ours.load_state_dict(loaded)
    np.testing.assert_array_equal(ours.bias.detach().numpy(), theirs.bias.detach().numpy())


def test_parameters_round_trip(tmp_path):
    p = tnn.Parameter(tidal.randn(2, 3))
    S.save({"p": p}, tmp_path / "p.pt")
    got = torch.load(tmp_path / "p.pt", weights_only=True)["p"]
    assert isinstance(got, torch.nn.Parameter) and got.requires_grad
    torch.save({"p": got, "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False)}, tmp_path / "q.pt")
    back = S.load(tmp_path / "q.pt")
    assert isinstance(back["p"], tnn.Parameter) and back["p"].requires_grad
    assert isinstance(back["frozen"], tnn.Parameter) and not back["frozen"].requires_grad
    np.testing.assert_array_equal(back["p"].detach().numpy(), p.detach().numpy())


def test_requires_grad_and_tensor_attributes(tmp_path):
    x = tidal.ones(2, requires_grad=True)
    S.save(x, tmp_path / "x.pt")
    assert torch.load(tmp_path / "x.pt").requires_grad
    t = torch.ones(2)
    t.note = "kept"  # torch pickles this through _rebuild_from_type_v2
    torch.save(t, tmp_path / "t.pt")
    got = S.load(tmp_path / "t.pt")
    assert isinstance(got, tidal.Tensor) and got.note == "kept"


def _tidal_adam():
    model = tnn.Linear(3, 2)
    opt = toptim.Adam(model.parameters(), lr=0.01)
    model(tidal.ones(4, 3)).sum().backward()
    opt.step()
    return model, opt


def test_optimizer_state_dict_both_ways(tmp_path):
    _, ours = _tidal_adam()
    S.save(ours.state_dict(), tmp_path / "opt.pt")
    loaded = torch.load(tmp_path / "opt.pt", weights_only=True)
    group = loaded["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and group["params"] == [0, 1] and group["lr"] == 0.01
    for i in (0, 1):
        for key in ("exp_avg", "exp_avg_sq"):
            _same(ours.state_dict()["state"][i][key], loaded["state"][i][key])

    # torch's layout (as torch.optim.Adam writes it, with 'step' a 0-d float tensor) into a tidal optimizer
    theirs = {"state": {i: {"step": torch.tensor(1.0), "exp_avg": torch.full(s, 0.5), "exp_avg_sq": torch.full(s, 0.25)}
                        for i, s in enumerate([(2, 3), (2,)])},
              "param_groups": [dict(group, lr=0.5)]}
    torch.save(theirs, tmp_path / "topt.pt")
    got = S.load(tmp_path / "topt.pt")
    assert got["param_groups"] == theirs["param_groups"]
    _same(got["state"][1]["exp_avg_sq"], theirs["state"][1]["exp_avg_sq"])
    model, opt = _tidal_adam()
    opt.load_state_dict(got)
    assert opt.param_groups[0]["lr"] == 0.5
    np.testing.assert_array_equal(opt.state[model.weight]["exp_avg"].numpy(), np.full((2, 3), 0.5, np.float32))


def test_nested_checkpoint_both_ways(tmp_path):
    ours = {"epoch": 3, "loss": 0.125, "name": "run-1", "flags": [True, False, None], "pair": (1, "a"),
            "big": 2 ** 70, "neg": -5, "nan": float("nan"), "raw": b"\x00\xff", "set": {1, 2}, "c": 1 + 2j,
            "dtype": tidal.float16, "device": tidal.device("cpu"), "size": tidal.Size([2, 3]),
            "nested": {"a": [tidal.arange(3), {"b": tidal.zeros(2, 2, dtype=tidal.bfloat16)}], "empty": {}}}
    S.save(ours, tmp_path / "ck.pt")
    got = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert got["dtype"] is torch.float16 and got["device"] == torch.device("cpu") and got["size"] == torch.Size([2, 3])
    assert type(got["size"]) is torch.Size
    _same(ours["nested"]["a"][0], got["nested"]["a"][0])
    _same(ours["nested"]["a"][1]["b"], got["nested"]["a"][1]["b"])
    for key in ("epoch", "loss", "name", "flags", "pair", "big", "neg", "raw", "set", "c"):
        assert got[key] == ours[key] and type(got[key]) is type(ours[key])
    assert np.isnan(got["nan"])

    torch.save(got, tmp_path / "back.pt")
    back = S.load(tmp_path / "back.pt")
    assert back["dtype"] is tidal.float16 and back["device"] == tidal.device("cpu")
    assert type(back["size"]) is tidal.Size and back["size"] == (2, 3)
    for key in ("epoch", "loss", "name", "flags", "pair", "big", "neg", "raw", "set", "c"):
        assert back[key] == ours[key] and type(back[key]) is type(ours[key])
    _same(back["nested"]["a"][1]["b"], got["nested"]["a"][1]["b"])


def test_output_is_deterministic_and_aligned(tmp_path):
    obj = {"w": tidal.arange(10.0), "b": tidal.ones(3, dtype=tidal.int8)}
    (tmp_path / "again").mkdir()
    S.save(obj, tmp_path / "a.pt")
    S.save(obj, tmp_path / "again" / "a.pt")
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "again" / "a.pt").read_bytes()
    raw = (tmp_path / "a.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.pt") as zf:
        for info in zf.infolist():
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
            assert info.compress_type == zipfile.ZIP_STORED
    got = torch.load(tmp_path / "a.pt", mmap=True, weights_only=True)  # torch maps the aligned records
    np.testing.assert_array_equal(got["w"].numpy(), np.arange(10.0, dtype=np.float32))


# -- file objects, map_location, mmap ----------------------------------------------------------------------------
def test_file_objects(tmp_path):
    buf = io.BytesIO()
    S.save({"x": tidal.arange(4)}, buf)
    buf.seek(0)
    assert torch.load(buf)["x"].tolist() == [0, 1, 2, 3]
    buf = io.BytesIO()
    torch.save({"x": torch.arange(4)}, buf)
    buf.seek(0)
    assert S.load(buf)["x"].tolist() == [0, 1, 2, 3]

    class Stream(io.RawIOBase):  # read-only, not seekable
        def __init__(self, data):
            self._inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._inner.readinto(b)

    assert S.load(Stream(buf.getvalue()))["x"].tolist() == [0, 1, 2, 3]
    with open(tmp_path / "f.pt", "wb") as fp:
        S.save([1, tidal.ones(1)], fp)
    with open(tmp_path / "f.pt", "rb") as fp:
        assert S.load(fp)[0] == 1
    S.save("str path", str(tmp_path / "s.pt"))
    assert torch.load(str(tmp_path / "s.pt")) == "str path"


def _handmade(location="cpu", size=(3,), stride=(1,), offset=0, with_record=True) -> bytes:
    """A torch-format checkpoint {'w': tensor} over a 3-float storage, with the given geometry and location."""
    class Storage:
        pass

    class Placeholder:
        def __reduce__(self):
            return torch._utils._rebuild_tensor_v2, (storage, offset, size, stride, False, OrderedDict())

    storage = Storage()

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", location, 3) if obj is storage else None

    body = io.BytesIO()
    Pickler(body, protocol=2).dump({"w": Placeholder()})
    records = {"byteorder": b"little", "version": b"3\n"}
    if with_record:
        records["data/0"] = np.array([1, 2, 3], np.float32).tobytes()
    return _archive(body.getvalue(), records).getvalue()


def test_map_location():
    data = _handmade(location="cuda:0")
    assert torch.load(io.BytesIO(data), map_location="cpu")["w"].tolist() == [1, 2, 3]  # the file is valid
    with pytest.raises(RuntimeError, match=r"on a CUDA device but torch.cuda.is_available\(\) is False\. If you are "
                                           r"running on a CPU-only machine, please use torch.load with "
                                           r"map_location=torch.device\('cpu'\)"):
        S.load(io.BytesIO(data))  # torch's message
    for where in ("cpu", tidal.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage):
        got = S.load(io.BytesIO(data), map_location=where)["w"]
        assert got.device == tidal.device("cpu") and got.tolist() == [1, 2, 3]
    seen = []
    S.load(io.BytesIO(data), map_location=lambda storage, loc: seen.append((storage.dtype, loc)) or storage)
    assert seen == [(tidal.float32, "cuda:0")]
    with pytest.raises(TypeError, match="map_location"):
        S.load(io.BytesIO(data), map_location=3)


def test_mmap_load(tmp_path):
    x = torch.arange(100.0)
    torch.save({"x": x, "tail": x[90:]}, tmp_path / "m.pt")
    got = S.load(tmp_path / "m.pt", mmap=True)
    np.testing.assert_array_equal(got["x"].numpy(), x.numpy())
    got["x"][95] = -1.0  # copy-on-write: the view sees it, the file does not change
    assert got["tail"][5].item() == -1.0
    assert torch.load(tmp_path / "m.pt")["x"][95].item() == 95.0
    with pytest.raises(ValueError, match="file path"):
        S.load(io.BytesIO((tmp_path / "m.pt").read_bytes()), mmap=True)


# -- restricted loading ----------------------------------------------------------------------------------------
def _archive(pickled: bytes, records: dict | None = None) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", pickled)
        for name, data in (records or {}).items():
            zf.writestr(f"archive/{name}", data)
    out.seek(0)
    return out


def test_malicious_global_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    evil = (b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(f"touch {marker}")) +
            f"touch {marker}".encode() + b"\x85R.")
    refused = r"(?s)Weights only load failed.*Unsupported global: GLOBAL os\.system"
    with pytest.raises(pickle.UnpicklingError, match=refused):
        S.load(_archive(evil))
    assert not marker.exists()

    class Evil:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    buf = io.BytesIO()
    torch.save({"model": torch.ones(1), "payload": Evil()}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL posix\.system"):
        S.load(buf)
    assert not marker.exists()


def test_weights_only_false_and_safe_globals(tmp_path):
    obj = {"cfg": Config(3), "x": tidal.ones(2)}
    S.save(obj, tmp_path / "c.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL test_serialization\.Config"):
        S.load(tmp_path / "c.pt")
    got = S.load(tmp_path / "c.pt", weights_only=False)
    assert got["cfg"] == Config(3) and got["x"].tolist() == [1.0, 1.0]
    with S.safe_globals([Config]):
        assert S.load(tmp_path / "c.pt")["cfg"] == Config(3)
    with pytest.raises(pickle.UnpicklingError):
        S.load(tmp_path / "c.pt")
    S.add_safe_globals([Config])
    try:
        assert S.get_safe_globals() == [Config]
        assert S.load(tmp_path / "c.pt")["cfg"] == Config(3)
    finally:
        S.clear_safe_globals()


def test_torch_objects_load_as_their_tidal_equivalents(tmp_path):
    # tidal never imports torch: a torch module class in a checkpoint is the class `import torch` finds under
    # tidal.compat (more in tests/test_surface_s13.py); weights_only refuses it unless allowed, as torch does
    torch.save(torch.nn.Linear(2, 2), tmp_path / "module.pt")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear was not an allowed"):
        S.load(tmp_path / "module.pt", weights_only=True)
    assert type(S.load(tmp_path / "module.pt", weights_only=False)) is tidal.nn.Linear


def test_out_of_bounds_view_is_refused():
    assert S.load(io.BytesIO(_handmade(size=(2,), stride=(2,), offset=0)))["w"].tolist() == [1.0, 3.0]
    for size, stride, offset in (((2,), (2,), 1), ((4,), (1,), 0), ((1,), (1,), 3)):
        with pytest.raises(RuntimeError, match="does not fit in its storage of 3 elements"):
            S.load(io.BytesIO(_handmade(size=size, stride=stride, offset=offset)))
    with pytest.raises(pickle.UnpicklingError, match="non-negative"):
        S.load(io.BytesIO(_handmade(size=(2,), stride=(-1,), offset=2)))
    with pytest.raises(RuntimeError, match="no record"):
        S.load(io.BytesIO(_handmade(with_record=False)))


def test_not_a_checkpoint(tmp_path):
    # (session 11: torch's errors for files that are not checkpoints; the legacy format is read and written,
    # tests/test_programs_s11.py compares both with torch)
    (tmp_path / "junk.pt").write_bytes(b"not a zip at all")
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand 110"):
        S.load(tmp_path / "junk.pt")
    torch.save(torch.ones(1), tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    assert S.load(tmp_path / "legacy.pt").tolist() == [1.0]
    with pytest.raises(RuntimeError, match="failed locating file data.pkl"):
        S.load(io.BytesIO(_zip_without_pickle()))


def _zip_without_pickle() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/other", b"")
    return out.getvalue()


# -- atomic saves --------------------------------------------------------------------------------------------------
def _leftovers(directory) -> list:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_crash_mid_save_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    S.save({"v": tidal.tensor([1.0])}, path)
    before = path.read_bytes()
    calls = []
    real = S._add_record

    def crash_after_two(zf, name, data):
        calls.append(name)
        if len(calls) == 3:
            raise OSError("disk full")  # a crash with part of the archive already written
        real(zf, name, data)

    monkeypatch.setattr(S, "_add_record", crash_after_two)
    with pytest.raises(OSError, match="disk full"):
        S.save({"v": tidal.tensor([2.0]), "more": tidal.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert S.load(path)["v"].tolist() == [1.0]
    assert _leftovers(tmp_path) == []


def test_crash_in_writer_and_in_pickling_keep_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    S.save([1], path)
    before = path.read_bytes()

    def half_then_die(fp, *args):
        fp.write(b"PK\x03\x04partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(S, "_write_archive", half_then_die)
    with pytest.raises(KeyboardInterrupt):
        S.save([2], path)
    monkeypatch.undo()
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        S.save({"f": lambda: 0}, path)  # cannot be pickled: the file is never opened
    assert path.read_bytes() == before and _leftovers(tmp_path) == []


def test_save_keeps_permissions_and_symlinks(tmp_path):
    target = tmp_path / "real.pt"
    S.save([1], target)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~umask
    os.chmod(target, 0o640)
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    S.save([2], link)
    assert link.is_symlink() and S.load(target) == [2]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        S.save([1], tmp_path / "missing" / "x.pt")


class Config:
    """A user class, for weights_only=False and safe-globals tests."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Config) and other.n == self.n
