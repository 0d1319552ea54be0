"""torch.torch_version: TorchVersion, the str that torch.__version__ is, comparable with versions and tuples."""
from __future__ import annotations

import re
from typing import Any, Iterable

from .version import __version__ as internal_version

__all__ = ["TorchVersion", "InvalidVersion"]

_VERSION = re.compile(r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
                      r"(?:[-_.]?(?P<pre>a|alpha|b|beta|rc|c|pre|preview)[-_.]?(?P<pre_n>\d*))?"
                      r"(?:[-_.]?(?P<post>post|rev|r)[-_.]?(?P<post_n>\d*))?"
                      r"(?:[-_.]?dev[-_.]?(?P<dev_n>\d*))?"
                      r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE_PHASE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "rc": 2, "c": 2, "pre": 2, "preview": 2}
_INF = float("inf")


class InvalidVersion(ValueError):
    """A string that is no PEP 440 version."""


def version_key(text: str) -> tuple:
    """A sort key ordering versions as PEP 440 does (release, pre, post, dev, local)."""
    m = _VERSION.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: '{text}'")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = (_PRE_PHASE[m["pre"].lower()], int(m["pre_n"] or 0)) if m["pre"] else None
    post = int(m["post_n"] or 0) if m["post"] else None
    dev = int(m["dev_n"] or 0) if m["dev_n"] is not None else None
    if pre is None and post is None and dev is not None:
        pre = (-_INF, 0)  # 1.0.dev0 sorts before 1.0a0
    local = () if m["local"] is None else tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower())
                                                for p in re.split(r"[-_.]", m["local"]))
    return (tuple(release), pre if pre is not None else (_INF, 0), -_INF if post is None else post,
            _INF if dev is None else dev, local)


class TorchVersion(str):
    """A version string that compares as a version with strings, tuples such as (2, 0), and itself."""

    __slots__ = ()

    @staticmethod
    def _key(other: Any) -> tuple:
        if isinstance(other, str):
            return version_key(other)
        if isinstance(other, Iterable):
            return version_key(".".join(str(part) for part in other))
        raise InvalidVersion(other)

    def _compare(self, other: Any, method: str) -> bool:
        try:
            mine, theirs = version_key(self), self._key(other)
        except InvalidVersion:  # torch falls back to plain string comparison ('parrot')
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, "__gt__")

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, "__lt__")

    def __ge__(self, other: Any) -> bool:
        return self._compare(other, "__ge__")

    def __le__(self, other: Any) -> bool:
        return self._compare(other, "__le__")

    def __eq__(self, other: Any) -> bool:
        return self._compare(other, "__eq__")

    __hash__ = str.__hash__


__version__ = TorchVersion(internal_version)
