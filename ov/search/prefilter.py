"""What an index tells grep and glob: which files cannot hold a pattern's literals, and
which files carry the asked tags.

The index, where there is one, only makes grep faster: `index_candidates` returns a
predicate from the FTS5 trigram table (and the trigram bitmaps of the files too large to
index, ov.grams) that rules out files which cannot hold the pattern's required literals.
It trusts the index only for files whose size, mtime, ctime and inode are what was
indexed, or, while a watcher's change journal vouches (ov.journal), for the files nobody
touched since the index was brought up to date; any other file is read, so the answer is
the same either way. `--tags` needs the index (tags live in it): `tag_paths`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ov.config import WalkOptions
from ov.errors import OvError
from ov.paths import db_path_for, usable_index
from ov.search.scope import Candidates, GrepStats
from ov.walk import read_sealed, write_sealed

if TYPE_CHECKING:
    from ov.journal import Changes


def tag_paths(root: Path, tags: dict[str, str]) -> set[str]:
    """Paths of the indexed files carrying every tag; `unsupported` without an index."""
    db = db_path_for(root)
    if not usable_index(db):
        raise OvError("unsupported", "--tags needs an index (tags live in it): run `ov index` first",
                      field="tags")
    from ov.store import Filters, Store

    with Store.open(db, readonly=True) as st:
        return st.paths_where(Filters(tags=tuple(tags.items()) if isinstance(tags, dict) else tuple(tags)))


def tagged(root: Path, tags: dict[str, str] | None, indexed: bool,
           warn: Callable[[str], None] | None = None) -> set[str] | None:
    """The paths `--tags` allows under `root` (None: no tags asked); `unsupported` for a
    root without an index. `warn` hears when no indexed file carries them: a misspelt tag
    answered exit 1 without a word, as if nothing matched."""
    if not tags:
        return None
    if not indexed:
        raise OvError("unsupported", "--tags needs an index (tags live in it): run `ov index` first",
                      field="tags")
    got = tag_paths(root, tags)
    if not got and warn is not None:
        warn(no_tagged_note(tags))
    return got


def no_tagged_note(tags) -> str:
    """The warning for `--tags` that no indexed file carries (`tags`: pairs or a dict)."""
    pairs = list(tags.items()) if isinstance(tags, dict) else list(tags)
    shown = " ".join(f"{k}={v}" for k, v in pairs)
    return (f"--tags {shown}: no indexed file carries {'this tag' if len(pairs) == 1 else 'these tags'}, "
            "so nothing was searched (`ov glob '**' -f path,tags` lists the tags)")


def index_candidates(root: Path, notice: Callable[[str], None] | None = None) -> Candidates | None:
    """The trigram prefilter of the index under `root`, or None without an index. An index
    that cannot be read (from an older ov, damaged) is told to `notice` once: grep then
    reads every file, the same answer, slower, and the user should know why."""
    db = db_path_for(root)
    if not usable_index(db):
        return None

    def hook(literals: list[str], ignore_case: bool):
        if not literals:
            return None
        from ov.journal import ask  # noqa: PLC0415

        # asked before the index is read: what was not touched by then has its row there
        changes = ask(db, root)
        try:
            return _read_prefilter(db, literals, changes, ignore_case)
        except OvError as e:
            # a busy or broken index must not break grep: read every file
            if notice is not None:
                notice(f"the index was not used, every file was read: {e.message}")
            return None

    return hook


def _read_prefilter(db: Path, literals: list[str], changes: Changes | None,
                    fold: bool = False) -> Prefilter | None:
    """The index's word on `literals` (`fold`: in any case, grep's `-i`), every part of it
    from one state of the index (one read transaction): candidates from one state and file
    states from a later one would skip a file indexed in between."""
    from ov.grams import literal_grams  # noqa: PLC0415
    from ov.store import Store  # noqa: PLC0415

    wanted = literal_grams(literals, fold)
    with Store.open(db, readonly=True) as st, st.snapshot():
        sig = _index_signature(db, st)
        cands = st.trigram_files(literals, within_s=TRIGRAM_BUDGET_S, fold=fold)
        if cands is None:
            return None
        big_out = _big_files_ruled_out(st.big_file_grams() if wanted else [], wanted)
        if changes is not None:  # the states of the touched files alone, for now
            return Prefilter(cands, None, big_out, db=db, sig=sig, changes=changes,
                             touched_states=st.chunked_states_of(changes.paths))
        return Prefilter(cands, {**_indexed_states(db, st, sig), **big_out}, big_out)


def _big_files_ruled_out(big: list, wanted: list) -> dict[str, tuple[int, int, int, int]]:
    """The files `ov index` skipped for their size (`Store.big_file_grams`) whose trigram
    bitmaps lack one of `wanted` (ov.grams), with the (size, mtime_ns, ctime_ns, inode)
    they were read at: in `Prefilter.fresh` and not among its candidates, such a file is
    read only when it changed since, as an indexed file the trigram rows rule out."""
    from ov.grams import lacks  # noqa: PLC0415

    return {path: state for path, state, bits in big if lacks(bits, wanted)}


# A literal of common trigrams ("static inline") makes the trigram query read long
# doclists: 2.5 s of CPU on the kernel's index, where reading every file costs ~1 s. Past
# this much wall time the query is given up and every file is read (the same answer).
TRIGRAM_BUDGET_S = 0.25


def _index_signature(db: Path, store) -> tuple:
    """What changes whenever the index's files or their chunks do, read in the caller's
    read transaction: the index file's inode (an index made anew) and the generation
    every write of files and chunks moves in the same transaction (ov.indexer: a
    lexical pass's commits, a watcher's batch, files removed). A file whose stat alone
    changed (`touch_file`) leaves it as it was: the state cached then is older than the
    file's, so grep reads that file, as for any file changed since it was indexed.

    Vectors leave it alone. It was the index file's and its log's size and mtime, which
    every commit of a background worker's vectors moves (hours of them on a big tree):
    each grep beside the worker read all 78,000 file states of the kernel's index again
    (a rare literal took 0.55 s against 0.38 s with the worker stopped)."""
    try:
        inode = os.stat(db).st_ino
    except OSError:
        inode = None
    return (inode, store.generation())


def _indexed_states(db: Path, store, sig: tuple) -> dict[str, tuple[int, int]]:
    """`store.chunked_states()` (a dict the caller owns: the copy on disk is written
    before it returns), kept beside the index while the index is unchanged (`sig`, read in
    the same read transaction as the states): the query reads every row of `files` (with
    its tiers' text), 0.24 s of CPU and seconds of wall time on the kernel's index at load
    ~20, against ~20 ms to load the copy."""
    import marshal  # noqa: PLC0415

    path = db.with_name("states.cache")
    got = _cached(path, sig)
    if got is not None:
        return got
    fresh = store.chunked_states()
    write_sealed(str(path), marshal.dumps((sig, fresh)))
    return fresh


def _cached(path: Path, key):
    """What a cache file beside the index holds for `key` (written as `(key, value)` with
    marshal), else None."""
    import marshal  # noqa: PLC0415

    raw = read_sealed(path)
    if raw is None:
        return None
    try:
        got = marshal.loads(raw)
    except (ValueError, EOFError, TypeError):
        return None
    if isinstance(got, tuple) and len(got) == 2 and got[0] == key:
        return got[1]
    return None


class Prefilter:
    """What the index says of a literal: the files whose text may hold it (`cands`), and
    the (size, mtime_ns, ctime_ns, inode) each indexed file had (`fresh`: a restored mtime
    cannot hide a change), the big files whose bitmaps rule the literal out among them
    (`big_out`); any other file must be read.

    With a watcher's change journal (`changes`: the paths touched since the index was
    brought up to date, `ov.journal`), `trusted_files` picks the files to read from the
    listing cache without a pass over every file: the candidates, the touched files whose
    state is not the indexed one (`touched_states`), the other names of touched files with
    several links, and the files the index does not hold (`unindexed`) but the big files
    their bitmaps rule out. Every file nobody touched is then trusted to the index, unstat'ed.
    Where that cannot answer, `fresh` is read (from the same state of the index, `sig`, or
    not at all) and each file is stat'ed, as without a journal."""

    __slots__ = ("cands", "_fresh", "big_out", "db", "sig", "changes", "touched_states", "_chunked")

    def __init__(self, cands: set[str], fresh: dict[str, tuple[int, int, int, int]] | None,
                 big_out: dict[str, tuple[int, int, int, int]] | None = None, *,
                 db: Path | None = None, sig: tuple | None = None, changes: Changes | None = None,
                 touched_states: dict[str, tuple[int, int, int, int]] | None = None) -> None:
        self.cands = cands
        self._fresh = fresh
        self.big_out = big_out or {}
        self.db = db
        self.sig = sig
        self.changes = changes
        self.touched_states = touched_states or {}
        self._chunked: dict[str, tuple[int, int, int, int]] | None = None

    def _chunked_states(self) -> dict[str, tuple[int, int, int, int]] | None:
        """Every indexed file's state, from the state of the index the candidates came from
        (None when the index moved on since, or cannot be read now)."""
        if self._chunked is None and self.db is not None:
            from ov.store import Store  # noqa: PLC0415

            try:
                with Store.open(self.db, readonly=True) as st, st.snapshot():
                    if _index_signature(self.db, st) != self.sig:
                        return None
                    got = _indexed_states(self.db, st, self.sig)
            except OvError:
                return None
            self._chunked = got
        return self._chunked

    @property
    def fresh(self) -> dict[str, tuple[int, int, int, int]]:
        if self._fresh is None:
            # without the states of the candidates' moment, only the bitmaps' own are known
            self._fresh = {**(self._chunked_states() or {}), **self.big_out}
        return self._fresh

    def __call__(self, rel: str, size: int, mtime_ns: int, ctime_ns: int, inode: int) -> bool:
        return rel in self.cands or self.fresh.get(rel) != (size, mtime_ns, ctime_ns, inode)

    def trusted_files(self, root: Path, rels: list[str], opts: WalkOptions, st: GrepStats,
                      cache_dir: Path) -> list[tuple[str, str]] | None:
        """Given a change journal: the (relative, absolute) paths to read under the start
        folders `rels`, in walk order, from the listing cache; None when this way cannot
        answer (no journal, a start that is not a folder reached through folders,
        `--level-limit`, `-L`, the index moved on since the candidates were read...)."""
        if self.changes is None or self.db is None:
            return None
        from ov.walk import listed  # noqa: PLC0415

        lst = listed(root, opts, cache_dir, changes=self.changes, on_warning=st.warnings.append)
        if lst is None or not all(lst.is_folder(r) for r in rels):
            return None
        unindexed = self._unindexed(lst)
        if unindexed is None:
            return None
        touched, cands, big_out = self.changes.paths, self.cands, self.big_out
        whole = "" in rels
        starts = tuple(r + "/" for r in rels)

        def place(r: str) -> tuple[int, ...] | None:
            return lst.order(r) if whole or r.startswith(starts) else None

        order: dict[str, tuple[int, ...]] = {}
        settled: set[str] = set()  # decided by their state: read (in `order`) or not
        linked: set[int] = set()  # inodes whose other names inotify may not have named
        for r in touched:  # read unless still in the state the index (or a bitmap) holds
            now = _state(lst.root_abs, r)
            was = self.touched_states.get(r) or big_out.get(r)
            if now is None:  # gone: its inode's other names may hold what was written last
                if was is not None:
                    linked.add(was[3])
            elif now[4] > 1:  # whether grep reads this name or not (ignored, outside PATH)
                linked.add(now[3])
            key = place(r)
            if key is None:
                continue
            settled.add(r)
            if now is None or r in cands or was != now[:4]:
                order[r] = key  # one that cannot be stat'ed is read: the read says why not
        if linked:  # the other names of a touched file with several links: inotify names one
            others = self._linked(linked)
            if others is None:
                return None
            for r, was in others.items():
                key = place(r) if r not in settled else None
                if key is None:
                    continue
                now = _state(lst.root_abs, r)
                settled.add(r)
                if now is None or r in cands or was != now[:4]:
                    order[r] = key
        for r in cands:
            if r not in settled and (key := place(r)) is not None:
                order[r] = key
        for r in unindexed:  # a big file nobody touched whose bitmap rules it out: not read
            if r not in settled and r not in big_out and (key := place(r)) is not None:
                order[r] = key
        base = lst.root_abs + os.sep
        return [(r, base + r.replace("/", os.sep)) for r in sorted(order, key=order.__getitem__)]

    def _linked(self, inodes: set[int]) -> dict[str, tuple[int, int, int, int]] | None:
        """Indexed files and ruled-out big files with one of `inodes`, with the state the
        index holds; None when the index moved on since the candidates were read."""
        from ov.store import Store  # noqa: PLC0415

        assert self.db is not None
        try:
            with Store.open(self.db, readonly=True) as st, st.snapshot():
                if _index_signature(self.db, st) != self.sig:
                    return None
                got = st.chunked_states_of_inodes(inodes)
        except OvError:
            return None
        got.update((r, s) for r, s in self.big_out.items() if s[3] in inodes)
        return got

    def _unindexed(self, lst) -> list[str] | None:
        """The listed files the index holds no text of, kept beside the index for this
        state of the index and of the listing (a pass over every file when either moved);
        None when the index moved on since the candidates were read."""
        import marshal  # noqa: PLC0415

        assert self.db is not None
        path = self.db.with_name("unindexed.cache")
        key = (self.sig, lst.sig)
        got = _cached(path, key) if lst.sig is not None else None
        if got is not None:
            return got
        indexed = self._chunked_states()  # not `fresh`: what bitmaps rule out depends on the literal
        if indexed is None:
            return None
        out = [r for r in lst.files() if r not in indexed]
        if lst.sig is not None:
            write_sealed(str(path), marshal.dumps((key, out)))
        return out


def _state(root_abs: str, rel: str) -> tuple[int, int, int, int, int] | None:
    """(size, mtime_ns, ctime_ns, inode, links) of a file, None when it cannot be stat'ed."""
    try:
        s = os.lstat(os.path.join(root_abs, rel))
    except OSError:
        return None
    return (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_nlink)



def prefiltered(files: Iterator[tuple[str, str]], pre: Prefilter,
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
