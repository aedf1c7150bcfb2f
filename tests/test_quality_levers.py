"""The file's abstract as semantic evidence (ov.rank.with_abstracts, issue 6): its cosine
counts at ABSTRACT_SHARE for the file's first passage, once per chunk, in `find` and
`search`, consistently across pages."""

from __future__ import annotations

import random

import pytest

from ov import rank
from ov.rank import Cand
from ov.store import Store

TITLE = "Quantum lattice refrigeration"
FILLER = ("harbour ledger violin meadow copper lantern orchard basalt tundra saffron glacier "
          "mosaic quarry falcon velvet canyon").split()


def _body(seed: int, words: int) -> str:
    rnd = random.Random(seed)
    return " ".join(rnd.choice(FILLER) for _ in range(words))


def sem(cid: int, path: str, distance: float, via: str | None = None) -> Cand:
    c = Cand(cid, path, rank.semantic_score(distance, path, rank.Tree(files=3)), {"semantic": {"raw": distance}})
    if via:
        c.branches["semantic"]["via"] = via
    return c


def test_abstract_distance_is_the_cosine_at_its_share():
    assert rank.abstract_distance(0.0) == pytest.approx(1.0 - rank.ABSTRACT_SHARE)
    assert rank.abstract_distance(0.4) == pytest.approx(1.0 - rank.ABSTRACT_SHARE * 0.6)
    # a discount: an abstract never counts closer than the same cosine on a passage
    assert all(rank.abstract_distance(d) >= d - 1e-12 for d in (0.0, 0.2, 0.5, 0.9))


def test_with_abstracts_keeps_one_entry_per_chunk_the_closer_one():
    passages = [sem(1, "a.txt", 0.30), sem(2, "a.txt", 0.50), sem(7, "b.txt", 0.40)]
    abstracts = [sem(1, "a.txt", 0.35, "abstract"), sem(7, "b.txt", 0.20, "abstract"),
                 sem(9, "c.txt", 0.60, "abstract")]
    out = rank.with_abstracts(passages, abstracts)
    assert [(c.chunk_id, c.branches["semantic"]["raw"]) for c in out] == [
        (7, 0.20), (1, 0.30), (2, 0.50), (9, 0.60)]
    assert out[0].branches["semantic"].get("via") == "abstract"
    assert "via" not in out[1].branches["semantic"]  # its own passage was closer
    # a chunk met twice would otherwise be summed by the per-chunk fusion of --all-chunks
    assert len({c.chunk_id for c in out}) == len(out)


@pytest.fixture
def titled(tree, ov):
    """A paper whose title is the query but whose long body is not, and a note that only
    shares a word of it."""
    root = tree({
        "paper.txt": f"{TITLE}\n\n{_body(1, 120)}\n\n{_body(2, 160)}\n\n{_body(3, 160)}\n",
        "note.txt": f"Field notes\n\nrefrigeration {_body(4, 40)}\n",
        "other.txt": f"Garden plans\n\n{_body(5, 80)}\n",
    })
    assert ov("index", root).code == 0
    return root


def test_first_passages_maps_a_tier_row_to_its_files_first_chunk(titled):
    with Store.open(titled / ".ov" / "index.db", readonly=True) as st:
        tiers = st.rows("SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id "
                        "WHERE c.level = 0 ORDER BY f.path")
        firsts = st.first_passages([tid for tid, _ in tiers])
        got = {path: st.rows("SELECT level, seq, start FROM chunks WHERE id = ?", (firsts[tid],))[0]
               for tid, path in tiers}
        assert st.first_passages([]) == {}
    assert set(got) == {"note.txt", "other.txt", "paper.txt"}
    assert all(v == (2, 0, 0) for v in got.values())


@pytest.mark.parametrize("command", [["find"], ["search"]])
def test_a_file_whose_abstract_is_the_query_ranks_first_by_it(titled, ov, command):
    r = ov(*command, TITLE.lower(), "-o", "json", "--explain", "-n", "3", cwd=titled)
    assert r.code == 0, r.out + r.err
    top = r.json["result"]["hits"][0]
    assert top["path"] == "paper.txt"
    sem_ev = top["scores"]["semantic"]
    # the hash embedder gives the abstract (the title paragraph) the query's own vector
    assert sem_ev["via"] == "abstract"
    assert sem_ev["raw"] == pytest.approx(1.0 - rank.ABSTRACT_SHARE, abs=1e-5)
    # shown as the file's first passage, not as a tier row
    assert top["level"] == 2 and top["start_line"] == 1 and TITLE in top["excerpt"]["text"]
    if command == ["find"]:  # the probability of the abstract's discounted cosine
        assert top["score"] == pytest.approx(rank.semantic_score(1.0 - rank.ABSTRACT_SHARE, "paper.txt", rank.Tree(files=3)), abs=1e-5)


def test_all_chunks_counts_a_chunk_once(titled, ov):
    r = ov("search", TITLE.lower(), "-o", "json", "--explain", "--all-chunks", "-n", "20", cwd=titled)
    assert r.code == 0, r.out + r.err
    hits = r.json["result"]["hits"]
    spans = [(h["path"], h["excerpt"]["start"]) for h in hits]
    assert len(spans) == len(set(spans))
    assert all(0.0 <= h["score"] <= 1.0 for h in hits)
    assert hits[0]["path"] == "paper.txt" and hits[0]["start_line"] == 1


def test_tier_searches_are_unchanged(titled, ov):
    """--level 0 ranks the abstracts themselves, at their own cosine (no share)."""
    r = ov("find", TITLE.lower(), "-o", "json", "--explain", "--level", "0", cwd=titled)
    assert r.code == 0, r.out + r.err
    top = r.json["result"]["hits"][0]
    assert top["path"] == "paper.txt" and top["level"] == 0
    assert top["score"] == pytest.approx(rank.semantic_score(0.0, "paper.txt", rank.Tree(files=3)), abs=1e-5)
    assert "via" not in top["scores"]["semantic"] and top["scores"]["semantic"]["raw"] == pytest.approx(0.0, abs=1e-5)


VOCAB = ("parse read write socket thread pool future date format string compare sequence "
         "difference archive zip file path json encode decode number error retry cache lock").split()


@pytest.fixture
def titled_corpus(tree, ov):
    rnd = random.Random(6)
    files = {}
    for i in range(60):
        title = " ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(2, 6)))
        paras = [" ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(20, 80)))
                 for _ in range(rnd.randint(1, 6))]
        files[f"d{i % 4}/f{i:02d}.txt"] = title + "\n\n" + "\n\n".join(paras) + "\n"
    root = tree(files)
    assert ov("index", root).code == 0
    return root, sorted(files)


def _pages(ov, root, args: list[str], n: int) -> list[str]:
    seen, cursor = [], None
    for _ in range(100):
        r = ov("search", *args, "-o", "json", "-n", str(n), *(["--cursor", cursor] if cursor else []),
               cwd=root)
        assert r.code in (0, 1), r.out + r.err
        seen += [h["path"] for h in r.json["result"]["hits"]]
        cursor = r.json["result"].get("next_cursor")
        if not cursor:
            return seen
    raise AssertionError("no last page")


QUERY = "json cache lock retry"


def test_semantic_pages_equal_one_long_page(titled_corpus, ov):
    """The abstracts are read as deep as the passages and cut where either read ends, so
    a page read shallow ranks its files as a long page does."""
    root, files = titled_corpus
    one = ov("search", QUERY, "--search-type", "semantic", "-o", "json", "-n", "50", "--explain",
             cwd=root).json["result"]["hits"]
    assert any(h["scores"]["semantic"].get("via") == "abstract" for h in one)
    seen = _pages(ov, root, [QUERY, "--search-type", "semantic"], 7)
    assert seen[:len(one)] == [h["path"] for h in one]
    assert sorted(seen) == files


def test_hybrid_pages_cover_every_file_once(titled_corpus, ov):
    root, files = titled_corpus
    seen = _pages(ov, root, [QUERY], 7)
    assert len(seen) == len(set(seen)), "a hit was repeated"
    assert sorted(seen) == files


@pytest.mark.model
def test_real_model_a_paper_found_by_its_title(tree, ov):
    """With the real model, a claim phrased as a paper's title finds that paper through its
    abstract, and the hit shows the paper's first passage."""
    body = ("We enrolled participants from twelve clinics across three regions and followed "
            "them for a median of four years. Baseline questionnaires recorded diet, smoking, "
            "physical activity and medication use; blood samples were stored at minus eighty "
            "degrees until assay. Statistical models adjusted for age, sex, body mass index "
            "and season of sampling. ") * 4
    root = tree({
        "vitd.txt": "Vitamin D supplementation and fracture risk in older adults\n\n" + body,
        "sleep.txt": "Sleep duration and working memory in adolescents\n\n" + body,
        "soil.txt": "Nitrogen cycling in temperate forest soils\n\n" + body,
    })
    assert ov("index", root).code == 0
    r = ov("find", "vitamin D supplementation and fracture risk in older adults", "-o", "json",
           "--explain", "-n", "3", cwd=root)
    assert r.code == 0, r.out + r.err
    top = r.json["result"]["hits"][0]
    assert top["path"] == "vitd.txt"
    assert top["scores"]["semantic"].get("via") == "abstract"
    assert top["level"] == 2 and top["start_line"] == 1
