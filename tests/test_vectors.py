"""The vectors a warm index holds in memory (ov.store.vectors) answer exactly as sqlite-vec does:
the same ids in the same order with the same distances, under every filter, and again
after the index changes under them."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import ov as lib
from ov.store import Filters, Store

WORDS = ("parse read write file tree chunk split index vector query token search walk folder "
         "config cache thread lock queue socket stream buffer format date json yaml").split()


def _files(n: int = 40) -> dict[str, str]:
    rng = np.random.default_rng(7)
    out = {}
    for i in range(n):
        ext = ("py", "md", "txt")[i % 3]
        paras = ["\n".join(" ".join(rng.choice(WORDS, 8)) for _ in range(4)) for _ in range(6)]
        out[f"{('src', 'docs', 'notes')[i % 3]}/f{i:02d}.{ext}"] = "\n\n".join(paras) + "\n"
    same = "shared text of several files\n\nthe same passage again, word for word\n"
    for i in range(4):  # identical texts: identical vectors, so exact ties to order by id
        out[f"dup/d{i}.txt"] = same
    out[".gitignore"] = ""
    return out


@pytest.fixture
def indexed(tree, ov):
    root = tree(_files())
    assert ov("index", cwd=root).code == 0
    return root


def _queries(n: int = 4) -> list[bytes]:
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n):
        q = rng.standard_normal(384).astype(np.float32)
        out.append((q / np.linalg.norm(q)).tobytes())
    from ov.embed import load_embedder  # a query that lands on the duplicates

    out.append(load_embedder("query").embed(["shared text of several files"])[0].astype("float32").tobytes())
    return out


def _filters(root) -> list[Filters]:
    with Store.open(root / ".ov" / "index.db", readonly=True) as s:
        times = sorted(t for (t,) in s.rows("SELECT updated_at FROM files"))
    mid = times[len(times) // 2]
    return [Filters(), Filters(levels=(0,)), Filters(levels=(0, 2)), Filters(levels=()),
            Filters(uris=("src",)), Filters(exclude_uris=("docs", "dup")),
            Filters(ftypes=("markdown",)), Filters(ftypes=("python", "text")),
            Filters(after=mid), Filters(before=mid, time_field="created_at"),
            Filters(uris=("src/f00.py",), vectorless=False), Filters(tags=(("k", "v"),))]


def _warm(root):
    ix = lib.Index.open(root)
    ix.keep_vectors()
    return ix


@pytest.mark.parametrize("bulk", [True, False])
def test_the_matrix_gives_the_sql_paths_rows(indexed, monkeypatch, bulk):
    from ov.store import vectors

    # read from sqlite-vec's blocks at once, or row by row (what a refresh reads)
    monkeypatch.setattr(vectors, "BULK", 0 if bulk else 10**9)
    plain = Store.open(indexed / ".ov" / "index.db", readonly=True)
    with _warm(indexed) as ix:
        held = ix.store._vectors
        if bulk:
            assert held._read_blocks(ix.store, held.ids) is not None  # the layout was understood
        assert held.rows == plain.q1("SELECT count(*) FROM chunks WHERE embedded = 1") > 100
        some = 0
        for q in _queries():
            for f in _filters(indexed):
                for k in (1, 5, 64, 5000):
                    mem = ix.store.vector_search(q, f, k)
                    assert mem == plain.vector_search(q, f, k), (f, k)
                    some += bool(mem)
            ids = [r[0] for r in plain.rows("SELECT id FROM chunks ORDER BY id")][::7]
            assert sorted(ix.store.file_vector_distances(q, ids)) == sorted(plain.file_vector_distances(q, ids))
        assert some > 150
    plain.close()


def test_ties_are_ordered_as_sqlite_vec_orders_them(indexed):
    q = _queries()[-1]
    with _warm(indexed) as ix, Store.open(indexed / ".ov" / "index.db", readonly=True) as plain:
        mem = ix.store.vector_search(q, Filters(), 3)
        assert mem == plain.vector_search(q, Filters(), 3)
        # the four identical files tie: all of them, by id, though 3 were asked for
        assert len(mem) >= 4 and len({d for _, d in mem[:4]}) == 1
        assert [cid for cid, _ in mem[:4]] == sorted(cid for cid, _ in mem[:4])


def test_search_results_are_the_same_with_and_without_the_matrix(indexed):
    with lib.Index.open(indexed) as cold, _warm(indexed) as warm:
        for query in ("parse a json file", "thread lock queue", "shared text of several files"):
            for opts in ({"search_type": "semantic"}, {"search_type": "hybrid"},
                         {"search_type": "hybrid", "uri": ["src"]}, {"search_type": "semantic", "level": "0,2"},
                         {"search_type": "hybrid", "all_chunks": True, "limit": 20},
                         {"search_type": "semantic", "types": ["md"], "explain": True}):
                a, b = cold.search(query, **opts), warm.search(query, **opts)
                assert [(h.path, h.start_line, h.level, h.score, h.scores) for h in a.hits] == \
                       [(h.path, h.start_line, h.level, h.score, h.scores) for h in b.hits], (query, opts)
                assert a.next_cursor == b.next_cursor
                if a.next_cursor:
                    pa = cold.search(query, cursor=a.next_cursor, **opts)
                    pb = warm.search(query, cursor=b.next_cursor, **opts)
                    assert [(h.path, h.score) for h in pa.hits] == [(h.path, h.score) for h in pb.hits]


def test_the_matrix_follows_the_index(indexed, ov):
    q = _queries()[0]
    with _warm(indexed) as ix:
        held = ix.store._vectors
        first = held.reads
        ix.store.vector_search(q, Filters(), 10)
        assert held.reads == first  # nothing changed: nothing read again
        time.sleep(0.01)
        (indexed / "src" / "f00.py").write_text("a new text about sockets and streams\n\nand buffers\n")
        os.remove(indexed / "docs" / "f01.md")
        (indexed / "notes" / "new.txt").write_text("a file that was not there before, on yaml config\n")
        assert ov("index", cwd=indexed).code == 0  # another connection commits
        with Store.open(indexed / ".ov" / "index.db", readonly=True) as plain:
            for f in _filters(indexed):
                assert ix.store.vector_search(q, f, 50) == plain.vector_search(q, f, 50), f
            assert held.rows == plain.q1("SELECT count(*) FROM chunks WHERE embedded = 1")
            changed = plain.q1("SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                               "WHERE f.path IN ('src/f00.py', 'notes/new.txt') AND c.embedded = 1")
        assert held.reads - first == changed  # the changed files' rows only
        hits = ix.search("sockets and streams", search_type="semantic").hits
        assert hits[0].path == "src/f00.py"
        # a commit that changes no vector (a tag) costs the next query no reading, and
        # the queries after it no refresh at all
        before = held.reads
        assert ov("tag", "src/f03.py", "k=v", cwd=indexed).code == 0
        refreshes = []
        refresh = held.refresh
        held.refresh = lambda store: refreshes.append(1) or refresh(store)
        with Store.open(indexed / ".ov" / "index.db", readonly=True) as plain:
            f = Filters(tags=(("k", "v"),))
            for _ in range(3):
                assert ix.store.vector_search(q, f, 50) == plain.vector_search(q, f, 50) != []
                ix.search("sockets and streams", search_type="hybrid")
        assert held.reads == before and refreshes == [1]


def test_a_write_of_its_own_is_followed_too(indexed):
    q = _queries()[0]
    with _warm(indexed) as ix:
        with ix.store.tx():
            # inside its own transaction the SQL path answers (the matrix lacks those rows)
            ix.store.conn.execute("DELETE FROM chunks_vec WHERE chunk_id = (SELECT min(id) FROM chunks "
                                  "WHERE embedded = 1)")
            ix.store.conn.execute("UPDATE chunks SET embedded = 0 WHERE id = (SELECT min(id) FROM chunks "
                                  "WHERE embedded = 1)")
            inside = ix.store.vector_search(q, Filters(levels=()), 5000)
        after = ix.store.vector_search(q, Filters(levels=()), 5000)
        assert after == inside
        assert ix.store._vectors.rows == len(after)


def test_a_cold_index_holds_no_matrix(indexed, ov_proc):
    from conftest import imported_by

    with lib.Index.open(indexed) as ix:
        ix.search("parse a json file")
        assert ix.store._vectors is None
    res, modules = imported_by(["search", "parse a json file"], indexed)
    assert res.code == 0 and "ov.store.vectors" not in modules


def test_each_query_computes_its_own_product(indexed):
    with _warm(indexed) as ix:
        held = ix.store._vectors
        for n in (1, 2):  # a hybrid asks for the vector up to three times: one product each query
            ix.search("parse a json file", search_type="hybrid")
            assert held.products == n
