"""Embedding budget (issue 13): tokens run through the model ÷ tokens of the embeddable source.

    python3 scripts/bench_tokens.py /root/.pyenv/versions/3.11.7/lib/python3.11 --exclude site-packages/
    python3 scripts/bench_tokens.py /tmp/ov-bench-quality/scifact-txt-*/docs

Walks TREE as `ov index` does (ov.walk, the same options), reads each file as the indexer
does, builds the rows the indexer builds for it (passages, tier rows, sentence rows) and
asks the indexer which of them get a vector (`ov.indexer.wants_vector`); identical texts
are counted once, as the indexer embeds them once. No model runs: only the tokenizer.

- "tokens through the model" = for each row that gets a vector, its model tokens with
  [CLS] and [SEP], cut at the model's window (256), as `OnnxEmbedder.embed` feeds them;
  padding is not counted (length-grouped batches pad little, and it is the embedder's
  business, not the choice of rows);
- "embeddable source tokens" = the model tokens of the whole text of each file that has
  at least one row with a vector, uncut, without [CLS]/[SEP].

The row kinds are reported apart, with what the old rule (every row, sentences and
overviews included, duplicates embedded again) would have cost on the same tree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("-o", "--output", choices=("text", "json"), default="text")
    ap.add_argument("--exclude", action="append", default=[],
                    help="a gitignore-style line to leave out (repeatable), e.g. site-packages/")
    args = ap.parse_args(argv)

    from ov import chunk as chunking  # noqa: PLC0415
    from ov import indexer  # noqa: PLC0415
    from ov.embed import MAX_TOKENS, _load_tokenizer, locate_model_files  # noqa: PLC0415
    from ov.kinds import kind_of
    from ov.read import content_hash, read_text  # noqa: PLC0415
    from ov.walk import walk  # noqa: PLC0415

    _, tok_path = locate_model_files()
    tok = _load_tokenizer(tok_path, truncate=False)
    tok.no_padding()

    def ntok(texts: list[str]) -> list[int]:
        # model tokens with [CLS]/[SEP]; the model sees at most MAX_TOKENS of them
        return [len(e.ids) for e in tok.encode_batch(texts)] if texts else []

    t0 = time.perf_counter()
    kinds = ("passage", "abstract", "overview", "sentence")
    level_kind = {2: "passage", 0: "abstract", 1: "overview", chunking.SENTENCE: "sentence"}
    rows_all = dict.fromkeys(kinds, 0)  # every row, duplicates included (the old rule)
    tok_all = dict.fromkeys(kinds, 0)
    rows_new = dict.fromkeys(kinds, 0)  # rows with a vector under the current rule, once per text
    tok_new = dict.fromkeys(kinds, 0)
    seen: set[str] = set()
    files = embeddable_files = 0
    source_tokens = 0
    wopts = replace(indexer.IndexOptions().walk, extra_ignores=tuple(args.exclude))
    for entry in walk(args.tree.resolve(), wopts):
        try:
            ft = read_text(entry.abspath, max_bytes=indexer.IndexOptions().walk.max_filesize)
        except OSError:
            continue
        if ft is None:
            continue
        files += 1
        text, path = ft.text, entry.path
        tier_rows = indexer.tier_chunks(text, path)
        body = indexer.passages(text, path)
        sents = chunking.sentences(text, body) if kind_of(path) != "code" else []
        rows = body + tier_rows + sents
        counts = ntok([r.text for r in rows])
        any_vec = False
        for r, n in zip(rows, counts):
            k = level_kind[r.level]
            n = min(n, MAX_TOKENS)
            rows_all[k] += 1
            tok_all[k] += n
            if indexer.wants_vector(r.level, path):
                any_vec = True
                h = content_hash(r.text.encode("utf-8"))
                if h in seen:
                    continue
                seen.add(h)
                rows_new[k] += 1
                tok_new[k] += n
        if any_vec:
            embeddable_files += 1
            source_tokens += len(tok.encode(text, add_special_tokens=False).ids)
    res = {
        "tree": str(args.tree), "files": files, "embeddable_files": embeddable_files,
        "source_tokens": source_tokens,
        "old": {"rows": rows_all, "tokens": tok_all, "ratio": round(sum(tok_all.values()) / max(1, source_tokens), 3)},
        "new": {"rows": rows_new, "tokens": tok_new, "ratio": round(sum(tok_new.values()) / max(1, source_tokens), 3)},
        "seconds": round(time.perf_counter() - t0, 1), "load": round(os.getloadavg()[0], 1),
    }
    if args.output == "json":
        print(json.dumps(res, indent=1))
    else:
        print(f"{res['tree']}: {files} files, {embeddable_files} with vectors, {source_tokens:,} source tokens")
        for rule in ("old", "new"):
            r = res[rule]
            parts = ", ".join(f"{k} {r['rows'][k]:,} rows / {r['tokens'][k]:,} tok" for k in kinds)
            print(f"  {rule}: ratio {r['ratio']}  ({parts})")
        print(f"  ({res['seconds']} s, load {res['load']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
