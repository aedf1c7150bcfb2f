"""Ranking: per-branch scores to [0, 1], fusion, one hit per file, the currentness recheck.

Each branch (keywords: FTS5 BM25; semantic: sqlite-vec cosine) yields chunks best first.
The semantic branch also hears each file's abstract (its level-0 tier row, about 256
characters that say what the file is: a title or first paragraph, a heading, a signature
with its docstring's first line), whose vector speaks for the file as a whole; `with_abstracts` lets it stand for the file's first passage at a discount
(ABSTRACT_SHARE of its cosine), so a file whose subject matches the query as a whole is
found even when no single passage says it as plainly. Likewise each sentence of a prose
file (its level-3 row) stands, at SENTENCE_SHARE, for the passage that holds it: a claim
often says what one sentence says, not what its whole passage says.

Scores are mapped to [0, 1] so `--threshold` means the same on every page:
- keywords: bm25 / (bm25 + K_BM25), a saturating map (FTS5's bm25 is unbounded);
- semantic: the cosine similarity, clipped at 0;
- hybrid (`fuse`): a weighted sum of the two branches, each scaled by the query's own best
  score in that branch (bm25 / best bm25; cosine mapped so the best file is 1 and a cosine
  at the schedule's floor or below is 0), so a file first in both branches scores 1. The
  weight of the semantic branch adapts per query: when the best keyword match is weak (a
  low bm25: only common words matched, as for a question in plain words over code) the
  meaning carries the ranking; when a query's rare words match strongly the two count
  about the same. The schedule (`Schedule`: floor, weights, bm25 thresholds) is the
  file's kind's: code or prose. Scaling by the best score (rather than min-max over a top list) keeps
  a file's fused score independent of how deep each branch was read, so pages of one
  query agree. Measured choices: docs/BENCHMARKS.md, "Retrieval quality".

Ties are broken by path, then by position, so one query on one index always gives one
order. The recheck (`Rechecker`) drops hits whose file vanished or changed so that the
excerpt is no longer there, and silently leaves out files the user cannot read.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from ov.read import kind_of
from ov.read import LineIndex, OutsideRoot, decode, freshness, open_under, plain_rel

K_BM25 = 10.0


@dataclass(frozen=True)
class Schedule:
    """How a file's two branch scores mix (see the module docstring)."""

    cos_floor: float  # a cosine at or below this scales to 0
    w_strong: float  # semantic weight when the query's best keyword bm25 >= bm25_strong
    w_weak: float  # semantic weight when it is <= bm25_weak (linear between)
    bm25_weak: float
    bm25_strong: float


# One schedule per kind of content (ov.read.kind_of: code, or prose: text, markdown,
# rst), tuned on SciFact train (prose) and CoSQA dev (code). On prose the rare words of a
# query are its subject and the two branches count the same; in code the words of a
# question in plain English are common ones (get, list, file), so the meaning leads more.
# The prose floor rose from 0.3 to 0.35 with the abstracts' evidence (ABSTRACT_SHARE): the
# best of both halves of SciFact train (0.748 against 0.744 at 0.3; without the abstracts
# the two floors were within 0.001).
PROSE = Schedule(cos_floor=0.35, w_strong=0.5, w_weak=0.97, bm25_weak=10.0, bm25_strong=14.0)
CODE = Schedule(cos_floor=0.15, w_strong=0.75, w_weak=1.0, bm25_weak=12.0, bm25_strong=18.0)
PROFILE = {"name": "default", "version": "2026.11-sentence1"}

# An abstract's cosine counts at this share against a passage's: a title is short and
# shares the query's subject words more often than a passage that also says everything
# else, so at par (1.0) it crowds out passages that answer the query (SciFact train hybrid
# 0.741 -> 0.736), while a share of 0.9 lets it win only where it is clearly closer
# (0.744, 0.748 with the prose floor above; CoSQA dev 0.612 -> 0.614; 0.85 and 0.95 do
# worse on both halves of train). Measured choices: docs/BENCHMARKS.md.
ABSTRACT_SHARE = 0.9

# A sentence of a prose file (its level-3 row) counts at this share for the passage that
# holds it: a claim often matches one sentence of a passage more closely than the passage
# as a whole. Chosen on SciFact train (share 0.8 / 0.85 / 0.9 / 0.95: hybrid 0.754 / 0.754
# / 0.753 / 0.749 against 0.748 without; `find` 0.692 -> 0.706 at 0.85); docs/BENCHMARKS.md.
SENTENCE_SHARE = 0.85


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


def abstract_distance(distance: float, share: float = ABSTRACT_SHARE) -> float:
    """The cosine distance an abstract's (or, at SENTENCE_SHARE, a sentence's) vector
    counts for in the semantic branch."""
    return 1.0 - share * (1.0 - distance)


def with_abstracts(passages: Iterable[Cand], abstracts: Iterable[Cand],
                   upto: float | None = None) -> list[Cand]:
    """The semantic branch's passages merged with the abstracts' evidence (each abstract
    already on its file's first passage, with `abstract_distance`): a chunk met twice keeps
    the closer of the two, so a file is counted once per chunk (the per-chunk fusion of
    --all-chunks adds a chunk's branch entries). Nearest first, ties by chunk id.

    `upto` is the farthest distance both reads are complete to (the nearer of the two
    lists' last distances, for a list cut at its depth); entries past it are left out. The
    list is then the same prefix at any depth, and a file's best entry in it its best at
    any depth, so a semantic ranking's pages still equal one long page."""
    best: dict[int, Cand] = {}
    for c in (*passages, *abstracts):
        d = c.branches["semantic"]["raw"]
        if upto is not None and d > upto:
            continue
        cur = best.get(c.chunk_id)
        if cur is None or d < cur.branches["semantic"]["raw"]:
            best[c.chunk_id] = c
    return sorted(best.values(), key=lambda c: (c.branches["semantic"]["raw"], c.chunk_id))


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


def schedule_for(path: str) -> Schedule:
    """The fusion schedule of a file, by the kind of its content."""
    return CODE if kind_of(path) == "code" else PROSE


def semantic_weight(best_bm25: float, n_chunks: int | None = None,
                    sched: Schedule = PROSE) -> float:
    """The semantic branch's weight under `sched` for a query whose best keyword chunk
    scored `best_bm25` in an index of `n_chunks` chunks."""
    if sched.bm25_strong <= sched.bm25_weak:
        return sched.w_strong
    scale = math.log(max(n_chunks, 3)) / REF_LN if n_chunks else 1.0
    lo, hi = sched.bm25_weak * scale, sched.bm25_strong * scale
    t = min(1.0, max(0.0, (best_bm25 - lo) / (hi - lo)))
    return sched.w_weak + (sched.w_strong - sched.w_weak) * t


def fuse(lists: dict[str, list[Cand]], n_chunks: int | None = None) -> list[Cand]:
    """Hybrid fusion of per-file (or per-chunk: path "file\\0chunk id") rankings of the
    keywords and semantic branches; each file keeps the chunk of its best branch
    contribution. A file's two scores mix by its own kind's schedule, each scaled by the
    query's best score in that branch over every kind."""
    kw = lists.get("keywords", [])
    sem = lists.get("semantic", [])
    best_bm25 = max((c.branches["keywords"]["raw"] for c in kw), default=0.0)
    best_cos = max((1.0 - c.branches["semantic"]["raw"] for c in sem), default=0.0)
    weights: dict[Schedule, float] = {}

    def mix(path: str) -> tuple[Schedule, float]:
        sched = schedule_for(path.split("\x00", 1)[0])
        if sched not in weights:
            w = semantic_weight(best_bm25, n_chunks, sched) if kw else 1.0
            weights[sched] = w if sem else 0.0
        return sched, weights[sched]

    parts: dict[str, list[tuple[float, Cand, str, int]]] = {}
    for name, ranked in (("keywords", kw), ("semantic", sem)):
        for rank, c in enumerate(ranked, 1):
            sched, w_sem = mix(c.path)
            if name == "keywords":
                norm = c.branches[name]["raw"] / best_bm25 if best_bm25 > 0 else 0.0
                weight = 1.0 - w_sem
            else:
                cos = 1.0 - c.branches[name]["raw"]
                # below the floor nothing is close: then scale by the best alone, so the
                # order of weak matches still follows their similarity (not their path)
                floor = sched.cos_floor if best_cos > sched.cos_floor else 0.0
                span = best_cos - floor
                norm = max(0.0, (cos - floor) / span) if span > 0 else 0.0
                weight = w_sem
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

    `check(path, size, mtime_ns, start, end, text, ctime_ns, inode)` returns None (drop)
    or the current (start, end, start_line, end_line, text). `stale` counts hits dropped
    or moved because their file changed or vanished; unreadable files are dropped
    silently. An index row is a hint, never an authority (issue 17): a path that is not
    plain or reaches outside the root now (a forged row, a link swapped in after
    indexing) is dropped and counted in `refused`, and its file is never read. A file is
    unchanged only when its (size, mtime_ns, ctime_ns, inode) all match the row's.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.stale = 0
        self.refused = 0
        self._texts: dict[str, str | None] = {}
        self._stats: dict[str, tuple[int, int, int, int] | None] = {}
        self._outside: set[str] = set()

    def _stat(self, path: str):
        if path not in self._stats:
            self._stats[path] = None
            try:  # opened for reading: a file the user cannot read fails here
                fd = open_under(self.root, path)
                try:
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
                # access() as well: it answers for ACLs and the effective ids as the
                # kernel would for the user, root's override aside
                if stat.S_ISREG(st.st_mode) and os.access(os.path.join(self.root, path), os.R_OK):
                    self._stats[path] = freshness(st)
            except OutsideRoot:
                self._outside.add(path)
                self.refused += 1
            except OSError:
                pass
        return self._stats[path]

    def readable(self, path: str) -> bool:
        return self._stat(path) is not None

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            self._texts[path] = None
            if self._stat(path) is not None:
                try:
                    fd = open_under(self.root, path)
                    with open(fd, "rb", closefd=True) as fh:
                        self._texts[path] = decode(fh.read())
                except OutsideRoot:
                    self._outside.add(path)
                    self.refused += 1
                except OSError:
                    pass
        return self._texts[path]

    def check(self, path: str, size: int, mtime_ns: int, start: int, end: int, text: str,
              ctime_ns: int = 0, inode: int = 0):
        st = self._stat(path)
        if st is None:
            if path not in self._outside and plain_rel(path) \
                    and not os.path.lexists(os.path.join(self.root, path)):
                self.stale += 1
            return None
        if st == (size, mtime_ns, ctime_ns, inode) or start == end:  # unchanged, or a tier row
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
