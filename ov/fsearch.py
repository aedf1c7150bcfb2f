"""`grep` and `glob` straight over the file system: walk, filter, read, search.

The search root is the nearest index root at or above the current folder (the parent of
its `.ov` folder), else the nearest git work tree, else the current folder. PATH arguments
are relative to the current folder (or absolute) and must exist (`not_found`); one outside
the root is searched from its own root (the index above it, else itself), without the
index of the current tree, so any folder on disk can be searched. Printed paths are
relative to the current folder with '/' separators (`../x` outside it, as rg and `git
grep` print them; JSON names the root once), in the walker's order (component by
component, ripgrep's `--sort path`), so results come ordered by (path, line) on every run.
The walk has no size cap and no depth cut (ripgrep has neither); `--level-limit` and the
node limit are reported when they cut (`GrepStats.truncated_reason`).

`iter_grep` yields records as files are searched (for JSON Lines); `grep` collects them
into a `GrepResult`. Both stop at the node limit, after checking that one more record
exists, so `truncated` is never a guess. Files that cannot be read are left out and
counted (`GrepStats.unreadable`); the CLI reports the count on stderr.

The index, where there is one, only makes grep faster: `index_candidates` returns a
predicate from the FTS5 trigram table that rules out files which cannot hold the
pattern's required literals. It trusts the index only for files whose size and mtime
are what was indexed; any other file is read, so the answer is the same either way.
"""

from __future__ import annotations

import os
import time
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
TYPE_CHECKING = False  # `typing` costs ~2.5 ms of a grep's start

from ov import config
from ov.config import WalkOptions
from ov.errors import OvError
from ov.globs import PathFilter, compile_glob
from ov.kinds import type_matcher
from ov.paths import db_path_for, inside, listing_dir, resolve, search_root
from ov.model import (ContextLine, FileCount, FileEntry, GlobEntry, GlobResult, GrepResult, Match,
                      Submatch)
from ov.read import decode
from ov.walk import walk, walk_paths, write_private

if TYPE_CHECKING:  # ov.matcher is imported by grep only (glob needs neither it nor `regex`)
    from ov.matcher import Pattern

RG_BUFFER = 64 * 1024  # ripgrep's first buffer (ov.matcher.RG_BUFFER; a test holds them equal)

# (literals, ignore_case) -> predicate (walked file entry) -> may the file match?
Candidates = Callable[[list[str], bool], "Callable[[FileEntry], bool] | None"]
_GLOB_SPECIAL = re.compile(r"[\\*?\[\]!# ]")
GLOB_FIELDS = ("name", "path", "type", "size", "mode", "mtime", "tags")


@dataclass
class GrepStats:
    """What a grep run saw besides its records (filled while iterating)."""

    files: int = 0  # files with at least one record
    count: int = 0  # matching lines (matches mode and -c) or files (-l)
    truncated: bool = False
    node_limit: int = 0  # the cap in force (flag, else config, else default)
    searched: int = 0
    binary: int = 0  # skipped as binary (NUL before the first line searched)
    unreadable: int = 0
    warnings: list[str] = field(default_factory=list)
    records: int = 0  # records yielded so far (the node limit counts them)
    # files named explicitly that hold a NUL and a match: (shown path, NUL offset), said
    # as rg says it ("binary file matches") rather than searched line by line
    binary_matches: list[tuple[str, int]] = field(default_factory=list)
    level_cut: bool = False  # --level-limit left a folder unentered
    root: str = ""  # the (first) search root

    @property
    def truncated_reason(self) -> str | None:
        """What cut the result: "node_limit", "level_limit", or both, comma-joined."""
        why = [w for w, cut in (("node_limit", self.truncated), ("level_limit", self.level_cut))
               if cut]
        return ",".join(why) or None


# -- roots and paths --------------------------------------------------------------------
def _disjoint(rels: list[str]) -> list[str]:
    """Sorted component-wise, without paths inside another one (searched once)."""
    out: list[str] = []
    for r in sorted(set(rels), key=lambda r: r.split("/") if r else []):
        if any(o == "" or r == o or r.startswith(o + "/") for o in out):
            continue
        out.append(r)
    return out


def _walk_opts(hidden: bool, no_ignore: bool, max_depth: int | None,
               excludes: Sequence[str] = (), ignores: Sequence[str] = (),
               follow: bool = False) -> WalkOptions:
    # Excluded paths become anchored ignore lines, so an excluded folder is never entered;
    # `ignores` are gitignore lines from the tree's config, rooted at the search root.
    lines = tuple("/" + _GLOB_SPECIAL.sub(r"\\\g<0>", e) for e in excludes if e)
    return WalkOptions(hidden=hidden, no_ignore=no_ignore, max_filesize=None, max_depth=max_depth,
                       extra_ignores=tuple(ignores) + lines, follow=follow)


def _excluder(excludes: Sequence[str]) -> Callable[[str], bool] | None:
    if not excludes:
        return None
    ex = tuple(excludes)
    if "" in ex:
        return lambda rel: True
    prefixes = tuple(e + "/" for e in ex)
    return lambda rel: rel in ex or rel.startswith(prefixes)


def parse_tags(tags: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in tags:
        k, sep, v = t.partition("=")
        if not sep or not k.strip() or not v.strip():
            raise OvError("invalid_argument", f"invalid tag filter {t!r} (use key=value)", field="tags")
        out[k.strip()] = v.strip()
    return out


def tag_paths(root: Path, tags: dict[str, str]) -> set[str]:
    """Paths of the indexed files carrying every tag; `unsupported` without an index."""
    db = db_path_for(root)
    if not db.is_file():
        raise OvError("unsupported", "--tags needs an index (tags live in it): run `ov index` first",
                      field="tags")
    from ov.store import Filters, Store

    with Store.open(db, readonly=True) as st:
        return st.paths_where(Filters(tags=tuple(sorted(tags.items()))))


def index_candidates(root: Path) -> Candidates | None:
    """The trigram prefilter of the index under `root`, or None without an index."""
    db = db_path_for(root)
    if not db.is_file():
        return None

    def hook(literals: list[str], ignore_case: bool):
        if ignore_case or not literals:
            return None
        from ov.store import Store

        try:
            with Store.open(db, readonly=True) as st:
                cands = st.trigram_files(literals, within_s=TRIGRAM_BUDGET_S)
                if cands is None:
                    return None
                fresh = _indexed_states(db, st)
        except OvError:
            return None  # a busy or broken index must not break grep; read every file

        return Prefilter(cands, fresh)

    return hook


# A literal of common trigrams ("static inline") makes the trigram query read long
# doclists: 2.5 s of CPU on the kernel's index, where reading every file costs ~1 s. Past
# this much wall time the query is given up and every file is read (the same answer).
TRIGRAM_BUDGET_S = 0.25


def _db_signature(db: Path) -> tuple:
    """What changes whenever the index does: its file's and its write-ahead log's size and
    mtime (a commit lands in the log, a checkpoint in the file)."""
    sig = []
    for p in (db, db.with_name(db.name + "-wal")):
        try:
            s = os.stat(p)
            sig.append((s.st_size, s.st_mtime_ns, s.st_ino))
        except OSError:
            sig.append(None)
    return tuple(sig)


def _indexed_states(db: Path, store) -> dict[str, tuple[int, int]]:
    """`store.chunked_states()`, kept beside the index while the index is unchanged: the
    query reads every row of `files` (with its tiers' text), 0.24 s of CPU and seconds of
    wall time on the kernel's index at load ~20, against ~20 ms to load the copy."""
    import marshal  # noqa: PLC0415

    path = db.with_name("states.cache")
    sig = _db_signature(db)
    try:
        with open(path, "rb") as f:
            got = marshal.loads(f.read())
        if isinstance(got, tuple) and len(got) == 2 and got[0] == sig:
            return got[1]
    except (OSError, ValueError, EOFError, TypeError):
        pass
    fresh = store.chunked_states()
    if _db_signature(db) == sig:  # not written meanwhile
        write_private(str(path), marshal.dumps((sig, fresh)))
    return fresh


class Prefilter:
    """What the index says of a literal: the files whose text may hold it (`cands`), and
    the (size, mtime_ns, ctime_ns, inode) each indexed file had (`fresh`: a restored mtime
    cannot hide a change); any other file must be read."""

    __slots__ = ("cands", "fresh")

    def __init__(self, cands: set[str], fresh: dict[str, tuple[int, int, int, int]]) -> None:
        self.cands = cands
        self.fresh = fresh

    def __call__(self, rel: str, size: int, mtime_ns: int, ctime_ns: int, inode: int) -> bool:
        return rel in self.cands or self.fresh.get(rel) != (size, mtime_ns, ctime_ns, inode)


def _limited(stats: GrepStats | None, node_limit: int, max_depth: int | None) -> GrepStats:
    """The run's stats, holding the node limit in force, once both limits are checked."""
    if node_limit < 1:
        raise OvError("invalid_argument", "--node-limit must be at least 1", field="node_limit")
    if max_depth is not None and max_depth < 0:
        raise OvError("invalid_argument", "--level-limit must be 0 or more", field="level_limit")
    st = stats if stats is not None else GrepStats()
    st.node_limit = node_limit
    return st


# -- grep -------------------------------------------------------------------------------
def iter_grep(
    pattern: str,
    paths: Sequence[str] = (),
    *,
    cwd: Path | None = None,
    fixed: bool = False,
    ignore_case: bool = False,
    word: bool = False,
    multiline: bool = False,
    before: int = 0,
    after: int = 0,
    globs: Sequence[str] = (),
    types: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    no_ignore: bool = False,
    max_depth: int | None = config.DEFAULT_LEVEL_LIMIT,
    node_limit: int = config.DEFAULT_NODE_LIMIT,
    mode: str = "matches",
    tags: Sequence[str] = (),
    candidates: Candidates | None = None,
    use_index: bool = True,
    timeout: float = config.REGEX_TIMEOUT_S,
    stats: GrepStats | None = None,
    ignores: Sequence[str] = (),
    invert: bool = False,
    max_count: int | None = None,
    follow: bool = False,
    deadline_s: float | None = None,
) -> Iterator[Match | FileCount]:
    """Search file contents; yield `Match` records (mode "matches"), or `FileCount`
    records (mode "count": files with their matching-line counts; mode "files": paths).

    `node_limit` caps the records; `stats.truncated` says when it cut. `invert` (-v):
    the lines without a match; `max_count` (-m): at most that many matching lines a
    file; `follow` (-L): follow symlinks (never out of the root). `deadline_s`
    bounds the whole run in wall time: past it, `deadline_exceeded` says how far it got
    (the records yielded so far stand).
    """
    if mode not in ("matches", "count", "files"):
        raise OvError("invalid_argument", f"unknown grep mode {mode!r}", field="mode")
    st = _limited(stats, node_limit, max_depth)
    if before < 0 or after < 0:
        raise OvError("invalid_argument", "context must be 0 or more lines", field="context")
    if max_count is not None and max_count < 1:
        raise OvError("invalid_argument", "--max-count must be at least 1", field="max_count")
    if invert and (multiline or before or after):
        raise OvError("invalid_argument", "-v/--invert-match takes neither -U nor context lines",
                      field="invert")
    if deadline_s is not None and not 0 < deadline_s <= 1e6:  # also NaN
        raise OvError("invalid_argument", "--timeout must be between 0 and 1000000 seconds",
                      field="timeout")
    started = time.monotonic()
    from ov.matcher import compile_pattern  # noqa: PLC0415

    _LISTED.clear()  # a listing serves one run (and its helper), never a later one

    pat = compile_pattern(pattern, fixed=fixed, ignore_case=ignore_case, word=word,
                          multiline=multiline, timeout=timeout)
    if deadline_s is not None:
        from dataclasses import replace  # noqa: PLC0415

        pat = replace(pat, deadline=started + deadline_s)
    cwd = Path.cwd() if cwd is None else Path(cwd)
    tag_pairs = parse_tags(tags) if tags else None
    pfilter = PathFilter(globs) if globs else None
    tfilter = type_matcher(types) if types else None
    groups = plan_roots(cwd, paths)
    _check_excludes(groups, cwd, exclude)
    for root, rels, indexed in groups:
        st.root = st.root or os.fspath(root)
        ex_rels = [r for r in (inside(root, cwd, e) for e in exclude) if r is not None]
        excluded = _excluder(ex_rels)
        if excluded is not None:
            # Below a start the walk leaves excluded paths out (they are anchored ignore
            # lines, see _walk_opts); a start inside an excluded path is left out whole.
            rels = [r for r in rels if not excluded(r)]
        if tags and not indexed:
            raise OvError("unsupported", "--tags needs an index (tags live in it): "
                          "run `ov index` first", field="tags")
        allowed = tag_paths(root, tag_pairs) if tag_pairs else None
        hook = candidates if candidates is not None else (
            index_candidates(root) if use_index and indexed else None)
        # -v: a file without the pattern is all matches, so nothing may be ruled out
        may_hold = hook(list(pat.literals), pat.fold) if hook and not invert else None
        opts = _walk_opts(hidden, no_ignore, max_depth, ex_rels, ignores, follow)
        named = frozenset(r for r in rels if r and (root / r).is_file())
        show = displayer(root, cwd)
        last = ("", "")
        for r in _grep_files(pat, root, rels, opts, st, mode=mode, before=before, after=after,
                             limit=node_limit - st.records, excluded=excluded, pfilter=pfilter,
                             tfilter=tfilter, allowed=allowed, may_hold=may_hold,
                             use_listing=use_index and indexed, invert=invert,
                             max_count=max_count, named=named, show=show):
            if r.path != last[0]:
                last = (r.path, show(r.path))
            r.path = last[1]
            st.records += 1
            yield r
        if st.truncated:
            return


def iter_files(paths: Sequence[str] = (), *, cwd: Path | None = None, globs: Sequence[str] = (),
               types: Sequence[str] = (), exclude: Sequence[str] = (), hidden: bool = False,
               no_ignore: bool = False, max_depth: int | None = None,
               node_limit: int = config.DEFAULT_NODE_LIMIT, follow: bool = False,
               use_index: bool = True, stats: GrepStats | None = None,
               ignores: Sequence[str] = ()) -> Iterator[str]:
    """`--files`: the paths grep would search (relative to the current folder), in its
    order; `node_limit` caps them and `stats.truncated` says when it cut."""
    st = _limited(stats, node_limit, max_depth)
    _LISTED.clear()
    cwd = Path.cwd() if cwd is None else Path(cwd)
    pfilter = PathFilter(globs) if globs else None
    tfilter = type_matcher(types) if types else None
    for root, rels, indexed in plan_roots(cwd, paths):
        st.root = st.root or os.fspath(root)
        ex_rels = [r for r in (inside(root, cwd, e) for e in exclude) if r is not None]
        excluded = _excluder(ex_rels)
        if excluded is not None:
            rels = [r for r in rels if not excluded(r)]
        opts = _walk_opts(hidden, no_ignore, max_depth, ex_rels, ignores, follow)
        show = displayer(root, cwd)
        for rel, _ in _searchable(root, rels, opts, st, excluded=excluded, pfilter=pfilter,
                                  tfilter=tfilter, allowed=None, may_hold=None,
                                  use_listing=use_index and indexed):
            if st.records >= node_limit:
                st.truncated = True
                return
            st.records += 1
            st.files += 1
            yield show(rel)


def plan_roots(cwd: Path, paths: Sequence[str]) -> list[tuple[Path, list[str], bool]]:
    """The searches a list of PATH arguments makes: (root, start paths relative to it,
    whether the root holds an index). A PATH inside the tree of the current folder (its
    index root, else the current folder) is searched from that root, with its index; a
    PATH elsewhere from the nearest index root above it, else from itself (its folder,
    for a file): any folder on disk can be searched, with the same answer."""
    base = search_root(cwd)
    groups: dict[Path, list[str]] = {}
    for p in paths or ["."]:
        rel = inside(base, cwd, p, must_exist=True)
        if rel is not None:
            groups.setdefault(base, []).append(rel)
            continue
        a = Path(os.path.abspath(os.path.join(os.fspath(cwd), p)))
        root = search_root(a if a.is_dir() else a.parent)
        if root == a.resolve() or not db_path_for(root).is_file():
            root = a if a.is_dir() else a.parent
        groups.setdefault(root, []).append(resolve(root, cwd, p))
    return [(root, _disjoint(rels), db_path_for(root).is_file())
            for root, rels in groups.items()]


def _check_excludes(groups, cwd: Path, exclude: Sequence[str]) -> None:
    """An --exclude-uri outside every searched root is a mistake (`invalid_path`)."""
    for e in exclude:
        if all(inside(root, cwd, e) is None for root, _, _ in groups):
            resolve(groups[0][0], cwd, e, must_exist=False, field="exclude_uri")


def displayer(root: Path, cwd: Path) -> Callable[[str], str]:
    """Root-relative '/' path -> the path relative to `cwd` that grep and glob print (rg
    and `git grep` print them so: `../x` for a file outside the current folder)."""
    import posixpath  # noqa: PLC0415

    root_s, cwd_s = os.fspath(root), os.path.abspath(os.fspath(cwd))
    if os.sep != "/":
        root_s, cwd_s = root_s.replace(os.sep, "/"), cwd_s.replace(os.sep, "/")
    if root_s == cwd_s:
        return lambda rel: rel
    folders: dict[str, str] = {}

    def show(rel: str) -> str:
        folder, _, name = rel.rpartition("/")
        d = folders.get(folder)
        if d is None:
            d = posixpath.relpath(posixpath.join(root_s, folder), cwd_s)
            d = "" if d == "." else d + "/"
            folders[folder] = d
        return d + name if name else (d.rstrip("/") or ".")

    return show


def _counting(st: GrepStats) -> Callable[[str, str], None]:
    """The walk's on_skip: files that could not be stat'ed count as unreadable."""
    def on_skip(path: str, reason: str) -> None:
        if reason == "unreadable":
            st.unreadable += 1
        elif reason == "depth":
            st.level_cut = True

    return on_skip


def _entries(root: Path, rels: list[str], opts: WalkOptions, st: GrepStats,
             yield_symlinks: bool = False, stat_files: bool = True,
             keep: Callable[[str], bool] | None = None) -> Iterator[FileEntry]:
    for rel in rels:
        start = root / rel if rel else None
        yield from walk(root, opts, start=start, on_warning=st.warnings.append,
                        on_skip=_counting(st), yield_symlinks=yield_symlinks,
                        stat_files=stat_files, keep=keep)


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


# A file larger than this is searched a block at a time (issue 17: a 187 MB file took
# 381-586 MB of RSS read whole), when each line is searched alone (no -U, no context).
STREAM_BYTES = 32 << 20
BLOCK_BYTES = 8 << 20


class _Big(Exception):
    """read_searched's signal that the file is over `stream_over` bytes."""


def read_searched(abspath: str, stream_over: int | None = None) -> bytes:
    """The bytes of a file that grep may search.

    Only ripgrep's first buffer (64 KiB) is read when it holds a NUL byte: where ripgrep
    stops depends on nothing past that NUL (see `binary_cutoff`), so the rest of a
    binary file is never read. Raw `os.read` calls: no buffered file object per file.
    O_NONBLOCK: never block on a fifo put where a file was walked.
    """
    fd = os.open(abspath, _READ_FLAGS)
    try:
        head = os.read(fd, RG_BUFFER)
        if not head or b"\x00" in head:
            return head
        if len(head) < RG_BUFFER:
            # a short read of a regular file (all the walk yields) is its end: most files
            # cost one read, not a second to see the end
            return head
        size = os.fstat(fd).st_size
        if stream_over is not None and size > stream_over:
            raise _Big  # searched a block at a time (search_blocks): memory stays bounded
        # A larger file in one buffer: pread from the start (64 KiB read twice), rather
        # than chunks joined (a copy of the whole file: 1.0 of 14 s for drivers/ profiled)
        data = os.pread(fd, max(size, len(head)) + 1, 0)
        if len(data) <= size:
            return data
        parts = [data]
        os.lseek(fd, len(data), os.SEEK_SET)
        while True:  # to the end of the file, however it grew since it was walked
            chunk = os.read(fd, 1 << 22)
            if not chunk:
                break
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def search_blocks(pat: Pattern, rel: str, abspath: str, cap: int, mode: str) -> tuple[int, object]:
    """`_grep_files`'s search of one big file, BLOCK_BYTES at a time, each block cut
    after its last newline (a UTF-8 character never spans one) and its line numbers
    shifted by the lines before it: memory stays near two blocks whatever the file's
    size. A NUL past the first 64 KiB hands the file back to the whole-file search
    (ripgrep's cut-off depends on where its buffers fell)."""
    from ov.matcher import line_matches, matched_lines  # noqa: PLC0415

    try:
        fd = os.open(abspath, _READ_FLAGS)
    except OSError:
        return _UNREADABLE, None
    lines_before = 0
    carry = b""
    records: list = []
    count = 0
    first = True
    try:
        while True:
            try:
                chunk = os.read(fd, BLOCK_BYTES)
            except OSError:
                return _UNREADABLE, None
            if b"\x00" in chunk:
                return _SEARCH, None
            data = carry + chunk
            if chunk:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # one line longer than a block: read on
                    carry = data
                    continue
                block, carry = data[:cut], data[cut:]
            else:
                block, carry = data, b""
            if block and pat.may_match(block):
                text = decode(block) if first else block.decode("utf-8", "replace")
                if mode == "files":
                    if matched_lines(pat, text, 1)[0]:
                        return _FOUND, (1,)
                elif mode == "count":
                    count += len(matched_lines(pat, text)[0])
                else:
                    got, more = line_matches(pat, rel, text, cap - len(records))
                    for m in got:
                        m.line += lines_before
                    records += got
                    if more:
                        return _FOUND, (records, True)
            first = False
            lines_before += block.count(b"\n")
            if not chunk:
                break
    finally:
        os.close(fd)
    if mode == "count":
        return (_FOUND, (count,)) if count else (_NO_MATCH, None)
    if mode == "matches" and records:
        return _FOUND, (records, False)
    return _NO_MATCH, None


def _paths(root: Path, rels: list[str], opts: WalkOptions, st: GrepStats,
           cache_dir: Path | None = None) -> Iterator[tuple[str, str]]:
    """(relative, absolute) paths of the files `_entries` would yield, without stat;
    from the listing cache in `cache_dir` where it can answer."""
    for rel in rels:
        start = root / rel if rel else None
        listed = _listed(root, opts, cache_dir, start, st) if cache_dir is not None else None
        if listed is not None:
            yield from ((r, a) for r, a, link in listed if not link)
        else:
            yield from walk_paths(root, opts, start=start, on_warning=st.warnings.append,
                                  on_skip=_counting(st))


# The listings of this run's cached walks (cleared as a run starts): a forked helper
# inherits them instead of checking the folders a second time.
_LISTED: dict[tuple, tuple[list[tuple[str, str, bool]] | None, list[str]]] = {}


def _listed(root: Path, opts: WalkOptions, cache_dir: Path, start: Path | None,
            st: GrepStats) -> list[tuple[str, str, bool]] | None:
    from ov.walk import cached_walk  # noqa: PLC0415

    key = (os.fspath(root), opts, os.fspath(cache_dir), start and os.fspath(start))
    if key not in _LISTED:
        if len(_LISTED) > 8:
            _LISTED.clear()
        cut: list[str] = []
        _LISTED[key] = (cached_walk(root, opts, cache_dir, start=start,
                                    on_warning=st.warnings.append, on_skip=cut.append), cut)
    listed, cut = _LISTED[key]
    if cut:
        st.level_cut = True
    return listed


def _prefiltered(files: Iterator[tuple[str, str]], pre: Prefilter,
                 st: GrepStats) -> Iterator[tuple[str, str]]:
    """The files the index cannot rule out: its candidates, and every file whose size,
    mtime, ctime or inode is not what was indexed (one lstat each; the candidates need none)."""
    cands, fresh = pre.cands, pre.fresh
    lstat = os.lstat
    for rel, abspath in files:
        if rel not in cands:
            try:
                s = lstat(abspath)
            except OSError as err:
                st.warnings.append(f"{rel}: {err.strerror or err}")
                st.unreadable += 1
                continue
            if fresh.get(rel) == (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino):
                continue
        yield rel, abspath


# -- a second process for grep -------------------------------------------------------------
# A search of a whole tree is bound by one open, read and close per file and by the regex
# engine, one file at a time (a thread pool measured no faster: the GIL). Past the first
# HELPER_AFTER files, a forked helper process takes every other block of BLOCK files: it
# walks the same tree in the same order, searches the files of its blocks and sends the
# parent, block by block, what each file holds (nothing, binary, unreadable, or its
# records as plain tuples, up to SHIP_MAX of them). The parent builds the records, counts
# and limits from those, in its own order, so the answer is the one it would find alone.
# A helper block is checked name by name against the parent's own walk, and a block whose
# names differ (the tree changed between the two walks), or that never arrives (the helper
# died), is searched by the parent itself.
BLOCK = 64
HELPER_AFTER = 512
# A file with more records than this is left to the parent: rebuilding a record from its
# tuple costs the parent about what finding it does (`\)$`, 234,256 lines: 1.46 s alone,
# 1.97 s with every record shipped, 1.30 s with at most 16 a file).
SHIP_MAX = 16
# per-file answers of the helper
_NO_MATCH, _SEARCH, _BINARY, _UNREADABLE, _FOUND, _BINARY_MATCH = 0, 1, 2, 3, 4, 5


def _idle_core() -> bool:
    """Whether a second process would have a core to itself: with every core busy, the
    parent would wait on a helper that is not running (0.10 -> 0.13 s for a search of the
    standard library on 2 cores, one of them busy; 0.10 -> 0.07 s with both idle).

    What counts is the moment: the number of tasks running now (Linux's /proc/loadavg,
    this process among them), else the one-minute load average."""
    if not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        with open("/proc/loadavg", "rb") as fh:
            others = int(fh.read().split()[3].split(b"/")[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            others = os.getloadavg()[0]
        except (AttributeError, OSError):
            others = 0
    return others <= cores - 2


def _single_threaded() -> bool:
    """Whether this process runs no other thread: a forked child holds copies of the locks
    other threads held at that moment, and may wait on one forever (an embedding program
    that greps from a worker thread; CPython 3.12 warns of fork with threads)."""
    import sys  # noqa: PLC0415

    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


class _Helper:
    """The forked helper of one grep run (see above); `verdict` is the parent's side."""

    def __init__(self, first: int, make_files: Callable[[], Iterator[tuple[str, str]]],
                 check: Callable[[str, str], tuple[int, object]]) -> None:
        self.first = first  # the helper's blocks: first, first + 2, first + 4...
        self.block = -1
        self.answers: tuple[list[str], list[tuple[int, object]]] | None = None
        rfd, wfd = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:  # a process limit, no memory: the caller searches alone
            os.close(rfd)
            os.close(wfd)
            raise
        if self.pid == 0:  # the helper: never returns
            os.close(rfd)
            code = 1
            try:
                self._serve(wfd, make_files, check)
                code = 0
            finally:
                os._exit(code)  # no flush of the parent's buffers, no atexit
        os.close(wfd)
        self.pipe = os.fdopen(rfd, "rb")

    def owns(self, block: int) -> bool:
        return block >= self.first and (block - self.first) % 2 == 0

    def _serve(self, wfd: int, make_files, check) -> None:
        import marshal  # noqa: PLC0415

        names: list[str] = []
        answers: list[tuple[int, object]] = []
        current = -1

        def send() -> None:
            body = marshal.dumps((names, answers))
            msg = b"%d %d\n" % (current, len(body)) + body
            while msg:
                msg = msg[os.write(wfd, msg):]

        for i, (rel, abspath) in enumerate(make_files()):
            block = i // BLOCK
            if not self.owns(block):
                continue
            if block != current:
                if names:
                    send()
                names, answers, current = [], [], block
            names.append(rel)
            try:
                answers.append(check(rel, abspath))
            except BaseException:  # the parent searches it and reports what goes wrong
                answers.append((_SEARCH, None))
        if names:
            send()

    def verdict(self, block: int, offset: int, rel: str) -> tuple[int, object]:
        """The helper's (answer, records) for the file at `offset` in `block` named
        `rel`; (_SEARCH, None) when the parent must search it itself."""
        if block != self.block:
            self.block = block
            self.answers = self._receive(block)
        got = self.answers
        if got is None:
            return _SEARCH, None
        names, answers = got
        if offset >= len(names) or names[offset] != rel:
            self.answers = None  # the trees differ: the parent searches the rest
            return _SEARCH, None
        return answers[offset]

    def _receive(self, block: int):
        import marshal  # noqa: PLC0415

        while True:
            head = self.pipe.readline()
            if not head:
                return None  # the helper ended early
            try:
                got, size = (int(x) for x in head.split())
            except ValueError:
                return None
            body = self.pipe.read(size)
            if len(body) != size:
                return None
            if got < block:
                continue  # a block the parent no longer waits for
            if got > block:
                return None  # the helper had no files in this block: the walks differ
            try:
                return marshal.loads(body)
            except (ValueError, EOFError, TypeError):
                return None

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.pipe.close()


def _searchable(root: Path, rels: list[str], opts: WalkOptions, st: GrepStats, *, excluded,
                pfilter, tfilter, allowed, may_hold, use_listing: bool = False
                ) -> Iterator[tuple[str, str]]:
    """(relative, absolute) paths of the files a grep reads, in walk order."""
    cache_dir = listing_dir(root) if use_listing else None
    if may_hold is None:  # size and mtime serve the index prefilter only
        files = _paths(root, rels, opts, st, cache_dir)
    elif isinstance(may_hold, Prefilter):
        files = _prefiltered(_paths(root, rels, opts, st, cache_dir), may_hold, st)
    else:
        files = ((e.path, e.abspath) for e in _entries(root, rels, opts, st)
                 if may_hold(e))
    if excluded is None and pfilter is None and tfilter is None and allowed is None:
        yield from files  # no per-path test: one generator less per file
        return
    for rel, abspath in files:
        # Tested again per path: a gitignore line cannot hold every name (a trailing
        # tab or CR, a newline), so the walk alone does not leave out all of them.
        if excluded is not None and excluded(rel):
            continue
        if pfilter is not None and not pfilter(rel):
            continue
        if tfilter is not None and not tfilter(rel):
            continue
        if allowed is not None and rel not in allowed:
            continue
        yield rel, abspath


def _grep_files(pat: Pattern, root: Path, rels: list[str], opts: WalkOptions, st: GrepStats, *,
                mode: str, before: int, after: int, limit: int, excluded, pfilter, tfilter,
                allowed, may_hold, helper_after: int | None = HELPER_AFTER,
                use_listing: bool = False, invert: bool = False, max_count: int | None = None,
                named: frozenset[str] = frozenset(), show: Callable[[str], str] = str
                ) -> Iterator[Match | FileCount]:
    from ov.matcher import (binary_cutoff, build_matches, inverted_matches,  # noqa: PLC0415
                         line_matches, matched_lines)

    emitted = 0
    context = before or after
    may_match = pat.file_test() if not invert else None
    # a big file is searched a block at a time; context lines, -U, -v and -m want the
    # whole text
    stream_over = None if context or pat.multiline or invert or max_count else STREAM_BYTES

    def make_files() -> Iterator[tuple[str, str]]:
        return _searchable(root, rels, opts, GrepStats(), excluded=excluded, pfilter=pfilter,
                           tfilter=tfilter, allowed=allowed, may_hold=may_hold,
                           use_listing=use_listing)

    def search(rel: str, abspath: str, cap: int) -> tuple[int, object]:
        """What one file holds: (_UNREADABLE | _BINARY | _NO_MATCH, None) or (_FOUND, found)
        where found is (1,) for -l, (count,) for -c, else (records, more): up to `cap`
        records, and whether more exist."""
        try:
            try:
                data = read_searched(abspath, stream_over)
            except _Big:
                answer, found = search_blocks(pat, rel, abspath, cap, mode)
                if answer != _SEARCH:
                    return answer, found
                data = read_searched(abspath)  # a NUL further on: ripgrep's cut-off applies
        except OSError:
            return _UNREADABLE, None
        # The literal test first: most files fail it, and then where a NUL lies matters
        # not (one pass over their bytes, not two). A file named explicitly is searched
        # with its NULs read as newlines, which the raw bytes' test cannot speak for.
        is_named = rel in named
        if may_match is not None and not is_named and not may_match(data):
            return _NO_MATCH, None
        nul = data.find(b"\x00")
        if nul >= 0:
            if is_named:  # named explicitly: searched whole, and said so (as rg)
                return _binary_named(rel, abspath, nul)
            cut = binary_cutoff(data, nul)
            if cut == 0:
                return _BINARY, None
            data = data[:cut]
            if may_match is not None and not may_match(data):
                return _NO_MATCH, None
        elif is_named and may_match is not None and not may_match(data):
            return _NO_MATCH, None
        text = decode(data)
        # -m: a file's own cap is no cut of the result; the node limit's (cap) is
        each = cap if max_count is None else min(cap, max_count)
        if invert:
            records, more = inverted_matches(pat, rel, text, None if mode != "matches" else each)
            if mode == "files":
                return (_FOUND, (1,)) if records else (_NO_MATCH, None)
            if mode == "count":
                n = len(records) if max_count is None else min(len(records), max_count)
                return (_FOUND, (n,)) if n else (_NO_MATCH, None)
        elif mode == "files":
            return (_FOUND, (1,)) if matched_lines(pat, text, 1)[0] else (_NO_MATCH, None)
        elif mode == "count":
            lines, _ = matched_lines(pat, text, max_count)
            return (_FOUND, (len(lines),)) if lines else (_NO_MATCH, None)
        elif context:
            lines, more = matched_lines(pat, text, each)
            records = build_matches(rel, text, lines, before, after)
        else:
            records, more = line_matches(pat, rel, text, each)
        if max_count is not None and each == max_count:
            more = False
        return (_FOUND, (records, more)) if records else (_NO_MATCH, None)

    def _binary_named(rel: str, abspath: str, nul: int) -> tuple[int, object]:
        try:
            with open(abspath, "rb") as fh:
                whole = fh.read()
        except OSError:
            return _UNREADABLE, None
        text = decode(whole.replace(b"\x00", b"\n"))
        if (invert and inverted_matches(pat, rel, text, 1)[0]) or (
                not invert and matched_lines(pat, text, 1)[0]):
            return _BINARY_MATCH, nul
        return _BINARY, None

    def check(rel: str, abspath: str) -> tuple[int, object]:
        """`search` in the helper, its records as tuples (marshal sends no objects)."""
        # one record past SHIP_MAX says the file is the parent's, without finding the rest
        answer, found = search(rel, abspath, min(limit, SHIP_MAX + 1))
        if answer == _FOUND and mode == "matches":
            records, more = found  # type: ignore[misc]
            if len(records) > SHIP_MAX:
                return _SEARCH, None
            found = ([_record_tuple(r) for r in records], more)
        return answer, found

    helper: _Helper | None = None
    files = _searchable(root, rels, opts, st, excluded=excluded, pfilter=pfilter, tfilter=tfilter,
                        allowed=allowed, may_hold=may_hold, use_listing=use_listing)
    alarm = _WallClock(pat, st)
    try:
        for i, (rel, abspath) in enumerate(files):
            if pat.deadline is not None and time.monotonic() > pat.deadline:
                raise _past_deadline(pat, st)
            answer = _SEARCH
            if helper is not None:
                block = i // BLOCK
                if helper.owns(block):
                    answer, found = helper.verdict(block, i % BLOCK, rel)
                    if answer == _FOUND and mode == "matches":
                        tuples, more = found  # type: ignore[misc]
                        found = ([_record(rel, t) for t in tuples], more)
            elif i == helper_after and _idle_core() and _single_threaded():
                # asked here, once, when a tree is large enough: a small one pays nothing
                try:
                    helper = _Helper(i // BLOCK + 1, make_files, check)
                except OSError:  # no pipe or no fork (EMFILE, EAGAIN): search alone
                    helper = None
            if answer == _SEARCH:
                try:
                    if alarm.active:
                        alarm.file_deadline = time.monotonic() + pat.timeout * FILE_WALL_FACTOR
                    answer, found = search(rel, abspath, max(1, limit - emitted))
                    alarm.file_deadline = None
                except OvError as e:
                    alarm.file_deadline = None
                    if e.code == "deadline_exceeded" and pat.deadline is not None \
                            and time.monotonic() >= pat.deadline:
                        raise _past_deadline(pat, st) from None
                    raise
            if answer == _UNREADABLE:
                st.unreadable += 1
                continue
            st.searched += 1
            if answer == _BINARY:
                st.binary += 1
                continue
            if answer == _BINARY_MATCH:
                st.binary_matches.append((show(rel), found))  # type: ignore[arg-type]
                continue
            if answer != _FOUND:
                continue
            if emitted >= limit:
                # One more record would exist: say the limit cut, and stop.
                st.truncated = True
                return
            if mode == "files":
                st.files += 1
                st.count += 1
                emitted += 1
                yield FileCount(rel)
                continue
            if mode == "count":
                st.files += 1
                st.count += found[0]  # type: ignore[index]
                emitted += 1
                yield FileCount(rel, found[0])  # type: ignore[index]
                continue
            records, more = found  # type: ignore[misc]
            room = limit - emitted
            if len(records) > room:  # a helper's answer, found up to the whole limit
                if context:  # context lines stop at the next match: find them anew
                    again, found = search(rel, abspath, room)
                    if again != _FOUND:  # the file changed since the helper read it
                        continue
                    records, more = found  # type: ignore[misc]
                else:  # line records do not depend on those after them
                    records, more = records[:room], True
            st.files += 1
            st.count += len(records)
            emitted += len(records)
            yield from records
            if more:
                st.truncated = True
                return
    finally:
        alarm.cancel()
        if helper is not None:
            helper.close()


# A file's search may take this many times the regex limit in wall time. The limit
# itself is `regex`'s, in CPU time (5 s ran 17.6 s of wall at load 16, and past 60 s under
# the test suite's load); held to 5 s of wall, a linear search of 200,000 blank lines
# failed under that load, so the wall bound is looser.
FILE_WALL_FACTOR = 4


class _WallClock:
    """The deadlines in wall time: the command's (--timeout), and a file's search at
    FILE_WALL_FACTOR times the regex limit. `regex`'s own timeout counts CPU time, while a
    SIGALRM handler's exception interrupts a running regex search: so, in the main thread
    and with no timer of another user, a timer ticking four times a second raises
    `deadline_exceeded` when either time is up (`file_deadline` is set around each file's
    search: an attribute store, no system call per file). Elsewhere the checks against
    `Pattern.deadline` and `regex`'s timeout stand alone."""

    TICK_S = 0.25

    def __init__(self, pat: Pattern, st: GrepStats) -> None:
        import signal  # noqa: PLC0415
        import threading  # noqa: PLC0415

        self.old = None
        self.active = False
        self.file_deadline: float | None = None
        if pat.deadline is None or threading.current_thread() is not threading.main_thread() \
                or not hasattr(signal, "setitimer") or signal.getitimer(signal.ITIMER_REAL)[0]:
            return

        def fire(signum, frame):
            now = time.monotonic()
            if now >= pat.deadline:  # type: ignore[operator]
                raise _past_deadline(pat, st)
            if self.file_deadline is not None and now >= self.file_deadline:
                self.file_deadline = None
                raise OvError("deadline_exceeded", f"the pattern ran past "
                              f"{pat.timeout * FILE_WALL_FACTOR:g} s of wall time on one file",
                              field="pattern")

        self.old = signal.signal(signal.SIGALRM, fire)
        self.active = True
        signal.setitimer(signal.ITIMER_REAL, self.TICK_S, self.TICK_S)

    def cancel(self) -> None:
        if self.old is not None:
            import signal  # noqa: PLC0415

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
            self.old = None
            self.active = False


def _past_deadline(pat: Pattern, st: GrepStats) -> OvError:
    return OvError("deadline_exceeded",
                   f"grep ran past its time limit (--timeout) after searching {st.searched} "
                   f"file(s), {st.count} match(es) found so far", field="timeout")


def _record_tuple(m: Match) -> tuple:
    return (m.line, m.content, [(s.start, s.end, s.text) for s in m.submatches],
            [(c.line, c.content) for c in m.before_context],
            [(c.line, c.content) for c in m.after_context])


def _record(rel: str, t: tuple) -> Match:
    line, content, subs, before, after = t
    return Match(rel, line, content, [Submatch(*s) for s in subs],
                 [ContextLine(*c) for c in before], [ContextLine(*c) for c in after])


def grep(pattern: str, paths: Sequence[str] = (), **kw) -> GrepResult:
    """Run `iter_grep` to the end and collect a `GrepResult` (see `iter_grep` for options)."""
    st = GrepStats()
    mode = kw.get("mode", "matches")
    from ov.matcher import gc_paused  # noqa: PLC0415

    with gc_paused():  # see gc_paused: millions of acyclic records
        records = list(iter_grep(pattern, paths, stats=st, **kw))
    res = result_of(st)
    if st.unreadable:
        res.warnings.append(unreadable_warning(st.unreadable))
    if mode == "matches":
        res.matches = records  # type: ignore[assignment]
    elif mode == "count":
        res.counts = {r.path: r.count for r in records}  # type: ignore[union-attr]
    else:
        res.paths = [r.path for r in records]
    return res


def result_of(st: GrepStats) -> GrepResult:
    """The `GrepResult` of a finished run, its records not yet set."""
    res = GrepResult(matches=[], count=st.count, files=st.files,
                     truncated=st.truncated or st.level_cut, warnings=list(st.warnings),
                     truncated_reason=st.truncated_reason, root=st.root or None)
    res.warnings += [binary_note(p, off) for p, off in st.binary_matches]
    return res


def binary_note(path: str, offset: int) -> str:
    """rg's words for a binary file named explicitly that holds a match."""
    return f'{path}: binary file matches (found "\\0" byte around offset {offset})'


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


# -- glob -------------------------------------------------------------------------------
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
    if not db.is_file() or not paths:
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


def glob(
    pattern: str,
    path: str | None = None,
    *,
    cwd: Path | None = None,
    ignore_case: bool = False,
    hidden: bool = False,
    no_ignore: bool = False,
    max_depth: int | None = config.DEFAULT_LEVEL_LIMIT,
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
    st = _limited(stats, node_limit, max_depth)
    match = compile_glob(pattern, ignore_case=ignore_case, hidden=hidden)
    _LISTED.clear()
    for f in fields:
        if f not in GLOB_FIELDS:
            raise OvError("invalid_argument", f"unknown field {f!r}", field="fields")
    cwd = Path.cwd() if cwd is None else Path(cwd)
    # The pattern is relative to PATH (else the current folder), as pathlib's
    # Path(PATH).glob(pattern) reads it; printed paths are relative to the current folder.
    groups = plan_roots(cwd, [path if path is not None else "."])
    _check_excludes(groups, cwd, exclude)
    ((root, (rel,), indexed),) = groups
    single = not (root / rel).is_dir()  # a file: listed when its name matches
    st.root = os.fspath(root)
    ex_rels = [r for r in (inside(root, cwd, e) for e in exclude) if r is not None]
    excluded = _excluder(ex_rels)
    tag_pairs = parse_tags(tags) if tags else None
    if tags and not indexed:
        raise OvError("unsupported", "--tags needs an index (tags live in it): run `ov index` first",
                      field="tags")
    allowed = tag_paths(root, tag_pairs) if tag_pairs else None  # before the node limit
    if single:
        start, depth, user_cut = rel, max_depth, False
        cut = rel.rfind("/") + 1
    else:
        start_b, depth, user_cut = _glob_walk_plan(pattern, "", max_depth, ignore_case)
        start = None if start_b is None else "/".join(x for x in (rel, start_b) if x)
        cut = len(rel) + 1 if rel else 0
    found: list[FileEntry] = []
    truncated = False
    starts = [] if start is None or not os.path.lexists(root / start) else [start]
    if excluded is not None and starts and excluded(start):
        starts = []  # below the start, the walk leaves excluded paths out
    opts = _walk_opts(hidden, no_ignore, depth, ex_rels, ignores)
    keep = match if not cut else (lambda r: match(r[cut:]))
    # Only the paths that match are stat'ed, and only when a field needs it.
    need_stat = any(f in ("size", "mode", "mtime") for f in fields)
    cache_dir = listing_dir(root) if use_index and indexed else None
    listed = (_listed(root, opts, cache_dir, root / starts[0] if starts[0] else None, st)
              if cache_dir is not None and starts else None)
    if listed is not None:
        entries: Iterator[FileEntry] = (FileEntry(r, a, -1, -1, 0, link)
                                        for r, a, link in listed if keep(r))
    else:
        entries = _entries(root, starts, opts, st, yield_symlinks=True, stat_files=False,
                           keep=keep)
    for e in entries:
        # excluded: tested per path too, see _grep_files
        if (excluded is None or not excluded(e.path)) and (allowed is None or e.path in allowed):
            if len(found) >= node_limit:
                truncated = True
                break
            if need_stat and e.size < 0:
                try:
                    s = os.lstat(e.abspath)
                except OSError as err:
                    st.warnings.append(f"{e.path}: {err.strerror or err}")
                    st.unreadable += 1
                    continue
                e = FileEntry(e.path, e.abspath, s.st_size, s.st_mtime_ns, s.st_mode, e.is_symlink)
            found.append(e)
    st.truncated = truncated
    if not user_cut:
        st.level_cut = False  # the pattern's own depth, not --level-limit, stopped the walk
    warnings = list(st.warnings)
    if st.unreadable:
        warnings.append(unreadable_warning(st.unreadable))
    show = displayer(root, cwd)
    if not fields:
        return GlobResult([show(e.path) for e in found], len(found), truncated or st.level_cut,
                          warnings,
                          truncated_reason=st.truncated_reason, root=st.root)
    tags = _file_tags(root, [e.path for e in found]) if "tags" in fields else {}
    entries = [glob_entry(e, fields, tags.get(e.path), show(e.path)) for e in found]
    return GlobResult(entries, len(entries), truncated or st.level_cut, warnings,
                      truncated_reason=st.truncated_reason, root=st.root)
