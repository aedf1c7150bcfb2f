"""What a grep, `--files` or glob run searches, and what it reports besides its records.

The search root is the nearest index root at or above the current folder (the parent of
its `.ov` folder), else the nearest git work tree, else the current folder
(`ov.paths.search_root`). PATH arguments are relative to the current folder (or
absolute) and must exist (`not_found`); one outside the root is searched from its own
root (the index above it, else itself), without the index of the current tree, so any
folder on disk can be searched (`plan_roots`). Printed paths are relative to the current
folder with '/' separators (`displayer`: `../x` outside it, as rg and `git grep` print
them; JSON names the root once), in the walker's order (component by component,
ripgrep's `--sort path`), so results come ordered by (path, line) on every run.

The walk has no size cap and no depth cut (ripgrep has neither); `--level-limit` and the
node limit are reported when they cut (`GrepStats.truncated_reason`, `cut_notes`). Files
that cannot be read are left out and counted (`GrepStats.unreadable`).
"""

from __future__ import annotations

import os
import stat
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ov.config import WalkOptions
from ov.errors import OvError
from ov.globs import PathFilter, split_excludes
from ov.model import FileEntry, GrepResult
from ov.paths import db_path_for, inside, resolve, search_root, usable_index
from ov.walk import LINK_OUT, walk, walk_paths


# (literals, ignore_case) -> predicate (walked file entry) -> may the file match?
Candidates = Callable[[list[str], bool], "Callable[[FileEntry], bool] | None"]
_GLOB_SPECIAL = re.compile(r"[\\*?\[\]!# ]")


@dataclass
class GrepStats:
    """What a grep run saw besides its records (filled while iterating)."""

    files: int = 0  # files with at least one record
    count: int = 0  # matching lines (matches mode and -c) or files (-l)
    truncated: bool = False
    node_limit: int = 0  # the cap in force (flag, else config, else default)
    searched: int = 0
    missing: list[str] = field(default_factory=list)  # PATHs not there (plan_roots), said as warnings
    binary: int = 0  # skipped as binary (NUL before the first line searched)
    unreadable: int = 0
    warnings: list[str] = field(default_factory=list)
    records: int = 0  # records yielded so far (the node limit counts them)
    # files named explicitly that hold a NUL and a match: (shown path, NUL offset), said
    # as rg says it ("binary file matches") rather than searched line by line
    binary_matches: list[tuple[str, int]] = field(default_factory=list)
    # walked files whose search stopped at a NUL after printing a match (ripgrep quits a
    # binary file it was not named: the lines after it are not searched), said as rg says it
    binary_stopped: list[tuple[str, int]] = field(default_factory=list)
    level_cut: bool = False  # --level-limit left a folder unentered
    root: str = ""  # the (first) search root
    # the current root's paths as results show them (`displayer`): the walk's warnings too
    shown: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    # the PATHs given absolute, as typed: their files are shown under them (`displayer`)
    absolute: list[str] = field(default_factory=list, repr=False, compare=False)

    def walk_warning(self, w: str) -> None:
        """A walk's warning (`path: what`), its path relative to the walk's root shown as
        the results are, from the current folder: `real/` was told of `broken` where rg
        says `../broken` (a review)."""
        head, sep, rest = w.partition(": ")
        if self.shown is not None and sep and head and not os.path.isabs(head):
            w = f"{self.shown('' if head == '.' else head)}{sep}{rest}"
        self.warnings.append(w)

    @property
    def read_errors(self) -> bool:
        """Whether something under the PATHs could not be read (a file, a folder, an ignore
        file, a broken or looping link followed): `ov grep` then exits 2, as rg."""
        from ov.walk import read_error  # noqa: PLC0415

        return bool(self.unreadable) or any(read_error(w) for w in self.warnings)

    @property
    def truncated_reason(self) -> str | None:
        """What cut the result: "node_limit", "level_limit", or both, comma-joined."""
        why = [w for w, cut in (("node_limit", self.truncated), ("level_limit", self.level_cut))
               if cut]
        return ",".join(why) or None


def limited_stats(stats: GrepStats | None, node_limit: int, max_depth: int | None) -> GrepStats:
    """The run's stats, holding the node limit in force, once both limits are checked."""
    if node_limit < 1:
        raise OvError("invalid_argument", "--node-limit must be at least 1", field="node_limit")
    if max_depth is not None and max_depth < 0:
        raise OvError("invalid_argument", "--level-limit must be 0 or more", field="level_limit")
    st = stats if stats is not None else GrepStats()
    st.node_limit = node_limit
    return st


def _disjoint(rels: list[str]) -> list[str]:
    """Sorted component-wise, without paths inside another one (searched once)."""
    out: list[str] = []
    for r in sorted(set(rels), key=lambda r: r.split("/") if r else []):
        if any(o == "" or r == o or r.startswith(o + "/") for o in out):
            continue
        out.append(r)
    return out


def plan_roots(cwd: Path, paths: Sequence[str], missing: list[str] | None = None
               ) -> list[tuple[Path, list[str], bool]]:
    """The searches a list of PATH arguments makes: (root, start paths relative to it,
    whether the root holds an index). A PATH inside the tree of the current folder (its
    index root, else the current folder) is searched from that root, with its index; a
    PATH elsewhere from the nearest index root above it, else from itself (its folder,
    for a file): any folder on disk can be searched, with the same answer.

    A PATH that does not exist is `not_found`; with a `missing` list, its message goes
    there and the others are searched (as rg searches them and exits 2), unless none
    exists."""
    base = search_root(cwd)
    groups: dict[Path, list[str]] = {}
    gone: OvError | None = None
    for p in paths or ["."]:
        if missing is not None:
            try:
                inside(base, cwd, p, must_exist=True)
            except OvError as e:
                if e.code != "not_found":
                    raise
                missing.append(e.message)
                gone = gone or e
                continue
        rel = inside(base, cwd, p, must_exist=True)
        if rel is not None:
            groups.setdefault(base, []).append(rel)
            continue
        a = Path(os.path.abspath(os.path.join(os.fspath(cwd), p)))
        root = search_root(a if a.is_dir() else a.parent)
        if root == a.resolve() or not usable_index(db_path_for(root)):
            root = a if a.is_dir() else a.parent
        groups.setdefault(root, []).append(resolve(root, cwd, p))
    if not groups and gone is not None:
        raise gone
    return [(root, _disjoint(rels), usable_index(db_path_for(root)))
            for root, rels in groups.items()]


def check_excludes(groups, cwd: Path, exclude: Sequence[str]) -> None:
    """An --exclude-uri path outside every searched root is a mistake (`invalid_path`), and
    a glob `-g` could not read is one too (`invalid_pattern`)."""
    paths, _ = split_excludes(exclude, [cwd])
    for e in paths:
        if all(inside(root, cwd, e) is None for root, _, _ in groups):
            resolve(groups[0][0], cwd, e, must_exist=False, field="exclude_uri")


def grep_walk_options(hidden: bool, no_ignore: bool, max_depth: int | None,
               excludes: Sequence[str] = (), ignores: Sequence[str] = (),
               follow: bool = False, pfilter: PathFilter | None = None) -> WalkOptions:
    # Excluded paths become anchored ignore lines, so an excluded folder is never entered;
    # `ignores` are gitignore lines from the tree's config, rooted at the search root;
    # -g include globs override the ignore rules for what they name (PathFilter.overrides).
    lines = tuple("/" + _GLOB_SPECIAL.sub(r"\\\g<0>", e) for e in excludes if e)
    return WalkOptions(hidden=hidden, no_ignore=no_ignore, max_filesize=None, max_depth=max_depth,
                       extra_ignores=tuple(ignores) + lines, follow=follow,
                       override=pfilter.overrides if pfilter and pfilter.has_include else None)


def excluder(excludes: Sequence[str]) -> Callable[[str], bool] | None:
    if not excludes:
        return None
    ex = tuple(excludes)
    if "" in ex:
        return lambda rel: True
    prefixes = tuple(e + "/" for e in ex)
    return lambda rel: rel in ex or rel.startswith(prefixes)


def exclusions(root: Path, cwd: Path, exclude: Sequence[str],
               rels: list[str]) -> tuple[list[str], Callable[[str], bool] | None, list[str]]:
    """(the `--exclude-uri` paths under `root`, the test of a path against them and the
    globs, the start paths left). Below a start the walk leaves excluded paths out (they
    are anchored ignore lines, see `grep_walk_options`); a start inside an excluded path,
    or matched by a glob, is left out whole. A glob is read as `-g` reads it, from the
    current folder (`PathFilter.under`), and tested path by path."""
    paths, globs = split_excludes(exclude, [cwd])
    ex_rels = [r for r in (inside(root, cwd, e) for e in paths) if r is not None]
    excluded = excluder(ex_rels)
    if globs:
        globbed = PathFilter(globs, field="exclude_uri").under(os.fspath(root), os.path.abspath(cwd))
        excluded = globbed if excluded is None else (lambda rel, p=excluded: p(rel) or globbed(rel))
    if excluded is not None:
        rels = [r for r in rels if not excluded(r)]
    return ex_rels, excluded, rels


def parse_tags(tags: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--tags` filters as the other commands read them (ov.tags.parse_filters), every one
    kept: `--tags team=a --tags team=b` is both (AND), as search reads it, not the last."""
    from ov.tags import parse_filters  # noqa: PLC0415

    return parse_filters(tags)


def displayer(root: Path, cwd: Path, absolute: Sequence[str] = ()) -> Callable[[str], str]:
    """Root-relative '/' path -> the path relative to `cwd` that grep and glob print (rg
    and `git grep` print them so: `../x` for a file outside the current folder); one
    under a PATH given absolute (`absolute`: such PATHs as typed) is printed under that
    PATH as typed, as rg and fd print it: an editor that asks for `/home/me/proj` reads
    the paths back as it gave them."""
    import posixpath  # noqa: PLC0415

    root_s, cwd_s = os.fspath(root), os.path.abspath(os.fspath(cwd))
    if os.sep != "/":
        root_s, cwd_s = root_s.replace(os.sep, "/"), cwd_s.replace(os.sep, "/")
    whole = _absolute_rels(root, absolute)  # (root-relative path, the PATH as typed)
    if root_s == cwd_s and not whole:
        return lambda rel: rel
    folders: dict[str, str] = {}

    named = {a: t for a, t in whole if a}  # a file named by its absolute path: as typed

    def show(rel: str) -> str:
        if rel in named:
            return named[rel]
        folder, _, name = rel.rpartition("/")
        d = folders.get(folder)
        if d is None:
            d = _typed(whole, folder)
            if d is None:
                d = posixpath.relpath(posixpath.join(root_s, folder), cwd_s)
                d = "" if d == "." else d
            d = d + "/" if d else ""
            folders[folder] = d
        return d + name if name else (d.rstrip("/") or ".")

    return show


def _typed(whole: list[tuple[str, str]], folder: str) -> str | None:
    """`folder` under one of the PATHs given absolute, as typed; else None."""
    import posixpath  # noqa: PLC0415

    for a, t in whole:
        if not a:
            return posixpath.join(t, folder) if folder else t
        if folder == a or folder.startswith(a + "/"):
            return t + folder[len(a):]
    return None


def _absolute_rels(root: Path, absolute: Sequence[str]) -> list[tuple[str, str]]:
    """(root-relative path, the PATH as typed, normalised) of the PATHs given absolute
    that lie under `root`."""
    if not absolute:
        return []
    out = []
    for p in absolute:
        # as the walk names it: through a link the PATH holds (`t/link`), by the link's
        # name; a root reached through a link above it, by the links resolved
        for rel in (os.path.relpath(os.path.normpath(p), os.fspath(root)),
                    os.path.relpath(os.path.realpath(p), os.path.realpath(root))):
            if rel != ".." and not rel.startswith(".." + os.sep):
                out.append(("" if rel == "." else rel.replace(os.sep, "/"), os.path.normpath(p).replace(os.sep, "/")))
                break
    return out


def counting_skips(st: GrepStats) -> Callable[[str, str], None]:
    """The walk's on_skip: files that could not be stat'ed count as unreadable."""
    def on_skip(path: str, reason: str) -> None:
        if reason == "unreadable":
            st.unreadable += 1
        elif reason == "depth":
            st.level_cut = True

    return on_skip


def walked_entries(root: Path, rels: list[str], opts: WalkOptions, st: GrepStats,
             yield_symlinks: bool = False, stat_files: bool = True,
             keep: Callable[[str], bool] | None = None) -> Iterator[FileEntry]:
    for rel in rels:
        start = root / rel if rel else None
        yield from walk(root, opts, start=start, on_warning=st.walk_warning,
                        on_skip=counting_skips(st), yield_symlinks=yield_symlinks,
                        stat_files=stat_files, keep=keep)


def file_paths(root: Path, rels: list[str], opts: WalkOptions, st: GrepStats,
           cache_dir: Path | None = None, keep: Callable[[str], bool] | None = None) -> Iterator[tuple[str, str]]:
    """(relative, absolute) paths of the files `walked_entries` would yield, without stat;
    from the listing cache in `cache_dir` where it can answer. `keep`: the walk's filter
    (`ov.walk.walk`), for a walk that does not use the cache."""
    for rel in rels:
        start = root / rel if rel else None
        listed = cached_listing(root, opts, cache_dir, start, st) if cache_dir is not None else None
        if listed is not None:
            yield from ((r, a) for r, a, link in listed if not link)
        else:
            yield from walk_paths(root, opts, start=start, on_warning=st.walk_warning,
                                  on_skip=counting_skips(st), keep=keep)


# The listings of this run's cached walks (cleared as a run starts).
LISTINGS: dict[tuple, tuple[list[tuple[str, str, bool]] | None, list[str]]] = {}


def cached_listing(root: Path, opts: WalkOptions, cache_dir: Path, start: Path | None,
            st: GrepStats) -> list[tuple[str, str, bool]] | None:
    from ov.walk import cached_walk  # noqa: PLC0415

    key = (os.fspath(root), opts, os.fspath(cache_dir), start and os.fspath(start))
    if key not in LISTINGS:
        if len(LISTINGS) > 8:
            LISTINGS.clear()
        cut: list[str] = []
        LISTINGS[key] = (cached_walk(root, opts, cache_dir, start=start,
                                    on_warning=st.walk_warning, on_skip=cut.append), cut)
    listed, cut = LISTINGS[key]
    if cut:
        st.level_cut = True
    return listed


def result_of(st: GrepStats) -> GrepResult:
    """The `GrepResult` of a finished run, its records not yet set."""
    res = GrepResult(matches=[], count=st.count, files=st.files,
                     truncated=st.truncated or st.level_cut, warnings=list(st.warnings),
                     truncated_reason=st.truncated_reason, root=st.root or None)
    res.warnings += binary_notes(st)
    return res


def grep_result(records: Sequence, st: GrepStats, mode: str = "matches") -> GrepResult:
    """The `GrepResult` of a finished grep (what `-o json` and `ov mcp` return): its
    records under the key of `mode`, the counts, cuts and warnings of `st`."""
    res = result_of(st)
    if st.unreadable:
        res.warnings.append(unreadable_warning(st.unreadable))
    if mode == "matches":
        res.matches = list(records)
    elif mode == "count":
        res.counts = {r.path: r.count for r in records}
    else:
        res.paths = [r.path for r in records]
    return res


def binary_note(path: str, offset: int) -> str:
    """rg's words for a binary file named explicitly that holds a match."""
    return f'{path}: binary file matches (found "\\0" byte around offset {offset})'


def binary_notes(st: GrepStats) -> list[str]:
    """rg's lines for the binary files of a run: those named explicitly that match, then
    the walked ones whose search a NUL stopped after a match (in the order searched)."""
    return [binary_note(p, off) for p, off in st.binary_matches] + [
        f'{p}: WARNING: stopped searching binary file after match (found "\\0" byte around offset {off})'
        for p, off in st.binary_stopped]


def cut_notes(st: GrepStats, node_limit: int, what: str) -> list[str]:
    """The stderr lines of text mode for each cut (see DESIGN.md: no silent limits)."""
    notes = []
    if st.truncated:
        notes.append(f"stopped at --node-limit {node_limit}: more {what} exist "
                     "(raise it with --node-limit N)")
    if st.level_cut:
        notes.append("--level-limit left deeper folders unsearched (drop it to search them)")
    return notes


def unreadable_warning(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''} could not be read"


def not_files(root: Path, rels: Sequence[str], show: Callable[[str], str], warnings: list[str]) -> None:
    """A PATH named on the command line that is a fifo, a socket or a device is not read
    (a fifo would block the search until a writer came; rg reads it), and says so: an
    answer of nothing without a word reads as "no match"."""
    for r in rels:
        try:
            mode = os.stat(root / r).st_mode if r else stat.S_IFDIR
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            warnings.append(f"{show(r)}: not a regular file (a fifo, socket or device); not searched")


def links_out(root: Path, rels: Sequence[str], show: Callable[[str], str], warnings: list[str]) -> None:
    """A PATH named on the command line that is a link leading outside the tree is not
    followed (DESIGN: never), and says so: rg would search its target, and an answer of
    nothing without a word reads as "no match"."""
    real_root = root.resolve()
    for r in rels:
        p = root / r
        if r and (p.is_symlink() or os.path.realpath(p) != os.path.abspath(p)):  # a link on the way
            target = Path(os.path.realpath(p))
            if target != real_root and real_root not in target.parents:
                warnings.append(f"{show(r)}: {LINK_OUT} (name its target to search it: {target})")
