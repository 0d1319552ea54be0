"""torch.distributions.transforms: every transform, gathered from the files that define them."""
from __future__ import annotations

from .transform import ComposeTransform, IndependentTransform, ReshapeTransform, Transform, identity_transform
from .transforms_elementwise import (AbsTransform, AffineTransform, ExpTransform, PowerTransform, SigmoidTransform,
                                     SoftplusTransform, TanhTransform)
from .transforms_vector import LowerCholeskyTransform, SoftmaxTransform, StickBreakingTransform

__all__ = ["AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "IndependentTransform",
           "LowerCholeskyTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform", "identity_transform"]
