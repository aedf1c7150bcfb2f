"""The module layers of STYLE.md hold: each module imports only modules above it.

Stages from top to bottom; `store` is handed vectors and never imports `embed`; nothing
imports `cli` (only the program's entry, `ov/__main__.py`), and only the command line
(`console`, its Typer-free half, and `cli`) and the MCP server (`mcp`, a front end beside them)
import `render`. `flags` is generated data.
"""

from __future__ import annotations

import ast
from pathlib import Path

ORDER = ["flags", "errors", "model", "config", "walk", "read", "chunk", "tiers", "matcher", "globs", "embed",
         "store", "vectors", "indexer", "watch", "worker", "query", "rank", "context", "fsearch", "engine", "doctor", "api", "render", "mcp", "console", "cli"]
PKG = Path(__file__).resolve().parents[1] / "ov"


def ov_imports(path: Path) -> set[str]:
    deps = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module and (n.module == "ov" or n.module.startswith("ov.")):
            deps |= {a.name for a in n.names} if n.module == "ov" else {n.module.split(".")[1]}
        elif isinstance(n, ast.Import):
            deps |= {a.name.split(".")[1] for a in n.names if a.name.startswith("ov.")}
    return deps


def test_every_module_has_a_layer():
    mods = {p.stem for p in PKG.glob("*.py")} - {"__init__", "__main__"}
    assert mods == set(ORDER)


def test_imports_only_go_up():
    bad = []
    for mod in ORDER:
        for dep in ov_imports(PKG / f"{mod}.py"):
            if dep not in ORDER or ORDER.index(dep) >= ORDER.index(mod):
                bad.append(f"{mod} imports {dep}")
            if dep == "render" and mod not in ("mcp", "console", "cli"):
                bad.append(f"{mod} imports render")
    assert bad == []
    assert "embed" not in ov_imports(PKG / "store.py")
