"""Scores and hybrid fusion (ov.rank, issues 14 and 19): every score is a probability of
relevance from the branches' own raw evidence, on one scale for `find`, `search` and every
query; a file's score does not depend on the other files or on how deep a branch was read;
`--threshold` cuts on it; pages through the CLI agree with one long page."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from ov import rank
from ov.rank import Cand

from conftest import make_tree


# an index the size of SciFact's (5,183 files, 26,914 keyword rows), a one-word query
TREE = rank.Tree(files=5000, rows=25000, terms=1)


def kw(path: str, bm25: float, cid: int) -> Cand:
    return Cand(cid, path, rank.keyword_score(bm25, path, TREE), {"keywords": {"raw": bm25}})


def sem(path: str, cos: float, cid: int) -> Cand:
    return Cand(cid, path, rank.semantic_score(1.0 - cos, path, TREE), {"semantic": {"raw": 1.0 - cos}})


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def lists(kws: list[tuple[str, float]], sems: list[tuple[str, float]]) -> dict[str, list[Cand]]:
    k = rank.sort_cands(kw(p, s, i) for i, (p, s) in enumerate(kws))
    s = rank.sort_cands(sem(p, c, 1000 + i) for i, (p, c) in enumerate(sems))
    return {"keywords": k, "semantic": s}


def expected(path: str, bm25: float | None, cos: float | None) -> float:
    """The documented formula, computed apart from ov.rank.fuse."""
    sc = rank.CODE if path.endswith(".py") else rank.PROSE
    z = 0.0
    if bm25 is not None and sc.k_bm25 is not None:
        z += (1 - sc.w_sem) * bm25 / (bm25 + sc.k_bm25)
    elif bm25 is not None:  # code: the keywords scale's probability in a tree of 5,000 files
        a, b, c = sc.keywords
        z += (1 - sc.w_sem) * sigmoid(a * TREE.keyword_share(bm25) + b + c * math.log(5000))
    if cos is not None:
        z += sc.w_sem * max(0.0, cos)
    a, b, c = sc.hybrid
    p = sigmoid(a * z + b + c * math.log(TREE.files))
    if cos is not None:  # what `find` judges more likely relevant than not stays so
        a, b, c = sc.find
        pf = sigmoid(a * cos + b + c * math.log(TREE.files))
        p = max(p, pf) if pf >= 0.5 else p
    if bm25 is not None:  # and what keywords alone judge very likely relevant
        a, b, c = sc.keywords
        pk = sigmoid(a * TREE.keyword_share(bm25) + b + c * math.log(TREE.files))
        p = max(p, pk) if pk >= 0.8 else p
    return p


def test_a_score_is_the_probability_of_the_files_own_evidence():
    out = rank.fuse(lists([("a.txt", 30.0), ("b.txt", 10.0), ("c.txt", 2.0)],
                          [("a.txt", 0.7), ("c.txt", 0.6), ("d.txt", 0.1)]), TREE)
    by = {c.path: c.score for c in out}
    assert by == pytest.approx({"a.txt": expected("a.txt", 30.0, 0.7), "b.txt": expected("b.txt", 10.0, None),
                                "c.txt": expected("c.txt", 2.0, 0.6), "d.txt": expected("d.txt", None, 0.1)})
    assert all(0.0 < c.score < 1.0 for c in out)
    assert [c.path for c in out] == ["a.txt", "c.txt", "b.txt", "d.txt"]
    assert out[0].branches["keywords"]["rank"] == 1 and out[0].branches["semantic"]["rank"] == 1


def test_a_files_score_does_not_depend_on_the_other_files():
    alone = rank.fuse(lists([("a.txt", 12.0)], [("a.txt", 0.5)]), TREE)
    crowd = rank.fuse(lists([("top.txt", 60.0), ("a.txt", 12.0)], [("top.txt", 0.95), ("a.txt", 0.5)]), TREE)
    assert alone[0].score == pytest.approx({c.path: c.score for c in crowd}["a.txt"])
    # the first hit of a query scores what its evidence says, not 1
    weak = rank.fuse(lists([], [("x.txt", 0.12), ("y.txt", 0.05)]), TREE)
    assert weak[0].path == "x.txt" and weak[0].score < 0.05


@pytest.mark.parametrize("path", ["notes.md", "src/app.py"])
def test_weak_evidence_scores_low_and_strong_evidence_high(path):
    assert expected(path, None, 0.1) < 0.05 and rank.semantic_score(0.9, path, TREE) < 0.05
    assert rank.keyword_score(1.0, path, TREE) < 0.1
    strong = rank.fuse(lists([(path, 40.0)], [(path, 0.85)]), TREE)[0].score
    assert strong > 0.5
    # more evidence in either branch never lowers the score
    def fused(b: float, c: float) -> float:
        return rank.fuse(lists([(path, b)], [(path, c)]), TREE)[0].score

    for b in (0.5, 5.0, 20.0):
        for c in (0.2, 0.5, 0.8):
            assert fused(b, c) <= fused(b + 5, c) and fused(b, c) <= fused(b, c + 0.1)


def test_each_file_is_scored_by_its_kind():
    assert rank.scale_for("src/app.py") is rank.CODE
    assert rank.scale_for("notes/README.md") is rank.PROSE and rank.scale_for("paper.txt") is rank.PROSE
    assert rank.scale_for("src/app.py\x0012") is rank.CODE  # --all-chunks keys
    fused = rank.fuse(lists([("k.py", 20.0), ("k.md", 20.0)], [("k.py", 0.6), ("k.md", 0.6)]), TREE)
    by = {c.path: c.score for c in fused}
    # --explain's `term`: each branch's share of z, by the file's kind
    terms = {c.path: {n: b["term"] for n, b in c.branches.items()} for c in fused}
    assert terms["k.md"] == pytest.approx({"keywords": 0.5 * 20 / 60, "semantic": 0.3}, abs=1e-6)
    assert terms["k.py"]["semantic"] == pytest.approx(0.7 * 0.6, abs=1e-6)
    assert terms["k.py"]["keywords"] == pytest.approx(0.3 * rank.keyword_term(20.0, "k.py", TREE), abs=1e-6)
    assert by["k.py"] == pytest.approx(expected("k.py", 20.0, 0.6))
    assert by["k.md"] == pytest.approx(expected("k.md", 20.0, 0.6))


def test_code_keyword_evidence_counts_when_strong_and_not_when_weak():
    """Code fuses keyword evidence through the keywords scale (issue 19, docs/BENCHMARKS.md
    "Keyword evidence in code"): a bm25 the words common to every file give adds almost
    nothing to the cosine, while a match on most of a query's rare words counts for up to
    (1 - w_sem) of it, whatever the tree's size."""
    tree = rank.Tree(files=600, rows=24000, terms=6)
    weak, strong = rank.keyword_term(3.0, "a.py", tree), rank.keyword_term(60.0, "a.py", tree)
    assert weak < 0.01 and strong > 0.9
    assert rank.keyword_term(60.0, "a.py", rank.Tree(files=20, rows=800, terms=6)) == pytest.approx(
        _prob_at(rank.Tree(files=20, rows=800, terms=6).keyword_share(60.0)))
    # a function whose names hold the query's words outranks a neighbour the model
    # reads a little closer, with no keyword match
    out = rank.fuse(lists([("shutil.py", 60.0), ("sdist.py", 3.0)], [("sdist.py", 0.62), ("shutil.py", 0.55)]), tree)
    assert [c.path for c in out] == ["shutil.py", "sdist.py"]
    # prose keeps the map bm25 / (bm25 + k)
    assert rank.keyword_term(20.0, "a.md", tree) == pytest.approx(20.0 / (20.0 + rank.PROSE.k_bm25))


@pytest.mark.parametrize("files", [1, 20, 600, 5000, 80000])
def test_more_evidence_never_lowers_a_fused_score_of_either_kind(files):
    """Random probes over both kinds and tree sizes: a score stays in (0, 1] and more bm25
    or a closer cosine never lowers it (the code keyword term is a curve, not a line)."""
    rng = random.Random(files)
    tree = rank.Tree(files=files, rows=files * 5, terms=rng.randint(1, 6))
    for _ in range(300):
        path = rng.choice(["a.py", "a.md"])
        b, c = rng.uniform(0, 60), rng.uniform(-0.2, 0.95)
        db, dc = rng.uniform(0, 20), rng.uniform(0, 0.2)

        def fused(bm25: float, cos: float) -> float:
            return rank.fuse(lists([(path, bm25)], [(path, cos)]), tree)[0].score

        base = fused(b, c)
        assert 0.0 < base <= 1.0
        assert fused(b + db, c) >= base - 1e-12 and fused(b, c + dc) >= base - 1e-12


@pytest.mark.parametrize("path", ["proc.go", "notes.md"])
def test_a_hit_shows_the_chunk_of_the_branch_that_believes_in_it(path):
    """A name the keywords found in one passage was shown by the passage the model read a
    little closer than the rest, which lacked it (the Go stdlib: `findrunnable`, keywords
    0.49, semantic 0.0001): the hit now shows the chunk whose branch gives the file the
    higher probability of its own."""
    kw_wins = rank.fuse(lists([(path, 30.0)], [(path, 0.3)]), TREE)[0]
    assert kw_wins.chunk_id == 0  # the keyword branch's chunk (`lists`: keywords 0.., semantic 1000..)
    sem_wins = rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), TREE)[0]
    assert sem_wins.chunk_id == 1000


@pytest.mark.parametrize("path", ["roles/db/defaults/main.yml", "proc.go"])
def test_an_identifier_is_shown_where_the_keywords_found_it(path):
    """`zabbix_server_dbpassword` was shown by the passage the model read closer (its
    probability above the keywords'), which held `zabbix_server_dbpassword_hash_method`
    four lines below where the name is set; an identifier now shows the keywords' passage
    when it holds the name, and the semantic one when no keyword row holds it."""
    ident = dataclasses.replace(TREE, identifier=True)
    assert rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), TREE)[0].chunk_id == 1000
    assert rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), ident)[0].chunk_id == 0
    held = dataclasses.replace(ident, holding=frozenset({0}))
    assert rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), held)[0].chunk_id == 0
    not_held = dataclasses.replace(ident, holding=frozenset({7}))
    assert rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), not_held)[0].chunk_id == 1000
    # the score does not change, only the passage shown
    assert rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), held)[0].score == \
        rank.fuse(lists([(path, 1.0)], [(path, 0.85)]), not_held)[0].score


@pytest.mark.parametrize("path", ["response.js", "notes.md"])
def test_a_phrase_in_words_shows_the_passage_the_model_reads_closest(path):
    """`set a cookie on the response` showed express's response.js by its `require` lines,
    which the keywords judged likelier (0.54) than the model judged the passage setting the
    cookie (0.13): a phrase in words shows the semantic branch's passage, whatever the
    branches' own probabilities; a name (not `worded`) the likelier branch's, and a file that
    came by its abstract (which stands for the whole file) too."""
    worded = dataclasses.replace(TREE, worded=True)
    assert rank.fuse(lists([(path, 30.0)], [(path, 0.3)]), worded)[0].chunk_id == 1000
    assert rank.fuse(lists([(path, 30.0)], [(path, 0.3)]), TREE)[0].chunk_id == 0
    by_abstract = lists([(path, 30.0)], [(path, 0.3)])
    by_abstract["semantic"][0].branches["semantic"]["via"] = "abstract"
    assert rank.fuse(by_abstract, worded)[0].chunk_id == 0
    # the order and the scores do not change, only the passage shown
    both = lists([(path, 30.0), ("b.md", 5.0)], [(path, 0.3), ("b.md", 0.6)])
    assert [(c.path, c.score) for c in rank.fuse(both, worded)] == [(c.path, c.score) for c in rank.fuse(both, TREE)]


def _prob_at(share: float) -> float:
    a, b, c = rank.CODE.keywords
    return sigmoid(a * share + b + c * math.log(rank.REFERENCE_FILES))


def test_fused_scores_do_not_depend_on_how_deep_branches_were_read():
    rng = random.Random(7)
    kws = [(f"f{i:03d}.txt", rng.uniform(1, 40)) for i in range(300)]
    sems = [(f"f{rng.randrange(400):03d}.txt", rng.uniform(0, 0.9)) for _ in range(300)]
    sems = list({p: (p, c) for p, c in sems}.values())
    full = lists(kws, sems)
    deep = {c.path: c.score for c in rank.fuse(full, TREE)}
    shallow = rank.fuse({n: lst[:40] for n, lst in full.items()}, TREE)
    both = {c.path for c in full["keywords"][:40]} & {c.path for c in full["semantic"][:40]}
    assert both
    for c in shallow:
        if c.path in both:
            assert c.score == pytest.approx(deep[c.path])


def test_one_branch_only_scores_by_that_branch():
    only_kw = rank.fuse({"keywords": rank.sort_cands([kw("x.txt", 5.0, 1), kw("y.txt", 9.0, 2)])}, TREE)
    assert [c.path for c in only_kw] == ["y.txt", "x.txt"]
    assert only_kw[0].score == pytest.approx(rank.keyword_score(9.0, "y.txt", TREE))
    only_sem = rank.fuse({"semantic": rank.sort_cands([sem("x.txt", 0.3, 1), sem("y.txt", 0.5, 2)])}, TREE)
    assert [c.path for c in only_sem] == ["y.txt", "x.txt"]
    assert only_sem[0].score == pytest.approx(rank.semantic_score(0.5, "y.txt", TREE))


def test_ties_are_broken_by_path():
    out = rank.fuse(lists([("b.txt", 10.0), ("a.txt", 10.0)], []), TREE)
    assert [c.path for c in out] == ["a.txt", "b.txt"]


TOPIC = "socket server queue"


@pytest.fixture
def topical(tree, ov):
    words = ["socket", "server", "thread", "queue", "parser", "token", "cache", "index", "vector", "graph"]
    rng = random.Random(3)
    files = {f"d{i:02d}.md": " ".join(rng.choice(words) for _ in range(40)) + "\n" for i in range(40)}
    files["exact.md"] = TOPIC + "\n"
    root = tree(files)
    assert ov("index", str(root), "--no-progress").code == 0
    return root


def test_a_nonsense_query_scores_low_where_a_real_match_scores_high(topical, ov):
    for cmd in (["find"], ["search"], ["search", "--search-type", "keywords"]):
        real = ov(*cmd, TOPIC, "-o", "json", cwd=topical).json["result"]["hits"]
        if cmd[-1] == "keywords":  # every file holds these words: the hits are there, not sure ones
            assert real and all(0.0 < h["score"] < 1.0 for h in real)
        else:
            assert real and real[0]["path"] == "exact.md" and real[0]["score"] >= 0.5, (cmd, real[:1])
        r = ov(*cmd, "zzzqqqnonword vvvxxyy", "-o", "json", cwd=topical)
        nonsense = r.json["result"]["hits"]
        assert not nonsense or nonsense[0]["score"] < 0.1, (cmd, nonsense[:1])


def test_find_and_search_agree_in_meaning(topical, ov):
    f = {h["path"]: h["score"] for h in ov("find", TOPIC, "-n", "50", "-o", "json", cwd=topical).json["result"]["hits"]}
    s = {h["path"]: h["score"] for h in ov("search", TOPIC, "-n", "50", "-o", "json", cwd=topical).json["result"]["hits"]}
    assert f["exact.md"] >= 0.5 and s["exact.md"] >= 0.5
    low_f = {p for p, v in f.items() if v < 0.5}
    low_s = {p for p, v in s.items() if v < 0.5}
    assert low_f and low_s and len(low_f & low_s) >= 0.8 * min(len(low_f), len(low_s))


@pytest.mark.parametrize("cmd", [["find"], ["search"]])
def test_threshold_cuts_on_the_score(topical, ov, cmd):
    every = ov(*cmd, TOPIC, "-n", "50", "-o", "json", cwd=topical).json["result"]["hits"]
    cut = ov(*cmd, TOPIC, "-n", "50", "--threshold", "0.5", "-o", "json", cwd=topical)
    kept = cut.json["result"]["hits"]
    assert kept and all(h["score"] >= 0.5 for h in kept)
    assert [h["path"] for h in kept] == [h["path"] for h in every if h["score"] >= 0.5]
    none = ov(*cmd, "zzzqqqnonword vvvxxyy", "--threshold", "0.5", "-o", "json", cwd=topical)
    assert none.code == 1 and none.json["result"]["hits"] == []


def test_hybrid_pages_agree_with_one_long_page(ov, tmp_path):
    words = ["socket", "server", "thread", "queue", "parser", "token", "cache", "index", "vector", "graph"]
    rng = random.Random(3)
    files = {f"d{i:02d}.md": " ".join(rng.choice(words) for _ in range(40)) + "\n" for i in range(40)}
    root = make_tree(tmp_path / "t", files)
    assert ov("index", str(root), "--no-progress").code == 0
    one = ov("search", "socket server queue", "-n", "30", "-o", "json", cwd=root).json["result"]
    paged, cursor = [], None
    while len(paged) < 30:
        args = ["search", "socket server queue", "-n", "10", "-o", "json"] + (["--cursor", cursor] if cursor else [])
        res = ov(*args, cwd=root).json["result"]
        paged += res["hits"]
        cursor = res.get("next_cursor")
        if not cursor:
            break
    assert [h["path"] for h in paged[:30]] == [h["path"] for h in one["hits"]]
    assert [h["score"] for h in paged[:30]] == [h["score"] for h in one["hits"]]


@pytest.mark.model
def test_real_model_a_real_match_passes_a_threshold_a_nonsense_query_does_not(tree, ov):
    """With the real model, one scale for every query: a question that one file answers
    scores its hit above 0.3 in `find` and `search`; a query of words that are in no file
    scores below 0.1, so `--threshold 0.3` keeps the one and returns nothing for the other."""
    root = tree({
        "vitd.txt": "Vitamin D supplementation and fracture risk in older adults\n\nDaily vitamin D "
                    "supplements lowered the rate of hip fractures in adults over seventy during five "
                    "years of follow-up, compared with placebo.\n",
        "sleep.txt": "Sleep duration and working memory in adolescents\n\nTeenagers who slept less than "
                     "seven hours scored lower on working memory tasks.\n",
        "soil.txt": "Nitrogen cycling in temperate forest soils\n\nMicrobial activity sets the pace of "
                    "nitrogen mineralisation in forest soils.\n",
        "retry.py": "def retry(fn, attempts=3):\n    \"\"\"Call fn until it succeeds or attempts run out.\"\"\"\n"
                    "    for _ in range(attempts - 1):\n        try:\n            return fn()\n"
                    "        except Exception:\n            pass\n    return fn()\n",
    })
    assert ov("index", root).code == 0
    for cmd in (["find"], ["search"]):
        real = ov(*cmd, "does vitamin D prevent hip fractures in the elderly", "-o", "json", cwd=root)
        top = real.json["result"]["hits"][0]
        assert top["path"] == "vitd.txt" and top["score"] > 0.3, (cmd, top)
        nonsense = ov(*cmd, "qzxvbn wplokjh ytrqaz", "-o", "json", cwd=root).json["result"]["hits"]
        assert not nonsense or nonsense[0]["score"] < 0.1, (cmd, nonsense[:1])
        cut = ov(*cmd, "qzxvbn wplokjh ytrqaz", "--threshold", "0.3", "-o", "json", cwd=root)
        assert cut.code == 1 and cut.json["result"]["hits"] == []
        kept = ov(*cmd, "does vitamin D prevent hip fractures in the elderly", "--threshold", "0.3",
                  "-o", "json", cwd=root).json["result"]["hits"]
        assert [h["path"] for h in kept][:1] == ["vitd.txt"]


@pytest.mark.parametrize("path", ["notes.md", "src/app.py"])
def test_a_score_reads_how_many_files_compete(path):
    """The same evidence is likelier relevant among 20 files than among 5,000 (issue 14 on
    small trees: the first hit of a 20-file folder scored 0.18 where 96 % were relevant);
    a score grows as the tree shrinks, in every branch, and never past what it says."""
    sizes = [rank.Tree(files=n, rows=5 * n, terms=2) for n in (3, 20, 500, 5000, 100000)]
    for raw in (0.2, 0.4, 0.6):
        got = [rank.semantic_score(1.0 - raw, path, t) for t in sizes]
        assert got == sorted(got, reverse=True) and got[0] > got[-1]
    for bm25 in (2.0, 8.0):
        got = [rank.keyword_score(bm25, path, t) for t in sizes]
        assert got[1] > got[3] > got[4]
    for t in sizes:
        fused = [rank.fuse({"keywords": [kw(path, b, 1)], "semantic": [sem(path, c, 2)]}, t)[0].score
                 for b, c in ((1.0, 0.2), (4.0, 0.4), (9.0, 0.7))]
        assert fused == sorted(fused) and all(0.0 < x < 1.0 for x in fused)


def test_the_keyword_share_keeps_a_words_rarity_at_any_size():
    """e = bm25 / ((terms + SHARE_PRIOR_TERMS) * idf1(rows) * (k1 + 1)): a word in one row
    of eight, met once in a row of average length, is 1 / (k1 + 1) of what it could add;
    a word in every row (its idf at FTS5's floor) is nothing, so `the` in a small folder
    scores low; a term more in the query that no row holds lowers the share."""
    from ov.bm25 import BM25_K1, bm25_idf

    prior = rank.SHARE_PRIOR_TERMS
    t8 = rank.Tree(files=8, rows=8, terms=1)
    once = bm25_idf(8, 1) * 1.0  # tf 1 at the mean length: tf * (k1 + 1) / (tf + k1) = 1
    assert t8.keyword_share(once) == pytest.approx(1 / ((1 + prior) * (BM25_K1 + 1)))
    assert rank.keyword_score(once, "notes.md", t8) > 0.5
    common = bm25_idf(8, 8) * 3.0
    assert t8.keyword_share(common) < 1e-5 and rank.keyword_score(common, "notes.md", t8) < 0.01
    two = rank.Tree(files=8, rows=8, terms=2)
    assert two.keyword_share(once) == pytest.approx(t8.keyword_share(once) * (1 + prior) / (2 + prior))
    assert rank.keyword_score(once, "notes.md", two) < rank.keyword_score(once, "notes.md", t8)
    assert t8.keyword_share(1e9) == 1.0 and t8.keyword_share(-1.0) == 0.0
    # a word in one row of 80,000 has the share of a word in one row of 8
    big = rank.Tree(files=80000, rows=80000, terms=1)
    assert big.keyword_share(bm25_idf(80000, 1)) == pytest.approx(t8.keyword_share(once))


def test_a_hit_keywords_alone_judge_very_likely_relevant_stays_so_in_the_hybrid():
    """A name one file holds: strong keyword evidence, a cosine that says little. The
    hybrid's keyword map does not read the tree's size, so it held such a hit down (0.20
    where keywords alone said 0.92); from KEYWORD_FLOOR up the hybrid keeps the keywords'
    probability, below it the fused one."""
    strong = 30.0
    pk = rank.keyword_score(strong, "notes.md", TREE)
    assert pk >= rank.KEYWORD_FLOOR
    fused = rank.fuse(lists([("notes.md", strong)], [("notes.md", 0.2)]), TREE)[0].score
    assert fused == pytest.approx(pk) and fused == pytest.approx(expected("notes.md", strong, 0.2))
    weak = 8.0
    assert rank.keyword_score(weak, "notes.md", TREE) < rank.KEYWORD_FLOOR
    got = rank.fuse(lists([("notes.md", weak)], [("notes.md", 0.2)]), TREE)[0].score
    assert got == pytest.approx(expected("notes.md", weak, 0.2)) and got < rank.KEYWORD_FLOOR


def test_a_name_in_one_note_passes_a_threshold_in_the_default_search(tree, ov):
    """In a folder of a dozen notes, the note that names someone: `ov search NAME` (hybrid)
    scores it as keywords alone do once they are confident, so `--threshold 0.5` keeps it."""
    files = {f"n{i:02d}.md": f"# Note {i}\nGroceries, laundry and the weekly review of plan {i}.\n" for i in range(11)}
    files["books.md"] = "# Books to read\nThe Name of the Rose by Umberto Eco, and Middlemarch.\n"
    root = tree(files)
    assert ov("index", root, "--no-progress").code == 0
    kw = ov("search", "Umberto Eco", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert kw[0]["path"] == "books.md" and kw[0]["score"] >= rank.KEYWORD_FLOOR, kw[:1]
    hy = ov("search", "Umberto Eco", "--threshold", "0.5", "-o", "json", cwd=root).json["result"]["hits"]
    assert [h["path"] for h in hy] == ["books.md"] and hy[0]["score"] >= kw[0]["score"], hy


def test_a_short_cjk_word_in_every_note_counts_for_nothing(tree, ov):
    """CJK words of 1-2 characters are found by substring and were scored by their raw
    count, with no rarity: 我们 ("we"), in 9 notes of 10, scored 1.0 and 0.57. They are now
    scored as bm25 scores a word (its idf times its saturated count), so a word every note
    holds scores low and one that a single note holds scores far higher."""
    files = {f"n{i}.md": f"# 笔记 {i}\n我们今天讨论了项目。我们需要更多时间。\n" for i in range(9)}
    files["long.md"] = "# 长笔记\n" + "我们开会。" * 15 + "\n"
    files["mig.md"] = "# 数据库计划\n下周把数据库迁移到新的服务器。\n"
    root = tree(files)
    assert ov("index", root, "--no-progress", "--no-embed").code == 0
    common = ov("search", "我们", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert len(common) == 10 and all(h["score"] < 0.1 for h in common), common[:2]
    rare = ov("search", "迁移", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert [h["path"] for h in rare] == ["mig.md"] and rare[0]["score"] > max(0.3, 10 * common[0]["score"]), rare


def test_a_long_lived_server_counts_a_short_cjk_words_rows_once(tree, ov):
    """The rows holding a 1-2 character CJK word (its idf) are a scan of the text: `ov mcp`'s
    store keeps the count until the index changes."""
    from ov.store.warm import WarmStore

    root = tree({"a.md": "我们开会。\n", "b.md": "我们讨论。\n", "c.md": "猫。\n"})
    assert ov("index", root, "--no-progress", "--no-embed").code == 0
    st = WarmStore.open(root / ".ov" / "index.db")
    try:
        scans = []
        real = st.q1
        st.q1 = lambda sql, params=(): (scans.append(sql) if "instr" in sql else None) or real(sql, params)
        first = st.rows_holding("我们")
        assert first >= 2 and st.rows_holding("我们") == first and len(scans) == 1
        (root / "d.md").write_text("我们。\n")
        assert ov("index", root, "--no-progress", "--no-embed").code == 0
        assert st.rows_holding("我们") > first and len(scans) == 2  # the index changed: counted again
    finally:
        st.close()


def test_a_note_holding_a_chinese_word_and_an_english_one_comes_first(tree, ov):
    """The keyword reads (words, trigram runs, 1-2 character runs) search different terms
    of a query and their scores add up: they were merged by the larger one, so for `迁移
    plan` the note holding both came last."""
    files = {f"n{i}.md": f"# 笔记 {i}\n我们今天讨论了项目。\n" for i in range(8)}
    files.update({"mig.md": "# 数据库\n下周把数据库迁移到新的服务器。\n",
                  "plan.md": "# Release plan\nThe plan for the next release: freeze on Friday.\n",
                  "both.md": "# 计划\n下周迁移的 plan 已经写好。\n"})
    root = tree(files)
    assert ov("index", root, "--no-progress", "--no-embed").code == 0
    hits = ov("search", "迁移 plan", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert hits[0]["path"] == "both.md" and {h["path"] for h in hits[1:3]} == {"mig.md", "plan.md"}, hits


CJK_NOTES = {
    "cat.md": "# 猫\n我的猫喜欢吃鱼。\n",
    "mig.md": "# 数据库迁移\n\n我们下周把数据库迁移到新的服务器。迁移计划见附件。\n",
    "plan.md": "# Release plan\n\nThe plan for the next release: freeze on Friday.\n",
    "long.md": "# 长笔记\n" + "我们开会。" * 15 + "\n",
    **{f"n{i}.md": f"# 笔记 {i}\n我们今天讨论了项目。我们需要更多时间。\n" for i in range(1, 9)},
}


@pytest.mark.model
def test_real_model_a_chinese_query_does_not_lift_a_note_the_model_cannot_read(tree, ov):
    """The model reads English: short Chinese notes are 0.45-0.75 apart by its cosine
    whatever they say. With the tree's size in the scale, a note about a cat scored 0.81
    for 迁移 ("migration") among 13 notes, above the migration note, and 0.57 for `我们
    迁移`. A query in a script without spaces reads the tuning corpora's size for its
    semantic and hybrid scales and lifts no hit to its `find` probability."""
    root = tree(CJK_NOTES)
    assert ov("index", root).code == 0
    top = ov("search", "迁移", "-o", "json", cwd=root).json["result"]["hits"]
    assert top[0]["path"] == "mig.md", top[:2]
    for query in ("迁移", "我们 迁移", "数据库", "我们"):
        hits = ov("search", query, "-o", "json", cwd=root).json["result"]["hits"]
        assert all(h["score"] < 0.1 for h in hits if h["path"] == "cat.md"), (query, hits[:3])
        assert all(h["score"] < 0.5 for h in hits if h["path"] != "mig.md"), (query, hits[:3])
    found = ov("search", "猫", "-o", "json", cwd=root).json["result"]["hits"]
    assert found[0]["path"] == "cat.md"


NOTES = {
    "budget.md": "# Budget meeting 2026-11-20\n\nWe agreed to cut the cloud budget by 15 % next quarter. "
                 "Alice owns the spreadsheet.\nThe marketing spend stays flat; travel is frozen until March.\n",
    "kitchen/recipes.md": "# Pancakes\nMix flour, milk, two eggs and a pinch of salt. Fry in butter.\n",
    "deploy.py": "import subprocess\n\n\ndef deploy(env: str) -> None:\n"
                 "    \"\"\"Push the current build to the given environment.\"\"\"\n"
                 "    subprocess.run([\"kubectl\", \"apply\", \"-f\", f\"k8s/{env}.yaml\"], check=True)\n",
}


@pytest.mark.model
def test_real_model_a_small_folders_obvious_hit_scores_as_likely_relevant(tree, ov):
    """With the real model, in a folder of three notes: the note a query is plainly about
    scores at least 0.5 in `find` and `search` (before the size term it scored 0.006-0.07),
    so `--threshold 0.5` keeps it and only it; words in no file still score under 0.1; a
    scope does not change a file's score (the tree's size is read, not the scope's).
    Keywords alone, a one-word query says less (`rank.SHARE_PRIOR_TERMS`), but the note
    holding the word no longer scores as nothing (0.0007 before)."""
    root = tree(NOTES)
    assert ov("index", root).code == 0
    kw = ov("search", "budget", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert [h["path"] for h in kw] == ["budget.md"] and kw[0]["score"] > 0.05, kw
    for cmd, query, want in ((["find"], "pancake recipe", "kitchen/recipes.md"),
                             (["search"], "pancake recipe", "kitchen/recipes.md"),
                             (["search"], "budget meeting decisions", "budget.md"),
                             (["search"], "how do I deploy to kubernetes", "deploy.py")):
        hits = ov(*cmd, query, "-o", "json", cwd=root).json["result"]["hits"]
        assert hits[0]["path"] == want and hits[0]["score"] >= 0.5, (cmd, query, hits)
        assert all(h["score"] < 0.1 for h in hits[1:]), (cmd, query, hits)
        kept = ov(*cmd, query, "--threshold", "0.5", "-o", "json", cwd=root).json["result"]["hits"]
        assert [h["path"] for h in kept] == [want]
        scoped = ov(*cmd, query, "-u", want.rsplit("/", 1)[0] if "/" in want else want, "-o", "json",
                    cwd=root).json["result"]["hits"]
        assert scoped[0]["path"] == want and scoped[0]["score"] == hits[0]["score"]
        nonsense = ov(*cmd, "qzxvbn wplokjh ytrqaz", "-o", "json", cwd=root).json["result"]["hits"]
        assert not nonsense or nonsense[0]["score"] < 0.1, (cmd, nonsense[:1])


@pytest.mark.model
def test_real_model_a_small_folders_first_search_answers_from_both_branches(tree, ov):
    """With the real model, the first search in a folder of three notes (no `ov index`
    before it) embeds them itself and answers from both branches: the pancake note first
    and likely relevant, no warning, no worker left to finish."""
    root = tree(NOTES)
    r = ov("search", "pancake recipe", "-o", "json", cwd=root)
    assert r.code == 0, r.err
    res = r.json["result"]
    assert res["branches"] == ["keywords", "semantic"] and res["warnings"] == [], res
    assert res["coverage"]["pending"] == 0 and res["coverage"]["background"] is False
    assert res["hits"][0]["path"] == "kitchen/recipes.md" and res["hits"][0]["score"] >= 0.5, res["hits"]
    assert all(h["score"] < 0.1 for h in res["hits"][1:]), res["hits"]


def test_hits_whose_printed_scores_are_equal_come_in_path_order():
    """DESIGN: ranked results by score, ties broken by path. Two scores that differ past
    the printed digits (3.40001e-05 and 3.4e-05 both print as 3.4e-05) came in score
    order, so equal printed scores were out of path order."""
    cands = [Cand(1, "z.py", 3.4000012e-05), Cand(2, "a.py", 3.4e-05), Cand(3, "m.py", 0.5),
             Cand(4, "b.py", 3.4000004e-05), Cand(5, "c.py", 3.3e-05)]
    got = rank.sort_cands(cands)
    assert [c.path for c in got] == ["m.py", "a.py", "b.py", "z.py", "c.py"]
    printed = [round(c.score, rank.SCORE_DIGITS) for c in got]
    assert printed == sorted(printed, reverse=True)


QUESTION_NOTES = {
    "homeserver-log.md": "# Home server\n\nA long running log of how the home server was set up: Debian, "
                         "then WireGuard on port 51820, then backups.\n",
    "garden.md": "# Garden\n\nThe last frost this year was on 3 May; the tomatoes went out a week later.\n",
    "docker.md": "# Docker cheatsheet\n\nFree disk space: `docker system prune -a` removes unused images "
                 "and stopped containers.\n",
    "pancakes.md": "# Pancakes\n\nMix flour, milk and two eggs. Fry in butter.\n",
    "japan.md": "# Japan trip\n\nTokyo, then Kyoto by train with the rail pass.\n",
    "books.md": "# Books 2026\n\nThe Name of the Rose; Foucault's Pendulum.\n",
    "todo.md": "# Todo\n\nRenew the passport. Call the plumber.\n",
    "budget.md": "# Budget\n\nWe cut travel and keep hiring.\n",
}


def test_question_words_are_not_keyword_evidence(tree, ov):
    """`how`, `what`, `when`, `do`, `I`... say nothing of a question's subject, but in a small
    folder each is as rare as a name: `how long to bake bread` gave a log that says "how
    long" 0.94 among 15 notes (the review of a notes folder), and `when was the last frost`
    gave the garden note 0.02, its two words of subject diluted among five. They leave the
    keyword query as Lucene's stop words do, unless the query is nothing else."""
    from ov.query import keyword_plan

    assert keyword_plan("how long to bake bread").fts == '"long" OR "bake" OR "bread"'
    assert keyword_plan("what did we decide about hiring").fts == '"decide" OR "hiring"'
    assert keyword_plan("how do I").terms == 3  # nothing else: the words stay
    assert keyword_plan("tomatoes in May").fts == '"tomatoes" OR "May"'  # a month, not a modal
    root = tree(QUESTION_NOTES)
    assert ov("index", root).code == 0

    def hits(q):
        return ov("search", q, "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]

    # no note answers it: it scores low (0.15 with its question words as evidence)
    assert all(h["score"] < 0.1 for h in hits("how long to bake bread")), hits("how long to bake bread")
    # the notes that answer score as likely relevant (0.52 and 0.56 before)
    for q, want in (("when was the last frost", "garden.md"), ("how do I free disk space", "docker.md")):
        got = hits(q)
        assert got[0]["path"] == want and got[0]["score"] >= 0.7, (q, got)


def test_a_hit_printed_as_1_is_kept_by_threshold_1(ov, tree):
    """A unique identifier's keywords-only score is 0.99999999..., printed 1.0: `--threshold
    1` dropped it and exited 1 ("scoring below this" reads the printed score)."""
    rng = random.Random(11)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(400)]
    files = {f"d{i:03d}.md": " ".join(rng.choice(words) for _ in range(60)) + "\n" for i in range(120)}
    root = tree({**files, "one.md": "changed_token_omega\n"})
    assert ov("index", str(root), "--no-embed").code == 0
    every = ov("search", "changed_token_omega", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [(h["path"], h["score"]) for h in every.json["result"]["hits"]] == [("one.md", 1.0)]
    cut = ov("search", "changed_token_omega", "--search-type", "keywords", "--threshold", "1", "-o", "json", cwd=root)
    assert cut.code == 0 and [h["path"] for h in cut.json["result"]["hits"]] == ["one.md"]
