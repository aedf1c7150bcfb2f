"""The keyword branch's cutoff frequency (issue 3): common words leave the OR query while a
rarer word remains, and the chunks that are returned keep the whole query's bm25."""

from __future__ import annotations

import pytest

from ov.store import COMMON_DF, Filters, Store, or_phrases, split_common

FILLER = "river stone cloud lamp chair window garden bridge market paper " * 3


def corpus() -> dict[str, str]:
    """22 files: "data" in 8 of them (above the cutoff), "zebra" in 3 (below it), "words"
    in 18 (above it). data/heavy.txt, all "data", outranks two zebra files in the full
    query."""
    files = {f"notes/n{i:02d}.txt": f"Note {i}\n\nplain words about cooking and baking, recipe {i}.\n"
             for i in range(12)}
    files["data/heavy.txt"] = "Heavy\n\n" + "data " * 30 + "\n"
    for i in range(6):
        files[f"data/d{i}.txt"] = f"Table {i}\n\nthe data set {i} has rows and columns and words.\n"
    files["zoo/z0.txt"] = "Zoo one\n\na zebra grazes " + FILLER + " data data\n"
    files["zoo/z1.txt"] = "Zoo two\n\nthe zebra sleeps " + FILLER + "\n"
    files["zoo/z2.txt"] = "Zoo three\n\nzebra herd " + FILLER + FILLER + " data\n"
    return files


@pytest.fixture
def indexed(ov, tree):
    root = tree(corpus())
    r = ov("index", str(root))
    assert r.code == 0, r.err
    store = Store.open(root / ".ov" / "index.db")
    yield root, store
    store.close()


def full_bm25(store: Store, match: str, cid: int) -> float:
    """FTS5's own score of one chunk for the whole query."""
    return store.q1("SELECT -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid = ?",
                    (match, cid))


def texts(store: Store, hits) -> list[str]:
    rows = store.chunk_rows([cid for cid, _ in hits])
    return [rows[cid].text for cid, _ in hits]


def test_term_stats_count_rows_per_index_term(indexed):
    _, store = indexed
    st = store.term_stats(["data", "Zebra", "words"])
    assert st.terms == {"data": ("data",), "Zebra": ("zebra",), "words": ("word",)}  # porter stems
    for term, word in (("data", "data"), ("zebra", "zebra"), ("word", "words")):
        n = store.q1("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',))
        assert st.df[term] == n
    assert st.rows == store.q1("SELECT count(*) FROM chunks")
    assert st.df["data"] > COMMON_DF * st.rows > st.df["zebra"] > 0


def test_common_word_is_dropped_when_a_rare_one_remains(indexed):
    _, store = indexed
    st = store.term_stats(["data", "zebra"])
    assert split_common(["data", "zebra"], st, COMMON_DF) == (["zebra"], ["data"])

    match = '"data" OR "zebra"'
    full = store._match_search(match, Filters(), 3, "chunks_fts")
    assert any("zebra" not in t for t in texts(store, full))  # data/heavy.txt ranks first
    pruned = store.keyword_search(match, Filters(), 3)
    assert len(pruned) == 3
    assert all("zebra" in t for t in texts(store, pruned))
    # each chunk keeps the whole query's score (z0 and z2 also hold "data"), best first,
    # in the same order the whole query gives the zebra chunks
    for cid, score in pruned:
        assert score == pytest.approx(full_bm25(store, match, cid), abs=1e-9)
    everything = store._match_search(match, Filters(), 100, "chunks_fts")
    zebra_order = [cid for cid, t in zip([c for c, _ in everything], texts(store, everything))
                   if "zebra" in t]
    assert [cid for cid, _ in pruned] == zebra_order[:3]
    assert store.keyword_search(match, Filters(), 3) == pruned  # deterministic


def test_all_common_words_are_kept(indexed):
    _, store = indexed
    st = store.term_stats(["data", "words"])
    assert min(st.df.values()) > COMMON_DF * st.rows
    assert split_common(["data", "words"], st, COMMON_DF) == (["data", "words"], [])
    match = '"data" OR "words"'
    assert store.keyword_search(match, Filters(), 5) == store._match_search(match, Filters(), 5, "chunks_fts")


def test_a_word_the_index_lacks_does_not_empty_the_query(indexed):
    _, store = indexed
    st = store.term_stats(["data", "zzqxv"])
    assert st.df["zzqxv"] == 0
    assert split_common(["data", "zzqxv"], st, COMMON_DF) == (["data", "zzqxv"], [])
    assert len(store.keyword_search('"data" OR "zzqxv"', Filters(), 3)) == 3


def test_fewer_rare_matches_than_the_limit_keep_the_whole_query(indexed):
    _, store = indexed
    match = '"data" OR "zebra"'
    got = store.keyword_search(match, Filters(), 10)
    assert got == store._match_search(match, Filters(), 10, "chunks_fts")
    assert any("zebra" not in t for t in texts(store, got))


def test_a_file_filter_ranks_the_whole_query(indexed):
    _, store = indexed
    match = '"data" OR "zebra"'
    scoped = Filters(uris=("data", "zoo"))
    got = store.keyword_search(match, scoped, 3)
    assert got == store._match_search(match, scoped, 3, "chunks_fts")
    assert any("zebra" not in t for t in texts(store, got))


@pytest.mark.parametrize("levels", [(0,), (1,), (2,), (0, 1, 2), (1, 2)])
@pytest.mark.parametrize("limit", [1, 2, 5, 40])
def test_level_check_after_ranking_matches_the_join(indexed, levels, limit):
    _, store = indexed
    match = '"data" OR "zebra" OR "words" OR "zoo"'
    lv = ",".join(map(str, levels))
    want = store.rows(
        "SELECT t.rowid, -bm25(chunks_fts) FROM chunks_fts t JOIN chunks c ON c.id = t.rowid "
        f"WHERE chunks_fts MATCH ? AND c.level IN ({lv}) ORDER BY bm25(chunks_fts), t.rowid LIMIT ?",
        (match, limit))
    assert store._match_search(match, Filters(levels=levels), limit, "chunks_fts") == want


def test_or_phrases_reads_only_quoted_or_lists():
    assert or_phrases('"a""b" OR "c"') == ['a"b', "c"]
    assert or_phrases('"x"') == ["x"]
    assert or_phrases('"a" AND "b"') is None
    assert or_phrases('"a" OR b') is None
    assert or_phrases('NEAR("a" "b")') is None


def test_cli_keywords_results_are_exact_and_stable(ov, indexed):
    root, _ = indexed
    args = ("search", "zebra data", "--search-type", "keywords", "-o", "json", "-n", "5")
    r1, r2 = ov(*args, cwd=root), ov(*args, cwd=root)
    assert r1.code == 0, r1.err
    hits = r1.json["result"]["hits"]
    assert [h["path"] for h in hits] == [h["path"] for h in r2.json["result"]["hits"]]
    assert {"zoo/z0.txt", "zoo/z1.txt", "zoo/z2.txt"} <= {h["path"] for h in hits}
    for h in hits:
        text = (root / h["path"]).read_text()
        assert text[h["excerpt"]["start"]:h["excerpt"]["end"]] == h["excerpt"]["text"]
