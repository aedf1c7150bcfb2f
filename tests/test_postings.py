"""The keyword postings a warm index holds in memory (ov.store.postings) rank exactly as FTS5's
bm25() does: the same rows in the same order with the same scores, bit for bit, under the
level filters, the cutoff of common words, ties and every depth, and again after the index
changes under them."""

from __future__ import annotations

import os
import random
import time

import pytest

import ov as lib
from ov.store import Filters, Store, fts_phrase
from ov.store import postings as postings_mod

WORDS = ("parse read write file tree chunk split index vector query token search walk folder "
         "config cache thread lock queue socket stream buffer format date json yaml the a of").split()
QUERIES = [["parse", "file"], ["the", "file", "walk"], ["json", "yaml", "date", "format"],
           ["thread", "lock", "queue", "socket", "stream", "buffer"], ["the", "a", "of"],
           ["file", "file", "tree"], ["shared", "passage"], ["nothingsuchword", "cache"],
           ["Parsing", "walks", "Folders"]]
FILTERS = [Filters(), Filters(levels=(0,)), Filters(levels=(0, 2)), Filters(levels=(1,)),
           Filters(levels=()), Filters(vectorless=False), Filters(levels=(0, 1, 2), vectorless=False)]


def _files(n: int = 60) -> dict[str, str]:
    rng = random.Random(11)
    out = {}
    for i in range(n):
        ext = ("py", "md", "txt")[i % 3]
        # skewed word counts: some words in most rows (the cutoff's common words), others rare
        paras = ["\n".join(" ".join(rng.choices(WORDS, weights=range(1, len(WORDS) + 1), k=8))
                           for _ in range(rng.randint(1, 5))) for _ in range(6)]
        out[f"{('src', 'docs', 'notes')[i % 3]}/f{i:02d}.{ext}"] = "\n\n".join(paras) + "\n"
    for i in range(4):  # identical texts: identical scores, ties to order by rowid
        out[f"dup/d{i}.txt"] = "shared passage of several files\n\nthe same passage again\n"
    out["vendor/app.min.js"] = "var parse=function(file){return json.parse(file)};" * 40 + "\n"
    return out


@pytest.fixture
def indexed(tree, ov):
    root = tree(_files())
    assert ov("index", "--no-embed", cwd=root).code == 0
    return root


def _warm(root):
    ix = lib.Index.open(root)
    ix.keep_keywords()
    return ix


def _same(warm: Store, plain: Store) -> int:
    """Every query x filter x depth gives the same rows and scores on both; returns how many
    non-empty results were compared."""
    n = 0
    for words in QUERIES:
        match = " OR ".join(fts_phrase(w) for w in words)
        for f in FILTERS:
            for limit in (1, 3, 10, 64, 500):
                got, want = warm.keyword_search(match, f, limit), plain.keyword_search(match, f, limit)
                assert got == want, (words, f, limit)
                n += bool(want)
    return n


def test_the_postings_rank_as_fts5_does(indexed, monkeypatch):
    plain = Store.open(indexed / ".ov" / "index.db", readonly=True)
    with _warm(indexed) as ix:
        held = ix.store._postings
        from ov.store import queries as store_mod

        monkeypatch.setattr(store_mod, "RARE_MIN", 8)  # the cutoff at this corpus's size
        monkeypatch.setattr(store_mod, "RESCORE_POOL", 16)
        counted = []
        counts = held.counts
        monkeypatch.setattr(held, "counts", lambda *a: counted.append(a[1]) or counts(*a))
        assert _same(ix.store, plain) > 100
        assert held._terms  # the postings answered, not the SQL path
        assert counted  # common words were rescored from held postings (the cutoff ran)
        # held postings are dropped when too many: still the same answers
        monkeypatch.setattr(postings_mod, "MAX_ENTRIES", 50)
        ix.store.forget()
        assert _same(ix.store, plain) > 100
        assert held._held <= max(50, max(len(t[0]) for t in held._terms.values()))
    plain.close()


def test_ties_and_scores_match_fts5_to_the_bit(indexed):
    with Store.open(indexed / ".ov" / "index.db", readonly=True) as plain, _warm(indexed) as ix:
        match = '"shared" OR "passage"'
        want = plain.keyword_search(match, Filters(levels=(0, 1, 2)), 20)
        got = ix.store.keyword_search(match, Filters(levels=(0, 1, 2)), 20)
        assert got == want
        scores = [s for _, s in got]
        assert len(set(scores)) < len(scores)  # the duplicates tie, ordered by rowid
        own = {cid: plain.q1("SELECT -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
                             "AND rowid = ?", (match, cid)) for cid, _ in got}
        assert all(own[cid] == s for cid, s in got)  # == on floats: bit for bit


def test_search_results_are_the_same_with_and_without_the_postings(indexed):
    def seen(res):
        return [(h.path, h.start_line, h.level, h.score, h.scores) for h in res.hits]

    with lib.Index.open(indexed) as cold, _warm(indexed) as warm:
        for q in ("parse the json file", "thread lock queue", "shared passage", "walks folders"):
            for opts in ({}, {"limit": 3}, {"all_chunks": True, "limit": 20}, {"types": ["md"]},
                         {"level": "0,2", "explain": True}, {"uri": ["src"]}):
                a = cold.search(q, search_type="keywords", **opts)
                b = warm.search(q, search_type="keywords", **opts)
                assert seen(a) == seen(b) and a.next_cursor == b.next_cursor, (q, opts)
                if a.next_cursor:
                    pa = cold.search(q, search_type="keywords", cursor=a.next_cursor, **opts)
                    pb = warm.search(q, search_type="keywords", cursor=b.next_cursor, **opts)
                    assert seen(pa) == seen(pb)


def test_the_postings_follow_the_index(indexed, ov):
    with _warm(indexed) as ix:
        held = ix.store._postings
        refreshes = []
        refresh = held.refresh
        held.refresh = lambda store: refreshes.append(1) or refresh(store)
        ix.search("parse the json file", search_type="keywords")
        ix.search("parse the json file", search_type="keywords")
        assert refreshes == []  # nothing changed: nothing read again
        time.sleep(0.01)
        (indexed / "src" / "f00.py").write_text("zeppelin hangar parse\n\nzeppelin json\n")
        os.remove(indexed / "docs" / "f01.md")
        (indexed / "notes" / "new.txt").write_text("a zeppelin file that was not there before\n")
        assert ov("index", "--no-embed", cwd=indexed).code == 0  # another connection commits
        hits = ix.search("zeppelin", search_type="keywords").hits
        assert refreshes == [1] and {h.path for h in hits} == {"src/f00.py", "notes/new.txt"}
        with Store.open(indexed / ".ov" / "index.db", readonly=True) as plain:
            assert _same(ix.store, plain) > 100


def test_a_write_of_its_own_is_ranked_by_sql(indexed):
    with _warm(indexed) as ix:
        match = '"parse" OR "file"'
        before = ix.store.keyword_search(match, Filters(), 500)
        with ix.store.tx():
            # inside its own transaction the SQL path answers (the postings lack its rows)
            cid = ix.store.q1("SELECT min(id) FROM chunks WHERE level = 2")
            ix.store.conn.execute("UPDATE chunks SET level = 1 WHERE id = ?", (cid,))
            inside = ix.store.keyword_search(match, Filters(), 500)
            assert cid not in dict(inside) and cid in dict(before)
        assert ix.store.keyword_search(match, Filters(), 500) == inside


def test_a_cold_index_holds_no_postings(indexed, ov_proc):
    from conftest import imported_by

    with lib.Index.open(indexed) as ix:
        ix.search("parse a json file", search_type="keywords")
        assert ix.store._postings is None
    res, modules = imported_by(["search", "--search-type", "keywords", "parse a json file"], indexed)
    assert res.code == 0 and "ov.store.postings" not in modules


def test_docsize_varints_decode_as_sqlite_writes_them():
    from ov.bm25 import varint

    values = [0, 1, 127, 128, 300, 16383, 16384, 2_000_000, 2**35, 2**56 + 5]

    def enc(v: int) -> bytes:
        if v > 2**56 - 1:  # 9 bytes: 8 of 7 bits, the last of 8
            head, last = v >> 8, v & 0xFF
            return bytes(0x80 | ((head >> (7 * i)) & 0x7F) for i in range(7, -1, -1)) + bytes([last])
        out = [v & 0x7F]
        v >>= 7
        while v:
            out.append(0x80 | (v & 0x7F))
            v >>= 7
        return bytes(reversed(out))

    blobs = [enc(v) + b"\x05\x06" for v in values]
    assert [varint(b)[0] for b in blobs] == values
    assert postings_mod._first_varints(blobs).tolist() == values


def test_an_index_past_max_rows_is_ranked_by_sql(indexed, monkeypatch):
    monkeypatch.setattr(postings_mod, "MAX_ROWS", 10)  # this tree has more keyword rows
    with Store.open(indexed / ".ov" / "index.db", readonly=True) as plain, _warm(indexed) as ix:
        match = '"parse" OR "file"'
        assert ix.store.keyword_search(match, Filters(), 50) == plain.keyword_search(match, Filters(), 50)
        held = ix.store._postings
        assert not held.usable and not held._terms and len(held.ids) == 0  # nothing read or held
