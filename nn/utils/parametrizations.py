"""Ready-made parametrizations: weight_norm, spectral_norm and orthogonal (torch.nn.utils.parametrizations)."""
from __future__ import annotations


from ... import ops
from ...ops.linalg import namespace as linalg_ns
from ...autograd import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from ..modules import ConvTranspose1d
from ..modules import ConvTranspose2d
from ..modules import ConvTranspose3d
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of `v` over every dimension but `dim`, kept for broadcasting (-1: the whole norm)."""
    if dim == -1:
        return v.norm(pow)
    dims = [d for d in range(v.dim()) if d != dim]
    return v.norm(pow, dims, keepdim=True) if dims else v.abs() if pow else v


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """v scaled so its norm over every dimension but `dim` is g (torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` as magnitude (original0) times direction (original1)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)  # start from a good estimate of the singular vectors

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():  # the singular-vector estimates are state, updated in place, never differentiated
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ops.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ops.mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ops.vdot(u, ops.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide `module.<name>` by its largest singular value, estimated by power iteration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# -- orthogonal ------------------------------------------------------------------------------------
def _eye_like(x: Tensor, n: int) -> Tensor:
    return ops.eye(n, dtype=x.dtype, device=x.device)


class _OrthMaps:
    matrix_exp, cayley, householder = "matrix_exp", "cayley", "householder"


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.size(-2), x.size(-1)
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:
                x = ops.cat([x, x.new_zeros(*x.shape[:-2], n, n - k)], dim=-1)
            a = x - x.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = linalg_ns.matrix_exp(a)
            else:
                eye = _eye_like(a, n)
                q = linalg_ns.solve(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = linalg_ns.householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                             f"shape {q.shape}.")
        q_init = q
        n, k = q.size(-2), q.size(-1)
        transpose = n < k
        if transpose:
            q = q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            raise NotImplementedError("orthogonal(orthogonal_map='householder', use_trivialization=False) needs "
                                      "torch.geqrf (Householder reflectors of a QR), which tidal does not have")
        if n == k:
            if not _is_orthogonal(q):
                q = _make_orthogonal(q)
            else:
                q = q.clone()
        else:
            n_cols = ops.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
            q = _make_orthogonal(ops.cat([q, n_cols], dim=-1))
        self.base = q
        neg_id = ops.zeros_like(q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    eps = 10.0 * n * (2.220446049250313e-16 if q.dtype.name == "float64" else 1.1920928955078125e-07)
    return bool(ops.allclose(q.mH @ q, _eye_like(q, k), atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR decomposition with R's diagonal made non-negative (a unique orthogonal factor)."""
    q, r = linalg_ns.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` to an orthogonal (or unitary) matrix or batch of matrices."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    n, k = weight.size(-2), weight.size(-1)
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if n == k else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    if orthogonal_map == "householder" and not use_trivialization:
        raise NotImplementedError("orthogonal(orthogonal_map='householder', use_trivialization=False) needs "
                                  "torch.geqrf (Householder reflectors of a QR), which tidal does not have")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
