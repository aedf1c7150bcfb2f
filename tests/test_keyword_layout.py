"""A keywords-only index cuts its passages by characters, not to the model's window.

`ov index --no-embed` on the kernel spent half its reading side counting tokens for a window
no model would read (issue 13.4). An index built keywords-only (ov.indexer.KEYWORDS_LAYOUT)
has its passages cut at blank lines past ov.chunk.LINE_CUT_CHARS (`line_cut`); the run that
adds vectors cuts every file to the model's window first, and an index that has model
passages keeps them through a `--no-embed` run.
"""

from __future__ import annotations

import random

import pytest

from conftest import make_tree, run_inprocess, run_subprocess
from ov.chunk import LINE_CUT_CHARS, line_cut, model_tokens

ENV = {"OV_EMBEDDER": "hash"}


def _slices_ok(text: str, chunks, chars: int) -> None:
    """`chunk_text`'s contract: exact slices in file order, none empty, none ending in
    whitespace, every non-whitespace character held, right line numbers; and none over
    twice `chars`."""
    prev = 0
    for c in chunks:
        assert c.text and c.text == text[c.start:c.end] and c.text == c.text.rstrip() and c.level == 2, c
        assert c.start >= prev and not text[prev:c.start].strip(), (prev, c)
        assert (c.start_line, c.end_line) == (text.count("\n", 0, c.start) + 1, text.count("\n", 0, c.end) + 1)
        assert len(c.text) <= 2 * chars, c
        prev = c.end
    assert not text[prev:].strip()


def test_line_cut_keeps_the_chunk_contract_on_random_text():
    rnd = random.Random(7)
    parts = ["word", "two words ", " ", "\t", "\n", "\n\n", "\r\n", "  \n", "\u00e9t\u00e9", "x" * 45]
    for _ in range(3000):
        text = "".join(rnd.choice(parts) for _ in range(rnd.randint(0, 80)))
        _slices_ok(text, line_cut(text, chars=rnd.randint(1, 40)), 40)
    assert line_cut("") == [] and line_cut(" \n\n\t\n") == []


def test_line_cut_ends_at_the_first_blank_line_past_its_size():
    para = ["line %02d of paragraph %d" % (i, p) for p in range(6) for i in range(5)]
    text = "\n\n".join("\n".join(para[p * 5:(p + 1) * 5]) for p in range(6)) + "\n"  # ~120-char paragraphs
    cuts = line_cut(text, chars=200)
    _slices_ok(text, cuts, 200)
    # each passage: whole paragraphs, the first blank line past 200 characters ending it
    assert [(c.start_line, c.end_line) for c in cuts] == [(1, 11), (13, 23), (25, 35)]
    assert all(len(c.text) > 200 for c in cuts[:-1])


def test_line_cut_cuts_a_block_without_blank_lines_and_a_long_line():
    block = "".join(f"row {i:03d} of a log\n" for i in range(100))  # 19 characters a line
    cuts = line_cut(block, chars=100)
    _slices_ok(block, cuts, 100)
    assert all(c.end_line - c.start_line + 1 == 6 for c in cuts[:-1])  # the first line end past 100
    words = " ".join(f"w{i}" for i in range(400))  # one line: cut at a space
    cuts = line_cut(words, chars=100)
    _slices_ok(words, cuts, 100)
    assert len(cuts) >= 9 and all(words[c.end] == " " for c in cuts[:-1])
    blob = "ab" * 500  # no space at all: cut anywhere, touching
    cuts = line_cut(blob, chars=100)
    _slices_ok(blob, cuts, 100)
    assert [c.end - c.start for c in cuts] == [200] * 5 and all(a.end == b.start for a, b in zip(cuts, cuts[1:]))


PROSE = "\n\n".join(f"Paragraph {i} tells of harbour tides, ferries and the moon's pull on sea level. " * 3
                    for i in range(12)) + "\n"
CODE = "".join(f"def step_{i}(x):\n    \"\"\"Step {i}.\"\"\"\n"
               + "".join(f"    x = x * {j} + {i}  # scale the value by {j}\n" for j in range(14))
               + "    return x\n\n\n" for i in range(6))


def _layout_and_cuts(root):
    from ov.indexer import ROWS_META
    from ov.store import Store

    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        cuts = st.rows("SELECT f.path, c.start_line, c.end_line FROM chunks c JOIN files f ON f.id = c.file_id "
                       "WHERE c.level = 2 ORDER BY f.path, c.start")
        return st.get_meta(ROWS_META), [tuple(r) for r in cuts], st.coverage()


def _expected(root, keyword_cut: bool):
    from ov.indexer import passages

    return sorted((p, c.start_line, c.end_line) for p in ("docs/tides.md", "pkg/steps.py")
                  for c in passages((root / p).read_text(), p, keyword_cut))


def test_a_keywords_only_index_cuts_by_lines_and_vectors_recut_it(tmp_path):
    from ov.indexer import KEYWORDS_LAYOUT, ROWS_LAYOUT

    root = make_tree(tmp_path / "t", {"docs/tides.md": PROSE, "pkg/steps.py": CODE})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    layout, cuts, _ = _layout_and_cuts(root)
    assert layout == KEYWORDS_LAYOUT and cuts == _expected(root, True) != _expected(root, False)
    # no note of an older layout, no passages left for a worker: the index is as asked
    r = run_inprocess("search", "harbour tides", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and not any("layout" in w for w in r.json["result"]["warnings"]), r.json
    assert "passages" not in run_inprocess("status", "-o", "json", cwd=root, env=ENV).out
    # a second keywords-only run keeps the layout and reads no file again
    r = run_inprocess("index", ".", "--no-embed", "-o", "json", cwd=root, env=ENV)
    assert r.json["result"]["unchanged"] == 2 and _layout_and_cuts(root)[0] == KEYWORDS_LAYOUT
    # the run that adds vectors cuts every file to the model's window first
    r = run_inprocess("index", ".", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["updated"] == 2, r.out
    layout, cuts, (have, want) = _layout_and_cuts(root)
    assert layout == ROWS_LAYOUT and cuts == _expected(root, False) and have == want > 0
    # a later keywords-only run keeps the model's passages (and their vectors)
    (root / "pkg" / "steps.py").write_text(CODE + "\n\ndef extra(y):\n    return y\n")
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    layout, cuts, _ = _layout_and_cuts(root)
    assert layout == ROWS_LAYOUT and cuts == _expected(root, False)


def test_a_first_search_cuts_to_the_models_window(tmp_path):
    """A first search leaves the vectors to its worker: its keyword rows are cut for them."""
    from ov.indexer import IndexOptions, ROWS_LAYOUT, index_tree

    root = make_tree(tmp_path / "t", {"docs/tides.md": PROSE, "pkg/steps.py": CODE})
    index_tree(root, opts=IndexOptions(embed=False, embed_later=True))
    layout, cuts, _ = _layout_and_cuts(root)
    assert layout == ROWS_LAYOUT and cuts == _expected(root, False)


def test_a_watched_change_to_a_keywords_only_index_is_cut_by_lines(tmp_path):
    from ov.indexer import KEYWORDS_LAYOUT, IndexOptions, index_paths

    root = make_tree(tmp_path / "t", {"docs/tides.md": PROSE, "pkg/steps.py": "x = 1\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    (root / "pkg" / "steps.py").write_text(CODE)
    index_paths(root, ["pkg/steps.py"], opts=IndexOptions(embed=False))
    layout, cuts, _ = _layout_and_cuts(root)
    assert layout == KEYWORDS_LAYOUT and cuts == _expected(root, True)


def test_a_changed_file_in_an_index_with_vectors_is_read_as_the_model_cuts_it(tmp_path):
    from ov.indexer import passages

    root = make_tree(tmp_path / "t", {"docs/tides.md": PROSE})
    assert run_inprocess("index", ".", cwd=root, env=ENV).code == 0
    now = "# Tides\n\n" + PROSE
    (root / "docs" / "tides.md").write_text(now)
    model = {c.start_line: c.end_line for c in passages(now, "docs/tides.md")}
    lines = {c.start_line: c.end_line for c in passages(now, "docs/tides.md", True)}
    start = next(a for a in sorted(model) if model[a] not in lines.values())  # a passage the line cut lacks
    res = run_inprocess("read", f"docs/tides.md:{model[start]}", "-o", "json", cwd=root, env=ENV).json["result"]
    assert (res["start_line"], res["end_line"]) == (start, model[start]), res


@pytest.mark.model
def test_vectors_added_to_a_keywords_only_index_fit_the_model(tmp_path):
    """Through the CLI with the real model: a keywords-only index answers keyword searches
    from its line-cut passages; `ov index` then re-cuts them to the model's window, and a
    semantic search finds the passage by meaning."""
    from ov.indexer import ROWS_LAYOUT

    long_para = " ".join(f"Sentence {i} about the ferry timetable and harbour tides." for i in range(40))
    garden = "\n\n".join(f"Bed {i}: tomatoes want deep soil, compost and water at dawn." for i in range(20))
    root = make_tree(tmp_path / "t", {"docs/garden.md": garden + "\n", "docs/ferry.md": long_para + "\n",
                                      "pkg/steps.py": CODE})
    r = run_subprocess(["index", ".", "--no-embed", "-o", "json"], cwd=root)
    assert r.code == 0, r.err
    r = run_subprocess(["search", "ferry timetable", "--search-type", "keywords", "-o", "json"], cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "docs/ferry.md", r.out
    hit = r.json["result"]["hits"][0]
    assert len(hit["excerpt"]["text"]) <= 2 * LINE_CUT_CHARS
    r = run_subprocess(["index", ".", "-o", "json"], cwd=root)
    assert r.code == 0, r.err
    layout, _, (have, want) = _layout_and_cuts(root)
    assert layout == ROWS_LAYOUT and have == want > 0
    from ov.store import Store

    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        texts = [t for (t,) in st.rows("SELECT text FROM chunks WHERE level = 2")]
    assert texts and max(model_tokens(t) for t in texts) <= 256
    r = run_subprocess(["find", "when does the boat leave the port", "-o", "json"], cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "docs/ferry.md", r.out


def test_a_keywords_only_index_of_an_older_layout_is_cut_by_lines_again(tmp_path):
    """A later ov changes ROWS_LAYOUT: a keywords-only index of the one before is cut again,
    by lines (not to the model's window: no vector is coming), and says it updated them."""
    from ov.indexer import KEYWORDS_LAYOUT, LINES, ROWS_META
    from ov.store import Store

    root = make_tree(tmp_path / "t", {"docs/tides.md": PROSE, "pkg/steps.py": CODE})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=ENV).code == 0
    with Store.open(root / ".ov" / "index.db") as st, st.tx():
        st.set_meta(ROWS_META, LINES + "0")
    r = run_inprocess("index", ".", "--no-embed", "-o", "json", cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["updated"] == 2, r.out
    layout, cuts, _ = _layout_and_cuts(root)
    assert layout == KEYWORDS_LAYOUT and cuts == _expected(root, True)


def test_every_connection_maps_the_whole_index(tmp_path):
    """Mapped at 1 GB, the kernel's 1.6 GB keyword index was written past it through read()
    calls: 125 CPU-s of the writer against 93 mapped whole. Every connection, writer and
    reader, maps up to MMAP_BYTES, or all the SQLite build allows (the stdlib's: 2 GB)."""
    from ov.store import Store
    from ov.store.db import MMAP_BYTES, connect

    Store.create(tmp_path / ".ov" / "index.db").close()
    for readonly in (False, True):
        conn = connect(tmp_path / ".ov" / "index.db", readonly=readonly)
        try:
            assert conn.execute("PRAGMA mmap_size").fetchone()[0] >= min(MMAP_BYTES, 2147418112)
        finally:
            conn.close()


def _page_size(db) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()


def test_a_new_index_has_16_kb_pages_and_an_older_one_keeps_its_own(tmp_path):
    """16 KB pages: the kernel's drivers/net written with 4-15 % less CPU and a 5 % smaller
    index (ov.store.db.PAGE_BYTES). A new index gets them; one made with 4 KB pages, as
    every ov before made it, keeps them (SQLite changes a page size only by rewriting the
    file) and goes on working."""
    import sqlite3

    from ov.store.db import PAGE_BYTES

    assert PAGE_BYTES == 16384
    root = make_tree(tmp_path / "t", {"a.md": "# Alpha\n\nthe quick brown fox\n"})
    r = run_subprocess(["index", ".", "--no-embed", "-o", "json"], cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["added"] == 1, r.err
    db = root / ".ov" / "index.db"
    assert _page_size(db) == PAGE_BYTES

    conn = sqlite3.connect(db)  # the same index rewritten with 4 KB pages
    conn.execute("PRAGMA journal_mode=DELETE")  # (WAL keeps the page size through a VACUUM)
    conn.execute("PRAGMA page_size=4096")
    conn.execute("VACUUM")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    assert _page_size(db) == 4096
    (root / "b.md").write_text("# Beta\n\nlazy dogs sleep\n")
    r = run_subprocess(["index", ".", "-o", "json"], cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["added"] == 1, r.err
    r = run_subprocess(["search", "lazy dogs", "-o", "json"], cwd=root, env=ENV)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "b.md", r.out
    assert "semantic" in r.json["result"]["branches"], r.out
    assert _page_size(db) == 4096
