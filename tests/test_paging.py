"""Cursor pages of one query neither repeat nor skip a hit, whatever the search type.

A fused (hybrid) ranking depends on how deep each branch is read, and later pages need
deeper reads; the cursor records the depth of each page's ranking so the hits already
shown are replayed from exactly those rankings (ov.engine.search)."""

from __future__ import annotations

import random

import pytest

VOCAB = ("parse read write socket thread pool future date format string compare sequence "
         "difference archive zip file path json encode decode number error retry cache lock "
         "queue buffer stream token chunk index search rank score vector model").split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """150 files of varied text, many chunks each, indexed with the test embedder."""
    import os

    from tests.conftest import make_tree, run_inprocess

    rnd = random.Random(11)
    files = {}
    for i in range(150):
        paras = []
        for _ in range(rnd.randint(1, 12)):
            paras.append(" ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(5, 60))))
        files[f"d{i % 7}/f{i:03d}.{'py' if i % 3 == 0 else 'md'}"] = "\n\n".join(paras) + "\n"
    root = make_tree(tmp_path_factory.mktemp("paging") / "tree", files)
    old = os.environ.get("OV_EMBEDDER")
    os.environ["OV_EMBEDDER"] = "hash"
    try:
        assert run_inprocess("index", root).code == 0
    finally:
        if old is None:
            os.environ.pop("OV_EMBEDDER")
        else:
            os.environ["OV_EMBEDDER"] = old
    return root, sorted(files)


def _pages(ov, root, args, n):
    seen, cursor, pages = [], None, 0
    while True:
        r = ov("search", *args, "-o", "json", "-n", str(n), *(["--cursor", cursor] if cursor else []),
               cwd=root)
        assert r.code in (0, 1), r.out + r.err
        res = r.json["result"]
        ranks = [h["rank"] for h in res["hits"]]
        assert ranks == list(range(len(seen) + 1, len(seen) + 1 + len(ranks)))
        seen += [h["path"] for h in res["hits"]]
        cursor = res.get("next_cursor")  # left out on the last page
        pages += 1
        if not cursor:
            return seen, pages
        assert pages < 200


QUERIES = ["read a zip archive file", "thread pool future", "format date string",
           "compare sequence difference", "json encode error", "socket buffer stream retry"]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("n", [3, 10])
def test_hybrid_pages_cover_every_file_once(ov, corpus, query, n):
    root, files = corpus
    seen, pages = _pages(ov, root, [query], n)
    assert pages > 3
    assert len(seen) == len(set(seen)), "a hit was repeated"
    # every file has vectors, so the semantic branch reaches every file: none is skipped
    assert sorted(seen) == files


@pytest.mark.parametrize("search_type", ["keywords", "semantic"])
def test_single_branch_pages_equal_one_long_page(ov, corpus, search_type):
    root, _ = corpus
    for query in QUERIES[:3]:
        seen, _ = _pages(ov, root, [query, "--search-type", search_type], 7)
        assert len(seen) == len(set(seen))
        r = ov("search", query, "--search-type", search_type, "-o", "json", "-n", "50", cwd=root)
        first = [h["path"] for h in r.json["result"]["hits"]]
        assert seen[: len(first)] == first


@pytest.mark.parametrize("query", QUERIES[:4])
def test_a_hits_score_does_not_depend_on_the_page_size(ov, corpus, query):
    """A first page of any -n reads the branches equally deep (engine.FIRST_DEPTH): a file
    scores the same at -n 7 as at -n 49, and pages chained by --cursor are one ranking in
    score order."""
    root, _ = corpus

    def hits(n, cursor=None):
        r = ov("search", query, "-o", "json", "-n", str(n), *(["--cursor", cursor] if cursor else []),
               cwd=root)
        res = r.json["result"]
        return [(h["path"], h["score"]) for h in res["hits"]], res.get("next_cursor")

    long, _ = hits(49)
    chained, cursor = hits(7)
    while cursor and len(chained) < 49:
        more, cursor = hits(7, cursor)
        chained += more
    assert chained[:49] == long
    assert [s for _, s in long] == sorted((s for _, s in long), reverse=True)
    for n in (1, 3, 10, 25):
        assert hits(n)[0] == long[:n], n


def test_a_cursor_beyond_its_bounds_is_refused(ov, corpus):
    import base64
    import json

    root, _ = corpus
    r = ov("search", "thread pool", "-o", "json", "-n", "5", cwd=root)
    cur = r.json["result"]["next_cursor"]
    data = json.loads(base64.urlsafe_b64decode(cur + "=" * (-len(cur) % 4)))
    for segs in ([[999999, 5]], [[64, -1]], [[64, 5]] * 9, [], [[64, 10**7]]):
        bad = base64.urlsafe_b64encode(json.dumps({**data, "s": segs}).encode()).decode().rstrip("=")
        r = ov("search", "thread pool", "-o", "json", "-n", "5", "--cursor", bad, cwd=root)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_argument", segs


@pytest.mark.parametrize("search_type", ["keywords", "hybrid"])
def test_pages_stay_whole_when_most_candidates_fail_the_recheck(ov, tree, search_type):
    """150 strong matches deleted after indexing rank above the 30 files that remain: a
    page must look past all of them, and every page past the same ones."""
    files = {f"gone/g{i:03d}.txt": "zebra " * 20 + f"gone {i}\n" for i in range(150)}
    files |= {f"kept/k{i:03d}.txt": f"zebra and some other words {i}\n" for i in range(30)}
    files |= {f"other/o{i:03d}.txt": f"nothing to see {i}\n" for i in range(20)}
    root = tree(files)
    assert ov("index", root).code == 0
    for i in range(150):
        (root / f"gone/g{i:03d}.txt").unlink()
    seen, _ = _pages(ov, root, ["zebra", "--search-type", search_type], 3)
    assert len(seen) == len(set(seen)), "a hit was repeated"
    kept = [p for p in seen if p.startswith("kept/")]
    assert sorted(kept) == sorted(p for p in files if p.startswith("kept/"))
    assert not any(p.startswith("gone/") for p in seen)


def test_a_later_page_ranks_each_depth_once(ov, corpus, monkeypatch):
    """Page 2 replays page 1's depth and then reads on at that same depth: the branches
    are read once for it, not once for the replay and again for the page."""
    from ov import engine

    root, _ = corpus
    r = ov("search", "thread pool", "-o", "json", "-n", "3", cwd=root)
    depths: list[int] = []
    real = engine._branches
    monkeypatch.setattr(engine, "_branches", lambda *a: depths.append(a[5]) or real(*a))
    r2 = ov("search", "thread pool", "-o", "json", "-n", "3", "--cursor",
            r.json["result"]["next_cursor"], cwd=root)
    assert r2.code == 0 and r2.json["result"]["hits"]
    assert depths == [engine.FIRST_DEPTH]


def test_all_chunks_pages_over_every_level_equal_one_long_page(ov, corpus):
    """A file's abstract and overview rows have no span of their own (both 0-0): pages
    told them apart by path and span only, so one of them counted as shown already and the
    pages ran out after a few hits."""
    root, _ = corpus
    # overviews (level 1) have keyword rows only, no vectors: semantic hits are levels 0 and 2
    args = ["thread pool future", "--search-type", "semantic", "--level", "0,1,2", "--all-chunks"]

    def entry(h):
        return h["path"], h["level"], h["excerpt"]["start"], h["excerpt"]["end"]

    one = [entry(h) for h in ov("search", *args, "-o", "json", "-n", "50", cwd=root).json["result"]["hits"]]
    assert len(one) == 50 and {e[1] for e in one} == {0, 2}
    seen, cursor = [], None
    while len(seen) < 50:
        r = ov("search", *args, "-o", "json", "-n", "3", *(["--cursor", cursor] if cursor else []), cwd=root)
        assert r.code == 0, r.out + r.err
        seen += [entry(h) for h in r.json["result"]["hits"]]
        cursor = r.json["result"].get("next_cursor")
        assert cursor, f"the pages ran out after {len(seen)} hits"
    assert seen[:50] == one


def test_a_file_deleted_between_pages_skips_no_other_hit(tmp_path):
    """Page 2 of a cursor replays page 1 to know what it showed. Rechecked against the
    files now, a file deleted (or changed) between the pages dropped out of the replay, so
    the replay took one more hit as shown and page 2 never showed it."""
    from conftest import make_tree, run_inprocess

    files = {f"f{i}.txt": "kiwi " * (10 - i) + f"\nfiller {i}\n" for i in range(1, 7)}
    root = make_tree(tmp_path / "t", files)
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0

    def page(cursor=None):
        args = ["search", "kiwi", "--search-type", "keywords", "-n", "2", "-o", "json"]
        r = run_inprocess(*args, *(["--cursor", cursor] if cursor else []), cwd=root, env=env)
        res = r.json["result"]
        return [h["path"] for h in res["hits"]], [h["rank"] for h in res["hits"]], res.get("next_cursor")

    first, _, cursor = page()
    assert first == ["f1.txt", "f2.txt"]
    (root / "f2.txt").unlink()  # shown on page 1, gone before page 2
    second, ranks, cursor = page(cursor)
    assert second == ["f3.txt", "f4.txt"] and ranks == [3, 4]
    (root / "f5.txt").unlink()  # not shown yet: dropped from page 3, as it is gone
    third, _, _ = page(cursor)
    assert third == ["f6.txt"]


@pytest.mark.parametrize("search_type", ["keywords", "semantic"])
def test_all_chunks_pages_over_a_changed_file_show_each_passage_once(tmp_path, search_type):
    """With --all-chunks a hit is its chunk, and pages knew it by the span shown: a file
    changed since `ov index` shows its passage at new offsets, while the replay of earlier
    pages reads the index's, so that passage came back on every page and other files'
    never came (a review's paging checks). Edited before the first page, and between pages."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {f"f{i}.txt": f"header {i}\nzebra quokka line {i}\ntrailer\n" for i in range(6)})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    (root / "f0.txt").write_text("new first\nnew second\n" + (root / "f0.txt").read_text())

    def pages(edit_between: bool) -> list[str]:
        seen, cursor = [], None
        for i in range(12):
            args = ["search", "zebra quokka", "--search-type", search_type, "--all-chunks", "-n", "1", "-o", "json"]
            r = run_inprocess(*args, *(["--cursor", cursor] if cursor else []), cwd=root, env=env)
            assert r.code == 0, r.out + r.err
            seen += [h["path"] for h in r.json["result"]["hits"]]
            cursor = r.json["result"].get("next_cursor")
            if not cursor:
                return seen
            if edit_between and i == 1:
                (root / "f1.txt").write_text("moved\n" + (root / "f1.txt").read_text())
        raise AssertionError(f"no end after 12 pages: {seen}")

    assert sorted(pages(False)) == [f"f{i}.txt" for i in range(6)]
    assert sorted(pages(True)) == [f"f{i}.txt" for i in range(6)]


@pytest.mark.parametrize("search_type", ["keywords", "hybrid"])
def test_a_word_repeated_through_a_big_file_hides_no_other_file(ov, tree, search_type):
    """A log repeating a word in thousands of passages, each scoring alike: the search
    answered nothing at all (every row tied the cut, and only rows above it counted), and
    read deeper, the log's passages still filled every row read before the other files."""
    root = tree({"big.log": "unicorn rainbow line\n" * 300_000,  # ~7,700 passages, one score
                 "a.txt": "a small unicorn file\n", "b/c.md": "# notes\n\nthe unicorn again\n",
                 "other.txt": "nothing to see\n"})
    assert ov("index", root, "--no-embed", "--max-filesize", "10M").code == 0
    r = ov("search", "unicorn", "--search-type", search_type, "-o", "json", cwd=root)
    assert r.code == 0
    res = r.json["result"]
    assert sorted(h["path"] for h in res["hits"]) == ["a.txt", "b/c.md", "big.log"]
    assert not any("not listed" in w for w in res["warnings"])


def test_a_cursor_made_before_vectors_were_added_is_refused(ov, tree):
    """Vectors change every hybrid ranking: a cursor of the keywords-alone ranking led a
    next page past the best hits of the new one (a first search's background worker
    adds them while a user pages)."""
    from ov.indexer import IndexOptions, index_tree

    root = tree({f"f{i:02d}.md": f"# Note {i}\n\nzebra notes number {i} about stripes\n" for i in range(12)})
    # every keyword row now, the vectors later: what a first search leaves to its worker
    index_tree(root, opts=IndexOptions(embed=False, embed_later=True))
    r = ov("search", "zebra", "-o", "json", "-n", "3", cwd=root)
    cur = r.json["result"]["next_cursor"]
    assert cur and "no vectors" in " ".join(r.json["result"]["warnings"])
    kw = ov("search", "zebra", "--search-type", "keywords", "-o", "json", "-n", "3", cwd=root)
    kw_cur = kw.json["result"]["next_cursor"]
    assert ov("index", root).code == 0  # the vectors come
    r = ov("search", "zebra", "-o", "json", "-n", "3", "--cursor", cur, cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    assert "vectors were added since this cursor" in r.json["error"]["message"]
    # a keywords-only ranking reads no vector: its cursor still pages on
    r = ov("search", "zebra", "--search-type", "keywords", "-o", "json", "-n", "3", "--cursor", kw_cur, cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["rank"] == 4


def test_a_threshold_that_ends_the_page_is_no_cut(ov, tree):
    """Rows deeper than the read score lower still: the page a --threshold ends says
    nothing of files lying deeper."""
    root = tree({"big.log": "unicorn rainbow line\n" * 300_000, "a.txt": "a small unicorn file\n"})
    assert ov("index", root, "--no-embed", "--max-filesize", "10M").code == 0
    r = ov("search", "unicorn", "--search-type", "keywords", "--threshold", "0.5", "-o", "json", cwd=root)
    assert not any("not listed" in w for w in r.json["result"]["warnings"])


def test_a_cursor_outlived_by_new_vectors_says_so():
    """While the worker adds vectors (hours on a big tree), every hybrid cursor failed with
    "the index changed since this cursor was made", though the user changed nothing (two
    reviews). A cursor whose files are as they were, but not its vectors, says that."""
    from ov.errors import OvError
    from ov.query import decode_cursor, encode_cursor

    cur = encode_cursor("1a/2b", "key", [(256, 10, "x", 10)])
    assert decode_cursor(cur, "1a/2b", "key") == [(256, 10, "x", 10)]
    with pytest.raises(OvError) as e:
        decode_cursor(cur, "1a/3c", "key")
    assert "vectors were added" in str(e.value) and "--search-type keywords" in str(e.value)
    with pytest.raises(OvError) as e:
        decode_cursor(cur, "1f/2b", "key")
    assert "the index changed since this cursor was made" in str(e.value)


@pytest.mark.parametrize("query", QUERIES)
def test_a_first_page_holds_no_file_a_deeper_read_outscores(ov, corpus, monkeypatch, query):
    """A hybrid ranking read at one depth shows only what scores at least the most a file
    neither branch read could (`rank.fused_bound`): a first page read so shallow that few
    files are in it reads deeper rather than end on a hit a deeper read outscores. With no
    such bound, a first page of 20 had ended on a hit at 0.0016 where a file read only at
    the next depth scored 0.0052, and the next page's scores rose."""
    from ov import engine

    root, _ = corpus
    monkeypatch.setattr(engine, "FIRST_DEPTH", 8)  # a few files' passages: most are past it

    def hits(n, cursor=None):
        r = ov("search", query, "-o", "json", "-n", str(n), *(["--cursor", cursor] if cursor else []),
               cwd=root)
        res = r.json["result"]
        return [(h["path"], h["score"]) for h in res["hits"]], res.get("next_cursor")

    monkeypatch.setattr(engine, "FIRST_DEPTH", 4096)
    whole, _ = hits(30)
    monkeypatch.setattr(engine, "FIRST_DEPTH", 8)
    for n in (3, 10):
        got, cursor = hits(n)
        assert [p for p, _ in got] == [p for p, _ in whole[:n]], n
    chained, cursor = hits(3)
    while cursor and len(chained) < 30:
        more, cursor = hits(3, cursor)
        chained += more
    scores = [s for _, s in chained]
    assert scores == sorted(scores, reverse=True)



@pytest.mark.model
def test_real_model_hybrid_pages_come_in_score_order(ov, tree, monkeypatch):
    """The same with the real model on files of varied text: a first page read shallow
    reads deeper rather than end on a hit a file it has not read outscores, and pages
    chained by --cursor come in score order (a review had page 3 start at 0.0052 after
    page 2 ended at 0.0016)."""
    from ov import engine

    rnd = random.Random(5)
    files = {}
    for i in range(40):
        words = [rnd.choice(VOCAB) for _ in range(rnd.randint(20, 120))]
        files[f"d{i % 4}/f{i:02d}.{'py' if i % 2 else 'md'}"] = "\n\n".join(
            " ".join(words[j:j + 12]) for j in range(0, len(words), 12)) + "\n"
    root = tree(files)
    assert ov("index", root).code == 0
    for query in ("thread lock", "read a zip archive"):
        monkeypatch.setattr(engine, "FIRST_DEPTH", 4096)
        r = ov("search", query, "-o", "json", "-n", "30", cwd=root)
        whole = [h["path"] for h in r.json["result"]["hits"]]
        monkeypatch.setattr(engine, "FIRST_DEPTH", 8)
        got, cursor, pages = [], None, 0
        while len(got) < 30 and pages < 20:
            r = ov("search", query, "-o", "json", "-n", "4", *(["--cursor", cursor] if cursor else []), cwd=root)
            got += [(h["path"], h["score"]) for h in r.json["result"]["hits"]]
            cursor, pages = r.json["result"].get("next_cursor"), pages + 1
            if not cursor:
                break
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True), query
        assert [p for p, _ in got][:4] == whole[:4], query
