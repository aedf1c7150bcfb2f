"""The engine: `find`, `search`, `status`, `context`, `read`, `tag` and `manifest` over an
index; each returns a report.

A ranked query runs each branch with the filters inside it (before any limit), maps
chunks to files, fuses, rechecks the survivors against the disk in rank order until the
page is full, and pages with a cursor bound to the index generation. The CLI only parses
flags and renders what these functions return.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ov import rank
from ov.config import CONFIG_MAX_FILESIZE, DEFAULT_MAX_FILESIZE, MAX_QUERY_TOKENS, env_number, leads_outside
from ov.errors import OvError
from ov.journal import status as journal_status
from ov.kinds import is_notebook, kind_of
from ov.model import (ContextEntry, ContextResult, ContextStats, Copy, Excerpt, Hit, Manifest, ReadResult,
                      SKIP_REASONS, SearchResult, SkippedFile, StatusReport, TaggedFile, TagResult, duration_text)
from ov.paths import listing_dir, resolve
from ov.query import (CURSOR_MAX_DEPTH, CURSOR_MAX_SHOWN, DEFINITION_WORDS, check_limit, check_query, decode_cursor,
                      definition_word, encode_cursor, file_name, identifier, jargon, keyword_plan, package_of,
                      query_pattern, query_roots, request_key, shown_line, shown_line_terms, stem_words, tag_words,
                      type_name, worded, words_in)
from ov.store import KNN_MAX, Filters, SearchedVectors, Store, fts_phrase
from ov.walk import file_cap, gitignore_unread, left_out_by_rules, over_cap


@dataclass(frozen=True)
class SearchRequest:
    query: str
    search_type: str = "hybrid"  # hybrid | keywords | semantic
    limit: int = 10
    threshold: float | None = None
    filters: Filters = field(default_factory=Filters)
    cursor: str | None = None
    explain: bool = False
    all_chunks: bool = False
    read_content: bool = False
    include_tiers: bool = False


# ---- a user's paths ------------------------------------------------------------------------


def scope_paths(root: Path, uris: list[str] | None, cwd: Path | None = None, *,
                must_exist: bool = False, field: str = "uri", from_root: bool = False) -> tuple[str, ...]:
    """`-u/--uri` values → paths relative to the root; refused if outside it (and, with
    `must_exist`, if missing: a typo must not look like "no results")."""
    cwd = cwd or Path.cwd()

    def one(u: str) -> str:
        rel = resolve(root, cwd, u, must_exist=must_exist, field=field, links=True)
        if (out := _link_out(root, rel)) is not None:  # as `-u /etc`: not a "no results" (a Go tree's review)
            raise out
        if from_root and not os.path.lexists(os.path.join(root, rel)):
            # a result's uri is root-relative: handed back from a subfolder, it still names
            # the file it came from (it named a file below the subfolder, and none is there)
            try:
                alt = resolve(root, root, u, must_exist=True, field=field, links=True)
            except OvError:
                return rel
            return alt
        return rel

    return tuple(one(u) for u in uris or [])


# ---- search --------------------------------------------------------------------------------


def _embed_query(text: str, embedder_factory):
    emb = embedder_factory()
    n = emb.count_tokens(text)
    if n > MAX_QUERY_TOKENS:
        raise OvError("query_too_long",
                      f"the query is {n} model tokens; semantic search takes at most {MAX_QUERY_TOKENS}",
                      field="query")
    return emb.embed([text])[0].astype("float32").tobytes(), emb.model_id


def _default_embedder():
    from ov.embed import load_embedder  # noqa: PLC0415 - only semantic branches pay for it

    return load_embedder("query")


def _searchable(query: str) -> bool:
    plan = keyword_plan(query)
    return bool(plan.fts or plan.trigram or plan.short or plan.pairs)


def search(store: Store, root: Path, req: SearchRequest, embedder_factory=None) -> SearchResult:
    """A ranked search: the branches the request and the index allow (`_plan`), each
    ranking at a depth made once (`_Rankings`), the page the cursor asks for (`_page`)."""
    check_query(req.query)
    check_limit(req.limit)
    if req.threshold is not None and not 0.0 <= req.threshold <= 1.0:
        raise OvError("invalid_argument", "--threshold must be between 0 and 1", field="threshold")
    cov = coverage(store)
    if not cov["pending"] and not cov["background"] and not store.readonly:
        SearchedVectors.drop_beside(store.path)  # all vectors stored: what searches kept is moot
    if not cov["background"]:
        return _search(store, root, req, embedder_factory, cov)
    # a background worker embedding beside this search waits while it runs: the same
    # model on the same cores would take half of them (ov.indexer.Searching)
    from ov.indexer import Searching  # noqa: PLC0415

    with Searching(store.path) as claim:
        return _search(store, root, req, embedder_factory, cov, claim)


def _search(store: Store, root: Path, req: SearchRequest, embedder_factory, cov: dict,
            claim=None) -> SearchResult:
    """`search` itself; `claim`, its `Searching` mark while a worker runs (let go while it
    waits for that worker's first vectors: `_first_vectors`)."""
    # (the ranking profile too: a cursor from another version's ranking would replay another one)
    request = request_key(req.query, req.search_type, req.threshold, req.filters, req.all_chunks,
                          rank.PROFILE["version"])
    embedder_factory = _memo(embedder_factory or _default_embedder)  # one model load at most
    no_vectors = _no_vector_levels(req)  # -L 1: overviews are keyword rows only
    use_kw, use_vec, qvec = _plan(store, req, cov, embedder_factory, no_vectors, claim)
    # new vectors change a ranking that reads them, not a keywords-only one: its cursor
    # stays valid while a background worker adds them
    generation = store.generation() + (f"/{store.vectors_generation()}" if use_vec else "")
    segments = decode_cursor(req.cursor, generation, request) if req.cursor is not None else []
    # the default (hybrid) ranking leaves out minified, generated and data files' rows;
    # keyword search still finds them (ov.indexer.embeddable)
    overviews = req.search_type == "hybrid" and no_vectors
    if req.search_type == "hybrid" and not overviews:
        req = replace(req, filters=replace(req.filters, vectorless=False))
    branches = [b for b, on in (("keywords", use_kw), ("semantic", use_vec)) if on]
    warnings = []
    if overviews:
        warnings.append("hybrid search ran on keywords alone: overviews (-L 1) have no vectors")
    if use_kw and not use_vec and not _searchable(req.query):  # not "nothing matched"
        warnings.append("the query holds no word the keyword index can search (only punctuation or "
                        "symbols): `ov grep -F` finds it as text")
    ranking = _Rankings(store, req, use_kw, use_vec, qvec, partial=bool(use_vec and cov["pending"]),
                        embedder_factory=embedder_factory)
    page, more, segments, checker = _page(ranking, root, req, segments)
    page = _with_lines(page, req.query)
    # rows whose vectors this search computed (`_VectorsNow`; 0 when none were waiting)
    cov = {**cov, "computed": len(ranking.now.dist) if ranking.now else 0}
    if use_vec and not use_kw and cov["embedded"] == 0 and not cov["computed"]:
        # no keyword hit to compute vectors for: the worker's first vectors are waited for
        # as before (an empty answer would read as "nothing matched"), then it runs again
        _first_vectors(store, cov, claim)
        return _search(store, root, req, embedder_factory, {**cov, "computed": 0})
    if use_vec and cov["embedded"] == 0 and not cov["computed"]:
        # the semantic branch had no vector to read: the keywords alone ranked, and the
        # result says so (it said "branches": ["keywords", "semantic"] beside the warning).
        # When they matched nothing, the first vectors are waited for as `find` waits (a
        # small notes folder's first search answered nothing in 0.9 s; its worker was done 2 s later)
        if (not page and req.cursor is None and cov["pending"] <= FIRST_VECTORS_WAIT_ROWS
                and _waited_vectors(store, cov, claim)):
            return _search(store, root, req, embedder_factory, {**cov, "computed": 0})
        branches = ["keywords"]
    warnings[:0] = coverage_warnings("keywords" if overviews else req.search_type, cov)
    if ranking.cut_short:
        warnings.append(f"ranked the best {KNN_MAX if use_vec else KEYWORD_MAX_DEPTH:,} rows of each branch: "
                        "files whose best match lies deeper are not listed (a narrower query, -t or "
                        "-u finds them; `ov grep` lists every file)")
    if checker.stale:
        warnings.append(_stale_warning(checker.stale, "hit(s)"))
    if checker.refused:
        warnings.append(_refused_warning(checker.refused))
    warnings.extend(_size_cap_warning(store, req.filters, req.query))
    if not req.all_chunks and ((req.search_type == "hybrid" and use_kw and not req.filters.vectorless)
                               or (req.search_type == "semantic" and len(page) < req.limit)):
        # (`ov find` -t csv had answered nothing, silent, where search named the left-out file)
        warnings.extend(_left_out_warning(store, req, ranking.tree, page))
    warnings.extend(_scope_warnings(store, root, req.filters))
    if not page and not store.has_files_under(""):
        warnings.append(_empty_index_warning(root))
    elif req.cursor is None and cov.get("keywords_complete", True) and (
            not page or (store.checks_drift and store.file_count() <= BEHIND_CHECK_FILES)):
        # also while an indexer adds vectors (for hours on a big tree): it reads no file again
        warnings.extend(_behind_warning(store, root))
    return SearchResult(
        search_type="keywords" if branches == ["keywords"] else req.search_type,
        branches=branches,
        coverage=cov,
        profile=dict(rank.PROFILE),
        hits=page,
        total=len(page),
        next_cursor=encode_cursor(generation, request, segments) if more else None,
        warnings=warnings,
        stale=checker.stale,
        refused=checker.refused or None,
        root=str(root),
    )


def _with_lines(page: list[Hit], query: str) -> list[Hit]:
    """Each hit with the line it is shown at (`Hit.line`, ov.query.shown_line), in its
    passage as the excerpt holds it; an abstract or an overview has none."""
    if not page:
        return page
    pats, name = shown_line_terms(query)
    return [replace(h, line=h.start_line + shown_line(h.excerpt.text.split("\n"), h.path, pats, name))
            if h.excerpt.text else h for h in page]


def _plan(store: Store, req: SearchRequest, cov: dict, embedder_factory,
          no_vectors: bool, claim=None) -> tuple[bool, bool, bytes | None]:
    """(read keywords, read vectors, the query's vector): the search type, less what the
    index cannot serve. Semantic search on an index without vectors is `unsupported`
    unless a worker is adding them; a hybrid one reads keywords alone until then, unless
    it can compute the vectors of its best keyword hits (`_VectorsNow`)."""
    use_kw = req.search_type in ("hybrid", "keywords")
    use_vec = req.search_type in ("hybrid", "semantic")
    qvec = None
    if use_vec and no_vectors:  # the asked levels hold no vector (`_no_vector_levels`)
        if req.search_type == "semantic":
            raise OvError("unsupported", "overviews (-L 1) have no vectors; semantic search reads "
                          "abstracts and passages (-L 0,2), or use --search-type keywords for -L 1",
                          field="level")
        use_vec = False
    if use_vec:
        if cov["embedded"] == 0 and req.search_type == "semantic" and not _computes(req, cov):
            _first_vectors(store, cov, claim)
        if cov["embedded"] == 0 and not (VECTORS_NOW_FILES and cov["pending"] and _model_ready()):
            use_vec = False  # a hybrid one reads keywords alone, and says so
        else:
            qvec, model_id = _embed_query(req.query, embedder_factory)
            stored = store.get_meta("model")
            if stored and stored != model_id:
                raise OvError("unsupported", f"the index was embedded with {stored!r}, but the "
                              f"query embedder is {model_id!r}; rebuild with `ov index --full`")
    return use_kw, use_vec, qvec


def _computes(req: SearchRequest, cov: dict) -> bool:
    """Whether a search computes the vectors its best keyword hits wait for (`_VectorsNow`):
    vectors are still coming, passages are asked, the model's files are there."""
    return bool(VECTORS_NOW_FILES > 0 and cov["pending"] and req.filters.levels == (2,) and _model_ready())


def _model_ready() -> bool:
    """Whether the model's files are there (cheap: no onnxruntime): a hybrid search on an
    index with no vector yet computes its best keyword hits' (`_VectorsNow`) only then."""
    from ov.embed import check_available  # noqa: PLC0415

    try:
        check_available()
    except OvError:
        return False
    return True


def _no_vector_levels(req: SearchRequest) -> bool:
    """Whether the asked levels hold no row with a vector: overviews (-L 1) are keyword
    rows only (ov.indexer.VECTOR_LEVELS)."""
    from ov.indexer import VECTOR_LEVELS  # noqa: PLC0415

    return not set(req.filters.levels) & set(VECTOR_LEVELS)


# How deep each branch is read for a query's first page, whatever its -n (4 x the largest
# page, 50, and one more): a fused score depends on the depth read (a file gets a
# branch's share only when one of its chunks is within it), and with a depth of its own
# for each -n (64 for 10 hits, 204 for 50) one hit scored 0.0046 at -n 7 and 0.0048 at
# -n 49, and pages of -n 7 chained by --cursor were not in score order.
FIRST_DEPTH = 256
KEYWORD_MAX_DEPTH = CURSOR_MAX_DEPTH  # rows a keyword-only ranking reads at most (ov.query)
FIRST_VECTORS_WAIT_S = 10.0  # a semantic search waits so long for a worker's first vectors
# ... and a hybrid one that no keyword matched, when at most this many rows wait for theirs
# (a small tree, whose worker commits them all in seconds): on a big tree the worker writes
# grep's rows for minutes before any vector, and each such search had waited the 10 s in vain
FIRST_VECTORS_WAIT_ROWS = 2_000
# A hybrid search while vectors are still coming (a first search answers before the
# background worker has embedded anything, and on a big tree it works for hours) computes
# now the vectors its best keyword hits lack: of the files with the best keyword scores,
# VECTORS_NOW_FILES, each one's best keyword passage, and the abstracts of the best
# VECTORS_NOW_ABSTRACTS of them (`_VectorsNow`). 64 and 16 were chosen on the first answers
# of three sets (CoSQA dev, SciFact train, whole stdlib modules) over 32 and 32 by a rule
# written before the runs (docs/BENCHMARKS.md, "The rows a first answer computes: 64
# passages and 16 abstracts"); OV_VECTORS_NOW_FILES=0 turns it off.
VECTORS_NOW_FILES = int(env_number("OV_VECTORS_NOW_FILES", 64))
# (the abstracts carry a file whose words on the query are in its leading comment only, a
# C file's, test_background.py: passages alone lost it)
VECTORS_NOW_ABSTRACTS = int(env_number("OV_VECTORS_NOW_ABSTRACTS", 16))


class _VectorsNow:
    """The vectors a hybrid search computes for the rows its best keyword hits lack, while a
    worker (or the next `ov index`) has not stored them yet: of the VECTORS_NOW_FILES files
    with the best keyword evidence, each one's best keyword passage, and the abstracts of the
    best VECTORS_NOW_ABSTRACTS of them. They
    are the semantic evidence of those files for this query only (nothing is written: a
    search does not take the index from the worker that adds the vectors), so a first
    answer is fused from both branches instead of ranked by keywords alone. A row's vector
    is computed once per query, whatever the depth a page reads."""

    def __init__(self, store: Store, qvec: bytes, embedder_factory) -> None:
        self.store, self.qvec, self.embedder_factory = store, qvec, embedder_factory
        self.dist: dict[int, float] = {}  # row id -> cosine distance to the query

    def _vectors(self, todo: list[int], texts: dict[int, str], dim: int):
        """The vectors of the rows `todo`: those an earlier search kept read back (the same
        query again, its JSON, its next page had cost 6.2 s each on the JDK's sources at
        8 % of their vectors), the others computed and kept (`SearchedVectors`)."""
        import numpy as np  # noqa: PLC0415

        from ov.embed import model_id  # noqa: PLC0415 (the model the rows are computed by)

        kept = SearchedVectors(self.store.path, model_id(), readonly=self.store.readonly)
        held = kept.get({i: texts[i] for i in todo}, dim * 4)
        vecs = np.zeros((len(todo), dim), np.float32)
        rest = []
        for n, i in enumerate(todo):
            if i in held:
                vecs[n] = np.frombuffer(held[i], dtype=np.float32)
            else:
                rest.append(n)
        if rest:
            new = np.asarray(self.embedder_factory().embed([texts[todo[n]] for n in rest]), dtype=np.float32)
            vecs[rest] = new
            kept.put([(texts[todo[n]], v.tobytes()) for n, v in zip(rest, new)])
        return vecs

    def cands(self, kw: list[rank.Cand]) -> list[rank.Cand]:
        """Semantic candidates for the best keyword files' waiting rows (a passage as
        itself, an abstract on its file's lead passage, as `_branches` reads stored ones)."""
        import numpy as np  # noqa: PLC0415

        paths = self.store.chunk_paths([c.chunk_id for c in kw])
        best: dict[str, int] = {}
        for c in sorted(kw, key=lambda c: (-c.branches["keywords"]["raw"], c.chunk_id)):
            if len(best) >= VECTORS_NOW_FILES:
                break
            best.setdefault(paths.get(c.chunk_id, ""), c.chunk_id)
        passages = self.store.waiting_vectors(list(best.values()))
        abstracts = self.store.waiting_abstracts(list(best.values())[:VECTORS_NOW_ABSTRACTS])
        todo = [i for i in (*sorted(passages), *sorted(abstracts.values())) if i not in self.dist]
        if todo:
            texts = self.store.chunk_texts(todo)
            todo = [i for i in todo if i in texts]
            q = np.frombuffer(self.qvec, dtype=np.float32)
            vecs = self._vectors(todo, texts, q.size)
            for i, d in zip(todo, (1.0 - vecs @ q).tolist()):
                self.dist[i] = d
        out = [_cand(cid, "semantic", self.dist[cid], 0.0) for cid in sorted(passages) if cid in self.dist]
        leads = self.store.first_passages(list(abstracts.values()))
        for aid in sorted(abstracts.values()):
            if aid in self.dist and aid in leads:
                c = _cand(leads[aid], "semantic", rank.abstract_distance(self.dist[aid]), 0.0)
                c.branches["semantic"]["via"] = "abstract"
                out.append(c)
        return out


class _Rankings:
    """`(depth, need, checker)` -> the first `need` hits of the ranking when each branch is
    read `depth` deep, and whether the branches held nothing more. Each depth is ranked
    once: a page replays the last page's depth and then reads on at it, and `_RankedRows`
    gives the same first hits for any `need`."""

    def __init__(self, store: Store, req: SearchRequest, use_kw: bool, use_vec: bool, qvec, *,
                 partial: bool = False, embedder_factory) -> None:
        self.store, self.req, self.use_kw, self.use_vec, self.qvec = store, req, use_kw, use_vec, qvec
        self.partial = partial  # some rows still wait for their vector (`_combine`'s `unread`)
        # the vectors this search computes for its best keyword hits' waiting rows
        # (a semantic search too: its first answer ranked no row, or waited on the worker's
        # first commit and was index_busy; its candidates are the keyword branch's best files)
        self.now = (_VectorsNow(store, qvec, embedder_factory) if partial and use_vec
                    and VECTORS_NOW_FILES > 0 and req.filters.levels == (2,) else None)
        self.at: dict[int, tuple[list[rank.Cand], _RankedRows, bool]] = {}
        self.cap = size_cap(store)  # a recheck reads no changed file past it
        self.tree = query_tree(store, req.query, req.filters)  # what every score reads besides its evidence
        self.cut_short = False  # the last page ran out of rows to read before the branches did
        # `_definers` or `_named_files` (name, path -> chunk, its --explain key, the rule that
        # kept them), read once
        self.definers: tuple[str, dict[str, int], str, str] | None = None

    def __call__(self, depth: int, need: int, checker: rank.Rechecker) -> tuple[list[Hit], bool]:
        if depth not in self.at:
            branch_lists, exhausted, (kw_cut, sem_cut) = _branches(
                self.store, self.req, self.use_kw, self.use_vec, self.qvec, depth, self.tree, self.now)
            cut = kw_cut if self.use_kw else sem_cut
            # a keyword hit still waiting for its vector keeps its keywords-only probability
            # (`rank.fuse`) only when this search computes none: when it computes the best
            # files' (`_VectorsNow`), a hit past them is fused with no cosine. Kept there, the
            # 65th keyword file's floor outranked the best ones weighed by both branches (the
            # JDK at 8 % of its vectors: HashMap.java from 4th by keywords to past the 50th;
            # first answers simulated on the labelled sets: SciFact train 0.730 -> 0.740, code
            # 0.778 -> 0.781, CoSQA 0.556 -> 0.557; docs/BENCHMARKS.md)
            unread = (self.store.waiting_vectors([c.chunk_id for c in branch_lists.get("keywords", [])])
                      if self.partial and len(branch_lists) == 2 and self.now is None else frozenset())
            ranked = _combine(branch_lists, self.req, self.tree, unread)
            if len(branch_lists) == 1 and not exhausted and cut is not None:
                # each kind maps a raw score to its own probability, so a file not read yet
                # (its raw score past the last one read) may outscore a read one of another
                # kind: only what scores at least every kind's score at that cut is final.
                # At it, not above it: a row not read can at most tie it (and thousands of
                # rows of one score, a log's repeated lines, left nothing above it at any
                # depth: the search answered nothing)
                (name,) = branch_lists
                bound = max(rank.branch_score(name, cut, p, self.tree) for p in ("a.py", "a.txt"))
                ranked = [c for c in ranked if c.score >= bound]
            elif len(branch_lists) == 2 and not exhausted and not self.partial and not self.req.all_chunks \
                    and self.req.filters.levels == (2,):
                # a file neither branch read at this depth scores at most the fusion of both
                # cuts (`rank.fused_bound`), so only what scores at least that is final; the
                # page reads deeper for the rest. Cut nothing, a first page of 20 had ended on
                # a hit at 0.0016 where a file read only at the next depth scored 0.0052, and
                # the next page's scores rose (a CI review)
                bound = rank.fused_bound(kw_cut, sem_cut, self.tree)
                ranked = [c for c in ranked if c.score >= bound]
            if self.use_kw and not self.req.all_chunks:
                if self.definers is None:  # the same for every depth: pages agree
                    held = self.tree.holding if self.req.filters.levels == (2,) else None
                    name, found, by = _definers(self.store, self.req, held)
                    self.definers = (name, found, "defines", by)
                    if not found:  # (tags before a text found word for word: `#a #b` is both)
                        tag, tagged = _tagged_files(self.store, self.req)
                        text, held = ("", {}) if tagged else _verbatim(self.store, self.req)
                        self.definers = ((tag, tagged, "tag", "") if tagged else
                                         (text, held, "verbatim", "") if held else
                                         (*_named_files(self.store, self.req), "file_name", ""))
                ranked = rank.with_definers(ranked, *self.definers)
            rows = _RankedRows(self.store, [c.chunk_id for c in ranked], need * 3 + 50)
            self.at[depth] = (ranked, rows, exhausted)
        ranked, rows, exhausted = self.at[depth]
        return _materialise(ranked, rows, self.req, checker, need), exhausted


def _page(ranking: _Rankings, root: Path, req: SearchRequest, segments: list[tuple[int, int, str, int]]):
    """(the page's hits, ranked; whether more exist; the cursor's segments after it; the
    page's rechecker).

    A fused ranking depends on how deep each branch is read (a file gets a branch's share
    only when one of its chunks is within the depth), so a page read deeper than the one
    before it could repeat or skip hits. The cursor therefore records the depth each page
    was ranked at; the hits already taken are replayed from exactly those rankings, and
    each new page is the next hits of its own ranking that were not taken. Every page of
    one query then reads one depth until it runs out. A hit whose passage is word for word
    one this page shows is taken as that hit's duplicate (`_fold`)."""
    def key(h: Hit):
        # with --all-chunks a hit is its chunk, known by its span as the index holds it (a
        # file changed since moves the span shown, and a replay, which reads the index's,
        # repeated and skipped passages); a file's tier rows share the span 0-0, so the
        # level tells them apart
        return (h.path, h.level, *getattr(h, "indexed_span", (h.excerpt.start, h.excerpt.end))) \
            if req.all_chunks else h.path

    shown: set = set()
    for depth, count, last, _ in segments:
        shown.update(_replayed(ranking, root, depth, count, last, key, shown))
    offset = sum(ranks for *_, ranks in segments)
    checker = rank.Rechecker(str(root), ranking.cap)
    need = len(shown) + req.limit + 1
    depth = segments[-1][0] if segments else max(FIRST_DEPTH, need * 4)
    # sqlite-vec reads at most KNN_MAX vectors; keywords alone read deeper, or the passages
    # of a few big files that repeat a word (a log) could hide every other file holding it
    top = KNN_MAX if ranking.use_vec else KEYWORD_MAX_DEPTH
    while True:
        hits, exhausted = ranking(depth, need, checker)
        new = [h for h in hits if key(h) not in shown]
        page, taken, more = _fold(new, req.limit, not req.all_chunks)
        if more:
            break
        if len(hits) >= need and len(new) > len(page):  # this depth holds more: copies took the room
            need += len(new) - len(page)
            continue
        if exhausted or depth >= top:
            break
        depth = min(top, depth * 4)
    # (a --threshold that ended the page cut nothing: rows not read score lower still)
    ranking.cut_short = not exhausted and not more and req.threshold is None
    for i, h in enumerate(page):
        h.rank = offset + i + 1
    last = _mark(key(new[taken - 1])) if taken else (segments[-1][2] if segments else "")
    if segments and segments[-1][0] == depth:
        segments = [*segments[:-1], (depth, segments[-1][1] + taken, last, segments[-1][3] + len(page))]
    else:
        segments = [*segments, (depth, taken, last, len(page))]
    return page, more, segments, checker


def _fold(new: list[Hit], limit: int, fold: bool = True) -> tuple[list[Hit], int, bool]:
    """(the page: the first `limit` of `new` that are not word for word a passage it already
    shows; how many of `new` it took; whether one more is left). A passage that repeats one
    shown above it on the page (a vendored or bundled copy: lodash and lodash-es, a
    package's `dist/` builds) is folded into that hit's `duplicates`, with the ones after
    the page's last hit up to the next hit of its own. On a tree of 19 npm packages, 9 of 10
    questions had such copies among their first 10 hits. A copy past its hit's page is
    listed as a hit of its own: a page never hides one."""
    page: list[Hit] = []
    by_text: dict[str, Hit] = {}
    for taken, h in enumerate(new):
        text = h.excerpt.text if fold and h.level == 2 else ""
        first = by_text.get(text) if text else None
        if first is not None:
            first.duplicates = [*(first.duplicates or []), Copy(h.path, h.start_line, h.end_line)]
            continue
        if len(page) == limit:
            return page, taken, True
        page.append(h)
        if text:
            by_text[text] = h
    return page, len(new), False


def _mark(k) -> str:
    """A short mark of a hit's key, which the cursor keeps for the last hit it showed."""
    import hashlib  # noqa: PLC0415

    return hashlib.sha1(repr(k).encode()).hexdigest()[:12]


def _replayed(ranking: _Rankings, root: Path, depth: int, count: int, last: str, key, shown: set) -> list:
    """The keys an earlier page of the cursor showed from its ranking at `depth`: those up
    to its last hit (`last`) in the ranking's own order, rows taken as the index holds
    them. Rechecked against the files as they are now, a file deleted or changed since
    that page would drop out of the replay and the next page skip a hit that was never
    shown. Without the mark (or when it is not found): the first `count` rechecked."""
    if last:
        replay, _ = ranking(depth, CURSOR_MAX_SHOWN, rank.TrustingChecker(str(root)))
        keys = []
        for h in replay:
            k = key(h)
            if k in shown:
                continue
            keys.append(k)
            if _mark(k) == last:
                return keys
    replay, _ = ranking(depth, len(shown) + count, rank.Rechecker(str(root), ranking.cap))
    return [key(h) for h in replay if key(h) not in shown][:count]


def _size_cap_warning(store: Store, f=None, query: str = "") -> list[str]:
    """DESIGN's "no silent limits": files the index left out for their size are in no
    ranked result, which says so (grep reads them). Those the scope (`-u`, `--exclude-uri`,
    `-t`) leaves out anyway are not counted: every answer in `encoding/` repeated the Go
    tree's three big files elsewhere. Nor are those whose trigram bitmap (ov.grams, kept
    for grep) rules out every word of the query: on a JS tree every search named
    TypeScript's eight 10 MB bundles, and the one whose answer lay only in them
    (`checkTypeAssignableTo`) was said no differently. A file is named when it may hold
    one of the query's words as the keyword search reads them: any word (an OR), stop
    words aside, stemmed (ov.query.query_roots: `configuration` finds `configured`)."""
    total, listed = store.skipped()
    big = [p for p, why in listed if why == "size" and (f is None or f.holds_path(p))]
    more = total > len(listed)
    # (a trigram at least); a name is looked for whole: `quokka_unique_function` named a C++
    # tree's lapacke.h, which holds `function`
    name = (identifier(query) or ("",))[0] if query else ""
    probes = [name] if len(name) >= 3 else [w for w in query_roots(query) if len(w) >= 3][:SIZE_CAP_WORDS]
    if big and probes and not more:
        from ov.grams import lacks, literal_grams  # noqa: PLC0415

        bits = {p: b for p, _, b in store.big_file_grams()}
        wanted = [literal_grams([w], fold=True) for w in probes]
        big = [p for p in big if p not in bits or any(not lacks(bits[p], g) for g in wanted)]
    if not big:
        return []
    held = "may hold words of the query but " if probes and not more else ""
    return [f"{'at least ' if more else ''}{len(big)} file(s) over --max-filesize {held}are not in the index "
            f"and so in no ranked result ({big[0]}{', ...' if len(big) > 1 or more else ''}); "
            "`ov status` lists them, `ov grep` searches them"]


SIZE_CAP_WORDS = 16  # the query's words a big file's bitmap is asked for (`_size_cap_warning`)


def _left_out_warning(store: Store, req: SearchRequest, tree: rank.Tree, page: list[Hit]) -> list[str]:
    """The default (hybrid) ranking leaves out the rows of generated, minified, lock and
    data files (ov.indexer.embeddable): said when such a file's keyword hit would have
    made this page by its keywords-only probability. On the Go tree the whole HTTP/2
    code (`net/http/h2_bundle.go`, "Code generated ... DO NOT EDIT") was missing from
    "http2 flow control window update frame" without a word."""
    plan = keyword_plan(req.query)
    floor = max(req.threshold or 0.0, page[-1].score if len(page) >= req.limit else 0.0)
    # (a second keyword read costs as much as the branch's: not when no file is left out)
    if not plan.fts or not store.has_left_out():
        return []
    got = store.keyword_search(plan.fts, replace(req.filters, vectorless=True), req.limit + 1)
    out = store.left_out([cid for cid, _ in got])
    if not out:
        return []
    paths = store.chunk_paths(sorted(out))
    shown = {h.path for h in page}
    # (a notebook is no such file: its cells are ranked, and the rows left out are its
    # outputs and JSON structure; "python version" named every notebook by its kernelspec)
    files = list(dict.fromkeys(paths[cid] for cid, raw in got if cid in out and cid in paths
                               and rank.keyword_score(raw, paths[cid], tree) > floor and paths[cid] not in shown
                               and not is_notebook(paths[cid])))
    if not files:
        return []
    return [f"{len(files)} generated, minified or data file(s) hold the query's words but the default "
            f"ranking leaves them out ({files[0]}{', ...' if len(files) > 1 else ''}): "
            "`--search-type keywords` ranks them (README: what gets a vector)"]


def _empty_index_warning(root: Path) -> str:
    """An index that holds no file answers nothing: say why it may be empty (a home
    folder's dotfiles repository whose .gitignore is `*` ignores every file below it)."""
    from ov.walk import git_top_above  # noqa: PLC0415

    top = git_top_above(str(root))
    where = f"ignore files here or above, up to the git work tree at {top}" if top else "ignore files"
    return (f"the index holds no file: every file may be ignored ({where}), hidden, binary or over "
            "--max-filesize; `ov index --no-ignore` indexes ignored files, `ov status` lists what was skipped")


# A ranked answer checks the tree for edits the index lacks up to this many indexed files
# (grep's listing and a stat a file: ~0.08 s for CoSQA's 6,267 files, ~0.19 s for 19,000 a
# review measured); past it, only an empty answer does (`_behind_warning`).
BEHIND_CHECK_FILES = 10_000
# ... and opens at most this many files the index lacks to tell a new one from a binary
# one the last `ov index` skipped past its list's first 1,000; past it, it says nothing
BEHIND_SNIFFS = 1_000


def _behind_warning(store: Store, root: Path) -> list[str]:
    """A ranked answer says when the tree moved since the last `ov index` (a file saved,
    added or deleted, a `git checkout`): a search right after an edit answered from the
    old text, with confident hits elsewhere and no word, while `ov status` knew. Hits in
    a changed file are rechecked (`stale`); this is the text the index never read. The
    walk and the stats are `ov status`'s (`drift`)."""
    got = drift(store, root, store.file_states(), store.skipped()[1], size_cap(store), BEHIND_SNIFFS)
    if got is None:  # more unindexed files to open than an answer should pay for
        return []
    new, excluded, changed, missing = got
    moved = [f"{n} {what}" for n, what in ((changed, "changed"), (new, "new"), (missing, "deleted")) if n]
    parts = [", ".join(moved) + " file(s)"] if moved else []
    if excluded:
        parts.append(f"{excluded} file(s) the ignore rules or the size cap leave out now")
    if not parts:
        return []
    # (a file the rules leave out now is still answered from until `ov index` drops it: a
    # `git checkout` that changed a .gitignore was said as "1 new file(s)" alone, a review)
    return [f"the tree changed since the last `ov index` ({'; '.join(parts)}): the ranking "
            "read the indexed text; `ov index` brings it up to date, `ov grep` searches the files as they are"]


def _scope_warnings(store: Store, root: Path, f) -> list[str]:
    """A `-u` that holds no indexed file (an ignored, hidden or binary file, one over the
    size cap, or new since `ov index`) answered "no results" without a word, and a search
    from such a folder answered from the others without one; an
    `--exclude-uri` that names nothing left nothing out without one."""
    out = [f"-u {u}{link or ': no indexed file there (ignored, hidden, binary, over --max-filesize, or new since `ov index`); `ov grep` searches it'}"
           for u in f.uris if u and not store.has_files_under(u) for link in [_link_note(root, u)]]
    here = f.glob_at[0].rstrip("/")
    if not f.uris and here and not store.has_files_under(here):
        # a search from a git-ignored `build/` under an index of the checkout answered from
        # the other folders, as if `build/` held nothing of the query (a review)
        out.append(f"the current folder ({here}/) holds no indexed file (ignored, hidden, binary, over "
                   f"--max-filesize, or new since `ov index`): the hits are the rest of the index at {root}; "
                   "`ov grep` searches this folder")
    # (a name such as `testdata/` holds no glob character: it is a path from here, and the
    # glob that finds it anywhere is said)
    if f.ftypes and not store.any_file(Filters(ftypes=f.ftypes)):
        # (`-g '*.kt'` said so and `-t kotlin` answered nothing without a word: a review)
        out.append(f"-t {','.join(f.ftypes)}: no indexed file is of this type (ignored, hidden, binary, "
                   "over --max-filesize, or new since `ov index`); `ov grep -t` reads the files")
    if f.tags and not store.any_file(Filters(tags=f.tags)):
        from ov.search.prefilter import no_tagged_note  # noqa: PLC0415

        out.append(no_tagged_note(f.tags).replace("so nothing was searched", "so nothing was ranked"))
    out += [f"--exclude-uri {u}: no such file or folder, so nothing was left out for it (a glob such as "
            f"'**/{u.rsplit('/', 1)[-1]}' leaves out such a name at any depth)"
            for u in f.exclude_uris if u and not os.path.lexists(os.path.join(root, u))]
    return out + _glob_warnings(store, f)


def _glob_warnings(store: Store, f) -> list[str]:
    """A glob (`-g`, or `--exclude-uri` given one) that matches no indexed file, said as
    the paths are: `--exclude-uri '*_test.go'` read as a path left every test in."""
    def matches(glob: str) -> bool:
        return store.any_path_passes(Filters(globs=(glob,), glob_at=f.glob_at).path_rules)

    out = [f"--exclude-uri {g}: no indexed file matches this glob, so nothing was left out for it"
           for g in f.exclude_globs if not matches(g)]
    for g in f.globs:
        if g.startswith("!") and not matches(g[1:]):
            out.append(f"-g {g}: no indexed file matches {g[1:]}, so nothing was left out for it")
        elif not g.startswith("!") and not matches(g):
            out.append(f"-g {g}: no indexed file matches it (ignored, hidden, binary, over --max-filesize, "
                       "or new since `ov index`); `ov grep -g` reads the files")
    return out


def _worker_eta(store: Store) -> str:
    """How far the background worker is, for a message: ", reading files first",
    ", writing grep's rows first", or ", about 4 min left" (ov.worker: the model's tokens
    left at its recent rate); "" when it does not say. The first `ov find` on the kernel
    said only "try again", for 10 minutes."""
    from ov.indexer import worker_state  # noqa: PLC0415

    st = worker_state(store.path) or {}
    phase, eta = st.get("phase"), st.get("eta_s")
    if phase in ("scan", "grams"):
        return ", reading the tree's files first"
    if phase == "trigram":
        return ", writing grep's rows first"
    if phase == "embed" and eta is not None:
        return f", about {duration_text(float(eta))} left"
    return ""


def _first_vectors(store: Store, cov: dict, claim=None) -> None:
    """A semantic search on an index with no vector yet: the first ones a background
    worker commits are waited for, a few seconds at most (a small tree's first `ov find`
    then answers), and `cov` is updated. Else an error, never an empty result that a
    script would read as "nothing matched": `index_busy` (retryable) while a worker adds
    them, `unsupported` when none are coming. `claim`, the search's `Searching` mark, is
    let go first: the worker waits while it is held, so the wait was always in vain (the
    first `ov find` on a fresh tree was index_busy after 10 s)."""
    if _waited_vectors(store, cov, claim):
        return
    if cov["background"] or (cov["indexing"] and cov["pending"]):
        # a worker, or an `ov index` or a server's watcher embedding now
        who, then = (("a background worker", "; `ov status` shows its progress); try again, or run "
                      "`ov index` to finish them in the foreground") if cov["background"] else
                     ("an indexer running now", "; `ov status` shows the coverage); try again"))
        raise OvError("index_busy", f"semantic search has no vectors to read yet: {who} is adding "
                      f"them ({cov['pending']} rows{_worker_eta(store) if cov['background'] else ''}{then}",
                      field="search_type")
    if cov["pending"]:
        raise OvError("unsupported", "this index has no vectors yet; run `ov index` to add them",
                      field="search_type")
    from ov.indexer import keywords_index  # noqa: PLC0415

    if cov["embeddable"] == 0 and not keywords_index(store):
        return  # nothing in it to embed (an empty tree, data files only): no hit, not an error
    raise OvError("unsupported", "this index has no vectors (built with --no-embed); run `ov index` "
                  "without --no-embed to enable semantic search", field="search_type")


def _waited_vectors(store: Store, cov: dict, claim=None) -> bool:
    """Whether a worker (or an indexer) adding vectors to an index that has none committed
    its first within FIRST_VECTORS_WAIT_S (`cov` updated); `claim` is let go first."""
    if claim is not None:
        claim.release()
    deadline = time.monotonic() + FIRST_VECTORS_WAIT_S
    while cov["embedded"] == 0 and cov["pending"] and cov["indexing"] and time.monotonic() < deadline:
        time.sleep(0.2)
        cov.update(coverage(store))
    return bool(cov["embedded"])


def coverage(store: Store) -> dict:
    """Semantic coverage: rows with a vector / rows that will have one (every level;
    minified and data files' rows are not counted), whether vectors are still coming
    (`pending`) and whether a background worker is adding them now."""
    from ov.indexer import EMBED_META, KEYWORDS_META, lock_held, worker_state  # noqa: PLC0415

    # who writes the index first, then what it holds: a worker that finishes between the
    # two reads is then seen with its vectors. Read the other way round, a small tree's
    # worker (done in under a second) was gone and its vectors not yet counted, and a
    # first search that should have waited for them answered nothing (a fresh clone's run)
    background = worker_state(store.path) is not None
    indexing = background or lock_held(store.path)
    embedded, embeddable = store.coverage()
    partial = bool(store.get_meta(KEYWORDS_META))
    total, whole = _walk_total(store) if partial else (None, False)
    coming = (embeddable > embedded or partial) and (
        store.get_meta(EMBED_META) == "on" or bool(store.get_meta("model")))
    return {"embedded": embedded, "embeddable": embeddable,
            "ratio": round(embedded / embeddable, 4) if embeddable else 1.0,
            "pending": embeddable - embedded if coming else 0,
            "background": background,
            # some indexer holds the index now: a worker, an `ov index`, a server's watcher
            "indexing": indexing,
            # False while a first search's time budget has left files unread (ov.worker)
            "keywords_complete": not partial,
            "files": store.file_count() if partial else None,
            # the tree's files, counted when the first walk was cut (ov.indexer `walk_total`);
            # past the count's time limit, `files_counted` is a lower bound instead
            "files_total": total if partial and whole else None,
            "files_counted": total if partial and not whole else None}


def _walk_total(store: Store) -> tuple[int | None, bool]:
    """(the files a first answer's cut walk counted, whether that is all of them: the
    count has a time limit; ov.indexer `walk_total`); (None, False) when unknown."""
    from ov.indexer import WALK_TOTAL_META  # noqa: PLC0415

    try:
        n, whole = json.loads(store.get_meta(WALK_TOTAL_META) or "null") or (None, False)
    except (ValueError, TypeError):
        return None, False
    return (n, bool(whole)) if isinstance(n, int) else (None, False)


def coverage_warnings(search_type: str, cov: dict) -> list[str]:
    """What a ranked result must say about the rows it ran on."""
    out = []
    if not cov.get("keywords_complete", True):
        total, least = cov.get("files_total"), cov.get("files_counted")
        read = (f"{cov['files']} of {total} files ({cov['files'] / total:.0%}) read so far" if total
                else f"{cov['files']} of more than {least} files read so far" if least
                else f"{cov['files']} files read so far")
        out.append(f"the index is still being built: {read}, the rest by "
                   + ("a background worker (`ov status`)" if cov["background"] else "the next `ov index`")
                   + "; results cover those files only")
    if search_type == "keywords" or cov["embedded"] >= cov["embeddable"]:
        return out
    how = ("a background worker is adding them (`ov status` shows progress; `ov index` "
           "finishes them in the foreground)" if cov["background"] and cov["pending"] else
           "an indexer running now is adding them (`ov status` shows the coverage)"
           if cov.get("indexing") and cov["pending"] else
           "run `ov index` to add them" if cov["pending"] else
           "the index was built with --no-embed; run `ov index` to add them")
    now = (f", and on the vectors it computed for its best keyword hits ({cov['computed']} rows)"
           if cov.get("computed") else "")
    if cov["embedded"] == 0:
        what = ((f"hybrid search ran on keywords{now}" if now else "hybrid search ran on keywords alone")
                if search_type == "hybrid" else
                f"semantic search ran on the vectors it computed for the best keyword hits ({cov['computed']} "
                "rows; a file sharing no word with the query is not among them)" if now
                else "semantic search found nothing to search")
        return out + [f"{what}: the index has no vectors yet (0 of {cov['embeddable']} rows); {how}"]
    return out + [f"{search_type} search ran on partial vectors{now}: {cov['embedded']} of "
                  f"{cov['embeddable']} rows ({cov['ratio']:.0%}) have one; {how}"]


def query_tree(store: Store, query: str, filters: Filters | None = None) -> rank.Tree:
    """The index's files and keyword rows and the query's keyword terms, which a score reads
    besides its hit's evidence (rank.Tree): two cheap reads (a count, FTS5's averages).
    For an identifier query and `filters`, the rows holding its name (`Tree.holding`)."""
    plan = keyword_plan(query)
    ident = identifier(query)
    # a word that may name a type (`Blueprint`) or that the model does not know is a name
    # too: its cosine says little of it, so rows holding it keep their keywords-only
    # probability (`setupmethod`'s definer scored 0.038 in the hybrid, 0.244 by keywords
    # alone, `Blueprint`'s 0.065: --threshold 0.1 dropped them)
    name = ident[0] if ident is not None else type_name(query) or jargon(query)
    holding = None
    if name is not None and filters is not None:
        got = store.keyword_search(fts_phrase(name), filters, DEFINERS_READ)
        if len(got) < DEFINERS_READ:
            ids = {cid for cid, _ in got}
            # a front matter block's hit is the note's first passage's (`_keyword_reads`)
            holding = frozenset(ids | set(store.front_leads(list(ids)).values()))
    return rank.Tree(store.file_count(), store.keyword_rows(), plan.terms,
                     nospace=bool(plan.trigram or plan.short), identifier=name is not None, holding=holding,
                     worded=worded(query))


DEFINERS_READ = 2000  # rows holding an identifier query's name read for its definitions


def _definers(store: Store, req: SearchRequest,
              held: frozenset[int] | None = None) -> tuple[str, dict[str, int], str]:
    """(name, path -> the passage defining it, the rule of `_qualified` that kept them or
    "") when the query is one code identifier
    (ov.query.identifier): of the passages in scope holding the name (the best
    DEFINERS_READ by bm25), each file's first that defines it (ov.tiers.defines). For a
    qualified name (`io.EOF`, `Regex::new`), only the files the qualifier names
    (`_qualified`): `time.Second` had raised an unrelated `func (p Pair) Second()`. A word
    that may name a type (ov.query.type_name: `Deserializer`) raises the files defining it,
    and nothing else of the identifier's ranking; so does a word the model does not know
    (ov.query.jargon: `kmalloc`, `newproc`, `GOMAXPROCS`). Only code files define (an .rst
    snippet, 177 defconfig files for `CONFIG_USB`). `held`: the passages holding the name
    in this scope when a caller read all of them already (`rank.Tree.holding`)."""
    ident = identifier(req.query)
    typed = None if ident is not None else type_name(req.query)
    word = typed or (None if ident is not None else jargon(req.query))
    if (ident is None and word is None) or 2 not in req.filters.levels:
        return "", {}, ""
    scope = replace(req.filters, levels=(2,))
    if typed:  # its definitions as a type, read only where a type's word comes just before it
        said = " OR ".join(fts_phrase(f"{kw} {typed}") for kw in TYPE_WORDS)  # (the word may be everywhere)
        got = [cid for cid, _ in store.keyword_search(said, scope, TYPE_NAME_READ)]
        return typed, _firsts(_defining(store, sorted(got), typed, _TYPE_LINE.format(n=re.escape(typed)))), ""
    if word is not None:
        # a word the model does not know (`kmalloc`): its definitions as a function, a macro
        # or a type (a Go tree's `timeout` field had raised server.go over the notes on
        # timeouts), of the rows holding it (read already for the tree's `holding`, if all)
        got = sorted(held) if held is not None else sorted(
            cid for cid, _ in store.keyword_search(fts_phrase(word), scope, DEFINERS_READ))
        return word, _firsts(_defining(store, got, word, _JARGON_LINE.format(n=re.escape(word)))), ""
    name, qual = ident

    # the passages holding the name most, and those where a definition's keyword comes just
    # before it: a name used in 30,000 passages (`EXPORT_SYMBOL_GPL` in the kernel) has its
    # `#define` far past the first DEFINERS_READ by bm25
    # (read only when the first read did not hold every passage with the name)
    got = set(held) if held is not None else {
        cid for cid, _ in store.keyword_search(fts_phrase(name), scope, DEFINERS_READ)}
    if held is None and len(got) >= DEFINERS_READ:
        said = " OR ".join(fts_phrase(f"{kw} {name}") for kw in DEFINITION_WORDS)
        got.update(cid for cid, _ in store.keyword_search(said, scope, DEFINERS_READ))
    # a query written as a definition (`pub trait Deserializer`) takes the definitions so
    # written: an impl's `type Deserializer = Self;` had come first
    said_as = definition_word(req.query)
    bound = said_as in _BINDING_WORDS  # `export const store = ...`; not a type's `type X = Self;`
    relayed: set[str] = set()
    # (a Go method's receiver stands between `func` and its name: `func (c *Client) Do(`)
    recv = r"(?:\([^)]*\)\s*)?" if said_as == "func" else ""
    every = _defining(store, sorted(got), name, rf"\b{said_as}\s+{recv}{re.escape(name)}\b"
                      + ("" if bound else r"(?!\s*=)") if said_as else None, relayed)
    by, found = ("", _firsts(every)) if qual is None else _qualified(store, scope, every, name, qual)
    if (pkg := package_of(req.query)) is not None:  # `bufio.Scanner.Scan`: bufio's Scanner
        found = {p: c for p, c in found.items() if pkg in p.split("/")[:-1]} or found
    # a file that only passes the name on (`exports.parseDate = require('./parse-date')`)
    # counts when no file in the list defines it: it had come before parse-date.js
    return name, {p: c for p, c in found.items() if p not in relayed} or found, by


# whose definitions go on with `=` (`export const store = ...`, TypeScript's `export type
# Props = {`); a trait's or a class's do not (`type Deserializer = Self;` in an impl is not
# `pub trait Deserializer`)
_BINDING_WORDS = frozenset({"const", "let", "var", "val", "type"})
# words that define a type, and how its line reads (`pub trait Deserializer<'de>`, `class
# Message(...)`, JavaScript's constructor `function Layer(p, options, fn)`; not `type
# Deserializer = Self;`, an impl's associated type): a type-name
# query reads at most TYPE_NAME_READ passages holding one of them before the name. Read as
# an identifier's 2,000 passages, `Device` took 1.9-2.0 s on the kernel against 0.72 s.
TYPE_WORDS = ("class", "struct", "trait", "interface", "enum", "union", "type", "function")
_TYPE_LINE = r"\b(?:" + "|".join(TYPE_WORDS) + r")\s+{n}\b(?!\s*=)"
TYPE_NAME_READ = 300
# how a jargon word's definition reads (`_definers`): a function's or a macro's name before
# its parameters, or a type's after its word
_JARGON_LINE = r"\b{n}\s*[(\[<]|\b(?:class|struct|type|interface|trait|enum|union)\s+{n}\b"


def _firsts(every: dict[str, list[int]]) -> dict[str, int]:
    """path -> its first passage, of `_defining`'s lists."""
    return {p: cids[0] for p, cids in every.items()}


# a CommonJS export of what another module or object holds: `= require('./x')`, `= a.b;`
_RELAYED_RE = re.compile(r"=\s*(?:require\s*\(|[\w$]+(?:\.[\w$]+)+\s*;?\s*$)")


def _defining(store: Store, ids: list[int], name: str, line: str | None = None,
              relayed: set[str] | None = None) -> dict[str, list[int]]:
    """path -> the passages of these that define `name`, in the file's order, for each code
    file; with `line`, a pattern the defining line must hold too. `relayed` gets the files
    whose every such line only passes on another module's value (`_RELAYED_RE`)."""
    from ov.tiers import defines  # noqa: PLC0415

    texts, paths = store.chunk_texts(ids), store.chunk_paths(ids)
    shape = re.compile(line) if line else None
    found: dict[str, list[int]] = {}
    own: set[str] = set()  # files with a line that defines the name itself
    for cid in ids:  # ids ascend in a file's order; prose and config files define nothing
        path = paths.get(cid)
        if path is None or cid not in texts or kind_of(path) != "code":
            continue
        text = texts[cid]
        at = defines(text, path, name)
        end = text.find("\n", at) if at is not None else -1
        stop = len(text) if end < 0 else end
        if at is not None and (shape is None or shape.search(text, at, stop)):
            found.setdefault(path, []).append(cid)
            if not _RELAYED_RE.search(text, at, stop):
                own.add(path)
    if relayed is not None:
        relayed.update(p for p in found if p not in own)
    return found


_VERSIONED_RE = re.compile(r"(.+?)-v?\d+(?:\.\d+)*")  # `tokio-1.24.2`: a crate's or package's folder


def _qualified(store: Store, scope: Filters, every: dict[str, list[int]], name: str,
               qual: str) -> tuple[str, dict[str, int]]:
    """Of the files defining a qualified name's last part, those its qualifier names, by the
    first rule that keeps any, with the rule's name (`--explain`'s `defines.by`):
    1. `module`, the package or module: the file's own folder (Go's package) or name (`io.EOF`:
       io/io.go; `http.Handler`: net/http/server.go, not net/http/cgi/host.go);
    2. `type`: the file defines the qualifier too, or implements it (`Regex::new`: the
       file with `struct Regex` or `impl Regex`; `Foo.bar`: the file of `class Foo`);
    3. `folder`, the crate or package above it: any folder of its path, a version after `-` aside,
       and of those the files named after the item when there are any (`tokio::spawn`:
       tokio-1.24.2/src/task/spawn.rs).
    A review had `tokio::spawn` and `Regex::new` find no definer: Rust's `crate::item` and
    `Type::method` name neither the file nor its folder."""
    found = _firsts(every)
    own = _of_module(found, qual)
    if own or not found:
        return "module", own
    got = [cid for cid, _ in store.keyword_search(fts_phrase(qual), scope, DEFINERS_READ)]
    paths, texts = store.chunk_paths(got), store.chunk_texts(got)
    q_ty = r"(?:[\w:]+::)?" + re.escape(qual) + r"(?:<[^{;\n]*>)?\s*(?:\{|where\b|$)"
    # the type implemented: `impl<T> Regex<T> {`, `impl Trait for Regex {`; not a type
    # argument or a trait's path (`impl PartialEq<Vec<u8>> for Bytes`, `impl From<io::Error>`)
    impl = re.compile(r"^\s*impl\b(?:\s*<[^{;\n]*?>)?\s+(?:" + q_ty + r"|[^{;\n]*?\bfor\s+" + q_ty + ")", re.M)
    typed = _firsts(_defining(store, got, qual))  # path -> its first passage of the type
    for cid in got:
        if cid in paths and cid in texts and impl.search(texts[cid]) and cid < typed.get(paths[cid], cid + 1):
            typed[paths[cid]] = cid
    # the name defined at or after the type's first passage: `Regex::new`, not the
    # `Match::new` above it; not a file whose only `new` is above an `impl Eq for Vec`
    if by_type := {p: after[0] for p, cids in every.items() if p in typed
                   and (after := [c for c in cids if c >= typed[p]])}:
        return "type", _go_methods(store, by_type, name, qual)
    above = {p: c for p, c in found.items()
             if any(qual.lower() == (m.group(1) if (m := _VERSIONED_RE.fullmatch(part)) else part).lower()
                    for part in p.split("/")[:-1])}
    # the item's own file, when it has one (`tokio::spawn`: task/spawn.rs, not the methods
    # named spawn of runtime.rs, handle.rs, local.rs...)
    return "folder", {p: c for p, c in above.items() if os.path.splitext(os.path.basename(p))[0] == name} or above


def _go_methods(store: Store, by_type: dict[str, int], name: str, qual: str) -> dict[str, int]:
    """Of the Go files `_qualified`'s `type` rule keeps, those whose definition is the
    qualifier's method (`func (s *Scanner) Scan(`), when any is: fmt/scan.go defines a
    `Scanner` interface and a plain `func Scan(`, and came first for `Scanner.Scan`."""
    go = {p: c for p, c in by_type.items() if p.endswith(".go")}
    if not go:
        return by_type
    recv = re.compile(r"^func\s*\(\s*(?:\w+\s+)?\*?\s*" + re.escape(qual) + r"(?:\[[^\]]*\])?\s*\)\s*"
                      + re.escape(name) + r"\b", re.M)
    texts = store.chunk_texts(list(go.values()))
    methods = {p for p, c in go.items() if recv.search(texts.get(c, ""))}
    return {p: c for p, c in by_type.items() if p in methods or p not in go} if methods else by_type


def _of_module(found: dict[str, int], qual: str) -> dict[str, int]:
    """Those of `found` in the package or module `qual` names: its own folder (Go's package;
    `context.Context`: context/context.go, not types2/context.go), else its file name
    (`io.EOF`: io/io.go). A qualifier with a capital names them only in its own case
    (Java's Scanner.java): in Go, Python or Rust it is a type, and `Scanner.Scan` had
    text/scanner/ and go/scanner/ first, bufio/scan.go 13th (`type` finds it)."""
    def named(part: str) -> bool:
        return part == qual or (qual.islower() and part.lower() == qual)
    folder = {p: c for p, c in found.items() if named(os.path.basename(os.path.dirname(p)))}
    return folder or {p: c for p, c in found.items() if named(os.path.splitext(os.path.basename(p))[0])}


NAMED_FILES_MAX = 50  # files a file-name query raises (`_named_files`)


def _verbatim(store: Store, req: SearchRequest) -> tuple[str, dict[str, int]]:
    """(the text, path -> the passage holding it) when the query, two words or more and
    VERBATIM_MIN_CHARS characters with a mark of punctuation (else VERBATIM_MIN_WORDS
    words), stands word for word in at most VERBATIM_FILES_MAX files of the scope (runs of
    white space aside, quotes around it too; in its own case first when it has a capital):
    a pasted error message or a quoted line. `http: Server closed` had net/http/server.go, the one file
    holding it (`errors.New("http: Server closed")`), out of the first 10 on the Go tree,
    under files saying "http", "server" and "closed" more often. A text in more files than
    that says nothing of which one is meant, and raises none."""
    text = " ".join(req.query.split()).strip("\"'`").strip()
    words = len(text.split())
    # a line's or a message's shape: punctuation among the words (`http: Server closed`,
    # `net/http: request canceled`), or a sentence; "set a cookie" and "template inheritance"
    # stood in docs too, and took a score they had not earned (a review of a Python tree)
    marked = any(not (c.isalnum() or c.isspace()) for c in text)
    # a pasted expression with no space is one too (`ansible_facts['distribution_release']`,
    # `signed-by=/usr/share/keyrings/docker.gpg` ranked under files holding its words apart),
    # unless it is an identifier, which the files defining it answer (`_definers`), or a
    # file's name, which that file answers (`_named_files`: `package.json` fell to 5th)
    pasted = (words == 1 and marked and len(_RUNS_RE.findall(text)) >= 2 and identifier(text) is None
              and file_name(text) is None)
    if (len(text) < VERBATIM_MIN_CHARS or (words < 2 and not pasted) or not (marked or words >= VERBATIM_MIN_WORDS)
            or 2 not in req.filters.levels):
        return "", {}
    got = store.keyword_search(fts_phrase(text), replace(req.filters, levels=(2,)), VERBATIM_READ)
    if not got or len(got) >= VERBATIM_READ:
        return "", {}
    ids = sorted(cid for cid, _ in got)
    texts, paths = store.chunk_texts(ids), store.chunk_paths(ids)
    exact: dict[str, int] = {}
    folded: dict[str, int] = {}
    for cid in ids:  # a file's first passage holding it, in its case if any does
        if cid in texts and cid in paths:
            row = " ".join(texts[cid].split())
            if text in row:
                exact.setdefault(paths[cid], cid)
            elif text.lower() in row.lower():
                folded.setdefault(paths[cid], cid)
    # (`http: server closed idle connection` is another message; a query in small letters
    # says nothing of case: "Set a cookie value by name" holds "set a cookie value")
    held = {**folded, **exact} if text.islower() else exact or folded
    return (text, held) if 0 < len(held) <= VERBATIM_FILES_MAX else ("", {})


VERBATIM_MIN_CHARS = 10
_RUNS_RE = re.compile(r"[^\W_]+")  # runs of letters and digits: a pasted expression's words
VERBATIM_MIN_WORDS = 6  # a text without punctuation counts from this many words
VERBATIM_FILES_MAX = 8
# files a query read as a name without its extension may raise: more, and it names none of
# them (`index` in a JS tree); as many as a text found word for word may
STEM_FILES_MAX = VERBATIM_FILES_MAX
VERBATIM_READ = 200  # rows holding the query's words in order read for `_verbatim`


def _tagged_files(store: Store, req: SearchRequest) -> tuple[str, dict[str, int]]:
    """(the tags, path -> the passage shown) when the query is tags (ov.query.tag_words):
    the notes in scope carrying every one, as `#tag` in their text or in their front
    matter's `tags` (the case aside; `#project/falcon` is `#project`'s too), each shown by
    the passage holding its first `#tag`,
    else by its lead passage; at most NAMED_FILES_MAX, by path."""
    tags = tag_words(req.query)
    if not tags or 2 not in req.filters.levels:
        return "", {}
    found: dict[str, int] | None = None
    for tag in tags:
        here: dict[str, int] = {}
        fronts: set[str] = set()
        # (a nested tag is its parent's too, as Obsidian reads `#project/falcon`)
        inline = re.compile(r"(?<![\w#&/])#%s(?:/[\w/-]*)?(?![\w-])" % re.escape(tag), re.IGNORECASE)
        for word in dict.fromkeys((tag, tag.lower())):  # (SQL folds ASCII letters only)
            for path, cid, front, text in store.tag_candidates(word, req.filters):
                if found is not None and path not in found:
                    continue
                if front and any(t == tag.lower() or t.startswith(tag.lower() + "/") for t in _front_tags(text)):
                    fronts.add(path)
                elif not front and path not in here and inline.search(text):
                    here[path] = cid
        fronts -= set(here)
        if fronts:
            files = store.file_ids(sorted(fronts))
            lead = store.lead_passages(list(files.values()))
            here.update({p: lead[fid] for p, fid in files.items() if fid in lead})
        found = here if found is None else {p: c for p, c in found.items() if p in here}
        if not found:
            return "", {}
    return " ".join("#" + t for t in tags), dict(sorted(found.items())[:NAMED_FILES_MAX])


def _front_tags(block: str) -> set[str]:
    """The bare tags of a front matter block's `tags` (a list, or words), lowercased and
    without a `#`; `k=v` tags (ov's own, `--tags`) are not among them."""
    from ov.tiers import front_matter  # noqa: PLC0415

    got = front_matter(block).get("tags")
    words = got if isinstance(got, list) else re.split(r"[\s,]+", got) if isinstance(got, str) else []
    return {w.strip().lstrip("#").lower() for w in words if isinstance(w, str) and w.strip() and "=" not in w}


def _named_files(store: Store, req: SearchRequest) -> tuple[str, dict[str, int]]:
    """(name, path -> the passage shown) when the query is a file's name or path
    (ov.query.file_name): the files in scope at that path or of that name, each shown by
    its lead passage (at most NAMED_FILES_MAX). `kernel-parameters.txt` had not been in
    the first 20 hits of any search type on the kernel's Documentation, behind the files
    that cite it (a review of a docs tree)."""
    if 2 not in req.filters.levels:
        return "", {}
    name = file_name(req.query)
    by_stem = name is None
    if not by_stem:
        files = store.files_named(name, req.filters, NAMED_FILES_MAX)
    else:  # a name without its extension: a note's or a doc's, only when few files have it
        # (a code file named so is shown from its start, its licence: `thread pool` raised
        # Boost's thread_pool.hpp at its copyright lines, over the passages using one)
        name = stem_words(req.query)
        files = (store.files_of_stem(name, req.filters, STEM_FILES_MAX) if name else None) or {}
        files = {p: fid for p, fid in files.items() if kind_of(p) != "code"}
    if not files:
        return "", {}
    lead = store.lead_passages(list(files.values()))
    found = {p: lead[fid] for p, fid in files.items() if fid in lead}
    if not req.filters.vectorless and by_stem:
        # a name without its extension does not bring back a data file the default ranking
        # leaves out (`cache` named data/cache.csv); a name with its extension asks for it
        out = store.left_out(list(found.values()))
        found = {p: cid for p, cid in found.items() if cid not in out}
    return name, found


def _branches(store: Store, req: SearchRequest, use_kw: bool, use_vec: bool, qvec, depth: int,
              tree: rank.Tree, now: _VectorsNow | None = None):
    """(branch lists, whether every read ran out, (the sum of the bm25s at which the keyword
    reads were cut, the smallest distance at which the KNN was): the best raw score a row not
    read could have in each branch, None for a branch read to its end or not run).

    A row's keyword evidence is the sum of its scores in the keyword reads (the keyword
    table's words, the trigram table's runs, each 1-2 character run by substring): they
    search different terms of the query (ov.query.keyword_plan), so a note holding a
    Chinese word and an English one outscores a note holding one of them."""
    lists: dict[str, list[rank.Cand]] = {}
    exhausted = True
    kw_cuts: list[float] = []
    sem_cut = None
    if use_kw:
        lists["keywords"], exhausted, kw_cuts = _keyword_reads(store, req, depth)
    if use_vec:
        res = store.vector_search(qvec, req.filters, depth)
        exhausted &= len(res) < depth
        sem_cut = res[-1][1] if len(res) >= depth else None
        sem = [_cand(cid, "semantic", d, 0.0) for cid, d in res]
        if req.filters.levels == (2,):
            # the files' abstracts as evidence for their first passage (rank.with_abstracts)
            cuts = [res[-1][1]] if len(res) >= depth else []
            tops = store.vector_search(qvec, replace(req.filters, levels=(0,)), depth)
            exhausted &= len(tops) < depth
            cuts += [rank.abstract_distance(tops[-1][1])] if len(tops) >= depth else []
            held = store.first_passages([tid for tid, _ in tops])
            evidence = []
            for tid, d in tops:
                if tid in held:
                    c = _cand(held[tid], "semantic", rank.abstract_distance(d), 0.0)
                    c.branches["semantic"]["via"] = "abstract"
                    evidence.append(c)
            sem = rank.with_abstracts(sem, evidence, min(cuts) if cuts else None)
            sem_cut = min(cuts) if cuts else None
            if use_kw:
                sem += _exact_semantic(store, qvec, sem, lists["keywords"], tree, not req.all_chunks)
            if now is not None:  # the best keyword hits' rows still waiting for a vector
                sem = rank.with_abstracts(sem, now.cands(lists["keywords"] if use_kw else
                                                         _keyword_reads(store, req, depth)[0]))
        lists["semantic"] = sem
    paths = store.chunk_paths([c.chunk_id for lst in lists.values() for c in lst])
    for name, lst in lists.items():
        for c in lst:
            c.path = paths.get(c.chunk_id, "")
            # each hit's probability of relevance, by its file's kind (rank.Scale)
            c.score = rank.branch_score(name, c.branches[name]["raw"], c.path, tree)
            c.branches[name]["score"] = c.score
    return lists, exhausted, ((sum(kw_cuts) if kw_cuts else None) if use_kw else None, sem_cut)


def _keyword_reads(store: Store, req: SearchRequest, depth: int) -> tuple[list[rank.Cand], bool, list[float]]:
    """The keyword branch read `depth` deep: (its candidates, whether every read ran out,
    the bm25 at which each cut read was cut)."""
    plan = keyword_plan(req.query)
    exhausted = True
    kw_cuts: list[float] = []
    kw: dict[int, float] = {}
    if plan.fts:
        res = store.keyword_search(plan.fts, req.filters, depth)
        exhausted &= len(res) < depth
        kw_cuts += [min(s for _, s in res)] if len(res) >= depth else []
        for cid, s in res:
            kw[cid] = kw.get(cid, 0.0) + s
    if plan.trigram:
        res = store.score_runs(plan.runs, store.keyword_search(plan.trigram, req.filters, depth, table="chunks_tri"))
        exhausted &= len(res) < depth
        kw_cuts += [min(s for _, s in res)] if len(res) >= depth else []
        for cid, s in res:
            kw[cid] = kw.get(cid, 0.0) + s
    for term in (*plan.short, *plan.pairs):
        pair = term not in plan.short
        res = store.substring_search(term, req.filters, depth)
        share = 1.0 / len(plan.pairs) if pair else 1.0  # (the pairs weigh one term in all)
        kw_cuts += [share * min(s for _, s in res)] if len(res) >= depth else []
        for cid, s in res:
            kw[cid] = kw.get(cid, 0.0) + share * s
    # a note's front matter block (its tags, its title) speaks for the note's first
    # passage, where the hit is shown: its `---` lines say nothing (ov.indexer.front_block)
    for front, lead in store.front_leads(list(kw)).items():
        raw = kw.pop(front)
        kw[lead] = max(kw.get(lead, 0.0), raw)
    return [_cand(cid, "keywords", raw, 0.0) for cid, raw in kw.items()], exhausted, kw_cuts


def _exact_semantic(store: Store, qvec, sem: list[rank.Cand], kw: list[rank.Cand], tree: rank.Tree,
                    per_file: bool = False) -> list[rank.Cand]:
    """The semantic evidence of the files the keyword branch found and the KNN did not read
    (its passages' cosines and its abstract's at its share, read exactly): a hybrid score
    then weighs each such file's own cosine, not a cosine of 0. With `per_file`, only the
    entry of each file that `rank.best_per_file` would keep (all a ranking by file reads)."""
    have = set(store.chunk_paths([c.chunk_id for c in sem]).values())
    missing = [cid for cid, path in store.chunk_paths([c.chunk_id for c in kw]).items() if path not in have]
    best: dict[int, tuple[float, int, bool]] = {}  # chunk id -> (distance, file's first passage, via abstract)
    for rid, level, first, d in store.file_vector_distances(qvec, missing, nearest_only=per_file):
        if level == 2:
            got = (d, first, False)
        elif first is not None:
            rid, got = first, (rank.abstract_distance(d), first, True)
        else:
            continue
        cur = best.get(rid)
        if cur is None or got[0] < cur[0]:  # one entry per chunk, the closer one (rank.with_abstracts)
            best[rid] = got
    rows = sorted(best.items(), key=lambda r: (r[1][0], r[0]))
    if per_file:
        rows = _best_of_each_file(store, rows, tree)
    out = []
    for cid, (d, _, via) in rows:
        c = _cand(cid, "semantic", d, 0.0)
        if via:
            c.branches["semantic"]["via"] = "abstract"
        out.append(c)
    return out


def _best_of_each_file(store: Store, rows: list, tree: rank.Tree) -> list:
    """Of `rows` (chunk id, (distance, file's first passage, via)) nearest first, the one of
    each file that `rank.best_per_file` keeps: the best score, then the smallest id. A
    hybrid query's keyword hits lie in ~60 files of ~20 passages each; scoring and fusing
    all of them cost ~10 ms of Python for nothing. The score falls as the distance grows
    (`find`'s slope is positive), so only the nearest few of a file need scoring."""
    paths = store.chunk_paths(list({r[1][1] for r in rows}))
    by_file: dict[int, list] = {}
    for r in rows:
        by_file.setdefault(r[1][1], []).append(r)
    out = []
    for first, group in by_file.items():
        path = paths.get(first, "")
        falls = rank.scale_for(path).find[0] > 0
        top = rank.semantic_score(group[0][1][0], path, tree)
        pick = group[0]
        for r in group[1:]:
            s = rank.semantic_score(r[1][0], path, tree)
            if s < top and falls:
                break
            if s > top or (s == top and r[0] < pick[0]):
                top, pick = s, r
        out.append(pick)
    return sorted(out, key=lambda r: (r[1][0], r[0]))


def _cand(cid: int, branch: str, raw: float, score: float) -> rank.Cand:
    return rank.Cand(cid, "", score, {branch: {"raw": raw, "score": score}})


def _combine(lists: dict[str, list[rank.Cand]], req: SearchRequest, tree: rank.Tree,
             unread=frozenset()) -> list[rank.Cand]:
    """The branches' lists as one ranking: one branch's by its own scale, two fused
    (`rank.fuse`; `unread`: keyword hits whose chunk still waits for a vector)."""
    if len(lists) == 1:
        (only,) = lists.values()
        ordered = rank.sort_cands(only)
        for i, c in enumerate(ordered, 1):
            for b in c.branches.values():
                b["rank"] = i
        return ordered if req.all_chunks else rank.best_per_file(ordered)
    per_file = {name: rank.best_per_file(lst) for name, lst in lists.items()}
    if req.all_chunks:
        per_chunk = {name: rank.sort_cands(lst) for name, lst in lists.items()}
        fused = rank.fuse({n: [rank.Cand(c.chunk_id, f"{c.path}\x00{c.chunk_id}", c.score,
                                         c.branches) for c in lst] for n, lst in per_chunk.items()}, tree, unread)
        for c in fused:
            c.path = c.path.split("\x00", 1)[0]
        return rank.sort_cands(fused)
    return rank.fuse(per_file, tree, unread)


class _RankedRows:
    """The chunk rows of a ranking, fetched a batch at a time as `_materialise` reaches
    them in rank order. The hits for `need` are then always the first `need` of the same
    list whatever `need` is (a fixed window could run out before them when many
    candidates fail the recheck), which the cursor's replay of earlier pages relies on."""

    def __init__(self, store: Store, ids: list[int], first: int) -> None:
        self.store, self.ids, self.batch = store, ids, first
        self.pos_of = {cid: i for i, cid in enumerate(ids)}
        self.fetched = 0
        self.rows: dict = {}

    def get(self, cid: int):
        i = self.pos_of.get(cid, -1)
        while i >= self.fetched:
            upto = self.fetched + self.batch
            self.rows.update(self.store.chunk_rows(self.ids[self.fetched:upto]))
            self.fetched, self.batch = upto, self.batch * 2
        return self.rows.get(cid)


def _still_in_time(f, checker: rank.Rechecker, row) -> bool:
    """`--after`/`--before` on updated_at (the file's mtime) held at index time; a file
    whose mtime moved since (a `touch -d`, an edit) is judged by the mtime it has now."""
    if f.time_field == "created_at" or (f.after is None and f.before is None):
        return True
    st = checker.state(row.path)
    if st is None or st[1] == row.mtime_ns:
        return True
    now = st[1] / 1e9
    return (f.after is None or now >= f.after) and (f.before is None or now < f.before)


EVIDENCE_MAX_BYTES = 1 << 20  # `_evidence` reads a file's passages up to this size


def _evidence(store: Store, row, pats, c: rank.Cand):
    """The passage a file's hit shows. The evidence of a file's abstract (its cosine) and
    of its title's words (in the first passage's keyword row) lands on the file's lead
    passage, which in code is a licence header, `'use strict'` and imports: express's
    route.js showed lines 1-26 for "where are route params parsed", and a function's doc
    comment at line 38 was shown as line 1 (a review on a JS project). When the lead
    passage holds none of the query's words, the file's passage holding the most of them
    is shown instead (its score is the file's, unchanged); with none anywhere, the lead.
    A file over EVIDENCE_MAX_BYTES keeps its lead: its passages are not all read again; so
    does one whose own vector the semantic branch read (the passage that matched by meaning,
    not by words), and a file the query names (`kernel-parameters.txt`: its start, not line
    1,935 for holding "kernel")."""
    sem = c.branches.get("semantic")
    if "file_name" in c.branches or not pats or row.size > EVIDENCE_MAX_BYTES \
            or (sem is not None and sem.get("via") != "abstract") \
            or words_in(row.text, pats)[0] or store.lead_passages([row.file_id]).get(row.file_id) != row.id:
        return row
    best, best_key = None, (0, 0)
    for cid, text in store.passages(row.file_id):
        key = words_in(text, pats)
        if key > best_key:
            best, best_key = cid, key
    return row if best is None else store.chunk_rows([best]).get(best, row)


def _materialise(ranked, rows, req: SearchRequest, checker: rank.Rechecker, need: int) -> list[Hit]:
    hits: list[Hit] = []
    seen_spans: set[tuple[str, int, int]] = set()
    # (--all-chunks: each hit is its chunk; a cursor's replay reads only the hits' keys)
    pats = query_pattern(req.query) if not req.all_chunks and checker.shows else []
    for c in ranked:
        if len(hits) >= need:
            break
        # (the score as printed: a hit shown as 1.0 is kept by --threshold 1)
        if req.threshold is not None and round(c.score, rank.SCORE_DIGITS) < req.threshold:
            break
        row = rows.get(c.chunk_id)
        if row is None:
            continue
        if row.level == 2:
            row = _evidence(rows.store, row, pats, c)
        got = checker.check(row.path, row.size, row.mtime_ns, row.start, row.end, row.text,
                            row.ctime_ns, row.inode)
        if got is None or not _still_in_time(req.filters, checker, row):
            continue
        start, end, sl, el, text = ((row.start, row.end, row.start_line, row.end_line, row.text)
                                    if got == "same" else got)
        if row.level != 2:
            text = ""
        span = (row.path, start, end)
        if span in seen_spans and row.level == 2:
            continue
        seen_spans.add(span)
        hit = Hit(rank=0, path=row.path, start_line=sl, end_line=el, score=round(c.score, rank.SCORE_DIGITS),
                  level=row.level, excerpt=Excerpt(text, start, end))
        hit.indexed_span = (row.start, row.end)  # (not a field: in no output; `_page`'s key)
        if req.explain:
            hit.scores = c.branches
        if req.include_tiers or row.level != 2:
            hit.abstract = row.abstract
            if row.level == 1 or req.include_tiers:
                hit.overview = row.overview
        if row.tags:
            hit.tags = row.tags
        if req.read_content:
            hit.content = checker.text(row.path)
        hits.append(hit)
    return hits


# ---- status ----------------------------------------------------------------------------------


def status(store: Store, root: Path) -> StatusReport:
    """What is indexed, and how far the tree has moved from it: indexed files changed or
    gone (a stat each), and files on disk the index lacks (`new_files`: a walk of the
    tree, as `ov index` walks it with the tree's config, so a renamed file counts as one
    missing and one new). The walk costs little beside the rest: 15-30 ms on a 2,450-file
    copy of the Python stdlib, where the whole `ov status` took 0.7-1.3 s (a loaded
    2-core machine), so status pays it rather than stay silent about new files."""
    with store.snapshot():  # one state of the index for every count (an indexer may be writing)
        counts = store.counts()
        states = store.file_states()
        sqlite_version, vec = store.versions()
        n_skipped, skipped = store.skipped()
        cov = coverage(store)
        model, schema = store.get_meta("model"), store.meta_int("schema_version")
        if model is None and cov["pending"]:  # vectors coming, none stored yet: the model
            from ov.embed import model_id  # noqa: PLC0415 - that will write them (`model: null`
            model = model_id()  # read as "no vectors ever" while a worker was starting)
        trigram_pending = store.trigram_pending()
    new, excluded, stale, missing = drift(store, root, states, skipped)  # type: ignore[misc]
    size = sum(p.stat().st_size for p in store.path.parent.glob(store.path.name + "*")
               if p.is_file() and not p.name.endswith((".lock", ".lock.want")))
    chunks = counts["chunks"]
    return StatusReport(
        root=str(root), db=str(store.path), files=counts["files"], chunks=chunks,
        embedded_chunks=counts["embedded"],
        # of the rows that get a vector, as `coverage.ratio` (1.0 on a finished index): the
        # share of all rows read 0.47 on a finished one, and a script waiting for 1.0 waited
        embedded_coverage=cov["ratio"] if chunks else 0.0,
        stale_files=stale, missing_files=missing, new_files=new, excluded_files=excluded,
        db_bytes=size, model=model, schema_version=schema,
        sqlite_version=sqlite_version, vec_version=vec,
        skipped=n_skipped, skipped_files=[SkippedFile(p, r) for p, r in skipped],
        coverage=cov, not_embedded_rows=counts["no_vector"],
        trigram_pending=trigram_pending, background=(worker := _worker(store)),
        indexer=(indexer := _indexer(store)), worker_paused=worker is None and _paused(store),
        holder=_holder(store) if worker is None and indexer is None and cov.get("indexing") else None,
        journal=journal_status(store.path, root), gitignore_read=not gitignore_unread(str(root)),
    )


def drift(store: Store, root: Path, states, skipped, cap: int | None | bool = False,
          sniffs: int | None = None) -> tuple[int, int, int, int] | None:
    """How far the tree moved from the index: (files `ov index` would add, indexed files it
    would leave out now, indexed files changed, indexed files gone), by one walk (`_new_files`,
    `cap` and `sniffs` as there: None past them) and the walk's stat of each indexed file (a
    stat of its own for one the walk did not meet)."""
    from ov.read import OutsideRoot, freshness, stat_under  # noqa: PLC0415

    seen: dict[str, tuple[int, int, int, int]] = {}
    got = _new_files(root, states, skipped, store.path, cap, seen, sniffs)
    if got is None:
        return None
    new, excluded = got
    stale = missing = 0
    for path, (_, size, mtime_ns, _, ctime_ns, inode) in states.items():
        now = seen.get(path)
        if now is None:  # not met by the walk (left out now, gone, or not a plain file)
            try:  # a row naming a path outside the root (forged, or a link swapped in) is missing
                st = stat_under(str(root), path)
                now = freshness(st) if stat.S_ISREG(st.st_mode) else None
            except (FileNotFoundError, NotADirectoryError, OutsideRoot):
                missing += 1
                continue
            except OSError:  # in a folder this user may not search: nothing says it is there
                continue
        if now is None:  # a folder or a device in its place: the file is gone
            missing += 1
        elif now != (size, mtime_ns, ctime_ns, inode) and os.access(os.path.join(root, path), os.R_OK):
            stale += 1  # (one this user may not read is not theirs to hear of, DESIGN)
    return new, excluded, stale, missing


def _new_files(root: Path, indexed, skipped, db_path: Path, cap: int | None | bool, seen: dict,
               sniffs: int | None = None) -> tuple[int, int] | None:
    """(how many files `ov index` would add, how many indexed ones it would leave out now).
    `seen` hears the freshness of each indexed file the walk met as a plain file (its
    stat: status then opens none of them again; on the kernel that open cost 2.2 of 6.6 s).
    New: those its walk finds that the index has no row for, leaving out what the last
    index skipped (binary, ...) and, past that list's first 1,000, binary files (a NUL in
    the first 8 KiB; one with a later NUL, which the indexer skips too, counts as new until
    an index lists it skipped). Left out: indexed files still on disk that
    the walk no longer yields (ignored now, or over the size cap). The walk is the
    tree's config's, or with `cap` (bytes; None: none) the size cap the index was built
    with; through grep's listing cache where there is one. `sniffs`: None when more than
    that many files would have to be opened to tell binary from new (a ranked answer's
    check: a tree of 30,000 unindexed images read 8 KiB of each at every query)."""
    from ov.config import load_config  # noqa: PLC0415
    from ov.read import binary_file  # noqa: PLC0415
    from ov.store.db import own_files  # noqa: PLC0415
    from ov.walk import listed_walk, walk  # noqa: PLC0415

    left_out = {p for p, _ in skipped} | own_files(root, db_path)
    new = 0
    walked: set[str] = set()
    opts = load_config(root).walk_options()
    if cap is not False:  # the size cap the index was built with (`size_cap`), not the config's
        opts = replace(opts, max_filesize=cap)
    cache = listing_dir(root)  # grep's listing, beside the index
    files = (listed_walk(root, opts, cache) if cache is not None else None) or walk(root, opts)
    for e in files:
        rel = e.path
        if rel in indexed:
            walked.add(rel)
            if not e.is_symlink and e.inode:
                seen[rel] = (e.size, e.mtime_ns, e.ctime_ns, e.inode)
            continue
        if rel in left_out:
            continue
        try:
            rel.encode("utf-8")  # a name that is not UTF-8 is never indexed
        except UnicodeEncodeError:
            continue
        if sniffs is not None:
            sniffs -= 1
            if sniffs < 0:
                return None
        new += binary_file(str(root), rel) is False  # None: unreadable, or gone since the walk
    excluded = sum(1 for p in indexed if p not in walked and os.path.isfile(os.path.join(root, p)))
    return new, excluded


def _worker(store: Store) -> dict | None:
    from ov.indexer import worker_state  # noqa: PLC0415

    return worker_state(store.path)


def _paused(store: Store) -> bool:
    from ov.indexer import worker_paused  # noqa: PLC0415

    return worker_paused(store.path)


def _holder(store: Store) -> dict | None:
    from ov.indexer import holder_state  # noqa: PLC0415

    return holder_state(store.path)


def _indexer(store: Store) -> dict | None:
    from ov.indexer import indexer_state  # noqa: PLC0415

    return indexer_state(store.path)


# ---- context, read, tag, manifest (issue 5) --------------------------------------------------


def size_cap(store: Store) -> int | None:
    """The --max-filesize the index was last built with (None: no cap). An index made
    before it was recorded: the tree's config, else the default (as before)."""
    from ov.store.db import CAP_META  # noqa: PLC0415

    v = store.get_meta(CAP_META)
    if v is not None:
        return int(v) if v.isdigit() else None
    root = store.get_meta("root")
    if not root:
        return DEFAULT_MAX_FILESIZE
    from ov.config import load_config  # noqa: PLC0415

    try:
        return load_config(Path(root)).walk_options().max_filesize
    except OvError:
        return DEFAULT_MAX_FILESIZE


def _file_tiers(root: Path, row: dict, cap: int | None = None) -> tuple[str, str, str] | None:
    """(abstract, overview, full text) of an indexed file as it is now on disk; None when
    it is gone, unreadable or binary, or has grown past the size cap since it was indexed
    (read whole and cut into tiers, a 100 MB log took 48 s and 1.5 GB). The stored tiers
    serve while the file is unchanged; a changed file's tiers are rebuilt from what is
    read, so no tier outlives its text."""
    got = _file_now(root, row, cap)
    if got is None:
        return None
    ft, same = got
    if same:
        return row["abstract"] or "", row["overview"] or "", ft.text
    from ov import tiers  # noqa: PLC0415

    return tiers.abstract(ft.text, row["path"]), tiers.overview(ft.text, row["path"]), ft.text


def _file_now(root: Path, row: dict, cap: int | None = None):
    """(FileText, same) of an indexed file as it is now on disk, `same` when it holds the
    text indexed (the same state, or the same bytes: a touch); None as `_file_tiers`."""
    from ov.read import read_under  # noqa: PLC0415

    try:  # only a file under the root now: the row's path is a hint (issue 17)
        if not os.access(os.path.join(root, row["path"]), os.R_OK):
            return None
        ft = read_under(str(root), row["path"],
                        max_bytes=None if cap is None else max(file_cap(row["path"], cap), row["size"] or 0))
    except OSError:
        return None
    if ft is None:
        return None
    return ft, ft.freshness == (row["size"], row["mtime_ns"], row.get("ctime_ns"), row.get("inode")) or bool(
        row.get("hash") and ft.hash == row["hash"])


MAX_DEDUP_TURNS = 1_000_000
# Context mode leaves out a candidate scoring under this share of the best one, unless a
# --threshold is given (which then alone decides): a note that scored 1.0 came with nine
# entries of 0.002-0.005, three quarters of the block, deepened to whole files. A score is
# the estimated chance of relevance, so such an entry is a hundred times less likely to
# help than the best. The largest share of 0.01, 0.02 and 0.05 that lost no SciFact train
# claim its relevant passage in a 1,000-token block (docs/BENCHMARKS.md "Context mode").
CONTEXT_FLOOR = 0.01


def _stale_warning(n: int, what: str) -> str:
    # ("the others" read as files gone; a file still there whose passage was edited is left
    # out too, and a reader looked for the definition being edited)
    return (f"{n} {what} lay in files changed or deleted since indexing: a hit whose text is still "
            "in its file is shown where it is now; one whose text was edited or whose file is gone "
            "is left out until `ov index` reads the file again")


def _refused_warning(n: int) -> str:
    return (f"{n} indexed path(s) lead outside the index root now (a forged index, or a link "
            "put in after indexing) and were left out; run `ov index --full`")


def _rows_under(root: Path, rows: list[dict]) -> tuple[list[dict], int]:
    """Index rows whose paths lie under the root now, and how many did not (a forged
    index may name absolute or climbing paths, a link may lead out: never printed)."""
    from ov.read import folder_under  # noqa: PLC0415

    seen: dict = {}
    kept = [r for r in rows if folder_under(str(root), r["path"], seen)]
    return kept, len(rows) - len(kept)


def _memo(factory):
    box: list = []

    def get():
        if not box:
            box.append(factory())
        return box[0]

    return get


def _context_hits(store: Store, root: Path, req: SearchRequest, served: set, factory):
    """Context mode's candidates: ranked pages read until `req.limit` hits not served to the
    session before. (hits, deduped, stale, refused, ran): `ran` is what the first page says
    ran, its search type, its warnings (coverage, the size cap), its branches and its
    coverage, the same on every page;
    stale and refused counts are summed instead."""
    hits: list[Hit] = []
    deduped = stale = refused = 0
    cursor, ran = None, None
    base = SearchRequest(query=req.query, search_type=req.search_type, limit=req.limit,
                         threshold=req.threshold, filters=req.filters, include_tiers=True)
    while len(hits) < req.limit:
        page = search(store, root, replace(base, cursor=cursor), factory)
        if ran is None:
            mine = (_stale_warning(page.stale, "hit(s)"), _refused_warning(page.refused or 0))
            ran = (page.search_type, [w for w in page.warnings if w not in mine], page.branches, page.coverage)
        stale += page.stale
        refused += page.refused or 0
        for h in page.hits:
            if h.path not in served:
                if len(hits) < req.limit:
                    hits.append(h)
                continue
            deduped += 1
            # its copies (`Hit.duplicates`) in its place: folded into a hit served in an
            # earlier turn, a file whose passage shown is the same as the served one's (and
            # whose rest may not be) was never served, and the next turn had nothing
            for c in h.duplicates or ():
                if c.path not in served and len(hits) < req.limit:
                    hits.append(replace(h, path=c.path, start_line=c.start_line, end_line=c.end_line,
                                        duplicates=None))
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    return hits, deduped, stale, refused, ran


def context(store: Store, root: Path, req: SearchRequest, *, max_tokens: int | None = None,
            detail: str | dict | None = None, session_id: str | None = None,
            dedup_turns: int | None = None, ignored: list[str] | None = None,
            embedder_factory=None) -> ContextResult:
    """Ranked files packed under a token budget (see ov.context). `req.limit` candidates
    are taken after `--exclude-uri` (a filter, before the limit) and after the session
    ledger: entries this session was served within its last `dedup_turns` turns (default
    1) are skipped and counted, and the ranking is paged past them."""
    from ov import context as ctx  # noqa: PLC0415
    from ov.config import DEFAULT_MAX_TOKENS  # noqa: PLC0415

    budget = ctx.check_budget(DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens)
    det = dict(detail) if isinstance(detail, dict) else ctx.parse_detail(detail)
    if session_id is not None and (not session_id.strip() or len(session_id) > 256):
        raise OvError("invalid_argument", "--session-id must be 1 to 256 characters", field="session_id")
    if dedup_turns is not None:
        if session_id is None:
            raise OvError("invalid_argument", "--dedup-turns needs --session-id", field="dedup_turns")
        if not 0 <= dedup_turns <= MAX_DEDUP_TURNS:  # SQLite holds 64-bit integers only
            raise OvError("invalid_argument", f"--dedup-turns must be 0 to {MAX_DEDUP_TURNS}, "
                          f"not {dedup_turns}", field="dedup_turns")
    turn, served = (store.session_served(session_id, 1 if dedup_turns is None else dedup_turns)
                    if session_id is not None else (None, set()))

    factory = _memo(embedder_factory or _default_embedder)  # one model load for every page
    warnings: list[str] = []
    hits, deduped, stale, refused, ran = _context_hits(store, root, req, served, factory)
    if req.threshold is None and hits:
        floor = max(h.score for h in hits) * CONTEXT_FLOOR
        faint = [h for h in hits if h.score < floor]
        if faint:
            hits = [h for h in hits if h.score >= floor]
            warnings.append(f"{len(faint)} candidate(s) scoring under {CONTEXT_FLOOR:g} of the best hit's "
                            f"score ({max(h.score for h in faint):.3g} and less, against {hits[0].score:.3g}) "
                            "were left out; --threshold 0 serves them")

    cands = []
    cap = size_cap(store)
    for h in hits:
        row = store.file_row(h.path)
        got = _file_tiers(root, row, cap) if row else None
        if got is None:  # search's recheck has already left out rows outside the root
            stale += 1
            continue
        cat = row.get("category") or "other"
        passage = h.excerpt.text if h.level == 2 else ""  # the chunk that matched, rechecked
        cands.append(ctx.Candidate(h.path, cat if cat in ctx.CATEGORIES else "other", h.score,
                                   {"abstract": got[0], "overview": got[1], "passage": passage,
                                    "full": got[2]}, (h.start_line, h.end_line)))
    packed, dropped = ctx.pack(cands, budget, det)
    if cands and not packed:  # not "no results": candidates matched and none fit
        need = min(ctx.entry_cost(c.uri, c.score, ctx.URI_ONLY, "") for c in cands)
        raise OvError("invalid_argument", f"--max-tokens {budget} holds no entry: {len(cands)} "
                      f"candidate(s) matched, and the shortest entry (a bare uri) takes {need} tokens",
                      field="max_tokens")
    warnings.extend(ran[1] if ran else [])
    if dropped:  # DESIGN: no silent limits
        warnings.append(f"--max-tokens {budget} left out {dropped} of {len(cands)} candidates "
                        "(not even their uri fit): raise it to see them")
    if stale:
        warnings.append(_stale_warning(stale, "candidate(s)"))
    if refused:
        warnings.append(_refused_warning(refused))
    if session_id is not None:
        store.record_session(session_id, turn, [p.uri for p in packed if p.detail != ctx.URI_ONLY])
    counts = {t: 0 for t in (*ctx.TIERS, ctx.URI_ONLY)}
    for p in packed:
        counts[p.detail] += 1
    entries = [ContextEntry(p.uri, p.category, p.score, p.detail, p.text,
                            *(p.lines or (None, None))) for p in packed]
    stats = ContextStats(candidates=len(cands), returned=len(entries), dropped=dropped,
                         deduped=deduped, max_tokens=budget, used_tokens=sum(p.cost for p in packed),
                         tier_counts=counts, ignored_options=list(ignored or []))
    return ContextResult(entries=entries, rendered=ctx.render(packed), stats=stats,
                         search_type=ran[0] if ran else req.search_type, branches=ran[2] if ran else [],
                         coverage=ran[3] if ran else None, session_id=session_id, turn=turn,
                         warnings=warnings, stale=stale, truncated=bool(dropped),
                         truncated_reason="max_tokens" if dropped else None)


def read(store: Store, root: Path, rel: str, level: int | None = None) -> ReadResult:
    """One tier of an indexed file or folder. Default level: 2 for a file (its text, read
    now), 1 for a folder (its children's abstracts). A folder's level 2 lists its files.
    Files the user cannot read, and folders they cannot list, are answered for as if
    they were absent (`_may_read`, `_listed`)."""
    if level is not None and level not in (0, 1, 2):
        raise OvError("invalid_argument", f"--level must be 0, 1 or 2, not {level}", field="level")
    shown = rel or "."
    row = store.file_row(rel) if rel else None
    if row is None and (asked := _line_spec(root, rel)) is not None:
        return _read_lines(store, root, *asked, level)
    if row is not None and not _may_read(root, rel):
        raise OvError("not_found", f"{shown} is not in the index", field="path")  # as if absent
    if row is not None:
        got = _file_tiers(root, row, size_cap(store))
        if got is None:
            raise _unreadable_now(shown)
        lv = 2 if level is None else level
        return ReadResult(path=rel, level=lv, kind="file", text=got[lv])
    cap = size_cap(store)
    if (row is None and rel and level in (None, 2) and not left_out_by_rules(root, rel)
            and (ft := _unindexed_text(root, rel)) is not None
            and (cap is None or not over_cap(rel, ft.size, cap))):  # (one skipped for its size: `FILE:START-END` reads it)
        # a file the index lacks, read whole as `FILE:LINE` reads its lines (a review of the
        # Go tree: `ov read new.go` was not_found where `ov read new.go:2` read it)
        return ReadResult(path=rel, level=2, kind="file", text=ft.text,
                          warnings=[f"{_absent(store, root, rel).message}; this is its text as it is now"])
    lv = 1 if level is None else level
    files = _listed(root, rel, _rows_under(root, store.files_under(rel, tiers=lv != 2))[0])
    if not files:
        raise _absent(store, root, rel)
    if lv == 2:
        return ReadResult(path=rel, level=2, kind="folder",
                          text="".join(f["path"] + "\n" for f in files))
    abstract, overview = _folder_tiers(rel, _abstracts_now(root, files, size_cap(store)))
    return ReadResult(path=rel, level=lv, kind="folder", text=abstract if lv == 0 else overview)


def _unreadable_now(shown: str) -> OvError:
    return OvError("not_found", f"{shown} is indexed but cannot be read now (deleted, unreadable, "
                   "binary, or grown past --max-filesize); run `ov index`", field="path")


def _absent(store: Store, root: Path, rel: str) -> OvError:
    """The error for a path the index does not hold (nor any file under it), with why. A
    file's path with a colon and no line after it (`notes.rst:abc`, `notes.rst:`) says what
    `ov read` takes there."""
    head, colon, tail = rel.rpartition(":")
    if colon and head and not _LINE_SPEC.fullmatch(rel) and os.path.isfile(os.path.join(root, head)) \
            and _may_read(root, head):
        return OvError("invalid_argument", f"{rel}: {tail!r} is not a line number (read FILE:LINE or "
                       "FILE:START-END)", field="path")
    if (out := _link_out(root, rel, "path")) is not None:
        return out
    why = dict(store.skipped()[1]).get(rel) if rel and _may_read(root, rel) else None
    return OvError("not_found", f"{rel or '.'} is not in the index" + (
        f": the last `ov index` skipped it ({SKIP_REASONS.get(why, why)}; `ov grep` searches it)"
        if why else _unindexed_note(root, rel)), field="path")


# `PATH:LINE` or `PATH:START-END`, as `ov grep` and ranked hits print a place (`path:line`);
# copied with the colon after it (`path:989: text`) or a column (`path:989:5`, rg's
# --column) it names the same line; a name may hold any character, a newline too
_LINE_SPEC = re.compile(r"(.+?):([0-9]+)(?:-([0-9]+)|:[0-9]*)?", re.DOTALL)


def _line_spec(root: Path, rel: str) -> tuple[str, int, int | None] | None:
    """(path, first line, last line or None) when `rel` ends in `:LINE` or `:START-END` and
    names nothing on disk itself (a file may be called `notes:2`); else None."""
    m = _LINE_SPEC.fullmatch(rel)
    if m is None or os.path.lexists(os.path.join(root, rel)):
        return None
    return m[1], int(m[2]), None if m[3] is None else int(m[3])


def _read_lines(store: Store, root: Path, rel: str, first: int, last: int | None,
                level: int | None) -> ReadResult:
    """`PATH:LINE` (`last` None): the passage (level-2 chunk) holding the line, widened to
    take it in when it lies between two; `PATH:START-END`: exactly those lines. Both read
    from the file as it is now: while it is unchanged the passages are the index's, else
    they are cut again as indexing cuts them, and a warning says the file changed."""
    asked = f":{first}" if last is None else f":{first}-{last}"
    if level not in (None, 2):
        raise OvError("invalid_argument", f"--level {level} prints a tier of the whole file, and "
                      f"`{asked}` asks for lines of its full text: leave out --level (or give 2)",
                      field="level")
    if first < 1 or (last is not None and last < first):
        raise OvError("invalid_argument", f"{rel}{asked}: " + (
            "lines are numbered from 1" if first < 1 else "the range ends before it starts"), field="path")
    row = store.file_row(rel)
    if row is None:
        if os.path.isdir(os.path.join(root, rel)):
            raise OvError("invalid_argument", f"{rel} is a folder: `{asked}` reads lines of a file", field="path")
        ft = None if left_out_by_rules(root, rel) else _unindexed_text(root, rel)
        if ft is None:
            raise _absent(store, root, rel)
        row, same = {"id": None, "path": rel}, False
        cap = size_cap(store)
        # (what the last run recorded, else what it would say now: a file over the cap is
        # not "new since the last `ov index`", which would skip it)
        note = (f"{rel} is not in the index: it is over --max-filesize ({ft.size:,} bytes; `ov grep` "
                "searches it)" if cap is not None and over_cap(rel, ft.size, cap) and rel not in dict(store.skipped()[1])
                else _absent(store, root, rel).message)
    else:
        if not _may_read(root, rel):
            raise OvError("not_found", f"{rel} is not in the index", field="path")  # as if absent
        got = _file_now(root, row, size_cap(store))
        if got is None:
            raise _unreadable_now(rel)
        ft, same = got
        note = ""
    from ov.read import LineIndex  # noqa: PLC0415

    lines = LineIndex(ft.text)
    count = lines.line_count()
    for n in (first, last):
        if n is not None and n > count:
            raise OvError("invalid_argument", f"{rel} has {count} line{'' if count == 1 else 's'}: "
                          f"line {n} is past its end", field="path")
    how = ("these are its lines as they are now" if last is not None else
           "the passage is cut from its text as it is now, as `ov index` would cut it")
    if last is None and row["id"] is None and count > 2 * UNINDEXED_WINDOW:
        # a file the index lacks may be a log of a million lines: its passages are cut
        # around the line asked for, not through the whole file (6.6 s for 58 MB)
        w0, w1 = max(1, first - UNINDEXED_WINDOW), min(count, first + UNINDEXED_WINDOW)
        window = ft.text[lines.line_start(w0):lines.line_start(w1 + 1) if w1 < count else len(ft.text)]
        spans = [(a + w0 - 1, b + w0 - 1) for a, b in _passage_lines(store, row, window, False)]
        start, end = _passage_at(spans, first, count)
        how = f"the passage is cut from its lines {w0}-{w1} as they are now, not from the whole file"
    elif last is None:
        start, end = _passage_at(_passage_lines(store, row, ft.text, same), first, count)
    else:
        start, end = first, last
    text = ft.text[lines.line_start(start):lines.line_start(end + 1) if end < count else len(ft.text)]
    warnings = ([] if same else [f"{note}; {how}"] if note else
                [f"the file changed since the last `ov index`: {how}; run `ov index` to refresh"])
    return ReadResult(path=rel, level=2, kind="file", text=text, start_line=start, end_line=end,
                      line=first if last is None else None, warnings=warnings)


# Lines of a file the index does not hold (new since `ov index`, over --max-filesize, or
# ignored) are read from the file when named with them, as `ov grep` names them
# (`big.log:59510`): up to this size, through no link, and only a text file.
UNINDEXED_LINES_MAX = CONFIG_MAX_FILESIZE
UNINDEXED_WINDOW = 200  # lines each side of the one asked for whose passages are cut


def _unindexed_text(root: Path, rel: str):
    """The text of `root/rel` for a line read when the index lacks it, or None: not a
    regular file under the root reached through no link, not readable by the user,
    binary, or larger than UNINDEXED_LINES_MAX."""
    from ov.read import read_under  # noqa: PLC0415

    if not _may_read(root, rel) or _link_note(root, rel):
        return None
    try:
        return read_under(str(root), rel, max_bytes=UNINDEXED_LINES_MAX)
    except (OSError, OvError, ValueError):
        return None


def _passage_lines(store: Store, row: dict, text: str, same: bool) -> list[tuple[int, int]]:
    """(start_line, end_line) of the file's passages: the index's while the file holds the
    text indexed, else its text now cut as `ov index` cuts it (for keywords alone in an
    index of that layout)."""
    if same:
        return store.passage_lines(row["id"])
    from ov.indexer import lines_cut, passages  # noqa: PLC0415

    return [(c.start_line, c.end_line) for c in passages(text, row["path"], lines_cut(store))]


def _passage_at(spans: list[tuple[int, int]], n: int, count: int) -> tuple[int, int]:
    """The lines of the passage holding line `n` (the first, in file order, of those that
    do). A line no passage holds (a blank one between two, or at an end) joins the next
    passage, or the last one; a file without passages gives the line alone. The spans
    are index rows, a hint: they are kept within the file's `count` lines."""
    for a, b in spans:
        if a <= n <= b:
            return max(1, a), min(b, count)
    after = [b for a, b in spans if a > n]
    if after:
        return n, min(after[0], count)
    return (min(max(1, spans[-1][0]), n), n) if spans else (n, n)


def _link_out(root: Path, rel: str, field: str = "uri") -> OvError | None:
    """`invalid_path` for a path named by the user that is (or goes through) a symbolic
    link leading outside the tree (DESIGN: it escapes the root, and is never followed)."""
    note = _link_note(root, rel) if rel else ""
    return OvError("invalid_path", rel + note, field=field) if note.startswith(_LINK_OUT) else None


_LINK_OUT = ": a symbolic link leading outside the tree"


def _link_note(root: Path, rel: str) -> str:
    """Why a path through a symbolic link is not in the index ("" when none is on its way):
    the walk follows no link (as rg), and one leading outside the tree never (DESIGN)."""
    p = os.path.join(root, rel)
    real, real_root = os.path.realpath(p), os.path.realpath(root)
    if real == os.path.abspath(p):
        return ""
    if leads_outside(p, str(root), folder_inside=False):
        return f"{_LINK_OUT}, which ov never follows (its target: {real})"
    return (f": a symbolic link, which `ov index` does not follow (as rg); its target is "
            f"{os.path.relpath(real, real_root)!r}")


def _unindexed_note(root: Path, rel: str) -> str:
    """Why a path on disk is not in the index when the last run did not skip it: a file
    new (or renamed) since, or one the walk leaves out. A renamed note read "not in the
    index" while it was right there (review of a notes folder)."""
    if not rel:
        return ""
    p = os.path.join(root, rel)
    if os.path.islink(p) and not os.path.exists(p):  # (its words are the folder's, to anyone listing it)
        return f": a broken symbolic link (to {os.readlink(p)!r})"
    if not _may_read(root, rel):
        return ""
    link = _link_note(root, rel)
    if link:  # "new since the last `ov index`" sent a user to run it, and it never would
        return link
    try:
        st = os.stat(os.path.join(root, rel))
    except (OSError, ValueError):
        return ""
    if not stat.S_ISREG(st.st_mode):
        return ""
    if left_out_by_rules(root, rel):
        # `ov index` would leave it out again: "run `ov index`" sent a user round in circles
        return (": the tree's ignore rules (.gitignore, .ignore, hidden names, the config's "
                "`ignore`) leave it out; `ov grep PATTERN` with its path searches it")
    return ": the file is new since the last `ov index` (run `ov index`; `ov grep` searches it now)"


def _abstracts_now(root: Path, files: list[dict], cap: int | None) -> list[dict]:
    """The rows with each changed file's abstract as the file gives it now (a folder's
    tiers listed the abstract a file had when indexed); a file that cannot be read now is
    left out. One stat a file; a changed file is read (up to the size cap)."""
    from ov.read import freshness  # noqa: PLC0415

    out = []
    for f in files:
        try:
            now = freshness(os.stat(os.path.join(root, f["path"])))
        except OSError:
            continue
        if now != (f["size"], f["mtime_ns"], f.get("ctime_ns"), f.get("inode")):
            got = _file_tiers(root, f, cap)
            if got is None:
                continue
            f = {**f, "abstract": got[0], "overview": got[1]}
        out.append(f)
    return out


def _may_read(root: Path, rel: str) -> bool:
    """Whether the user may read the file `rel`, or it is gone (a deleted file is no
    secret: `read` says it cannot be read now). access() answers as the kernel would for
    the user (ACLs, effective ids), as in rank.Rechecker."""
    return os.access(os.path.join(root, rel), os.R_OK) or rank.gone(str(root), rel)


def _listed(root: Path, rel: str, rows: list[dict]) -> list[dict]:
    """The rows under the folder `rel` that a listing of it may show: files the user can
    read, in folders (from `rel` down) the user can list. The rest are left out as if
    absent, as ranked search leaves them out: a name, an abstract or a count of entries
    would tell of them. One access() per file and per folder."""
    listable: dict[str, bool] = {}

    def can_list(folder: str) -> bool:
        chain = []
        while folder not in listable:  # up to a folder known, or to `rel`, without recursion
            chain.append(folder)
            if folder == rel or not folder:
                break
            folder = folder.rpartition("/")[0]
        for d in reversed(chain):
            above = d == rel or not d or listable[d.rpartition("/")[0]]
            listable[d] = above and os.access(os.path.join(root, d), os.R_OK | os.X_OK)
        return listable[chain[0]] if chain else listable[folder]

    return [f for f in rows if can_list(f["path"].rpartition("/")[0])
            and os.access(os.path.join(root, f["path"]), os.R_OK)]


def _folder_tiers(rel: str, files: list[dict]) -> tuple[str, str]:
    """A folder's (L0, L1) over its direct children: a file by its abstract, a subfolder
    (`name/`) by its own L0, built the same way. Deepest folders first, without
    recursion: a tree 2,000 folders deep must not end in a RecursionError (issue 17)."""
    from ov import tiers  # noqa: PLC0415

    prefix = rel + "/" if rel else ""
    files_of: dict[str, list[tuple[str, str]]] = {"": []}
    subs_of: dict[str, list[str]] = {}
    linked: set[str] = set()
    for f in files:
        folder, _, name = f["path"][len(prefix):].rpartition("/")
        files_of.setdefault(folder, []).append((name, f["abstract"] or ""))
        while folder and folder not in linked:  # each folder listed once in its parent
            linked.add(folder)
            parent, _, sub = folder.rpartition("/")
            subs_of.setdefault(parent, []).append(sub)
            folder = parent
    done: dict[str, tuple[str, str]] = {}
    folders = set(files_of) | set(subs_of)
    for folder in sorted(folders, key=lambda d: -(d.count("/") + 1 if d else 0)):
        base = folder + "/" if folder else ""
        children = files_of.get(folder, []) + [(n + "/", done[base + n][0])
                                               for n in subs_of.get(folder, [])]
        done[folder] = tiers.folder_tiers(sorted(children))
    return done[""]


TAG_MODES = ("set", "append", "remove")


def tag(store: Store, root: Path, rel: str, pairs: tuple[tuple[str, str], ...], mode: str = "append",
        recursive: bool = False) -> TagResult:
    """Set, add or remove tags on an indexed file (or, with `recursive`, every file under a
    folder). In remove mode `k=` drops the key whatever its value and `k=v` only with
    that value."""
    if mode not in TAG_MODES:
        raise OvError("invalid_argument", f"--mode must be set, append or remove, not {mode!r}",
                      field="mode")
    if mode != "set" and not pairs:
        raise OvError("invalid_argument", f"--mode {mode} needs at least one k=v tag", field="tags")
    if mode != "remove":
        for k, v in pairs:
            if v == "":
                raise OvError("invalid_argument", f"invalid tag '{k}=': a tag needs a value",
                              field="tags")
    shown = rel or "."
    row = store.file_row(rel) if rel else None
    if row is not None and not _may_read(root, rel):
        raise OvError("not_found", f"{shown} is not in the index", field="path")  # as `read` says
    if row is not None and rank.gone(str(root), rel):  # a tag on a file no longer there would
        raise OvError("not_found", f"{shown} is indexed but no longer on disk; run `ov index`",
                      field="path")  # be said done, and go with its row at the next index
    if row is not None:
        paths = [rel]
    else:
        # what the user cannot read is not there for them (`_listed`): neither named nor tagged
        paths = [f["path"] for f in _listed(root, rel, _rows_under(root, store.files_under(rel))[0])]
        if not paths:
            raise OvError("not_found", f"{shown} is not in the index", field="path")
        if not recursive:
            raise OvError("invalid_argument", f"{shown} is a folder; add --recursive to tag the "
                          f"{len(paths)} indexed file(s) under it", field="recursive")
    done = store.tag_files(paths, pairs, mode)
    return TagResult(mode=mode, files=[TaggedFile(p, t) for p, t in done], count=len(done))


def manifest(store: Store | None, root: Path | None, grep_flags: list[str] = (),
             config_root: Path | None = None) -> Manifest:
    """What this build and (when given) this index can serve; defaults from the config of
    `root` (else of `config_root`: the tree a command would run in without an index)."""
    import ov  # noqa: PLC0415
    from ov import context as ctx  # noqa: PLC0415
    from ov.config import (DEFAULT_LEVEL_LIMIT, DEFAULT_LIMIT, DEFAULT_MAX_TOKENS,  # noqa: PLC0415
                           DEFAULT_NODE_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS)
    from ov.store import DIM, SCHEMA_VERSION  # noqa: PLC0415

    vectors = True
    levels = [0, 1, 2]
    index = None
    model_id = None
    if store is not None:
        vectors = store.has_vectors()
        levels = store.tier_levels()
        model_id = store.get_meta("model")
        embedded, embeddable = store.coverage()  # (a worker may be hours into them: said)
        index = {"root": str(root), "db": str(store.path), "files": store.counts()["files"],
                 "vectors": vectors, "embedded": embedded, "embeddable": embeddable}
    from ov.embed import MODEL_ID, check_available  # noqa: PLC0415

    model_id = model_id or MODEL_ID
    try:  # the model files can be found (cheap: no model is loaded)
        check_available()
        model_found = True
    except OvError:
        model_found = False
    # the defaults a search here takes: the tree's config over the built-in ones (an
    # invalid config is the error every other command gives)
    limit, node_limit, default_type = DEFAULT_LIMIT, DEFAULT_NODE_LIMIT, "hybrid"
    if (root or config_root) is not None:
        from ov.config import load_config  # noqa: PLC0415

        cfg = load_config(root or config_root)
        default_type, limit = cfg.ranked_options()
        node_limit = cfg.search_options()["node_limit"]
        default_type, limit = default_type or "hybrid", limit or DEFAULT_LIMIT
        node_limit = node_limit or DEFAULT_NODE_LIMIT
    vectors = vectors and model_found  # semantic search needs both
    types = ["hybrid", "keywords", "semantic"] if vectors else ["keywords"]
    import importlib.util  # noqa: PLC0415

    serves = importlib.util.find_spec("mcp") is not None  # `ov mcp` needs the [mcp] extra
    commands = ["index", "status", *(["find"] if vectors else []), "search", "grep", "glob", "read",
                "tag", "manifest", "doctor", *(["mcp"] if serves else [])]
    return Manifest(
        ov_version=ov.__version__, schema_version=SCHEMA_VERSION, index=index, commands=commands,
        search_types=types, modes=["list", "context"], levels=levels, grep_flags=list(grep_flags),
        model={"id": model_id, "dims": DIM, "max_tokens": MAX_QUERY_TOKENS, "available": vectors,
               "files_found": model_found},
        limits={"default_limit": limit, "max_limit": MAX_LIMIT, "default_search_type": default_type,
                "max_query_chars": MAX_QUERY_CHARS, "max_query_tokens": MAX_QUERY_TOKENS,
                "node_limit": node_limit, "level_limit": DEFAULT_LEVEL_LIMIT,
                "default_max_tokens": DEFAULT_MAX_TOKENS, "max_max_tokens": ctx.MAX_BUDGET},
        categories=list(ctx.CATEGORIES), detail_tiers=list(ctx.TIERS))
