"""The torch surface tidal.compat offers (tests/coverage_report.py), printed with every run."""
import io

import pytest
import torch

import tidal
import tidal.compat as compat
from coverage_report import _resolve, format_table, main, report, torch_surface

# Floors: issue 16's coverage targets (met); a namespace must not fall below them.
FLOORS = {"nn (modules)": 0.90, "nn.functional": 0.90, "optim (optimizers)": 0.90, "linalg": 0.90,
          "Tensor methods": 0.90, "torch functions": 0.80, "special": 1.0, "signal.windows": 1.0, "masked": 1.0,
          "distributions": 0.90}
CLASS_ROWS = ("nn (modules)", "optim (optimizers)", "optim.lr_scheduler")


@pytest.fixture(scope="module")
def rows():
    return report(torch, compat)


def test_table_is_printed(rows, capsys):
    table = format_table(rows, missing=True)
    with capsys.disabled():  # shown whatever pytest's capture setting
        print("\n" + table)
    assert {r.namespace for r in rows} == set(torch_surface(torch))
    for r in rows:
        assert r.torch_names, r.namespace
        assert set(r.present) <= set(r.torch_names)
        assert f"{len(r.present):4d} / {len(r.torch_names):4d}" in table


def test_floors(rows):
    by_name = {r.namespace: r for r in rows}
    for namespace, floor in FLOORS.items():
        assert by_name[namespace].fraction >= floor, (namespace, by_name[namespace].missing)


def test_present_names_are_the_same_kind(rows):
    """A name counted as present is a class where torch's is a class and callable where torch's is."""
    for r in rows:
        path = torch_surface(torch)[r.namespace][0]
        if path == "Tensor":
            continue
        ours, theirs = _resolve(compat, path), _resolve(torch, path)
        for name in r.present:
            mine, real = getattr(ours, name), getattr(theirs, name)
            assert isinstance(mine, type) == isinstance(real, type), (r.namespace, name)
            assert callable(mine), (r.namespace, name)
            if r.namespace in CLASS_ROWS:
                base = {"nn (modules)": tidal.nn.Module, "optim (optimizers)": tidal.optim.Optimizer}.get(r.namespace)
                assert base is None or issubclass(mine, base), (r.namespace, name)


def test_left_out_names():
    """Quantization, sparse layouts and backend internals are not counted; ordinary ops are."""
    functions = torch_surface(torch)["torch functions"][1]
    for name in ("quantize_per_tensor", "cudnn_convolution", "sparse_coo_tensor", "native_layer_norm",
                 "fbgemm_linear_int8_weight", "mkldnn_convolution", "q_scale"):
        assert name not in functions
    for name in ("add", "cov", "histogram", "slice_scatter"):
        assert name in functions
    methods = torch_surface(torch)["Tensor methods"][1]
    assert "to_sparse" not in methods and "int_repr" not in methods and "add_" in methods


def test_missing_lists_what_tidal_lacks(rows):
    for r in rows:
        ns = _resolve(compat, torch_surface(torch)[r.namespace][0])
        if r.namespace != "Tensor methods":
            for name in r.missing:
                assert ns is None or not hasattr(ns, name), (r.namespace, name)


def test_script_prints_the_table():
    buffer = io.StringIO()
    assert main(["--missing"], file=buffer) == 0
    out = buffer.getvalue()
    assert out.splitlines()[0].startswith("namespace") and "torch functions" in out
