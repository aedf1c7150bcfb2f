"""Context mode on labelled data: how often the block holds a relevant document's passage.

    python3 scripts/bench_context.py scifact --split test --max-tokens 1000 --no-embed
    OV_SOURCE=/path/to/other/checkout python3 scripts/bench_context.py scifact ...

For each query of the split, `ov search QUERY --mode context --max-tokens N -o json` runs
through the CLI's entry point (`ov.cli.app.main`, in this process), and the block counts as
holding the evidence when an entry of a relevant document serves its text: tier
`passage` (the part that matched) or `full` (the whole document). Reported: that
fraction, the fraction with a relevant document at any tier (an abstract, an overview, a
bare uri), entries and tokens used per query (medians), and the tiers served.

The documents are written one a file as scripts/bench_quality.py writes them (its work
folder and file names), and indexed with `--no-embed` (keywords only; the searches then
run `--search-type keywords`) or with the real model. The data is read from
../shared/data/DATASET; without it the script says so and exits. `OV_SOURCE` points the
imports at another checkout of ov, to measure its context mode on the same index.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("OV_SOURCE", str(REPO)))
sys.path.insert(1, str(REPO / "scripts"))

import bench_quality as bq  # noqa: E402  (its dataset reading and file layout)

sys.path.insert(0, os.environ.get("OV_SOURCE", str(REPO)))  # before the one bench_quality adds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--split", default="test")
    ap.add_argument("--max-tokens", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=10, help="candidates (ov's -n; default 10)")
    ap.add_argument("--no-embed", action="store_true", help="keyword-only index and search")
    ap.add_argument("--detail", default=None, help="pass --detail to every call")
    ap.add_argument("--work", type=Path, default=None, help="folder of the documents and index")
    args = ap.parse_args()

    d = bq.dataset_dir(args.dataset)
    qrels_path = d / f"qrels-{args.split}.tsv"
    if not qrels_path.exists():
        sys.exit(f"no {qrels_path}: the labelled data is absent")
    qrels: dict[str, set[str]] = {}
    for line in qrels_path.read_text(encoding="utf-8").splitlines()[1:]:
        q, doc, score = line.strip().split("\t")
        if int(score) > 0:
            qrels.setdefault(q, set()).add(doc)
    queries = {}
    import gzip  # noqa: PLC0415

    with gzip.open(d / "queries.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            if str(o["_id"]) in qrels:
                queries[str(o["_id"])] = o["text"]

    work = args.work or Path(f"/tmp/ov-bench-context/{args.dataset}-{'kw' if args.no_embed else 'model'}")
    folder = work / "docs"
    back = bq.write_docs(bq.read_corpus(d), folder, bq.CODE_SETS.get(args.dataset, "txt"))
    db = folder / ".ov" / "index.db"
    if not db.exists():
        env = dict(os.environ)
        env.pop("OV_EMBEDDER", None)
        cmd = [sys.executable, "-m", "ov", "index", str(folder), "--no-progress"]
        t0 = time.perf_counter()
        subprocess.run(cmd + (["--no-embed"] if args.no_embed else []), check=True, env=env,
                       cwd=folder)
        print(f"indexed {len(back)} documents in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    from ov import engine  # noqa: PLC0415
    from ov.cli.app import main as ov_main  # noqa: PLC0415

    if not args.no_embed:  # the query encoder once per process, as bench_quality does
        emb = engine._default_embedder()
        engine._default_embedder = lambda: emb

    evidence = anywhere = 0
    entries, used, times = [], [], []
    tiers: Counter = Counter()
    rel_tiers: Counter = Counter()
    for qid, text in queries.items():
        argv = ["search", text, "--mode", "context", "--max-tokens", str(args.max_tokens),
                "-n", str(args.limit), "-o", "json", "--db", str(db), "--no-auto-index"]
        if args.no_embed:
            argv += ["--search-type", "keywords"]
        if args.detail:
            argv += ["--detail", args.detail]
        buf = io.StringIO()
        t0 = time.perf_counter()
        with redirect_stdout(buf), redirect_stderr(io.StringIO()):
            try:
                ov_main(argv)
            except SystemExit as e:
                if e.code not in (0, 1, None):
                    raise RuntimeError(f"ov exited {e.code}: {buf.getvalue()[-500:]}") from None
        times.append(time.perf_counter() - t0)
        res = json.loads(buf.getvalue())["result"]
        rel = qrels[qid]
        got = [(back.get(Path(e["uri"]).name), e["detail"]) for e in res["entries"]]
        tiers.update(t for _, t in got)
        rel_tiers.update(t for doc, t in got if doc in rel)
        evidence += any(doc in rel and t in ("passage", "full") for doc, t in got)
        anywhere += any(doc in rel for doc, _ in got)
        entries.append(len(got))
        used.append(res["stats"]["used_tokens"])
    n = len(queries)
    out = {
        "dataset": args.dataset, "split": args.split, "queries": n, "max_tokens": args.max_tokens,
        "limit": args.limit, "index": "keywords only (--no-embed)" if args.no_embed else "real model",
        "source": os.environ.get("OV_SOURCE", str(REPO)),
        "relevant_passage_in_block": round(evidence / n, 4),
        "relevant_doc_in_block_any_tier": round(anywhere / n, 4),
        "median_entries": statistics.median(entries), "median_used_tokens": statistics.median(used),
        "tiers_served": dict(tiers), "tiers_of_relevant_docs": dict(rel_tiers),
        "median_query_ms": round(1000 * statistics.median(times), 1),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
