"""Indexing benchmarks on a copy of the running interpreter's standard library (issue 2).

    python3 scripts/bench_index.py                    # everything, writes nothing
    python3 scripts/bench_index.py --write-docs       # and fills docs/BENCHMARKS.md
    python3 scripts/bench_index.py --embed-tree full  # embed the whole stdlib (long)

What it measures, each through the real CLI (`python -m ov index`) in a child process,
so timings include what a user pays and the child's peak RSS is its own (`os.wait4`):
- keywords-only indexing (`--no-embed`) of a fresh index: files/s and MB/s;
- a re-index of the unchanged tree (median of 5);
- one fresh full index with embedding of the embedding tree: its peak RSS and the
  chunks/s of the embed phase (timed from the indexer's `progress` hook: first to last
  "embed" call, so the model load is left out);
- the bare model on a random sample of the same chunk texts, pre-tokenised, against the
  pipeline's `OnnxEmbedder.embed` on that sample (scripts/bench_embed.py), interleaved;
- index size (`.ov/index.db*`) against the bytes of the files it indexed.

The stdlib is never written to: it is copied once (without site-packages and
__pycache__) to the work folder and the copy is indexed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

DOC = REPO / "docs" / "BENCHMARKS.md"
DEFAULT_WORKDIR = Path(tempfile.gettempdir()) / "ov-bench"
COPY_IGNORE = shutil.ignore_patterns("site-packages", "__pycache__", ".ov")


# ---- the machine and the trees ------------------------------------------------------------


def machine_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "loadavg": loadavg()}


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def copy_stdlib(dest: Path) -> Path:
    """The whole stdlib (minus site-packages, __pycache__), copied once."""
    if not (dest / "os.py").is_file():
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(stdlib_dir(), dest, ignore=COPY_IGNORE, symlinks=True)
    return dest


def copy_toplevel_modules(dest: Path, n: int = 0) -> Path:
    """The subset embedded by default: `n` of the stdlib's top-level *.py modules, drawn
    with a fixed seed (all ~170 of them, 4.7 MB, when n = 0). Real code, small enough to
    embed in minutes on 2 shared cores."""
    mods = sorted(stdlib_dir().glob("*.py"))
    if n:
        mods = sorted(random.Random(0).sample(mods, min(n, len(mods))))
    names = sorted(p.name for p in mods)
    have = sorted(p.name for p in dest.glob("*.py")) if dest.is_dir() else []
    if have != names:
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for p in mods:
            shutil.copy2(p, dest / p.name)
    return dest


def drop_index(tree: Path) -> None:
    shutil.rmtree(tree / ".ov", ignore_errors=True)


def db_bytes(tree: Path) -> int:
    d = tree / ".ov"
    return sum(p.stat().st_size for p in d.glob("index.db*") if p.is_file()) if d.is_dir() else 0


def indexed_stats(tree: Path) -> dict:
    from ov.store import Store

    with Store.open(tree / ".ov" / "index.db", readonly=True) as s:
        files, size = s.rows("SELECT count(*), coalesce(sum(size), 0) FROM files")[0]
        chunks = s.q1("SELECT count(*) FROM chunks WHERE level = 2")
        all_chunks = s.q1("SELECT count(*) FROM chunks")
        embedded = s.q1("SELECT count(*) FROM chunks WHERE embedded = 1")
    return {"files": files, "bytes": size, "chunks": chunks, "all_chunks": all_chunks,
            "embedded": embedded}


# ---- running the CLI ------------------------------------------------------------------------


def child_env() -> dict:
    """The environment for timed children: bytecode cached, as in an installed package.

    Where PYTHONDONTWRITEBYTECODE is set (this machine sets it), every run would compile
    ov's modules from source again (~0.1-0.4 s); the cache goes to a folder of its own
    (PYTHONPYCACHEPREFIX), so nothing is written into the source tree.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(DEFAULT_WORKDIR / "pycache")
    return env


def run_child(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> dict:
    """Run a child to completion: wall seconds, its own peak RSS (MB), stdout, exit code."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env={**child_env(), **(env or {})}, cwd=cwd)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        res = {"wall": wall, "rss_mb": ru.ru_maxrss / 1024, "code": proc.returncode,
               "stdout": out.read().decode("utf-8", "replace"),
               "stderr": err.read().decode("utf-8", "replace")}
    if res["code"] != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {res['code']}:\n{res['stderr'][-2000:]}")
    return res


def ov_index(tree: Path, *flags: str) -> dict:
    r = run_child([sys.executable, "-P", "-m", "ov", "index", str(tree), "-o", "json", *flags])
    r["report"] = json.loads(r["stdout"])["result"]
    return r


# ---- the benchmarks -------------------------------------------------------------------------


def bench_keywords(tree: Path, runs: int) -> dict:
    walls, secs, rss = [], [], []
    for _ in range(runs):
        drop_index(tree)
        r = ov_index(tree, "--no-embed")
        walls.append(r["wall"])
        secs.append(r["report"]["seconds"])
        rss.append(r["rss_mb"])
    st = indexed_stats(tree)
    wall, sec = statistics.median(walls), statistics.median(secs)
    return {"runs": runs, "files": st["files"], "bytes": st["bytes"], "chunks": st["chunks"],
            "all_chunks": st["all_chunks"], "wall_s": wall, "index_s": sec,
            "walls": walls, "files_s": st["files"] / sec, "mb_s": st["bytes"] / 1e6 / sec,
            "files_s_wall": st["files"] / wall, "mb_s_wall": st["bytes"] / 1e6 / wall,
            "rss_mb": max(rss), "db_bytes": db_bytes(tree)}


def bench_reindex(tree: Path, runs: int, *flags: str) -> dict:
    ov_index(tree, *flags)  # settle: anything pending is done before timing
    walls, secs = [], []
    for _ in range(runs):
        r = ov_index(tree, *flags)
        rep = r["report"]
        if rep["added"] or rep["updated"] or rep["removed"] or rep["embedded"]:
            raise RuntimeError(f"re-index of an unchanged tree changed something: {rep}")
        walls.append(r["wall"])
        secs.append(rep["seconds"])
    return {"runs": runs, "wall_s": statistics.median(walls), "index_s": statistics.median(secs),
            "walls": walls}


CHILD_FLAG = "--child-timed-index"


def child_timed_index(tree: str, marks_file: str) -> None:
    """In a child: the real CLI `ov index TREE`, with the progress hook timed."""
    import ov.indexer as ix

    orig = ix.index_tree
    marks: dict[str, float] = {"start": time.perf_counter()}

    def timed(root, db_path=None, opts=ix.IndexOptions(), *, progress=None, **kw):
        def hook(phase, done, total):
            now = time.perf_counter()
            marks.setdefault(f"{phase}_first", now)
            marks[f"{phase}_last"] = now
            marks[f"{phase}_done"] = done
            if progress:
                progress(phase, done, total)
        return orig(root, db_path, opts, progress=hook, **kw)

    ix.index_tree = timed  # the CLI imports index_tree from the module at call time
    from ov.cli.app import main

    code = 0
    try:
        main(["index", tree, "-o", "json"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    marks["end"] = time.perf_counter()
    Path(marks_file).write_text(json.dumps(marks))
    sys.exit(code)


def bench_embed_index(tree: Path) -> dict:
    """One fresh `ov index` with embedding: peak RSS and the embed phase's chunks/s."""
    drop_index(tree)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        marks_file = f.name
    try:
        r = run_child([sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, str(tree), marks_file])
        marks = json.loads(Path(marks_file).read_text())
    finally:
        os.unlink(marks_file)
    rep = json.loads(r["stdout"])["result"]
    embed_s = marks["embed_last"] - marks["embed_first"]
    st = indexed_stats(tree)
    return {"files": st["files"], "bytes": st["bytes"], "chunks": st["chunks"],
            "all_chunks": st["all_chunks"], "embedded": rep["embedded"], "wall_s": r["wall"],
            "index_s": rep["seconds"], "embed_s": embed_s,
            "lexical_s": marks["embed_first"] - marks["start"],
            "chunks_s": rep["embedded"] / embed_s if embed_s else float("nan"),
            "rss_mb": r["rss_mb"], "db_bytes": db_bytes(tree)}


def sample_texts(tree: Path, n: int, seed: int = 0) -> list[str]:
    """A uniform random sample of the chunk texts the indexer embedded (every level)."""
    from ov.store import Store

    with Store.open(tree / ".ov" / "index.db", readonly=True) as s:
        ids = [r[0] for r in s.rows("SELECT id FROM chunks WHERE embedded = 1 ORDER BY id")]
        pick = sorted(random.Random(seed).sample(ids, min(n, len(ids))))
        texts = s.chunk_texts(pick)
    return [texts[i] for i in pick]


def bench_model_ratio(texts: list[str], runs: int) -> dict:
    """Pipeline `embed()` vs bare `session.run` on the same texts, at the indexer's batch size."""
    from bench_embed import throughput

    from ov.embed import OnnxEmbedder
    from ov.embed import DEFAULT_BATCH_SIZE as EMBED_BATCH  # what the indexer embeds with

    emb = OnnxEmbedder("index")
    ntok = sum(emb.count_tokens(t) for t in texts)
    r = throughput(emb, texts, EMBED_BATCH, runs)
    r.update(n=len(texts), mean_tokens=ntok / len(texts), runs=runs)
    return r


# ---- answer first (issue 13) -------------------------------------------------------------------

FIRST_QUERY = "parse command line arguments"
QUICKSTART_QUERY = "how are files split into chunks"  # README.md's quick start


def ov_cmd(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "ov", *args]


def first_search(tree: Path, query: str) -> dict:
    """`ov search QUERY` in a tree without an index: wall seconds to its answer (the
    keyword rows built, the background worker started), then the worker stopped."""
    r = run_child(ov_cmd("search", query, "-n", "5", "--json"), cwd=tree)
    res = json.loads(r["stdout"])["result"]
    stop = run_child(ov_cmd("index", str(tree), "--stop", "--json"))
    return {"wall_s": r["wall"], "hits": len(res["hits"]), "branches": res.get("branches"),
            "coverage": res.get("coverage"), "worker": json.loads(stop["stdout"])["result"],
            "rss_mb": r["rss_mb"], "load": loadavg()}


def bench_first_answer(src: Path, wd: Path, runs: int) -> dict:
    """Time to the first answer on a fresh copy of `src` (no index), median of `runs`."""
    out = []
    for i in range(runs):
        dest = wd / "first-answer"
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(src, dest, ignore=COPY_IGNORE, symlinks=True)
        out.append(first_search(dest, FIRST_QUERY))
        print(f"[{loadavg()}] first answer run {i + 1}: {out[-1]['wall_s']:.1f} s", file=sys.stderr)
    return {"runs": out, "wall_s": statistics.median(r["wall_s"] for r in out), "tree": str(src),
            "query": FIRST_QUERY}


def bench_quickstart(wd: Path, runs: int) -> dict:
    """README's quick start on a clean clone of this repository (HEAD): the `pip install .`
    is not timed (the running environment has ov installed); the search is."""
    out = []
    for _ in range(runs):
        dest = wd / "clone"
        if dest.exists():
            shutil.rmtree(dest)
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
        out.append(first_search(dest, QUICKSTART_QUERY))
        print(f"[{loadavg()}] quick start: {out[-1]['wall_s']:.1f} s", file=sys.stderr)
    return {"runs": out, "wall_s": statistics.median(r["wall_s"] for r in out), "query": QUICKSTART_QUERY}


def bench_big_tree(tree: Path) -> dict:
    """`ov index --no-embed` of a large tree, fresh, once: MB/s of the bytes indexed and
    the index's size against them."""
    drop_index(tree)
    load0 = loadavg()
    r = ov_index(tree, "--no-embed")
    st = indexed_stats(tree)
    return {"tree": str(tree), "files": st["files"], "bytes": st["bytes"], "wall_s": r["wall"],
            "index_s": r["report"]["seconds"], "mb_s": st["bytes"] / 1e6 / r["wall"],
            "db_bytes": db_bytes(tree), "ratio": db_bytes(tree) / st["bytes"], "rss_mb": r["rss_mb"],
            "load": f"{load0} -> {loadavg()}"}


SCIFACT_DOCS = 5183  # the whole corpus


def bench_scifact(wd: Path, n: int) -> dict | None:
    """A full `ov index` (real model) of SciFact's abstracts written as files (as
    scripts/bench_quality.py writes them), with the embed phase timed."""
    data = Path(os.environ.get("OV_BENCH_DATA", REPO.parent / "shared" / "data")) / "scifact"
    if not data.is_dir():
        print(f"SciFact not found at {data}; skipped", file=sys.stderr)
        return None
    from bench_quality import read_corpus, write_docs

    corpus = read_corpus(data)
    if n:
        corpus = corpus[:n]
    folder = wd / f"scifact-{n or 'all'}"
    write_docs(corpus, folder, "txt")
    load0 = loadavg()
    r = bench_embed_index(folder)
    r.update(docs=len(corpus), load=f"{load0} -> {loadavg()}")
    print(f"[{loadavg()}] SciFact: bare model vs pipeline on a sample", file=sys.stderr)
    r["ratio"] = bench_model_ratio(sample_texts(folder, min(300, r["embedded"])), 3)
    r["ratio"]["load"] = loadavg()
    return r


def render_first(first: dict | None, quick: dict | None, big: dict | None, sci: dict | None) -> str:
    L = ["| measure | result | target |", "| --- | --- | --- |"]
    if first:
        r0 = first["runs"][0]
        each = ", ".join(f"{r['wall_s']:.1f}" for r in first["runs"])
        L.append(f"| `ov search \"{first['query']}\"` on a fresh copy of the stdlib, no index: time to "
                 f"the answer (keyword rows of what the first search's time budget read, worker "
                 f"started), median of {len(first['runs'])} | "
                 f"{first['wall_s']:.1f} s (runs {each}; load {r0['load']}; branches "
                 f"{r0['branches']}; {r0['coverage'].get('files') or 'all'} files read) | ≤ 10 s "
                 f"{'✓' if first['wall_s'] <= 10 else '✗'} |")
    if quick:
        L.append(f"| README quick start on a clean clone (`ov search \"{quick['query']}\"`, install "
                 f"not timed), median of {len(quick['runs'])} | {quick['wall_s']:.1f} s "
                 f"(load {quick['runs'][0]['load']}) | ≤ 10 s {'✓' if quick['wall_s'] <= 10 else '✗'} |")
    if big:
        L += [f"| `ov index --no-embed` of `{big['tree']}` ({big['files']} files, "
              f"{fmt_mb(big['bytes'])}), fresh, 1 run | {big['mb_s']:.2f} MB/s ({big['wall_s']:.1f} s "
              f"wall; load {big['load']}) | ≥ 10 MB/s {'✓' if big['mb_s'] >= 10 else '✗'} |",
              f"| its index size | {fmt_mb(big['db_bytes'])} ({big['ratio']:.2f}× the source) | ≤ 2× "
              f"{'✓' if big['ratio'] <= 2 else '✗'} |"]
    if sci:
        whole = sci["docs"] >= SCIFACT_DOCS
        L += [f"| full `ov index` of SciFact ({sci['docs']} abstracts, real model), 1 run | "
              f"{sci['index_s']:.0f} s ({sci['embed_s']:.0f} s embedding {sci['embedded']} texts, "
              f"{sci['chunks_s']:.1f}/s; load {sci['load']}) | "
              + (f"≤ 500 s idle {'✓' if sci['index_s'] <= 500 else '✗'} |" if whole else
                 f"≤ 500 s idle for all {SCIFACT_DOCS}: not measured here (a subset) |")]
        ra = sci["ratio"]
        r2 = sci["chunks_s"] / ra["bare_chunks_s"]
        L += [f"| bare model (`session.run`, pre-tokenised) on {ra['n']} of those texts (mean "
              f"{ra['mean_tokens']:.0f} tokens), batch {ra['batch_size']}, median of {ra['runs']} | "
              f"{ra['bare_chunks_s']:.1f} texts/s (load {ra['load']}) | |",
              f"| `OnnxEmbedder.embed` on the same sample / bare | **{ra['ratio']:.3f}** | ≥ 0.9 "
              f"{'✓' if ra['ratio'] >= 0.9 else '✗'} |",
              f"| the indexer's embed phase (reads, embeds, writes) / bare | **{r2:.3f}** (sample mean "
              f"length differs from the whole stream's; loads differ) | ≥ 0.9 {'✓' if r2 >= 0.9 else '✗'} |"]
    return "\n".join(L)


# ---- reporting --------------------------------------------------------------------------------


def fmt_mb(b: float) -> str:
    return f"{b / 1e6:.1f} MB"


def render(m: dict, kw: dict, re_kw: dict, emb: dict | None, re_emb: dict | None,
           ratio: dict | None, cmd: str, embed_desc: str) -> str:
    L = [f"Measured {m['date']} on {m['nproc']} cores ({m['cpu']}), Python {m['python']}, "
         f"{m['platform']}; load average at start {m['loadavg']}, at end {loadavg()} "
         "(the machine is shared, so rates are lower bounds).",
         "", f"Command: `{cmd}`", "",
         f"Tree: a copy of `{stdlib_dir()}` without site-packages and `__pycache__`: "
         f"{kw['files']} files indexed ({fmt_mb(kw['bytes'])}), {kw['chunks']} chunks "
         f"(+{kw['all_chunks'] - kw['chunks']} tier rows). Embedding tree: {embed_desc}.", "",
         "| measure | result | target |", "| --- | --- | --- |",
         f"| keywords-only index, fresh (`ov index --no-embed`), median of {kw['runs']} | "
         f"{kw['files_s']:.0f} files/s, {kw['mb_s']:.2f} MB/s ({kw['index_s']:.2f} s; "
         f"{kw['wall_s']:.2f} s wall with start-up) | |",
         f"| re-index of the unchanged stdlib (`--no-embed`), median of {re_kw['runs']} | "
         f"{re_kw['wall_s'] * 1000:.0f} ms wall ({re_kw['index_s'] * 1000:.0f} ms in the indexer) | "
         f"< 1 s {'✓' if re_kw['wall_s'] < 1 else '✗'} |",
         f"| index size, keywords only | {fmt_mb(kw['db_bytes'])} for {fmt_mb(kw['bytes'])} of "
         f"source ({kw['db_bytes'] / kw['bytes']:.2f}×) | |",
         f"| peak RSS, keywords-only index | {kw['rss_mb']:.0f} MB | ≤ 500 MB "
         f"{'✓' if kw['rss_mb'] <= 500 else '✗'} |"]
    if emb:
        L += [f"| embedding phase of a fresh full index (1 run) | {emb['chunks_s']:.1f} chunks/s "
              f"({emb['embedded']} chunks in {emb['embed_s']:.1f} s) | |",
              f"| whole fresh index with embedding (1 run) | {emb['index_s']:.1f} s "
              f"({emb['lexical_s']:.1f} s before the embed phase, model load included) | |",
              f"| peak RSS, fresh full index with embedding | {emb['rss_mb']:.0f} MB | ≤ 500 MB "
              f"{'✓' if emb['rss_mb'] <= 500 else '✗'} |",
              f"| index size with vectors | {fmt_mb(emb['db_bytes'])} for {fmt_mb(emb['bytes'])} "
              f"of source ({emb['db_bytes'] / emb['bytes']:.2f}×) | |"]
    if re_emb:
        L.append(f"| re-index of the unchanged embedded tree, median of {re_emb['runs']} | "
                 f"{re_emb['wall_s'] * 1000:.0f} ms wall ({re_emb['index_s'] * 1000:.0f} ms in the "
                 "indexer) | < 1 s |")
    if ratio:
        L += [f"| bare model (`session.run`, pre-tokenised), {ratio['n']} sampled chunks "
              f"(mean {ratio['mean_tokens']:.0f} tokens), batch {ratio['batch_size']}, median of "
              f"{ratio['runs']} | {ratio['bare_chunks_s']:.1f} chunks/s | |",
              f"| `OnnxEmbedder.embed` on the same sample | {ratio['pipeline_chunks_s']:.1f} chunks/s "
              f"→ ratio **{ratio['ratio']:.3f}** | ≥ 0.9 {'✓' if ratio['ratio'] >= 0.9 else '✗'} |"]
        if emb:
            r2 = emb["chunks_s"] / ratio["bare_chunks_s"]
            L.append(f"| indexer's embed phase (reads, embeds, writes vectors) / bare model | "
                     f"**{r2:.3f}** | ≥ 0.9 {'✓' if r2 >= 0.9 else '✗'} |")
    return "\n".join(L)


def write_section(text: str, tag: str, title: str) -> None:
    """Replace this script's block in docs/BENCHMARKS.md, leaving other sections alone."""
    start, end = f"<!-- {tag}:start -->", f"<!-- {tag}:end -->"
    doc = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    block = f"{start}\n{text}\n{end}"
    if start in doc and end in doc:
        doc = doc[:doc.index(start)] + block + doc[doc.index(end) + len(end):]
    elif f"## {title}\n" in doc:
        i = doc.index(f"## {title}\n") + len(f"## {title}\n")
        doc = doc[:i] + "\n" + block + "\n" + doc[i:]
    else:
        doc = doc.rstrip("\n") + f"\n\n## {title}\n\n{block}\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(doc)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [CHILD_FLAG]:
        child_timed_index(argv[1], argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                    help=f"where the stdlib copies and their indexes live (default {DEFAULT_WORKDIR})")
    ap.add_argument("--runs", type=int, default=3, help="fresh keywords-only runs (default 3)")
    ap.add_argument("--reindex-runs", type=int, default=5)
    ap.add_argument("--embed-tree", choices=("toplevel", "full", "none"), default="toplevel",
                    help="what to embed: top-level stdlib modules (default), all of it, or nothing")
    ap.add_argument("--embed-files", type=int, default=20,
                    help="top-level modules to embed, drawn with a fixed seed (0 = all; default 20)")
    ap.add_argument("--sample", type=int, default=1000, help="chunks for the bare-model ratio")
    ap.add_argument("--ratio-runs", type=int, default=3)
    ap.add_argument("--write-docs", action="store_true", help="update docs/BENCHMARKS.md")
    ap.add_argument("--first-only", action="store_true",
                    help="only the answer-first measures (first search, quick start, big tree, SciFact)")
    ap.add_argument("--first-runs", type=int, default=3, help="first-search runs (0 = skip)")
    ap.add_argument("--quickstart-runs", type=int, default=1, help="quick-start runs (0 = skip)")
    ap.add_argument("--big-tree", type=Path, help="a tree of 100 MB+ for `ov index --no-embed`")
    ap.add_argument("--scifact", type=int, default=-1,
                    help="index SciFact's first N abstracts with the real model (0 = all; default skip)")
    args = ap.parse_args(argv)
    if args.first_only:
        return first_only(args, argv)

    m = machine_info()
    wd = args.workdir
    wd.mkdir(parents=True, exist_ok=True)
    tree = copy_stdlib(wd / "stdlib")
    print(f"[{loadavg()}] keywords-only: {args.runs} fresh runs on {tree}", file=sys.stderr)
    kw = bench_keywords(tree, args.runs)
    print(f"[{loadavg()}] re-index x{args.reindex_runs}", file=sys.stderr)
    re_kw = bench_reindex(tree, args.reindex_runs, "--no-embed")

    emb = re_emb = ratio = None
    embed_desc = "none"
    if args.embed_tree != "none":
        if args.embed_tree == "full":
            etree = copy_stdlib(wd / "stdlib-embed")
            embed_desc = "the whole stdlib copy"
        else:
            etree = copy_toplevel_modules(wd / "stdlib-top", args.embed_files)
            embed_desc = (f"{args.embed_files or 'all'} of the stdlib's top-level `*.py` modules "
                          "(drawn with seed 0; a subset, since embedding all of the stdlib's chunks "
                          "does not fit the time on 2 shared cores)")
        print(f"[{loadavg()}] fresh index with embedding of {etree}", file=sys.stderr)
        emb = bench_embed_index(etree)
        embed_desc += f": {emb['files']} files, {fmt_mb(emb['bytes'])}, {emb['embedded']} chunks embedded"
        print(f"[{loadavg()}] re-index of the embedded tree x{args.reindex_runs}", file=sys.stderr)
        re_emb = bench_reindex(etree, args.reindex_runs)
        print(f"[{loadavg()}] bare model vs pipeline on {args.sample} sampled chunks", file=sys.stderr)
        ratio = bench_model_ratio(sample_texts(etree, args.sample), args.ratio_runs)

    cmd = "python3 scripts/bench_index.py " + " ".join(argv)
    text = render(m, kw, re_kw, emb, re_emb, ratio, cmd.strip(), embed_desc)
    print(text)
    raw = {"machine": m, "keywords": kw, "reindex": re_kw, "embed": emb, "reindex_embed": re_emb,
           "ratio": ratio}
    (wd / "bench_index.json").write_text(json.dumps(raw, indent=2, default=str))
    if args.write_docs:
        write_section(text, "bench_index", "Indexing")


def first_only(args, argv) -> None:
    m = machine_info()
    wd = args.workdir
    wd.mkdir(parents=True, exist_ok=True)
    src = copy_stdlib(wd / "stdlib")
    first = bench_first_answer(src, wd, args.first_runs) if args.first_runs else None
    quick = bench_quickstart(wd, args.quickstart_runs) if args.quickstart_runs else None
    big = bench_big_tree(args.big_tree) if args.big_tree else None
    sci = bench_scifact(wd, args.scifact) if args.scifact >= 0 else None
    text = (f"Measured {m['date']} on {m['nproc']} cores ({m['cpu']}); load average at start "
            f"{m['loadavg']}, at end {loadavg()} (shared machine: wall times are upper bounds).\n\n"
            f"Command: `python3 scripts/bench_index.py {' '.join(argv)}`\n\n"
            + render_first(first, quick, big, sci))
    print(text)
    (wd / "bench_first.json").write_text(json.dumps(
        {"machine": m, "first": first, "quickstart": quick, "big": big, "scifact": sci}, indent=2, default=str))
    if args.write_docs:
        write_section(text, "bench_first", "Answer first")


if __name__ == "__main__":
    main()
