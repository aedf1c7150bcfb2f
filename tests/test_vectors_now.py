"""A hybrid search while vectors are still coming computes its best keyword hits' vectors
itself (`engine._VectorsNow`): a first search answers from both branches, says how many
rows it computed (`coverage.computed`), and writes none of them (the worker does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_tree, run_subprocess
from ov import api, engine
from ov.indexer import IndexOptions, index_tree
from ov.store import Store

FILES = {
    **{f"notes/harbour{i:02d}.md": f"# Harbour {i}\n\nThe tide tables for harbour {i} list high water. "
       "Boats leave the harbour at dawn and come back before the evening tide.\n" for i in range(30)},
    "src/dedupe.py": ('def unique_lines(path):\n'
                      # (not the query word for word: that would raise it by itself, ov.engine `_verbatim`)
                      '    """Remove the duplicate lines of a file, keeping the first of each."""\n'
                      '    seen = set()\n'
                      '    with open(path) as f:\n'
                      '        kept = [line for line in f if not (line in seen or seen.add(line))]\n'
                      '    with open(path, "w") as f:\n'
                      '        f.writelines(kept)\n'),
    "docs/parade.md": ("# The parade\n\nThe sergeant walked the lines, then the lines of the file. \"Remove your "
                       "hats,\" he said,\nand a duplicate of the colonel's key fell from his pocket.\n"),
    "docs/install.md": "# Install\n\nRun the installer, then restart the machine.\n",
}
QUERY = "remove duplicate lines from a file"


def _first_search_index(root: Path) -> dict:
    """The index a first search leaves: keyword rows, no vector yet (the worker is held back,
    then stopped), so each later search runs while the vectors are still coming."""
    env = {"OV_FIRST_INLINE_ROWS": "0", "OV_WORKER_DELAY": "60", "OV_FIRST_BUDGET": "600"}
    r = run_subprocess(["search", QUERY, "-o", "json", "--explain"], cwd=root, env=env)
    subprocess.run([sys.executable, "-m", "ov", "index", "--stop"], cwd=root, capture_output=True, timeout=60)
    assert r.code == 0, r.out + r.err
    return r.json["result"]


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A tree and its first search's result, with the real model."""
    old = os.environ.pop("OV_EMBEDDER", None)
    try:
        root = make_tree(tmp_path_factory.mktemp("now") / "tree", FILES)
        return root, _first_search_index(root)
    finally:
        if old is not None:
            os.environ["OV_EMBEDDER"] = old


@pytest.mark.model
def test_a_first_search_answers_from_both_branches_and_says_what_it_computed(first):
    root, res = first
    cov = res["coverage"]
    assert res["search_type"] == "hybrid" and res["branches"] == ["keywords", "semantic"], res
    assert cov["embedded"] == 0 and cov["pending"] > 0, cov
    assert 0 < cov["computed"] <= engine.VECTORS_NOW_FILES + engine.VECTORS_NOW_ABSTRACTS, cov
    assert any(f"hybrid search ran on keywords, and on the vectors it computed for its best keyword hits "
               f"({cov['computed']} rows): the index has no vectors yet" in w for w in res["warnings"])
    # the semantic evidence is the model's: the function that does it outranks the story
    # that holds the query's words (first by keywords alone)
    paths = [h["path"] for h in res["hits"]]
    assert paths[:2] == ["src/dedupe.py", "docs/parade.md"], paths
    top, story = res["hits"][0]["scores"], res["hits"][1]["scores"]
    assert top["semantic"]["raw"] < story["semantic"]["raw"], (top, story)  # cosine distances
    kw = run_subprocess(["search", QUERY, "--search-type", "keywords", "-o", "json"], cwd=root,
                        env={"OV_BACKGROUND": "0"}).json["result"]["hits"]
    assert [h["path"] for h in kw[:2]] == ["docs/parade.md", "src/dedupe.py"], kw[:2]
    with Store.open(root / ".ov" / "index.db") as s:  # none of them written
        assert s.coverage()[0] == 0


@pytest.mark.model
def test_turned_off_the_hybrid_runs_on_keywords_alone_and_says_so(first):
    root, _ = first
    r = run_subprocess(["search", QUERY, "-o", "json"], cwd=root,
                       env={"OV_BACKGROUND": "0", "OV_VECTORS_NOW_FILES": "0"})
    res = r.json["result"]
    assert r.code == 0 and res["branches"] == ["keywords"] and res["coverage"]["computed"] == 0, res
    assert any("hybrid search ran on keywords alone" in w for w in res["warnings"]), res["warnings"]


@pytest.mark.model
def test_pages_of_a_search_that_computed_vectors_are_one_ranking(first):
    """Page 2 replays page 1's ranking: the vectors computed again give the same hits."""
    root, _ = first
    env = {"OV_BACKGROUND": "0"}

    def page(n, cursor=None):
        r = run_subprocess(["search", "harbour tide at dawn", "-o", "json", "-n", str(n),
                            *(["--cursor", cursor] if cursor else [])], cwd=root, env=env)
        assert r.code == 0, r.out + r.err
        res = r.json["result"]
        return [(h["path"], h["score"]) for h in res["hits"]], res.get("next_cursor"), res

    long, _, res = page(12)
    assert res["coverage"]["computed"] > 0
    chained, cursor, _ = page(4)
    while cursor and len(chained) < 12:
        more, cursor, _ = page(4, cursor)
        chained += more
    assert chained[:12] == long
    assert len({p for p, _ in long}) == len(long)


def _pending_and_counted(tree, files: dict[str, str], monkeypatch):
    """A tree whose vectors are pending (no worker), and the list of every text the
    (small, deterministic) embedder is then given."""
    from ov.embed import HashEmbedder

    root = tree(files)
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    embedded: list[str] = []

    class Counting(HashEmbedder):
        def embed(self, texts):
            embedded.extend(texts)
            return super().embed(texts)

    monkeypatch.setattr("ov.embed.load_embedder", lambda *a, **k: Counting())
    monkeypatch.setenv("OV_BACKGROUND", "0")
    return root, embedded


def test_at_most_the_best_files_rows_are_computed_each_once(tree, monkeypatch):
    """VECTORS_NOW_FILES files, each its best keyword passage and its abstract; a row is
    computed once per search whatever the depths its pages read; --all-chunks lists no
    entry twice."""
    monkeypatch.setattr(engine, "VECTORS_NOW_FILES", 3)
    files = {f"d/f{i:02d}.md": f"# Part {i}\n\n" + "\n\n".join(
        f"Paragraph {j} of part {i}: the ferry timetable and the harbour tide." for j in range(6)) + "\n"
        for i in range(12)}
    root, embedded = _pending_and_counted(tree, files, monkeypatch)
    with api.Index.open(root) as ix:
        res = ix.search("ferry timetable tide", limit=20)
        assert res.coverage["computed"] == len(embedded) - 1 <= 2 * 3  # (one text: the query)
        assert res.coverage["computed"] > 3 and len(set(embedded)) == len(embedded)
        assert {h.path for h in res.hits} == set(files)
        entries = [(h.path, h.level, h.start_line, h.end_line)
                   for h in ix.search("ferry timetable tide", limit=50, all_chunks=True).hits]
        assert len(entries) == len(set(entries)), entries
        assert ix.status().coverage["embedded"] == 0


def test_the_abstracts_computed_are_those_of_the_best_files(tree, monkeypatch):
    """VECTORS_NOW_ABSTRACTS of the VECTORS_NOW_FILES files have their abstract computed
    too, the best ones by keyword score; the others their best passage alone."""
    monkeypatch.setattr(engine, "VECTORS_NOW_FILES", 4)
    monkeypatch.setattr(engine, "VECTORS_NOW_ABSTRACTS", 2)
    # two files hold both words, six one of them: the two are the best by any keyword score
    files = {f"d/f{i:02d}.md": f"# Part {i}\n\nThe ferry {'timetable' if i < 2 else 'harbour'} is here.\n\n"
             + "\n\n".join(f"Paragraph {j} of part {i} on other things." for j in range(4)) + "\n"
             for i in range(8)}
    root, embedded = _pending_and_counted(tree, files, monkeypatch)
    with api.Index.open(root) as ix:
        best = [h.path for h in ix.search("ferry timetable", limit=8, search_type="keywords").hits]
        res = ix.search("ferry timetable", limit=8)
        abstracts = dict(ix.store.rows("SELECT f.path, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
                                       "WHERE c.level = 0"))
    assert res.coverage["computed"] == 4 + 2
    assert set(best[:2]) == {"d/f00.md", "d/f01.md"}
    assert {p for p, t in abstracts.items() if t in embedded} == set(best[:2])


def test_the_vectors_a_search_computed_serve_the_searches_after_it(tmp_path, monkeypatch):
    """The rows a search computed were thrown away: the same query again, its JSON or its
    next page paid the model's time again (6.2 s each on the JDK's sources at 8 % of their
    vectors). They are kept beside the index (`index.db.searched`), read back by text and model,
    and dropped once the index has all its vectors; a damaged file is a miss."""
    from conftest import run_inprocess
    from ov import embed
    from ov.indexer import embed_phase
    from ov.model import IndexReport
    from ov.store import SearchedVectors
    from ov.store.searched import cache_path

    root = make_tree(tmp_path / "tree", FILES)
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    calls: list[int] = []
    real = embed.HashEmbedder.embed
    monkeypatch.setattr(embed.HashEmbedder, "embed", lambda self, texts: calls.append(len(texts)) or real(self, texts))
    env = {"OV_BACKGROUND": "0"}

    def search(*more):
        r = run_inprocess("search", QUERY, "-o", "json", "--explain", *more, cwd=root, env=env)
        assert r.code == 0, r.err
        return r.json["result"]

    first = search()
    rows = first["coverage"]["computed"]
    assert rows > 0 and sum(calls) - 1 == rows  # (the query's own vector, and the rows)
    kept = cache_path(root / ".ov" / "index.db")
    assert kept.exists()
    calls.clear()
    again = search()
    assert sum(calls) == 1 and again["coverage"]["computed"] == rows  # the query's vector alone
    assert [(h["path"], h["score"]) for h in again["hits"]] == [(h["path"], h["score"]) for h in first["hits"]]
    # another model's rows, or a damaged file: a miss, computed as before
    assert SearchedVectors(root / ".ov" / "index.db", "other-model").get({1: "x"}, 1536) == {}
    kept.write_bytes(b"not a database at all" * 100)
    calls.clear()
    assert [h["path"] for h in search()["hits"]] == [h["path"] for h in first["hits"]]
    assert sum(calls) - 1 == rows
    with Store.open(root / ".ov" / "index.db") as s:  # the index itself holds none of them
        assert s.coverage()[0] == 0
        embed_phase(s, IndexReport(root=str(root)), None, None, lambda: False)
    search()
    assert not kept.exists()  # every vector stored: the file is gone


def test_the_searched_vectors_file_is_only_ever_ovs_own(tmp_path):
    """The cache beside the index is a file a cloned tree may carry, as the index is (a
    review): a recursive view planted under its table's name hung every search past
    Ctrl-C, a link planted under its name was written through, and a user's own
    `searched.db` beside a `--db` index was deleted. It is now the index's sidecar
    (`<index>.searched`), runs no schema it did not make, writes into no link or other
    kind of file, and removes only a regular file by its own name."""
    import sqlite3
    import threading

    from ov.store import SearchedVectors
    from ov.store.searched import cache_path

    db = tmp_path / "idx.db"
    own = tmp_path / "searched.db"
    own.write_text("the user's own file")
    vec = b"\0" * 1536
    sv = SearchedVectors(db, "m")
    sv.put([("some text", vec)])
    assert sv.get({7: "some text", 8: "some text", 9: "other"}, 1536) == {7: vec, 8: vec}
    SearchedVectors.drop_beside(db)
    assert not cache_path(db).exists() and own.read_text() == "the user's own file"
    # a planted view (recursive: it never ends) is never run, and the file is made again
    conn = sqlite3.connect(cache_path(db))
    conn.execute("CREATE VIEW v AS WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r) "
                 "SELECT k, k AS vec FROM r")
    conn.close()
    got: list = []
    t = threading.Thread(target=lambda: got.append(sv.get({1: "some text"}, 1536)), daemon=True)
    t.start()
    t.join(10)
    assert got == [{}], "a planted view ran"
    sv.put([("some text", vec)])
    assert sv.get({1: "some text"}, 1536) == {1: vec}
    # a link under the cache's name is neither written through nor removed
    SearchedVectors.drop_beside(db)
    target = tmp_path / "elsewhere"
    cache_path(db).symlink_to(target)
    sv.put([("some text", vec)])
    assert not target.exists() and sv.get({1: "some text"}, 1536) == {}
    SearchedVectors.drop_beside(db)
    assert cache_path(db).is_symlink()
    # a read-only index keeps nothing
    cache_path(db).unlink()
    SearchedVectors(db, "m", readonly=True).put([("some text", vec)])
    assert not cache_path(db).exists()
