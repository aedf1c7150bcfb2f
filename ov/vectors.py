"""The vectors of an index held in memory, for a long-lived `ov.Index` (`ov mcp`).

sqlite-vec's KNN reads every vector of the levels asked for on each query (~100 ms for
92,000 rows on this project's 2-core test machine, most of a semantic query); a matrix in
memory answers the same question with one matrix product (~20 ms) and an exact rescoring
of the few rows that can be among the nearest. Only a warm index keeps one: loading it
costs about a second on the stdlib's index, which one CLI call would never win back.

The answers are sqlite-vec's, not approximately but exactly: the product only chooses the
candidates (every row within MARGIN of the k-th nearest, an error bound far above
float32's), and their distances are then computed as sqlite-vec computes them (float32
products summed in order, the norms in double), so the distances, their ties and the
order by (distance, chunk id) are the SQL path's. Filters are applied as masks on the
`chunks_vec` metadata (level, type, times); file filters (paths, tags, name globs) take
the store's list of allowed chunk ids, as the SQL path does.

The matrix follows the index: `refresh` runs whenever the warm store's remembered facts
are forgotten (another connection committed, or its own write), and re-reads only the
files whose marks changed and the rows whose ids it does not hold, in one read snapshot.
"""

from __future__ import annotations

import math

import numpy as np

from ov.store import KNN_MAX, _with_ties

DIM = 384
# the product and sqlite-vec's loop each differ from the true cosine by at most
# 384 * 2^-24 (~2.3e-5) for any vectors; 1e-4 leaves a margin for the norms' rounding
MARGIN = 1e-4
LEVELS_WITH_EVIDENCE = (0, 2)  # what Store.file_vector_distances reads: abstracts and passages
BULK = 2000  # more rows to read than this: sqlite-vec's blocks whole, not row by row
CHECKED = 16  # rows of a bulk read compared with point reads


def _exact(rows: np.ndarray, mag: np.ndarray, q: np.ndarray, qmag: float) -> np.ndarray:
    """sqlite-vec's `distance_cosine_float`: float32 sums in order (a cumulative sum is
    sequential), `1 - dot / (sqrt(|a|^2) * sqrt(|b|^2))` in double, returned as float32."""
    if not len(rows):
        return np.empty(0)
    dot = np.cumsum(rows * q, axis=1, dtype=np.float32)[:, -1]
    d = 1.0 - dot.astype(np.float64) / (np.sqrt(mag.astype(np.float64)) * math.sqrt(qmag))
    return d.astype(np.float32).astype(np.float64)


def _floats(xs) -> np.ndarray:
    """Times as floats; NULL as NaN, which passes no comparison (as NULL in SQL)."""
    return np.array([math.nan if x is None else x for x in xs], np.float64)


def _sq_norms(m: np.ndarray) -> np.ndarray:
    """Each row's |v|^2 summed as sqlite-vec sums it (float32, in order), in slices."""
    out = np.empty(len(m), np.float32)
    for i in range(0, len(m), 4096):
        part = m[i:i + 4096]
        out[i:i + 4096] = np.cumsum(part * part, axis=1, dtype=np.float32)[:, -1] if len(part) else 0
    return out


class Vectors:
    """Every vector row of one index: ids, file ids, metadata, the float32 matrix."""

    def __init__(self) -> None:
        self.ids = np.empty(0, np.int64)
        self.file_ids = np.empty(0, np.int64)
        self.levels = np.empty(0, np.int64)
        self.ftypes = np.empty(0, np.int64)  # codes into `types`
        self.updated = np.empty(0, np.float64)
        self.created = np.empty(0, np.float64)
        self.matrix = np.empty((0, DIM), np.float32)
        self.sq = np.empty(0, np.float32)  # sequential |v|^2
        self.inv = np.empty(0, np.float32)  # 1 / |v|, for the product
        self.types: dict[str, int] = {}
        self.marks: dict[int, tuple] = {}
        self.usable = True  # False: a row sqlite-vec would score NaN (a zero vector)
        self.reads = 0  # rows read by refreshes (tests and benchmarks look)
        self._q: tuple[bytes, np.ndarray] | None = None

    @property
    def rows(self) -> int:
        return len(self.ids)

    # -- following the index --

    def refresh(self, store) -> bool:
        """Bring the matrix to the index's state: drop the rows of files whose marks
        changed and rows no longer embedded, read the rows not held. Returns True."""
        with store.snapshot():
            marks = store.file_marks()
            changed = np.array([f for f, m in marks.items() if self.marks.get(f) != m]
                               + [f for f in self.marks if f not in marks], np.int64)
            if not len(changed) and store.coverage()[0] == self.rows and self.marks:
                # rows lose their vectors only with their file (a new mark); rows of
                # unchanged files gain them only from a worker (a larger count): neither
                # happened (the commit was a session's ledger, a tag, a meta value)
                return True
            live = np.array(store.embedded_ids(), np.int64)
            keep = np.isin(self.ids, live) & ~np.isin(self.file_ids, changed)
            wanted = live[~np.isin(live, self.ids[keep])]
            added = self._read(store, wanted)
        self.marks = marks
        self._q = None
        if keep.all() and added is None:
            return True
        parts = [self._take(keep)] + ([added] if added is not None else [])
        self._set(*(np.concatenate([p[i] for p in parts]) for i in range(7)))
        return True

    def _take(self, keep: np.ndarray) -> tuple:
        return (self.ids[keep], self.file_ids[keep], self.levels[keep], self.ftypes[keep],
                self.updated[keep], self.created[keep], self.matrix[keep])

    def _set(self, ids, file_ids, levels, ftypes, updated, created, matrix) -> None:
        order = np.argsort(ids, kind="stable")  # by id: a stable layout whatever the reads' order
        self.ids, self.file_ids, self.levels = ids[order], file_ids[order], levels[order]
        self.ftypes, self.updated, self.created = ftypes[order], updated[order], created[order]
        self.matrix = np.ascontiguousarray(matrix[order])
        self.sq = _sq_norms(self.matrix)
        with np.errstate(divide="ignore"):
            self.inv = (1.0 / np.sqrt(self.sq.astype(np.float64))).astype(np.float32)
        self.usable = bool(np.all(self.sq > 0) and np.all(np.isfinite(self.sq)))

    def _code(self, ftype: str) -> int:
        return self.types.setdefault(ftype, len(self.types))

    def _read(self, store, ids: np.ndarray) -> tuple | None:
        if not len(ids):
            return None
        self.reads += len(ids)
        if len(ids) > BULK:
            got = self._read_blocks(store, ids)
            if got is not None:
                return got
        return self._columns(store.vector_rows([int(i) for i in ids]))

    def _columns(self, rows: list[tuple]) -> tuple:
        n = len(rows)
        m = np.frombuffer(b"".join(r[6] for r in rows), np.float32).reshape(n, DIM) if n else \
            np.empty((0, DIM), np.float32)
        return (np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64),
                np.array([r[2] for r in rows], np.int64),
                np.array([self._code(r[3] or "") for r in rows], np.int64),
                _floats(r[4] for r in rows), _floats(r[5] for r in rows), m.copy())

    def _read_blocks(self, store, ids: np.ndarray) -> tuple | None:
        """Many rows at once from sqlite-vec's blocks; None when what was read disagrees
        with point reads of a sample (a layout this code does not know)."""
        slots = {cid: (blk, off) for cid, blk, off in store.vector_slots()}
        meta = {r[0]: r for r in store.vector_meta()}
        ids = np.array([i for i in ids.tolist() if i in slots and i in meta], np.int64)
        by_block: dict[int, list[tuple[int, int]]] = {}
        for pos, cid in enumerate(ids.tolist()):
            blk, off = slots[cid]
            by_block.setdefault(blk, []).append((pos, off))
        m = np.empty((len(ids), DIM), np.float32)
        for blk, data in store.vector_blocks():
            want = by_block.pop(blk, None)
            if want is None:
                continue
            block = np.frombuffer(data, np.float32)
            if block.size % DIM:
                return None
            block = block.reshape(-1, DIM)
            pos, off = (np.array(x, np.int64) for x in zip(*want))
            if off.max() >= len(block):
                return None
            m[pos] = block[off]
        if by_block:
            return None
        rows = [meta[c] for c in ids.tolist()]
        cols = (ids, np.array([r[1] for r in rows], np.int64), np.array([r[2] for r in rows], np.int64),
                np.array([self._code(r[3] or "") for r in rows], np.int64),
                _floats(r[4] for r in rows), _floats(r[5] for r in rows), m)
        sample = ids[np.linspace(0, len(ids) - 1, min(CHECKED, len(ids))).astype(np.int64)]
        at = {c: i for i, c in enumerate(ids.tolist())}
        for r in store.vector_rows([int(c) for c in sample]):
            i = at[r[0]]
            have = rows[i]
            if ((r[1], r[2], r[3] or "", r[4], r[5]) != (have[1], have[2], have[3] or "", have[4], have[5])
                    or r[6] != m[i].tobytes()):
                return None
        return cols

    # -- answering --

    def _query(self, qvec: bytes) -> tuple[np.ndarray, float, np.ndarray]:
        """(query, its |q|^2 as sqlite-vec sums it, approximate distances of every row),
        kept for the next call with the same vector (a hybrid query asks three times)."""
        if self._q is not None and self._q[0] == qvec:
            return self._q[1]
        q = np.frombuffer(qvec, np.float32)
        qsq = float(np.cumsum(q * q, dtype=np.float32)[-1]) if len(q) else 0.0
        approx = 1.0 - (self.matrix @ q) * self.inv * np.float32(1.0 / math.sqrt(qsq)) if qsq > 0 else None
        got = (q, qsq, approx)
        self._q = (qvec, got)
        return got

    def usable_for(self, qvec: bytes) -> bool:
        return self.usable and len(qvec) == DIM * 4 and self._query(qvec)[1] > 0

    def mask(self, filters, allowed: list[int] | None) -> np.ndarray:
        """The rows `filters` let through, as Store._vector_search's WHERE does."""
        m = np.isin(self.levels, list(filters.levels)) if filters.levels else np.ones(self.rows, bool)
        if filters.ftypes:
            stored, _ = filters.type_filter()
            m &= np.isin(self.ftypes, [self.types[t] for t in stored if t in self.types])
        col = self.created if filters.time_field == "created_at" else self.updated
        if filters.after is not None:
            m &= col >= filters.after
        if filters.before is not None:
            m &= col < filters.before
        if allowed is not None:
            m &= np.isin(self.ids, np.array(allowed, np.int64))
        return m

    def search(self, qvec: bytes, mask: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Store.vector_search over the rows of `mask`: (chunk id, cosine distance) nearest
        first, ties by id, every row tying the k-th, up to KNN_MAX."""
        q, qsq, approx = self._query(qvec)
        idx = np.flatnonzero(mask)

        def fetch(n: int) -> list[tuple[int, float]]:
            n = min(n, KNN_MAX)
            cand = idx
            if len(idx) > n:
                a = approx[idx]
                cand = idx[a <= np.partition(a, n - 1)[n - 1] + MARGIN]
            d = _exact(self.matrix[cand], self.sq[cand], q, qsq)
            order = np.lexsort((self.ids[cand], d))[:n]
            return [(int(self.ids[cand[i]]), float(d[i])) for i in order]

        return _with_ties(fetch, max(1, min(k, KNN_MAX)))

    def file_distances(self, qvec: bytes, firsts: dict[int, int | None]) -> list[tuple[int, int, int | None, float]]:
        """Store.file_vector_distances: (row id, level, first passage id, distance) of every
        abstract and passage with a vector in the files of `firsts` (file id -> first passage)."""
        q, qsq, _ = self._query(qvec)
        idx = np.flatnonzero(np.isin(self.file_ids, np.array(list(firsts), np.int64))
                             & np.isin(self.levels, LEVELS_WITH_EVIDENCE))
        d = _exact(self.matrix[idx], self.sq[idx], q, qsq)
        return [(int(self.ids[i]), int(self.levels[i]), firsts[int(self.file_ids[i])], float(x))
                for i, x in zip(idx.tolist(), d.tolist())]

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.file_ids, self.levels, self.ftypes, self.updated,
                                      self.created, self.matrix, self.sq, self.inv))
