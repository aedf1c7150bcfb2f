"""Keyword ranking arithmetic, beside `ov.rank`: FTS5's BM25 done by hand where the
store's queries need it, and Lucene's cutoff frequency. Pure: the store reads the counts
and the records, this module turns them into scores.

A word held by more than COMMON_DF of the keyword rows leaves the FTS5 query while a
rarer word remains (`split_common`); the rows the rare words find get the common words'
share of the score added back (`rescore`), computed as FTS5's bm25() computes it, from
the vocabulary's counts and each row's length (`varint`, `fts_averages`: FTS5's own
records decoded).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TermStats:
    """What the cutoff and the rescoring need to know about a query's words."""

    rows: int  # keyword rows in chunks_fts (every level)
    avg_len: float  # their mean length in terms
    terms: dict[str, tuple[str, ...]]  # word -> its index terms (usually one)
    df: dict[str, int]  # index term -> rows holding it


# Lucene's cutoff frequency (CommonTermsQuery): a word held by more than this share of the
# keyword rows is left out of the OR query while a rarer word remains. FTS5 ranks every row
# that matches any OR-ed word, about 1 us each: "parse command line arguments" ranks 54% of
# 100k chunks for "line" alone.
COMMON_DF = 0.2
# The cutoff applies only when the rare words fill at least this many rows: the least depth
# the engine asks of a branch (ov.engine), so that a first page of the default size ranks
# as it would at any depth.
RARE_MIN = 64
RESCORE_POOL = RARE_MIN + 64  # candidates whose order the common words may change
BM25_K1 = 1.2  # FTS5's bm25() constants (fts5_aux.c)
BM25_B = 0.75


def split_common(words: Sequence[str], stats: TermStats, cutoff: float) -> tuple[list[str], list[str]]:
    """(rare, common) words; common = one index term held by more than `cutoff` of the rows.
    Nothing is common when every word would be (the query keeps them all)."""
    limit = cutoff * stats.rows
    common = [w for w in words if len(stats.terms[w]) == 1 and stats.df[stats.terms[w][0]] > limit]
    rare = [w for w in words if w not in common]
    # a rare word the index does not hold (a typo) must not empty the query
    found = any(stats.terms[w] and all(stats.df[t] for t in stats.terms[w]) for w in rare)
    return (rare, common) if found and common else (list(words), [])

def bm25_idf(rows: int, df: int) -> float:
    """FTS5's bm25 IDF: ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6. N and n come from
    separate reads (TermStats), between which an index run may delete rows: n > N then
    means a common word, not an error."""
    idf = math.log((max(rows - df, 0) + 0.5) / (df + 0.5))
    return idf if idf > 0 else 1e-6


def varint(b: bytes, i: int = 0) -> tuple[int, int]:
    """An SQLite varint at b[i:] -> (value, next offset)."""
    v = 0
    for k in range(8):
        c = b[i + k]
        v = (v << 7) | (c & 0x7F)
        if c < 0x80:
            return v, i + k + 1
    return (v << 8) | b[i + 8], i + 9


def fts_averages(block: bytes | None) -> tuple[int, float]:
    """(rows, mean row length) from an FTS5 table's averages record (its %_data row 1)."""
    if not block:
        return 0, 0.0
    rows, i = varint(block)
    tokens, _ = varint(block, i)
    return rows, (tokens / rows if rows else 0.0)



def rescore(pool: list[tuple[int, float]], common: Sequence[str], stats: TermStats,
            doc_len: dict[int, int], hits: Iterable[tuple[str, Iterable[tuple[int, int]]]]
            ) -> list[tuple[int, float]]:
    """`pool` (rows with their rare words' bm25) with the common words' share added, best
    first, ties by rowid as FTS5's ORDER BY bm25, rowid. `doc_len`: each row's length in
    terms; `hits`: per common word's index term, (row, occurrences) of the pooled rows."""
    avg_len = stats.avg_len or 1.0  # no rows counted: the index changed under the query
    score = dict(pool)
    for term, counts in hits:
        idf = bm25_idf(stats.rows, stats.df[term])
        for cid, tf in counts:
            norm = BM25_K1 * (1 - BM25_B + BM25_B * doc_len.get(cid, 0) / avg_len)
            score[cid] += idf * tf * (BM25_K1 + 1) / (tf + norm)
    return sorted(score.items(), key=lambda r: (-r[1], r[0]))
