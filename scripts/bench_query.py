"""Query benchmarks (issue 3): the CLI end to end, and the engine on 100,000 chunks.

    python3 scripts/bench_query.py                  # both parts, writes nothing
    python3 scripts/bench_query.py --write-docs     # and fills docs/BENCHMARKS.md
    python3 scripts/bench_query.py --part synthetic --profile

Part "cli": wall-clock time of `python -m ov search --search-type keywords`, `ov find`
and `ov search` (hybrid) in a child process, on the embedded index that
scripts/bench_index.py leaves in its work folder (built here if missing), median over
several realistic queries x runs after a warm-up; and whether a keywords search imports
onnxruntime (`python -X importtime`).

Part "synthetic": `ov.engine.search` in-process on an index of 100,000 chunks built
directly through `ov.store.Store` (text drawn from the stdlib's own vocabulary, random
unit vectors, real files on disk so the currentness recheck does its usual work), for
keywords, semantic and hybrid, without and with each filter (`-u`, `-t`, `--after`).
The query vector is a fixed random unit vector: this part times the index, not the
model (a query's embedding adds what scripts/bench_embed.py --profiles reports).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import bench_index as bi  # noqa: E402

QUERIES = [
    "parse command line arguments",
    "read a file inside a zip archive",
    "thread pool shutdown and wait for pending futures",
    "format a date as an ISO 8601 string",
    "compare two sequences and show the differences",
]
CLI_TARGETS_MS = {"keywords": 150, "find": 300, "hybrid": 300}
SYN_TARGETS_MS = {"keywords": 50, "semantic": 150, "hybrid": 150}
HEAVY_MODULES = ("onnxruntime", "tokenizers", "numpy", "sqlite_utils", "rich")


# ---- part 1: the CLI ------------------------------------------------------------------------


def ensure_embedded_tree(wd: Path, n_files: int) -> Path:
    tree = bi.copy_toplevel_modules(wd / "stdlib-top", n_files)
    db = tree / ".ov" / "index.db"
    if not db.is_file() or bi.indexed_stats(tree)["embedded"] == 0:
        print(f"building an embedded index of {tree} (once)", file=sys.stderr)
    bi.ov_index(tree)  # incremental: only a re-index when scripts/bench_index.py built it
    return tree


def cli_argv(kind: str, query: str) -> list[str]:
    base = [sys.executable, "-P", "-m", "ov"]  # -P: the searched tree is not on sys.path
    if kind == "keywords":
        return base + ["search", query, "--search-type", "keywords", "-o", "json", "--no-auto-index"]
    if kind == "find":
        return base + ["find", query, "-o", "json", "--no-auto-index"]
    return base + ["search", query, "-o", "json", "--no-auto-index"]


def time_cli(tree: Path, kind: str, runs: int) -> dict:
    per_query: dict[str, float] = {}
    all_ms: list[float] = []
    for q in QUERIES:
        argv = cli_argv(kind, q)
        subprocess.run(argv, cwd=tree, capture_output=True, env=bi.child_env())  # warm-up
        ms = []
        for _ in range(runs):
            t = time.perf_counter()
            p = subprocess.run(argv, cwd=tree, capture_output=True, env=bi.child_env())
            ms.append((time.perf_counter() - t) * 1000)
            if p.returncode not in (0, 1):
                raise RuntimeError(f"{argv} exited {p.returncode}: {p.stdout[-500:]!r} {p.stderr[-500:]!r}")
        per_query[q] = statistics.median(ms)
        all_ms += ms
    return {"median_ms": statistics.median(all_ms), "runs": len(all_ms), "per_query": per_query}


def baseline_ms(runs: int) -> dict:
    """What any Python child costs here: the interpreter alone, and `ov --help`."""
    out = {}
    for name, argv in (("python -c pass", [sys.executable, "-c", "pass"]),
                       ("ov --help", [sys.executable, "-P", "-m", "ov", "--help"])):
        subprocess.run(argv, capture_output=True, env=bi.child_env())
        ms = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(argv, capture_output=True, env=bi.child_env())
            ms.append((time.perf_counter() - t) * 1000)
        out[name] = statistics.median(ms)
    return out


def import_report(tree: Path, kind: str) -> dict:
    """Modules a search imports (`-X importtime`): heavy ones present, top cumulative costs."""
    p = subprocess.run([sys.executable, "-X", "importtime", *cli_argv(kind, QUERIES[0])[1:]],
                       cwd=tree, capture_output=True, text=True,
                       env=bi.child_env())
    rows = []
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), len(m.group(3)), m.group(4)))
    names = {r[2] for r in rows}
    heavy = {h: any(n == h or n.startswith(h + ".") for n in names) for h in HEAVY_MODULES}
    top = sorted((r for r in rows if r[1] <= 2), reverse=True)[:8]  # top-level imports
    return {"heavy": heavy, "top": [(n, us / 1000) for us, _, n in top],
            "modules": len(names)}


def bench_cli(wd: Path, runs: int, n_files: int) -> dict:
    tree = ensure_embedded_tree(wd, n_files)
    st = bi.indexed_stats(tree)
    res = {"tree": str(tree), "stats": st, "baseline": baseline_ms(runs)}
    for kind in ("keywords", "find", "hybrid"):
        print(f"[{bi.loadavg()}] cli {kind}", file=sys.stderr)
        res[kind] = time_cli(tree, kind, runs)
    full = wd / "stdlib"
    if (full / ".ov" / "index.db").is_file():
        print(f"[{bi.loadavg()}] cli keywords on the whole stdlib", file=sys.stderr)
        res["keywords_full"] = time_cli(full, "keywords", runs)
        res["full_stats"] = bi.indexed_stats(full)
    res["imports"] = {k: import_report(tree, k) for k in ("keywords", "hybrid")}
    return res


# ---- part 2: a synthetic index of 100,000 chunks -------------------------------------------------


class FixedEmbedder:
    """A query embedder that returns one fixed random unit vector per query text."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.dim = 384

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    def embed(self, texts, batch_size: int = 8):
        import numpy as np

        out = []
        for t in texts:
            rng = np.random.default_rng(abs(hash(t)) % (1 << 32))
            v = rng.standard_normal(384).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


SYN_MODEL = "synthetic-random-384"
SYN_EXTS = [(".py", 0.6), (".md", 0.25), (".txt", 0.15)]


def stdlib_vocabulary() -> tuple[list[str], list[int]]:
    words: Counter[str] = Counter()
    for p in sorted(bi.stdlib_dir().glob("*.py")):
        try:
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{1,}", p.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    top = words.most_common(20000)
    return [w for w, _ in top], [c for _, c in top]


def file_type_of(name: str) -> str:
    try:
        from ov import kinds

        return kinds.file_type(name)
    except ImportError:
        return {"py": "python", "md": "markdown"}.get(name.rsplit(".", 1)[-1], "text")


def build_synthetic(root: Path, n_chunks: int, per_file: int = 20, seed: int = 0) -> Path:
    """Files on disk + an index of them with random unit vectors; reused when present."""
    import numpy as np

    from ov.model import Chunk
    from ov.read import content_hash
    from ov.store import Store

    db = root / ".ov" / "index.db"
    tag = f"{n_chunks}/{per_file}/{seed}"
    if db.is_file():
        with Store.open(db) as s:  # writable: an index from an older ov is upgraded in place
            if s.get_meta("synthetic") == tag:
                return db
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    vocab, weights = stdlib_vocabulary()
    cum = list(__import__("itertools").accumulate(weights))
    now = time.time()
    n_files = (n_chunks + per_file - 1) // per_file
    store = Store.create(db)
    t0 = time.perf_counter()
    made = 0
    try:
        store.conn.execute("BEGIN IMMEDIATE")
        for fi in range(n_files):
            ext = rnd.choices([e for e, _ in SYN_EXTS], [w for _, w in SYN_EXTS])[0]
            rel = f"pkg{fi % 50:02d}/sub{(fi // 50) % 10}/mod{fi:05d}{ext}"
            chunks, pos, line = [], 0, 1
            parts = []
            for _ in range(min(per_file, n_chunks - made)):
                words = rnd.choices(vocab, cum_weights=cum, k=rnd.randint(80, 160))
                lines = [" ".join(words[i:i + 10]) for i in range(0, len(words), 10)]
                text = "\n".join(lines) + "\n"
                nl = text.count("\n")
                chunks.append(Chunk(pos, pos + len(text), line, line + nl - 1, text))
                parts.append(text + "\n")
                pos += len(text) + 1
                line += nl + 1
            made += len(chunks)
            full = root / rel
            full.parent.mkdir(parents=True, exist_ok=True)
            data = "".join(parts).encode("utf-8")
            full.write_bytes(data)
            mtime_ns = int((now - rnd.uniform(0, 365 * 86400)) * 1e9)
            os.utime(full, ns=(mtime_ns, mtime_ns))
            fid = store.upsert_file(rel, len(data), mtime_ns, content_hash(data),
                                    ftype=file_type_of(rel), category="synthetic", tags={})
            ids = store.insert_chunks(fid, chunks)
            vecs = rng.standard_normal((len(ids), 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store.store_vectors(ids, [v.tobytes() for v in vecs], [content_hash(c.text.encode()) for c in chunks])
            if fi % 200 == 199:
                store.conn.execute("COMMIT")
                store.conn.execute("BEGIN IMMEDIATE")
                print(f"  synthetic: {made} chunks, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        store.set_meta("model", SYN_MODEL)
        store.set_meta("root", str(root))
        store.bump_generation()
        store.set_meta("synthetic", tag)
        store.conn.execute("COMMIT")
    finally:
        store.close()
    print(f"  synthetic index built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return db


def syn_filters(store) -> dict:
    from ov.store import Filters

    after = time.time() - 30 * 86400
    md = store.q1("SELECT ftype FROM files WHERE path LIKE '%.md' LIMIT 1")  # as stored
    return {
        "none": Filters(),
        "-u pkg07": Filters(uris=("pkg07",)),
        "-t markdown": Filters(ftypes=(md,)),
        "--after 30d": Filters(after=after),
        "all three": Filters(uris=("pkg07",), ftypes=(md,), after=after),
    }


def time_search(store, root: Path, kind: str, filters, runs: int, queries=QUERIES) -> tuple[float, int]:
    from ov.engine import SearchRequest, search

    emb = FixedEmbedder(SYN_MODEL)
    ms, hits = [], 0
    for q in queries:
        req = SearchRequest(query=q, search_type=kind, limit=10, filters=filters)
        search(store, root, req, embedder_factory=lambda: emb)  # warm-up
        for _ in range(runs):
            t = time.perf_counter()
            res = search(store, root, req, embedder_factory=lambda: emb)
            ms.append((time.perf_counter() - t) * 1000)
        hits += len(res.hits)
    return statistics.median(ms), hits


def profile_search(store, root: Path, kind: str, filters, query: str, top: int = 14) -> str:
    from ov.engine import SearchRequest, search

    emb = FixedEmbedder(SYN_MODEL)
    req = SearchRequest(query=query, search_type=kind, limit=10, filters=filters)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3):
        search(store, root, req, embedder_factory=lambda: emb)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def bench_synthetic(wd: Path, n_chunks: int, runs: int, profile: bool) -> dict:
    from ov.store import Store

    root = wd / "synthetic"
    db = build_synthetic(root, n_chunks)
    res: dict = {"chunks": n_chunks, "db_bytes": bi.db_bytes(root), "results": {}, "profiles": {}}
    with Store.open(db) as store:
        res["stats"] = store.counts()
        for fname, flt in syn_filters(store).items():
            for kind in ("keywords", "semantic", "hybrid"):
                med, hits = time_search(store, root, kind, flt, runs)
                res["results"][f"{kind} | {fname}"] = {"median_ms": med, "hits": hits}
                print(f"[{bi.loadavg()}] {kind:8s} {fname:12s} {med:7.1f} ms  ({hits} hits)",
                      file=sys.stderr)
                if profile and med > SYN_TARGETS_MS[kind]:
                    res["profiles"][f"{kind} | {fname}"] = profile_search(store, root, kind, flt, QUERIES[2])
    return res


# ---- reporting ----------------------------------------------------------------------------------


def mark(ms: float, target: float) -> str:
    return f"{target:.0f} ms {'✓' if ms <= target else '✗'}"


def render(m: dict, cli: dict | None, syn: dict | None, cmd: str) -> str:
    L = [f"Measured {m['date']} on {m['nproc']} cores ({m['cpu']}), Python {m['python']}; "
         f"load average at start {m['loadavg']}, at end {bi.loadavg()} (shared machine).", "",
         f"Command: `{cmd}`", "", "Queries: " + "; ".join(f"“{q}”" for q in QUERIES) + ".", ""]
    if cli:
        st = cli["stats"]
        L += ["### End to end (CLI, wall clock, one child process per query)", "",
              f"Index: the stdlib subset embedded by scripts/bench_index.py, with vectors ({st['files']} files, "
              f"{st['chunks']} chunks, {st['embedded']} rows embedded), `-o json`, "
              f"median of {cli['keywords']['runs']} runs (each query once as warm-up, then "
              f"{cli['keywords']['runs'] // len(QUERIES)} timed). Children cache their bytecode "
              "(`PYTHONPYCACHEPREFIX`), as an installed package does; this machine sets "
              "`PYTHONDONTWRITEBYTECODE=1`, under which every run also recompiles ov's modules.", "",
              "| command | median | target |", "| --- | --- | --- |",
              f"| `ov search --search-type keywords` | {cli['keywords']['median_ms']:.0f} ms | "
              f"{mark(cli['keywords']['median_ms'], CLI_TARGETS_MS['keywords'])} |"]
        if "keywords_full" in cli:
            fs = cli["full_stats"]
            L.append(f"| same, on the whole stdlib keyword index ({fs['files']} files, {fs['chunks']} "
                     f"chunks) | {cli['keywords_full']['median_ms']:.0f} ms | "
                     f"{mark(cli['keywords_full']['median_ms'], CLI_TARGETS_MS['keywords'])} |")
        L += [f"| `ov find` | {cli['find']['median_ms']:.0f} ms | "
              f"{mark(cli['find']['median_ms'], CLI_TARGETS_MS['find'])} |",
              f"| `ov search` (hybrid) | {cli['hybrid']['median_ms']:.0f} ms | "
              f"{mark(cli['hybrid']['median_ms'], CLI_TARGETS_MS['hybrid'])} |"]
        for name, ms in cli["baseline"].items():
            L.append(f"| for scale: `{name}` | {ms:.0f} ms | |")
        L.append("")
        for kind, rep in cli["imports"].items():
            loaded = [h for h, v in rep["heavy"].items() if v]
            L.append(f"- A {kind} search imports {rep['modules']} modules; of "
                     f"{', '.join(HEAVY_MODULES)} it loads: {', '.join(loaded) or 'none'}. "
                     "Costliest top-level imports: "
                     + ", ".join(f"{n} {ms:.0f} ms" for n, ms in rep["top"][:5]) + ".")
        L.append("")
    if syn:
        st = syn["stats"]
        L += [f"### In-process, synthetic index of {syn['chunks']:,} chunks", "",
              f"{st['chunks']} chunks in {st['chunks'] // 20} files (20 per file, 50 folders, "
              f"60 % .py, 25 % .md, 15 % .txt, mtimes spread over a year), text drawn from the "
              f"stdlib's vocabulary by frequency, random unit vectors; index "
              f"{syn['db_bytes'] / 1e6:.0f} MB. `ov.engine.search(..., limit=10)`, median over the "
              "queries above x runs after a warm-up; the query vector is fixed (no model).", "",
              "| search type | filter | median | target |", "| --- | --- | --- | --- |"]
        for key, r in syn["results"].items():
            kind, fname = key.split(" | ")
            L.append(f"| {kind} | {fname} | {r['median_ms']:.1f} ms | "
                     f"{mark(r['median_ms'], SYN_TARGETS_MS[kind])} |")
        L.append("")
        L.append("Filters: `-u pkg07` = 2 % of the files; `-t markdown` = ~25 %; `--after 30d` = "
                 "~8 %; \"all three\" combines them.")
    return "\n".join(L)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=bi.DEFAULT_WORKDIR)
    ap.add_argument("--part", choices=("cli", "synthetic", "all"), default="all")
    ap.add_argument("--runs", type=int, default=3, help="timed CLI runs per query (x5 queries)")
    ap.add_argument("--syn-runs", type=int, default=5, help="timed in-process runs per query")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--embed-files", type=int, default=20,
                    help="as in bench_index.py: which embedded stdlib subset to query")
    ap.add_argument("--profile", action="store_true", help="cProfile searches that miss a target")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(argv)

    m = bi.machine_info()
    args.workdir.mkdir(parents=True, exist_ok=True)
    cli = bench_cli(args.workdir, args.runs, args.embed_files) if args.part in ("cli", "all") else None
    syn = (bench_synthetic(args.workdir, args.chunks, args.syn_runs, args.profile)
           if args.part in ("synthetic", "all") else None)
    text = render(m, cli, syn, ("python3 scripts/bench_query.py " + " ".join(argv)).strip())
    print(text)
    if syn and syn["profiles"]:
        for key, prof in syn["profiles"].items():
            print(f"\n---- profile: {key} ----\n{prof}", file=sys.stderr)
    (args.workdir / f"bench_query_{args.part}.json").write_text(
        json.dumps({"machine": m, "cli": cli, "synthetic": syn}, indent=2, default=str))
    if args.write_docs:
        bi.write_section(text, "bench_query", "Queries")


if __name__ == "__main__":
    main()
