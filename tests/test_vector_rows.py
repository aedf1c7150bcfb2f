"""Which rows get a vector (issue 13's budget): passages and abstracts; overviews keep their
keyword rows only; prose has no sentence rows; identical texts are embedded once; an index
of the older layout (sentence rows, overview vectors) drops them on the next run without
embedding again."""

from __future__ import annotations

import pytest

from ov import indexer
from ov.model import Chunk
from ov.store import Store

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


def test_an_index_of_the_older_layout_drops_sentences_and_overview_vectors(small, ov):
    root, _ = small
    db = root / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():  # what an index of the older layout holds
        fid, blob = st.rows("SELECT c.file_id, v.embedding FROM chunks c JOIN chunks_vec v "
                            "ON v.chunk_id = c.id WHERE c.level = 2 LIMIT 1")[0]
        (sid,) = st.insert_chunks(fid, [Chunk(9, 20, 3, 3, "Copper lanterns", level=3)], ["h-sentence"])
        st._insert_vec(sid, blob)
        for (oid,) in st.rows("SELECT id FROM chunks WHERE level = 1"):
            st.conn.execute("UPDATE chunks SET embedded = 0 WHERE id = ?", (oid,))
            st._insert_vec(oid, blob)
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
