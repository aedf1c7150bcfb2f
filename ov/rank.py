"""Ranking: per-branch scores to [0, 1], fusion, one hit per file, the currentness recheck.

Each branch (keywords: FTS5 BM25; semantic: sqlite-vec cosine) yields chunks best first.
Scores are mapped to [0, 1] so `--threshold` means the same on every page:
- keywords: bm25 / (bm25 + K_BM25), a saturating map (FTS5's bm25 is unbounded);
- semantic: the cosine similarity, clipped at 0;
- hybrid: reciprocal rank fusion of the file rankings, divided by its largest possible
  value so a file first in both branches scores 1.

Ties are broken by path, then by position, so one query on one index always gives one
order. The recheck (`Rechecker`) drops hits whose file vanished or changed so that the
excerpt is no longer there, and silently leaves out files the user cannot read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ov.read import LineIndex, decode

K_BM25 = 10.0
RRF_K = 60
PROFILE = {"name": "default", "version": "2026.11-rrf60"}


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


def fuse_rrf(lists: dict[str, list[Cand]], k: int = RRF_K) -> list[Cand]:
    """Reciprocal rank fusion of per-file rankings; each file keeps its best-ranked chunk."""
    fused: dict[str, Cand] = {}
    best_rank: dict[str, int] = {}
    n = len(lists)
    for name, ranked in lists.items():
        for rank, c in enumerate(ranked, 1):
            f = fused.get(c.path)
            if f is None:
                f = fused[c.path] = Cand(c.chunk_id, c.path)
                best_rank[c.path] = rank
            elif rank < best_rank[c.path]:
                f.chunk_id = c.chunk_id
                best_rank[c.path] = rank
            f.score += 1.0 / (k + rank)
            f.branches[name] = {**c.branches.get(name, {}), "rank": rank}
    top = n / (k + 1)
    for f in fused.values():
        f.score = f.score / top if top else 0.0
    return sort_cands(fused.values())


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
