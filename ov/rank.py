"""Ranking: per-branch evidence to a probability of relevance, fusion, one hit per file, the
currentness recheck.

Each branch (keywords: FTS5 BM25; semantic: sqlite-vec cosine) yields chunks best first.
The semantic branch also hears each file's abstract (its level-0 row, about 256 characters
that say what the file is: a title or first paragraph, a heading, a signature with its
docstring's first line), whose vector speaks for the file as a whole; `with_abstracts`
lets it stand for the file's first passage at a discount (ABSTRACT_SHARE of its cosine).

Every score is on one absolute scale: the estimated probability that the hit is relevant
to the query, the same meaning in `find`, in `search` of each type and across queries, so
`--threshold 0.5` keeps the hits judged more likely relevant than not. Per kind of content
(code, or prose: text, markdown, rst; `Scale`):
- keywords: the keyword share e = bm25 / ((terms + 3) * idf1(rows) * (k1 + 1)), what the
  hit's bm25 is of the most a row could score holding each of the query's terms and three
  more, each as rare as a term can be (`Tree.keyword_share`), then `keywords`;
- semantic: the cosine (the abstract's discounted), then `find`;
- hybrid (`fuse`): z = w_sem * cosine + (1 - w_sem) * keyword term (`keyword_term`:
  prose bm25 / (bm25 + k_bm25); code the keywords scale's probability in a tree of
  REFERENCE_FILES, ~0 for a match on words every file holds), then the kind's `hybrid`,
  or the `find` probability when that is 0.5 or more and higher, or the
  keywords-only probability when that is 0.8 or more and higher;
each (a, b, c) giving p = 1 / (1 + exp(-(a * x + b + c * ln files))), `files` the files in
the index (`Tree`): how many files compete for a query changes what a cosine or a bm25
says. A top hit among 20 files is relevant far more often than one among 5,000 at the
same cosine, and bm25 itself shrinks with the tree (its idf). Without that term the first
hit of a 20-file folder scored 0.18 where 96 % were relevant (SciFact test cut into small
corpora); scores read the tree's size, never its scope (`-u`, `-t`), so a file scores the
same in every scope. The constants are fitted (Platt scaling) on the top 20 hits of the
tuning sets (SciFact train for prose, CoSQA dev for code) asked on the whole corpora and
on small corpora cut from them (scripts/cv_rank.py `sizes`). The evidence is the
branches' own raw numbers, never scaled by the query's best, so a query that matches
nothing meaningful scores low, and a file's score does not depend on how deep a branch was
read (pages of one query agree). The fusion weights, the prose keyword map's k and the
abstract's share were chosen by 5-fold cross-validation over queries (scripts/cv_rank.py
`choose` and, for code's weight, `choose-code`; docs/BENCHMARKS.md "Retrieval quality" and
"Keyword evidence in code").

Ties are broken by path, then by position, so one query on one index always gives one
order. The recheck (`Rechecker`) drops hits whose file vanished or changed so that the
excerpt is no longer there, and silently leaves out files the user cannot read.
"""

from __future__ import annotations

import functools
import math
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from ov.bm25 import BM25_K1, bm25_idf
from ov.kinds import kind_of
from ov.read import LineIndex, OutsideRoot, decode, freshness, open_under, plain_rel
from ov.walk import file_cap


@dataclass(frozen=True)
class Scale:
    """How one kind of content's branch evidence becomes a probability (module docstring)."""

    w_sem: float  # hybrid: the cosine's weight against the keyword term (`keyword_term`)
    k_bm25: float | None  # keyword map: bm25 / (bm25 + k_bm25); None: the keywords probability
    hybrid: tuple[float, float, float]  # (a, b, c) of the fused evidence
    find: tuple[float, float, float]  # (a, b, c) of the cosine alone
    keywords: tuple[float, float, float]  # (a, b, c) of the keyword share alone


# Chosen on the whole tuning sets (scripts/cv_rank.py choose; SciFact train for prose, CoSQA
# dev for code, 5 query folds; docs/BENCHMARKS.md "Retrieval quality"): the abstract's share
# is `find`'s best over both sets; (w_sem, k_bm25) is, among the settings within one
# standard error of the best that keep the hybrid at least `find` and keywords (less 0.005)
# on every fold, the weight nearest half and half, then the best mean. On prose keyword
# evidence counts about as much as the cosine. Code's weight was chosen over two code sets
# at once (`cv_rank.py choose-code`): CoSQA dev, web questions where a keyword match is
# mostly common words (the map had gone to k 1280 there, a bm25 of 20 adding 0.008), and
# a stdlib set, docstring questions over whole modules where keywords alone beat that
# hybrid. Its keyword term, the keywords probability, lets a strong match count and a weak
# one not. The rule: past max(find, keywords) - 0.005 on every fold either set lets any
# weight pass, and past `find` - 0.005 at every CoSQA size, within one standard error of
# the best mean of the two sets, the weight nearest half and half (CoSQA dev 0.6042 ->
# 0.6041, the stdlib set 0.724 -> 0.755; docs/BENCHMARKS.md "Keyword evidence in code").
# The (a, b, c) triples: Platt
# scaling of each score with the log of the tree's files, on the top 20 hits of the tuning
# sets asked on the whole corpora and on corpora of ~20 to ~600 files cut from them
# (`cv_rank.py sizes`); `find` and keywords one triple for every kind (their evidence is the
# same cosine, the same keyword share), so a cosine or a keyword match means the same in a
# code file as in a prose file; the hybrid one per kind, its evidence being a different mix.
_FIND, _KEYWORDS = (19.283, -6.932, -0.894), (70.684, -5.337, -0.377)
PROSE = Scale(w_sem=0.5, k_bm25=40.0, hybrid=(23.936, -5.151, -0.990), find=_FIND, keywords=_KEYWORDS)
CODE = Scale(w_sem=0.7, k_bm25=None, hybrid=(19.433, -6.298, -0.633), find=_FIND, keywords=_KEYWORDS)
PROFILE = {"name": "default", "version": "2026.12-names1"}
# a hybrid hit scores at least its `find` probability when that is at least this (`fuse`)
FIND_FLOOR = 0.5
# ... and at least its keywords-only probability when that is at least this: a name or an
# identifier that one note of a small folder holds (keywords 0.92) was held down by the
# hybrid's size-blind keyword map (0.20). Chosen on the tuning sets at every size
# (docs/BENCHMARKS.md "Scores in a small tree"): 0.5 cost CoSQA dev's 62-file corpora
# 0.006 and put the hybrid under `find` - 0.005 there; from 0.8 up no set moves by more
# than 0.002.
KEYWORD_FLOOR = 0.8


# An identifier query (`io.EOF`, `WithDeadline`: ov.query.identifier) asks for a name, and
# the model's cosine says little of a name: the hybrid keeps every hit's keywords-only
# probability, from any level (`io.EOF` scored hits holding it 0.16 where keywords alone
# said 0.77), and `with_definers` puts the files that define the name first. On 219
# identifier queries over the stdlib set's modules (docs/BENCHMARKS.md "Identifier
# queries") the definers take hybrid nDCG@10 from 0.738 to 0.977; the floor costs it
# 0.0016 (0.9787 -> 0.9771, within the folds' spread) and is kept for what the score says.


# The keyword share counts this many terms more than the query has, terms no row holds: a
# query of one or two words says less than its share alone (CoSQA's queries of 1-3 terms:
# first hits scored 0.51 where 9 % were relevant). Chosen by cross-validated log loss on
# both tuning sets (`cv_rank.py sizes`: 3 is CoSQA dev's best and within one SE of
# SciFact train's).
SHARE_PRIOR_TERMS = 3


# The size of the tuning corpora (SciFact 5,183 files, CoSQA 6,267), at which the scale was
# fitted before it read the tree's size: what a cosine says when the tree's size may not
# count (`Tree.nospace`), and the size code's keyword term is read at (`keyword_term`).
REFERENCE_FILES = 5000
_LN_REFERENCE = math.log(REFERENCE_FILES)


@dataclass(frozen=True)
class Tree:
    """What a score reads besides the hit's own evidence: the files of the index (the
    tree's size), its keyword rows and the query's keyword terms (`keyword_share`).

    `nospace`: the query holds a run of a script written without spaces (Chinese,
    Japanese, Thai...). The model reads English: short Chinese notes are 0.45-0.75
    apart by its cosine whatever they say, which a small tree's scale read as likely relevant (a
    note about a cat scored 0.81 for 迁移, "migration", among 13 notes, above the note on
    the migration). The semantic and hybrid scales of such a query read the tuning
    corpora's size (REFERENCE_FILES) instead of the tree's, and the hybrid keeps no hit at
    its `find` probability (FIND_FLOOR); keyword scores, whose evidence does not depend on
    the language, read the tree's."""

    files: int
    rows: int = 1
    terms: int = 1
    nospace: bool = False
    identifier: bool = False  # the query is one code identifier (ov.query.identifier)
    worded: bool = False  # the query is a phrase in words (ov.query.worded): `fuse`'s shown passage
    # ... and the rows holding its name (its words in order), when all of them were read
    # (None: not known, every row counts as holding it): only those keep their keywords-only
    # probability in the hybrid (`fuse`). `secret_ignored_word` scored a file holding
    # "ignore" and "words" but not the name 0.705, keywords alone, its cosine 0.003.
    holding: frozenset[int] | None = None

    @functools.cached_property
    def ln_files(self) -> float:
        return math.log(max(1, self.files))

    @functools.cached_property
    def ln_files_read(self) -> float:
        """ln files for the scales that read the model's cosine."""
        return math.log(REFERENCE_FILES) if self.nospace else self.ln_files

    @functools.cached_property
    def _share_of(self) -> float:
        return 1.0 / ((max(1, self.terms) + SHARE_PRIOR_TERMS) * bm25_idf(max(2, self.rows), 1) * (BM25_K1 + 1))

    def keyword_share(self, bm25: float) -> float:
        """bm25 over the most the query could score in a row holding each of its terms, and
        SHARE_PRIOR_TERMS more, each as rare as a term can be (its idf in one row of
        `rows`): in [0, 1] whatever the tree's size, and a common word (idf near 0) stays
        near 0. A CJK run's score comes from the trigram table (its own bm25) or, for 1-2
        characters, from `Store.substring_search` (bm25's form without a length norm):
        both read on this measure."""
        return min(1.0, max(0.0, bm25) * self._share_of)


# An abstract's cosine counts at this share against a passage's (`with_abstracts`): the
# best mean of `find` over both tuning sets (0.9 on SciFact train 0.692 against 0.688 at 1
# and 0.689 with no abstract; CoSQA dev 0.604 / 0.598 / 0.605).
ABSTRACT_SHARE = 0.9


@dataclass
class Cand:
    """A candidate chunk with its per-branch evidence."""

    chunk_id: int
    path: str
    score: float = 0.0
    branches: dict[str, dict] = field(default_factory=dict)


def scale_for(path: str) -> Scale:
    """The scale of a file, by the kind of its content ("path\\0chunk id" keys too)."""
    return CODE if _is_code(path.split("\x00", 1)[0]) else PROSE


@functools.lru_cache(maxsize=65536)
def _is_code(path: str) -> bool:  # a hybrid query asks for ~1,000 candidates' paths, often twice
    return kind_of(path) == "code"


def _prob(abc: tuple[float, float, float], x: float, ln_files: float) -> float:
    z = abc[0] * x + abc[1] + abc[2] * ln_files
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def keyword_map(bm25: float, scale: Scale = PROSE) -> float:
    b = max(0.0, bm25)
    return b / (b + scale.k_bm25)


def keyword_term(bm25: float, path: str, tree: Tree) -> float:
    """The keyword evidence the hybrid fuses for a hit in this file (`Scale.k_bm25`): the
    keyword map, or with no k the keywords scale read at REFERENCE_FILES: the tree's size
    is the hybrid scale's own term. Read at the tree's size as well, the term put CoSQA
    dev's 63-file corpora under `find` - 0.005 (0.9632 against 0.9660 here and `find`'s
    0.9697), though it read the stdlib set higher (0.7646 against 0.7550)."""
    sc = scale_for(path)
    if sc.k_bm25 is not None:
        return keyword_map(bm25, sc)
    return _prob(sc.keywords, tree.keyword_share(bm25), _LN_REFERENCE)


def keyword_score(bm25: float, path: str, tree: Tree) -> float:
    """The probability of relevance of a keyword hit of this bm25 in this file."""
    return _prob(scale_for(path).keywords, tree.keyword_share(bm25), tree.ln_files)


def semantic_score(distance: float, path: str, tree: Tree) -> float:
    """The probability of relevance of a semantic hit at this cosine distance in this file."""
    return _prob(scale_for(path).find, 1.0 - distance, tree.ln_files_read)


def branch_score(branch: str, raw: float, path: str, tree: Tree) -> float:
    return keyword_score(raw, path, tree) if branch == "keywords" else semantic_score(raw, path, tree)


def fused_bound(kw_cut: float | None, sem_cut: float | None, tree: Tree) -> float:
    """The most a file that neither branch read can score in `fuse`, when the keyword reads
    were cut at bm25 `kw_cut` and the KNN at distance `sem_cut` (None: that branch was read
    to its end, so a file it did not read has no evidence there): both cuts fused, or either
    branch's own probability at its cut where `fuse` raises a file to it (at least its
    floor), of the kind that scores it higher. A file read at no depth yet can at most tie
    it. (The floors count: without them the bound was mostly the keywords-only probability at
    the cut, which `fuse` gives no file under KEYWORD_FLOOR, and 29 of 100 SciFact queries
    read deeper than the first depth, against 7 with them.)"""
    best = 0.0
    for path in ("a.py", "a.txt"):
        sc = scale_for(path)
        z = (1.0 - sc.w_sem) * keyword_term(kw_cut, path, tree) if kw_cut is not None else 0.0
        z += sc.w_sem * max(0.0, 1.0 - sem_cut) if sem_cut is not None else 0.0
        best = max(best, _prob(sc.hybrid, z, tree.ln_files_read))
        if kw_cut is not None and ((pk := keyword_score(kw_cut, path, tree)) >= KEYWORD_FLOOR or tree.identifier):
            best = max(best, pk)
        if sem_cut is not None and not tree.nospace and (pf := semantic_score(sem_cut, path, tree)) >= FIND_FLOOR:
            best = max(best, pf)
    return best


def abstract_distance(distance: float, share: float = ABSTRACT_SHARE) -> float:
    """The cosine distance an abstract's vector counts for in the semantic branch."""
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


SCORE_DIGITS = 6  # a hit's score as results give it (ov.engine rounds it so)


def sort_cands(cands: Iterable[Cand]) -> list[Cand]:
    """Best first; hits whose scores read the same as printed (SCORE_DIGITS) in path order
    (DESIGN: ties broken by path), not by a difference no one can see."""
    return sorted(cands, key=lambda c: (-round(c.score, SCORE_DIGITS), c.path, c.chunk_id))


def fuse(lists: dict[str, list[Cand]], tree: Tree, unread=frozenset()) -> list[Cand]:
    """Hybrid fusion of per-file (or per-chunk: path "file\\0chunk id") rankings of the
    keywords and semantic branches: z = w_sem * cosine + (1 - w_sem) * keyword term by the
    file's own kind's `Scale`, a branch that did not find the file adding 0, and the score
    the probability of z, or the file's `find` probability when that is at least
    FIND_FLOOR and higher: a hit `find` judges more likely relevant than not stays so in
    `search` (a file that says what the query says, in words the whole tree uses, is not
    held down by weak keyword evidence); the same for its keywords-only probability from
    KEYWORD_FLOOR (a name the file holds, whose cosine says little). Raised at any `find` probability, as before,
    files with a fair cosine and no keyword evidence outranked the fused ones (SciFact test
    0.733 -> 0.702); from 0.5 up it changes SciFact train by -0.0007 (docs/BENCHMARKS.md).
    Each file keeps the chunk of the branch whose own probability of it is higher. With
    one branch only, each file scores by that branch's own scale. `tree`: the index's size
    and the query's terms.

    `unread`: chunk ids still waiting for a vector. A file whose keyword hit has no vector
    yet (a background worker is adding them, for hours on a big tree) scores at least its
    keywords-only probability: the semantic branch could not weigh that hit. Fused with a
    cosine of 0 (or with its abstract's alone), the kernel's `fair.c` fell out of the first
    50 for "how does the scheduler pick the next task" at 0.5 % of the vectors, under files
    the worker had embedded first. Scores are probabilities, so the two kinds of hit rank
    on one scale."""
    if len(lists) == 1:  # one branch ran: its own scale (rank.keyword_score, semantic_score)
        (only,) = lists.values()
        return sort_cands(Cand(c.chunk_id, c.path, branch_score(n, c.branches[n]["raw"], c.path, tree),
                               {n: {**c.branches[n], "rank": r}})
                          for n in lists for r, c in enumerate(only, 1))
    parts: dict[str, list[tuple[float, Cand, str, int]]] = {}
    for name in ("keywords", "semantic"):
        for rank, c in enumerate(lists.get(name, []), 1):
            sc = scale_for(c.path)
            raw = c.branches[name]["raw"]
            if name == "keywords":
                term = (1.0 - sc.w_sem) * keyword_term(raw, c.path, tree)
            else:
                term = sc.w_sem * max(0.0, 1.0 - raw)
            parts.setdefault(c.path, []).append((term, c, name, rank))
    fused = []
    for path, got in parts.items():
        sc = scale_for(path)
        p = _prob(sc.hybrid, sum(g[0] for g in got), tree.ln_files_read)
        own = {}  # each branch's own probability of the file
        for _, c, name, _ in got:  # what one branch alone judges likely relevant stays so
            raw = c.branches[name]["raw"]
            if name == "semantic":
                own[name] = pf = semantic_score(raw, path, tree)
                if tree.nospace:  # the model does not read the query's script
                    continue
                p = max(p, pf) if pf >= FIND_FLOOR else p
            else:
                own[name] = pk = keyword_score(raw, path, tree)
                # a hit the model has not read yet: the semantic branch could not weigh it
                floor = 0.0 if tree.identifier and (tree.holding is None or c.chunk_id in tree.holding) \
                    else KEYWORD_FLOOR
                p = max(p, pk) if pk >= floor or c.chunk_id in unread else p
        lead = _lead(got, own, tree)
        f = Cand(lead.chunk_id, path, p)
        for term, c, name, rank in got:  # `term`: what the branch adds to z (--explain)
            f.branches[name] = {**c.branches.get(name, {}), "rank": rank, "term": round(term, SCORE_DIGITS)}
        fused.append(f)
    return sort_cands(fused)


def _lead(got: list[tuple[float, Cand, str, int]], own: dict[str, float], tree: Tree) -> Cand:
    """The chunk a fused hit shows, of the branches' (term, cand, branch, rank) for its file.
    A phrase in words (`Tree.worded`) is shown by the passage the model reads closest to it
    (not when the file came by its abstract, which stands for the whole file): "set a cookie
    on the response" showed express's response.js by its `require` lines (keywords 0.54:
    `cookie`, `setCharset`, `ServerResponse`) over the passage that sets the cookie (the
    model's nearest, 0.13 at that tree's size). Else the chunk of the branch that judges the
    file likelier relevant: a name the keywords found in one passage (`findrunnable`, 0.49)
    was shown by a passage the model read a little closer than the rest (0.0001) that
    lacked it. A query that is one identifier is shown by the keywords' passage whenever they
    found the name in the file (`holding`): `zabbix_server_dbpassword` was shown by the
    passage the model read closer, holding only `zabbix_server_dbpassword_hash_method`,
    four lines below where the name is set."""
    if tree.identifier:
        for _, c, name, _ in got:
            if name == "keywords" and (tree.holding is None or c.chunk_id in tree.holding):
                return c
    if tree.worded and not tree.nospace:
        for _, c, name, _ in got:
            if name == "semantic" and c.branches["semantic"].get("via") != "abstract":
                return c
    return max(got, key=lambda g: (own[g[2]], g[0], -g[1].chunk_id))[1]


def with_definers(ranked: list[Cand], name: str, definers: dict[str, int], why: str = "defines",
                  by: str = "") -> list[Cand]:
    """An identifier query's ranking (ov.query.identifier) with the files that define the
    name (`definers`: path -> the chunk holding the definition, ov.tiers.defines) first,
    each shown by that chunk. A definition of the name asked for is at least as likely what
    the query wants as any file that only uses it, so a definer scores at least one
    printed step (SCORE_DIGITS) above the best file that does not define it (the definers
    in the order of their own scores, a step apart), or its own score when higher; its own
    is kept in `--explain` as `defines.score` (`why`: the key; `file_name` for the files a
    query names, ov.engine `_named_files`, raised the same way), with `by`, the rule that
    kept a qualified name's definers (ov.engine `_qualified`), when given. `WithDeadline`
    had put context_test.go first and context.go, which defines it, past the first three
    (a review on the Go standard library)."""
    if not definers:
        return ranked
    have = {c.path: c for c in ranked}
    out = [c for c in ranked if c.path not in definers]
    top = max((round(c.score, SCORE_DIGITS) for c in out), default=0.0)
    step = 10.0 ** -SCORE_DIGITS
    # the definers in their own order (a definition in testdata/ had tied the real one and
    # come first by its path), each a printed step above the next
    own = {p: have[p].score if p in have else 0.0 for p in definers}
    mine = sorted(definers, key=lambda p: (-round(own[p], SCORE_DIGITS), p))
    for i, path in enumerate(mine):
        c = have.get(path)
        branches = {**(c.branches if c is not None else {}),
                    why: {"name": name, "score": round(own[path], SCORE_DIGITS), **({"by": by} if by else {})}}
        out.append(Cand(definers[path], path, max(own[path], min(1.0, top + step * (len(mine) - i))), branches))
    return sort_cands(out)


def gone(root: str, path: str) -> bool:
    """Whether `root/path` is no longer there (deleted, or a folder on its way replaced).
    A path the user may not look up (under a folder they cannot search) is not gone: it
    is unreadable, left out without a word, and never counted as stale, which would say
    that it exists."""
    try:
        os.lstat(os.path.join(root, path))
    except PermissionError:
        return False
    except (OSError, ValueError):
        return True
    return False


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

    shows = True  # its hits are shown: each gets its evidence passage (ov.engine._evidence)

    def __init__(self, root: str, cap: int | None = None) -> None:
        self.root = root
        self.cap = cap  # the tree's --max-filesize: a changed file grown past it is not read
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

    def state(self, path: str) -> tuple[int, int, int, int] | None:
        """(size, mtime_ns, ctime_ns, inode) of the file now; None when it cannot be read."""
        return self._stat(path)

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
            if path not in self._outside and plain_rel(path) and gone(self.root, path):
                self.stale += 1
            return None
        if st == (size, mtime_ns, ctime_ns, inode):
            return "same"
        if self.cap is not None and st[0] > max(file_cap(path, self.cap), size):
            # grown past the size cap since indexing: the next `ov index` leaves it out, and
            # reading it whole to recheck one hit cost seconds and gigabytes (100 MB: 48 s)
            self.stale += 1
            return None
        current = self.text(path)
        if current is None:
            return None
        if start == end:  # a tier row: its text is the file's abstract or overview as indexed
            if text in _tiers_now(current, path):
                return "same"
            self.stale += 1  # the file no longer says it: never shown as if it did
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


def _tiers_now(text: str, path: str) -> tuple[str, str]:
    from ov import tiers  # noqa: PLC0415

    return tiers.abstract(text, path), tiers.overview(text, path)


class TrustingChecker(Rechecker):
    """A page's hits as the index holds them, no file read or stat'ed: for replaying the
    pages a cursor showed (what was shown then, whatever the files are now). Only their
    keys are read, so no evidence passage is looked for (ov.engine._evidence)."""

    shows = False

    def check(self, path: str, size: int, mtime_ns: int, start: int, end: int, text: str,
              ctime_ns: int = 0, inode: int = 0):
        return "same"

    def state(self, path: str):
        return None

    def text(self, path: str):
        return None
