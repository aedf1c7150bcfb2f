"""Which rows get a vector (issue 13's budget): passages and abstracts; overviews keep their
keyword rows only; prose has no sentence rows; identical texts are embedded once; an index
of the older layout (sentence rows, overview vectors) drops them on the next run without
embedding again."""

from __future__ import annotations

import time

import pytest

from ov import indexer
from ov.model import Chunk
from ov.store import Store
from ov.store.db import BARE
from ov.store.queries import left_out_sql

PROSE = ("On caves\n\nCopper lanterns glow violet in glacier caves. The guides carry them far "
         "below. Nobody knows why the light changes.\n\nA second paragraph follows here. It "
         "says more about the walls.\n")
CODE = "def glow(cave):\n    \"\"\"Copper lanterns. Violet glacier.\"\"\"\n    return cave\n"


def test_the_rows_with_vectors_are_passages_and_abstracts():
    assert indexer.wants_vector(2, "a.txt") and indexer.wants_vector(0, "a.py")
    assert not indexer.wants_vector(1, "a.txt") and not indexer.wants_vector(3, "a.txt")


@pytest.fixture
def small(tree, ov):
    root = tree({"essay.txt": PROSE, "copy.txt": PROSE, "tool.py": CODE})
    r = ov("index", root, "-o", "json")
    assert r.code == 0, r.out + r.err
    return root, r.json["result"]


def test_index_layout(small, ov):
    root, rep = small
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        by = dict(((lv, e), n) for lv, e, n in st.rows(
            "SELECT level, embedded, count(*) FROM chunks GROUP BY level, embedded"))
        vec_levels = {lv for (lv,) in st.rows("SELECT DISTINCT level FROM chunks_vec")}
    assert not any(lv == 3 for lv, _ in by)  # no sentence rows
    assert vec_levels == {0, 2}
    assert by.get((1, -1)) == 3 and (1, 1) not in by  # overviews: keyword rows, never pending
    assert not any(e == 0 for _, e in by)  # nothing left pending
    status = ov("status", "-o", "json", cwd=root).json["result"]
    assert status["embedded_coverage"] == 1.0


def test_identical_texts_are_embedded_once(small):
    root, rep = small
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        rows = st.q1("SELECT count(*) FROM chunks WHERE level IN (0, 2)")
        texts = st.q1("SELECT count(DISTINCT text) FROM chunks WHERE level IN (0, 2)")
        vectors = st.q1("SELECT count(*) FROM chunks_vec")
    # essay.txt and copy.txt hold the same passages and abstract: one of each is embedded
    assert texts < rows and vectors == rows
    assert rep["embedded"] == texts and rep["reused"] == rows - texts


def test_an_index_of_the_older_layout_drops_sentences_and_overview_vectors(small, ov, monkeypatch):
    root, _ = small
    monkeypatch.setenv("OV_BACKGROUND", "0")  # the search below starts no worker: `ov index` re-cuts
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():  # what an index of the older layout holds
        fid, blob = st.rows("SELECT c.file_id, v.embedding FROM chunks c JOIN chunks_vec v "
                            "ON v.chunk_id = c.id WHERE c.level = 2 LIMIT 1")[0]
        (sid,) = st.insert_chunks(fid, [Chunk(9, 20, 3, 3, "Copper lanterns", level=3)])
        st._insert_vec(sid, blob, "h-sentence")
        for (oid,) in st.rows("SELECT id FROM chunks WHERE level = 1"):
            st.conn.execute("UPDATE chunks SET embedded = 0 WHERE id = ?", (oid,))
            st._insert_vec(oid, blob, f"h-overview-{oid}")
        st.conn.execute("DELETE FROM meta WHERE key = ?", (indexer.ROWS_META,))
        passages = st.q1("SELECT count(*) FROM chunks WHERE level = 2")
    assert ov("find", "copper lanterns", "-o", "json", cwd=root).code == 0  # still answers
    rep = ov("index", root, "-o", "json").json["result"]
    assert rep["updated"] == 3 and rep["embedded"] == 0  # re-chunked once, nothing embedded
    assert rep["reused"] >= passages
    with Store.open(db, readonly=True) as st:
        assert st.q1("SELECT count(*) FROM chunks WHERE level = 3") == 0
        assert st.q1("SELECT count(*) FROM chunks_vec WHERE level IN (1, 3)") == 0
        assert st.q1("SELECT count(*) FROM chunks_vec v LEFT JOIN chunks c ON c.id = v.chunk_id "
                     "WHERE c.id IS NULL") == 0
    again = ov("index", root, "-o", "json").json["result"]
    assert again["updated"] == 0 and again["unchanged"] == 3


def test_an_index_of_layout_4_cuts_every_file_again(small, ov, monkeypatch):
    """Layout 5: a run of encoded data is cut in 32 KiB passages, in a file of any kind. An
    index made before re-chunks every file once, on the next `ov index` (vectors kept by
    text); layout 4 (code passages at the model's window) had re-chunked code files only."""
    root, _ = small
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "4")
    said = ov("status", "-o", "json", cwd=root).json["result"]["warnings"]
    assert [w for w in said if "older layout (4; now 6): the next `ov index`, or the background worker "
            "the next search starts, cuts every file again" in w]
    # no worker will start (OV_BACKGROUND=0, or after `ov index --stop`): none is promised
    monkeypatch.setenv("OV_BACKGROUND", "0")
    said = ov("status", "-o", "json", cwd=root).json["result"]["warnings"]
    assert [w for w in said if "older layout (4; now 6): the next `ov index` cuts every file again" in w]
    monkeypatch.delenv("OV_BACKGROUND")
    assert "older layout (4; now 6)" in ov("status", cwd=root).err  # said in text too
    rep = ov("index", root, "-o", "json").json["result"]
    assert (rep["updated"], rep["unchanged"]) == (3, 0)
    with Store.open(db, readonly=True) as st:
        assert st.get_meta(indexer.ROWS_META) == indexer.ROWS_LAYOUT == "6"
    assert not [w for w in ov("status", "-o", "json", cwd=root).json["result"]["warnings"] if "older layout" in w]
    assert indexer.chunk_budget("tool.py") == 256 and indexer.chunk_budget("essay.txt") == 200


def test_an_index_of_layout_5_cuts_again_only_the_files_of_the_languages_read_anew(tree, ov, monkeypatch):
    """Layout 6: the abstracts and outlines of SQL, Terraform, OCaml... (a review of a
    polyglot repository: `create table` and `resource` lines were no definitions). An index
    of layout 5 re-cuts their files alone, and gives no pages back by a VACUUM of the
    whole file for so few."""
    root = tree({"db/001.sql": "-- Merchants: one row per business.\ncreate table merchants (\n  id uuid\n);\n",
                 "infra/sqs.tf": '# Queues.\nresource "aws_sqs_queue" "payment_retries" {\n  name = "r"\n}\n',
                 "essay.txt": PROSE, "tool.py": CODE})
    assert ov("index", root).code == 0
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "5")
        for (cid,) in st.rows("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.level = 1 "
                              "AND f.path IN ('db/001.sql', 'infra/sqs.tf')"):
            st.conn.execute("UPDATE chunks SET text = '-- Merchants: one row per business.' WHERE id = ?", (cid,))
    said = ov("status", "-o", "json", cwd=root).json["result"]["warnings"]
    assert [w for w in said if "older layout (5; now 6)" in w and ".sql, .tf, .tfvars and .zig files again" in w]
    reclaims = []
    real = Store.reclaim
    monkeypatch.setattr(Store, "reclaim", lambda st, always=False: (reclaims.append(always), real(st, always))[1])
    rep = ov("index", root, "-o", "json").json["result"]
    assert (rep["updated"], rep["unchanged"], rep["embedded"]) == (2, 2, 0)  # vectors kept by text
    assert reclaims == [False]  # pages given back only past a quarter of the file: no VACUUM of all
    r = ov("read", "db/001.sql", "--level", "1", "-o", "json", cwd=root)
    assert r.json["result"]["text"].startswith("create table merchants — Merchants: one row per business.")
    r = ov("read", "infra/sqs.tf", "--level", "1", "-o", "json", cwd=root)
    assert r.json["result"]["text"] == 'resource "aws_sqs_queue" "payment_retries" — Queues.'
    with Store.open(db, readonly=True) as st:
        assert st.get_meta(indexer.ROWS_META) == "6"


def test_a_row_has_a_text_hash_once_it_has_a_vector_and_tiers_are_kept_once(small, ov):
    """Schema 7 (issue 13's index size): the hash is written with the vector, and a file's
    abstract and overview live in its level-0/1 rows only, read back through them."""
    from ov.read import content_hash

    root, _ = small
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        rows = st.rows("SELECT level, embedded, text, hash FROM chunks")
        tiers = st.rows("SELECT abstract, overview FROM files")
        l0 = st.q1("SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id "
                   "WHERE f.path = 'essay.txt' AND c.level = 0")
    assert all(h == content_hash(t.encode("utf-8")) for _, e, t, h in rows if e == 1)
    assert all(h is None for _, e, _, h in rows if e != 1)
    assert any(e == -1 for _, e, _, _ in rows)  # the overviews: keyword rows only, no hash
    assert tiers and all(t == (None, None) for t in tiers)
    r = ov("read", "essay.txt", "--level", "0", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["text"] == l0 == "On caves"
    hits = ov("search", "glacier caves", "--level", "0", "-o", "json", cwd=root).json["result"]["hits"]
    assert hits and all(h["abstract"] == "On caves" for h in hits if h["path"] == "essay.txt")


def test_a_keyword_index_holds_no_hashes_and_vectors_come_once_per_text(tree, ov, monkeypatch):
    """Rows written without vectors carry no hash; the embed phase hashes the pending rows
    batch by batch, and a text met again in a later batch takes the vector stored before."""
    root = tree({f"n{i}.txt": PROSE for i in range(5)} | {"tool.py": CODE})
    assert ov("index", root, "--no-embed").code == 0
    db = root / ".ov" / "index.db"
    with Store.open(db, readonly=True) as st:
        assert st.q1("SELECT count(*) FROM chunks WHERE hash IS NOT NULL") == 0
        pending = st.q1("SELECT count(*) FROM chunks WHERE embedded = 0")
        texts = st.q1("SELECT count(DISTINCT text) FROM chunks WHERE embedded = 0")
    assert pending == 5 * (texts - 2) + 2  # five copies of each prose row, tool.py's two once
    monkeypatch.setattr(indexer, "EMBED_COMMIT", 2)  # copies of one text fall in several batches
    rep = ov("index", root, "-o", "json").json["result"]
    assert rep["embedded"] == texts and rep["reused"] == pending - texts
    with Store.open(db, readonly=True) as st:
        assert st.q1("SELECT count(*) FROM chunks WHERE embedded = 0") == 0
        assert st.q1("SELECT count(DISTINCT hash) FROM chunks WHERE embedded = 1") == texts
        by_text = st.rows("SELECT c.text, count(DISTINCT v.embedding) FROM chunks c "
                          "JOIN chunks_vec v ON v.chunk_id = c.id GROUP BY c.text")
    assert len(by_text) == texts and all(n == 1 for _, n in by_text)
    with Store.open(db, readonly=True) as st:  # and no two texts share one
        assert st.q1("SELECT count(DISTINCT embedding) FROM chunks_vec") == texts


def _set_version(db, v: int) -> None:
    """Mark an index as written by the schema `v` (what an older ov's index says of itself)."""
    import sqlite3

    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {v}")
    con.commit()
    con.close()


def _invariants(st, legacy: bool = False) -> None:
    """Every row with a vector carries its text's hash; no other row has one (rows written
    by schema 6, `legacy`, keep theirs); no overview or sentence row has a vector; one
    vector per text, and no two texts share one."""
    from ov.read import content_hash

    rows = st.rows("SELECT c.level, c.embedded, c.text, c.hash, v.embedding FROM chunks c "
                   "LEFT JOIN chunks_vec v ON v.chunk_id = c.id")
    assert all(h == content_hash(t.encode("utf-8")) for _, e, t, h, _ in rows if e == 1)
    assert all((h is None or legacy) and v is None for _, e, _, h, v in rows if e != 1)
    assert all(lv in (0, 2) for lv, e, _, _, _ in rows if e == 1)
    by_text: dict[str, set] = {}
    for _, e, t, _, v in rows:
        if e == 1:
            by_text.setdefault(t, set()).add(v)
    assert all(len(vs) == 1 for vs in by_text.values())
    assert len({next(iter(vs)) for vs in by_text.values()}) == len(by_text)


def test_a_changed_file_keeps_its_unchanged_vectors_with_their_hashes(small, ov):
    """Re-indexing a changed file gives its unchanged rows their old vectors (by text hash)
    and the hash with them; only its new text goes through the model."""
    root, _ = small
    line = "Amber moss grows slowly on the north walls.\n"  # one line: abstract = overview = passage
    (root / "short.txt").write_text(line)
    assert ov("index", root).code == 0
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        _invariants(st)
    (root / "short2.txt").write_text(line)  # its passage and abstract reuse, its overview does not
    (root / "essay.txt").write_text(PROSE + "\nA closing line about amber moss.\n")
    (root / "tool.py").write_text(CODE + "\n\ndef rest(cave):\n    return None\n")
    rep = ov("index", root, "-o", "json").json["result"]
    assert rep["updated"] == 2 and rep["added"] == 1 and rep["reused"] > 0
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        _invariants(st)
        new = st.q1("SELECT count(DISTINCT text) FROM chunks WHERE level IN (0, 2) AND text NOT IN "
                    "(SELECT text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = 'copy.txt')")
    assert 0 < rep["embedded"] <= new


def test_an_index_of_schema_6_is_upgraded_and_embedded_as_before(tree, ov):
    """Schema 6 kept a hash on every row and the tiers in `files` too: the next `ov index`
    moves it to 7 and embeds its pending rows (hashed again), and reading keeps working."""
    import sqlite3

    from ov.read import content_hash
    from ov.store import SCHEMA_VERSION

    root = tree({"essay.txt": PROSE, "copy.txt": PROSE, "tool.py": CODE})
    assert ov("index", root, "--no-embed").code == 0
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():  # what schema 6 wrote
        for cid, text in st.rows("SELECT id, text FROM chunks"):
            st.conn.execute("UPDATE chunks SET hash = ? WHERE id = ?", (content_hash(text.encode()), cid))
        st.conn.execute("UPDATE files SET abstract = 'stale copy', overview = 'stale copy'")
    _set_version(db, 6)
    rep = ov("index", root, "-o", "json").json["result"]
    with Store.open(db, readonly=True) as st:
        texts = st.q1("SELECT count(DISTINCT text) FROM chunks WHERE level IN (0, 2)")
        assert st.q1("SELECT count(*) FROM chunks WHERE embedded = 0") == 0
    assert rep["embedded"] == texts
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
    r = ov("read", "essay.txt", "--level", "1", "-o", "json", cwd=root)
    # the overview (its level-1 row), not the abstract ("On caves"), nor the old copy in `files`
    assert r.code == 0 and "stale copy" not in r.json["result"]["text"] and "Copper lanterns" in r.json["result"]["text"]
    with Store.open(db, readonly=True) as st:
        _invariants(st, legacy=True)


def test_a_schema_6_index_is_read_as_it_stands_by_read_only_commands(tree, ov):
    """Schema 7 changed no row, so grep's prefilter, `glob --tags` and `ov manifest` read an
    index of schema 6 without upgrading it (which a read-only open cannot do)."""
    import sqlite3

    root = tree({"essay.txt": PROSE, "notes/b.md": "---\ntags: [team=amber]\n---\n# B\n\nMoss.\n"})
    assert ov("index", root, "--no-embed").code == 0
    db = root / ".ov" / "index.db"
    _set_version(db, 6)
    g = ov("grep", "lanterns", "-o", "json", cwd=root)
    assert g.code == 0 and not g.json.get("warnings") and g.json["result"]["matches"]
    t = ov("glob", "**/*.md", "--tags", "team=amber", "-o", "json", cwd=root)
    assert t.code == 0 and t.json["result"]["matches"] == ["notes/b.md"], t.out + t.err
    m = ov("manifest", "--json", cwd=root)
    assert m.code == 0 and m.json["result"]["index"]["files"] == 2, m.out + m.err
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 6


def test_full_rebuild_takes_another_model_and_a_plain_run_refuses_it(tree):
    """Vectors of two models never meet in one index: a plain run with another model is
    refused with the advice to rebuild, and that rebuild (`--full`, every file re-chunked,
    no old vector left) then takes the new model."""
    from ov.embed import HashEmbedder
    from ov.errors import OvError

    class Other(HashEmbedder):
        model_id = "other-384"

    root = tree({"essay.txt": PROSE, "tool.py": CODE})
    indexer.index_tree(root, embedder=HashEmbedder())
    (root / "new.txt").write_text("Violet light in a glacier.\n")
    with pytest.raises(OvError) as e:
        indexer.index_tree(root, embedder=Other())
    assert e.value.code == "unsupported" and "ov index --full" in e.value.message
    rep = indexer.index_tree(root, opts=indexer.IndexOptions(full=True), embedder=Other())
    assert rep.embedded > 0
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        assert st.get_meta("model") == "other-384"
        assert st.q1("SELECT count(*) FROM chunks WHERE embedded = 0") == 0


def test_a_passage_of_one_word_gets_no_vector_unless_it_is_the_whole_file(tree, ov):
    """`    pass` after a class's long docstring was a passage of its own, and its vector sat
    near every short query (ranked first for "option" in a review). A passage of at most
    one word keeps its keyword row and gets no vector; a file's only passage keeps its."""
    body = "".join(f"    value_{i} = compute(options, flags, {i})\n" for i in range(14))
    pad = "    # " + " ".join(["word"] * 19) + "\n"  # (the passage before it just full)
    code = f'class Options(Base):\n    """Options."""\n\n    def build(self):\n{body}{pad}        return 1\n\n    pass\n'
    assert "    pass" in [c.text for c in indexer.passages(code, "models.py")]  # cut off alone, as in typer
    root = tree({"models.py": code, "note.txt": "milk\n"})
    r = ov("index", root, "-o", "json")
    assert r.code == 0, r.out + r.err
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        rows = st.rows("SELECT f.path, c.text, c.embedded FROM chunks c JOIN files f ON f.id = c.file_id "
                       "WHERE c.level = 2 ORDER BY c.id")
    tail = [(t, e) for p, t, e in rows if p == "models.py" and t.strip() == "pass"]
    assert tail == [("    pass", BARE)], rows  # its own passage, no vector
    assert all(e == 1 for p, t, e in rows if t.strip() != "pass"), rows
    assert [(t, e) for p, t, e in rows if p == "note.txt"] == [("milk", 1)]
    r = ov("search", "pass", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["models.py"], r.out  # still a keyword row
    assert ov("status", "-o", "json", cwd=root).json["result"]["embedded_coverage"] == 1.0
    # not a minified file's row: the default ranking keeps it, and the file's overview
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        assert st.rows(f"SELECT count(*) FROM chunks c WHERE {left_out_sql()}") == [(0,)]
    r = ov("search", "pass", "-o", "json", "--explain", cwd=root)
    assert any("keywords" in h["scores"] for h in r.json["result"]["hits"] if h["path"] == "models.py"), r.out


def test_a_notes_one_word_body_keeps_its_vector_and_its_front_matter_its_place(tree, ov):
    """A note of front matter and one word: the word is its only passage besides the block
    (which gets no vector), so it keeps its vector, and the names in the front matter stay
    keyword evidence of the default ranking (a review found "Priya Raman" there scored by
    the model alone, 0.002, when the body lost its vector)."""
    root = tree({"sync.md": "---\ntitle: Weekly sync\nattendees: Priya Raman\ntags: [meeting]\n---\nTBD\n",
                 "other.txt": "hello world\n"})
    assert ov("index", root).code == 0
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        assert st.rows("SELECT c.text, c.embedded FROM chunks c JOIN files f ON f.id = c.file_id "
                       "WHERE f.path = 'sync.md' AND c.level = 2 ORDER BY c.seq")[-1] == ("TBD", 1)
    r = ov("search", "Priya Raman", "-o", "json", "--explain", cwd=root)
    hit = next(h for h in r.json["result"]["hits"] if h["path"] == "sync.md")
    assert "keywords" in hit["scores"] and r.json["result"]["hits"][0]["path"] == "sync.md", r.out


def test_bare_passages():
    assert all(indexer.bare(t) for t in ("    pass", "}", "});", "end", "return 0;", "# Defaults"))
    assert not any(indexer.bare(t) for t in ("buy milk", "EXPORT_SYMBOL(foo);", "x" * 60))


def test_a_search_starts_a_worker_that_re_cuts_an_older_layout(small, ov):
    """A user who only searches gets the current layout too: the search answers from the
    rows there are and starts the background worker, which re-cuts the code files."""
    from ov.indexer import worker_state

    root, _ = small
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "3")
    r = ov("search", "copper lanterns", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["hits"]  # answered from the older rows
    assert "started a background worker" in r.err and "passages" in r.err
    deadline = time.monotonic() + 120
    while worker_state(db) is not None or _layout(db) != indexer.ROWS_LAYOUT:
        assert time.monotonic() < deadline, "the worker did not re-cut the passages"
        time.sleep(0.1)
    rep = ov("index", root, "-o", "json").json["result"]
    assert (rep["updated"], rep["unchanged"]) == (0, 3)  # the worker re-cut them already
    assert not [w for w in ov("status", "-o", "json", cwd=root).json["result"]["warnings"] if "older layout" in w]


def test_a_stopped_re_cut_leaves_the_index_complete_and_the_layout_older(small, ov):
    """A worker stopped during the re-cut (`ov index --stop`, a search wanting the CPU):
    every file keeps its rows, no search says the index is still being built, and the next
    pass re-cuts what is left."""
    from ov.model import IndexReport

    root, _ = small
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "3")
    with Store.open(db) as st:
        opts = indexer.options_for(root, indexer.walk_from_config(root))
        indexer._lexical_phase(st, root, opts, IndexReport(root=str(root)), None, lambda m: None,
                               stop=lambda: True, recut_only=True)
        assert st.get_meta(indexer.KEYWORDS_META) is None and st.get_meta(indexer.ROWS_META) == "3"
    r = ov("search", "copper lanterns", "-o", "json", "--no-auto-index", cwd=root)
    assert r.code == 0 and not [w for w in r.json["result"]["warnings"] if "still being built" in w]
    assert r.json["result"]["coverage"]["keywords_complete"] is True
    assert ov("index", root, "-o", "json").json["result"]["updated"] == 3  # every file, cut now
    assert _layout(db) == indexer.ROWS_LAYOUT


def test_the_workers_re_cut_keeps_what_flags_of_ov_index_added(tree, ov):
    """The worker knows the tree's config alone: a walk by it dropped the files `ov index
    --hidden` had added. Its re-cut reads the indexed files by their paths instead."""
    from ov.indexer import worker_state

    root = tree({"tool.py": CODE, ".hidden/tool2.py": CODE, "essay.txt": PROSE})
    assert ov("index", root, "--hidden", "-o", "json").json["result"]["added"] == 3
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "3")
        before = st.q1("SELECT count(*) FROM files")
    assert ov("search", "copper lanterns", "-o", "json", cwd=root).code == 0
    deadline = time.monotonic() + 120
    while worker_state(db) is not None or _layout(db) != indexer.ROWS_LAYOUT:
        assert time.monotonic() < deadline, "the worker did not re-cut the passages"
        time.sleep(0.1)
    with Store.open(db, readonly=True) as st:
        paths = sorted(p for (p,) in st.rows("SELECT path FROM files"))
    assert before == 3 and paths == [".hidden/tool2.py", "essay.txt", "tool.py"]


def test_a_stopped_re_cut_goes_on_after_the_last_file_it_wrote(tree, ov):
    """A worker killed at 1,225 of 1,790 files started the next re-cut from the first
    file again; it goes on from where the last one stopped now."""
    from ov.model import IndexReport

    root = tree({f"m{i}.py": CODE.replace("glow", f"glow{i}") for i in range(6)})
    assert ov("index", root, "--no-embed").code == 0
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "3")
    opts = indexer.options_for(root, indexer.walk_from_config(root))
    asked = []

    def stop_after_two() -> bool:
        asked.append(1)
        return len(asked) > 2

    with Store.open(db) as st:
        first = IndexReport(root=str(root))
        indexer._lexical_phase(st, root, opts, first, None, lambda m: None, stop=stop_after_two, recut_only=True)
        assert first.updated == 2 and st.get_meta(indexer.ROWS_META) == "3"
        rest = IndexReport(root=str(root))
        indexer._lexical_phase(st, root, opts, rest, None, lambda m: None, recut_only=True)
        assert rest.updated == 4 and st.get_meta(indexer.ROWS_META) == indexer.ROWS_LAYOUT
        assert st.get_meta(indexer.RECUT_META) is None


def _layout(db) -> str | None:
    with Store.open(db, readonly=True) as st:
        return st.get_meta(indexer.ROWS_META)


def test_a_re_cut_to_a_new_layout_gives_the_old_rows_pages_back(tree, ov):
    """Re-cutting every file for a new rows layout deletes every row and copies every
    vector: an upgraded index of 101 MB had 34 % of its pages free (a fresh one: 62 MB).
    Once every file is re-cut they are given back (VACUUM, as after a migration). The
    slots sqlite-vec's chunks leave empty stay (`ov index --full` gives them back)."""
    import sqlite3

    root = tree({f"d{i % 7}/n{i}.txt": PROSE.replace("lanterns", f"lanterns{i}") * 40 for i in range(120)}
                | {f"m{i}.py": CODE.replace("glow", f"glow{i}") * 4 for i in range(40)})
    assert ov("index", root).code == 0
    db = root / ".ov" / "index.db"

    def pages() -> tuple[int, int]:
        c = sqlite3.connect(db)
        try:
            return c.execute("PRAGMA page_count").fetchone()[0], c.execute("PRAGMA freelist_count").fetchone()[0]
        finally:
            c.close()

    fresh = pages()[0]
    with Store.open(db) as st, st.tx():
        st.set_meta(indexer.ROWS_META, "4")
    rep = ov("index", root, "-o", "json").json["result"]
    assert rep["updated"] == 160 and _layout(db) == indexer.ROWS_LAYOUT
    count, free = pages()
    assert free == 0 and count <= fresh * 1.3, (fresh, count, free)
