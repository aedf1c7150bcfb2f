"""A leaner keyword layout, measured before it is built (issue 13.4): what one keyword row per
file and a trigram prefilter built outside SQLite would cost on a real tree.

    python3 scripts/bench_kwlayout.py --tree /work/linux-grep
    python3 scripts/bench_kwlayout.py --tree /tmp/fs --check ext4_fc_replay_inode kmalloc

ov's index today cuts every file into passages (about 200 model tokens) in worker processes,
and one writer stores a keyword row per passage (`chunks`, `chunks_fts`) and grep's prefilter
(`files_tri`, an FTS5 trigram table over each file's distinct words). That writer alone needs
~0.24 CPU-s per MB of source (docs/BENCHMARKS.md), which caps `ov index --no-embed` near
4 MB/s before any cutting. This script times, part by part in one process, the layout that
would replace it for the keyword phase:

- the worker's part: read, decode, hash, and the file's set of case-folded byte trigrams
  (numpy: each trigram a 24-bit number, `np.unique`);
- the writer's part: a file row, one FTS5 row per file (`porter unicode61`, title + text,
  contentless), and the batch's trigram postings: a row per (batch, bucket of 4,096
  trigrams) holding the bucket's sorted trigrams, where each one's file ids start, and the
  ids (uint32 arrays); at the end the batches' rows are merged into one row per bucket
  (what a later design would do in the background, as an LSM tree does).

It prints the CPU seconds of each part, the index size against the text, and the rate two
cores would bound (max(writer, (writer + workers) / 2)). With `--check LITERAL...` it also
looks each literal's trigrams up, intersects their file lists, and checks that the candidates
hold every file that contains the literal (a prefilter may over-select, never miss).

Nothing here is what `ov` runs: it is the measurement the next layout is planned from. The
passages the model reads would then be cut in the embed phase, and a keyword hit's line found
in its file when it is shown.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BATCH = 512  # files per writer transaction and per postings segment (the indexer's window)
BUCKET_BITS = 12  # trigrams per postings row: 4,096
FOLD = np.arange(256, dtype=np.uint8)
FOLD[65:91] += 32  # ASCII case folding, as FTS5's trigram tokenizer folds


def trigrams(data: bytes) -> np.ndarray:
    """The file's distinct case-folded byte trigrams, as sorted 24-bit numbers."""
    a = FOLD[np.frombuffer(data, np.uint8)].astype(np.uint32)
    if len(a) < 3:
        return np.zeros(0, np.uint32)
    return np.unique((a[:-2] << 16) | (a[1:-1] << 8) | a[2:])


def tree_files(tree: Path) -> list[str]:
    from ov import api

    found, _ = api.files(cwd=tree, node_limit=10**9)
    return sorted(found)


class Clock:
    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    def add(self, part: str, t0: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + time.process_time() - t0


def build(tree: Path, db: Path, max_size: int) -> tuple[dict, int, int, list[bytes]]:
    from ov.store import connect

    paths = tree_files(tree)
    con = connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT, hash BLOB, size INTEGER)")
    con.execute("CREATE VIRTUAL TABLE kw USING fts5(title, text, content='', "
                "tokenize='porter unicode61 remove_diacritics 2')")
    # a row per (segment, bucket of 4,096 trigrams): the batch's sorted trigrams of that
    # bucket, where each one's files start, and the file ids. A row per (trigram, segment)
    # cost 57-62 ms per MB of the kernel in the writer (one SQL row per ~2 postings)
    con.execute("CREATE TABLE tri(seg INTEGER, bucket INTEGER, grams BLOB, starts BLOB, files BLOB, "
                "PRIMARY KEY (seg, bucket)) WITHOUT ROWID")
    clock, text_bytes, n_files, fid = Clock(), 0, 0, 0
    for s0 in range(0, len(paths), BATCH):
        t0 = time.process_time()
        batch = []
        for rel in paths[s0:s0 + BATCH]:
            p = tree / rel
            try:
                if p.stat().st_size > max_size:
                    continue
                data = p.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            fid += 1
            batch.append((fid, rel, data))
        clock.add("read", t0)
        t0 = time.process_time()
        rows = []
        for i, rel, data in batch:
            text = data.decode("utf-8", "replace")
            rows.append((i, rel, hashlib.blake2b(data, digest_size=16).digest(), len(data), text))
        clock.add("decode and hash", t0)
        t0 = time.process_time()
        grams = [trigrams(data) for _, _, data in batch]
        clock.add("trigram sets", t0)
        text_bytes += sum(len(d) for _, _, d in batch)
        n_files += len(batch)
        if not batch:
            continue
        con.execute("BEGIN")
        t0 = time.process_time()
        con.executemany("INSERT INTO files(id, path, hash, size) VALUES (?, ?, ?, ?)",
                        [r[:4] for r in rows])
        clock.add("writer: file rows", t0)
        t0 = time.process_time()
        con.executemany("INSERT INTO kw(rowid, title, text) VALUES (?, ?, ?)",
                        [(r[0], r[4].split("\n", 1)[0], r[4]) for r in rows])
        clock.add("writer: one FTS5 row a file", t0)
        t0 = time.process_time()
        ids = np.concatenate([np.full(len(g), r[0], np.uint32) for g, r in zip(grams, rows)])
        gs = np.concatenate(grams)
        order = np.lexsort((ids, gs))
        gs, ids = gs[order], ids[order]
        first = np.r_[True, gs[1:] != gs[:-1]]  # each distinct trigram's first posting
        ug, at = gs[first], np.flatnonzero(first).astype(np.uint32)
        buckets = ug >> BUCKET_BITS
        edges = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1], True])
        seg = s0 // BATCH
        rows_ = []
        for a, e in zip(edges[:-1], edges[1:]):
            lo, hi = int(at[a]), int(at[e]) if e < len(at) else len(ids)
            rows_.append((seg, int(buckets[a]), ug[a:e].tobytes(), (at[a:e] - lo).tobytes(),
                          ids[lo:hi].tobytes()))
        con.executemany("INSERT INTO tri(seg, bucket, grams, starts, files) VALUES (?, ?, ?, ?, ?)", rows_)
        clock.add("writer: trigram postings", t0)
        con.execute("COMMIT")
    t0 = time.process_time()
    merge(con)
    clock.add("writer: merging the segments", t0)
    con.close()
    return clock.parts, text_bytes, n_files, paths


def merge(con) -> None:
    """The batches' postings merged into one segment (-1), bucket by bucket: what a lookup
    reads is then a row per trigram, not a row per trigram and batch."""
    con.execute("BEGIN")
    buckets = [b for (b,) in con.execute("SELECT DISTINCT bucket FROM tri ORDER BY bucket")]
    for b in buckets:
        gs, ids = [], []
        for gb, sb, fb in con.execute("SELECT grams, starts, files FROM tri WHERE bucket = ? ORDER BY seg",
                                      (b,)):
            g, st, f = (np.frombuffer(x, np.uint32) for x in (gb, sb, fb))
            gs.append(np.repeat(g, np.diff(np.r_[st, len(f)]).astype(np.int64)))
            ids.append(f)
        g, f = np.concatenate(gs), np.concatenate(ids)
        order = np.lexsort((f, g))
        g, f = g[order], f[order]
        first = np.r_[True, g[1:] != g[:-1]]
        con.execute("DELETE FROM tri WHERE bucket = ?", (b,))
        con.execute("INSERT INTO tri(seg, bucket, grams, starts, files) VALUES (-1, ?, ?, ?, ?)",
                    (b, g[first].tobytes(), np.flatnonzero(first).astype(np.uint32).tobytes(), f.tobytes()))
    con.execute("COMMIT")


def check(db: Path, tree: Path, paths: list[str], literals: list[str], max_size: int) -> list[dict]:
    from ov.store import connect

    con = connect(db, readonly=True)
    by_id = dict(con.execute("SELECT id, path FROM files"))
    segs = [-1]  # merged (a DISTINCT over the table would read every blob)
    out = []
    for lit in literals:
        t0 = time.perf_counter()
        cand = None
        for g in trigrams(lit.encode()):
            parts = []
            for seg in segs:
                for gb, sb, fb in con.execute("SELECT grams, starts, files FROM tri WHERE seg = ? "
                                              "AND bucket = ?", (seg, int(g) >> BUCKET_BITS)):
                    grams_, starts_ = np.frombuffer(gb, np.uint32), np.frombuffer(sb, np.uint32)
                    i = int(np.searchsorted(grams_, g))
                    if i < len(grams_) and grams_[i] == g:
                        end = int(starts_[i + 1]) if i + 1 < len(starts_) else len(fb) // 4
                        parts.append(np.frombuffer(fb, np.uint32)[int(starts_[i]):end])
            s = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
            cand = s if cand is None else np.intersect1d(cand, s, assume_unique=True)
        ms = (time.perf_counter() - t0) * 1000
        got = {by_id[int(i)] for i in (cand if cand is not None else [])}
        needle = lit.lower().encode()
        truth = {by_id[i] for i in by_id if needle in (tree / by_id[i]).read_bytes().lower()}
        out.append({"literal": lit, "candidates": len(got), "files_with_it": len(truth),
                    "superset": truth <= got, "lookup_ms": round(ms, 1)})
    con.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=None, help="folder for the scratch index (default: a temp dir)")
    ap.add_argument("--max-size", type=int, default=1024 * 1024,
                    help="skip files larger than this (default: ov's max-filesize)")
    ap.add_argument("--check", nargs="*", default=[], metavar="LITERAL")
    a = ap.parse_args()
    if not a.tree.is_dir():
        raise SystemExit(f"{a.tree}: no such folder")
    with tempfile.TemporaryDirectory(dir=a.work) as tmp:
        db = Path(tmp) / "lean.db"
        load0, w0 = os.getloadavg()[0], time.perf_counter()
        parts, text_bytes, n_files, paths = build(a.tree, db, a.max_size)
        wall, load1 = time.perf_counter() - w0, os.getloadavg()[0]
        size = sum(p.stat().st_size for p in Path(tmp).glob("lean.db*"))
        mb = text_bytes / 1e6
        writer = sum(v for k, v in parts.items() if k.startswith("writer"))
        workers = sum(v for k, v in parts.items() if not k.startswith("writer"))
        for k, v in parts.items():
            print(f"{k:32} {v:8.2f} CPU-s  {1000 * v / mb:6.1f} ms/MB")
        print(f"{n_files} files, {mb:.1f} MB of text, one process {wall:.1f} s wall "
              f"(load {load0:.2f} -> {load1:.2f})")
        print(f"index {size / 1e6:.1f} MB = {size / text_bytes:.2f}x the text; two cores bound "
              f"{mb / max(writer, (writer + workers) / 2):.1f} MB/s (writer {1000 * writer / mb:.0f} ms/MB, "
              f"workers {1000 * workers / mb:.0f} ms/MB)")
        checks = check(db, a.tree, paths, a.check, a.max_size) if a.check else []
        for c in checks:
            print(json.dumps(c))
        print(json.dumps({"files": n_files, "mb": round(mb, 1), "index_x": round(size / text_bytes, 3),
                          "parts_ms_per_mb": {k: round(1000 * v / mb, 1) for k, v in parts.items()},
                          "bound_mb_s": round(mb / max(writer, (writer + workers) / 2), 1),
                          "checks": checks}))


if __name__ == "__main__":
    main()
