"""A process that compiles generated kernels, so numba's compiler never holds the program's GIL.

numba compiles in Python: on a compiler thread it takes the GIL from the program for most of a
second per kernel, which is what made a fresh process's first steps slow. This process instead
imports each generated kernel file (vm/codegen.load_generated) under the module name the program
uses and calls it once on the dummy arguments, which compiles it and writes numba's on-disk cache;
the program then loads the kernel from that cache in milliseconds.

Protocol: one line per request on stdin, one line per reply on stdout, each a base64 pickle:
request (tag, module name, path, dummy arguments), reply (tag, None or an error's repr).
It exits when stdin closes (the program ended).
"""
from __future__ import annotations

import base64
import pickle
import sys

from .codegen import import_file


def serve(requests, replies) -> None:
    """Compile each request's kernel; answer in order."""
    for line in requests:
        tag, name, path, dummies = pickle.loads(base64.b64decode(line))
        try:
            import_file(name, path).kernel(*dummies)
            error = None
        except Exception as exc:  # noqa: BLE001 - reported; the program keeps the NumPy path
            error = repr(exc)
        replies.write(base64.b64encode(pickle.dumps((tag, error))) + b"\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
