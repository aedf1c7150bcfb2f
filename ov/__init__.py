"""ov: local search over a directory tree — exact, regex, keyword, semantic and hybrid.

The package is a library first (`ov.api`, re-exported here): `Index` (search, find,
context, read, tag, status, manifest), `index`, `grep`, `files` and `glob` return the
result dataclasses of `ov.model` (re-exported too); errors are `OvError`. The command
line (`ov.cli`) and `ov mcp` are thin layers over them. Attributes load on first use, so
`import ov` costs nothing a command does not need.
"""

from __future__ import annotations

__version__ = "0.1.0"

_API = ("Index", "index", "grep", "grep_result", "files", "glob", "locate", "watcher")
_RESULTS = ("SearchResult", "Hit", "Excerpt", "ContextResult", "ContextEntry", "ContextStats",
            "Match", "Submatch", "ContextLine", "FileCount", "GrepResult", "GlobResult",
            "GlobEntry", "IndexReport", "StatusReport", "SkippedFile", "ReadResult", "TagResult",
            "TaggedFile", "Manifest")

__all__ = ["OvError", "__version__", *_API, *_RESULTS]


def __getattr__(name: str):
    if name in _API:
        from ov import api  # noqa: PLC0415

        return getattr(api, name)
    if name in _RESULTS:
        from ov import model  # noqa: PLC0415

        return getattr(model, name)
    if name == "OvError":
        from ov.errors import OvError  # noqa: PLC0415

        return OvError
    raise AttributeError(f"module 'ov' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy names too (tab completion, `dir(ov)`), with the submodules loaded so far."""
    return sorted({*globals(), *__all__})
