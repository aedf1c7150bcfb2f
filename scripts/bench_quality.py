"""Retrieval quality of `ov` on labelled data (issue 6): nDCG@10, Recall@100, MRR@10.

    python3 scripts/bench_quality.py scifact --split test
    python3 scripts/bench_quality.py cosqa-dev --split dev
    python3 scripts/bench_quality.py scifact --split train --no-anchors --search-types hybrid

DATASET is a folder in BEIR layout, or the name of one under ../shared/data/. What it does:
1. writes each document to its own file, `docs/<safe id>.<ext>` holding title + "\\n\\n" +
   text (just the text when there is no title), in a work folder outside the project
   (default /tmp/ov-bench-quality/<dataset>-<fingerprint>; the data is never copied into
   the repository). `.txt` by default, `.py` for the CoSQA code set, as a user's tree
   would name them;
2. runs `python -m ov index` on it in a child process with the real model and times it.
   The index is reused while the fingerprint (chunker source, chunk budget, keyword text
   builder, model id) is unchanged, since ranking changes need no re-index;
3. runs every query through the CLI's entry point `ov.cli.app.main` in this process: the same
   code as the `ov` command, flag parsing and JSON rendering included, with the JSON read
   back from stdout, except that the query encoder is loaded once per process rather than
   once per call (its load time is reported apart). One process per query would cost
   ~0.3 s of start-up plus the model load for each of thousands of calls on a shared
   2-core machine; `--runner process` does exactly that, for a spot check. Each query is `ov search -o json -n 50 --search-type T` (or
   `ov find -o json -n 50`), then page 2 through `--cursor` (the CLI caps -n at 50;
   Recall@100 needs 100);
4. maps each hit's path back to its document id and scores the run with the metric
   functions of ../shared/bench/ireval_baselines.py, imported from there at run time
   (ov's rank order is kept: a hit's score for the metric is 1000 - rank);
5. unless `--no-anchors`, runs ireval_baselines.py on the same data in a child process
   (its anchors: bm25s, FTS5, dense, RRF, weighted fusion) so both come from one run.

The query time reported is the median wall time of the first-page call in this process
(the CLI's own work: parsing, opening the index, encoding the query, ranking, the
recheck against the files, JSON rendering), without process start-up or model load.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import inspect
import io
import json
import os
import re
import statistics
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared"
BASELINES = SHARED / "bench" / "ireval_baselines.py"
WORK = Path(os.environ.get("OV_BENCH_WORK", "/tmp/ov-bench-quality"))
CODE_SETS = {"cosqa-dev": "py"}  # file extension a user's tree would give these documents
TYPES = ("keywords", "semantic", "find", "hybrid")
PAGE = 50


def load_baselines():
    """ireval_baselines.py as a module (its loaders and metric functions), never copied."""
    spec = importlib.util.spec_from_file_location("ireval_baselines", BASELINES)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def dataset_dir(name: str) -> Path:
    p = Path(name)
    if p.is_dir():
        return p.resolve()
    p = SHARED / "data" / name
    if p.is_dir():
        return p
    sys.exit(f"no dataset {name!r} (a folder, or a name under {SHARED / 'data'})")


def read_corpus(d: Path) -> list[tuple[str, str, str]]:
    path = d / "corpus.jsonl.gz" if (d / "corpus.jsonl.gz").exists() else d / "corpus.jsonl"
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                o = json.loads(line)
                out.append((str(o["_id"]), o.get("title") or "", o.get("text") or ""))
    return out


def safe_names(ids: list[str]) -> dict[str, str]:
    """doc id -> a file name stem that is safe on any file system and unique."""
    out, used = {}, set()
    for i in ids:
        s = re.sub(r"[^A-Za-z0-9._-]", "_", i)[:100] or "_"
        if s.lower() in used or s.startswith("."):
            s = f"{s}-{hashlib.sha1(i.encode()).hexdigest()[:8]}"
        used.add(s.lower())
        out[i] = s
    return out


def fingerprint() -> str:
    """What decides the index's content: a change here means a fresh index."""
    from ov import chunk, embed, indexer, store  # noqa: PLC0415

    parts = [inspect.getsource(chunk), str(indexer.CHUNK_TOKENS), str(getattr(indexer, "CODE_CHUNK_TOKENS", "")),
             str(getattr(indexer, "CHUNK_OVERLAP", 0)), inspect.getsource(store.keyword_text),
             embed.MODEL_ID, str(embed.MAX_TOKENS), str(store.SCHEMA_VERSION)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:10]


def nonsense_queries(corpus, n: int = 20, seed: int = 0) -> list[str]:
    """`n` queries of two to four random lowercase words (5-9 letters), each word absent
    from the corpus: a query that matches nothing meaningful (issue 14)."""
    import random  # noqa: PLC0415

    words = set()
    for _, title, text in corpus:
        words.update(w.lower() for w in re.findall(r"[A-Za-z]+", f"{title} {text}"))
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        q = []
        while len(q) < rng.randint(2, 4):
            w = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 9)))
            if w not in words:
                q.append(w)
        out.append(" ".join(q))
    return out


def write_docs(corpus, folder: Path, ext: str, keep_paths: bool = False) -> dict[str, str]:
    """Write each document once; returns file name -> doc id. With `keep_paths`, a
    document's id is its path in the tree (scripts/build_code_set.py) and it is written
    there."""
    names = safe_names([c[0] for c in corpus])
    folder.mkdir(parents=True, exist_ok=True)
    back = {}
    for did, title, text in corpus:
        if keep_paths:
            parts = Path(did).parts
            if Path(did).is_absolute() or ".." in parts or not parts or parts[0].startswith("."):
                sys.exit(f"{did!r}: not a relative path inside the tree (--keep-paths)")
            (folder / did).parent.mkdir(parents=True, exist_ok=True)
        fname = did if keep_paths else f"{names[did]}.{ext}"
        back[fname] = did
        p = folder / fname
        body = f"{title}\n\n{text}" if title else text
        if not p.exists() or p.read_text(encoding="utf-8") != body:
            p.write_text(body, encoding="utf-8")
    return back


def run_index(folder: Path, embed: bool = True) -> dict:
    env = dict(os.environ)
    env.pop("OV_EMBEDDER", None)  # the real model
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ov", "index", str(folder), "--no-progress", "-o", "json"]
                       + ([] if embed else ["--no-embed"]), capture_output=True, text=True, env=env, cwd=folder)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"ov index failed ({p.returncode}): {p.stdout[-2000:]} {p.stderr[-2000:]}")
    res = json.loads(p.stdout)["result"]
    return {"seconds": round(dt, 1), "report": res}


def only_rows(kind: str) -> None:
    """An experiment on `ov.engine._VectorsNow`: embed only the best keyword passages
    (`passages`) or only the abstracts (`abstracts`) of the best keyword files, by hiding
    the other kind's waiting rows from it (the search's own `unread` still sees both)."""
    from ov import engine  # noqa: PLC0415

    cands = engine._VectorsNow.cands

    class _Only:
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def waiting_vectors(self, ids):
            return set() if kind == "abstracts" else self.store.waiting_vectors(ids)

        def waiting_abstracts(self, ids):
            return {} if kind == "passages" else self.store.waiting_abstracts(ids)

    def only(self, kw):
        store, self.store = self.store, _Only(self.store)
        try:
            return cands(self, kw)
        finally:
            self.store = store

    engine._VectorsNow.cands = only


def run_first_index(folder: Path) -> dict:
    """The index as a first `ov search` leaves it: the keyword rows of every file, no vector
    yet (the worker that would add them is held back by OV_WORKER_DELAY, then stopped).
    The queries then run with OV_BACKGROUND=0, so no worker starts again: each answers as
    a first search does while the vectors are still coming."""
    env = dict(os.environ, OV_FIRST_BUDGET="100000", OV_FIRST_INLINE_ROWS="0", OV_WORKER_DELAY="60")
    env.pop("OV_EMBEDDER", None)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ov", "search", "first", "-o", "json"],
                       capture_output=True, text=True, env=env, cwd=folder)
    dt = time.perf_counter() - t0
    subprocess.run([sys.executable, "-m", "ov", "index", "--stop"], capture_output=True, env=env, cwd=folder)
    if p.returncode not in (0, 1):
        sys.exit(f"the first search failed ({p.returncode}): {p.stdout[-2000:]} {p.stderr[-2000:]}")
    cov = json.loads(p.stdout)["result"]["coverage"]
    if cov["embedded"] or not cov["pending"]:
        sys.exit(f"not a first search's index: {cov}")
    return {"seconds": round(dt, 1), "report": {"first_search": True, **cov}}


class Runner:
    """Runs `ov` argument lists: in this process through ov.cli.app.main, or as a child."""

    def __init__(self, kind: str, cwd: Path) -> None:
        self.kind = kind
        self.cwd = cwd
        self.model_load_s = None
        if kind == "inprocess":
            from ov import engine  # noqa: PLC0415
            from ov.cli.app import main  # noqa: PLC0415

            # The one departure from a CLI call: the query encoder is loaded once for the
            # process instead of once per call (its load time is measured and reported).
            t0 = time.perf_counter()
            emb = engine._default_embedder()
            emb.embed(["warm up"])
            self.model_load_s = time.perf_counter() - t0
            engine._default_embedder = lambda: emb
            self.main = main

    def __call__(self, args: list[str]) -> tuple[dict, float]:
        t0 = time.perf_counter()
        if self.kind == "process":
            p = subprocess.run([sys.executable, "-m", "ov", *args], capture_output=True, text=True,
                               cwd=self.cwd)
            out, code = p.stdout, p.returncode
        else:
            buf, err = io.StringIO(), io.StringIO()
            old = os.getcwd()
            os.chdir(self.cwd)
            try:
                with redirect_stdout(buf), redirect_stderr(err):
                    try:
                        self.main(args)
                        code = 0
                    except SystemExit as e:
                        code = e.code if isinstance(e.code, int) else 0
            finally:
                os.chdir(old)
            out = buf.getvalue()
        dt = time.perf_counter() - t0
        if code not in (0, 1):
            raise RuntimeError(f"ov {' '.join(args[:3])}... exited {code}: {out[-1000:]}")
        return json.loads(out), dt


def query_args(stype: str, query: str, db: Path, explain: bool) -> list[str]:
    if stype == "find":
        args = ["find", query]
    else:
        args = ["search", query, "--search-type", stype]
    args += ["-o", "json", "-n", str(PAGE), "--db", str(db), "--no-auto-index"]
    return args + (["--explain"] if explain else [])


def run_queries(runner: Runner, stype: str, queries: dict[str, str], db: Path, back: dict[str, str],
                explain: bool = False, log=print, pages: int = 2):
    """qid -> {doc id: 1000 - rank} over two pages; per-call times; explain records."""
    run, times, dumps, profile = {}, [], {}, None
    for n, (qid, text) in enumerate(queries.items(), 1):
        args = query_args(stype, text, db, explain)
        env, dt = runner(args)
        times.append(dt)
        res = env["result"]
        hits = list(res["hits"])
        if res.get("next_cursor") and pages > 1:
            env2, _ = runner(args + ["--cursor", res["next_cursor"]])
            hits += env2["result"]["hits"]
        # a hit's word-for-word copies (ov.engine `_fold`) are shown with it: ranked after it
        hits = [x for h in hits for x in (h, *({**h, "path": d["path"]} for d in h.get("duplicates", [])))]
        profile = res.get("profile")
        ranked = []
        for h in hits:
            did = back.get(h["path"]) or back.get(Path(h["path"]).name)
            if did is not None and did not in ranked:
                ranked.append(did)
        # BEIR drops a document whose id is the query's own id
        ranked = [d for d in ranked if d != qid][:100]
        run[qid] = {d: 1000.0 - i for i, d in enumerate(ranked)}
        dumps[qid] = [{"doc": back.get(h["path"]) or back.get(Path(h["path"]).name), "score": h["score"],
                       "scores": h.get("scores")} for h in hits
                      if (back.get(h["path"]) or back.get(Path(h["path"]).name)) != qid]
        if n % 100 == 0:
            log(f"  {stype}: {n}/{len(queries)} queries, median {1000 * statistics.median(times):.0f} ms")
    return run, times, dumps, profile


def folds_of(qids: list[str], k: int = 5, seed: int = 0) -> dict[str, int]:
    """qid -> fold (0..k-1), the same split for every method (scripts/cv_rank.py uses it too)."""
    import random  # noqa: PLC0415

    order = sorted(qids)
    f = [i % k for i in range(len(order))]
    random.Random(seed).shuffle(f)
    return dict(zip(order, f))


def cli_anchors(kw: dict, sem: dict) -> dict[str, dict]:
    """The two fusion anchors over the CLI's own branch lists (`ov search --search-type
    keywords` and `ov find`, each read 100 deep with --explain): RRF with k = 60, and
    0.5 * min-max(cosine) + 0.5 * min-max(bm25) over each list (absent = 0)."""
    rrf, mm = {}, {}
    for qid in kw.keys() | sem.keys():
        a, b = kw.get(qid, []), sem.get(qid, [])
        r: dict[str, float] = {}
        for lst in (a, b):
            for i, h in enumerate(lst[:100], 1):
                if h["doc"] is not None:
                    r[h["doc"]] = r.get(h["doc"], 0.0) + 1.0 / (60 + i)
        rrf[qid] = r
        m: dict[str, float] = {}
        for lst, branch, conv in ((a, "keywords", lambda x: x), (b, "semantic", lambda x: 1.0 - x)):
            vals = [(h["doc"], conv(h["scores"][branch]["raw"])) for h in lst[:100]
                    if h["doc"] is not None and h.get("scores") and branch in h["scores"]]
            if not vals:
                continue
            hi, lo = max(v for _, v in vals), min(v for _, v in vals)
            for d, v in vals:
                m[d] = m.get(d, 0.0) + 0.5 * ((v - lo) / (hi - lo) if hi > lo else 1.0)
        mm[qid] = m
    return {"rrf": rrf, "mm50": mm}


def reliability(dumps: dict, qrels: dict, top: int = 10, bins: int = 10):
    """Each query's first `top` hits by their score: rows (lo, hi, hits, mean score,
    fraction relevant) and the expected calibration error (hit-weighted mean |gap|)."""
    pairs = [(h["score"], qrels.get(qid, {}).get(h["doc"], 0) > 0)
             for qid, hits in dumps.items() for h in hits[:top]]
    rows, ece = [], 0.0
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        got = [(p, y) for p, y in pairs if lo <= p < hi or (i == bins - 1 and p == 1.0)]
        if got:
            mp = sum(p for p, _ in got) / len(got)
            fr = sum(y for _, y in got) / len(got)
            rows.append((lo, hi, len(got), mp, fr))
            ece += len(got) / len(pairs) * abs(mp - fr)
    return rows, ece


def run_anchors(d: Path, split: str, tune_split: str | None, out: Path) -> dict | None:
    args = [sys.executable, str(BASELINES), str(d), "--split", split, "--out", str(out)]
    if tune_split:
        args += ["--tune-split", tune_split]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"anchors failed: {p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.read_text())


ANCHOR_ROWS = [
    ("bm25s, stopwords + Snowball stemming", "bm25s:sw+stem"),
    ("SQLite FTS5, porter, terms OR-ed", "fts5:or"),
    ("dense MiniLM, doc cut at 256 tokens", "dense"),
    ("dense, 128-token chunks, doc = best chunk", "dense-chunk"),
    ("RRF k=60 (FTS5 OR + dense)", "rrf(fts5:or,dense)"),
    ("0.5·minmax(dense) + 0.5·minmax(FTS5 OR)", "wsum(fts5:or,dense)@0.5"),
]


def table(name: str, split: str, ours: dict, anchors: dict | None, profile) -> str:
    nq = next(iter(ours.values()))["n"] if ours else 0
    lines = [f"### {name} `{split}` ({nq} queries) — ov profile `{(profile or {}).get('version')}`", "",
             "| method | nDCG@10 | Recall@100 | MRR@10 |", "| --- | --- | --- | --- |"]
    label = {"keywords": "ov search --search-type keywords", "semantic": "ov search --search-type semantic",
             "find": "ov find", "hybrid": "**ov search** (hybrid, the default)"}
    for t, m in ours.items():
        lines.append(f"| {label[t]} | {m['ndcg10']:.3f} | {m['recall100']:.3f} | {m['mrr10']:.3f} |")
    if anchors:
        ev = anchors["results"][split]
        for text, key in ANCHOR_ROWS:
            if key in ev:
                m = ev[key]
                lines.append(f"| anchor: {text} | {m['ndcg10']:.3f} | {m['recall100']:.3f} | {m['mrr10']:.3f} |")
    return "\n".join(lines) + "\n"


def fold_table(fold_nd: dict[str, list[float]], types: list[str]) -> str:
    """nDCG@10 over five folds of the queries: mean ± standard deviation, the worst fold, and
    the per-fold checks of issue 19 for the hybrid."""
    lines = ["| nDCG@10 over 5 query folds | mean ± sd | min fold | folds |", "| --- | --- | --- | --- |"]
    for m, v in fold_nd.items():
        lines.append(f"| {m} | {statistics.mean(v):.3f} ± {statistics.stdev(v):.3f} | {min(v):.3f} | "
                     + " ".join(f"{x:.3f}" for x in v) + " |")
    if "hybrid" in fold_nd:
        h = fold_nd["hybrid"]
        checks = []
        if "find" in fold_nd and "keywords" in fold_nd:
            ok = all(h[i] >= max(fold_nd["find"][i], fold_nd["keywords"][i]) - 0.005 for i in range(5))
            checks.append(f"hybrid >= max(find, keywords) - 0.005 on every fold: {'yes' if ok else 'NO'}")
        for a in ("anchor rrf", "anchor mm50"):
            if a in fold_nd:
                ok = all(h[i] >= fold_nd[a][i] for i in range(5))
                checks.append(f"hybrid >= {a} on every fold: {'yes' if ok else 'NO'}")
        lines += ["", "; ".join(checks) + "."]
    return "\n".join(lines) + "\n"


def calib_table(calib: dict, nonsense: dict) -> str:
    lines = ["Score calibration, each query's first 10 hits (score bucket -> fraction relevant):", "",
             "| bucket | " + " | ".join(f"{t}: hits / mean score / relevant" for t in calib) + " |",
             "| --- |" + " --- |" * len(calib)]
    for i in range(10):
        lo = i / 10
        cells = []
        for t, (rows, _) in calib.items():
            r = next((r for r in rows if abs(r[0] - lo) < 1e-9), None)
            cells.append(f"{r[2]} / {r[3]:.3f} / {r[4]:.3f}" if r else "0")
        lines.append(f"| {lo:.1f}-{lo + 0.1:.1f} | " + " | ".join(cells) + " |")
    lines.append("| ECE | " + " | ".join(f"**{e:.3f}**" for _, e in calib.values()) + " |")
    if nonsense:
        lines += ["", "| top score of each query | " + " | ".join(nonsense) + " |", "| --- |" + " --- |" * len(nonsense),
                  "| 20 nonsense queries: max / median | " + " | ".join(
                      f"{v['nonsense_max']:.3f} / {v['nonsense_median']:.3f}" for v in nonsense.values()) + " |",
                  "| real queries: median / 10th percentile | " + " | ".join(
                      f"{v['real_median']:.3f} / {v['real_p10']:.3f}" for v in nonsense.values()) + " |"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit-queries", type=int, default=None, help="only the first N queries (by id)")
    ap.add_argument("--search-types", default="keywords,find,hybrid",
                    help=f"comma list of {', '.join(TYPES)} (semantic = find through `ov search`)")
    ap.add_argument("--ext", default=None, help="file extension for the documents (default: txt; py for code sets)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep-paths", action="store_true",
                    help="document ids are paths in a tree (scripts/build_code_set.py): write each there")
    ap.add_argument("--reindex", action="store_true", help="build a fresh index even if one matches")
    ap.add_argument("--runner", choices=("inprocess", "process"), default="inprocess")
    ap.add_argument("--anchors", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--tune-split", default=None, help="passed to ireval_baselines.py (alpha tuned there)")
    ap.add_argument("--explain", action="store_true", help="ask for --explain and keep per-hit branch scores")
    ap.add_argument("--pages", type=int, choices=(1, 2), default=2,
                    help="1: only the first page of 50 (nDCG@10 and MRR@10 exact, Recall@100 read at 50)")
    ap.add_argument("--nonsense", action=argparse.BooleanOptionalAction, default=True,
                    help="also run 20 nonsense queries (words absent from the corpus) and report their top score")
    ap.add_argument("--first-answer", action="store_true",
                    help="the answers of a first search: keyword rows only, the vectors still coming "
                         "(use a workdir of its own)")
    ap.add_argument("--vectors-now", type=int, default=None,
                    help="files whose waiting rows a hybrid search embeds itself (ov.engine.VECTORS_NOW_FILES)")
    ap.add_argument("--vectors-now-rows", choices=("both", "passages", "abstracts"), default="both",
                    help="an experiment (inprocess runner only): which of those files' waiting rows "
                         "are embedded, the best keyword passage, the abstract or both (shipped)")
    ap.add_argument("--vectors-now-abstracts", type=int, default=None,
                    help="of those files, the best this many have their abstract computed too "
                         "(ov.engine.VECTORS_NOW_ABSTRACTS; default: all of them)")
    ap.add_argument("--no-embed", action="store_true",
                    help="a keywords-only index (`ov index --no-embed`: passages cut for keywords alone, "
                         "ov.chunk.line_cut) and keyword searches only; a work folder of its own")
    ap.add_argument("--out", type=Path, help="write results (and per-query runs) as JSON")
    ap.add_argument("--md", type=Path, help="write the result table as Markdown")
    args = ap.parse_args(argv)

    def log(msg):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    base = load_baselines()
    d = dataset_dir(args.dataset)
    name = d.name
    types = [t.strip() for t in args.search_types.split(",") if t.strip()]
    for t in types:
        if t not in TYPES:
            sys.exit(f"unknown search type {t!r}")
    qrels = base.load_qrels(str(d), args.split)
    if qrels is None:
        sys.exit(f"no qrels for split {args.split!r} in {d}")
    queries_all = base.load_queries(str(d))
    qids = sorted(q for q in qrels if q in queries_all)
    if args.limit_queries:
        qids = qids[:args.limit_queries]
    queries = {q: queries_all[q] for q in qids}

    ext = args.ext or CODE_SETS.get(name, "txt")
    if args.no_embed:
        types = ["keywords"]
    work = args.workdir or WORK / f"{name}-{ext}-{fingerprint()}{'-kw' if args.no_embed else ''}"
    if REPO in work.resolve().parents or work.resolve() == REPO:
        sys.exit("the work folder must be outside the project")
    folder = work / "docs"
    db = folder / ".ov" / "index.db"
    corpus = read_corpus(d)
    back = write_docs(corpus, folder, ext, args.keep_paths)
    if args.reindex and db.exists():
        for p in db.parent.glob("index.db*"):
            p.unlink()
    info_p = work / "index.json"
    if db.exists() and info_p.exists():
        index_info = json.loads(info_p.read_text())
        log(f"reusing the index in {folder} (built in {index_info['seconds']} s)")
    else:
        log(f"indexing {len(corpus)} documents in {folder} ...")
        index_info = run_first_index(folder) if args.first_answer else run_index(folder, not args.no_embed)
        info_p.write_text(json.dumps(index_info))
        log(f"indexed in {index_info['seconds']} s: {index_info['report']}")

    if args.first_answer:
        os.environ["OV_BACKGROUND"] = "0"  # no worker adds the vectors while the queries run
    runner = Runner(args.runner, folder)
    if args.vectors_now is not None:
        from ov import engine  # noqa: PLC0415

        engine.VECTORS_NOW_FILES = args.vectors_now
        os.environ["OV_VECTORS_NOW_FILES"] = str(args.vectors_now)  # and for --runner process
        # the abstracts of as many files unless told (not the engine's default, which may differ)
        abstracts = args.vectors_now if args.vectors_now_abstracts is None else args.vectors_now_abstracts
        engine.VECTORS_NOW_ABSTRACTS = abstracts
        os.environ["OV_VECTORS_NOW_ABSTRACTS"] = str(abstracts)
    if args.vectors_now_rows != "both":
        if args.runner != "inprocess":
            sys.exit("--vectors-now-rows needs --runner inprocess")
        only_rows(args.vectors_now_rows)
    ours, timing, runs, dumps, profile = {}, {}, {}, {}, None
    for t in types:
        log(f"{t}: {len(queries)} queries through the CLI ({args.runner}) ...")
        # keywords and find keep their branches' raw scores for the fusion anchors
        run, times, dump, profile = run_queries(runner, t, queries, db, back,
                                                args.explain or t in ("keywords", "find"), log, args.pages)
        pq = base.per_query_metrics(run, qrels)
        ours[t] = base.mean_metrics(pq)
        timing[t] = {"median_ms": round(1000 * statistics.median(times), 1),
                     "p90_ms": round(1000 * sorted(times)[int(0.9 * (len(times) - 1))], 1)}
        runs[t] = run
        dumps[t] = dump
        log(f"{t}: {ours[t]} {timing[t]}")

    # the cross-validation folds: every method's mean over each fifth of the queries
    folds = folds_of(list(queries))
    per_q = {t: base.per_query_metrics(runs[t], qrels) for t in types}
    if "keywords" in dumps and "find" in dumps:
        for anchor, run in cli_anchors(dumps["keywords"], dumps["find"]).items():
            per_q[f"anchor {anchor}"] = base.per_query_metrics(run, qrels)
    fold_nd = {m: [statistics.mean(v["ndcg10"] for q, v in pq.items() if folds[q] == i) for i in range(5)]
               for m, pq in per_q.items()}
    calib = {t: reliability(dumps[t], qrels) for t in types}
    nonsense = {}
    if args.nonsense:
        texts = nonsense_queries(corpus)
        for t in types:
            tops = []
            for q in texts:
                env, _ = runner(query_args(t, q, db, False))
                hits = env["result"]["hits"]
                tops.append(hits[0]["score"] if hits else 0.0)
            real = sorted(h[0]["score"] if h else 0.0 for h in dumps[t].values())
            nonsense[t] = {"nonsense_max": max(tops), "nonsense_median": statistics.median(tops),
                           "real_median": statistics.median(real),
                           "real_p10": real[int(0.1 * (len(real) - 1))], "queries": texts, "tops": tops}
            log(f"{t}: nonsense top score max {max(tops):.3f}, real top median {statistics.median(real):.3f}")

    anchors = None
    if args.anchors:
        log("anchors: ireval_baselines.py ...")
        anchors = run_anchors(d, args.split, args.tune_split, work / f"anchors-{args.split}.json")

    md = table(name, args.split, ours, anchors, profile)
    md += "\n" + fold_table(fold_nd, types) + "\n" + calib_table(calib, nonsense)
    load = (f"; query encoder load {runner.model_load_s:.2f} s once" if runner.model_load_s else "")
    md += (f"\nIndex: {len(corpus)} files in {index_info['seconds']} s (`ov index`, real model, "
           f"{index_info['report'].get('chunks')} chunks). Median query time (first page of 50, "
           f"{args.runner}{load}): " + ", ".join(f"{t} {v['median_ms']} ms" for t, v in timing.items())
           + f". Load average at the end: {os.getloadavg()[0]:.1f}.\n")
    print(md)
    if args.md:
        args.md.write_text(md)
    if args.out:
        args.out.write_text(json.dumps({
            "dataset": name, "split": args.split, "queries": len(queries), "profile": profile,
            "runner": args.runner, "ext": ext, "index": index_info, "metrics": ours, "timing": timing,
            "anchors": anchors["results"][args.split] if anchors else None, "runs": runs,
            "explain": dumps, "folds": fold_nd, "calibration": {t: {"table": v[0], "ece": v[1]} for t, v in calib.items()},
            "nonsense": nonsense, "load": os.getloadavg()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
