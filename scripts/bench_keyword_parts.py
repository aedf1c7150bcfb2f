"""Where `ov index --no-embed`'s CPU goes, per MB of source, part by part (issue 13.4).

    python3 scripts/bench_keyword_parts.py --tree /tmp/fs
    python3 scripts/bench_keyword_parts.py --tree /tmp/fs --parts
    python3 scripts/bench_keyword_parts.py --tree /tmp/fs --model-cut

The keyword phase runs in two kinds of process: pool workers read each file and compute its
rows (`ov.indexer._prepare`: tiers, passages, grep's trigram text, the camelCase words) and
pickle them; one writer unpickles them and stores them (`ov.indexer._write_file`: the
chunks, their FTS5 keyword rows, grep's `files_tri` row). On two cores the run is bound by
their total CPU, and the writer alone by its own. This times both sides in one process, the
same files, best of `--runs`:

- workers: `_prepare` and `pickle.dumps` of every file;
- writer: `pickle.loads` and `_write_file` of every file into a fresh index, committed
  every 200 files as `ov index` does.

The passages are cut as `ov index --no-embed` cuts a fresh index's (for keywords alone,
ov.chunk.line_cut); `--model-cut` cuts them to the model's window, as an index with vectors
has them. With `--parts` it also times the pieces of `_prepare` on their own (tiers, passages,
`trigram_doc`, `camel_words`). Nothing is written under the tree: the index goes to a
temporary folder.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ov import indexer as ix  # noqa: E402
from ov.store import Store, trigram_doc  # noqa: E402
from ov.walk import walk  # noqa: E402


def jobs_of(tree: Path, model_cut: bool = False) -> list:
    """`_prepare`'s jobs for a fresh keywords-only index of `tree` (its passages cut for
    keywords alone, ov.indexer.KEYWORDS_LAYOUT), or cut to the model's window."""
    opts = dataclasses.replace(ix.options_for(tree, ix.walk_from_config(tree), embed=False), keyword_cut=not model_cut)
    return [(str(tree), e.path, opts.walk.max_filesize, None, opts, None) for e in walk(tree, opts.walk)]


def workers(jobs: list) -> tuple[float, list[bytes], int]:
    """CPU-s of preparing and pickling every file; the pickles; the bytes of text."""
    t = time.process_time()
    blobs, size = [], 0
    for job in jobs:
        prep = ix._prepare(job)
        if isinstance(prep[2], ix._Rows):
            blobs.append(pickle.dumps(prep))
            size += prep[2].size
    return time.process_time() - t, blobs, size


def writer(blobs: list[bytes], tree: Path) -> float:
    """CPU-s of unpickling and writing every file into a fresh index."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.create(Path(tmp) / ".ov" / "index.db")
        report = ix.IndexReport(root=str(tree))
        t = time.process_time()
        with store.batches() as batches:
            for n, blob in enumerate(blobs, 1):
                path, state, rows = pickle.loads(blob)
                ix._write_file(store, path, rows, state, report, reuse=True, trigrams=True)
                if n % ix.COMMIT_FILES == 0:
                    batches.commit()
        spent = time.process_time() - t
        store.close()
    return spent


def parts(jobs: list, mb: float, cut: bool) -> dict[str, float]:
    """ms per MB of the pieces of `_prepare`, each timed alone."""
    from ov.read import read_under  # noqa: PLC0415
    from ov.store import camel_words  # noqa: PLC0415

    files = []
    for root, path, max_bytes, *_ in jobs:
        ft = read_under(root, path, max_bytes=max_bytes)
        if ft is not None:
            files.append((path, ft.text))
    out: dict[str, float] = {}
    bodies: dict[str, list] = {}

    def timed(name, fn):
        t = time.process_time()
        for path, text in files:
            fn(path, text)
        out[name] = round((time.process_time() - t) * 1000 / mb, 1)

    timed("tiers", lambda p, x: ix.tier_chunks(x, p))
    timed("passages", lambda p, x: bodies.__setitem__(p, ix.passages(x, p, cut)))
    timed("trigram_doc", lambda p, x: trigram_doc([(c.start, c.end, c.text) for c in bodies[p]]))
    timed("camel_words", lambda p, x: [camel_words(c.text) for c in bodies[p]])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--parts", action="store_true", help="also time the pieces of _prepare")
    ap.add_argument("--model-cut", action="store_true",
                    help="passages cut to the model's window, as an index with vectors has them")
    a = ap.parse_args()
    tree = a.tree.resolve()
    jobs = jobs_of(tree, a.model_cut)
    w_cpu = min(workers(jobs)[0] for _ in range(a.runs))
    _, blobs, size = workers(jobs)
    mb = size / 1e6
    r_cpu = min(writer(blobs, tree) for _ in range(a.runs))
    print(f"{tree}: {len(blobs)} files, {mb:.1f} MB of text, best of {a.runs}")
    print(f"workers (prepare + pickle): {w_cpu * 1000 / mb:.1f} ms of CPU per MB")
    print(f"writer (unpickle + write):  {r_cpu * 1000 / mb:.1f} ms of CPU per MB")
    print(f"pickled rows: {sum(map(len, blobs)) / 1e6 / mb:.2f} MB per MB of text")
    total = (w_cpu + r_cpu) * 1000 / mb
    print(f"two cores bound the rate at {1000 / max(r_cpu * 1000 / mb, total / 2):.1f} MB/s "
          "(max(writer, (writer + workers) / 2), before the pool's own costs)")
    if a.parts:
        print("parts of prepare (ms per MB):", parts(jobs, mb, not a.model_cut))


if __name__ == "__main__":
    main()
