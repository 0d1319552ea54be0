"""Lazy modules: layers whose input size is read from the first input they see.

A lazy layer starts with UninitializedParameter/UninitializedBuffer placeholders; its first forward (or
load_state_dict, from the checkpoint's shapes) materializes them in place (the same objects, so an
optimizer built earlier keeps working), initializes them, and turns the module into its ordinary class
(LazyLinear becomes Linear), as PyTorch does."""
from __future__ import annotations

from ... import ops
from ...autograd import no_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


def _lazy_load_hook(module, state_dict: dict, prefix: str, *args) -> None:
    """Before loading, materialize placeholders with the shapes the checkpoint holds for them."""
    for group in (module._parameters, module._buffers):
        for name, value in group.items():
            incoming = state_dict.get(prefix + name)
            if is_lazy(value) and incoming is not None and not is_lazy(incoming):
                with no_grad():
                    value.materialize(tuple(incoming.shape))


class LazyModuleMixin:
    """Infers parameter shapes from the first input, then becomes `cls_to_become`."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(_lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is still a placeholder."""
        return any(is_lazy(v) for v in list(self._parameters.values()) + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialize and initialize the placeholders from the forward's inputs."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        self._initialize_hook.remove()
        self._load_hook.remove()
        del self._initialize_hook, self._load_hook
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        # as torch's: a placeholder goes in as itself (a detached copy would be a tensor of shape [0])
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars or is_lazy(param) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars or is_lazy(buf) else buf.detach()

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Linear's initialization, once the shapes are known."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """in_features from the input's last dim."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    """Lazy convolutions: in_channels from the input's channel dim."""

    def _lazy_setup(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """The convolution's initialization, once the shapes are known."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """in_channels from dim 1 (batched) or 0 (unbatched) of the input."""
        if not self.has_uninitialized_params():
            return
        spatial = self._dims
        if input.dim() not in (spatial + 1, spatial + 2):
            raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        self.in_channels = input.shape[1] if input.dim() == spatial + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(base: type, transposed: bool) -> type:
    """The lazy twin of a convolution class: the same arguments without in_channels."""
    if transposed:
        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                     bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
            LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                                     padding_mode)
            self._lazy_setup(out_channels, bias, device, dtype)
    else:
        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                     bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
            LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
            self._lazy_setup(out_channels, bias, device, dtype)
    name = "Lazy" + base.__name__
    return type(name, (_LazyConvMixin, base), {"__init__": __init__, "cls_to_become": base,
                                               "__doc__": f"{base.__name__} whose in_channels is read from the "
                                                          "first input.", "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d, False)
LazyConv2d = _lazy_conv(Conv2d, False)
LazyConv3d = _lazy_conv(Conv3d, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, True)


class _LazyNormMixin(LazyModuleMixin):
    """Lazy batch and instance norms: num_features from the input's channel dim."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, affine, track_running_stats, bias=bias)
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ops.tensor(0, dtype=dt.int64, device=device)

    def reset_parameters(self) -> None:
        """The norm's initialization, once the shapes are known."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """num_features from dim 1 of the input (dim 0 of an unbatched instance-norm input)."""
        if not self.has_uninitialized_params():
            return
        unbatched = getattr(self, "_unbatched_dims", None) == input.dim()
        self.num_features = input.shape[0] if unbatched else input.shape[1]
        with no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                value = getattr(self, name)
                if is_lazy(value):
                    value.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(base: type, unbatched_dims: int | None) -> type:
    return type("Lazy" + base.__name__, (_LazyNormMixin, base),
                {"cls_to_become": base, "_unbatched_dims": unbatched_dims, "__module__": __name__,
                 "__doc__": f"{base.__name__} whose num_features is read from the first input."})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, None)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, None)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, None)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, 2)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, 3)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, 4)
