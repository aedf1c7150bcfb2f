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

from ov.store.db import KNN_MAX
from ov.store.queries import _with_ties

DIM = 384
# the product and sqlite-vec's loop each differ from the true cosine by at most
# 384 * 2^-24 (~2.3e-5) for any vectors; 1e-4 leaves a margin for the norms' rounding
MARGIN = 1e-4
LEVELS_WITH_EVIDENCE = (0, 2)  # what Store.file_vector_distances reads: abstracts and passages
BULK = 2000  # more rows to read than this: sqlite-vec's blocks whole, not row by row
CHECKED = 16  # rows of a bulk read compared with point reads


def _exact(rows: np.ndarray, q: np.ndarray, qmag: float) -> np.ndarray:
    """sqlite-vec's `distance_cosine_float`: float32 sums in order (a cumulative sum is
    sequential), `1 - dot / (sqrt(|a|^2) * sqrt(|b|^2))` in double, returned as float32."""
    if not len(rows):
        return np.empty(0)
    dot = np.cumsum(rows * q, axis=1, dtype=np.float32)[:, -1]
    mag = np.cumsum(rows * rows, axis=1, dtype=np.float32)[:, -1]
    d = 1.0 - dot.astype(np.float64) / (np.sqrt(mag.astype(np.float64)) * math.sqrt(qmag))
    return d.astype(np.float32).astype(np.float64)


def _floats(xs) -> np.ndarray:
    """Times as floats; NULL as NaN, which passes no comparison (as NULL in SQL)."""
    return np.array([math.nan if x is None else x for x in xs], np.float64)


def _within(a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """`np.isin(a, sorted_b)` by binary search (numpy's own hashes both: ~10x slower here)."""
    if not len(sorted_b):
        return np.zeros(len(a), bool)
    at = np.minimum(np.searchsorted(sorted_b, a), len(sorted_b) - 1)
    return sorted_b[at] == a


class Vectors:
    """Every vector row of one index: ids, file ids, metadata, the float32 matrix."""

    COLUMNS = ("ids", "file_ids", "levels", "ftypes", "updated", "created")

    def __init__(self) -> None:
        self.ids = np.empty(0, np.int64)
        self.file_ids = np.empty(0, np.int64)
        self.levels = np.empty(0, np.int64)
        self.ftypes = np.empty(0, np.int64)  # codes into `types`
        self.updated = np.empty(0, np.float64)
        self.created = np.empty(0, np.float64)
        self.matrix = np.empty((0, DIM), np.float32)
        self.inv = np.empty(0, np.float32)  # 1 / |v|, for the product
        self.types: dict[str, int] = {}
        self.marks: dict[int, tuple] = {}
        self.usable = True  # False: a row sqlite-vec would score NaN (a zero vector)
        self.reads = 0  # rows read by refreshes (tests and benchmarks look)
        self.products = 0  # matrix products computed
        self._q: tuple[bytes, tuple] | None = None
        self._level_masks: dict[tuple, np.ndarray] = {}  # levels -> rows at them, until rows change

    @property
    def rows(self) -> int:
        return int(np.count_nonzero(self.ids >= 0))

    # -- following the index --

    def refresh(self, store) -> bool:
        """Bring the matrix to the index's state: drop the rows of files whose marks
        changed and rows no longer embedded, read the rows not held. Returns True."""
        with store.snapshot():
            marks = store.file_marks()
            changed = np.array(sorted([f for f, m in marks.items() if self.marks.get(f) != m]
                                      + [f for f in self.marks if f not in marks]), np.int64)
            if not len(changed) and store.embedded_count() == self.rows and self.marks:
                # rows lose their vectors only with their file (a new mark); rows of
                # unchanged files gain them only from a worker (a larger count): neither
                # happened (the commit was a session's ledger, a tag, a meta value)
                return True
            live = np.array(store.embedded_ids(), np.int64)  # ascending: read off an index
            live.sort()
            keep = _within(self.ids, live) & ~_within(self.file_ids, changed)
            wanted = live[~_within(live, np.sort(self.ids[keep]))]
            added = self._read(store, wanted)
        self.marks = marks
        self._q = None
        if keep.all() and added is None:
            return True
        self._set(keep, added)
        return True

    def _set(self, keep: np.ndarray, added: tuple | None) -> None:
        """The held rows become those of `keep` and `added`, in place: a dropped row's
        slot is marked free (id -1, which no filter passes) and taken by a new one, the
        matrix grows by an eighth when full and is compacted when a quarter is free.
        Writing a fresh copy of it costs ~150 ms here (the kernel maps its pages in as
        they are first written): a refresh after a saved file should cost that file."""
        self._level_masks.clear()
        dead = np.flatnonzero(~keep & (self.ids >= 0))
        self.ids[dead], self.file_ids[dead], self.levels[dead] = -1, -1, -1
        self.inv[dead] = 0.0
        free = np.flatnonzero(self.ids < 0)
        if len(free) > len(self.ids) // 4 + (len(added[0]) if added is not None else 0):
            self._compact()
            free = np.empty(0, np.int64)
        if added is not None:
            self._place(free, added)
        self.usable = bool(np.all(np.isfinite(self.inv)))

    def _place(self, free: np.ndarray, added: tuple) -> None:
        n_new = len(added[0])
        at = free[:n_new]
        grow = n_new - len(at)
        if grow:
            n = len(self.ids)
            at = np.concatenate([at, np.arange(n, n + grow)])
            for c, a in zip(self.COLUMNS, added):
                setattr(self, c, np.concatenate([getattr(self, c), np.empty(grow, a.dtype)]))
            self.inv = np.concatenate([self.inv, np.zeros(grow, np.float32)])
            if n + grow > len(self.matrix):
                bigger = np.empty((n + grow + (n + grow) // 8, DIM), np.float32)
                bigger[:n] = self.matrix[:n]
                self.matrix = bigger
        for c, a in zip(self.COLUMNS, added):
            getattr(self, c)[at] = a
        self.matrix[at] = added[6]
        with np.errstate(divide="ignore"):
            self.inv[at] = 1.0 / np.sqrt(np.einsum("ij,ij->i", added[6], added[6]))

    def _compact(self) -> None:
        live = np.flatnonzero(self.ids >= 0)
        for c in (*self.COLUMNS, "inv"):
            setattr(self, c, getattr(self, c)[live])
        self.matrix = self.matrix[live]

    def _codes(self, ftypes) -> np.ndarray:
        code = self.types.setdefault
        return np.array([code(t or "", len(self.types)) for t in ftypes], np.int64)

    def _read(self, store, ids: np.ndarray) -> tuple | None:
        if not len(ids):
            return None
        self.reads += len(ids)
        if len(ids) > BULK:
            got = self._read_blocks(store, ids)
            if got is not None:
                return got
        rows = store.vector_rows([int(i) for i in ids])
        if not rows:
            return None
        cid, fid, lv, ft, up, cr, emb = zip(*rows)
        m = np.frombuffer(b"".join(emb), np.float32).reshape(len(rows), DIM).copy()
        return (np.array(cid, np.int64), np.array(fid, np.int64), np.array(lv, np.int64),
                self._codes(ft), _floats(up), _floats(cr), m)

    def _read_blocks(self, store, ids: np.ndarray) -> tuple | None:
        """Many rows at once from sqlite-vec's blocks; None when what was read disagrees
        with point reads of a sample (a layout this code does not know)."""
        slots = np.array(store.vector_slots(), np.int64).reshape(-1, 3)
        slots = slots[np.argsort(slots[:, 0])]
        meta = store.vector_meta()
        if not meta:
            return None
        mid, fid, lv, ft, up, cr = zip(*meta)
        mids = np.array(mid, np.int64)
        morder = np.argsort(mids)
        ids = np.sort(ids)
        ids = ids[_within(ids, slots[:, 0]) & _within(ids, mids[morder])]
        slot = slots[np.searchsorted(slots[:, 0], ids)]
        m = np.empty((len(ids), DIM), np.float32)
        left = len(ids)
        for blk, data in store.vector_blocks():
            at = np.flatnonzero(slot[:, 1] == blk)
            if not len(at):
                continue
            block = np.frombuffer(data, np.float32)
            if block.size % DIM or slot[at, 2].max() >= block.size // DIM:
                return None
            m[at] = block.reshape(-1, DIM)[slot[at, 2]]
            left -= len(at)
        if left:
            return None
        pos = morder[np.searchsorted(mids[morder], ids)]
        cols = (ids, np.array(fid, np.int64)[pos], np.array(lv, np.int64)[pos], self._codes(ft)[pos],
                _floats(up)[pos], _floats(cr)[pos], m)
        pick = np.unique(np.linspace(0, len(ids) - 1, min(CHECKED, len(ids))).astype(np.int64))
        at = {int(ids[i]): int(i) for i in pick}
        for r in store.vector_rows(list(at)):
            i = at[r[0]]
            have = (int(cols[1][i]), int(cols[2][i]), ft[pos[i]] or "", up[pos[i]], cr[pos[i]])
            if (r[1], r[2], r[3] or "", r[4], r[5]) != have or r[6] != m[i].tobytes():
                return None
        return cols

    # -- answering --

    def _query(self, qvec: bytes) -> tuple[np.ndarray, float, np.ndarray]:
        """(query, its |q|^2 as sqlite-vec sums it, approximate distances of every row),
        kept for the next call with the same vector (a hybrid query asks three times)."""
        if self._q is not None and self._q[0] == qvec:
            return self._q[1]
        q = np.frombuffer(qvec, np.float32)
        qsq = float(np.cumsum(q * q, dtype=np.float32)[-1]) if len(q) == DIM else 0.0
        self.products += 1
        n = len(self.ids)  # the matrix may hold spare rows past them
        approx = 1.0 - (self.matrix[:n] @ q) * self.inv * np.float32(1.0 / math.sqrt(qsq)) if qsq > 0 else None
        got = (q, qsq, approx)
        self._q = (qvec, got)
        return got

    def forget_query(self) -> None:
        self._q = None

    def usable_for(self, qvec: bytes) -> bool:
        return self.usable and len(qvec) == DIM * 4 and self._query(qvec)[1] > 0

    def mask(self, filters, allowed: list[int] | None) -> np.ndarray:
        """The rows `filters` let through, as Store._vector_search's WHERE does."""
        key = tuple(filters.levels)
        if key not in self._level_masks:
            self._level_masks[key] = np.isin(self.levels, list(key)) if key else self.ids >= 0
        m = self._level_masks[key].copy()
        if filters.ftypes:
            stored, _ = filters.stored_types()
            if stored is not None:  # (None: any type; `allowed` holds the files the names select)
                m &= np.isin(self.ftypes, [self.types[t] for t in stored if t in self.types])
        col = self.created if filters.time_field == "created_at" else self.updated
        if filters.after is not None:
            m &= col >= filters.after
        if filters.before is not None:
            m &= col < filters.before
        if allowed is not None:
            m &= _within(self.ids, np.sort(np.array(allowed, np.int64)))
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
            d = _exact(self.matrix[cand], q, qsq)
            order = np.lexsort((self.ids[cand], d))[:n]
            return [(int(self.ids[cand[i]]), float(d[i])) for i in order]

        return _with_ties(fetch, max(1, min(k, KNN_MAX)))

    def file_distances(self, qvec: bytes, firsts: dict[int, int | None],
                       nearest_only: bool = False) -> list[tuple[int, int, int | None, float]]:
        """Store.file_vector_distances: (row id, level, first passage id, distance) of every
        abstract and passage with a vector in the files of `firsts` (file id -> first
        passage). With `nearest_only`, only the rows within MARGIN of their file's nearest
        of their level by the product (the nearest itself among them, exactly): on the
        stdlib a hybrid query's ~60 files hold ~7,000 rows, most of which no caller reads."""
        q, qsq, approx = self._query(qvec)
        idx = np.flatnonzero(_within(self.file_ids, np.sort(np.array([f for f in firsts if f >= 0], np.int64)))
                             & ((self.levels == LEVELS_WITH_EVIDENCE[0]) | (self.levels == LEVELS_WITH_EVIDENCE[1])))
        if nearest_only and len(idx):
            group = self.file_ids[idx] * 4 + self.levels[idx]  # (file, level): levels are 0 and 2
            a = approx[idx]
            order = np.lexsort((a, group))
            g, first_of = np.unique(group[order], return_index=True)
            least = np.empty(len(idx))
            least[order] = np.repeat(a[order][first_of], np.diff(np.append(first_of, len(order))))
            idx = idx[a <= least + MARGIN]
        d = _exact(self.matrix[idx], q, qsq)
        return [(int(self.ids[i]), int(self.levels[i]), firsts[int(self.file_ids[i])], float(x))
                for i, x in zip(idx.tolist(), d.tolist())]

    def nbytes(self) -> int:
        return sum(getattr(self, c).nbytes for c in (*self.COLUMNS, "matrix", "inv"))  # spare rows too
