"""The engine: `find`, `search` and `status` over an index; each returns a report.

A ranked query runs each branch with the filters inside it (before any limit), maps
chunks to files, fuses, rechecks the survivors against the disk in rank order until the
page is full, and pages with a cursor bound to the index generation. The CLI only parses
flags and renders what these functions return.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ov import rank
from ov.config import MAX_QUERY_TOKENS, db_path_for, find_index
from ov.errors import OvError
from ov.model import Excerpt, Hit, SearchResult, StatusReport
from ov.query import (check_limit, check_query, decode_cursor, encode_cursor, keyword_plan,
                      request_key)
from ov.store import KNN_MAX, Filters, Store


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


# ---- locating the index ------------------------------------------------------------------


def locate_index(scope: Path, db: Path | None = None) -> tuple[Path, Path] | None:
    """(db path, root) for `--db` or the nearest index at or above `scope`; None if none."""
    if db is not None:
        db = Path(db)
        if not db.exists():
            raise OvError("not_found", f"no index at {db}", field="db")
        from ov.indexer import index_root_of  # noqa: PLC0415

        return db, index_root_of(db)
    found = find_index(scope)
    if found is None:
        return None
    return found, found.parent.parent


def scope_paths(root: Path, uris: list[str] | None, cwd: Path | None = None) -> tuple[str, ...]:
    """`-u/--uri` values → paths relative to the root; refused if outside it."""
    cwd = cwd or Path.cwd()
    out = []
    root_r = root.resolve()
    for u in uris or []:
        if "\x00" in u:
            raise OvError("invalid_path", "a path may not contain a NUL byte", field="uri")
        p = Path(u)
        full = (p if p.is_absolute() else cwd / p)
        full = Path(os.path.normpath(full))
        try:
            rel = full.relative_to(root_r)
        except ValueError:
            try:
                rel = full.resolve().relative_to(root_r)
            except ValueError:
                raise OvError("invalid_path", f"{u} is outside the index root {root_r}",
                              field="uri") from None
        s = rel.as_posix()
        out.append("" if s == "." else s)
    return tuple(out)


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


def search(store: Store, root: Path, req: SearchRequest, embedder_factory=None) -> SearchResult:
    check_query(req.query)
    check_limit(req.limit)
    if req.threshold is not None and not 0.0 <= req.threshold <= 1.0:
        raise OvError("invalid_argument", "--threshold must be between 0 and 1", field="threshold")
    key = request_key(req.query, req.search_type, req.threshold, req.filters, req.all_chunks)
    generation = store.generation()
    offset = decode_cursor(req.cursor, generation, key) if req.cursor else 0

    use_kw = req.search_type in ("hybrid", "keywords")
    use_vec = req.search_type in ("hybrid", "semantic")
    qvec = None
    if use_vec:
        if not store.has_vectors():
            if req.search_type == "semantic":
                raise OvError("unsupported",
                              "this index has no vectors (built with --no-embed); run `ov index` "
                              "without --no-embed to enable semantic search", field="search_type")
            use_vec = False
        else:
            qvec, model_id = _embed_query(req.query, embedder_factory or _default_embedder)
            stored = store.get_meta("model")
            if stored and stored != model_id:
                raise OvError("unsupported", f"the index was embedded with {stored!r}, but the "
                              f"query embedder is {model_id!r}; rebuild with `ov index --full`")

    checker = rank.Rechecker(str(root))
    need = offset + req.limit + 1
    depth = max(64, need * 4)
    while True:
        branch_lists, exhausted = _branches(store, req, use_kw, use_vec, qvec, depth)
        ranked = _combine(branch_lists, req)
        rows = store.chunk_rows([c.chunk_id for c in ranked[: need * 3 + 50]])
        hits = _materialise(ranked, rows, req, checker, need)
        if len(hits) >= need or exhausted or depth >= KNN_MAX:
            break
        depth = min(KNN_MAX, depth * 4)

    page = hits[offset: offset + req.limit]
    for i, h in enumerate(page):
        h.rank = offset + i + 1
    more = len(hits) > offset + req.limit
    warnings = []
    if checker.stale:
        warnings.append(f"{checker.stale} hit(s) came from files changed or deleted since indexing; "
                        "run `ov index` to refresh")
    return SearchResult(
        search_type=req.search_type,
        profile=dict(rank.PROFILE),
        hits=page,
        total=len(page),
        next_cursor=encode_cursor(generation, key, offset + req.limit) if more else None,
        warnings=warnings,
        stale=checker.stale,
    )


def _branches(store: Store, req: SearchRequest, use_kw: bool, use_vec: bool, qvec, depth: int):
    lists: dict[str, list[rank.Cand]] = {}
    exhausted = True
    if use_kw:
        plan = keyword_plan(req.query)
        kw: dict[int, float] = {}
        if plan.fts:
            res = store.keyword_search(plan.fts, req.filters, depth)
            exhausted &= len(res) < depth
            for cid, s in res:
                kw[cid] = max(kw.get(cid, 0.0), s)
        if plan.trigram:
            res = store.keyword_search(plan.trigram, req.filters, depth, table="chunks_tri")
            exhausted &= len(res) < depth
            for cid, s in res:
                kw[cid] = max(kw.get(cid, 0.0), s)
        for term in plan.short:
            for cid, s in store.substring_search(term, req.filters, depth):
                kw[cid] = max(kw.get(cid, 0.0), s)
        lists["keywords"] = [_cand(cid, "keywords", raw, rank.keyword_score(raw)) for cid, raw in kw.items()]
    if use_vec:
        res = store.vector_search(qvec, req.filters, depth)
        exhausted &= len(res) < depth
        lists["semantic"] = [_cand(cid, "semantic", d, rank.semantic_score(d)) for cid, d in res]
    paths = store.chunk_paths([c.chunk_id for lst in lists.values() for c in lst])
    for lst in lists.values():
        for c in lst:
            c.path = paths.get(c.chunk_id, "")
    return lists, exhausted


def _cand(cid: int, branch: str, raw: float, score: float) -> rank.Cand:
    return rank.Cand(cid, "", score, {branch: {"raw": raw, "score": score}})


def _combine(lists: dict[str, list[rank.Cand]], req: SearchRequest) -> list[rank.Cand]:
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
        fused = rank.fuse_rrf({n: [rank.Cand(c.chunk_id, f"{c.path}\x00{c.chunk_id}", c.score,
                                             c.branches) for c in lst] for n, lst in per_chunk.items()})
        for c in fused:
            c.path = c.path.split("\x00", 1)[0]
        return rank.sort_cands(fused)
    return rank.fuse_rrf(per_file)


def _materialise(ranked, rows, req: SearchRequest, checker: rank.Rechecker, need: int) -> list[Hit]:
    hits: list[Hit] = []
    seen_spans: set[tuple[str, int, int]] = set()
    for c in ranked:
        if len(hits) >= need:
            break
        if req.threshold is not None and c.score < req.threshold:
            break
        row = rows.get(c.chunk_id)
        if row is None:
            continue
        got = checker.check(row.path, row.size, row.mtime_ns, row.start, row.end, row.text)
        if got is None:
            continue
        start, end, sl, el, text = ((row.start, row.end, row.start_line, row.end_line, row.text)
                                    if got == "same" else got)
        if row.level != 2:
            text = ""
        span = (row.path, start, end)
        if span in seen_spans and row.level == 2:
            continue
        seen_spans.add(span)
        hit = Hit(rank=0, path=row.path, start_line=sl, end_line=el, score=round(c.score, 6),
                  level=row.level, excerpt=Excerpt(text, start, end))
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
    counts = store.counts()
    stale = missing = 0
    for path, (_, size, mtime_ns, _) in store.file_states().items():
        try:
            st = os.stat(root / path)
        except OSError:
            missing += 1
            continue
        if (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
            stale += 1
    size = sum(p.stat().st_size for p in store.path.parent.glob(store.path.name + "*")
               if p.is_file() and not p.name.endswith(".lock"))
    vec = store.q1("SELECT vec_version()")
    chunks = counts["chunks"]
    return StatusReport(
        root=str(root), db=str(store.path), files=counts["files"], chunks=chunks,
        embedded_chunks=counts["embedded"],
        embedded_coverage=round(counts["embedded"] / chunks, 4) if chunks else 0.0,
        stale_files=stale, missing_files=missing, db_bytes=size, model=store.get_meta("model"),
        schema_version=int(store.get_meta("schema_version") or 0),
        sqlite_version=store.q1("SELECT sqlite_version()"), vec_version=vec,
    )


def default_db(root: Path) -> Path:
    return db_path_for(root)
