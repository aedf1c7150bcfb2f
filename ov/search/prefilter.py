"""What an index tells grep and glob: which files cannot hold a pattern's literals, and
which files carry the asked tags.

The index, where there is one, only makes grep faster: `index_candidates` returns a
predicate from the FTS5 trigram table (and the trigram bitmaps of the files too large to
index, ov.grams) that rules out files which cannot hold the pattern's required literals.
It trusts the index only for files whose size, mtime, ctime and inode are what was
indexed; any other file is read, so the answer is the same either way. `--tags` needs the index (tags live in it): `tag_paths`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ov.errors import OvError
from ov.paths import db_path_for
from ov.search.scope import Candidates, GrepStats
from ov.walk import write_private

if TYPE_CHECKING:
    from ov.journal import Changes

def tag_paths(root: Path, tags: dict[str, str]) -> set[str]:
    """Paths of the indexed files carrying every tag; `unsupported` without an index."""
    db = db_path_for(root)
    if not db.is_file():
        raise OvError("unsupported", "--tags needs an index (tags live in it): run `ov index` first",
                      field="tags")
    from ov.store import Filters, Store

    with Store.open(db, readonly=True) as st:
        return st.paths_where(Filters(tags=tuple(sorted(tags.items()))))


def tagged(root: Path, tags: dict[str, str] | None, indexed: bool) -> set[str] | None:
    """The paths `--tags` allows under `root` (None: no tags asked); `unsupported` for a
    root without an index."""
    if not tags:
        return None
    if not indexed:
        raise OvError("unsupported", "--tags needs an index (tags live in it): run `ov index` first",
                      field="tags")
    return tag_paths(root, tags)


def index_candidates(root: Path, notice: Callable[[str], None] | None = None) -> Candidates | None:
    """The trigram prefilter of the index under `root`, or None without an index. An index
    that cannot be read (from an older ov, damaged) is told to `notice` once: grep then
    reads every file, the same answer, slower, and the user should know why."""
    db = db_path_for(root)
    if not db.is_file():
        return None

    def hook(literals: list[str], ignore_case: bool):
        if ignore_case or not literals:
            return None
        from ov.grams import literal_grams  # noqa: PLC0415
        from ov.journal import ask  # noqa: PLC0415
        from ov.store import Store

        wanted = literal_grams(literals)
        # asked before the index is read: what was not touched by then has its row there
        changes = ask(db, root)
        try:
            with Store.open(db, readonly=True) as st:
                cands = st.trigram_files(literals, within_s=TRIGRAM_BUDGET_S)
                if cands is None:
                    return None
                big = st.big_file_grams() if wanted else []
                if changes is not None:  # the states of the touched files alone, for now
                    return Prefilter(cands, None, changes, db, st.chunked_states_of(changes.paths),
                                     _big_files_ruled_out(big, wanted))
                fresh = _indexed_states(db, st)
        except OvError as e:
            # a busy or broken index must not break grep: read every file
            if notice is not None:
                notice(f"the index was not used, every file was read: {e.message}")
            return None

        fresh.update(_big_files_ruled_out(big, wanted))
        return Prefilter(cands, fresh)

    return hook


def _big_files_ruled_out(big: list, wanted: list[int]) -> dict[str, tuple[int, int, int, int]]:
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
    """`store.chunked_states()` (a dict the caller owns: the copy on disk is written
    before it returns), kept beside the index while the index is unchanged: the
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
    cannot hide a change); any other file must be read.

    With a watcher's change journal (`changes`: the paths touched since the index was
    brought up to date, `ov.journal`), an indexed file nobody touched is known unchanged
    without its `lstat`, and `trusted_files` picks the files to read from the listing
    cache without going through every file: the candidates, the touched files whose
    state is not the indexed one (`touched_states`), and the files the index does not
    hold (`unindexed`) but for the big files their bitmaps rule out (`big_out`, with the
    states they were read at). `fresh` is then read only if some caller needs all of it."""

    __slots__ = ("cands", "_fresh", "changes", "db", "touched_states", "big_out", "_chunked")

    def __init__(self, cands: set[str], fresh: dict[str, tuple[int, int, int, int]] | None,
                 changes: Changes | None = None, db: Path | None = None,
                 touched_states: dict[str, tuple[int, int, int, int]] | None = None,
                 big_out: dict[str, tuple[int, int, int, int]] | None = None) -> None:
        self.cands = cands
        self._fresh = fresh
        self.changes = changes
        self.db = db
        self.touched_states = touched_states or {}
        self.big_out = big_out or {}
        self._chunked: dict[str, tuple[int, int, int, int]] | None = None

    def _chunked_states(self) -> dict[str, tuple[int, int, int, int]]:
        """Every indexed file's state (`_indexed_states`), read once."""
        if self._chunked is None:
            from ov.store import Store  # noqa: PLC0415

            assert self.db is not None
            with Store.open(self.db, readonly=True) as st:
                self._chunked = _indexed_states(self.db, st)
        return self._chunked

    @property
    def fresh(self) -> dict[str, tuple[int, int, int, int]]:
        if self._fresh is None:
            self._fresh = {**self._chunked_states(), **self.big_out}
        return self._fresh

    def __call__(self, rel: str, size: int, mtime_ns: int, ctime_ns: int, inode: int) -> bool:
        return rel in self.cands or self.fresh.get(rel) != (size, mtime_ns, ctime_ns, inode)

    def trusted_files(self, root: Path, rels: list[str], opts, st: GrepStats,
                      cache_dir: Path) -> list[tuple[str, str]] | None:
        """With a change journal: the (relative, absolute) paths to read under the start
        folders `rels`, in walk order, from the listing cache; None when this way cannot
        answer (no journal, a start that is not a listed folder, `--level-limit`...)."""
        if self.changes is None or self.db is None:
            return None
        from ov.walk import listed  # noqa: PLC0415

        lst = listed(root, opts, cache_dir, changes=self.changes, on_warning=st.warnings.append)
        if lst is None or any(r and r not in lst.dirs for r in rels):
            return None
        touched, cands, big_out = self.changes.paths, self.cands, self.big_out
        whole = "" in rels
        starts = tuple(r + "/" for r in rels)
        order = {}
        for r in (*cands, *touched, *self._unindexed(lst)):
            if r in order or not (whole or r.startswith(starts)):
                continue
            key = lst.order(r)
            if key is None:
                continue
            if r not in cands:
                was = self.touched_states.get(r) or big_out.get(r)
                if r not in touched:
                    if r in big_out:  # unchanged since its bitmap was made
                        continue
                elif was is not None:
                    try:
                        s = os.lstat(os.path.join(lst.root_abs, r))
                    except OSError as err:
                        st.warnings.append(f"{r}: {err.strerror or err}")
                        st.unreadable += 1
                        continue
                    if was == (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino):
                        continue
            order[r] = key
        base = lst.root_abs + os.sep
        return [(r, base + r.replace("/", os.sep)) for r in sorted(order, key=order.__getitem__)]

    def _unindexed(self, lst) -> list[str]:
        """The listed files the index holds no text of, kept beside the index for this
        state of the index and of the listing (a pass over every file when either moved)."""
        import marshal  # noqa: PLC0415

        assert self.db is not None
        path = self.db.with_name("unindexed.cache")
        key = (_db_signature(self.db), lst.sig)
        if lst.sig is not None:
            try:
                with open(path, "rb") as f:
                    got = marshal.loads(f.read())
                if isinstance(got, tuple) and len(got) == 2 and got[0] == key:
                    return got[1]
            except (OSError, ValueError, EOFError, TypeError):
                pass
        fresh = self._chunked_states()  # not `fresh`: what bitmaps rule out depends on the literal
        out = [r for r in lst.files() if r not in fresh]
        if lst.sig is not None and _db_signature(self.db) == key[0]:
            write_private(str(path), marshal.dumps((key, out)))
        return out


def prefiltered(files: Iterator[tuple[str, str]], pre: Prefilter,
                 st: GrepStats) -> Iterator[tuple[str, str]]:
    """The files the index cannot rule out: its candidates, and every file whose size,
    mtime, ctime or inode is not what was indexed (one lstat each; the candidates need none,
    nor, with a change journal, the indexed files it says nobody touched)."""
    cands, fresh = pre.cands, pre.fresh
    touched = pre.changes.paths if pre.changes is not None else None
    lstat = os.lstat
    trusted = touched is not None
    for rel, abspath in files:
        if rel not in cands:
            if trusted and rel not in touched and rel in fresh:  # type: ignore[operator]
                continue
            try:
                s = lstat(abspath)
            except OSError as err:
                st.warnings.append(f"{rel}: {err.strerror or err}")
                st.unreadable += 1
                continue
            if fresh.get(rel) == (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino):
                continue
        yield rel, abspath
