"""Real torch's side of the script tests, computed once per machine.

The suite runs twice (async, then sync mode). A torch run's printed result depends only on its script (and the
scripts it imports), its command line and torch itself, so the second mode reads what the first computed,
keyed by a hash of those, instead of starting torch again beside tidal's run."""
import hashlib
import importlib.metadata
import json
import os
import tempfile

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
_DIR = os.path.join(tempfile.gettempdir(), f"tidal-torch-reference-{os.getuid()}")


def key(*command: str) -> str:
    """The cache key of a torch run of `command`: its words, every file under tests/scripts/, torch's version."""
    digest = hashlib.sha256(importlib.metadata.version("torch").encode())
    for word in command:
        digest.update(b"\0" + word.encode())
    for name in sorted(os.listdir(SCRIPTS)):
        if name.endswith(".py"):
            with open(os.path.join(SCRIPTS, name), "rb") as f:
                digest.update(b"\0" + name.encode() + b"\0" + f.read())
    return digest.hexdigest()[:32]


def lookup(run_key: str) -> dict | None:
    """The result a torch run with this key printed earlier, or None."""
    try:
        with open(os.path.join(_DIR, run_key + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store(run_key: str, result: dict) -> dict:
    """Keep a torch run's result for the next lookup (written whole, then renamed); returns `result`."""
    os.makedirs(_DIR, exist_ok=True)
    tmp = os.path.join(_DIR, f"{run_key}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, os.path.join(_DIR, run_key + ".json"))
    return result
