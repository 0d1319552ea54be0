"""torch.nested: tidal.nested under torch's name."""
from ..nested import *  # noqa: F401,F403
from ..nested import __all__  # noqa: F401
