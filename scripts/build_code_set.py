#!/usr/bin/env python3
"""Build a labelled code-search set over a real Python tree (the standard library by
default), for `scripts/bench_quality.py --keep-paths`: whole modules at their own paths,
where CoSQA has one function a file named `N.py`.

    python3 scripts/build_code_set.py OUT [--src DIR] [--queries 400] [--seed 20240611]

- The corpus is every `.py` file under SRC but tests, idlelib, lib2to3, site-packages and
  `__pycache__`, each a document whose id is its path under SRC (bench_quality.py writes it
  back at that path).
- A query is the first sentence (5-25 words) of a function's or class's docstring, drawn
  at random (`--seed`), one of each file a round; the relevant document is the file that
  defines it.
- In the corpus, each docstring drawn is replaced by `...`, so no query is found verbatim
  in its own file.

OUT receives corpus.jsonl.gz, queries.jsonl.gz and qrels-test.tsv in the BEIR layout the
shared sets use, and SOURCE.md saying how it was made. The set is data: keep OUT outside
the project. The labels are weak (one relevant file a query; another file may define the
same thing), and the queries lean towards keywords: they are written in the code's own
vocabulary.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import random
import re
import sysconfig
from pathlib import Path

SKIP_DIRS = {"test", "tests", "idlelib", "lib2to3", "site-packages", "__pycache__"}


def modules(src: Path) -> list[Path]:
    out = []
    for p in sorted(src.rglob("*.py")):
        rel = p.relative_to(src)
        if any(part in SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        if rel.name.startswith("test_"):
            continue
        out.append(p)
    return out


def first_sentence(doc: str) -> str | None:
    para = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    text = " ".join(para.split())
    m = re.search(r"(?<=[.!?])\s", text)
    sent = text[:m.start()] if m else text
    n = len(sent.split())
    return sent if 5 <= n <= 25 else None


def candidates(path: Path, text: str) -> list[tuple[str, ast.AST]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                sent = first_sentence(first.value.value)
                if sent:
                    out.append((sent, first))
    return out


def blank_docstrings(text: str, nodes: list[ast.AST]) -> str:
    """`text` with each docstring node's string literal replaced by `...` (from the last
    to the first, so earlier positions hold)."""
    lines = text.splitlines(keepends=True)
    for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        a, b = node.lineno - 1, node.end_lineno - 1
        head = lines[a][:node.col_offset]
        tail = lines[b][node.end_col_offset:]
        lines[a:b + 1] = [head + "..." + tail]
    return "".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--src", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args()
    src = args.src.resolve()
    files = modules(src)
    texts, pool = {}, []
    for p in files:
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = p.relative_to(src).as_posix()
        texts[rel] = text
        pool.extend((rel, sent, node) for sent, node in candidates(p, text))
    # files in a random order, one docstring of each a round (the files with many, tkinter's,
    # would otherwise take most queries)
    rng = random.Random(args.seed)
    per_file: dict[str, list] = {}
    for item in pool:
        per_file.setdefault(item[0], []).append(item)
    order = sorted(per_file)
    rng.shuffle(order)
    for rel in order:
        rng.shuffle(per_file[rel])
    seen: set[str] = set()
    drawn = []
    while len(drawn) < args.queries and any(per_file[r] for r in order):
        for rel in order:
            while per_file[rel]:
                _, sent, node = per_file[rel].pop()
                if sent.lower() not in seen:  # one query a sentence: a copy would have two answers
                    seen.add(sent.lower())
                    drawn.append((rel, sent, node))
                    break
            if len(drawn) == args.queries:
                break
    by_file: dict[str, list[ast.AST]] = {}
    for rel, _, node in drawn:
        by_file.setdefault(rel, []).append(node)
    args.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for rel, text in texts.items():
            body = blank_docstrings(text, by_file[rel]) if rel in by_file else text
            f.write(json.dumps({"_id": rel, "title": "", "text": body}) + "\n")
    with gzip.open(args.out / "queries.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, (_, sent, _) in enumerate(drawn):
            f.write(json.dumps({"_id": f"q{i:04d}", "text": sent}) + "\n")
    with open(args.out / "qrels-test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for i, (rel, _, _) in enumerate(drawn):
            f.write(f"q{i:04d}\t{rel}\t1\n")
    (args.out / "SOURCE.md").write_text(
        f"Built by ov's scripts/build_code_set.py from {src} (seed {args.seed}): {len(texts)} modules, "
        f"{len(drawn)} queries over {len(by_file)} files.\n", encoding="utf-8")
    print(f"{len(texts)} modules, {len(drawn)} queries over {len(by_file)} files -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
