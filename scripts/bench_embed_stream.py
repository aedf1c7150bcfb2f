"""The indexer's embed phase against the bare model on the same token stream (issue 13).

    python3 scripts/bench_embed_stream.py --docs 1000 --rounds 3
    python3 scripts/bench_embed_stream.py --tree /tmp/some-tree --rounds 3

`scripts/bench_index.py --scifact` times the embed phase of a full `ov index`, then the bare
model on a sample of its texts minutes later: on a machine whose speed moves within the
hour that ratio read 0.78-1.20 for the same code. This one times both in one process,
alternated, on the same texts:

- the tree (SciFact's first `--docs` abstracts written as files, as bench_quality.py writes
  them, from ../shared/data or $OV_BENCH_DATA; or `--tree`) is indexed once without vectors
  but cut for the model (`embed_later`, as a first search's build is), and the file kept;
- each round copies that index and runs `ov.indexer.embed_phase` on the copy (it reads the
  pending rows, hashes their text, embeds them, writes the vectors, commits every 256),
  recording the texts each of its `embed()` calls was given;
- then the bare model on exactly those calls: each call's texts tokenised and grouped as
  `embed()` groups them, before the clock starts; only `session.run` is timed.

Reported: each round's seconds, the medians, and phase / bare as texts a second (≥ 0.9 is
issue 13's target). Nothing is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))


class Recording:
    """The embedder, its `embed()` calls' texts recorded."""

    def __init__(self, embedder) -> None:
        self._e, self.calls = embedder, []

    def __getattr__(self, name):
        return getattr(self._e, name)

    def embed(self, texts, *args, **kwargs):
        self.calls.append(list(texts))
        return self._e.embed(texts, *args, **kwargs)


def keyword_index(tree: Path, db: Path) -> None:
    """`tree` indexed without vectors, its passages cut for the model."""
    import dataclasses

    from ov import indexer as ix

    opts = dataclasses.replace(ix.options_for(tree, ix.walk_from_config(tree), embed=False), embed_later=True)
    ix.index_tree(tree, db, opts)


def phase_once(db: Path, work: Path, embedder) -> tuple[float, list[list[str]]]:
    """Seconds of `embed_phase` on a copy of `db`; the texts of its `embed()` calls."""
    from ov import indexer as ix
    from ov.store import Store

    copy = work / "copy" / "index.db"
    shutil.rmtree(copy.parent, ignore_errors=True)
    copy.parent.mkdir(parents=True)
    for suffix in ("", "-wal"):  # (closed, the index has no WAL left; copied if it has)
        if Path(f"{db}{suffix}").exists():
            shutil.copy2(f"{db}{suffix}", f"{copy}{suffix}")
    rec = Recording(embedder)
    store = Store.open(copy)
    try:
        t = time.perf_counter()
        ix.embed_phase(store, ix.IndexReport(root=str(work)), None, rec)
        spent = time.perf_counter() - t
    finally:
        store.close()
    return spent, rec.calls


def bare_once(embedder, calls: list[list[str]]) -> float:
    """Seconds of `session.run` alone over `calls`, each grouped as `embed()` groups it."""
    from bench_embed import _grouped_batches

    from ov.embed import DEFAULT_BATCH_SIZE

    feeds = [feed for texts in calls for feed in _grouped_batches(embedder, texts, DEFAULT_BATCH_SIZE)]
    sess = embedder.session
    t = time.perf_counter()
    for feed in feeds:
        sess.run(["last_hidden_state"], feed)
    return time.perf_counter() - t


def scifact_tree(work: Path, docs: int) -> Path | None:
    data = Path(os.environ.get("OV_BENCH_DATA", REPO.parent / "shared" / "data")) / "scifact"
    if not data.is_dir():
        print(f"SciFact not found at {data}: give --tree", file=sys.stderr)
        return None
    from bench_quality import read_corpus, write_docs

    tree = work / "tree"
    write_docs(read_corpus(data)[:docs], tree, "txt")
    return tree


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="a tree to index (default: SciFact's first --docs abstracts)")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    from ov.embed import load_embedder

    with tempfile.TemporaryDirectory(prefix="ov-embed-stream-") as tmp:
        work = Path(tmp)
        tree = a.tree.resolve() if a.tree else scifact_tree(work, a.docs)
        if tree is None:
            return 2
        db = work / "kw" / "index.db"
        keyword_index(tree, db)
        embedder = load_embedder("index")
        embedder.embed(["warm up"] * 8)  # (arenas, caches)
        phase, bare, texts = [], [], 0
        for i in range(a.rounds):
            p, calls = phase_once(db, work, embedder)
            b = bare_once(embedder, calls)
            texts = sum(map(len, calls))
            phase.append(p)
            bare.append(b)
            print(json.dumps({"round": i + 1, "texts": texts, "phase_s": round(p, 2), "bare_s": round(b, 2),
                              "ratio": round(b / p, 3), "load": os.getloadavg()[0]}), flush=True)
        p, b = statistics.median(phase), statistics.median(bare)
        print(json.dumps({"tree": str(tree), "texts": texts, "rounds": a.rounds, "phase_s": round(p, 2),
                          "bare_s": round(b, 2), "phase_texts_s": round(texts / p, 1),
                          "bare_texts_s": round(texts / b, 1), "ratio": round(b / p, 3),
                          "ratios": [round(y / x, 3) for x, y in zip(phase, bare)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
