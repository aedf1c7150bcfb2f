"""Ranking: per-branch scores to [0, 1], fusion, one hit per file, the currentness recheck.

Each branch (keywords: FTS5 BM25; semantic: sqlite-vec cosine) yields chunks best first.
Scores are mapped to [0, 1] so `--threshold` means the same on every page:
- keywords: bm25 / (bm25 + K_BM25), a saturating map (FTS5's bm25 is unbounded);
- semantic: the cosine similarity, clipped at 0;
- hybrid (`fuse`): a weighted sum of the two branches, each scaled by the query's own best
  score in that branch (bm25 / best bm25; cosine mapped so the best file is 1 and a cosine
  of COS_FLOOR or less is 0), so a file first in both branches scores 1. The weight of
  the semantic branch adapts per query: when the best keyword match is weak (a low
  bm25: only common words matched, as for a question in plain words over code) the
  meaning carries the ranking; when a query's rare words match strongly the two count
  about the same. Scaling by the best score (rather than min-max over a top list) keeps
  a file's fused score independent of how deep each branch was read, so pages of one
  query agree. Measured choices: docs/BENCHMARKS.md, "Retrieval quality".

Ties are broken by path, then by position, so one query on one index always gives one
order. The recheck (`Rechecker`) drops hits whose file vanished or changed so that the
excerpt is no longer there, and silently leaves out files the user cannot read.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ov.read import LineIndex, decode

K_BM25 = 10.0
# hybrid fusion (see the module docstring); tuned on SciFact train and CoSQA dev
COS_FLOOR = 0.2
SEM_WEIGHT_STRONG = 0.6  # semantic weight when the best keyword bm25 >= BM25_STRONG
SEM_WEIGHT_WEAK = 0.97  # semantic weight when the best keyword bm25 <= BM25_WEAK
BM25_WEAK = 14.0
BM25_STRONG = 22.0
PROFILE = {"name": "default", "version": "2026.11-adaptive4"}


@dataclass
class Cand:
    """A candidate chunk with its per-branch evidence."""

    chunk_id: int
    path: str
    score: float = 0.0
    branches: dict[str, dict] = field(default_factory=dict)


def keyword_score(bm25: float) -> float:
    b = max(0.0, bm25)
    return b / (b + K_BM25)


def semantic_score(distance: float) -> float:
    return min(1.0, max(0.0, 1.0 - distance))


def best_per_file(cands: Iterable[Cand]) -> list[Cand]:
    """Keep each file's best chunk; order by score desc, then path, then chunk id."""
    best: dict[str, Cand] = {}
    for c in cands:
        cur = best.get(c.path)
        if cur is None or (c.score, -c.chunk_id) > (cur.score, -cur.chunk_id):
            best[c.path] = c
    return sort_cands(best.values())


def sort_cands(cands: Iterable[Cand]) -> list[Cand]:
    return sorted(cands, key=lambda c: (-c.score, c.path, c.chunk_id))


# BM25's IDF grows with the log of the corpus size, so the same match scores lower in a
# small repository than in the tuning sets (20,082 and 6,762 chunks: ln of their geometric
# mean is 9.36). The thresholds are scaled by ln(chunks) / REF_LN so "a strong keyword
# match" means the same in a 500-chunk repository as in a 20,000-chunk one.
REF_LN = 9.36


def semantic_weight(best_bm25: float, n_chunks: int | None = None) -> float:
    """The semantic branch's weight for a query whose best keyword chunk scored `best_bm25`
    in an index of `n_chunks` chunks."""
    if BM25_STRONG <= BM25_WEAK:
        return SEM_WEIGHT_STRONG
    scale = math.log(max(n_chunks, 3)) / REF_LN if n_chunks else 1.0
    lo, hi = BM25_WEAK * scale, BM25_STRONG * scale
    t = min(1.0, max(0.0, (best_bm25 - lo) / (hi - lo)))
    return SEM_WEIGHT_WEAK + (SEM_WEIGHT_STRONG - SEM_WEIGHT_WEAK) * t


def fuse(lists: dict[str, list[Cand]], n_chunks: int | None = None) -> list[Cand]:
    """Hybrid fusion of per-file (or per-chunk) rankings of the keywords and semantic
    branches; each file keeps the chunk of its best branch contribution."""
    kw = lists.get("keywords", [])
    sem = lists.get("semantic", [])
    best_bm25 = max((c.branches["keywords"]["raw"] for c in kw), default=0.0)
    best_cos = max((1.0 - c.branches["semantic"]["raw"] for c in sem), default=0.0)
    w_sem = semantic_weight(best_bm25, n_chunks) if kw else 1.0
    if not sem:
        w_sem = 0.0
    parts: dict[str, list[tuple[float, Cand, str, int]]] = {}
    for name, ranked, weight in (("keywords", kw, 1.0 - w_sem), ("semantic", sem, w_sem)):
        for rank, c in enumerate(ranked, 1):
            if name == "keywords":
                norm = c.branches[name]["raw"] / best_bm25 if best_bm25 > 0 else 0.0
            else:
                cos = 1.0 - c.branches[name]["raw"]
                # below the floor nothing is close: then scale by the best alone, so the
                # order of weak matches still follows their similarity (not their path)
                floor = COS_FLOOR if best_cos > COS_FLOOR else 0.0
                span = best_cos - floor
                norm = max(0.0, (cos - floor) / span) if span > 0 else 0.0
            parts.setdefault(c.path, []).append((weight * norm, c, name, rank))
    fused = []
    for path, got in parts.items():
        lead = max(got, key=lambda g: (g[0], -g[1].chunk_id))[1]
        f = Cand(lead.chunk_id, path, min(1.0, sum(g[0] for g in got)))
        for _, c, name, rank in got:
            f.branches[name] = {**c.branches.get(name, {}), "rank": rank}
        fused.append(f)
    return sort_cands(fused)


class Rechecker:
    """Checks candidates against the files on disk before they are shown.

    `check(path, size, mtime_ns, start, end, text)` returns None (drop) or the current
    (start, end, start_line, end_line, text). `stale` counts hits dropped or moved
    because their file changed or vanished; unreadable files are dropped silently.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.stale = 0
        self._texts: dict[str, str | None] = {}
        self._stats: dict[str, tuple[int, int] | None] = {}

    def _stat(self, path: str):
        if path not in self._stats:
            full = os.path.join(self.root, path)
            try:
                st = os.stat(full)
                ok = os.access(full, os.R_OK)
                self._stats[path] = (st.st_size, st.st_mtime_ns) if ok else None
            except OSError:
                self._stats[path] = None
        return self._stats[path]

    def readable(self, path: str) -> bool:
        return self._stat(path) is not None

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                with open(os.path.join(self.root, path), "rb") as fh:
                    self._texts[path] = decode(fh.read())
            except OSError:
                self._texts[path] = None
        return self._texts[path]

    def check(self, path: str, size: int, mtime_ns: int, start: int, end: int, text: str):
        st = self._stat(path)
        if st is None:
            if not os.path.lexists(os.path.join(self.root, path)):
                self.stale += 1
            return None
        if st == (size, mtime_ns) or start == end:  # unchanged, or a tier row (no span)
            return "same"
        current = self.text(path)
        if current is None:
            return None
        if current[start:end] == text:
            return "same"
        pos = current.find(text)
        if pos < 0:
            self.stale += 1
            return None
        self.stale += 1
        li = LineIndex(current)
        new_end = pos + len(text)
        last = new_end - 1 if new_end > pos else pos
        return (pos, new_end, li.line_of(pos), li.line_of(last), text)
