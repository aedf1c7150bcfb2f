"""One concept, one home (issue 15): finding the index, resolving a user's path, the NUL
check, what kind of file a path names and the token estimate are each defined once, in
the module that owns them, and nothing else in `ov/` defines them again. No SQL runs
outside `ov/store/`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ov"

HOMES = {
    # the index's place and the root a search starts from
    "db_path_for": "paths.py", "find_index": "paths.py", "locate": "paths.py",
    "index_root_of": "paths.py", "search_root": "paths.py", "listing_dir": "paths.py",
    # a user's path, and the NUL check
    "resolve": "paths.py", "check_nul": "paths.py",
    # what kind of file this is
    "kind_of": "kinds.py", "file_type": "kinds.py", "category": "kinds.py",
    "type_globs": "kinds.py", "type_filter": "kinds.py", "type_names": "kinds.py",
    # tokens as the context budget counts them (DESIGN.md: chars/4, wide code points 1.5)
    "estimate_tokens": "context.py",
}


def modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if p.name != "flags.py")  # generated data


def definitions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for p in modules():
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in HOMES:
                found.setdefault(n.name, []).append(p.relative_to(PKG).as_posix())
    return found


def test_each_concept_is_defined_once_in_its_home():
    found = definitions()
    assert {name: where for name, where in found.items()} == {name: [home] for name, home in HOMES.items()}


def test_one_nul_check():
    """Only `ov.paths.check_nul` refuses a path for holding a NUL byte."""
    says = [p.relative_to(PKG).as_posix() for p in modules() if "NUL byte" in "".join(
        s.value for s in ast.walk(ast.parse(p.read_text()))
        if isinstance(s, ast.Constant) and isinstance(s.value, str) and "cannot hold" in s.value)]
    assert says == ["paths.py"]


# A statement as a string: a verb and what it acts on, or a transaction word alone, or a pragma.
SQL = re.compile(r"^\s*(?:(?:SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|WITH)\b.*\b"
                 r"(?:FROM|INTO|SET|TABLE|INDEX|VIEW|AS)\b|(?:BEGIN|COMMIT|ROLLBACK|VACUUM|ANALYZE)"
                 r"\b(?:\s+\w+)?\s*$|PRAGMA\s+\w+(?:\s*=.*|\(.*\))?\s*$)", re.I | re.S)
DRIVER_CALLS = {"execute", "executemany", "executescript", "q1", "rows", "set_progress_handler",
                "enable_load_extension", "load_extension"}


def test_no_sql_outside_the_store():
    """`ov/store/` is the only SQL: no other module holds a statement, calls the driver or
    reaches for a store's connection."""
    bad = []
    for p in modules():
        rel = p.relative_to(PKG).as_posix()
        if rel.startswith("store/"):
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and SQL.match(n.value):
                bad.append(f"{rel}:{n.lineno}: {n.value[:60]!r}")
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in DRIVER_CALLS:
                bad.append(f"{rel}:{n.lineno}: .{n.func.attr}()")
            elif isinstance(n, ast.Attribute) and n.attr == "conn":
                bad.append(f"{rel}:{n.lineno}: .conn")
    assert bad == []


LONGEST = 80  # lines of a function or method, decorators and docstring included


def test_no_function_is_longer_than_a_screen():
    """Steps get names (STYLE.md: short bodies): no function or method in `ov/` runs past
    LONGEST lines. Hot loops keep their per-item work inline and name what runs around it."""
    long = []
    for p in modules():
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([n.lineno, *(d.lineno for d in n.decorator_list)])
                if n.end_lineno - first + 1 > LONGEST:
                    long.append(f"{p.relative_to(PKG).as_posix()}:{n.name} {n.end_lineno - first + 1}")
    assert long == []
