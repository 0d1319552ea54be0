"""torch.distributions.transforms: every transform, gathered from the files that define them."""
from __future__ import annotations

from .transform import (CatTransform, ComposeTransform, IndependentTransform, ReshapeTransform, StackTransform,
                        Transform, identity_transform)
from .transforms_elementwise import (AbsTransform, AffineTransform, ExpTransform, PowerTransform, SigmoidTransform,
                                     SoftplusTransform, TanhTransform)
from .transforms_vector import (CorrCholeskyTransform, CumulativeDistributionTransform, LowerCholeskyTransform,
                                PositiveDefiniteTransform, SoftmaxTransform, StickBreakingTransform)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform"]
