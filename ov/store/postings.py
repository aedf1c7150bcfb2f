"""The keyword rows' postings in memory, for a warm index (`ov mcp`): FTS5's bm25 ranking
of an OR of words, computed with numpy from postings read once, the same numbers to the
last bit.

FTS5 ranks a query by computing bm25() for every row that holds any of its words, about
2 us a row (the stdlib's "file" alone is in 9,125 rows: 17 ms). A long-lived server asks
for the same words again and again, so it keeps, per index term, the rows that hold it and
each row's share of the score — `idf * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + b * D /
avgdl)))`, FTS5's own expression in its own order (fts5_aux.c), which depends only on
the index — and ranks a query by adding those shares: tens of microseconds a word.

A term's postings are read when a query first ranks by it (`SELECT doc, count(*) FROM
fts5vocab(instance) WHERE term = ?`: about what FTS5's ranking of that word cost), so the
first query with a new word pays about what it paid before and later ones do not. The
held facts belong to one state of the index: `ov.store.warm` drops them whenever another
connection commits (`PRAGMA data_version`), and the next query reads them again.

Held: each keyword row's id, length factor, level and NO_VECTOR flag (~25 bytes a row,
read again after each change of the index: ~150 ms for the stdlib's 95,598 rows) and, per
term read, 24 bytes a row holding it, up to MAX_ENTRIES rows in all (then the terms are
dropped and read again as asked).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ov.bm25 import BM25_B, BM25_K1, fts_averages

# Past this many keyword rows the SQL path answers: reading every row's length and level
# again after each change of the index costs ~3 us a row (8.9 s and 1.8 GB at its peak for
# the Linux kernel's 3.1 million rows), a stall a watched tree would pay at every save.
MAX_ROWS = 250_000
MAX_ENTRIES = 4_000_000  # postings held, all terms together (~96 MB)


def _first_varints(blobs: list[bytes]) -> np.ndarray:
    """The first SQLite varint of each blob (FTS5's docsize record: the row's length in
    tokens), decoded together."""
    lens = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])) if len(blobs) else lens
    raw = np.frombuffer(b"".join(blobs) + b"\0" * 9, dtype=np.uint8).astype(np.int64)
    value = np.zeros(len(blobs), dtype=np.int64)
    going = np.ones(len(blobs), dtype=bool)
    for k in range(8):  # 7 bits a byte while the high bit is set; FTS5 lengths need 1-3
        byte = raw[starts + k]
        value = np.where(going, (value << 7) | (byte & 0x7F), value)
        going &= byte >= 0x80
        if not going.any():
            return value
    return np.where(going, (value << 8) | raw[starts + 8], value)


class Postings:
    """What ranking an OR of words needs, for one state of the keyword table."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, dtype=np.int64)  # keyword rows' ids, ascending (a row's slot)
        self.norm = np.zeros(0)  # per slot: k1 * (1 - b + b * D / avgdl)
        self.levels = np.zeros(0, dtype=np.int64)  # per slot: its chunk's level (-1: none)
        self.vectorless = np.zeros(0, dtype=bool)  # per slot: a NO_VECTOR chunk
        self.usable = True  # False: too many rows to hold (MAX_ROWS), SQL answers
        self.rows = 0  # FTS5's row count and mean length (its averages record)
        self.avg_len = 0.0
        self._allowed: dict[tuple, np.ndarray] = {}
        self._terms: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._held = 0
        self._asked: set[str] = set()

    def refresh(self, store) -> bool:
        """Read the rows' lengths and levels again and forget every term's postings (a
        row's share of the score depends on the row count and mean length)."""
        self._terms.clear()
        self._asked.clear()
        self._allowed.clear()
        self._held = 0
        self.rows, self.avg_len = fts_averages(store.fts_averages_block())
        self.usable = self.rows <= MAX_ROWS
        if not self.usable:
            self.ids = self.norm = self.levels = self.vectorless = np.zeros(0)
            return True
        ids, sizes, levels, vectorless = store.fts_rows()
        self.ids = np.asarray(ids, dtype=np.int64)
        self.levels = np.asarray(levels, dtype=np.int64)
        self.vectorless = np.asarray(vectorless, dtype=bool)
        length = _first_varints(sizes).astype(np.float64)
        avgdl = self.avg_len if self.avg_len else 1.0
        self.norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)
        return True

    def term(self, store, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(slots ascending, occurrences, share of the score) of the rows holding `term`."""
        held = self._terms.get(term)
        if held is None:
            docs, tf = store.term_postings(term)
            n = len(docs)
            docs = np.asarray(docs, dtype=np.int64)
            slots = np.minimum(np.searchsorted(self.ids, docs), max(len(self.ids) - 1, 0))
            known = self.ids[slots] == docs if len(self.ids) else np.zeros(n, dtype=bool)
            slots = slots[known]  # a row added since the refresh (another commit) is not held
            tf = np.asarray(tf, dtype=np.int64)[known]
            f = tf.astype(np.float64)
            idf = math.log((self.rows - n + 0.5) / (n + 0.5))
            idf = idf if idf > 0.0 else 1e-6
            # fts5_aux.c's expression, operation for operation
            share = idf * ((f * (BM25_K1 + 1.0)) / (f + self.norm[slots]))
            held = (slots, tf, share)
            if self._held + n > MAX_ENTRIES:
                self._terms.clear()
                self._held = 0
            self._terms[term] = held
            self._held += n
        return held

    def wanted(self, term: str) -> bool:
        """Whether a word left out of the ranking (a common word, rescored) should have
        its postings read: on its second use in this state of the index, since reading
        them costs more than the few rows its rescoring asks for."""
        if term in self._terms or term in self._asked:
            return True
        self._asked.add(term)
        return False

    def counts(self, store, term: str, docs: Sequence[int]) -> list[tuple[int, int]]:
        """(row, occurrences of `term`) for the rows of `docs` that hold it."""
        slots, tf, _ = self.term(store, term)
        asked = np.asarray(docs, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.ids, asked), max(len(self.ids) - 1, 0))
        known = self.ids[at] == asked if len(self.ids) else np.zeros(len(asked), dtype=bool)
        want, asked = at[known], asked[known]
        i = np.minimum(np.searchsorted(slots, want), max(len(slots) - 1, 0))
        found = slots[i] == want if len(slots) else np.zeros(len(want), dtype=bool)
        return list(zip(asked[found].tolist(), tf[i[found]].tolist()))

    def _passing(self, levels: Sequence[int], vectorless: bool) -> np.ndarray:
        """Per slot: whether `Filters(levels=levels, vectorless=vectorless)` passes it."""
        key = (tuple(levels), vectorless)
        if key not in self._allowed:
            ok = np.isin(self.levels, np.asarray(levels, dtype=np.int64))
            self._allowed[key] = ok if vectorless else ok & ~self.vectorless
        return self._allowed[key]

    def top(self, store, terms: Sequence[str], k: int, levels: Sequence[int],
            vectorless: bool) -> list[tuple[int, float]]:
        """The best `k` rows for an OR of one-term phrases among the chunks of `levels`
        (and not NO_VECTOR unless `vectorless`), as FTS5's `ORDER BY bm25(t), rowid LIMIT
        k` joined to those chunks orders them: (row id, bm25 negated)."""
        score = np.zeros(len(self.ids))
        hit = np.zeros(len(self.ids), dtype=bool)
        for t in terms:  # phrase by phrase, in the query's order: FTS5's sum
            slots, _, share = self.term(store, t)
            score[slots] += share
            hit[slots] = True
        cand = np.flatnonzero(hit & self._passing(levels, vectorless))
        s = score[cand]
        if len(cand) > k:
            edge = np.partition(s, len(s) - k)[len(s) - k]
            keep = s >= edge
            cand, s = cand[keep], s[keep]
        order = np.lexsort((cand, -s))[:k]
        return list(zip(self.ids[cand[order]].tolist(), s[order].tolist()))
