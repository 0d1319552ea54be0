"""Constraints: what values a parameter or a sample may take, as torch.distributions.constraints.

`constraint.check(value)` returns a boolean tensor over the batch (event dimensions reduced away).
"""
from __future__ import annotations

from .. import ops
from ..ops.linalg import namespace as linalg
from ..tensor import dtype as dt
from .utils import eps_of

__all__ = ["Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent",
           "dependent_property", "greater_than", "greater_than_eq",
           "independent", "integer_interval", "interval", "half_open_interval", "is_dependent", "less_than",
           "lower_cholesky", "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer", "one_hot",
           "positive", "positive_semidefinite", "positive_definite", "positive_integer", "real", "real_vector",
           "simplex", "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """A region of values; `is_discrete` and `event_dim` describe it, `check` tests values against it."""

    is_discrete = False
    event_dim = 0
    _shown: tuple = ()  # the attributes repr() lists, as name=value

    def check(self, value):
        """A boolean tensor: whether each event of `value` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)}" for name in self._shown)
        return f"{self.__class__.__name__[1:]}({shown})"


class _Dependent(Constraint):
    """A constraint that depends on other parameters (its check cannot run)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> "_Dependent":
        """A dependent constraint with these static attributes."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether `constraint` is a dependent constraint (an instance or the class)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint computed from the distribution's parameters."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        """Decorate `fn` (for `@dependent_property(is_discrete=..., event_dim=...)`)."""
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` with its `reinterpreted_batch_ndims` rightmost batch dimensions made event dimensions."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        assert isinstance(base_constraint, Constraint)
        assert isinstance(reinterpreted_batch_ndims, int) and reinterpreted_batch_ndims >= 0
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim() - self.reinterpreted_batch_ndims]) + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    """Values 0 and 1."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        is_normalized = value.sum(-1).eq(1)
        return is_boolean.all(-1) & is_normalized


class _IntegerInterval(Constraint):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True
    _shown = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)


class _IntegerLessThan(Constraint):
    """Integers <= upper_bound."""

    is_discrete = True
    _shown = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)


class _IntegerGreaterThan(Constraint):
    """Integers >= lower_bound."""

    is_discrete = True
    _shown = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Real(Constraint):
    """The extended real line (anything but NaN)."""

    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    """Reals > lower_bound."""

    _shown = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound < value


class _GreaterThanEq(_GreaterThan):
    """Reals >= lower_bound."""

    def check(self, value):
        return self.lower_bound <= value


class _LessThan(Constraint):
    """Reals < upper_bound."""

    _shown = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound


class _Interval(Constraint):
    """Reals in [lower_bound, upper_bound]."""

    _shown = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Interval):
    """Reals in [lower_bound, upper_bound)."""

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    """Nonnegative vectors that sum to 1 over the last dimension."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer vectors whose sum is at most upper_bound."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        lower_triangular = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return lower_triangular & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower triangular, positive diagonal, unit-norm rows."""

    event_dim = 2

    def check(self, value):
        tol = eps_of(value.dtype) * value.size(-1) * 10  # 10 is a fudge factor
        row_norm = linalg.vector_norm(value.detach(), dim=-1)
        unit_row_norm = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class MixtureSameFamilyConstraint(Constraint):
    """A component support checked against every component of a MixtureSameFamily."""

    def __init__(self, base_constraint: Constraint):
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim

    def check(self, value):
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        num_dim_to_keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:num_dim_to_keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        return ops.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=dt.bool_,
                          device=value.device)


class _Symmetric(_Square):
    """Symmetric matrices (up to atol 1e-6)."""

    def check(self, value):
        square_check = super().check(value)
        if not square_check.all():
            return square_check
        return ops.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric positive semidefinite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return linalg.eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric positive definite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return linalg.eigvalsh(value).gt(0).all(-1)


class _Cat(Constraint):
    """Constraints applied to pieces of `dim` of lengths `lengths`, concatenated."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        assert len(self.lengths) == len(self.cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return ops.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraints applied to the slices of `dim`, stacked."""

    def __init__(self, cseq, dim: int = 0):
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        return ops.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
