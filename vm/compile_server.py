"""A process that compiles with numba, so numba's compiler never holds the program's GIL.

numba compiles in Python: on a compiler thread it takes the GIL from the program for most of a
second per kernel, which is what made a fresh process's first steps slow. This process instead
runs the call that compiles (a generated kernel file's `kernel` on dummy arguments, or a module's
builder function) under the module name the program uses, which writes numba's on-disk cache; the
program then loads the result from that cache in milliseconds.

Protocol: one line per request on stdin, one line per reply on stdout, each a base64 pickle:
request (tag, module name, file path or None for an importable module, function name, arguments),
reply (tag, None or an error's repr). It exits when stdin closes (the program ended).
"""
from __future__ import annotations

import base64
import importlib
import pickle
import sys

from .codegen import import_file


def serve(requests, replies) -> None:
    """Run each request's call; answer in order."""
    for line in requests:
        tag, name, path, function, args = pickle.loads(base64.b64decode(line))
        try:
            module = importlib.import_module(name) if path is None else import_file(name, path)
            getattr(module, function)(*args)
            error = None
        except Exception as exc:  # noqa: BLE001 - reported; the program keeps the NumPy path
            error = repr(exc)
        replies.write(base64.b64encode(pickle.dumps((tag, error))) + b"\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
