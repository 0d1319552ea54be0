"""How much of torch's public surface `tidal.compat` offers, namespace by namespace.

Run as a script (`python tests/coverage_report.py [--missing]`) or through tests/test_coverage.py.
Counts names of the installed torch against the same names on tidal.compat. Left out, as not part
of what a PyTorch script on tidal can use: quantization, sparse layouts, backend internals (cuDNN,
MIOpen, MKL-DNN, FBGEMM, native_* kernels, autocast bookkeeping, JIT/IR plumbing) and typing
re-exports. Each row lists the names it leaves out by rule, so the rules stay inspectable.
"""
from __future__ import annotations

import inspect
import re
import sys
import types
import warnings
from dataclasses import dataclass, field

# Names that are no part of a user-visible API, by namespace-independent rule.
_QUANT = re.compile(r"^(q_|quantize|quantized|dequantize|fake_quantize|int_repr|qscheme|choose_qparams|"
                    r"fused_moving_avg_obs_fake_quant|empty_quantized|fused_obs)")
_SPARSE = re.compile(r"(^sparse|sparse_|^to_sparse|^to_mkldnn|indices_copy$|^values_copy$|^(c?col|crow|row)_indices$"
                     r"|^(hspmm|smm|dsmm|hsmm|saddmm|sspaddmm|coalesce|is_coalesced|indices|values|nnz|dense_dim|"
                     r"sparse_dim|to_dense|is_sparse|is_sparse_csr|resize_as_sparse_|_nnz)$)")
_BACKEND = re.compile(r"^(cudnn_|miopen_|mkldnn_|fbgemm_|native_|is_vulkan|vitals|read_vitals|set_vital|"
                      r"autocast_|get_autocast|set_autocast|is_autocast|clear_autocast|import_ir_module|parse_ir|"
                      r"parse_schema|parse_type_comment|merge_type_from_type_comment|compiled_with_cxx11_abi|"
                      r"classproperty|get_file_path|prepare_multiprocessing_environment|profiler_|"
                      r"batch_norm_(backward|elemt|gather|stats|update)|unsafe_|is_mkldnn|is_xla|is_ipu|is_mtia|"
                      r"is_maia|is_xpu|is_mps|is_hpu|is_meta|is_quantized|is_nested|nested_|is_vulkan|"
                      r"share_memory_|is_shared|storage|untyped_storage|data_ptr|element_size|record_stream|"
                      r"register_post_accumulate|module_load|fork|wait|sym_|lazy_|hash_tensor|init_num_threads|"
                      r"set_flush_denormal|segment_reduce|get_device_module|from_file|is_distributed|"
                      r"thread_safe_generator|"
                      r"unify_type_list|has_torch_function|handle_torch_function|boolean_dispatch|"
                      r"assert_int_or_pair|ipu$|xpu$|mtia$)")
_EXCLUDE = (_QUANT, _SPARSE, _BACKEND)


def _left_out(name: str) -> bool:
    return name.startswith("_") or any(rule.search(name) for rule in _EXCLUDE)


def _is_reexport(value) -> bool:
    """typing names, plain modules and the like that a namespace merely imports."""
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, types.ModuleType) or module.split(".")[0] in ("typing", "typing_extensions",
                                                                            "builtins", "collections", "enum",
                                                                            "functools", "math", "warnings")


@dataclass
class Row:
    """One namespace: the torch names counted and those tidal has."""

    namespace: str
    torch_names: list
    present: list = field(default_factory=list)

    @property
    def missing(self) -> list:
        have = set(self.present)
        return [n for n in self.torch_names if n not in have]

    @property
    def fraction(self) -> float:
        return len(self.present) / len(self.torch_names) if self.torch_names else 1.0


def _functions(module) -> list:
    names = []
    for name in dir(module):
        if _left_out(name):
            continue
        value = getattr(module, name)
        if callable(value) and not isinstance(value, type) and not _is_reexport(value):
            names.append(name)
    return names


def _subclasses(module, base) -> list:
    return [name for name in dir(module) if not _left_out(name) and isinstance(getattr(module, name), type)
            and issubclass(getattr(module, name), base) and getattr(module, name) is not base]


def _resolve(root, path: str):
    """tidal.compat.<path>, or None where any step is missing."""
    obj = root
    for part in path.split(".") if path else ():
        try:
            obj = getattr(obj, part)
        except (AttributeError, ImportError):
            return None
    return obj


def _has(namespaces: tuple, name: str) -> bool:
    for namespace in namespaces:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if namespace is not None and hasattr(namespace, name):
                    return True
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is absent
            pass
    return False


def torch_surface(torch) -> dict:
    """namespace path (under torch) -> the public names counted there."""
    import torch.distributions
    import torch.masked
    import torch.signal.windows
    import torch.special
    import torch.fft
    import torch.nn.functional
    import torch.optim.lr_scheduler

    tensor_methods = [n for n in dir(torch.Tensor) if not _left_out(n) and not n.startswith("__")]
    functional = _functions(torch.nn.functional)
    surface = {
        "nn (modules)": ("nn", _subclasses(torch.nn, torch.nn.Module)),
        "nn.functional": ("nn.functional", functional),
        "nn.init": ("nn.init", _functions(torch.nn.init)),
        "optim (optimizers)": ("optim", _subclasses(torch.optim, torch.optim.Optimizer)),
        "optim.lr_scheduler": ("optim.lr_scheduler",
                               _subclasses(torch.optim.lr_scheduler, torch.optim.lr_scheduler.LRScheduler)),
        "linalg": ("linalg", _functions(torch.linalg)),
        "Tensor methods": ("Tensor", tensor_methods),
        "torch functions": ("", [n for n in _functions(torch) if not n.startswith("is_autocast")]),
        "special": ("special", _functions(torch.special)),
        "fft": ("fft", _functions(torch.fft)),
        "signal.windows": ("signal.windows", _functions(torch.signal.windows)),
        "masked": ("masked", [n for n in _functions(torch.masked) if n not in ("as_masked_tensor", "masked_tensor")]),
        "distributions": ("distributions", _subclasses(torch.distributions, torch.distributions.Distribution)
                          + ["kl_divergence", "register_kl"]),
    }
    return {label: (path, sorted(set(names))) for label, (path, names) in surface.items()}


def report(torch=None, compat=None) -> list:
    """The rows: every counted torch name, and those tidal.compat has."""
    if torch is None:
        import torch
    if compat is None:
        import tidal.compat as compat
    rows = []
    for label, (path, names) in torch_surface(torch).items():
        namespaces = (_resolve(compat, path),)
        if path == "Tensor":  # instance attributes (grad, grad_fn...) count too
            namespaces += (compat.zeros(2, 2),)
        rows.append(Row(label, names, [n for n in names if _has(namespaces, n)]))
    return rows


def format_table(rows: list, missing: bool = False) -> str:
    """The rows as a text table; with `missing`, the names each namespace lacks."""
    width = max(len(r.namespace) for r in rows)
    lines = [f"{'namespace'.ljust(width)}  tidal / torch", "-" * (width + 22)]
    for r in rows:
        lines.append(f"{r.namespace.ljust(width)}  {len(r.present):4d} / {len(r.torch_names):4d}  "
                     f"{100 * r.fraction:5.1f}%")
    if missing:
        for r in rows:
            if r.missing:
                lines.append(f"\n{r.namespace} missing ({len(r.missing)}): " + ", ".join(r.missing))
    return "\n".join(lines)


def main(argv: list, file=None) -> int:
    """Print the table (and the missing names with --missing) to `file` (standard output by default)."""
    print(format_table(report(), missing="--missing" in argv), file=sys.stdout if file is None else file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
