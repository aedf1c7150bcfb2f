"""`ov glob`: the files and symlinks under PATH whose root-relative path matches a glob,
fd-style (the pattern language is `ov.globs`), with the asked fields.

The pattern's leading literal folders narrow the walk and, without `**`, its component
count bounds the depth (`_glob_walk_plan`); only the paths that match are stat'ed, and
only when a field needs it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from ov import config
from ov.errors import OvError
from ov.model import FileEntry, GlobEntry, GlobResult
from ov.paths import db_path_for, listing_dir, usable_index
from ov.globs import compile_glob
from ov.search.prefilter import tagged
from ov.search.scope import (LISTINGS, GrepStats, cached_listing, check_excludes, displayer,
                             exclusions, grep_walk_options, limited_stats, links_out, parse_tags, plan_roots,
                             unreadable_warning, walked_entries)

GLOB_FIELDS = ("name", "path", "type", "size", "mode", "mtime", "tags")


def parse_fields(spec: str | None) -> tuple[str, ...]:
    if not spec:
        return ()
    fields = tuple(f.strip() for f in spec.split(",") if f.strip())
    bad = [f for f in fields if f not in GLOB_FIELDS]
    if bad:
        raise OvError("invalid_argument",
                      f"unknown field {bad[0]!r} (choose from {', '.join(GLOB_FIELDS)})",
                      field="fields")
    return fields


def _file_tags(root: Path, paths: list[str]) -> dict[str, dict[str, str]]:
    db = db_path_for(root)
    if not usable_index(db) or not paths:
        return {}
    import json

    from ov.store import Store

    with Store.open(db, readonly=True) as st:
        stored = st.file_tags()
    return {p: json.loads(stored[p] or "{}") for p in paths if p in stored}


def _glob_walk_plan(pattern: str, rel: str, max_depth: int | None,
                    ignore_case: bool) -> tuple[str | None, int | None, bool]:
    """Where to start walking for a glob, and how deep: (start, depth, whether the depth
    is --level-limit's rather than the pattern's), start None = nothing.

    The pattern's leading literal folders narrow the walk (`src/*.py` walks src/ only)
    and, without `**`, its component count bounds the depth; both are relative to the
    root, while PATH and --level-limit stay the outer bounds.
    """
    parts = pattern.removeprefix("./").split("/")
    lit: list[str] = []
    if not ignore_case:
        for part in parts[:-1]:
            if any(c in part for c in "*?[]{}\\!") or part in ("", ".", ".."):
                break
            lit.append(part)
    prefix = "/".join(lit)
    rel_depth = len(rel.split("/")) if rel else 0
    if not prefix or prefix == rel or prefix.startswith(rel + "/") or not rel:
        start = prefix if len(prefix) >= len(rel) else rel
    elif rel.startswith(prefix + "/"):
        start = rel
    else:
        return None, max_depth, False  # PATH and the pattern's folder do not meet
    start_depth = len(start.split("/")) if start else 0
    depth = max_depth - (start_depth - rel_depth) if max_depth is not None else None
    user_cut = depth is not None  # whether --level-limit, not the pattern, bounds the walk
    if "**" not in pattern:
        need = len(parts) - start_depth
        user_cut = depth is not None and depth < need
        depth = need if depth is None else min(depth, need)
    if depth is not None and depth < 1:
        return None, depth, user_cut
    return start, depth, user_cut


def glob_entry(e: FileEntry, fields: Sequence[str], tags: dict[str, str] | None,
               shown: str | None = None) -> GlobEntry:
    g = GlobEntry(path=e.path if shown is None else shown)
    for f in fields:
        if f == "name":
            g.name = e.path.rsplit("/", 1)[-1]
        elif f == "type":
            g.type = "symlink" if e.is_symlink else "file"
        elif f == "size":
            g.size = e.size
        elif f == "mode":
            g.mode = format(stat.S_IMODE(e.mode), "o")
        elif f == "mtime":
            import datetime as _dt  # noqa: PLC0415  (only this field needs it)

            t = _dt.datetime.fromtimestamp(e.mtime_ns / 1e9, tz=_dt.timezone.utc)
            g.mtime = t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        elif f == "tags":
            g.tags = dict(tags or {})
    return g


def _relative_pattern(pattern: str, path: str | None) -> None:
    """A glob matches paths relative to the folder searched: one that is absolute or climbs
    out with `..` can match nothing, so it is refused (as fd refuses a pattern it can
    never match) with the form that does what was meant."""
    parts = pattern.split("/")
    if pattern.startswith("/") or ".." in parts:
        if pattern.startswith("/"):  # the folder: the parts before the first wildcard
            wild = [k for k, p in enumerate(parts) if any(c in p for c in "*?[{")]
            i = (wild[0] if wild else len(parts) - 1) - 1
        else:  # up to the last `..`
            i = max(k for k, p in enumerate(parts) if p == "..")
        folder, rest = "/".join(parts[:i + 1]) or "/", "/".join(parts[i + 1:]) or "*"
        raise OvError("invalid_pattern", f"the glob {pattern!r} can match nothing: a glob matches "
                      f"paths under the folder searched{f' ({path})' if path else ''}; name the "
                      f"folder instead: ov glob {rest!r} {folder}", field="pattern")


def glob(
    pattern: str,
    path: str | None = None,
    *,
    cwd: Path | None = None,
    ignore_case: bool = False,
    hidden: bool = False,
    no_ignore: bool = False,
    max_depth: int | None = None,
    node_limit: int = config.DEFAULT_NODE_LIMIT,
    fields: Sequence[str] = (),
    exclude: Sequence[str] = (),
    stats: GrepStats | None = None,
    ignores: Sequence[str] = (),
    tags: Sequence[str] = (),
    use_index: bool = True,
) -> GlobResult:
    """Files and symlinks under PATH whose root-relative path matches the glob.

    `matches` holds paths (str), or `GlobEntry` objects when `fields` are asked.
    """
    st = limited_stats(stats, node_limit, max_depth)
    _relative_pattern(pattern, path)
    match = compile_glob(pattern, ignore_case=ignore_case, hidden=hidden)
    LISTINGS.clear()
    for f in fields:
        if f not in GLOB_FIELDS:
            raise OvError("invalid_argument", f"unknown field {f!r}", field="fields")
    cwd = Path.cwd() if cwd is None else Path(cwd)
    # The pattern is relative to PATH (else the current folder), as pathlib's
    # Path(PATH).glob(pattern) reads it; printed paths are relative to the current folder.
    groups = plan_roots(cwd, [path if path is not None else "."])
    st.absolute = [path] if path is not None and os.path.isabs(path) else []
    check_excludes(groups, cwd, exclude)
    ((root, (rel,), indexed),) = groups
    st.root = os.fspath(root)
    ex_rels, excluded, _ = exclusions(root, cwd, exclude, [])
    links_out(root, [rel], displayer(root, cwd, st.absolute), st.warnings)
    allowed = tagged(root, parse_tags(tags) if tags else None, indexed, st.warnings.append)  # before the node limit
    if not (root / rel).is_dir():  # a file: listed when its name matches
        start, depth, user_cut = rel, max_depth, False
        cut = rel.rfind("/") + 1
    else:
        start_b, depth, user_cut = _glob_walk_plan(pattern, "", max_depth, ignore_case)
        start = None if start_b is None else "/".join(x for x in (rel, start_b) if x)
        cut = len(rel) + 1 if rel else 0
        if start_b is None and user_cut:
            st.level_cut = True  # --level-limit 0: not even PATH's own entries (said, as rg does)
    starts = [] if start is None or not os.path.lexists(root / start) else [start]
    if excluded is not None and starts and excluded(start):
        starts = []  # below the start, the walk leaves excluded paths out
    opts = grep_walk_options(hidden, no_ignore, depth, ex_rels, ignores)
    keep = match if not cut else (lambda r: match(r[cut:]))
    cache_dir = listing_dir(root) if use_index and indexed else None
    entries = _candidates(root, starts, opts, st, keep, cache_dir)
    found, truncated = _kept(entries, st, excluded, allowed, node_limit,
                             any(f in ("size", "mode", "mtime") for f in fields))
    st.truncated = truncated
    if not user_cut:
        st.level_cut = False  # the pattern's own depth, not --level-limit, stopped the walk
    if not found:
        st.warnings += _why_nothing(pattern, path, (root / rel).is_dir(), hidden,
                                    dict(cwd=cwd, ignore_case=ignore_case, no_ignore=no_ignore,
                                         max_depth=max_depth, node_limit=1, exclude=exclude,
                                         ignores=ignores, tags=tags, use_index=use_index))
    return _result(root, cwd, found, fields, st)


def _why_nothing(pattern: str, path: str | None, folder: bool, hidden: bool, again: dict) -> list[str]:
    """What a glob that found nothing says, when another form would have found something
    (`again`: the run's options, for one more run of at most one path): fd matches a name
    at any depth where a glob matches the path from the folder searched; fd also says when
    a pattern of hidden names met the hidden rule (only when --hidden finds one: `.ov/*`
    and a name not there are answered as they are)."""
    def finds(pat: str, hide: bool) -> int:
        try:
            return glob(pat, path, hidden=hide, **again).count
        except OvError:  # (a pattern at the length limit: no longer a glob with `**/`)
            return 0

    out = []
    if "/" not in pattern and not pattern.startswith("**") and folder and finds("**/" + pattern, hidden):
        out.append(f"{pattern!r} matches names at the top of the folder searched only (a glob "
                   f"matches the whole path, as in a shell); {'**/' + pattern!r} matches them at any depth")
    inside = pattern.rstrip("/") + "/**"  # (`packages/*`, `**/dist`: folders, whose files it lists)
    if not pattern.endswith("**") and finds(inside, hidden):
        out.append(f"{pattern!r} matches only folders here, and a glob lists files (as rg "
                   f"--files does); {inside!r} lists the files in them")
    if not hidden and any(part.startswith(".") and part not in (".", "..") for part in pattern.split("/")) \
            and finds(pattern, True):
        out.append(f"{pattern!r} names hidden files or folders (a leading dot), which are left "
                   "out by default; --hidden includes them")
    return out


def _candidates(root: Path, starts: list[str], opts, st: GrepStats, keep,
                cache_dir: Path | None) -> Iterator[FileEntry]:
    """The walked files and symlinks whose path the glob keeps, from the listing cache
    where it can answer (no stat either way)."""
    listed = (cached_listing(root, opts, cache_dir, root / starts[0] if starts[0] else None, st)
              if cache_dir is not None and starts else None)
    if listed is not None:
        return (FileEntry(r, a, -1, -1, 0, link) for r, a, link in listed if keep(r))
    return walked_entries(root, starts, opts, st, yield_symlinks=True, stat_files=False, keep=keep)


def _kept(entries: Iterator[FileEntry], st: GrepStats, excluded, allowed: set[str] | None,
          node_limit: int, need_stat: bool) -> tuple[list[FileEntry], bool]:
    """(the entries neither excluded nor untagged, up to the node limit; whether it cut).
    Only these are stat'ed, and only when a field needs it."""
    found: list[FileEntry] = []
    for e in entries:
        # excluded: tested per path too, see ov.search.files._searchable
        if (excluded is None or not excluded(e.path)) and (allowed is None or e.path in allowed):
            if len(found) >= node_limit:
                return found, True
            if need_stat and e.size < 0:
                try:
                    s = os.lstat(e.abspath)
                except OSError as err:
                    st.warnings.append(f"{e.path}: {err.strerror or err}")
                    st.unreadable += 1
                    continue
                e = FileEntry(e.path, e.abspath, s.st_size, s.st_mtime_ns, s.st_mode, e.is_symlink)
            found.append(e)
    return found, False


def _result(root: Path, cwd: Path, found: list[FileEntry], fields: Sequence[str],
            st: GrepStats) -> GlobResult:
    """The `GlobResult`: paths as printed, or entries with the asked fields."""
    warnings = list(st.warnings)
    if st.unreadable:
        warnings.append(unreadable_warning(st.unreadable))
    show = displayer(root, cwd, st.absolute)  # a PATH given absolute: absolute, as fd
    cut = st.truncated or st.level_cut
    if not fields:
        return GlobResult([show(e.path) for e in found], len(found), cut, warnings,
                          truncated_reason=st.truncated_reason, root=st.root)
    tags = _file_tags(root, [e.path for e in found]) if "tags" in fields else {}
    entries = [glob_entry(e, fields, tags.get(e.path), show(e.path)) for e in found]
    return GlobResult(entries, len(entries), cut, warnings,
                      truncated_reason=st.truncated_reason, root=st.root)
