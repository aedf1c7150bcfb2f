"""Cross-validated choice of ov's ranking (issue 19) and of its score scale (issue 14).

    python3 scripts/cv_rank.py prep scifact --workdir W --splits train,test
    python3 scripts/cv_rank.py extract scifact --workdir W
    python3 scripts/cv_rank.py prep cosqa-dev --workdir W2 --splits dev
    python3 scripts/cv_rank.py extract cosqa-dev --workdir W2
    python3 scripts/cv_rank.py prep DIR --workdir DIR --splits all; ... extract DIR --workdir DIR
        (DIR a labelled tree: corpus/, queries.jsonl, qrels.tsv; `TreeSet`)
    python3 scripts/cv_rank.py choose-code
    python3 scripts/cv_rank.py fusions
    python3 scripts/cv_rank.py rule
    python3 scripts/cv_rank.py cv
    python3 scripts/cv_rank.py calib --prose SA,W,K --code SA,W,K
    python3 scripts/cv_rank.py pooled --prose 1.0,0.3,160 --code 1.0,0.5,160
    python3 scripts/cv_rank.py units cosqa-dev --split dev --workdir W2 --variants budget256,whole
    python3 scripts/cv_rank.py ceil
    python3 scripts/cv_rank.py small scifact --workdir W --parts 50
    python3 scripts/cv_rank.py unique scifact --workdir W   (then cosqa-dev --workdir W2)

The model runs over each corpus once: W is the work folder of a real index built by `ov
index` (scripts/bench_quality.py builds one there with --workdir). `prep` embeds the queries
(the splits' and 20 nonsense ones, words absent from the corpus) and reads each query's
keyword branch as the engine reads it for a first page (depth 204); `extract` reads every
passage and abstract vector of the index and keeps, per query and per file:

- P: the file's best passage cosine;
- A: the cosine of the file's abstract (its level-0 row);
- K: the file's best keyword bm25 (0 when the file is not in the keyword branch's list);
- M (per query): the query's bm25 ceiling (`ceiling`; `ceilings` adds it to a cache made
  before it was kept).

`cv` then compares fusion rules with 5-fold cross-validation over queries (the folds of
scripts/bench_quality.py: SciFact train for prose, CoSQA dev for code; SciFact test is
reported, never chosen on), in numpy; `calib` fits the score scale (Platt scaling of each
ranking score on the tuning sets' top hits) and reports its reliability on SciFact test
and, out of fold, on CoSQA dev; `ceil` compares the keyword evidence bm25 / ceiling with
bm25 / (bm25 + k), and `small` does both again on small corpora cut from the big ones. The
cache lives outside the project (default
/work/cache-rank or $OV_RANK_CACHE).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
CACHE = Path(os.environ.get("OV_RANK_CACHE", "/work/cache-rank"))
LIMIT = int(os.environ.get("OV_CV_LIMIT", "0")) or None
DEPTH = 204  # the engine's first-page read depth: max(64, 4 * (50 + 1))


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---- extract -------------------------------------------------------------------------------


class TreeSet:
    """A labelled set over a real tree of code (a folder holding `corpus/`, indexed there by
    `ov index`, `queries.jsonl` and `qrels.tsv`, `query-id corpus-id score` or TREC's four
    columns, whose document ids are paths under `corpus/`), read through the loaders `prep`
    asks of ireval_baselines: the stdlib code set of docs/BENCHMARKS.md ("Keyword evidence
    in code"). Its one split is `all`. Every file must be code (ov.kinds): the cache
    holds one kind per set, and a prose file would be scored here on the code scale where
    the CLI reads the prose one."""

    def __init__(self, d: Path) -> None:
        self.d = d

    def load_queries(self, _d: str) -> dict[str, str]:
        rows = (json.loads(x) for x in (self.d / "queries.jsonl").read_text().splitlines() if x.strip())
        return {str(o["_id"]): o["text"] for o in rows}

    def load_qrels(self, _d: str, _split: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for line in (self.d / "qrels.tsv").read_text().splitlines():
            cols = line.split("\t") if "\t" in line else line.split()
            if len(cols) == 4:  # TREC: query, iteration, document, relevance
                cols = [cols[0], cols[2], cols[3]]
            if len(cols) != 3 or not cols[2].lstrip("-").isdigit():  # a header or a blank line
                continue
            out.setdefault(cols[0], {})[cols[1]] = int(cols[2])
        return out


def _tree_corpus(tree: Path, paths: list[str]) -> list[tuple[str, str, str]]:
    """(path, "", text) of each indexed file of a `TreeSet`, all of them code."""
    from ov.kinds import kind_of  # noqa: PLC0415

    prose = [p for p in paths if kind_of(p) != "code"]
    if prose:
        sys.exit(f"{tree}: {len(prose)} indexed file(s) are not code (first {prose[0]!r}); a TreeSet is one kind")
    return [(p, "", (tree / "corpus" / p).read_text(encoding="utf-8", errors="replace")) for p in paths]


def _open(dataset: str, workdir: Path):
    import bench_quality as bq  # noqa: PLC0415

    from ov.store import Store  # noqa: PLC0415

    tree = Path(dataset)
    if (tree / "corpus").is_dir() and (tree / "qrels.tsv").exists():
        store = Store.open(tree / "corpus" / ".ov" / "index.db")
        paths = [p for (p,) in store.rows("SELECT path FROM files")]
        return bq, TreeSet(tree), tree.resolve(), _tree_corpus(tree, paths), "py", {p: p for p in paths}, store
    base = bq.load_baselines()
    d = bq.dataset_dir(dataset)
    corpus = bq.read_corpus(d)
    ext = bq.CODE_SETS.get(d.name, "txt")
    store = Store.open(workdir / "docs" / ".ov" / "index.db")
    ids = {c[0] for c in corpus}
    if all(p in ids for (p,) in store.rows("SELECT path FROM files")):  # written --keep-paths
        return bq, base, d, corpus, "py" if all(i.endswith(".py") for i in ids) else ext, {i: i for i in ids}, store
    names = bq.safe_names([c[0] for c in corpus])
    back = {f"{names[c[0]]}.{ext}": c[0] for c in corpus}
    return bq, base, d, corpus, ext, back, store


def prep(dataset: str, workdir: Path, splits: list[str], out: Path) -> None:
    """What needs no document vector: each query's vector and its keyword branch (K)."""
    from ov import engine  # noqa: PLC0415
    from ov.embed import load_embedder  # noqa: PLC0415

    bq, base, d, corpus, ext, back, store = _open(dataset, workdir)
    name = d.name
    paths = [p for (p,) in store.rows("SELECT path FROM files ORDER BY path")]
    pos = {p: i for i, p in enumerate(paths)}
    emb = load_embedder("query")
    qall = base.load_queries(str(d))
    key = (lambda p: p) if isinstance(base, TreeSet) or all(p in back for p in paths) else (lambda p: Path(p).name)
    meta = {"dataset": name, "paths": paths, "docs": [back[key(p)] for p in paths],
            "kind": "code" if ext == "py" else "prose", "n_chunks": store.chunk_count(), "splits": {}}
    for split in [*splits, "nonsense"]:
        if split == "nonsense":
            texts = bq.nonsense_queries(corpus)
            qids = [f"nonsense-{i}" for i in range(len(texts))]
            qrels = {q: {} for q in qids}
        else:
            qrels = base.load_qrels(str(d), split)
            qids = sorted(q for q in qrels if q in qall)[:LIMIT]
            texts = [qall[q] for q in qids]
        log(f"{name} {split}: {len(qids)} queries: vectors and keyword branch")
        np.save(out / f"{name}-{split}-qvec.npy", emb.embed(texts))
        K = np.zeros((len(qids), len(paths)), np.float32)
        M = np.zeros(len(qids), np.float32)  # each query's bm25 ceiling (`ceiling`)
        for n, text in enumerate(texts):
            M[n] = _ceiling(store, text)
            req = engine.SearchRequest(query=text, search_type="keywords")
            lists = engine._branches(store, req, True, False, None, DEPTH, engine.query_tree(store, text))[0]
            for c in lists["keywords"]:
                i = pos.get(c.path)
                if i is not None:
                    b = c.branches["keywords"]
                    K[n, i] = max(K[n, i], b.get("bm25", b["raw"]))  # raw: the evidence
        np.save(out / f"{name}-{split}-K.npy", K)
        np.save(out / f"{name}-{split}-M.npy", M)
        meta["splits"][split] = {"qids": qids, "queries": texts, "qrels": [qrels[q] for q in qids]}
    (out / f"{name}-meta.json").write_text(json.dumps(meta))
    store.close()
    if isinstance(base, TreeSet):  # the keyword rows a score reads (`with_tree`), as `unique` writes them
        unique_prep(dataset, workdir, out)


def ceiling(stats) -> float:
    """The most bm25 a keyword row could score for the query `stats` (ov.bm25.TermStats) was
    read for: each word's idf times (k1 + 1); words the index does not hold count nothing,
    a word of several index terms counts at its rarest term's idf."""
    from ov.bm25 import BM25_K1, bm25_idf  # noqa: PLC0415

    total = 0.0
    for terms in stats.terms.values():
        dfs = [stats.df.get(t, 0) for t in terms]
        if terms and all(dfs):
            total += bm25_idf(stats.rows, min(dfs)) * (BM25_K1 + 1)
    return total


def _ceiling(store, text: str) -> float:
    from ov.query import keyword_plan  # noqa: PLC0415
    from ov.store.text import or_phrases  # noqa: PLC0415

    plan = keyword_plan(text)
    words = or_phrases(plan.fts) if plan.fts else None
    return ceiling(store.term_stats(words)) if words else 0.0


def ceilings(dataset: str, workdir: Path, out: Path) -> None:
    """Each prepared query's bm25 ceiling, for a cache made before `prep` saved it."""
    bq, base, d, corpus, ext, back, store = _open(dataset, workdir)
    meta = json.loads((out / f"{d.name}-meta.json").read_text())
    for split, sp in meta["splits"].items():
        M = np.array([_ceiling(store, t) for t in sp["queries"]], np.float32)
        np.save(out / f"{d.name}-{split}-M.npy", M)
        log(f"{d.name} {split}: {len(M)} ceilings, median {float(np.median(M)):.1f}")
    store.close()


def embed_subset(dataset: str, workdir: Path, fraction: float, seed: int = 0) -> None:
    """Embed the pending passages and abstracts of a seeded random `fraction` of the files
    into the index, as `ov index` would (the same embedder, texts deduplicated), when the
    machine cannot embed the whole corpus in time; `ov index` embeds the rest later."""
    import random  # noqa: PLC0415

    from ov.embed import load_embedder  # noqa: PLC0415
    from ov.read import content_hash  # noqa: PLC0415

    bq, base, d, corpus, ext, back, store = _open(dataset, workdir)
    files = sorted(p for (p,) in store.rows("SELECT path FROM files"))
    pick = set(random.Random(seed).sample(files, round(fraction * len(files))))
    rows = [(cid, text) for cid, text, path in store.rows(
        "SELECT c.id, c.text, f.path FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE c.embedded = 0 AND c.level IN (0, 2) ORDER BY length(c.text), c.id") if path in pick]
    log(f"{d.name}: {len(pick)} files, {len(rows)} rows to embed")
    emb = load_embedder("index")
    with store.tx():
        store.set_meta("model", emb.model_id)
    for i in range(0, len(rows), 256):
        part = rows[i:i + 256]
        vecs = emb.embed([t for _, t in part])
        with store.tx():
            store.store_vectors([c for c, _ in part], [v.astype("float32").tobytes() for v in vecs],
                                [content_hash(t.encode("utf-8")) for _, t in part])
        log(f"  {i + len(part)}/{len(rows)}")
    store.close()


def subset_data(dataset: str, workdir: Path, dest: Path) -> None:
    """A BEIR folder of the files whose passages all have vectors (`embed_subset`), and a
    work folder for scripts/bench_quality.py (--workdir) holding those files and a copy of
    the index: `ov index` there drops the other files and embeds nothing."""
    import shutil  # noqa: PLC0415

    bq, base, d, corpus, ext, back, store = _open(dataset, workdir)
    incomplete = {p for (p,) in store.rows("SELECT DISTINCT f.path FROM chunks c JOIN files f ON f.id = c.file_id "
                                           "WHERE c.embedded = 0 AND c.level IN (0, 2)")}
    store.close()
    keep = {back[p] for p in back if p not in incomplete and (workdir / "docs" / p).exists()}
    data, work = dest / "data", dest / "work"
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "corpus.jsonl", "w", encoding="utf-8") as f:
        for did, title, text in corpus:
            if did in keep:
                f.write(json.dumps({"_id": did, "title": title, "text": text}) + "\n")
    shutil.copy(d / ("queries.jsonl.gz" if (d / "queries.jsonl.gz").exists() else "queries.jsonl"), data)
    for q in d.glob("qrels-*.tsv"):
        lines = q.read_text().splitlines()
        (data / q.name).write_text("\n".join([lines[0]] + [x for x in lines[1:] if x.split("\t")[1] in keep]) + "\n")
    (work / "docs" / ".ov").mkdir(parents=True, exist_ok=True)
    for p, did in back.items():
        if did in keep:
            shutil.copy2(workdir / "docs" / p, work / "docs" / p)
    src = workdir / "docs" / ".ov" / "index.db"
    import sqlite3  # noqa: PLC0415

    with sqlite3.connect(src) as a, sqlite3.connect(work / "docs" / ".ov" / "index.db") as b:
        a.backup(b)
    log(f"{d.name}: {len(keep)} files in {dest}")


def extract(dataset: str, workdir: Path, out: Path) -> None:
    """Every passage and abstract vector of the index against each prepared query."""
    bq, base, d, corpus, ext, back, store = _open(dataset, workdir)
    name = d.name
    meta = json.loads((out / f"{name}-meta.json").read_text())
    pos = {p: i for i, p in enumerate(meta["paths"])}
    fpath = dict(store.rows("SELECT id, path FROM files"))
    rows = store.rows("SELECT c.file_id, c.level, v.embedding FROM chunks c "
                      "JOIN chunks_vec v ON v.chunk_id = c.id WHERE c.level IN (0, 2)")
    pend = store.q1("SELECT count(*) FROM chunks WHERE embedded = 0 AND level IN (0, 2)")
    if pend:
        log(f"warning: {pend} passages or abstracts have no vector yet")
    fil = np.array([pos[fpath[r[0]]] for r in rows])
    lev = np.array([r[1] for r in rows])
    vec = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    nf = len(meta["paths"])
    # a file counts only when every passage of it has a vector (a subset, `embed_subset`)
    complete = np.ones(nf, bool)
    for (fid,) in store.rows("SELECT DISTINCT file_id FROM chunks WHERE embedded = 0 AND level IN (0, 2)"):
        complete[pos[fpath[fid]]] = False
    np.save(out / f"{name}-complete.npy", complete)
    log(f"{name}: {int(complete.sum())} of {nf} files complete")
    pidx, aidx = np.where(lev == 2)[0], np.where(lev == 0)[0]
    log(f"{name}: {len(pidx)} passage and {len(aidx)} abstract vectors")
    for split in meta["splits"]:
        qv = np.load(out / f"{name}-{split}-qvec.npy")
        feats = np.full((len(qv), 2, nf), -1.0, dtype=np.float32)
        for n in range(len(qv)):
            cos = vec @ qv[n]
            np.maximum.at(feats[n, 0], fil[pidx], cos[pidx])
            np.maximum.at(feats[n, 1], fil[aidx], cos[aidx])
        np.save(out / f"{name}-{split}-PA.npy", feats)
        log(f"  {split}: {len(qv)} queries")
    store.close()


# ---- evaluation ------------------------------------------------------------------------------



class Set:
    """One labelled split from the cache: features (queries x feature x files), gains."""

    def __init__(self, cache: Path, name: str, split: str) -> None:
        meta = json.loads((cache / f"{name}-meta.json").read_text())
        sp = meta["splits"][split]
        self.cache, self.name, self.split, self.kind = cache, name, split, meta["kind"]
        self.n_chunks = meta["n_chunks"]
        pa = np.load(cache / f"{name}-{split}-PA.npy")
        self.f = {"P": pa[:, 0, :], "A": pa[:, 1, :], "K": np.load(cache / f"{name}-{split}-K.npy")}
        mp = cache / f"{name}-{split}-M.npy"  # each query's bm25 ceiling (`ceilings`)
        self.M = np.load(mp) if mp.exists() else np.zeros(len(pa), np.float32)
        self.qids = sp["qids"]
        docs = meta["docs"]
        cp = cache / f"{name}-complete.npy"
        self.complete = np.load(cp) if cp.exists() else np.ones(len(docs), bool)
        if not self.complete.all():  # a subset of the files: the others are not there
            self.f["P"][:, ~self.complete] = -1.0
            self.f["A"][:, ~self.complete] = -1.0
            self.f["K"][:, ~self.complete] = 0.0
        pos = {d: i for i, d in enumerate(docs)}
        nq, nf = len(self.qids), len(docs)
        self.gain = np.zeros((nq, nf), np.float32)
        self.idcg = np.zeros(nq)
        for n, (qid, rels) in enumerate(zip(self.qids, sp["qrels"])):
            for d, r in rels.items():
                if d in pos and r > 0:
                    self.gain[n, pos[d]] = r
            ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
            self.idcg[n] = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
            if qid in pos:  # BEIR drops a document whose id is the query's own
                self.gain[n, pos[qid]] = 0  # (and bench_quality does too)
        self.gain[:, ~self.complete] = 0
        subset = not self.complete.all() and split != "nonsense"
        keep = (self.gain > 0).any(axis=1) if subset else np.ones(nq, bool)
        if not keep.all():  # queries with no relevant file in the subset are left out
            self.qids = [q for q, k in zip(self.qids, keep) if k]
            self.gain, self.idcg = self.gain[keep], self.idcg[keep]
            self.f = {k: v[keep] for k, v in self.f.items()}
            self.M = self.M[keep]
            for n in range(len(self.qids)):
                g = sorted(self.gain[n][self.gain[n] > 0], reverse=True)[:10]
                self.idcg[n] = sum(x / math.log2(i + 2) for i, x in enumerate(g))
        self.disc = 1.0 / np.log2(np.arange(2, 12))

    def top(self, s: np.ndarray, k: int = 10) -> np.ndarray:
        """Top-k file indices per query: score desc, then path (the index order)."""
        part = np.sort(np.argpartition(-s, k + 10, axis=1)[:, :k + 10], axis=1)
        order = np.argsort(-np.take_along_axis(s, part, axis=1), axis=1, kind="stable")
        return np.take_along_axis(part, order, axis=1)[:, :k]

    def ndcg(self, s: np.ndarray) -> np.ndarray:
        t = self.top(s)
        g = np.take_along_axis(self.gain, t, axis=1)
        dcg = (g * self.disc).sum(axis=1)
        return np.where(self.idcg > 0, dcg / np.maximum(self.idcg, 1e-12), 0.0)


def sem_score(st: Set, variant: str, sa: float, ss: float = 0.0) -> np.ndarray:
    """A file's cosine evidence: its best passage, or its abstract at share `sa` (0: none)."""
    base = st.f["P"]
    return np.maximum(base, np.where(st.f["A"] > -1, sa * st.f["A"], -1.0)) if sa > 0 else base


def kw_map(K: np.ndarray, k0: float) -> np.ndarray:
    return K / (K + k0)


def rank_of(s: np.ndarray, present: np.ndarray, depth: int = 100) -> np.ndarray:
    """1-based rank per file in each query's list of the top `depth` present files; 0 = not in it."""
    order = np.argsort(-np.where(present, s, -np.inf), axis=1, kind="stable")[:, :depth]
    r = np.zeros(s.shape, np.int32)
    rows = np.arange(s.shape[0])[:, None]
    r[rows, order] = np.arange(1, depth + 1)[None, :]
    r[~present] = 0
    return r


def fuse_rrf(sem, K, k=60, depth=100):
    rs = rank_of(sem, np.ones_like(sem, bool), depth)
    rk = rank_of(K, K > 0, depth)
    return np.where(rs > 0, 1.0 / (k + rs), 0) + np.where(rk > 0, 1.0 / (k + rk), 0)


def minmax_top(s, present, depth=100):
    r = rank_of(s, present, depth)
    m = r > 0
    hi = np.max(np.where(m, s, -np.inf), axis=1, keepdims=True)
    lo = np.min(np.where(m, s, np.inf), axis=1, keepdims=True)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.where(m, (s - lo) / span, 0.0)


def fuse_mm(sem, K, w=0.5, depth=100):
    return w * minmax_top(sem, np.ones_like(sem, bool), depth) + (1 - w) * minmax_top(K, K > 0, depth)


# The fusion of profile 2026.11-sentence1 (ov.rank before this study): per kind, a cosine
# floor, and a semantic weight that moves from w_weak to w_strong as the query's best bm25
# goes from bm25_weak to bm25_strong (scaled by ln(chunks) / 9.36); each branch scaled by
# the query's best score in it.
ADAPTIVE = {"prose": (0.35, 0.5, 0.97, 10.0, 14.0), "code": (0.15, 0.75, 1.0, 12.0, 18.0)}


def fuse_adaptive(st: Set, sem, K):
    floor0, w_strong, w_weak, weak, strong = ADAPTIVE[st.kind]
    scale = math.log(max(st.n_chunks, 3)) / 9.36
    best_k = K.max(axis=1, keepdims=True)
    t = np.clip((best_k - weak * scale) / ((strong - weak) * scale), 0, 1)
    w = np.where(best_k > 0, w_weak + (w_strong - w_weak) * t, 1.0)
    best_c = sem.max(axis=1, keepdims=True)
    floor = np.where(best_c > floor0, floor0, 0.0)
    span = best_c - floor
    ns = np.where(span > 0, np.maximum(0, (sem - floor) / np.where(span > 0, span, 1)), 0)
    nk = np.where(best_k > 0, K / np.where(best_k > 0, best_k, 1), 0)
    return np.minimum(1.0, w * ns + (1 - w) * nk)


def fuse_lin(sem, K, w, k0):
    return w * np.maximum(sem, 0) + (1 - w) * kw_map(K, k0)


def fuse_linrel(sem, K, w, floor):
    best_c = sem.max(axis=1, keepdims=True)
    span = np.maximum(best_c - floor, 1e-6)
    ns = np.maximum(0, (sem - floor) / span)
    best_k = K.max(axis=1, keepdims=True)
    nk = np.where(best_k > 0, K / np.maximum(best_k, 1e-9), 0)
    return w * ns + (1 - w) * nk


# ---- calibration: logistic regression on a few features ---------------------------------------


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 50) -> np.ndarray:
    """Weights of p = sigmoid(X @ w) by Newton's method (X carries its own constant column)."""
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        z = np.clip(X @ w, -30, 30)
        p = 1 / (1 + np.exp(-z))
        g = X.T @ (p - y) + l2 * w
        H = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(X.shape[1])
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def sigmoid(z):
    return 1 / (1 + np.exp(-np.clip(z, -30, 30)))


def cands(scores: list[np.ndarray], present: list[np.ndarray], depth: int = 50) -> np.ndarray:
    """Per query, a boolean mask of the files in the top `depth` of any of the lists."""
    m = np.zeros(scores[0].shape, bool)
    rows = np.arange(scores[0].shape[0])[:, None]
    for s, pr in zip(scores, present):
        order = np.argsort(-np.where(pr, s, -np.inf), axis=1)[:, :depth]
        ok = np.take_along_axis(pr, order, axis=1)
        m[rows, order] |= ok
    return m


def features(st: Set, sa: float, k0: float, kind: str):
    """The columns a calibrated score is fitted on: [1, cosine evidence, keyword map]."""
    sem = sem_score(st, "P", sa, 0)
    kw = kw_map(st.f["K"], k0)
    return sem, kw


def reliability(p: np.ndarray, rel: np.ndarray, bins: int = 10):
    """(rows of bucket lo, hi, n, mean p, fraction relevant), expected calibration error."""
    edges = np.linspace(0, 1, bins + 1)
    out, ece, n = [], 0.0, len(p)
    for i in range(bins):
        m = (p >= edges[i]) & ((p < edges[i + 1]) if i < bins - 1 else (p <= 1))
        if m.sum():
            out.append((edges[i], edges[i + 1], int(m.sum()), float(p[m].mean()), float(rel[m].mean())))
            ece += m.sum() / n * abs(p[m].mean() - rel[m].mean())
    return out, ece


# ---- cross-validation ---------------------------------------------------------------------


SAS = (0.0, 0.8, 0.85, 0.9, 0.95, 1.0)  # abstract share; 0 = passages only
WS = tuple(round(0.3 + 0.05 * i, 2) for i in range(14))  # 0.3 .. 0.95
K0S = (5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)
FLOORS = (0.0, 0.3)


def fold_of(qids: list[str], k: int) -> np.ndarray:
    """The folds of scripts/bench_quality.py (`folds_of`), as an array in `qids` order."""
    import bench_quality as bq  # noqa: PLC0415

    f = bq.folds_of(qids, k)
    return np.array([f[q] for q in qids])


def cv_grid(per_cfg: dict, folds: np.ndarray, k: int):
    """per_cfg: config -> per-query nDCG. Returns (held-out per-query nDCG of the per-fold
    choice, the choices, curve: config -> (mean, SE over folds))."""
    held = np.zeros(len(folds))
    chosen = []
    for i in range(k):
        tr = folds != i
        best = max(per_cfg, key=lambda c: (per_cfg[c][tr].mean(), -_cplx(c)))
        chosen.append(best)
        held[folds == i] = per_cfg[best][folds == i]
    curve = {}
    for c, v in per_cfg.items():
        fm = np.array([v[folds == i].mean() for i in range(k)])
        curve[c] = (float(v.mean()), float(fm.std(ddof=1) / math.sqrt(k)))
    return held, chosen, curve


def _cplx(c) -> float:
    """A config's complexity for tie-breaks: further from plain values is more complex."""
    if not isinstance(c, tuple):
        return 0.0
    return sum(abs(x - 0.5) if isinstance(x, float) and x <= 1 else 0 for x in c)


def fold_means(v: np.ndarray, folds: np.ndarray, k: int) -> np.ndarray:
    return np.array([v[folds == i].mean() for i in range(k)])


def complexity(c: tuple) -> tuple:
    """Simpler first: no abstract evidence, then a plain max (share 1), then a discount;
    then a weight nearer half and half; then the keyword map's k nearer 10 (ov's old one)."""
    sa, w, k0 = c
    return (0 if sa in (0.0, 1.0) else 1, round(abs(w - 0.5), 3), round(abs(math.log(k0 / 10)), 3))


def one_se_choice(cfg: dict, folds: np.ndarray, k: int, ok=lambda c: True):
    """The simplest config whose mean is within one standard error (over folds) of the best
    and that passes `ok` (issue 19's per-fold floors)."""
    means = {c: float(v.mean()) for c, v in cfg.items()}
    best = max(means, key=means.get)
    se = float(fold_means(cfg[best], folds, k).std(ddof=1) / math.sqrt(k))
    near = [c for c in cfg if means[c] >= means[best] - se and ok(c)] or [best]
    return min(near, key=lambda c: (*complexity(c), -means[c])), best, se


def run_cv(cache: Path, k: int = 5, out: Path | None = None,
           sets: tuple[tuple[str, str], ...] = (("scifact", "train"), ("cosqa-dev", "dev"))) -> dict:
    report: dict = {}
    for name, split in sets:
        st = Set(cache, name, split)
        nq = len(st.qids)
        folds = fold_of(st.qids, k)
        log(f"{name} {split}: {nq} queries, {k} folds")
        K = st.f["K"]
        res: dict = {"curves": {}, "choices": {}, "folds": {}}
        # keywords
        kw_nd = st.ndcg(np.where(K > 0, K, -1.0))
        res["folds"]["keywords"] = fold_means(kw_nd, folds, k).tolist()
        # find: the abstract share
        find_cfg = {sa: st.ndcg(sem_score(st, "P", sa, 0)) for sa in SAS}
        held, ch, curve = cv_grid(find_cfg, folds, k)
        res["folds"]["find"] = fold_means(held, folds, k).tolist()
        res["choices"]["find"] = ch
        res["curves"]["find: abstract share"] = {str(c): v for c, v in curve.items()}
        # hybrid families at each abstract share
        fams: dict[str, dict] = {"lin": {}, "linrel": {}, "adaptive": {}, "rrf": {}, "mm50": {}}
        for sa in SAS:
            sem = sem_score(st, "P", sa, 0)
            fams["rrf"][(sa,)] = st.ndcg(fuse_rrf(sem, K))
            fams["mm50"][(sa,)] = st.ndcg(fuse_mm(sem, K))
            fams["adaptive"][(sa,)] = st.ndcg(fuse_adaptive(st, sem, K))
            for w in WS:
                for k0 in K0S:
                    fams["lin"][(sa, w, k0)] = st.ndcg(fuse_lin(sem, K, w, k0))
                for fl in FLOORS:
                    fams["linrel"][(sa, w, fl)] = st.ndcg(fuse_linrel(sem, K, w, fl))
            log(f"  share {sa} done")
        for fam, cfg in fams.items():
            held, ch, curve = cv_grid(cfg, folds, k)
            res["folds"][fam] = fold_means(held, folds, k).tolist()
            res["choices"][fam] = [list(c) for c in ch]
            res["curves"][fam] = {",".join(map(str, c)): v for c, v in curve.items()}
        # logistic regression on [1, cosine evidence, keyword map], fitted on the other folds
        lr: dict = {}
        for sa in SAS:
            sem = sem_score(st, "P", sa, 0)
            for k0 in K0S:
                kw = kw_map(K, k0)
                m = cands([sem, K], [np.ones_like(K, bool), K > 0], 50)
                z = np.zeros_like(sem)
                for i in range(k):
                    tr = (folds != i)[:, None] & m
                    X = np.stack([np.ones(tr.sum()), sem[tr], kw[tr]], 1)
                    wv = fit_logistic(X, (st.gain[tr] > 0).astype(float))
                    te = folds == i
                    z[te] = wv[0] + wv[1] * sem[te] + wv[2] * kw[te]
                lr[(sa, k0)] = st.ndcg(z)
        held, ch, curve = cv_grid(lr, folds, k)
        res["folds"]["lr"] = fold_means(held, folds, k).tolist()
        res["choices"]["lr"] = [list(c) for c in ch]
        res["curves"]["lr"] = {",".join(map(str, c)): v for c, v in curve.items()}
        # the shipped choice: one-SE rule over the lin family on the whole tuning set
        kw_f = fold_means(kw_nd, folds, k)

        def floors(c):  # on every fold: >= max(find, keywords) - 0.005, >= RRF, >= min-max
            h = fold_means(fams["lin"][c], folds, k)
            return bool((h >= np.maximum(fold_means(find_cfg[c[0]], folds, k), kw_f) - 0.005).all()
                        and (h >= fold_means(fams["rrf"][(c[0],)], folds, k)).all()
                        and (h >= fold_means(fams["mm50"][(c[0],)], folds, k)).all())
        pick, best, se = one_se_choice(fams["lin"], folds, k, floors)
        res["shipped"] = {"pick": list(pick), "best": list(best), "se": se,
                          "mean_pick": float(fams["lin"][pick].mean()), "mean_best": float(fams["lin"][best].mean())}
        sa_p = pick[0]
        res["folds"]["shipped lin"] = fold_means(fams["lin"][pick], folds, k).tolist()
        res["folds"]["find@pick"] = fold_means(find_cfg[sa_p], folds, k).tolist()
        for fam in ("rrf", "mm50"):
            res["folds"][f"{fam}@pick"] = fold_means(fams[fam][(sa_p,)], folds, k).tolist()
        log(f"  shipped lin {pick} mean {res['shipped']['mean_pick']:.4f}; best {best} "
            f"{res['shipped']['mean_best']:.4f} (SE {se:.4f})")
        # the fixed anchors at the shipped abstract share
        for fam, key in (("rrf@0.9", (0.9,)), ("mm50@0.9", (0.9,)), ("adaptive@0.9", (0.9,))):
            res["folds"][fam] = fold_means(fams[fam.split("@")[0]][key], folds, k).tolist()
        report[f"{name}-{split}"] = res
        for fam, v in res["folds"].items():
            v = np.array(v)
            log(f"  {fam:14s} {v.mean():.4f} ± {v.std(ddof=1):.4f}  folds {np.round(v, 3).tolist()}")
    if out:
        out.write_text(json.dumps(report, indent=1))
        out.with_suffix(".md").write_text(cv_markdown(report))
    return report



def floored_near(cfg: dict, folds: np.ndarray, k: int, floors) -> tuple[dict, object, float, list]:
    """(each config's mean, the best, its SE over folds, the configs within one SE of it that
    are at least every per-fold floor in `floors` on every fold)."""
    means = {c: float(v.mean()) for c, v in cfg.items()}
    best = max(means, key=means.get)
    se = float(fold_means(cfg[best], folds, k).std(ddof=1) / math.sqrt(k))
    near = [c for c in cfg if means[c] >= means[best] - se
            and all((fold_means(cfg[c], folds, k) >= f).all() for f in floors)]
    return means, best, se, near


def run_choose(cache: Path, k: int = 5,
               sets: tuple[tuple[str, str], ...] = (("scifact", "train"), ("cosqa-dev", "dev"))) -> dict:
    """The shipped rule, written down before it was run on the whole tuning sets:
    1. the abstract's share: the best mean of `find` over the shares (one constant either way);
    2. at that share, the (w, k) of the lin family that pass issue 19's per-fold floors (>=
       max(find, keywords) - 0.005, >= RRF, >= 0.5/0.5 min-max on every fold) and lie within
       one standard error of the best: the weight nearest half and half, then the best mean.
    Prints each set's pick, its folds, and the curve of k at the picked w."""
    out = {}
    for name, split in sets:
        st = Set(cache, name, split)
        folds = fold_of(st.qids, k)
        K = st.f["K"]
        find = {sa: st.ndcg(sem_score(st, "P", sa)) for sa in SAS}
        sa = max(find, key=lambda x: find[x].mean())
        sem = sem_score(st, "P", sa)
        kw_f = fold_means(st.ndcg(np.where(K > 0, K, -1.0)), folds, k)
        floor = np.maximum(fold_means(find[sa], folds, k), kw_f) - 0.005
        rrf = fold_means(st.ndcg(fuse_rrf(sem, K)), folds, k)
        mm = fold_means(st.ndcg(fuse_mm(sem, K)), folds, k)
        lin = {(w, k0): st.ndcg(fuse_lin(sem, K, w, k0)) for w in WS for k0 in (*K0S, 640.0, 1280.0)}
        means, best, se, near = floored_near(lin, folds, k, (floor, rrf, mm))
        pick = min(near, key=lambda c: (round(abs(c[0] - 0.5), 3), -means[c])) if near else None
        log(f"{name} {split}: share {sa} (find {find[sa].mean():.4f}); best lin {best} {means[best]:.4f} "
            f"(SE {se:.4f}); {len(near)} pass the floors within one SE; pick {pick}"
            + (f" {means[pick]:.4f} folds {np.round(fold_means(lin[pick], folds, k), 3).tolist()}" if pick else ""))
        log(f"  find folds {np.round(fold_means(find[sa], folds, k), 3).tolist()}  kw {np.round(kw_f, 3).tolist()}  "
            f"rrf {np.round(rrf, 3).tolist()}  mm50 {np.round(mm, 3).tolist()}")
        if pick:
            log("  k at w=%s: " % pick[0] + " ".join(f"{k0:g}:{means[(pick[0], k0)]:.4f}" for k0 in (*K0S, 640.0, 1280.0)))
            log("  w at k=%g: " % pick[1] + " ".join(f"{w:g}:{means[(w, pick[1])]:.4f}" for w in WS))
        out[name] = {"share": sa, "pick": pick, "best": best, "se": se}
    return out

CODE_WS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def tree_set(cache: Path, name: str, split: str) -> Set:
    return with_tree(Set(cache, name, split))


def shipped_hybrid(st: Set) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every file's hybrid score under ov.rank as it stands (FIND_FLOOR and KEYWORD_FLOOR
    included), its `find` probability, and whether a branch found it."""
    from ov import rank  # noqa: PLC0415

    ph, pf, pk, present = size_probs(st)
    base = np.where(pf >= rank.FIND_FLOOR, np.maximum(ph, pf), ph)
    return np.where(present, np.where(pk >= rank.KEYWORD_FLOOR, np.maximum(base, pk), base), -1), pf, present


def run_choose_code(cache: Path, k: int = 5, code_set: str = "code-set") -> None:
    """Code's hybrid weight with the keyword term of ov.rank.keyword_term, chosen over two code
    sets at once: CoSQA dev (the whole corpus and its small corpora) and the stdlib set
    (`TreeSet`, prepared into the cache as `code-set`). For each weight the hybrid scale is
    refitted as `sizes` fits it (CoSQA dev, every size), then scored with both floors
    (`shipped_hybrid`). The rule (`_code_rule`), written before it was run: the weights whose
    hybrid is at least max(find, keywords) - 0.005 on every fold of each set that any weight
    passes there (CoSQA dev's fold 3 no weight passes: its `find` is 0.652, the best hybrid
    0.645) and at least `find` - 0.005 at every CoSQA size, within one standard error of the
    best mean over the two sets; the weight nearest half and half, then the best mean.
    Nested: for each fold, the scale refitted without its queries and the same rule run on
    the other folds; the fold's queries scored at the weight it picks."""
    import dataclasses  # noqa: PLC0415

    from ov import rank  # noqa: PLC0415

    cq = size_sets(cache, "cosqa-dev", "dev")
    # its one split: `all` (a TreeSet) or the qrels' (a set written by bench_quality --keep-paths)
    split = next(x for x in json.loads((cache / f"{code_set}-meta.json").read_text())["splits"] if x != "nonsense")
    cs = tree_set(cache, code_set, split)
    labelled = [*((f"CoSQA dev /{p}", st) for p, st in cq), ("stdlib set", cs)]
    folds = {lb: fold_of(st.qids, k) for lb, st in labelled}
    keep = rank.CODE
    # per (weight, held-out fold or None): each set's per-query nDCG, `find`'s and keywords'
    res: dict = {}
    try:
        for w in CODE_WS:
            rank.CODE = dataclasses.replace(keep, w_sem=w, k_bm25=None)
            pairs = [size_pairs(st, "hybrid", 20) for _, st in cq]
            for out in (None, *range(k)):
                fit = [tuple(x[folds[lb] != out] for x in pr) for (lb, _), pr in zip(labelled, pairs)]
                b, a, c = size_fit(fit, [0, 1, 2])
                rank.CODE = dataclasses.replace(rank.CODE, hybrid=(float(a), float(b), float(c)))
                for lb, st in labelled:
                    sc, pf, present = shipped_hybrid(st)
                    kw = st.ndcg(np.where(st.f["K"] > 0, st.f["K"], -1.0))
                    res[(w, out, lb)] = (st.ndcg(sc), st.ndcg(np.where(present, pf, -1)), kw)
                if out is None:
                    log(f"w {w}: hybrid scale {np.round(rank.CODE.hybrid, 3).tolist()}  " + "  ".join(
                        f"{lb} {res[(w, None, lb)][0].mean():.4f} (find {res[(w, None, lb)][1].mean():.4f})"
                        for lb, _ in labelled))
    finally:
        rank.CODE = keep
    pick, report = _code_rule(res, folds, k, None, [lb for lb, _ in labelled])
    log(report)
    held = {lb: [] for lb in ("CoSQA dev /1", "stdlib set")}
    for i in range(k):
        p, _ = _code_rule(res, folds, k, i, [lb for lb, _ in labelled])
        for lb in held:
            held[lb].append(float(res[(p, i, lb)][0][folds[lb] == i].mean()) if p is not None else float("nan"))
        log(f"  nested fold {i}: pick {p}, held out " + "  ".join(f"{lb} {v[-1]:.3f}" for lb, v in held.items()))
    log("  nested mean: " + "  ".join(f"{lb} {np.mean(v):.4f}" for lb, v in held.items()))


def _code_rule(res: dict, folds: dict, k: int, out: int | None, labels: list[str]) -> tuple[float | None, str]:
    """`run_choose_code`'s rule on the folds other than `out` (all when None), each weight's
    scale fitted without `out`."""
    whole = ("CoSQA dev /1", "stdlib set")
    use = [i for i in range(k) if i != out]

    def fm(v, lb):
        return np.array([v[folds[lb] == i].mean() for i in use])

    passes = {}
    for w in CODE_WS:
        for lb in whole:
            h, f, kw = res[(w, out, lb)]
            passes[(w, lb)] = fm(h, lb) >= np.maximum(fm(f, lb), fm(kw, lb)) - 0.005 - 1e-9
    passable = {lb: np.any([passes[(w, lb)] for w in CODE_WS], axis=0) for lb in whole}
    joint = {w: float(np.mean([fm(res[(w, out, lb)][0], lb).mean() for lb in whole])) for w in CODE_WS}
    best = max(joint, key=joint.get)
    se = float(np.std(np.mean([fm(res[(best, out, lb)][0], lb) for lb in whole], axis=0), ddof=1) / math.sqrt(len(use)))

    def sizes_ok(w):
        return all(fm(res[(w, out, lb)][0], lb).mean() >= fm(res[(w, out, lb)][1], lb).mean() - 0.005
                   for lb in labels if lb.startswith("CoSQA"))
    ok = [w for w in CODE_WS if joint[w] >= joint[best] - se and sizes_ok(w)
          and all(passes[(w, lb)][passable[lb]].all() for lb in whole)]
    pick = min(ok, key=lambda w: (round(abs(w - 0.5), 3), -joint[w])) if ok else None
    report = ("mean of the two sets: " + " ".join(f"{w:g}:{joint[w]:.4f}" for w in CODE_WS)
              + f"\nbest {best} (SE {se:.4f}); pass the floors within one SE: {ok}; pick {pick}\n"
              + "\n".join(f"  w {w:g}: " + "  ".join(
                  f"{lb} folds {''.join('.' if x else 'x' for x in passes[(w, lb)])}" for lb in whole)
                  + ("" if sizes_ok(w) else "  (under find - 0.005 at a CoSQA size)") for w in CODE_WS))
    return pick, report


def fuse_ceil(sem, K, M, w, p):
    """z = w * cosine + (1 - w) * (bm25 / ceiling) ** p: keyword evidence as the share of
    the query's bm25 ceiling (`ceiling`) a file reaches, whatever the corpus's size."""
    e = np.clip(K / np.maximum(M, 1e-9)[:, None], 0, 1)
    return w * np.maximum(sem, 0) + (1 - w) * e ** p


PS = (0.5, 0.75, 1.0, 1.5, 2.0)


def run_ceil(cache: Path, k: int = 5, sa: float = 0.9,
             sets: tuple[tuple[str, str], ...] = (("scifact", "train"), ("cosqa-dev", "dev"),
                                                    ("scifact", "test"))) -> None:
    """The keyword evidence bm25 / ceiling against the shipped bm25 / (bm25 + k): per set,
    the (w, p) grid's means, the one-SE pick under issue 19's per-fold floors, nested CV,
    and one (w, p) for every kind (the best mean over the tuning sets; test reported)."""
    grids = {}
    for name, split in sets:
        st = Set(cache, name, split)
        folds = fold_of(st.qids, k)
        K, M = st.f["K"], st.M
        sem = sem_score(st, "P", sa)
        find = st.ndcg(sem)
        kw_f = fold_means(st.ndcg(np.where(K > 0, K, -1.0)), folds, k)
        floor = np.maximum(fold_means(find, folds, k), kw_f) - 0.005
        rrf = fold_means(st.ndcg(fuse_rrf(sem, K)), folds, k)
        mm = fold_means(st.ndcg(fuse_mm(sem, K)), folds, k)
        shipped = (0.5, 1280.0) if st.kind == "code" else (0.5, 40.0)
        lin = st.ndcg(fuse_lin(sem, K, *shipped))
        grid = {(w, p): st.ndcg(fuse_ceil(sem, K, M, w, p)) for w in WS for p in PS}
        grids[(name, split)] = grid
        means, best, se, near = floored_near(grid, folds, k, (floor, rrf, mm))
        pick = min(near, key=lambda c: (round(abs(c[0] - 0.5), 3), abs(c[1] - 1), -means[c])) if near else None
        held, _, _ = cv_grid(grid, folds, k)
        log(f"{name} {split} ({st.kind}, {len(st.qids)} q): find {find.mean():.4f}  kw {kw_f.mean():.4f}  "
            f"rrf {rrf.mean():.4f}  mm50 {mm.mean():.4f}  shipped lin{shipped} {lin.mean():.4f} "
            f"folds {np.round(fold_means(lin, folds, k), 3).tolist()}")
        log(f"  ceil best {best} {means[best]:.4f} (SE {se:.4f}); nested CV {held.mean():.4f}; "
            f"{len(near)} pass floors within 1 SE; pick {pick}"
            + (f" {means[pick]:.4f} folds {np.round(fold_means(grid[pick], folds, k), 3).tolist()}" if pick else ""))
        log(f"  floors: best branch-0.005 {np.round(floor, 3).tolist()} rrf {np.round(rrf, 3).tolist()} "
            f"mm50 {np.round(mm, 3).tolist()}")
        for p in PS:
            log(f"  p={p:g}: " + " ".join(f"{w:g}:{means[(w, p)]:.4f}" for w in WS))
    tune = [g for (n, s), g in grids.items() if s != "test"]
    joint = {c: float(np.mean([g[c].mean() for g in tune])) for c in tune[0]}
    jb = max(joint, key=joint.get)
    log(f"one (w, p) for every kind: best {jb} mean of tuning sets {joint[jb]:.4f}: "
        + "  ".join(f"{n}-{s} {g[jb].mean():.4f}" for (n, s), g in grids.items()))


def unique_prep(dataset: str, workdir: Path, out: Path) -> None:
    """Each prepared query's count of words with an index term (a word no file holds counts)
    and the index's keyword rows, for `run_unique`."""
    from ov.bm25 import fts_averages  # noqa: PLC0415
    from ov.query import keyword_plan  # noqa: PLC0415
    from ov.store.text import or_phrases  # noqa: PLC0415

    bq, base, d, corpus, ext, back, store = _open(dataset, workdir)
    meta = json.loads((out / f"{d.name}-meta.json").read_text())
    rows, _ = fts_averages(store.fts_averages_block())
    for split, sp in meta["splits"].items():
        n = []
        for q in sp["queries"]:
            plan = keyword_plan(q)
            words = or_phrases(plan.fts) if plan.fts else []
            terms = store._word_terms(words) if words else {}
            n.append(sum(1 for w in words if terms.get(w)))
        np.save(out / f"{d.name}-{split}-nw.npy", np.array(n, np.float32))
    (out / f"{d.name}-rows.json").write_text(json.dumps({"rows": rows}))
    store.close()


def word_share(st: Set) -> np.ndarray:
    """Each file's keyword evidence over the ceiling of the query's unique words (`run_unique`)."""
    from ov.bm25 import BM25_K1, bm25_idf  # noqa: PLC0415

    n_rows = json.loads((st.cache / f"{st.name}-rows.json").read_text())["rows"]
    nw = np.load(st.cache / f"{st.name}-{st.split}-nw.npy")
    return np.clip(st.f["K"] / np.maximum(nw * bm25_idf(n_rows, 1) * (BM25_K1 + 1), 1e-9)[:, None], 0, 1)


def run_unique(cache: Path, k: int = 5, sa: float = 0.9) -> None:
    """Keyword evidence over the ceiling of unique words, e = bm25 / (n * idf1(N) * (k1 + 1)):
    n the query's words, idf1(N) the idf of a word in one row of N. The (w, p) grid per set."""
    for name, split in (("scifact", "train"), ("cosqa-dev", "dev"), ("scifact", "test")):
        st = Set(cache, name, split)
        folds = fold_of(st.qids, k)
        sem, K = sem_score(st, "P", sa), st.f["K"]
        E = word_share(st)
        kw_f = fold_means(st.ndcg(np.where(K > 0, K, -1.0)), folds, k)
        floor = np.maximum(fold_means(st.ndcg(sem), folds, k), kw_f) - 0.005
        grid = {(w, p): st.ndcg(w * np.maximum(sem, 0) + (1 - w) * E ** p) for w in WS for p in PS}
        means, best, se, near = floored_near(grid, folds, k, (floor,))
        log(f"{name} {split}: best {best} {means[best]:.4f} (SE {se:.4f}); {len(near)} within one SE "
            f"pass max(find, keywords) - 0.005 on every fold")
        for p in PS:
            log(f"  p={p:g}: " + " ".join(f"{w:g}:{means[(w, p)]:.4f}" for w in WS))


def small_prep(dataset: str, workdir: Path, parts: int, out: Path, seed: int = 0) -> None:
    """Small corpora from a big one, for how keyword evidence holds as a tree shrinks: the
    files split at random into `parts` folders, each indexed by `ov index --no-embed` (the
    cosines do not depend on the corpus: the cache's P and A are reused); each query is
    asked in the part that holds its most relevant file, and its keyword branch (bm25 and
    ceiling) read there. Saves K and M per split, and each file's part."""
    import random  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    from ov import engine  # noqa: PLC0415
    from ov.store import Store  # noqa: PLC0415

    meta = json.loads((out / f"{Path(dataset).name}-meta.json").read_text())
    name, paths = meta["dataset"], meta["paths"]
    order = list(range(len(paths)))
    random.Random(seed).shuffle(order)
    part = np.zeros(len(paths), np.int32)
    for j, i in enumerate(order):
        part[i] = j % parts
    base = out / f"small-{name}-{parts}"  # beside the cache, outside the project
    for j in range(parts):
        d = base / f"p{j:03d}"
        if not (d / ".ov" / "index.db").exists():
            d.mkdir(parents=True, exist_ok=True)
            for i in np.where(part == j)[0]:
                dst = d / paths[i]
                if not dst.exists():
                    os.link(workdir / "docs" / paths[i], dst)
            subprocess.run([sys.executable, "-m", "ov", "index", "--no-embed"], cwd=d, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    np.save(out / f"{name}-small{parts}-part.npy", part)
    pos = {p: i for i, p in enumerate(paths)}
    stores = {}
    for split, sp in meta["splits"].items():
        if split == "nonsense":
            continue
        docs = {d: i for i, d in enumerate(meta["docs"])}
        K = np.zeros((len(sp["qids"]), len(paths)), np.float32)
        M = np.zeros(len(sp["qids"]), np.float32)
        home = np.full(len(sp["qids"]), -1, np.int32)
        for n, (text, rels) in enumerate(zip(sp["queries"], sp["qrels"])):
            best = sorted((r, d) for d, r in rels.items() if d in docs and r > 0)
            if not best:
                continue
            j = int(part[docs[best[-1][1]]])
            home[n] = j
            if j not in stores:
                stores[j] = Store.open(base / f"p{j:03d}" / ".ov" / "index.db")
            st = stores[j]
            req = engine.SearchRequest(query=text, search_type="keywords")
            for c in engine._branches(st, req, True, False, None, DEPTH, engine.query_tree(st, text))[0]["keywords"]:
                b = c.branches["keywords"]
                i = pos[c.path]
                K[n, i] = max(K[n, i], b.get("bm25", b["raw"]))
            M[n] = _ceiling(st, text)
        np.save(out / f"{name}-{split}-small{parts}-K.npy", K)
        np.save(out / f"{name}-{split}-small{parts}-M.npy", M)
        np.save(out / f"{name}-{split}-small{parts}-home.npy", home)
        log(f"{name} {split}: {len(home)} queries in {parts} parts of ~{len(paths) // parts} files")
    for st in stores.values():
        st.close()


def small_set(cache: Path, name: str, split: str, parts: int) -> Set:
    """The Set of `split` asked in the small corpora of `small_prep`: each query sees only
    its part's files (the others score nothing and count no gain)."""
    st = Set(cache, name, split)
    part = np.load(cache / f"{name}-small{parts}-part.npy")
    home = np.load(cache / f"{name}-{split}-small{parts}-home.npy")
    K = np.load(cache / f"{name}-{split}-small{parts}-K.npy")
    M = np.load(cache / f"{name}-{split}-small{parts}-M.npy")
    keep = home >= 0
    inside = part[None, :] == home[keep][:, None]
    st.qids = [q for q, k in zip(st.qids, keep) if k]
    st.f = {k: np.where(inside, v[keep], -1.0 if k in "PA" else 0.0) for k, v in st.f.items()}
    st.f["K"] = np.where(inside, K[keep], 0.0)
    st.M = M[keep]
    st.gain = np.where(inside, st.gain[keep], 0.0)
    st.idcg = np.array([sum(x / math.log2(i + 2) for i, x in enumerate(sorted(g[g > 0], reverse=True)[:10]))
                        for g in st.gain])
    return st


def run_small(cache: Path, parts: int, sa: float = 0.9) -> None:
    """The shipped map against the ceiling evidence on the small corpora (`small_prep`)."""
    for name, split in (("scifact", "train"), ("scifact", "test"), ("cosqa-dev", "dev")):
        try:
            st = small_set(cache, name, split, parts)
        except FileNotFoundError:
            continue
        sem = sem_score(st, "P", sa)
        K = st.f["K"]
        k0 = 1280.0 if st.kind == "code" else 40.0
        rows = {"find": st.ndcg(sem), "keywords": st.ndcg(np.where(K > 0, K, -1.0)),
                "rrf": st.ndcg(fuse_rrf(sem, K)), "mm50": st.ndcg(fuse_mm(sem, K)),
                f"lin 0.5,{k0:g} (shipped)": st.ndcg(fuse_lin(sem, K, 0.5, k0))}
        for w, p in ((0.5, 1.0), (0.45, 1.0), (0.55, 1.0), (0.95, 2.0), (1.0, 1.0)):
            rows[f"ceil {w},{p}"] = st.ndcg(fuse_ceil(sem, K, st.M, w, p))
        for w in (0.5, 0.7, 0.9):
            for k_ in (10.0, 40.0, 160.0):
                rows[f"lin {w},{k_:g}"] = st.ndcg(fuse_lin(sem, K, w, k_))
        log(f"{name} {split}: {len(st.qids)} queries, {parts} corpora of ~{st.gain.shape[1] // parts} files")
        for k, v in rows.items():
            log(f"  {k:24s} {v.mean():.4f}")


# ---- the score's scale as the tree shrinks (`sizes`) ------------------------------------------


SIZE_PARTS = {"scifact": (10, 50, 250), "cosqa-dev": (10, 100)}  # the corpora `small` cut


def plan_terms(text: str) -> int:
    """The terms a query's keyword plan searches (ov.query.keyword_plan): words, CJK runs."""
    from ov.query import keyword_plan  # noqa: PLC0415
    from ov.store.text import or_phrases  # noqa: PLC0415

    plan = keyword_plan(text)
    return (len(or_phrases(plan.fts)) if plan.fts else 0) + (len(or_phrases(plan.trigram)) if plan.trigram else 0) \
        + len(plan.short)


def size_sets(cache: Path, name: str, split: str) -> list[tuple[int, Set]]:
    """The split on the whole corpus and on each of its small corpora, each Set knowing its
    corpus's files, keyword rows and its queries' plan terms."""
    meta = json.loads((cache / f"{name}-meta.json").read_text())
    terms = np.array([plan_terms(q) for q in meta["splits"][split]["queries"]], np.float32)
    rows = json.loads((cache / f"{name}-rows.json").read_text())["rows"]
    out = []
    for parts in (1, *SIZE_PARTS[name]):
        st = Set(cache, name, split) if parts == 1 else small_set(cache, name, split, parts)
        keep = np.load(cache / f"{name}-{split}-small{parts}-home.npy") >= 0 if parts > 1 else slice(None)
        st.terms, st.files, st.rows = terms[keep], st.f["P"].shape[1] / parts, rows / parts
        out.append((parts, st))
    return out


def size_evidence(st: Set, mode: str, sa: float = 0.9, prior: float | None = None):
    """(ranking score, -9 where the file is not in the branch; the evidence the score's
    scale reads): the cosine, the keyword share e = bm25 / ((terms + prior) * idf1(rows) *
    (k1 + 1)) (prior: rank.SHARE_PRIOR_TERMS unless given), or the hybrid's fused z of the
    shipped profile."""
    from ov import rank  # noqa: PLC0415
    from ov.bm25 import BM25_K1, bm25_idf  # noqa: PLC0415

    sem, K = sem_score(st, "P", sa), st.f["K"]
    if mode == "find":
        return np.where(sem > -1, sem, -9.0), sem
    if mode == "keywords":
        prior = rank.SHARE_PRIOR_TERMS if prior is None else prior
        e = K / np.maximum((st.terms + prior) * bm25_idf(int(st.rows), 1) * (BM25_K1 + 1), 1e-9)[:, None]
        return np.where(K > 0, K, -9.0), np.clip(e, 0, 1)
    sc = rank.CODE if st.kind == "code" else rank.PROSE
    z = sc.w_sem * np.maximum(sem, 0) + (1 - sc.w_sem) * kw_evidence(st, K, sc)
    return np.where((sem > -1) | (K > 0), z, -9.0), z


def with_tree(st: Set) -> Set:
    """A whole corpus's Set given what a score reads of its tree (its files, keyword rows and
    queries' terms), as `size_sets` gives each size."""
    if not hasattr(st, "terms"):
        meta = json.loads((st.cache / f"{st.name}-meta.json").read_text())
        sp = meta["splits"][st.split]
        terms = {q: plan_terms(t) for q, t in zip(sp["qids"], sp["queries"])}
        st.terms = np.array([terms[q] for q in st.qids], np.float32)
        st.files, st.rows = st.f["K"].shape[1], json.loads((st.cache / f"{st.name}-rows.json").read_text())["rows"]
    return st


def kw_evidence(st: Set, K: np.ndarray, sc) -> np.ndarray:
    """The keyword term a kind's hybrid fuses (ov.rank.keyword_term): the map bm25 / (bm25 +
    k), or with no k the keywords scale on the keyword share read at rank.REFERENCE_FILES
    (0 where the branch did not find the file)."""
    from ov import rank  # noqa: PLC0415

    if sc.k_bm25 is not None:
        return kw_map(K, sc.k_bm25)
    _, e = size_evidence(with_tree(st), "keywords")
    a, b, c = sc.keywords
    return np.where(K > 0, sigmoid(a * e + b + c * math.log(rank.REFERENCE_FILES)), 0.0)


def size_pairs(st: Set, mode: str, depth: int, rows=None, prior: float | None = None):
    """Each query's top `depth` files: (in the branch, relevant, [1, evidence, ln files])."""
    order, x = size_evidence(st, mode, prior=prior)
    t = st.top(order, depth)
    inb = np.take_along_axis(order, t, axis=1) > -9
    rel = np.take_along_axis(st.gain, t, axis=1) > 0
    xx = np.take_along_axis(x, t, axis=1)
    X = np.stack([np.ones_like(xx), xx, np.full_like(xx, math.log(st.files))], -1)
    if rows is not None:
        inb, rel, X = inb[rows], rel[rows], X[rows]
    return inb, rel, X


def size_fit(chunks, cols) -> np.ndarray:
    F = np.concatenate([X[inb][:, cols] for inb, rel, X in chunks])
    y = np.concatenate([rel[inb] for inb, rel, X in chunks]).astype(float)
    return fit_logistic(F, y, l2=1e-4)


def size_report(p: np.ndarray, rel: np.ndarray) -> tuple[float, float, float, float]:
    """ECE of the first 10 hits, ECE of the first hit, the first hit's mean p and relevance."""
    return (reliability(p[:, :10].ravel(), rel[:, :10].ravel())[1], reliability(p[:, 0], rel[:, 0])[1],
            float(p[:, 0].mean()), float(rel[:, 0].mean()))


# the scale of profile `2026.12-calibrated2`, without the tree's size: (a, b) of the cosine,
# of the keyword map bm25 / (bm25 + 40), and of the hybrid's z per kind
CALIBRATED2 = {"find": (14.979, -11.860), "keywords": (14.768, -7.524),
               "prose": (18.406, -10.922), "code": (29.954, -12.397)}


def old_scores(st: Set, mode: str) -> np.ndarray:
    """Every file's score under CALIBRATED2 (its FIND_FLOOR rule included)."""
    if mode == "keywords":
        a, b = CALIBRATED2["keywords"]
        return sigmoid(a * kw_map(st.f["K"], 40.0) + b)
    fa, fb = CALIBRATED2["find"]
    cos = sem_score(st, "P", 0.9)
    pf = sigmoid(fa * cos + fb)
    if mode == "find":
        return pf
    _, z = size_evidence(st, mode)
    a, b = CALIBRATED2["code" if st.kind == "code" else "prose"]
    p = sigmoid(a * z + b)
    return np.where((pf >= 0.5) & (pf > p) & (cos > -1), pf, p)


def calibrated2(st: Set, mode: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `depth` hits' scores under CALIBRATED2 and their labels."""
    order, _ = size_evidence(st, mode)
    t = st.top(order, depth)
    inb = np.take_along_axis(order, t, axis=1) > -9
    rel = np.take_along_axis(st.gain, t, axis=1) > 0
    return np.where(inb, np.take_along_axis(old_scores(st, mode), t, axis=1), 0), rel


SHARE_PRIORS = (0, 1, 2, 3, 4, 6, 8, 12)


def run_share_prior(tr, cq, k: int = 5, depth: int = 20) -> dict:
    """The keyword share's prior terms by cross-validation: for each prior, the log loss of
    the first `depth` hits of each tuning set's query folds (every size), the scale fitted on
    the other folds and the other set; the mean over folds with its standard error."""
    def log_loss(p, y):
        p = np.clip(p, 1e-6, 1 - 1e-6)
        return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())

    out = {}
    for prior in SHARE_PRIORS:
        sets = [[size_pairs(st, "keywords", depth, prior=prior) for _, st in ss] for ss in (tr, cq)]
        folds = [[fold_of(st.qids, k) for _, st in ss] for ss in (tr, cq)]
        row = []
        for j in (0, 1):
            losses = []
            for i in range(k):
                w = size_fit(sets[1 - j] + [tuple(a[f != i] for a in c) for c, f in zip(sets[j], folds[j])], [0, 1, 2])
                held = [tuple(a[f == i] for a in c) for c, f in zip(sets[j], folds[j])]
                p = np.concatenate([sigmoid(X @ w)[inb] for inb, rel, X in held])
                y = np.concatenate([rel[inb] for inb, rel, X in held]).astype(float)
                losses.append(log_loss(p, y))
            row.append((float(np.mean(losses)), float(np.std(losses) / math.sqrt(k))))
        out[prior] = row
        log(f"share prior {prior:2d}: log loss SciFact train {row[0][0]:.4f} (SE {row[0][1]:.4f}), "
            f"CoSQA dev {row[1][0]:.4f} (SE {row[1][1]:.4f})")
    return out


KEYWORD_FLOORS = (0.5, 0.7, 0.8, 0.9, 0.95, 1.01)  # 1.01: no keyword floor


def size_probs(st: Set) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The shipped scale's hybrid (before its floors), `find` and keywords probabilities
    of every file, and whether a branch found it."""
    from ov import rank  # noqa: PLC0415

    sc = rank.CODE if st.kind == "code" else rank.PROSE
    ln = math.log(st.files)
    sem, K = sem_score(st, "P", 0.9), st.f["K"]
    _, z = size_evidence(st, "hybrid")
    _, e = size_evidence(st, "keywords")
    ph = sigmoid(sc.hybrid[0] * z + sc.hybrid[1] + sc.hybrid[2] * ln)
    pf = np.where(sem > -1, sigmoid(sc.find[0] * sem + sc.find[1] + sc.find[2] * ln), 0)
    pk = np.where(K > 0, sigmoid(sc.keywords[0] * e + sc.keywords[1] + sc.keywords[2] * ln), 0)
    return ph, pf, pk, (sem > -1) | (K > 0)


FUSION_SETS = (("scifact", "train"), ("cosqa-dev", "dev"), ("code-set", "test"), ("scifact", "test"))


def run_fusions(cache: Path, k: int = 5) -> None:
    """Other fusions against the shipped hybrid (`shipped_hybrid`), per set: each one's mean
    nDCG@10 and, on every fold, whether it is at least max(find, keywords) - 0.005 (1st
    mark), RRF (2nd) and the 50/50 min-max (3rd), '.' yes, 'x' no. Families: the min-max mix
    at weight w; the shipped z plus mu times bm25 over the query's best bm25 (a relative
    keyword term); a floor at the lower of the branches' own probabilities, or at their
    geometric mean, for a file both found; a logistic regression over the logits of the
    two probabilities and a keyword-absent mark (stacked), fitted on the other folds. SciFact
    test is printed for reporting, never for a choice."""
    from ov import rank  # noqa: PLC0415

    def logit(p):
        p = np.clip(p, 1e-6, 1 - 1e-6)
        return np.log(p / (1 - p))

    for name, split in FUSION_SETS:
        if not (cache / f"{name}-meta.json").exists():
            log(f"{name}: not in the cache; skipped")
            continue
        st = tree_set(cache, name, split)
        folds = fold_of(st.qids, k)
        sem, K = sem_score(st, "P", 0.9), st.f["K"]
        fm = {lb: fold_means(st.ndcg(x), folds, k) for lb, x in (
            ("find", sem), ("kw", np.where(K > 0, K, -1.0)), ("rrf", fuse_rrf(sem, K)), ("mm", fuse_mm(sem, K)))}

        def mark(v):
            f = fold_means(v, folds, k)
            return "".join("." if ok else "x" for ok in ((f >= np.maximum(fm["find"], fm["kw"]) - 0.005).all(),
                                                         (f >= fm["rrf"]).all(), (f >= fm["mm"]).all()))
        h, _, _ = shipped_hybrid(st)
        ph, pf, pk, present = size_probs(st)
        sc = rank.CODE if st.kind == "code" else rank.PROSE
        z = sc.w_sem * np.maximum(sem, 0) + (1 - sc.w_sem) * kw_evidence(st, K, sc)
        best = K.max(axis=1, keepdims=True)
        rel = np.where(best > 0, K / np.maximum(best, 1e-9), 0)
        both = (pf > 0) & (K > 0)
        X = [logit(pf), np.where(K > 0, logit(pk), 0.0), (K <= 0).astype(float)]
        m = cands([sem, K], [np.ones_like(K, bool), K > 0], 50)
        stacked = np.zeros_like(sem)
        for i in range(k):
            tr = (folds != i)[:, None] & m
            w = fit_logistic(np.stack([np.ones(tr.sum()), *(x[tr] for x in X)], 1), (st.gain[tr] > 0).astype(float))
            stacked[folds == i] = (w[0] + sum(wi * x for wi, x in zip(w[1:], X)))[folds == i]
        rows = [("find", st.ndcg(sem)), ("keywords", st.ndcg(np.where(K > 0, K, -1.0))), ("shipped hybrid", st.ndcg(h)),
                ("RRF k=60", st.ndcg(fuse_rrf(sem, K))), ("min-max 50/50", st.ndcg(fuse_mm(sem, K)))]
        rows += [(f"min-max w={w}", st.ndcg(fuse_mm(sem, K, w))) for w in (0.3, 0.4, 0.6, 0.7, 0.8, 0.9)]
        rows += [(f"z + {mu} relative bm25", st.ndcg(z + mu * rel)) for mu in (0.05, 0.1, 0.2)]
        rows += [("floor: lower branch", st.ndcg(np.where(both, np.maximum(h, np.minimum(pf, pk)), h))),
                 ("floor: geometric mean", st.ndcg(np.where(both, np.maximum(h, np.sqrt(pf * pk)), h))),
                 ("stacked logits (CV)", st.ndcg(np.where(present, stacked, -99)))]
        log(f"{name} {split} ({len(st.qids)} queries)")
        for lb, v in rows:
            log(f"  {lb:24s} {v.mean():.4f} {mark(v)}  folds {' '.join(f'{x:.3f}' for x in fold_means(v, folds, k))}")


RULE_SETS = (("scifact", "train"), ("cosqa-dev", "dev"), ("scifact", "test"))


def _rule_rows(st: Set) -> dict[str, np.ndarray]:
    """Per-query nDCG@10 of the branches, the shipped hybrid and the two anchors."""
    sem, K = sem_score(st, "P", 0.9), st.f["K"]
    return {"find": st.ndcg(sem), "keywords": st.ndcg(np.where(K > 0, K, -1.0)),
            "hybrid": st.ndcg(shipped_hybrid(st)[0]), "RRF": st.ndcg(fuse_rrf(sem, K)),
            "min-max 50/50": st.ndcg(fuse_mm(sem, K))}


def _rule_families(st: Set):
    """(label, scores) of the fusions that keep one absolute score a file (no query's best,
    no ranks): the z of ov.rank with a prose keyword map bm25 / (bm25 + k) (`fuse_lin`); the
    keyword share over the query's words (`run_unique`) at a power; the cosine squared; a
    product term, cosine times the keyword map."""
    sem, K = sem_score(st, "P", 0.9), st.f["K"]
    c = np.maximum(sem, 0)
    E = word_share(st)
    for w in WS:
        for k0 in K0S:
            yield f"map w={w} k={k0:g}", fuse_lin(sem, K, w, k0)
        for p in (0.5, 0.75, 1.0):
            yield f"share w={w} p={p}", w * c + (1 - w) * E ** p
    for w in (0.45, 0.5, 0.55, 0.6):
        for k0 in (10.0, 20.0, 40.0):
            yield f"cosine^2 w={w} k={k0:g}", w * 2 * c ** 2 + (1 - w) * kw_map(K, k0)
    for lam in (0.5, 1.0, 2.0, 4.0):
        yield f"cosine x map lam={lam}", c + lam * c * kw_map(K, 40.0)


def _rule_margin(v: np.ndarray, rows: dict, folds: np.ndarray, k: int) -> tuple[float, float, float]:
    """The worst fold's margin over max(find, keywords) - 0.005, over RRF, over min-max."""
    f = fold_means(v, folds, k)
    fm = {lb: fold_means(x, folds, k) for lb, x in rows.items()}
    return (float((f - np.maximum(fm["find"], fm["keywords"]) + 0.005).min()),
            float((f - fm["RRF"]).min()), float((f - fm["min-max 50/50"]).min()))


def run_rule(cache: Path, k: int = 5) -> None:
    """Issue 19's per-fold rule, measured: each set's rankings (mean, SD of the fold means,
    the folds); the hybrid's per-fold difference from each anchor and branch with its
    paired standard error; how the two anchors fare against each other; and, over every
    family of absolute fusions (`_rule_families`), the best mean and the best worst-fold
    margin over min-max. SciFact test is printed for the record, never chosen on."""
    for name, split in RULE_SETS:
        st = tree_set(cache, name, split)
        folds = fold_of(st.qids, k)
        rows = _rule_rows(st)
        log(f"{name} {split} ({len(st.qids)} queries): mean, SD of the fold means, folds")
        for lb, v in rows.items():
            f = fold_means(v, folds, k)
            log(f"  {lb:14s} {v.mean():.4f} ± {f.std(ddof=1):.3f}  {' '.join(f'{x:.3f}' for x in f)}")
        for lb in ("find", "keywords", "RRF", "min-max 50/50"):
            d = rows["hybrid"] - rows[lb]
            log(f"  hybrid - {lb:14s} " + " ".join(
                f"{d[folds == i].mean():+.4f}±{d[folds == i].std(ddof=1) / math.sqrt((folds == i).sum()):.4f}"
                for i in range(k)) + f"  all {d.mean():+.4f}±{d.std(ddof=1) / math.sqrt(len(d)):.4f}")
        d = rows["min-max 50/50"] - rows["RRF"]
        log("  min-max - RRF  " + " ".join(f"{d[folds == i].mean():+.4f}" for i in range(k)))
        if st.kind == "code":
            continue
        res = [(lb, float(nd.mean()), *_rule_margin(nd, rows, folds, k))
               for lb, v in _rule_families(st) for nd in (st.ndcg(v),)]
        best = max(res, key=lambda r: r[1])
        safest = max(res, key=lambda r: r[4])
        log(f"  {len(res)} absolute fusions; best mean {best[0]} {best[1]:.4f} (worst-fold margins: branches "
            f"{best[2]:+.4f}, RRF {best[3]:+.4f}, min-max {best[4]:+.4f}); best worst-fold margin over "
            f"min-max {safest[0]} {safest[1]:.4f} ({safest[4]:+.4f}); "
            f"{sum(r[2] >= 0 and r[3] >= 0 and r[4] >= 0 for r in res)} pass every fold")


def run_first_floor(cache: Path, k: int = 5, files_now: int = 64) -> None:
    """A first answer's hybrid, simulated from the cache: no vector stored, the search
    computing the cosines of its `files_now` best keyword files (`ov.engine._VectorsNow`;
    here each file's passage and abstract evidence, so the weighed files are if anything
    better served than by the CLI). The other keyword hits are scored (a) at their
    keywords-only probability, the floor `rank.fuse` gave a hit still waiting for its
    vector, or (b) fused with an imputed cosine: none, or the median, mean or least of the
    weighed files' cosines. nDCG@10 with the paired difference against (a)."""
    from ov import rank  # noqa: PLC0415

    for name, split in FUSION_SETS:
        if not (cache / f"{name}-meta.json").exists():
            log(f"{name}: not in the cache; skipped")
            continue
        st = tree_set(cache, name, split)
        sc = rank.CODE if st.kind == "code" else rank.PROSE
        ln = math.log(st.files)
        sem, K = sem_score(st, "P", 0.9), st.f["K"]
        kwe = kw_evidence(st, K, sc)
        _, pf, pk, _ = size_probs(st)

        def fused(cos):  # the shipped hybrid's probability (`size_probs`' ph) at another cosine
            z = sc.w_sem * np.maximum(cos, 0) + (1 - sc.w_sem) * kwe
            return sigmoid(sc.hybrid[0] * z + sc.hybrid[1] + sc.hybrid[2] * ln)

        def floored(p):  # rank.fuse's floors: a fair `find` probability, a strong keyword one
            return np.where(pk >= rank.KEYWORD_FLOOR, np.maximum(p, pk), p)

        now = np.zeros_like(K, bool)
        np.put_along_axis(now, np.argsort(-K, axis=1, kind="stable")[:, :files_now], True, axis=1)
        now &= K > 0
        rest = (K > 0) & ~now
        weighed = floored(np.where(pf >= rank.FIND_FLOOR, np.maximum(fused(sem), pf), fused(sem)))
        rows = {"kw-only floor (rank.fuse's unread)": np.where(now, weighed, np.where(rest, np.maximum(fused(0 * sem), pk), -1))}
        cos_now = np.where(now, sem, np.nan)
        for label, f in (("no cosine", None), ("median", np.nanmedian), ("mean", np.nanmean), ("least", np.nanmin)):
            with np.errstate(all="ignore"):
                imp = 0 * sem if f is None else np.broadcast_to(np.nan_to_num(f(cos_now, axis=1, keepdims=True)), sem.shape)
            rows[f"fused, {label}" + (" imputed" if f is not None else "")] = np.where(now, weighed, np.where(rest, floored(fused(imp)), -1))
        rows["all vectors stored (shipped hybrid)"] = shipped_hybrid(st)[0]
        rows["keywords alone"] = np.where(K > 0, K, -1.0)
        folds = fold_of(st.qids, k)
        base = st.ndcg(next(iter(rows.values())))
        log(f"{name} {split} ({len(st.qids)} queries), first answer weighing {files_now} files")
        for label, sc_ in rows.items():
            v = st.ndcg(sc_)
            d = v - base
            log(f"  {label:38s} {v.mean():.4f}  {d.mean():+.4f} ({d.std(ddof=1) / math.sqrt(len(d)):.4f} SE)  "
                f"folds {' '.join(f'{x:.3f}' for x in fold_means(v, folds, k))}")


def run_floors(sets: list[tuple[str, list[tuple[int, Set]]]]) -> dict:
    """nDCG@10 of the hybrid under each keyword floor (its keywords-only probability kept
    from the floor up), FIND_FLOOR kept, at every corpus size; beside it the hybrid under
    the scale before (`calibrated2`, its FIND_FLOOR included) and `find`."""
    from ov import rank  # noqa: PLC0415

    out = {}
    for label, sized in sets:
        for parts, st in sized:
            ph, pf, pk, present = size_probs(st)
            base = np.where(pf >= rank.FIND_FLOOR, np.maximum(ph, pf), ph)
            row = {f"{t:g}": float(st.ndcg(np.where(present, np.where(pk >= t, np.maximum(base, pk), base), -1)).mean())
                   for t in KEYWORD_FLOORS}
            row["calibrated2"] = float(st.ndcg(np.where(present, old_scores(st, "hybrid"), -1)).mean())
            row["find"] = float(st.ndcg(np.where(present, pf, -1)).mean())
            out[(label, parts)] = row
            log(f"{label} /{parts}: " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()))
    return out


def run_sizes(cache: Path, k: int = 5, depth: int = 20) -> dict:
    """The score's scale refitted with the tree's size (issue 14): p = sigmoid(a*x + c*ln
    files + b), x the branch's evidence (`size_evidence`), fitted by Platt scaling on the
    top `depth` hits of the tuning sets asked on the whole corpora and on the small corpora
    cut from them (`small`), each size counted once. `find` and keywords one fit over both
    sets, the hybrid one per kind, as the shipped scale. Reports, against the fit without
    the size (x alone on the same pool) and the shipped constants, the calibration on
    SciFact test at each size and out of fold on CoSQA dev, and nonsense queries' top score."""
    tr, te, cq = (size_sets(cache, *s) for s in (("scifact", "train"), ("scifact", "test"), ("cosqa-dev", "dev")))
    rep: dict = {"share_prior": run_share_prior(tr, cq, k, depth)}
    rep["floors"] = run_floors([("SciFact train", tr), ("SciFact test", te), ("CoSQA dev", cq)])
    for mode in ("find", "keywords", "hybrid"):
        pooled = mode != "hybrid"
        for label, cols in (("x", [0, 1]), ("x+ln files", [0, 1, 2])):
            trc = [size_pairs(st, mode, depth) for _, st in tr]
            cqc = [size_pairs(st, mode, depth) for _, st in cq]
            w_sf = size_fit(trc + (cqc if pooled else []), cols)
            w_cq = size_fit(cqc + (trc if pooled else []), cols)
            out = {}
            for parts, st in te:
                inb, rel, X = size_pairs(st, mode, depth)
                out[f"SciFact test /{parts}"] = size_report(np.where(inb, sigmoid(X[..., cols] @ w_sf), 0), rel)
            folds0 = fold_of(cq[0][1].qids, k)
            got: dict = {}
            for i in range(k):
                fq = [folds0 if parts == 1 else fold_of(st.qids, k) for parts, st in cq]
                wi = size_fit([size_pairs(st, mode, depth, f != i) for (_, st), f in zip(cq, fq)]
                              + (trc if pooled else []), cols)
                for (parts, st), f in zip(cq, fq):
                    inb, rel, X = size_pairs(st, mode, depth, f == i)
                    g = got.setdefault(parts, ([], []))
                    g[0].append(np.where(inb, sigmoid(X[..., cols] @ wi), 0))
                    g[1].append(rel)
            for parts, (ps, rs) in got.items():
                out[f"CoSQA dev /{parts} (out of fold)"] = size_report(np.concatenate(ps), np.concatenate(rs))
            rep[(mode, label)] = {"w_prose": w_sf.tolist(), "w_code": w_cq.tolist(), "report": out}
            log(f"{mode} [{label}] prose/pooled w {np.round(w_sf, 3)}; code w {np.round(w_cq, 3)}")
            for key, (e10, e1, p1, r1) in out.items():
                log(f"   {key:32s} ECE10 {e10:.3f}  ECE1 {e1:.3f}  first hit p {p1:.2f} / relevant {r1:.2f}")
        for parts, st in te:  # the scale before it (`2026.12-calibrated2`), for the before column
            e10, e1, p1, r1 = size_report(*calibrated2(st, mode, depth))
            log(f"   calibrated2 SciFact test /{parts}: ECE10 {e10:.3f}  ECE1 {e1:.3f}  first hit p {p1:.2f} / relevant {r1:.2f}")
    return rep


def run_sizes_cli(cache: Path, name: str, split: str, parts: int, corpora: Path | None = None) -> dict:
    """Keyword scores through the CLI on the small corpora of `small` (their indexes are
    keywords only, `ov index --no-embed`: what a first search answers before any vector):
    each query asked by `ov search --search-type keywords` in the corpus that holds its
    most relevant file; the reliability of the first 10 hits and of the first hit."""
    import bench_quality as bq  # noqa: PLC0415

    meta = json.loads((cache / f"{name}-meta.json").read_text())
    sp, docs = meta["splits"][split], meta["docs"]
    home = np.load(cache / f"{name}-{split}-small{parts}-home.npy")
    back = {Path(pth).name: d for pth, d in zip(meta["paths"], docs)}
    base = (corpora or cache) / f"small-{name}-{parts}"  # where `small` made them
    runner = None
    ps, ys = [], []
    for n, (qid, text, rels) in enumerate(zip(sp["qids"], sp["queries"], sp["qrels"])):
        if home[n] < 0:
            continue
        cwd = base / f"p{home[n]:03d}"
        if runner is None:
            runner = bq.Runner("inprocess", cwd)
        runner.cwd = cwd
        env, _ = runner(["search", text, "--search-type", "keywords", "-o", "json", "-n", "10",
                         "--no-auto-index"])
        hits = [h for h in env["result"]["hits"] if back.get(Path(h["path"]).name) != qid][:10]
        p_ = [h["score"] for h in hits] + [0.0] * (10 - len(hits))
        y_ = [rels.get(back.get(Path(h["path"]).name), 0) > 0 for h in hits] + [False] * (10 - len(hits))
        ps.append(p_)
        ys.append(y_)
    rep = size_report(np.array(ps), np.array(ys))
    log(f"{name} {split}, {parts} corpora of ~{len(docs) // parts} files, keywords through the CLI, "
        f"{len(ps)} queries: ECE10 {rep[0]:.3f}  ECE1 {rep[1]:.3f}  first hit p {rep[2]:.2f} / relevant {rep[3]:.2f}")
    return {"ece10": rep[0], "ece1": rep[1], "first_p": rep[2], "first_rel": rep[3], "queries": len(ps)}


LABEL = {"shipped lin": "**hybrid, shipped** (lin at the one-SE pick)", "lin": "hybrid lin, chosen per fold",
         "lr": "hybrid: logistic regression, fitted per fold", "linrel": "hybrid: fixed weight, scaled by the query's best",
         "adaptive": "hybrid: the old adaptive schedule (share chosen per fold)",
         "adaptive@0.9": "hybrid: `2026.11` adaptive schedule as shipped (share 0.9)",
         "find@pick": "`find` at the pick's share", "find": "`find`, share chosen per fold",
         "keywords": "keywords", "rrf@pick": "anchor: RRF k=60", "mm50@pick": "anchor: 0.5/0.5 min-max",
         "rrf": "anchor: RRF k=60, share chosen per fold", "mm50": "anchor: 0.5/0.5 min-max, share per fold",
         "rrf@0.9": "RRF at share 0.9", "mm50@0.9": "min-max at share 0.9"}


def cv_markdown(report: dict) -> str:
    out = []
    for key, res in report.items():
        f = res["folds"]
        out += [f"#### {key}: nDCG@10 over 5 query folds (offline, ov's own branches)", "",
                "| method | mean ± sd | min fold | folds |", "| --- | --- | --- | --- |"]
        for m in ("shipped lin", "lin", "lr", "linrel", "adaptive", "adaptive@0.9", "find@pick", "find",
                  "keywords", "rrf@pick", "mm50@pick"):
            if m in f:
                v = np.array(f[m])
                out.append(f"| {LABEL.get(m, m)} | {v.mean():.4f} ± {v.std(ddof=1):.4f} | {v.min():.4f} | "
                           + " ".join(f"{x:.3f}" for x in v) + " |")
        h = np.array(f["shipped lin"])
        best_branch = np.maximum(f["find@pick"], f["keywords"])
        ok1 = bool((h >= best_branch - 0.005).all())
        ok2 = bool((h >= np.array(f["rrf@pick"])).all())
        ok3 = bool((h >= np.array(f["mm50@pick"])).all())
        sh = res["shipped"]
        out += ["", f"Shipped pick (share, w, k): `{tuple(sh['pick'])}`, mean {sh['mean_pick']:.4f}; the best "
                f"`{tuple(sh['best'])}` {sh['mean_best']:.4f}, one SE {sh['se']:.4f}. On every fold: hybrid >= "
                f"max(find, keywords) - 0.005: **{'yes' if ok1 else 'no'}**; >= RRF: **{'yes' if ok2 else 'no'}**; "
                f">= min-max: **{'yes' if ok3 else 'no'}**.", ""]
        # the curves: each parameter with the others at the pick
        sa, w, k0 = sh["pick"]
        cur = res["curves"]["lin"]

        def row(c):
            m, se = cur[",".join(map(str, c))]
            return f"{m:.4f} ± {se:.4f}"
        out += ["| weight w (share, k at the pick) | " + " | ".join(str(x) for x in WS) + " |",
                "| --- |" + " --- |" * len(WS),
                "| nDCG@10 ± SE | " + " | ".join(row((sa, x, k0)) for x in WS) + " |", "",
                "| keyword map k | " + " | ".join(str(x) for x in K0S) + " |", "| --- |" + " --- |" * len(K0S),
                "| nDCG@10 ± SE | " + " | ".join(row((sa, w, x)) for x in K0S) + " |", "",
                "| abstract share (0: none) | " + " | ".join(str(x) for x in SAS) + " |",
                "| --- |" + " --- |" * len(SAS),
                "| hybrid nDCG@10 ± SE | " + " | ".join(row((x, w, k0)) for x in SAS) + " |",
                "| `find` nDCG@10 ± SE | " + " | ".join(
                    "{:.4f} ± {:.4f}".format(*res["curves"]["find: abstract share"][str(x)]) for x in SAS) + " |", ""]
    return "\n".join(out) + "\n"


def ranking_score(st: Set, spec: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hybrid, find, keywords) ranking scores under `spec` = "sa,w,k0" (family lin) or
    "sa,w,pP" (family ceil: keyword evidence bm25 / ceiling, to the power P in the hybrid)."""
    sa_, w_, k_ = spec.split(",")
    sa, w = float(sa_), float(w_)
    sem = sem_score(st, "P", sa, 0)
    if k_.startswith("p"):
        e = np.clip(st.f["K"] / np.maximum(st.M, 1e-9)[:, None], 0, 1)
        return (w * np.maximum(sem, 0) + (1 - w) * e ** float(k_[1:]), sem,
                np.where(st.f["K"] > 0, e, -1.0))
    kw = kw_map(st.f["K"], float(k_))
    return w * np.maximum(sem, 0) + (1 - w) * kw, sem, np.where(st.f["K"] > 0, kw, -1.0)


def top_pairs(st: Set, z: np.ndarray, depth: int, rows=None):
    """Scores and labels of each query's top `depth` files under z (rows: query mask)."""
    t = st.top(z, depth)
    zz = np.take_along_axis(z, t, axis=1)
    yy = np.take_along_axis(st.gain, t, axis=1) > 0
    if rows is not None:
        zz, yy = zz[rows], yy[rows]
    return zz, yy


def platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    m = z > -1
    w = fit_logistic(np.stack([np.ones(m.sum()), z[m]], 1), y[m].astype(float), l2=1e-4)
    return float(w[1]), float(w[0])


def run_calib(cache: Path, prose: str, code: str, k: int = 5, fit_depth: int = 20,
              out: Path | None = None) -> dict:
    """Platt scaling of each ranking score on the tuning sets' top `fit_depth` hits, and its
    reliability on the top 10 hits of SciFact test and (out of fold) CoSQA dev."""
    rep: dict = {}
    for name, tune, report, spec in (("scifact", "train", "test", prose), ("cosqa-dev", "dev", None, code)):
        if spec == "-":
            continue
        st = Set(cache, name, tune)
        zs = ranking_score(st, spec)
        nons = Set(cache, name, "nonsense")
        zn = ranking_score(nons, spec)
        r: dict = {"spec": spec}
        for j, mode in enumerate(("hybrid", "find", "keywords")):
            a, b = platt(*top_pairs(st, zs[j], fit_depth))
            r[mode] = {"a": a, "b": b}
            if report:
                sr = Set(cache, name, report)
                z = ranking_score(sr, spec)[j]
                zz, yy = top_pairs(sr, z, 10)
                p = np.where(zz > -1, sigmoid(a * zz + b), 0.0)
                top1 = p[:, 0]
            else:  # out of fold: each fold's hits scored by the fit on the others
                folds = fold_of(st.qids, k)
                ps, ys, top1 = [], [], []
                for i in range(k):
                    ai, bi = platt(*top_pairs(st, zs[j], fit_depth, folds != i))
                    zz, yy = top_pairs(st, zs[j], 10, folds == i)
                    pp = np.where(zz > -1, sigmoid(ai * zz + bi), 0.0)
                    ps.append(pp)
                    ys.append(yy)
                    top1.append(pp[:, 0])
                p, yy, top1 = np.concatenate(ps), np.concatenate(ys), np.concatenate(top1)
            table, ece = reliability(p.ravel(), yy.ravel())
            zt = zn[j][:, :]
            nt = np.sort(zt, axis=1)[:, -1]
            pn = np.where(nt > -1, sigmoid(a * nt + b), 0.0)
            r[mode].update({"ece": ece, "table": table,
                            "real_top": [float(np.median(top1)), float(np.percentile(top1, 10)),
                                         float(top1.min())],
                            "nonsense_top": [float(np.median(pn)), float(pn.max())]})
            log(f"{name} {mode}: p = sigmoid({a:.3f} z + {b:.3f}); ECE {ece:.3f}; real top1 median "
                f"{np.median(top1):.3f} (10th pct {np.percentile(top1, 10):.3f}); nonsense top max {pn.max():.3f}")
            for lo, hi, n, mp, fr in table:
                log(f"   [{lo:.1f},{hi:.1f}) n={n:5d} mean p {mp:.3f} relevant {fr:.3f}")
        rep[name] = r
    if out:
        out.write_text(json.dumps(rep, indent=1))
    return rep


def run_pooled(cache: Path, prose: str, code: str) -> dict:
    """The shipped scale: one Platt (a, b) per score, fitted on both tuning sets' top 20
    hits pooled, with its calibration error on SciFact test and CoSQA dev (first 10 hits)."""
    sp, sc, st = Set(cache, "scifact", "train"), Set(cache, "cosqa-dev", "dev"), Set(cache, "scifact", "test")
    zp, zc, zt = ranking_score(sp, prose), ranking_score(sc, code), ranking_score(st, prose)
    out = {}
    for j, m in enumerate(("hybrid", "find", "keywords")):
        a1, y1 = top_pairs(sp, zp[j], 20)
        a2, y2 = top_pairs(sc, zc[j], 20)
        a, b = platt(np.concatenate([a1.ravel(), a2.ravel()]), np.concatenate([y1.ravel(), y2.ravel()]))
        eces = []
        for s_, z in ((st, zt[j]), (sc, zc[j])):
            zz, yy = top_pairs(s_, z, 10)
            eces.append(reliability(np.where(zz > -1, sigmoid(a * zz + b), 0).ravel(), yy.ravel())[1])
        out[m] = {"a": a, "b": b, "ece_scifact_test": eces[0], "ece_cosqa_dev": eces[1]}
        log(f"{m}: ({a:.3f}, {b:.3f}); ECE SciFact test {eces[0]:.3f}, CoSQA dev {eces[1]:.3f}")
    return out


def unit_texts(texts: list[str], paths: list[str], variant: str, count) -> dict[int, list[str]]:
    """Each file's passages under another unit (`run_units`): `budgetN` chunks at N estimated
    tokens; `whole` the file as one text (the model cuts it at 256 tokens); `fits` the file
    whole when it fits 256 real tokens, else the shipped chunks; `camel` / `camel_` the
    budget-256 chunks with camelCase (and `_`) split into words before embedding."""
    import re  # noqa: PLC0415

    from ov import chunk as chunking  # noqa: PLC0415

    def chunks(i, n):
        return [c.text for c in chunking.chunk_text(texts[i], paths[i], max_tokens=n)]
    camel = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
    out = {}
    for i in range(len(texts)):
        if variant.startswith("budget"):
            out[i] = chunks(i, int(variant[6:]))
        elif variant == "whole":
            out[i] = [texts[i]]
        elif variant == "fits":
            out[i] = [texts[i]] if count(texts[i]) <= 256 else chunks(i, 200)
        elif variant in ("camel", "camel_"):
            out[i] = [camel.sub(" ", t) for t in chunks(i, 256)]
            if variant == "camel_":
                out[i] = [t.replace("_", " ") for t in out[i]]
        else:
            raise SystemExit(f"unknown unit {variant}")
    return out


def run_units(cache: Path, dataset: str, split: str, workdir: Path, variants: list[str]) -> None:
    """Other passage units, scored offline with the shipped `find` and hybrid: each variant's
    passages of every file are embedded with the real model and replace the file's passage
    evidence P (abstracts and keywords unchanged). docs/BENCHMARKS.md "Passage size and
    identifier splitting for code"."""
    from ov import rank  # noqa: PLC0415
    from ov.embed import load_embedder  # noqa: PLC0415

    st = Set(cache, dataset, split)
    meta = json.loads((cache / f"{dataset}-meta.json").read_text())
    paths = meta["paths"]
    docs = workdir / "docs" if (workdir / "docs").is_dir() else workdir / "corpus"  # a `TreeSet`
    texts = [(docs / p).read_text(encoding="utf-8", errors="replace") for p in paths]
    qv = np.load(cache / f"{dataset}-{split}-qvec.npy")
    emb = load_embedder("index")
    sc = rank.CODE if st.kind == "code" else rank.PROSE
    folds = fold_of(st.qids, 5)

    def show(name, P):
        sem = np.maximum(P, np.where(st.f["A"] > -1, rank.ABSTRACT_SHARE * st.f["A"], -1.0))
        h = sc.w_sem * np.maximum(sem, 0) + (1 - sc.w_sem) * kw_evidence(st, st.f["K"], sc)
        f, h = st.ndcg(sem), st.ndcg(np.where((sem > -1) | (st.f["K"] > 0), h, -1.0))
        log(f"{dataset} {split} {name:10s} find {f.mean():.4f}  hybrid {h.mean():.4f} "
            f"folds {np.round(fold_means(h, folds, 5), 3).tolist()}")
    show("shipped", st.f["P"])
    for v in variants:
        units = unit_texts(texts, paths, v, emb.count_tokens)
        flat = [(i, t) for i, ts in units.items() for t in ts]
        vec = emb.embed([t for _, t in flat])
        idx = np.array([i for i, _ in flat])
        P = np.full_like(st.f["P"], -1.0)
        for n in range(len(qv)):
            np.maximum.at(P[n], idx, vec @ qv[n])
        show(v, P)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd in ("prep", "extract"):
        e = sub.add_parser(cmd)
        e.add_argument("dataset")
        e.add_argument("--workdir", type=Path, required=True)
        e.add_argument("--splits", default="")
        e.add_argument("--out", type=Path, default=CACHE)
    on_index = {name: sub.add_parser(name) for name in ("subset", "subset-data", "ceilings", "small", "unique")}
    for e in on_index.values():  # the commands that read a corpus's index in a work folder
        e.add_argument("dataset")
        e.add_argument("--workdir", type=Path, required=True)
    on_index["subset"].add_argument("--fraction", type=float, required=True)
    on_index["subset-data"].add_argument("--dest", type=Path, required=True)
    on_index["ceilings"].add_argument("--out", type=Path, default=CACHE)
    on_index["small"].add_argument("--parts", type=int, required=True)
    on_index["small"].add_argument("--cache", type=Path, default=CACHE)
    on_index["unique"].add_argument("--cache", type=Path, default=CACHE)
    ch = sub.add_parser("choose")
    ch.add_argument("--cache", type=Path, default=CACHE)
    cc = sub.add_parser("choose-code")
    cc.add_argument("--cache", type=Path, default=CACHE)
    sub.add_parser("fusions").add_argument("--cache", type=Path, default=CACHE)
    sub.add_parser("first-floor").add_argument("--cache", type=Path, default=CACHE)
    sub.add_parser("rule").add_argument("--cache", type=Path, default=CACHE)
    c = sub.add_parser("cv")
    c.add_argument("--cache", type=Path, default=CACHE)
    c.add_argument("--folds", type=int, default=5)
    c.add_argument("--out", type=Path, default=None)
    c.add_argument("--sets", default="scifact:train,cosqa-dev:dev")
    cb = sub.add_parser("calib")
    cb.add_argument("--cache", type=Path, default=CACHE)
    cb.add_argument("--prose", required=True, help="sa,w,k0")
    cb.add_argument("--code", required=True, help="sa,w,k0")
    cb.add_argument("--out", type=Path, default=None)
    po = sub.add_parser("pooled")
    po.add_argument("--cache", type=Path, default=CACHE)
    po.add_argument("--prose", required=True, help="sa,w,k0")
    po.add_argument("--code", required=True, help="sa,w,k0")
    ce = sub.add_parser("ceil")
    ce.add_argument("--cache", type=Path, default=CACHE)
    ce.add_argument("--share", type=float, default=0.9)
    sz = sub.add_parser("sizes")
    sz.add_argument("--cache", type=Path, default=CACHE)
    sz.add_argument("--cli", default="", help="DATASET:SPLIT:PARTS,... keyword scores through the CLI there")
    sz.add_argument("--corpora", type=Path, default=None, help="the folder holding `small`'s corpora")
    un = sub.add_parser("units")
    un.add_argument("dataset")
    un.add_argument("--split", required=True)
    un.add_argument("--workdir", type=Path, required=True)
    un.add_argument("--cache", type=Path, default=CACHE)
    un.add_argument("--variants", default="budget256,budget320,whole,fits,camel,camel_")
    a = ap.parse_args()
    if a.cmd == "pooled":
        run_pooled(a.cache, a.prose, a.code)
    elif a.cmd == "calib":
        run_calib(a.cache, a.prose, a.code, out=a.out)
    elif a.cmd == "prep":
        a.out.mkdir(parents=True, exist_ok=True)
        prep(a.dataset, a.workdir, [x for x in a.splits.split(",") if x], a.out)
    elif a.cmd == "subset":
        embed_subset(a.dataset, a.workdir, a.fraction)
    elif a.cmd == "subset-data":
        subset_data(a.dataset, a.workdir, a.dest)
    elif a.cmd == "extract":
        extract(a.dataset, a.workdir, a.out)
    elif a.cmd == "units":
        run_units(a.cache, a.dataset, a.split, a.workdir, a.variants.split(","))
    elif a.cmd == "small":
        small_prep(a.dataset, a.workdir, a.parts, a.cache)
        run_small(a.cache, a.parts)
    elif a.cmd == "unique":
        unique_prep(a.dataset, a.workdir, a.cache)
        if all((a.cache / f"{n}-rows.json").exists() for n in ("scifact", "cosqa-dev")):
            run_unique(a.cache)
    elif a.cmd == "sizes":
        if a.cli:
            for spec in a.cli.split(","):
                ds, sp_, n_ = spec.split(":")
                run_sizes_cli(a.cache, ds, sp_, int(n_), a.corpora)
        else:
            run_sizes(a.cache)
    elif a.cmd == "ceil":
        run_ceil(a.cache, sa=a.share)
    elif a.cmd == "ceilings":
        ceilings(a.dataset, a.workdir, a.out)
    elif a.cmd == "choose":
        run_choose(a.cache)
    elif a.cmd == "choose-code":
        run_choose_code(a.cache)
    elif a.cmd == "fusions":
        run_fusions(a.cache)
    elif a.cmd == "first-floor":
        run_first_floor(a.cache)
    elif a.cmd == "rule":
        run_rule(a.cache)
    else:
        run_cv(a.cache, a.folds, a.out, tuple(tuple(x.split(":")) for x in a.sets.split(",")))
