"""A prose file's sentences as semantic evidence (level-3 rows, issue 6): each sentence has
a vector and no keyword row, and its cosine counts at SENTENCE_SHARE for the passage that
holds it; code files have none."""

from __future__ import annotations

import random

import pytest

from ov import rank
from ov.chunk import SENTENCE, chunk_text, sentences
from ov.store import Store

FILLER = ("harbour ledger violin meadow copper lantern orchard basalt tundra saffron glacier "
          "mosaic quarry falcon velvet canyon").split()
CLAIM = "Copper lanterns glow violet in glacier caves"


def _words(seed: int, n: int) -> str:
    rnd = random.Random(seed)
    return " ".join(rnd.choice(FILLER) for _ in range(n))


def _sentences_of(text: str, path: str = "a.txt") -> list[str]:
    return [s.text for s in sentences(text, chunk_text(text, path))]


def test_sentences_end_at_stops_before_a_capital_and_at_blank_lines():
    text = ("Title line\n\nStiffness is a property. It modulates cells (e.g. the HER2 line) by "
            "3.5 mm. Results were clear! [1] A note?\nWrapped lines stay\none sentence.\n\n  Last para.\n")
    got = sentences(text, chunk_text(text, "a.md"))
    assert [s.text for s in got] == [
        "Title line", "Stiffness is a property.", "It modulates cells (e.g. the HER2 line) by 3.5 mm.",
        "Results were clear!", "[1] A note?", "Wrapped lines stay\none sentence.", "Last para."]
    for s in got:  # exact slices, with their lines, at the sentence level
        assert text[s.start:s.end] == s.text and s.level == SENTENCE
        assert s.start_line == text.count("\n", 0, s.start) + 1
        assert s.end_line == s.start_line + s.text.count("\n")


def test_no_sentence_rows_for_one_sentence_or_for_a_whole_passage():
    assert _sentences_of("Just one sentence here.\n") == []
    assert _sentences_of("   \n\n  \n") == []
    text = "First paragraph, one sentence.\n\nSecond one. It has two sentences.\n"
    passages = chunk_text(text, "a.txt", max_tokens=16)
    assert "First paragraph, one sentence." in [p.text for p in passages]
    got = [s.text for s in sentences(text, passages)]
    assert "First paragraph, one sentence." not in got  # that passage's own vector says it
    assert got == ["Second one.", "It has two sentences."]


@pytest.fixture
def essay(tree, ov):
    """A long prose file with the claim as one of many sentences, a prose file that only
    shares words with it, and a code file."""
    sents = [_words(i, 12).capitalize() + "." for i in range(30)]
    sents[17] = CLAIM + "."
    root = tree({
        "essay.txt": "On caves\n\n" + " ".join(sents) + "\n",
        "notes.txt": "Field notes\n\n" + " ".join(_words(40 + i, 12).capitalize() + "." for i in range(8))
                     + " Copper and violet.\n",
        "tool.py": "def glow(cave):\n    \"\"\"Copper lanterns. Violet glacier.\"\"\"\n    return cave\n",
    })
    assert ov("index", root).code == 0
    return root


def test_prose_files_get_sentence_rows_without_keyword_rows(essay, ov):
    with Store.open(essay / ".ov" / "index.db", readonly=True) as st:
        per = dict(st.rows("SELECT f.path, count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                           "WHERE c.level = 3 GROUP BY f.path"))
        assert per.get("essay.txt", 0) >= 30 and per.get("notes.txt", 0) >= 9 and "tool.py" not in per
        keyword_rows = st.q1("SELECT count(*) FROM chunks_fts_docsize")
        assert keyword_rows == st.q1("SELECT count(*) FROM chunks WHERE level != 3")
        assert st.q1("SELECT count(*) FROM chunks_vec WHERE level = 3") == sum(per.values())
        passages = st.q1("SELECT count(*) FROM chunks WHERE level = 2")
    st_json = ov("status", "-o", "json", cwd=essay).json["result"]
    assert st_json["chunks"] == passages  # sentences are not counted as chunks
    r = ov("search", "violet", "--search-type", "keywords", "--all-chunks", "-n", "50", "-o", "json", cwd=essay)
    assert r.code == 0 and all(h["level"] == 2 for h in r.json["result"]["hits"])


@pytest.mark.parametrize("command", [["find"], ["search"], ["search", "--all-chunks"]])
def test_a_sentence_that_is_the_query_ranks_its_passage_first(essay, ov, command):
    r = ov(*command, CLAIM.lower() + ".", "-o", "json", "--explain", "-n", "3", cwd=essay)
    assert r.code == 0, r.out + r.err
    top = r.json["result"]["hits"][0]
    assert top["path"] == "essay.txt" and top["level"] == 2
    assert CLAIM in top["excerpt"]["text"]  # the passage holding the sentence is shown
    sem = top["scores"]["semantic"]
    assert sem["via"] == "sentence"
    assert sem["raw"] == pytest.approx(1.0 - rank.SENTENCE_SHARE, abs=1e-5)


def test_changing_or_deleting_a_prose_file_drops_its_sentences(essay, ov):
    db = essay / ".ov" / "index.db"
    (essay / "essay.txt").write_text("On caves\n\nNothing here now. Only this.\n")
    (essay / "notes.txt").unlink()
    assert ov("index", essay).code == 0
    with Store.open(db) as st:
        assert st.rows("SELECT c.text FROM chunks c WHERE c.level = 3 ORDER BY c.start") == [
            ("On caves",), ("Nothing here now.",), ("Only this.",)]
        orphans = st.q1("SELECT count(*) FROM chunks_vec v LEFT JOIN chunks c ON c.id = v.chunk_id "
                        "WHERE c.id IS NULL")
        assert orphans == 0
        st.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 0)")
    r = ov("find", CLAIM.lower(), "-o", "json", "--explain", cwd=essay)
    assert all(h["scores"]["semantic"].get("via") != "sentence" or h["path"] == "essay.txt"
               for h in r.json["result"]["hits"])


def test_an_index_without_sentence_rows_gets_them_from_the_next_index_run(essay, ov):
    db = essay / ".ov" / "index.db"
    with Store.open(db) as st, st.tx():  # what an index from before sentence rows holds
        ids = [r[0] for r in st.rows("SELECT id FROM chunks WHERE level = 3")]
        st.conn.executemany("DELETE FROM chunks_vec WHERE chunk_id = ?", [(i,) for i in ids])
        st.conn.execute("DELETE FROM chunks WHERE level = 3")
        st.conn.execute("DELETE FROM meta WHERE key = 'sentences'")
        before = st.q1("SELECT count(*) FROM chunks WHERE level = 2")
    r = ov("find", CLAIM.lower(), "-o", "json", "--explain", cwd=essay)  # still answers
    assert r.code == 0 and r.json["result"]["hits"][0]["scores"]["semantic"].get("via") != "sentence"
    rep = ov("index", essay, "-o", "json").json["result"]
    assert rep["updated"] == 2 and rep["added"] == 0  # the prose files, re-split; not the code
    assert rep["reused"] >= before  # their passages keep their vectors
    with Store.open(db, readonly=True) as st:
        assert st.q1("SELECT count(*) FROM chunks WHERE level = 3") == len(ids)
    again = ov("index", essay, "-o", "json").json["result"]
    assert again["updated"] == 0 and again["unchanged"] == 3
    top = ov("find", CLAIM.lower(), "-o", "json", "--explain", cwd=essay).json["result"]["hits"][0]
    assert top["path"] == "essay.txt" and top["scores"]["semantic"]["via"] == "sentence"


@pytest.mark.model
def test_real_model_a_claim_found_by_its_sentence(tree, ov):
    """With the real model, a claim that one sentence of a long abstract states finds that
    abstract through the sentence, ahead of abstracts on the same subject."""
    filler = ("Participants were recruited from outpatient clinics in three cities. Blood samples "
              "were drawn after an overnight fast and stored until assay. Models adjusted for age, "
              "sex, body mass index and smoking. Follow-up visits took place every six months. ")
    root = tree({
        "a.txt": "Cohort study of older adults\n\n" + filler
                 + "Daily vitamin D supplements halved the rate of hip fractures over five years. "
                 + filler,
        "b.txt": "Cohort study of adolescents\n\n" + filler + "Screen time was not linked to sleep. " + filler,
        "c.txt": "Cohort study of nurses\n\n" + filler + "Night shifts raised blood pressure slightly. " + filler,
    })
    assert ov("index", root).code == 0
    r = ov("find", "vitamin D supplementation reduces hip fractures", "-o", "json", "--explain", "-n", "3",
           cwd=root)
    assert r.code == 0, r.out + r.err
    top = r.json["result"]["hits"][0]
    assert top["path"] == "a.txt" and top["scores"]["semantic"].get("via") == "sentence"
    assert "vitamin D" in top["excerpt"]["text"]


class _CountingText(str):
    """A text that adds up how many characters `count` scans."""

    scanned = 0

    def count(self, sub, start=0, end=None):
        end = len(self) if end is None else end
        _CountingText.scanned += max(0, end - start)
        return str.count(self, sub, start, end)


def test_a_large_prose_file_splits_in_linear_time():
    """Each sentence's line used to be counted from the file's start: 14 s for a 1 MB file
    of 100,000 short sentences (the largest file indexed by default). The lines are now
    counted on from the last sentence, so the text is scanned about once."""
    text = "".join(f"Go {i}." + (" " if i % 10 else "\n") for i in range(100_000))
    passages = chunk_text(text, "big.txt")
    _CountingText.scanned = 0
    got = sentences(_CountingText(text), passages)
    assert _CountingText.scanned <= 2 * len(text)
    assert len(got) == 100_000
    for s in got[:50] + got[-50:]:
        assert text[s.start:s.end] == s.text and s.start_line == text.count("\n", 0, s.start) + 1


def test_a_blank_line_ends_a_sentence_in_a_crlf_file_too():
    lf = "# Title\n\nFirst line here. Second one.\n\nThird para\n"
    crlf = lf.replace("\n", "\r\n")
    assert _sentences_of(crlf, "a.md") == _sentences_of(lf, "a.md") == [
        "# Title", "First line here.", "Second one.", "Third para"]
    for s in sentences(crlf, chunk_text(crlf, "a.md")):
        assert crlf[s.start:s.end] == s.text
