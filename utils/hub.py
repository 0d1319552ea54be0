"""torch.hub: checkpoints fetched by URL into a cache directory, and models from a local `hubconf.py`.

`load_state_dict_from_url` downloads once into `<hub dir>/checkpoints` (any URL urllib opens: https, file...)
and loads the file with torch.load's arguments; `load(dir, name, source="local")` calls an entrypoint of the
directory's hubconf.py. GitHub repositories (source="github") are fetched by torch through its API and are not
provided here: tidal does not reach the network on its own. torch.utils.model_zoo.load_url is
load_state_dict_from_url.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the sha256 prefix torchvision's file names carry
_hub_dir: list = [None]


def get_dir() -> str:
    """The hub cache directory: set_dir's, else $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub (~/.cache)."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d) -> None:
    """Use `d` as the hub cache directory."""
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Copy the object at `url` to `dst` (through a temporary file beside it), checking its sha256 prefix."""
    import hashlib  # (urllib.request costs tens of ms: imported on first use)
    import shutil
    import tempfile
    import urllib.request
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    digest = hashlib.sha256()
    with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "torch.hub"})) as source, \
            tempfile.NamedTemporaryFile(delete=False, dir=folder) as tmp:
        try:
            for chunk in iter(lambda: source.read(1 << 16), b""):
                tmp.write(chunk)
                digest.update(chunk)
            tmp.close()
            if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest.hexdigest()}")')
            shutil.move(tmp.name, dst)
        finally:
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = False):
    """The object saved at `url`, downloaded once into `model_dir` (default `<get_dir()>/checkpoints`)."""
    import urllib.parse
    from ..serialization import load as _load  # serialization loads on first use (keeps import light)
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


def _hubconf(repo_or_dir: str, source: str):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise RuntimeError("torch.hub: loading from GitHub is not provided by tidal (it does not reach the "
                           "network); clone the repository and pass its directory with source='local'")
    path = os.path.join(repo_or_dir, "hubconf.py")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_or_dir)  # hubconf imports its repository's modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_or_dir)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def load(repo_or_dir: str, model: str, *args, source: str = "github", trust_repo="check", force_reload: bool = False,
         verbose: bool = True, skip_validation: bool = False, **kwargs):
    """`model(*args, **kwargs)` from the hubconf.py of the directory `repo_or_dir` (source="local")."""
    module = _hubconf(repo_or_dir, source)
    sys.path.insert(0, repo_or_dir)
    try:
        return _entry(module, model)(*args, **kwargs)
    finally:
        sys.path.remove(repo_or_dir)


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo="check",
         verbose: bool = True) -> list:
    """The entrypoints of a local hubconf.py (its public callables)."""
    module = _hubconf(github, "local" if os.path.isdir(github) else "github")
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo="check") -> str:
    """The docstring of an entrypoint of a local hubconf.py."""
    module = _hubconf(github, "local" if os.path.isdir(github) else "github")
    return _entry(module, model).__doc__

