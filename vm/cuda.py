"""The CUDA backend: device memory, strided device arrays over blobs, host copies, and
elementwise programs run as generated CUDA kernels (vm/codegen_cuda.py).

Memory comes from CuPy's pool when CuPy is importable, else from numba device arrays; under
numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) blobs are simulated device arrays, so the
whole path runs without a GPU. Nothing is imported until a program first asks for `cuda`
(`register()`, called by the backend registry in vm/__init__.py): `import tidal` stays light.

Every kernel and copy goes to the default CUDA stream, so device work runs in the VM's
order; host reads copy synchronously on that stream.
"""
from __future__ import annotations

import math

import numpy as np

from . import codegen, codegen_cuda, machine

_runtime = None


class _Runtime:
    """numba.cuda (real or simulated), CuPy when present, and the device array type in use."""

    def __init__(self):
        if not hasattr(np, "row_stack"):
            # numba-cuda (0.2x) registers an implementation for np.row_stack when it first compiles,
            # and NumPy 2.5 removed that alias of vstack: without it no kernel compiles at all
            np.row_stack = np.vstack
        from numba import cuda
        from numba.core import config
        self.cuda = cuda
        self.simulated = bool(config.ENABLE_CUDASIM)
        self.cupy = None
        if self.simulated:
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as array_type
        else:
            from numba.cuda.cudadrv.devicearray import DeviceNDArray as array_type
            try:
                import cupy
                self.cupy = cupy
            except ImportError:
                pass
        self.array_type = array_type


def runtime() -> _Runtime:
    """The CUDA runtime, imported on first call."""
    global _runtime
    if _runtime is None:
        _runtime = _Runtime()
    return _runtime


def available() -> bool:
    """Whether a CUDA device, or numba's simulator, can run kernels (imports numba.cuda)."""
    try:
        return bool(runtime().cuda.is_available())
    except ImportError:
        return False


def register() -> bool:
    """Register the `cuda` backend if a device (or the simulator) is there; whether it is."""
    if "cuda" in machine._backends:
        return True
    if not available():
        return False
    codegen.device_runners[runtime().array_type] = run_elementwise
    machine.register_backend("cuda", CudaBackend)
    return True


class CudaBackend:
    """Memory for `cuda:0`: raw buffers are uint8 device arrays; views become strided arrays."""

    small_bytes = -1  # every blob from the caching allocator (CuPy's pool): none is the backend's own

    def __init__(self, device):
        if (device.index or 0) != 0:
            raise NotImplementedError(f"{device}: only cuda:0 is supported by tidal's CUDA backend so far")
        self.device = device
        self.rt = runtime()

    def raw_alloc(self, nbytes: int):
        """A fresh uninitialised device buffer (CuPy's pool when available)."""
        if self.rt.cupy is not None:
            return self.rt.cupy.empty(nbytes, self.rt.cupy.uint8)
        return self.rt.cuda.device_array(nbytes, np.uint8)

    @staticmethod
    def size_of(buf) -> int:
        """The byte size of a buffer."""
        return buf.nbytes

    def array(self, v):
        """The device array a view describes (cached on the view). A 0-d CPU tensor used as an
        operand (PyTorch allows it) comes back as a host array: the runner passes its value."""
        arr = v.array
        if arr is not None:
            return arr
        if v.blob.vm.backend is not self:
            writer = v.blob.writer
            if writer is not None:
                writer[0].wait(writer[1])
            return v.blob.vm.backend.array(v)
        arr = v.array = _strided(self.rt, v.blob.data, v.shape, tuple(s * v.dtype.itemsize for s in v.strides),
                                 v.offset * v.dtype.itemsize, v.dtype)
        return arr

    # -- host copies ------------------------------------------------------------------------
    def to_host(self, v) -> np.ndarray:
        """A host copy of the view's values (C-contiguous)."""
        if 0 in v.shape:
            return np.empty(v.shape, v.dtype)
        item = v.dtype.itemsize
        span = 1 + sum((n - 1) * s for n, s in zip(v.shape, v.strides))
        raw = self._read_bytes(v.blob.data, v.offset * item, span * item)
        return np.ndarray(v.shape, v.dtype, raw, 0, tuple(s * item for s in v.strides)).copy()

    def copy_from_host(self, v, host: np.ndarray) -> None:
        """Write host values into a contiguous view (a fresh tensor's memory)."""
        if 0 in v.shape:
            return
        raw = np.ascontiguousarray(host, v.dtype).reshape(-1).view(np.uint8)
        start = v.offset * v.dtype.itemsize
        buf = v.blob.data
        if self.rt.simulated:
            buf._ary[start:start + raw.size] = raw
        elif self.rt.cupy is not None:
            buf[start:start + raw.size].set(raw)
        else:
            buf[start:start + raw.size].copy_to_device(raw)

    def _read_bytes(self, buf, start: int, nbytes: int) -> np.ndarray:
        if self.rt.simulated:
            return buf._ary[start:start + nbytes].copy()
        if self.rt.cupy is not None:
            return self.rt.cupy.asnumpy(buf[start:start + nbytes])
        return buf[start:start + nbytes].copy_to_host()


def _strided(rt: _Runtime, owner, shape: tuple, strides: tuple, byte_offset: int, dtype):
    """A device array over `owner`'s memory (strides and offset in bytes; 0 strides broadcast)."""
    if 0 in shape:
        return rt.cuda.device_array(shape, dtype)
    if rt.simulated:  # simulated device arrays wrap host arrays
        return rt.array_type(np.ndarray(shape, dtype, owner._ary, byte_offset, strides))
    iface = owner.__cuda_array_interface__
    desc = {"shape": tuple(shape), "strides": tuple(strides), "typestr": np.dtype(dtype).str,
            "data": (iface["data"][0] + byte_offset, False), "version": 3}
    return rt.cuda.from_cuda_array_interface(desc, owner=owner, sync=False)


def _broadcast(rt: _Runtime, arr, shape: tuple):
    """`arr` seen with `shape` (NumPy broadcasting: missing and size-1 dimensions get stride 0)."""
    if rt.simulated:
        return rt.array_type(np.broadcast_to(arr._ary, shape))
    lead = len(shape) - len(arr.shape)
    strides = (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                                  for n, m, s in zip(arr.shape, shape[lead:], arr.strides))
    return _strided(rt, arr, shape, strides, 0, arr.dtype)


def _is_16bit_float(dtype) -> bool:
    return dtype.kind == "V" or (dtype.kind == "f" and dtype.itemsize == 2)


def run_elementwise(prog: codegen.Program, ins: list, outs: list) -> None:
    """Run an elementwise program on device arrays: flat when every operand is contiguous with
    the output's shape, otherwise over the output's shape with inputs broadcast by strides."""
    rt = runtime()
    if any(_is_16bit_float(a.dtype) for a in outs + [x for x in ins if isinstance(x, rt.array_type)]):
        raise NotImplementedError("elementwise kernels for float16/bfloat16 are not implemented on cuda yet; "
                                  "convert to float32 first")
    shape = tuple(outs[0].shape)
    args, in_is_array = [], []
    flat = all(o.is_c_contiguous() for o in outs)
    for x in ins:
        if isinstance(x, np.ndarray):  # a 0-d CPU tensor: its value
            x = x[()]
        is_array = isinstance(x, rt.array_type)
        if is_array and (tuple(x.shape) != shape or not x.is_c_contiguous()):
            flat = False
        args.append(x)
        in_is_array.append(is_array)
    numel = math.prod(shape)
    if flat:
        outs = [o.reshape(numel) for o in outs]
        args = [x.reshape(numel) if is_arr else x for x, is_arr in zip(args, in_is_array)]
    else:
        args = [_broadcast(rt, x, shape) if is_arr and tuple(x.shape) != shape else x
                for x, is_arr in zip(args, in_is_array)]
    codegen_cuda.launch(prog, outs, args, tuple(in_is_array), numel, rt.simulated)

