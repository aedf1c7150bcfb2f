"""The module layers of STYLE.md hold: each module imports only modules above it.

Stages from top to bottom; `store` is handed vectors and never imports `embed`; nothing
imports `cli` (only the program's entry, `ov/__main__.py`), and only the command line
(`cli`) and the MCP server (`mcp`, a front end beside it) import `render`. `flags` is generated data.

A package (`store`, `search`, `cli`) is one layer to the rest, and its own modules are layered the same
way inside it (`SUBORDER`); its `__init__` only re-exports them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ORDER = ["errors", "model", "config", "tags", "kinds", "globs", "walk", "read", "grams", "chunk", "tiers", "embed",
         "bm25", "store", "paths", "journal", "indexer", "watch", "worker", "query", "rank", "context", "search", "engine", "doctor", "api", "render", "mcp", "cli"]
SUBORDER = {"store": ["text", "db", "queries", "vectors", "postings", "warm", "searched"],
            "search": ["matcher", "scope", "prefilter", "helper", "files", "glob"],
            "cli": ["flags", "run", "commands", "fast", "app"]}
PKG = Path(__file__).resolve().parents[1] / "ov"


def ov_imports(path: Path) -> set[tuple[str, str | None]]:
    """(top-level module or package, its submodule or None) of each `ov` import."""
    deps = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module and (n.module == "ov" or n.module.startswith("ov.")):
            parts = n.module.split(".")[1:]
            if not parts:
                deps |= {(a.name, None) for a in n.names}
            elif len(parts) == 1 and parts[0] in SUBORDER:
                deps |= {(parts[0], a.name if a.name in SUBORDER[parts[0]] else None) for a in n.names}
            else:
                deps.add((parts[0], parts[1] if len(parts) > 1 else None))
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name.startswith("ov."):
                    parts = a.name.split(".")[1:]
                    deps.add((parts[0], parts[1] if len(parts) > 1 else None))
    return deps


def files(layer: str) -> list[tuple[str | None, Path]]:
    """(submodule or None, file) of a layer: a module's file, or a package's modules."""
    if layer in SUBORDER:
        return [(p.stem, p) for p in sorted((PKG / layer).glob("*.py")) if p.stem != "__init__"]
    return [(None, PKG / f"{layer}.py")]


def test_every_module_has_a_layer():
    mods = {p.stem for p in PKG.glob("*.py")} - {"__init__", "__main__"}
    pkgs = {p.parent.name for p in PKG.glob("*/__init__.py")}
    assert mods | pkgs == set(ORDER)
    for pkg, order in SUBORDER.items():
        assert {p.stem for p in (PKG / pkg).glob("*.py")} - {"__init__"} == set(order)


def test_imports_only_go_up():
    bad = []
    for mod in ORDER:
        for sub, path in files(mod):
            for dep, dep_sub in ov_imports(path):
                if dep == mod:  # inside a package: only its modules above this one
                    if sub is None or dep_sub is None or SUBORDER[mod].index(dep_sub) >= SUBORDER[mod].index(sub):
                        bad.append(f"{mod}.{sub} imports {dep}.{dep_sub}")
                elif dep not in ORDER or ORDER.index(dep) >= ORDER.index(mod):
                    bad.append(f"{mod} imports {dep}")
                if dep == "render" and mod not in ("mcp", "cli"):
                    bad.append(f"{mod} imports render")
    assert bad == []
    assert all(dep != "embed" for _, path in files("store") for dep, _ in ov_imports(path))


def test_package_init_only_reexports():
    """A package's `__init__` imports its own modules and nothing else."""
    for pkg in SUBORDER:
        assert {dep for dep, _ in ov_imports(PKG / pkg / "__init__.py")} <= {pkg}
