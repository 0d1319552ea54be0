"""tidal.compat: the torch-shaped namespace over tidal.

`import tidal.compat as torch` gives every name of `tidal` plus the torch names that differ:
finfo/iinfo, thread and determinism knobs, `compile`, the legacy typed constructors, and the
submodules cuda, amp, backends, distributed, testing, onnx, jit. `install()` makes
`import torch` itself resolve here; `python -m tidal.compat script.py` runs a script so.
"""
from __future__ import annotations

import math as _math
import sys as _sys

import tidal as _tidal

from .. import optim, utils
from . import amp, autograd, backends, cuda, distributed, jit, nn, onnx, testing, version
from . import accelerator, cpu
from . import __config__, __future__  # torch.__config__ (build and threads), torch.__future__ (conversion switches)
from .. import func
from . import multiprocessing, random
from . import fft, hub, masked, nested, overrides, profiler, signal, sparse, special
overrides.register_namespace(_sys.modules[__name__])  # torch.overrides lists this namespace's functions
from . import functional, futures, linalg, quasirandom, types
from . import _dynamo, compiler
from . import library, mps, storage, xpu
from ._ops import ops  # torch.ops: custom operators' namespaces (tidal.ops, the op library, stays tidal's)
from .futures import Future
from ._aten_functional import *  # noqa: F401,F403 - torch.dropout, torch.layer_norm... (ATen signatures)
from ._aten_native import *  # noqa: F401,F403 - torch.native_layer_norm... (with their saved statistics)
from ._aten_nn import *  # noqa: F401,F403 - torch.convolution, torch.lstm, torch.gru_cell... (ATen signatures)
from ._control_flow import cond, while_loop
from ._foreach import *  # noqa: F401,F403 - torch._foreach_add_... (a per-tensor op on each of a list)
from ..distributions._sampling import binomial
from ._aten_native import (_native_batch_norm_legit, _softmax_backward_data,  # noqa: F401 - private names
                           _unsafe_masked_index, _unsafe_masked_index_put_accumulate)  # torch exposes
from ..ops.indexing.index_reduction import segment_reduce as _segment_reduce  # noqa: F401 - torch's private spelling
from ..ops.movement.splits import _chunk_cat  # noqa: F401 - a private name torch exposes
from ..ops.linalg.scaled_mm import _scaled_mm  # noqa: F401 - a private name torch exposes
from ..func import vmap
from ..utils import benchmark as _benchmark, checkpoint as _checkpoint  # noqa: F401 - torch.utils.<name> attributes
from ._importer import install, is_installed, uninstall
from ._info import finfo, iinfo
from ..tensor.layout import (channels_last, channels_last_3d, contiguous_format, jagged, layout, memory_format,
                      preserve_format, sparse_coo, strided)
from ._legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
                      IntTensor, LongTensor, ShortTensor)
from ._mirror import mirror as _mirror
from ._runtime import (are_deterministic_algorithms_enabled, compile, get_default_device,
                       get_float32_matmul_precision, get_num_interop_threads, get_num_threads, is_complex,
                       is_deterministic_algorithms_warn_only_enabled, is_floating_point, is_storage,
                       set_default_device, set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
                       typename, use_deterministic_algorithms)
from ._runtime import (get_deterministic_debug_mode, get_device, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                       is_inference_mode_enabled, is_warn_always_enabled, set_anomaly_enabled,
                       set_default_tensor_type, set_deterministic_debug_mode, set_warn_always)
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled
from .torch_version import __version__
from . import torch_version
from ._errors import AcceleratorError, OutOfMemoryError
from ._streams import Event, Stream

pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
legacy_contiguous_format = contiguous_format  # torch's alias of the same token
# what tidal's build offers, as torch's flags report its own: LAPACK (NumPy's) and the FFTs yes, MKL no
has_lapack, has_spectral, has_mkl, has_openmp = True, True, backends.mkl.is_available(), backends.openmp.is_available()
newaxis = None

_mirrored = _mirror(globals(), _tidal)


def _assert(condition, message: str) -> None:
    """torch._assert: raise AssertionError(message) unless `condition` (symbolic tracing records it)."""
    if not condition:
        raise AssertionError(message)


def __getattr__(name: str):
    if name == "fx":  # torch.fx: loaded on first use (tidal.fx)
        from .. import fx  # fx loads on first use (keeps import light)
        return fx
    if name == "export":  # torch.export: loaded on first use (compat/export.py over tidal.fx.export)
        import importlib
        return importlib.import_module(".export", __name__)  # torch.export (fx) on first use
    return _mirrored(name)

__all__ = sorted(name for name in globals() if not name.startswith("_") and name != "annotations")
