"""`python -m tidal.compat script.py args...` (or `-m module args...`): run unmodified PyTorch code on tidal."""
from __future__ import annotations

import os
import sys

from ._importer import run_module, run_script

_USAGE = "usage: python -m tidal.compat (script.py | -m module) [args ...]"


def main(argv: list) -> None:
    """Run the script or module named in `argv` with `torch` resolving to tidal."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        sys.exit(2 if not argv else 0)
    if argv[0] == "-m":
        if len(argv) < 2:
            print("Argument expected for the -m option\n" + _USAGE, file=sys.stderr)
            sys.exit(2)
        run_module(argv[1], argv[2:])
        return
    path = argv[0]
    if not os.path.exists(path):
        print(f"{sys.executable}: can't open file {os.path.join(os.getcwd(), path)!r}: [Errno 2] No such file or "
              "directory", file=sys.stderr)
        sys.exit(2)
    run_script(path, argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
