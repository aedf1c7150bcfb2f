"""Where things are: the index of a tree, the root a search starts from, and a user's
path as a path relative to that root. One definition of each, for every command.

- The index lives at `ROOT/.ov/index.db` (`db_path_for`); a command finds the nearest
  one at or above its scope (`find_index`), as git finds `.git`, or takes `--db`, whose
  tree is the folder holding `.ov/` or the root recorded in it (`locate`).
- `ov grep` and `ov glob` search from the nearest index root, else the nearest git work
  tree, else the current folder (`search_root`).
- A path the user typed (PATH, `-u/--uri`, `--exclude-uri`) becomes a '/' path relative
  to the root by `resolve`, which refuses a NUL byte (`check_nul`, the one place that
  says so), a path outside the root (`invalid_path`) and, where asked, a missing one
  (`not_found`: a typo must not look like "no results").

It sits above the store because an index found through `--db` may record its root
inside it; everything else here is path arithmetic.
"""

from __future__ import annotations

import os
from pathlib import Path

from ov.config import DB_NAME, INDEX_DIRNAME, foreign, passed_over, untrusted
from ov.errors import OvError


def check_nul(p: str, field: str = "path") -> None:
    """A NUL byte cannot name a file (and cannot cross execve): `invalid_path`."""
    if "\x00" in p:
        raise OvError("invalid_path", f"{p!r}: a path cannot hold a NUL byte", field=field)


# ---- the index ---------------------------------------------------------------------------


def db_path_for(root: Path) -> Path:
    """Where the index of the tree at `root` lives."""
    return root / INDEX_DIRNAME / DB_NAME


def find_index(start: Path) -> Path | None:
    """The nearest `.ov/index.db` at or above `start` (a file or a folder), or None. An
    index another user could have planted (`untrusted`) is passed over, said on stderr.

    Nor is an index above a git work tree it leaves out used there: a worktree or a
    repository kept in a folder the outer tree ignores (`trees/` in its `.gitignore`) was
    answered from the outer index, which holds none of its files (another branch's copies
    instead); such a folder is a tree of its own (its work tree's top, `search_root`)."""
    p = start if start.is_dir() else start.parent
    p = p.resolve()
    inner: Path | None = None  # the nearest folder holding `.git` on the way up
    for d in (p, *p.parents):
        candidate = db_path_for(d)
        try:
            found = candidate.is_file()
        except PermissionError:  # `.ov/` there is another user's (owner-only): not this
            found = True         # user's to read, and passed over as any other user's
        if found and not passed_over(candidate):
            return None if inner is not None and _leaves_out(d, inner) else candidate
        if inner is None and os.path.lexists(os.path.join(d, ".git")):
            inner = d
    return None


def _leaves_out(root: Path, folder: Path) -> bool:
    """Whether the tree at `root` leaves `folder` (below it) out: its ignore rules do, and
    its index holds no file there (an index built with `--hidden` or `--no-ignore` holds
    what the rules alone leave out: a dotfiles repository `.dots/` it indexed)."""
    from ov.walk import left_out_by_rules  # noqa: PLC0415

    rel = os.path.relpath(folder, root).replace(os.sep, "/")
    try:
        if not left_out_by_rules(root, rel):
            return False
    except OvError:  # a broken config is said where the tree's commands read it
        return False
    from ov.store import Store  # noqa: PLC0415

    try:
        with Store.open(db_path_for(root), readonly=True) as store:
            return not store.has_files_under(rel)
    except OvError:  # (one that cannot be read is said by the command that opens it)
        return True


def index_root_of(db_path: Path) -> Path:
    """The tree an index belongs to: the folder holding `.ov/`, or the root stored in it."""
    db_path = Path(db_path).resolve()
    if db_path.name == DB_NAME and db_path.parent.name == INDEX_DIRNAME:
        return db_path.parent.parent
    from ov.store import Store  # noqa: PLC0415 - only an index outside `.ov/` is opened
    from ov.store.db import stored_setting  # noqa: PLC0415

    # read as it stands: an open for writing upgrades an older index, here without the
    # index lock, beside an older ov's worker (ov.api `_open_store` stops it first)
    root = stored_setting(db_path, "root")
    if not root:
        with Store.open(db_path, readonly=True) as s:  # what is wrong with a file that is no index
            root = s.get_meta("root")
    if not root:
        raise OvError("invalid_argument", f"{db_path} does not record its root folder (its first "
                      f"build did not finish); run `ov index --db {db_path}` in the tree", field="db")
    return Path(root)


def locate(scope: Path | None = None, db: Path | None = None) -> tuple[Path, Path] | None:
    """(db path, root) of `db`, or of the nearest index at or above `scope` (default: the
    current folder); None if there is none."""
    if db is not None:
        db = Path(db)
        if not db.exists():
            raise OvError("not_found", f"no index at {db}", field="db")
        return db, index_root_of(db)
    found = find_index(Path.cwd() if scope is None else Path(scope))
    if found is None:
        return None
    return found, found.parent.parent


def usable_index(db: Path) -> bool:
    """Whether an index file is there for this user to read and use (another user's `.ov/`
    is not, `untrusted`: grep and glob then search without it)."""
    try:
        return db.is_file() and os.access(db, os.R_OK) and untrusted(db) is None
    except OSError:
        return False


def listing_dir(root: Path) -> Path | None:
    """Where the walk's listing cache lives (beside the index), or None without an index."""
    db = db_path_for(root)
    return db.parent if usable_index(db) else None


# ---- the search root and a user's paths ---------------------------------------------------


def search_root(cwd: Path) -> Path:
    """The nearest index root at or above `cwd`, else the nearest git work tree (a folder
    holding `.git`: its ignore files above `cwd` apply, as rg applies them), else `cwd`."""
    db = find_index(cwd)
    if db is not None:
        return db.parent.parent
    here = cwd.resolve()
    for d in (here, *here.parents):
        if os.path.exists(os.path.join(d, ".git")):
            # another user's `.git` above (git itself refuses such a repository): its
            # top, its ignore files and its pyproject.toml are not this tree's
            return d if d == here or not foreign(os.path.join(d, ".git")) else here
    return here


def _under(path: str, root: str) -> str | None:
    rel = os.path.relpath(path, root)
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return "" if rel == "." else rel.replace(os.sep, "/")


def _place(root: Path, cwd: Path, p: str, field: str, links: bool) -> tuple[str, str | None, str]:
    """(the absolute path `p` names, its root-relative form or None outside, the root)."""
    check_nul(p, field)
    a = os.path.normpath(os.path.join(os.fspath(cwd), p))
    root_s = os.fspath(root.resolve() if links else root)
    rel = _under(a, root_s)
    if rel is None and links:
        rel = _under(os.path.realpath(a), root_s)
    return a, rel, root_s


def resolve(root: Path, cwd: Path, p: str, *, must_exist: bool = True, field: str = "path",
            links: bool = False) -> str:
    """`p` (relative to `cwd`, or absolute) as a '/' path relative to `root` ("" = the
    root). `invalid_path` when it holds a NUL or lies outside the root; `not_found`, with
    `must_exist`, when nothing is there.

    `links`: the root is an index root, compared with links resolved, and a path that
    is outside it as written but inside it once its links are resolved (a link into the
    tree) is taken by its resolved place; ranked search and `read` ask for this. grep and
    glob compare the path as written, as rg does."""
    a, rel, root_s = _place(root, cwd, p, field, links)
    if rel is None:
        what = "index root" if links else "search root"
        raise OvError("invalid_path", f"{p}: outside the {what} {root_s}", field=field)
    if must_exist and not os.path.lexists(a):
        raise OvError("not_found", f"{p}: no such file or folder", field=field)
    return rel


def inside(root: Path, cwd: Path, p: str, *, must_exist: bool = False) -> str | None:
    """`resolve` as grep and glob resolve, or None for a path outside `root`."""
    a, rel, _ = _place(root, cwd, p, "path", False)
    if rel is not None and must_exist and not os.path.lexists(a):
        if p == "-":  # rg's standard input: said, not "no such file"
            raise OvError("unsupported", "-: standard input is not read; ov searches files "
                          "(name them, or pipe into rg or grep)", field="path")
        raise OvError("not_found", f"{p}: no such file or folder", field="path")
    return rel
