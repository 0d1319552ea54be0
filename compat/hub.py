"""torch.hub (tidal.utils.hub: checkpoints by URL into a cache directory, models from a local hubconf.py)."""
from __future__ import annotations

from ..utils.hub import (HASH_REGEX, download_url_to_file, get_dir, help, list, load,  # noqa: A004,F401
                         load_state_dict_from_url, set_dir)

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]
