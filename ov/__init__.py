"""ov: local search over a directory tree — exact, regex, keyword, semantic and hybrid.

The package is a library first (`ov.api`, re-exported here): `Index` (search, find,
context, read, tag, status, manifest), `index`, `grep` and `glob` return the result
dataclasses of `ov.model`; the command line and `ov mcp` are thin layers over them.
Attributes load on first use, so `import ov` costs nothing a command does not need.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Index", "OvError", "glob", "grep", "index", "locate", "__version__"]

_API = {"Index", "index", "grep", "glob", "locate"}


def __getattr__(name: str):
    if name in _API:
        from ov import api  # noqa: PLC0415

        return getattr(api, name)
    if name == "OvError":
        from ov.errors import OvError  # noqa: PLC0415

        return OvError
    raise AttributeError(f"module 'ov' has no attribute {name!r}")
