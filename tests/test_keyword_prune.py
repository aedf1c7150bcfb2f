"""The keyword branch's cutoff frequency (issue 3): common words leave the OR query while a
rarer word remains, and the chunks that are returned keep the whole query's bm25."""

from __future__ import annotations

import pytest

from ov import bm25
from ov.bm25 import COMMON_DF, RARE_MIN, split_common
from ov.store import queries as store_mod
from ov.store import Filters, Store, or_phrases

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


def _indexed(ov, tree, files):
    """(root, open store) of `files` indexed through the CLI; the store closes after."""
    root = tree(files)
    r = ov("index", str(root))
    assert r.code == 0, r.err
    store = Store.open(root / ".ov" / "index.db")
    yield root, store
    store.close()


@pytest.fixture
def indexed(ov, tree):
    yield from _indexed(ov, tree, corpus())


def full_bm25(store: Store, match: str, cid: int) -> float:
    """FTS5's own score of one chunk for the whole query."""
    return store.q1("SELECT -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid = ?",
                    (match, cid))


def upto_ties(got, want, limit):
    """`got` is `want`'s best `limit` and then only rows tying the last of them."""
    assert got[:limit] == want[:limit]
    assert all(score == got[limit - 1][1] for _, score in got[limit:])


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
    assert st.rows == store.q1("SELECT count(*) FROM chunks WHERE level != 3")  # sentences: no keyword row
    assert st.df["data"] > COMMON_DF * st.rows > st.df["zebra"] > 0


def test_common_word_is_dropped_when_a_rare_one_remains(indexed, monkeypatch):
    _, store = indexed
    monkeypatch.setattr(store_mod, "RARE_MIN", 3)  # this small corpus has 3 zebra chunks
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
    whole = store._match_search(match, Filters(), 50, "chunks_fts")
    upto_ties(store.keyword_search(match, Filters(), 5), whole, 5)


def test_a_word_the_index_lacks_does_not_empty_the_query(indexed):
    _, store = indexed
    st = store.term_stats(["data", "zzqxv"])
    assert st.df["zzqxv"] == 0
    assert split_common(["data", "zzqxv"], st, COMMON_DF) == (["data", "zzqxv"], [])
    got = store.keyword_search('"data" OR "zzqxv"', Filters(), 3)
    upto_ties(got, store._match_search('"data" OR "zzqxv"', Filters(), 50, "chunks_fts"), 3)


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


def paged_corpus() -> dict[str, str]:
    """300 files: "zebra" once in 75 long ones (below the cutoff, but in more rows than
    the least depth the engine asks), "data" up to 30 times, first, in 112 others (whose
    overview holds it too: above the cutoff), so data-only files lead the whole query."""
    fill = "river stone cloud lamp chair window garden bridge market paper".split()
    files = {}
    for i in range(300):
        words = [fill[(i * 7 + k * 3) % len(fill)] for k in range(30)]
        if i % 4 == 1:
            words += ["zebra"] + words
        if i % 4 == 0 or i % 8 == 2:
            words = ["data"] * (1 + i % 30) + words
        files[f"f{i:03d}.txt"] = f"Doc {i}\n\n" + " ".join(words) + "\n"
    return files


@pytest.fixture
def paged(ov, tree):
    yield from _indexed(ov, tree, paged_corpus())


def test_pruned_ranking_does_not_depend_on_the_depth(paged):
    """The engine asks deeper for later pages: each answer must be a prefix of the deeper
    one, and all of them the rare-word rows in the whole query's order."""
    _, store = paged
    match = '"zebra" OR "data"'
    st = store.term_stats(["zebra", "data"])
    assert split_common(["zebra", "data"], st, COMMON_DF) == (["zebra"], ["data"])
    whole = store._match_search(match, Filters(), 10_000, "chunks_fts")
    zebra = {cid for cid, _ in store._match_search('"zebra"', Filters(), 10_000, "chunks_fts")}
    assert len(zebra) >= RARE_MIN
    want = [(cid, s) for cid, s in whole if cid in zebra]
    assert whole[0][0] not in zebra  # a data-only file leads the whole query
    deeper = []
    for depth in (64, 84, 124, 204, 1000):
        got = store.keyword_search(match, Filters(), depth)
        n = min(depth, len(want))
        assert [cid for cid, _ in got[:n]] == [cid for cid, _ in want[:n]]
        assert [s for _, s in got[:n]] == pytest.approx([s for _, s in want[:n]], abs=1e-9)
        assert all(s == got[n - 1][1] for _, s in got[n:])
        assert got[:len(deeper)] == deeper
        deeper = got


def test_rows_past_the_rescored_pool_follow_it_at_every_depth(ov, tree):
    """With more rare-word rows than the pool whose bm25 is completed, the rows past it
    follow by their rare words' score, the same at every depth."""
    fill = "river stone cloud lamp chair window garden bridge market paper".split()
    files = {}
    for i in range(600):
        words = [fill[(i + k) % len(fill)] for k in range(40 + i % 7)]
        if i % 2 == 1:
            words.append("zebra")  # 300 rows of 17%: rare
        if i % 4 == 0 or i % 8 == 1:
            words = ["data", *words]  # text and both tiers: about 30%, common
        files[f"f{i:03d}.txt"] = " ".join(words) + "\n"
    root = tree(files)
    assert ov("index", str(root)).code == 0
    with Store.open(root / ".ov" / "index.db") as store:
        st = store.term_stats(["zebra", "data"])
        assert split_common(["zebra", "data"], st, COMMON_DF) == (["zebra"], ["data"])
        match = '"zebra" OR "data"'
        rare_only = store._match_search('"zebra"', Filters(), 10_000, "chunks_fts")
        pool = store_mod.RESCORE_POOL
        assert len(rare_only) > 2 * pool
        deeper = []
        for depth in (64, 100, pool, 200, 1000):
            got = store.keyword_search(match, Filters(), depth)
            assert got[:len(deeper)] == deeper
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
            deeper = got
        head = {cid for cid, _ in rare_only[:pool]}
        assert {cid for cid, _ in deeper[:pool]} == head
        for cid, score in deeper[:pool]:
            assert score == pytest.approx(full_bm25(store, match, cid), abs=1e-9)
        assert deeper[pool:] == rare_only[pool:1000]


@pytest.mark.parametrize("search_type", ["keywords", "hybrid"])
def test_cursor_pages_across_the_cutoff_neither_repeat_nor_skip(ov, paged, search_type):
    root, _ = paged
    args = ("search", "zebra data", "--search-type", search_type, "-o", "json")
    pages, cursor = [], None
    while True:
        r = ov(*args, "-n", "10", *(["--cursor", cursor] if cursor else []), cwd=root)
        assert r.code == 0, r.err
        pages += [(h["path"], h["excerpt"]["start"]) for h in r.json["result"]["hits"]]
        cursor = r.json["result"].get("next_cursor")
        if not cursor or len(pages) >= 60:
            break
    assert len(pages) == len(set(pages))
    whole = ov(*args, "-n", "50", cwd=root).json["result"]["hits"]
    assert pages[:50] == [(h["path"], h["excerpt"]["start"]) for h in whole]


def test_stats_read_across_an_index_run_do_not_break_the_search(paged, monkeypatch):
    """TermStats' counts are separate reads: an index run deleting rows between them can
    leave a word in more rows than the table holds. The search must still answer."""
    _, store = paged
    real = store.term_stats

    def after_a_deletion(words):
        st = real(words)  # "data" counted before many rows went, the rows after
        return store_mod.TermStats(st.rows, st.avg_len, st.terms, {**st.df, "data": st.rows + 50})

    monkeypatch.setattr(store, "term_stats", after_a_deletion)
    got = store.keyword_search('"zebra" OR "data"', Filters(), 64)
    assert len(got) >= 64
    assert bm25.bm25_idf(100, 300) == 1e-6
