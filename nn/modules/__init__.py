"""The layers of tidal.nn, one concern per file."""
from __future__ import annotations

from . import (activation, adaptive, attention, batchnorm, channelshuffle, container, conv, crossmaplrn, dropout,
               flatten, lazy, linear, loss, normalization, padding, pooling, resampling, rnn, sparse, syncbatchnorm,
               transformer)
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .crossmaplrn import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .resampling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .syncbatchnorm import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403

__all__ = [name for mod in (activation, adaptive, attention, batchnorm, channelshuffle, container, conv, crossmaplrn,
                            dropout, flatten, lazy, linear, loss, normalization, padding, pooling, resampling, rnn,
                            sparse, syncbatchnorm, transformer)
           for name in mod.__all__]
