"""Hybrid fusion (ov.rank.fuse): scale, adaptive weight, stability under depth, and paging
through the CLI agreeing with one long page."""

from __future__ import annotations

import random

import pytest

from ov import rank
from ov.rank import Cand

from conftest import make_tree


def kw(path: str, bm25: float, cid: int) -> Cand:
    return Cand(cid, path, rank.keyword_score(bm25), {"keywords": {"raw": bm25}})


def sem(path: str, cos: float, cid: int) -> Cand:
    return Cand(cid, path, cos, {"semantic": {"raw": 1.0 - cos}})


def lists(kws: list[tuple[str, float]], sems: list[tuple[str, float]]) -> dict[str, list[Cand]]:
    k = rank.sort_cands(kw(p, s, i) for i, (p, s) in enumerate(kws))
    s = rank.sort_cands(sem(p, c, 1000 + i) for i, (p, c) in enumerate(sems))
    return {"keywords": k, "semantic": s}


def test_first_in_both_branches_scores_one_and_scores_stay_in_range():
    out = rank.fuse(lists([("a", 30.0), ("b", 10.0), ("c", 2.0)], [("a", 0.7), ("c", 0.6), ("d", 0.1)]))
    assert out[0].path == "a" and out[0].score == pytest.approx(1.0)
    assert all(0.0 <= c.score <= 1.0 for c in out)
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
    assert {c.path for c in out} == {"a", "b", "c", "d"}
    assert out[0].branches["keywords"]["rank"] == 1 and out[0].branches["semantic"]["rank"] == 1


@pytest.mark.parametrize("sched", [rank.PROSE, rank.CODE])
def test_semantic_weight_grows_as_the_best_keyword_match_weakens(sched):
    weak = rank.semantic_weight(sched.bm25_weak - 5, sched=sched)
    strong = rank.semantic_weight(sched.bm25_strong + 5, sched=sched)
    mid = rank.semantic_weight((sched.bm25_weak + sched.bm25_strong) / 2, sched=sched)
    assert weak == pytest.approx(sched.w_weak)
    assert strong == pytest.approx(sched.w_strong)
    assert strong < mid < weak
    assert 0.0 <= strong and weak <= 1.0
    # a smaller index lowers both thresholds (IDF grows with the log of its size)
    assert rank.semantic_weight(sched.bm25_weak, 500, sched) < weak


def test_each_file_mixes_by_its_kind():
    assert rank.schedule_for("src/app.py") is rank.CODE
    assert rank.schedule_for("notes/README.md") is rank.PROSE
    assert rank.schedule_for("paper.txt") is rank.PROSE
    # one query, the same branch evidence for a code file and a prose file: keywords
    # strong enough that prose mixes near half and half while code leans on meaning
    best = rank.PROSE.bm25_strong + 5
    assert rank.semantic_weight(best, sched=rank.CODE) > rank.semantic_weight(best, sched=rank.PROSE)
    fused = rank.fuse(lists([("k.py", best), ("k.md", best), ("top.txt", best * 2)],
                            [("top.txt", 0.9), ("s.py", 0.8), ("s.md", 0.8)]))
    by = {c.path: c.score for c in fused}
    assert by["top.txt"] == pytest.approx(1.0)
    assert by["s.py"] > by["s.md"]  # meaning counts more in code
    assert by["k.md"] > by["k.py"]  # and the keywords more in prose
    # per-chunk fusion (`--all-chunks`) keys "path\0chunk id": the kind is the file's
    per_chunk = rank.fuse(lists([("k.py\x001", best)], [("s.py\x002", 0.8), ("s.md\x003", 0.8)]))
    sc = {c.path: c.score for c in per_chunk}
    assert sc["s.py\x002"] > sc["s.md\x003"]


def test_weak_keyword_matches_let_meaning_decide():
    # "b" wins on keywords, "a" on meaning: with only weak keyword evidence "a" leads,
    # with strong keyword evidence for "b" the keyword side leads
    low = rank.fuse(lists([("b", 4.0), ("a", 1.0)], [("a", 0.8), ("b", 0.2)]))
    assert low[0].path == "a"
    high = rank.fuse(lists([("b", 60.0), ("a", 5.0)], [("a", 0.5), ("b", 0.45)]))
    assert high[0].path == "b"


def test_fused_scores_do_not_depend_on_how_deep_branches_were_read():
    rng = random.Random(7)
    kws = [(f"f{i:03d}", rng.uniform(1, 40)) for i in range(300)]
    sems = [(f"f{rng.randrange(400):03d}", rng.uniform(0, 0.9)) for _ in range(300)]
    sems = list({p: (p, c) for p, c in sems}.values())
    full = lists(kws, sems)
    deep = {c.path: c.score for c in rank.fuse(full)}
    shallow = rank.fuse({n: lst[:40] for n, lst in full.items()})
    both = {c.path for c in full["keywords"][:40]} & {c.path for c in full["semantic"][:40]}
    assert both
    for c in shallow:
        if c.path in both:
            assert c.score == pytest.approx(deep[c.path])


def test_one_branch_only():
    only_kw = rank.fuse({"keywords": rank.sort_cands([kw("x", 5.0, 1), kw("y", 9.0, 2)])})
    assert [c.path for c in only_kw] == ["y", "x"] and only_kw[0].score == pytest.approx(1.0)
    only_sem = rank.fuse({"semantic": rank.sort_cands([sem("x", 0.3, 1), sem("y", 0.5, 2)])})
    assert [c.path for c in only_sem] == ["y", "x"]


def test_ties_are_broken_by_path():
    out = rank.fuse(lists([("b", 10.0), ("a", 10.0)], []))
    assert [c.path for c in out] == ["a", "b"]


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
