"""ov: local search over a directory tree — exact, regex, keyword, semantic and hybrid.

The package is a library first: `ov.engine` returns report dataclasses (see `ov.model`);
`ov.cli` is a thin Typer layer that renders them as text, JSON or JSONL.
"""

__version__ = "0.1.0"
