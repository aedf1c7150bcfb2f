"""The trigram rows (schema 6): grep's per-file prefilter `files_tri` and the ranking table
`chunks_tri`, which holds only the passages written without spaces.

What must hold: a file holding a literal is always a candidate (a prefilter may let more
in, never fewer); rows are replaced and deleted without damaging the contentless tables;
an index of schema 5 is upgraded and its trigram rows rewritten.
"""

from __future__ import annotations

import sqlite3

import pytest

from ov.indexer import IndexOptions, index_tree
from ov.store import SCHEMA_VERSION, Store, trigram_doc


def _db(root):
    return root / ".ov" / "index.db"


def _fts_ok(db) -> None:
    with Store.open(db) as s:
        assert s.integrity_ok()
        for t in ("chunks_fts", "chunks_tri", "files_tri"):
            s.conn.execute(f"INSERT INTO {t}({t}, rank) VALUES ('integrity-check', 0)")


FILES = {
    "a.py": "def parse_header(line):\n    return line.strip()   \n",
    "b.c": "static int parse_body(void)\n{\n\treturn 0;\n}\n",
    "long.txt": "start " + "filler " * 3000 + "needle_at_the_far_end\n",
    "run.txt": "x" * 2000 + "NEEDLEINARUN" + "y" * 2000 + "\n",  # cut inside one run
    "ja.md": "# 日本語の文書\n\n東京は日本の首都です。\n",
    "empty.txt": "   \n\n",
}


def test_every_file_holding_a_literal_is_a_candidate(tree):
    root = tree(FILES)
    index_tree(root, opts=IndexOptions(embed=False))
    with Store.open(_db(root), readonly=True) as s:
        assert s.trigram_files(["parse_"]) == {"a.py", "b.c"}
        assert s.trigram_files(["parse_header"]) == {"a.py"}
        assert s.trigram_files(["return line.strip()"]) == {"a.py"}  # runs split at spaces
        assert s.trigram_files(["needle_at_the_far_end"]) == {"long.txt"}
        assert s.trigram_files(["filler needle_at"]) == {"long.txt"}
        assert s.trigram_files(["xNEEDLEINARUNy"]) == {"run.txt"}  # across the cut of a run
        assert s.trigram_files(["needleinarun"]) == {"run.txt"}  # folded: a superset
        assert s.trigram_files(["日本の首都"]) == {"ja.md"}
        assert s.trigram_files(["parse_", "(void)"]) == {"b.c"}  # every literal
        assert s.trigram_files(["zzz_not_there"]) == set()
        assert s.trigram_files(["ab", "x"]) is None  # nothing of three characters: read all
        long_lit = "filler " * 40 + "needle_at_the_far_end"
        assert s.trigram_files([long_lit]) == {"long.txt"}


FOLDED = {
    "kelvin.c": "\u212aASAN_POISON here\n",  # KELVIN SIGN: `-i` pairs it with k
    "longs.txt": "the po\u017fition of it\n",  # LONG S: `-i` pairs it with s
    "dotted.txt": "\u0130NIT_TABLE\n",  # I WITH DOT ABOVE: `-i` pairs it with i
    "dotless.txt": "M\u0131XED_CASE\n",  # DOTLESS I: `-i` pairs it with I
    "plain.txt": "Kasan_Poison Position init_table mixed_case\n",
    "other.txt": "nothing of the kind\n",
}


def test_folded_literals_keep_every_file_grep_i_matches(tree):
    """Under grep's `-i` the table's folding must not miss a file `-i` matches: the Kelvin
    sign and the long s fold to k and s in the table too, the dotted and dotless i do not,
    so a literal is asked in pieces cut at i / I (and at anything not ASCII)."""
    import regex

    root = tree(FOLDED)
    index_tree(root, opts=IndexOptions(embed=False))
    with Store.open(_db(root), readonly=True) as s:
        for lit in ("kasan_poison", "position", "init_table", "mixed_case", "KASAN", "MIXED_CASE"):
            rx = regex.compile(regex.escape(lit), regex.IGNORECASE | regex.V0)
            holding = {p for p, t in FOLDED.items() if rx.search(t)}
            got = s.trigram_files([lit], fold=True)
            assert got is not None and holding <= got, lit
            assert "other.txt" not in got, lit  # it still rules files out
        assert s.trigram_files(["kasan_poison"], fold=True) == {"kelvin.c", "plain.txt"}
        assert s.trigram_files(["ii", "éé"], fold=True) is None  # no ASCII piece of 3: read all
        assert s.trigram_files(["init_TAB"], fold=True) == {"dotted.txt", "plain.txt"}  # i as i, İ, ı
        # case-sensitive, the dotted I's file is no candidate for `init`'s trigrams
        assert "dotted.txt" not in (s.trigram_files(["init_table"]) or set())


def test_trigram_doc_keeps_every_run_whole():
    text = "alpha beta\n\n  gamma" + "q" * 10 + "\nalpha\n"
    g, a2 = text.index("gamma"), text.rindex("alpha")
    cut = g + 8  # passages as the chunker could cut them: one touching the next inside a run
    spans = [(0, 10), (g - 2, cut), (cut, g + 15), (a2, a2 + 5)]
    assert trigram_doc([(a, b, text[a:b]) for a, b in spans]) == "alpha beta gamma" + "q" * 10
    assert trigram_doc([]) == ""
    # runs of one class: word characters or punctuation, three characters or more
    assert trigram_doc([(0, 29, "dev->priv; a::b ===> (struct)")]) == "dev priv struct ===>"


def test_trigram_runs_cut_ascii_as_the_regex_does():
    """ASCII text is cut by two translations; other text by `_CLASS_RUN`: the same runs."""
    import random

    from ov.store.text import _CLASS_RUN, trigram_runs

    rng = random.Random(7)
    alphabet = [chr(i) for i in range(128)] + list("abc_XYZ019->::")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        assert sorted(trigram_runs(text)) == sorted(set(_CLASS_RUN.findall(text))), repr(text)
    assert trigram_runs("día->noche_1 día") == ["día", "noche_1"]


def test_a_literal_across_classes_finds_its_file(tree):
    """A literal's runs lie inside the file's runs of the same class, wherever it cuts them."""
    files = {"p.c": "x = dev->priv_data[idx];\nif (a<<=b) return;\n", "q.c": "priv dev idx\n"}
    root = tree(files)
    index_tree(root, opts=IndexOptions(embed=False))
    with Store.open(_db(root), readonly=True) as s:
        for lit in ("v->priv_d", "dev->priv_data[idx]", "a<<=b", "<<=", "ta[id", "priv_data"):
            got = s.trigram_files([lit])
            assert got is None or "p.c" in got, lit
        assert s.trigram_files(["priv_data"]) == {"p.c"}
        assert s.trigram_files(["<<="]) == {"p.c"}


def test_rows_are_replaced_and_deleted_cleanly(tree):
    root = tree(FILES)
    index_tree(root, opts=IndexOptions(embed=False))
    (root / "a.py").write_text("def parse_footer(line):\n    return line\n")
    (root / "b.c").unlink()
    (root / "ja.md").write_text("# 別の文書\n\n大阪の話です。\n")
    index_tree(root, opts=IndexOptions(embed=False))
    _fts_ok(_db(root))
    with Store.open(_db(root), readonly=True) as s:
        assert s.trigram_files(["parse_"]) == {"a.py"}
        assert s.trigram_files(["parse_header"]) == set()
        assert s.trigram_files(["日本の首都"]) == set()
        assert s.trigram_files(["大阪の話"]) == {"ja.md"}


def test_only_passages_without_spaces_have_ranking_rows(ov, tree):
    root = tree(FILES)
    index_tree(root, opts=IndexOptions(embed=False))
    with Store.open(_db(root), readonly=True) as s:
        paths = {r[0] for r in s.rows("SELECT f.path FROM chunks_tri t JOIN chunks c ON c.id = t.rowid "
                                      "JOIN files f ON f.id = c.file_id")}
        assert paths == {"ja.md"}
        assert s.q1("SELECT count(*) FROM files_tri") == 5  # every file with text
    r = ov("search", "首都", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "ja.md"


def test_a_first_answer_leaves_the_rows_and_the_fill_writes_them(tree):
    root = tree(FILES)
    index_tree(root, opts=IndexOptions(embed=False, trigrams=False, budget_s=60))
    with Store.open(_db(root)) as s:
        assert not s.trigrams_complete() and s.trigram_files(["parse_"]) is None
        while s.fill_trigrams(2):  # small batches: a file is still written whole
            pass
        assert s.trigrams_complete()
        assert s.trigram_files(["parse_header"]) == {"a.py"}
        assert s.q1("SELECT count(*) FROM files_tri") == 5
    _fts_ok(_db(root))


def test_an_index_of_schema_5_gets_its_trigram_rows_again(ov, tree):
    root = tree(FILES)
    index_tree(root, opts=IndexOptions(embed=False))
    db = _db(root)
    c = sqlite3.connect(db)  # what schema 5 had: no files_tri, a full hash index
    c.execute("DROP INDEX idx_chunks_hash")
    c.execute("CREATE INDEX idx_chunks_hash ON chunks(hash)")
    c.execute("DROP TABLE files_tri")
    c.execute("PRAGMA user_version = 5")
    c.commit()
    c.close()
    before = ov("grep", "-o", "json", "parse_header", cwd=root).json["result"]["matches"]
    r = ov("index", ".", "--no-embed", "-o", "json", cwd=root)
    assert r.code == 0, r.out + r.err
    with Store.open(db, readonly=True) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert s.trigrams_complete() and s.trigram_files(["parse_header"]) == {"a.py"}
        assert "WHERE embedded = 1" in s.q1("SELECT sql FROM sqlite_master WHERE name = 'idx_chunks_hash'")
    assert ov("grep", "-o", "json", "parse_header", cwd=root).json["result"]["matches"] == before
    _fts_ok(db)


def test_an_index_of_schema_7_is_read_as_it_stands_and_then_rewritten(ov, tree):
    """Schema 7's `files_tri` rows held whitespace-separated runs. Read as they stand they
    still hold every trigram grep asks; the next `ov index` makes the rows anew, so a row
    of the old form is never deleted with the new form's text (a contentless table would
    be left wrong)."""
    from ov.store.text import joined

    root = tree({**FILES, "tower.md": "昨日は東京タワーに行きました。\n"})
    index_tree(root, opts=IndexOptions(embed=False))
    db = _db(root)
    with Store.open(db) as s, s.tx():  # what schema 7 wrote
        s.conn.execute("DROP TABLE files_tri")
        s.conn.execute("CREATE VIRTUAL TABLE files_tri USING fts5(text, content='', tokenize='trigram', detail=none)")
        for fid in [r[0] for r in s.rows("SELECT id FROM files")]:
            spans = s.rows("SELECT start, end, text FROM chunks WHERE file_id = ? AND level = 2 ORDER BY id", (fid,))
            if spans:
                old = " ".join(dict.fromkeys(joined(spans, " ").split()))
                s.conn.execute("INSERT INTO files_tri(rowid, text) VALUES (?, ?)", (fid, old))
    _set_version(db, 7)
    with Store.open(db, readonly=True) as s:  # grep's read-only open: no migration
        assert s.q1("PRAGMA user_version") == 7
        assert s.trigram_files(["return line.strip()"]) == {"a.py"}
        assert s.trigram_files(["parse_", "(void)"]) == {"b.c"}
    # the upgrade empties grep's rows alone: text without spaces is still ranked at once
    r = ov("search", "東京タワー", "--search-type", "keywords", "-o", "json", cwd=root, env={"OV_BACKGROUND": "0"})
    # (first: ja.md holds 東京 alone, a pair of the query's characters, and follows it)
    assert r.code == 0 and [h["path"] for h in r.json["result"]["hits"]][:1] == ["tower.md"], r.out + r.err
    with Store.open(db, readonly=True) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION and not s.trigrams_complete()
        # (the pairs of characters alone would find it by a scan: the run's own rows are kept)
        assert s.q1("SELECT count(*) FROM chunks_tri WHERE chunks_tri MATCH ?", ('"東京タワー"',)) == 1
    # what is left is said with what it costs until it is done
    assert "without grep rows yet (grep reads their files until" in ov("status", cwd=root).out
    (root / "ja.md").write_text("# 別の文書\n\n大阪の話です。\n")  # its kept chunks_tri row deleted
    (root / "b.c").unlink()
    (root / "a.py").write_text("def parse_footer(line):\n    return line\n")
    r = ov("index", ".", "--no-embed", "-o", "json", cwd=root)
    assert r.code == 0, r.out + r.err
    _fts_ok(db)
    with Store.open(db, readonly=True) as s:
        assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
        assert s.trigrams_complete() and s.trigram_files(["parse_"]) == {"a.py"}
        assert s.trigram_files(["parse_header"]) == set() and s.trigram_files(["大阪の話"]) == {"ja.md"}
        assert s.q1("SELECT count(*) FROM chunks_tri") == 2  # tower.md's, kept, and ja.md's new one, once
    assert ov("grep", "-c", "needle_at_the_far_end", cwd=root).out.strip() == "long.txt:1"
    for q, hits in (("首都", []), ("大阪", ["ja.md"]), ("東京タワー", ["tower.md"])):
        r = ov("search", q, "--search-type", "keywords", "-o", "json", cwd=root)
        assert r.code in (0, 1) and [h["path"] for h in r.json["result"]["hits"]] == hits, r.out + r.err


def _set_version(db, v: int) -> None:
    c = sqlite3.connect(db)
    c.execute(f"PRAGMA user_version = {v}")
    c.commit()
    c.close()


@pytest.mark.parametrize("n", [1, 3])
def test_reused_vectors_still_found_by_hash(ov, tree, n):
    files = {f"c{i}.md": "# Same\n\nthe very same words in every copy\n" for i in range(n)}
    root = tree(files)
    assert ov("index", ".", "-o", "json", cwd=root).code == 0
    (root / "new.md").write_text("# Same\n\nthe very same words in every copy\n")
    r = ov("index", ".", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["reused"] >= 1, r.out


def test_camel_words_look_for_the_seam_as_the_identifiers_hold_it():
    """`camel_words` looks for a small letter before a capital at C speed before it looks
    for identifiers: text without such a seam has no camelCase identifier."""
    import random
    import re

    from ov.store.text import _IDENT, camel_words, keyword_text

    rng = random.Random(3)
    alphabet = list("aZbY09_ .\n\t-éÉ\udcff") + ["\u212a", "ǅ"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        seam = re.search("[a-z][A-Z]", text) is not None
        assert (camel_words(text) != "") == (seam and _IDENT.search(text) is not None), repr(text)
    assert camel_words("parseHttpHeader(x); getX") == "get X parse Http Header"
    assert keyword_text("int parseHttpHeader;", "T", camel_words("int parseHttpHeader;")) == \
        "int parseHttpHeader;\nT\nparse Http Header" == keyword_text("int parseHttpHeader;", "T")


def test_a_run_without_spaces_is_scored_among_all_keyword_rows(ov, tree):
    """The trigram table holds only the passages of scripts written without spaces, so
    FTS5's bm25 there counted a run's rows among those alone: in a tree of English notes
    with a few Japanese ones a run held by most of them had an idf at or under 0, and the
    exact match of `検索エンジン` scored 0.0013 (a review). It is scored as a short run is,
    among every keyword row (`Store.score_runs`)."""
    files = {f"n{i}.md": f"# Note {i}\n\nThe harbour tide tables list high water for day {i}.\n" for i in range(30)}
    files["ja.md"] = "# 日本語\n\nこのドキュメントは日本語で書かれています。検索エンジンが全角文字を正しく数えるか確認します。\n"
    files["ja2.md"] = "# 別の文書\n\n検索エンジンの話は別の日に。\n"
    root = tree(files)
    assert ov("index", root).code == 0
    r = ov("search", "検索エンジン", "--search-type", "keywords", "-o", "json", "--explain", cwd=root)
    hits = r.json["result"]["hits"]
    assert r.code == 0 and {h["path"] for h in hits} == {"ja.md", "ja2.md"}, r.out
    assert all(h["score"] > 0.5 and h["scores"]["keywords"]["raw"] > 1 for h in hits), r.out
    # a run and a word of the same query add up; a run held by more rows counts less
    both = ov("search", "全角文字 harbour", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert both[0]["path"] == "ja.md", both


_PLOT = ("iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAYAAAA10dzkAAAAOXRFWHRTb2Z0d2FyZQBNYXRwbG90bGliIHZl"
         "cnNpb24zLjcuMSwgaHR0cHM6Ly9tYXRwbG90bGliLm9yZy/bCgiHAAAACXBIWXMAAA9hAAAPYQGoP6dpAAC"
         "rsgHXtwT8iy6BQOSGZmpOwlKQ3eVbT5cRtZ9yPq1LmNaXw2YzKcDfJuH4gIoE7sA0vUxB6rQjW8pTnMz3Fy")


def test_camel_words_leave_encoded_data_out():
    """A plot's base64 split at its seams gave English words (`...GZmpOwlKQ...`: `Owl`), and a
    keyword search for "owl" put the plot first at 0.907 (a research tree's notebooks)."""
    from ov.store.text import camel_words, camel_words_of

    line = f'"image/png": "{_PLOT}",\n"text/plain": "<Figure of parseHttpHeader>"'
    assert "Owl" in camel_words_of(line).split()
    assert camel_words(line) == "parse Http Header"  # the words beside the data stay
    assert camel_words("getElementById(x)") == camel_words_of("getElementById(x)") == "get Element By Id"
    # a URL or a path with a hash in it is a data run too: its names keep their words
    sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert camel_words(f"https://github.com/fooBar/bazQux/blob/{sha}/src/mainFile") == "baz Qux foo Bar main File"
    assert camel_words(f"/api/v1/getUserById/{sha}/orders/listOrderItems") == "get User By Id list Order Items"
    assert camel_words(f"integrityHash={sha}") == "integrity Hash"


def test_schema_8_keyword_rows_with_data_are_written_again_on_upgrade(tree):
    """Migration 9: the keyword rows written with the data's words (schema 8) are deleted
    with those words and written again without them; deleted with the new words, the old
    ones would have stayed in the contentless table for good."""
    import sqlite3

    from ov.indexer import IndexOptions, index_tree
    from ov.store import Store
    from ov.store.text import camel_words, camel_words_of, keyword_text

    root = tree({"plot.md": f"# Plot\n\n![fig](data:image/png;base64,{_PLOT})\n", "owl.md": "# Birds\n\nAn owl at night.\n"})
    db = root / ".ov" / "index.db"
    index_tree(root, None, IndexOptions(embed=False))

    def owls() -> int:  # the keyword rows holding the word
        with Store.open(db, readonly=True) as s:
            s.conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, row)")
            return s.q1("SELECT doc FROM v WHERE term = 'owl'") or 0

    base = owls()  # owl.md's rows: its passage and tiers
    assert base >= 1
    c = sqlite3.connect(db)  # back to schema 8's rows: the plot's row with the data's words
    rows = c.execute("SELECT c.id, c.text, f.title FROM chunks c JOIN files f ON f.id = c.file_id "
                     "WHERE f.path = 'plot.md' AND c.level != 3").fetchall()
    changed = [r for r in rows if camel_words(r[1]) != camel_words_of(r[1])]
    assert changed
    for cid, text, title in changed:
        c.execute("INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)", (cid, keyword_text(text, title)))
        c.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (cid, keyword_text(text, title, camel_words_of(text))))
    c.execute("PRAGMA user_version = 8")
    c.commit()
    c.close()
    assert owls() == base + len(changed)
    with Store.open(db) as s:  # a write open upgrades it
        assert s.q1("PRAGMA user_version") == 9
    assert owls() == base
    (root / "plot.md").unlink()
    (root / "owl.md").unlink()
    index_tree(root, None, IndexOptions(embed=False))  # both deleted: no word of them is left
    assert owls() == 0


def test_an_index_of_schema_1_is_upgraded_through_migration_9(tmp_path):
    """Migration 2 rebuilt the keyword rows with the words of the code running it; with
    migration 9 after it, a schema-1 index holding a data run was written with the new
    words and deleted with the old ones (`database disk image is malformed`). Migration 2
    writes the words of its own time."""
    import base64
    import random

    from ov.store import db as D

    rng = random.Random(2)
    text = "def parseHttpHeader(x):\n    IMG = '" + base64.b64encode(rng.randbytes(1500)).decode() + "'\n"
    path = tmp_path / "index.db"
    conn = D.connect(path)
    D._migration_1(conn)
    conn.execute("INSERT INTO files(id, path, size, mtime_ns, hash, tags) VALUES (1, 'a.py', 1, 1, 'h', '{}')")
    conn.execute("INSERT INTO chunks(id, file_id, level, seq, start, end, start_line, end_line, text) "
                 "VALUES (1, 1, 2, 0, 0, ?, 1, 2, ?)", (len(text), text))
    from ov.store.text import camel_words_of

    conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (1, ?)", (text + "\n" + camel_words_of(text),))
    conn.execute("PRAGMA user_version=1")
    conn.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '1')")
    conn.commit()
    conn.close()
    db = D.Database.open(path)
    try:
        assert db._user_version() == D.SCHEMA_VERSION
        db.conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, row)")
        terms = {r[0] for r in db.conn.execute("SELECT term FROM temp.v")}
        assert "http" in terms and any(t.startswith("parsehttp") for t in terms)  # the name and its words
    finally:
        db.close()
