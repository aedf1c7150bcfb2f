"""`ov find` and `ov search` through the CLI: the contract of DESIGN.md for ranked hits."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess

from ov.read import decode
from ov.query import keyword_plan
from ov.store import Store

DOCS = {
    "docs/install.md": "# Installing\n\nRun pip install to set up the package on a new machine.\n",
    "docs/usage.md": "# Usage\n\nSearch a folder with keywords or by meaning.\n\n## Flags\n\nUse --limit to cap hits.\n",
    "src/net.py": "def open_socket(host, port):\n    \"\"\"Connect a TCP socket to a server.\"\"\"\n    return (host, port)\n",
    "src/parse.py": "def parseHttpHeader(line):\n    \"\"\"Split an HTTP header line.\"\"\"\n    return line.split(':', 1)\n",
    "src/util.py": "def snake_case_name(x):\n    return x.lower()\n",
    "notes/zh.md": "# 笔记\n\n我们使用全文搜索来查找文件。\n",
    "notes/ja.md": "# メモ\n\n検索エンジンの設定について。\n",
}


def build(tree, files=DOCS, *flags):
    root = tree(files)
    from tests.conftest import run_inprocess

    r = run_inprocess(["index", root, *flags])
    assert r.code == 0, r.err
    return root


def hits(r):
    assert r.code in (0, 1), r.out + r.err
    return r.json["result"]["hits"] if r.code == 0 else r.json["result"]["hits"]


def assert_exact(root: Path, res: dict) -> None:
    for h in res["hits"]:
        text = decode((root / h["path"]).read_bytes())
        ex = h["excerpt"]
        assert text[ex["start"]:ex["end"]] == ex["text"]
        assert 0.0 <= h["score"] <= 1.0


@pytest.mark.parametrize("stype", ["hybrid", "keywords", "lexical", "semantic"])
def test_each_search_type_answers_the_contract(ov, tree, stype):
    root = build(tree)
    r = ov("search", "socket server", "--search-type", stype, "-o", "json", cwd=root)
    assert r.code == 0, r.out + r.err
    env = r.json
    assert env["status"] == "ok" and isinstance(env["usage"]["elapsed_ms"], int)
    res = env["result"]
    assert res["search_type"] == ("keywords" if stype == "lexical" else stype)
    assert res["profile"]["name"] == "default" and res["profile"]["version"]
    assert [h["rank"] for h in res["hits"]] == list(range(1, len(res["hits"]) + 1))
    assert res["total"] == len(res["hits"])
    assert res["hits"][0]["path"] == "src/net.py"
    assert_exact(root, res)
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_golden_keywords_json(ov, tree):
    root = build(tree)
    r = ov("search", "tcp socket", "--search-type", "keywords", "-o", "json", cwd=root)
    res = r.json["result"]
    text = DOCS["src/net.py"].rstrip("\n")
    assert res["hits"] == [{
        "rank": 1, "path": "src/net.py", "start_line": 1, "end_line": 3,
        "score": res["hits"][0]["score"], "level": 2,
        "excerpt": {"text": text, "start": 0, "end": len(text)}, "line": 2,
    }]
    assert 0 < res["hits"][0]["score"] < 1
    assert res["total"] == 1 and res["warnings"] == [] and "next_cursor" not in res


def test_find_is_semantic(ov, tree):
    root = build(tree)
    r = ov("find", "socket", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["search_type"] == "semantic"


def test_text_and_jsonl_output(ov, tree):
    root = build(tree)
    r = ov("search", "socket", "--search-type", "keywords", cwd=root)
    assert r.code == 0
    assert r.lines[0] == "src/net.py:1: def open_socket(host, port):"
    r = ov("search", "socket", "--search-type", "keywords", "-o", "jsonl", cwd=root)
    rows = r.jsonl
    assert rows[0]["path"] == "src/net.py" and rows[0]["rank"] == 1


@pytest.mark.parametrize("cmd", ["search", "find"])
def test_jsonl_ends_with_a_summary_of_the_result(ov, tree, cmd):
    # JSON Lines has no envelope: the last record carries what the JSON result holds
    # besides the hits, so a pipe can tell more hits exist and fetch the next page
    root = build(tree)
    j = ov(cmd, "search a folder", "-n", "2", "-o", "json", cwd=root).json["result"]
    rows = ov(cmd, "search a folder", "-n", "2", "-o", "jsonl", cwd=root).jsonl
    hit_rows, last = rows[:-1], rows[-1]
    assert hit_rows == j["hits"] and all("type" not in h for h in hit_rows)
    assert last["type"] == "summary" and isinstance(last["elapsed_ms"], int)
    rest = {k: v for k, v in j.items() if k != "hits"}
    assert {k: v for k, v in last.items() if k not in ("type", "elapsed_ms")} == rest
    assert last["next_cursor"] and last["total"] == 2 and last["root"] == str(root)
    page2 = ov(cmd, "search a folder", "-n", "2", "-o", "jsonl", "--cursor", last["next_cursor"],
               cwd=root).jsonl
    assert page2[0]["rank"] == 3 and page2[-1]["type"] == "summary"
    if cmd == "search":  # no hits: still the summary, and exit 1
        r = ov(cmd, "zzqxv", "--search-type", "keywords", "-o", "jsonl", cwd=root)
        assert r.code == 1 and [x["type"] for x in r.jsonl] == ["summary"]
        assert "next_cursor" not in r.jsonl[0] and r.jsonl[0]["total"] == 0


NASTY = ['"', '""', "'", "-", "--", "*", "a*", ":", "col:val", "^", "^start", "(", ")", "(a", "a)",
         "AND", "OR", "NOT", "NEAR", "NEAR(a b)", "a AND", "OR b", "NOT NOT", "{", "}", "+", "!", "?",
         ".", ",", ";", "\\", "/", "a-b", "a - b", "\"unbalanced", "x'y", "@", "#", "$", "%", "&",
         "~", "`", "|", "[a]", "*:*", "socket*", "-socket", "NEAR/3"]


@pytest.mark.parametrize("q", NASTY)
def test_fts5_syntax_is_never_an_error(ov, tree, q):
    root = build(tree, {"a.md": "socket a b col val start\n"}, "--no-embed")
    # `--` ends the options, as for ripgrep, so a query may start with '-'
    r = ov("search", "--search-type", "keywords", "-o", "json", "--", q, cwd=root)
    assert r.code in (0, 1), r.out + r.err
    assert r.json["status"] == "ok"


def test_cjk_queries_find_matches(ov, tree):
    root = build(tree)
    r = ov("search", "全文搜索", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "notes/zh.md"
    r = ov("search", "検索", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "notes/ja.md"


def test_a_cjk_question_without_spaces_finds_the_words_it_holds(ov, tree):
    """"如何关闭抽屉" (how to close the drawer) found nothing by keywords, silently, where the
    docs say "抽屉的关闭按钮" (the words apart); "抽屉 关闭", with a space, found them. A run
    without spaces is also searched by its pairs of characters, and a passage holding the
    run whole still ranks first."""
    root = build(tree, {"drawer.md": "# 抽屉\n\n自定义抽屉的关闭按钮位置。\n",
                        "modal.md": "# 对话框\n\n对话框的标题。\n",
                        "exact.md": "# 常见问题\n\n如何关闭抽屉：点击遮罩。\n",
                        "trip.md": "# 東京旅行の計画\n\n来年の春に東京へ行く予定です。\n",
                        "docker.md": "# Docker\n\nDocker networks connect the containers.\n",
                        "net.md": "# 网络\n\n容器的网络。\n"}, "--no-embed")
    hits = ov("search", "如何关闭抽屉", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert [h["path"] for h in hits] == ["exact.md", "drawer.md"], hits
    hits = ov("search", "東京の旅行", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]["hits"]
    assert [h["path"] for h in hits] == ["trip.md"], hits
    plan = keyword_plan("如何关闭抽屉")
    assert plan.runs == ("如何关闭抽屉",) and plan.pairs == ("如何", "何关", "关闭", "闭抽", "抽屉")
    assert plan.short == () and plan.terms == 2  # the run, and its pairs as one term
    # a word beside such a run keeps its share: the pairs do not count one term each
    mixed = ov("search", "Docker 容器网络配置", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]
    assert [h["path"] for h in mixed["hits"]][:1] == ["docker.md"], mixed["hits"]


def test_a_short_cjk_word_is_found_before_and_after_the_trigram_rows(tmp_path):
    """A run without spaces of 1-2 characters is read only in the passages the trigram
    table holds (`内存` took 4.3 s on the kernel, reading its whole text), and in those it
    does not hold yet: a first search leaves them to the background worker."""
    from conftest import make_tree, run_subprocess

    root = make_tree(tmp_path / "t", {"zh.md": "# 内存\n\n内存管理的文档。\n", "en.md": "# Memory\n\nManaging memory.\n"})
    env = {"OV_EMBEDDER": "hash"}
    r = run_subprocess(["index", "--background"], cwd=root, env={**env, "OV_WORKER_DELAY": "30"})
    try:
        assert r.code == 0, r.err
        with Store.open(root / ".ov" / "index.db", readonly=True) as s:
            assert s.q1("SELECT count(*) FROM chunks_tri_docsize") == 0  # not written yet
        r = run_subprocess(["search", "内存", "--search-type", "keywords", "-o", "json"], cwd=root, env=env)
        assert [h["path"] for h in r.json["result"]["hits"]] == ["zh.md"], r.out
    finally:
        run_subprocess(["index", "--stop"], cwd=root, env=env)
    assert run_subprocess(["index"], cwd=root, env=env).code == 0  # the trigram rows written
    r = run_subprocess(["search", "内存", "--search-type", "keywords", "-o", "json"], cwd=root, env=env)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["zh.md"], r.out


def test_camel_and_snake_identifiers(ov, tree):
    root = build(tree)
    r = ov("search", "http header", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.json["result"]["hits"][0]["path"] == "src/parse.py"
    r = ov("search", "snake name", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.json["result"]["hits"][0]["path"] == "src/util.py"


def test_filter_before_limit(ov, tree):
    files = {f"other/f{i:03}.md": "needle needle needle needle" + "!" * (i + 1) + "\n" for i in range(60)}
    files["docs/only.md"] = "# doc\n\nlong text " + "filler " * 300 + "needle\n"
    root = build(tree, files)
    r = ov("search", "needle", "-o", "json", "-n", "50", cwd=root)
    assert "docs/only.md" not in [h["path"] for h in r.json["result"]["hits"]]
    for stype in ("keywords", "semantic", "hybrid"):
        r = ov("search", "needle", "--search-type", stype, "-u", "docs", "-n", "1", "-o", "json", cwd=root)
        assert r.code == 0, r.out
        assert [h["path"] for h in r.json["result"]["hits"]] == ["docs/only.md"]
    r = ov("search", "needle", "-u", "docs/", "--exclude-uri", "docs/only.md", "-o", "json", cwd=root)
    assert r.code == 1


def test_type_and_time_filters(ov, tree):
    root = build(tree)
    r = ov("search", "socket header usage", "-t", "py", "-o", "json", "-n", "50", cwd=root)
    assert {h["path"] for h in r.json["result"]["hits"]} <= {"src/net.py", "src/parse.py", "src/util.py"}
    old = 1_000_000_000
    os.utime(root / "docs/usage.md", (old, old))
    from tests.conftest import run_inprocess

    run_inprocess(["index", root])
    r = ov("search", "usage flags", "--before", "2005-01-01", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["docs/usage.md"]
    r = ov("search", "usage flags", "--after", "7d", "-o", "json", "-n", "50", cwd=root)
    assert "docs/usage.md" not in [h["path"] for h in r.json["result"]["hits"]]
    r = ov("search", "x", "--after", "yesterday-ish", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument" and r.json["error"]["field"] == "after"


def test_cursor_pages_equal_the_unpaged_result(ov, tree):
    files = {f"f{i:02}.md": f"# note {i}\n\n" + "common word " * (i + 1) + "\n" for i in range(30)}
    root = build(tree, files)
    for stype in ("keywords", "semantic", "hybrid"):
        full = ov("search", "common word note", "--search-type", stype, "-n", "30", "-o", "json", cwd=root)
        want = [h["path"] for h in full.json["result"]["hits"]]
        got, cursor = [], None
        while True:
            args = ["search", "common word note", "--search-type", stype, "-n", "7", "-o", "json"]
            if cursor:
                args += ["--cursor", cursor]
            page = ov(*args, cwd=root).json["result"]
            got += [h["path"] for h in page["hits"]]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        assert got == want and len(set(got)) == len(got)


def test_cursor_from_changed_index_is_refused(ov, tree):
    files = {f"f{i:02}.md": "common word" + "!" * (i + 1) + "\n" for i in range(15)}
    root = build(tree, files)
    page = ov("search", "common", "-n", "5", "-o", "json", cwd=root).json["result"]
    (root / "new.md").write_text("common again\n")
    from tests.conftest import run_inprocess

    run_inprocess(["index", root])
    r = ov("search", "common", "-n", "5", "--cursor", page["next_cursor"], "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "invalid_argument"
    assert "rerun" in r.json["error"]["message"]
    r = ov("search", "common", "--cursor", "garbage!!", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["field"] == "cursor"


def test_stale_deleted_and_changed_files(ov, tree):
    root = build(tree)
    (root / "src/net.py").unlink()
    p = root / "src/parse.py"
    p.write_text("# moved down\n\n\n" + DOCS["src/parse.py"])
    r = ov("search", "socket http header", "--search-type", "keywords", "-o", "json", cwd=root)
    res = r.json["result"]
    paths = [h["path"] for h in res["hits"]]
    assert "src/net.py" not in paths
    hit = next(h for h in res["hits"] if h["path"] == "src/parse.py")
    assert hit["start_line"] == 4
    assert_exact(root, res)
    assert "changed or deleted" in r.err
    p.write_text("completely different now\n")
    r = ov("search", "http header", "--search-type", "keywords", "-o", "json", cwd=root)
    assert "src/parse.py" not in [h["path"] for h in r.json["result"]["hits"]]


def test_unreadable_files_are_left_out(ov, tree, monkeypatch):
    root = build(tree)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **k: False if str(p).endswith("net.py") else real(p, m, **k))
    r = ov("search", "socket", "-o", "json", "-n", "50", cwd=root)
    assert "src/net.py" not in r.out


def test_randomised_queries_give_exact_excerpts(ov, tree):
    rnd = random.Random(7)
    words = "alpha beta gamma delta epsilon socket parser index vector query token".split()
    files = {}
    for i in range(25):
        lines = [" ".join(rnd.choice(words) for _ in range(rnd.randint(3, 12))) for _ in range(rnd.randint(3, 80))]
        files[f"d{i % 3}/f{i}.{'md' if i % 2 else 'txt'}"] = "\n".join(lines) + ("\r\n" if i % 5 == 0 else "\n")
    root = build(tree, files)
    for _ in range(20):
        q = " ".join(rnd.sample(words, 2))
        for stype in ("keywords", "semantic", "hybrid"):
            r = ov("search", q, "--search-type", stype, "--all-chunks", "-n", "50", "-o", "json", cwd=root)
            res = r.json["result"]
            assert_exact(root, res)
            spans = [(h["path"], h["excerpt"]["start"], h["excerpt"]["end"]) for h in res["hits"]]
            assert len(spans) == len(set(spans))


def test_semantic_on_no_embed_index_is_unsupported(ov, tree):
    root = build(tree, DOCS, "--no-embed")
    for args in (["find", "socket"], ["search", "socket", "--search-type", "semantic"]):
        r = ov(*args, "-o", "json", cwd=root)
        assert r.code == 2 and r.json["error"]["code"] == "unsupported"
        assert "without --no-embed" in r.json["error"]["message"]
    r = ov("search", "socket", "-o", "json", cwd=root)  # hybrid falls back to keywords
    assert r.code == 0 and r.json["result"]["hits"][0]["path"] == "src/net.py"


def test_errors_and_exit_codes(ov, tree):
    root = build(tree)
    cases = [
        (["search", "x" * 8193], "query_too_long"),
        (["find", "word " * 300], "query_too_long"),
        (["search", "x", "-n", "0"], "invalid_argument"),
        (["search", "x", "-n", "51"], "invalid_argument"),
        (["search", "x", "--search-type", "fuzzy"], "invalid_argument"),
        (["search", "x", "--threshold", "2"], "invalid_argument"),
        (["search", "x", "--tags", "bare"], "invalid_argument"),
        (["search", "x", "-u", "/etc"], "invalid_path"),
        (["search", "x", "-u", "../.."], "invalid_path"),
        (["search", "   "], "invalid_argument"),
        (["search", "a\x00b"], "invalid_argument"),
        (["search", "x", "--bogus-flag"], "invalid_argument"),
    ]
    for args, code in cases:
        r = ov(*args, "-o", "json", cwd=root)
        assert r.code == 2, args
        assert r.json["status"] == "error" and r.json["error"]["code"] == code, (args, r.out)
        t = ov(*args, cwd=root)
        assert t.code == 2 and t.out == "" and len(t.err.strip().splitlines()) == 1, (args, t.err)
    r = ov("search", "zzzqqqxxx", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.code == 1 and r.json["result"]["hits"] == []
    r = ov("search", "x" * 8192, "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.code in (0, 1)


def test_first_use_builds_the_index(ov, tree):
    root = tree({"a.md": "# Sockets\n\nopen a socket\n"})
    r = ov("search", "socket", "--no-auto-index", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "not_found"
    r = ov("search", "socket", "-o", "json", cwd=root)
    assert r.code == 0 and "building one" in r.err
    assert (root / ".ov" / "index.db").exists()


@pytest.mark.model
def test_real_model_ranks_by_meaning(ov, tree):
    root = build(tree)
    r = ov("find", "how do I connect to a remote machine over the network", "-o", "json", cwd=root)
    assert r.code == 0
    assert r.json["result"]["hits"][0]["path"] == "src/net.py"
    r = ov("search", "setting up the software", "-o", "json", cwd=root)
    assert r.json["result"]["hits"][0]["path"] == "docs/install.md"
    assert_exact(root, r.json["result"])


def test_a_scope_outside_the_root_names_its_own_flag(tree, ov):
    root = tree({"a.md": "# A\n\nneedle\n"})
    assert ov("index", ".", cwd=root).code == 0
    for flag, field in (("-u", "uri"), ("--exclude-uri", "exclude_uri")):
        r = ov("search", "needle", flag, "/etc", "-o", "json", cwd=root)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_path", r.out
        assert r.json["error"]["field"] == field, (flag, r.out)


def test_a_file_over_the_size_cap_is_named_in_every_ranked_result_it_may_be_in(tmp_path):
    """DESIGN: a file-size cap that cuts a result says so in-band. A file the index left out
    for its size is in no ranked result: each that it may hold the words of says so, and
    names it."""
    root = make_tree(tmp_path / "t", {"small.md": "# Small\n\nbigneedle once\n",
                                      "big.txt": "bigneedle\n" * 150_000})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env={"OV_EMBEDDER": "hash"}).code == 0
    r = run_inprocess("search", "bigneedle", "--search-type", "keywords", "-o", "json", cwd=root)
    res = r.json["result"]
    assert [h["path"] for h in res["hits"]] == ["small.md"]
    assert [w for w in res["warnings"] if "over --max-filesize may hold words of the query" in w
            and "big.txt" in w], res["warnings"]
    # ... when it may hold a word of the query: its bitmap for grep (ov.grams) says it lacks
    # `once`, and every search on a JS tree had named TypeScript's eight 10 MB bundles. Any
    # word counts (the keyword search is an OR), a plain word by its stem (`needles`)
    r = run_inprocess("search", "once", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["small.md"]
    assert r.json["result"]["warnings"] == [], r.out
    for some in ("once bigneedle", "how do the bigneedles work"):
        r = run_inprocess("search", some, "--search-type", "keywords", "-o", "json", cwd=root)
        assert any("big.txt" in w for w in r.json["result"]["warnings"]), (some, r.out)
    # ... and a name whole: big.txt holds `bigneedle` but not `quokka_bigneedle_function`
    # (a made-up name had named a C++ tree's lapacke.h for its `function`)
    for name, named in (("quokka_bigneedle_function", False), ("bigneedle_x", False), ("bigneedle", True)):
        r = run_inprocess("search", name, "--search-type", "keywords", "-o", "json", cwd=root)
        assert any("big.txt" in w for w in r.json["result"]["warnings"]) is named, (name, r.out)
    (root / "big.txt").write_text("bigneedle\n")
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env={"OV_EMBEDDER": "hash"}).code == 0
    r = run_inprocess("search", "bigneedle", "--search-type", "keywords", "-o", "json", cwd=root)
    assert r.json["result"]["warnings"] == [], r.out


def test_a_search_from_a_folder_the_index_left_out_says_so(tmp_path):
    """From a git-ignored `build/` under an index of the checkout, a search answered from
    the other folders as if `build/` held nothing of the query, without a word."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "repo", {".gitignore": "build/\n", "build/out.txt": "the zanzibar manual\n",
                                         "src/a.py": "def zanzibar(): pass\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0
    r = run_inprocess("search", "zanzibar", "--search-type", "keywords", "-o", "json", cwd=root / "build", env=env)
    res = r.json["result"]
    assert [h["path"] for h in res["hits"]] == ["../src/a.py"]
    assert any(w.startswith("the current folder (build/) holds no indexed file") for w in res["warnings"]), res
    r = run_inprocess("search", "zanzibar", "--search-type", "keywords", "-o", "json", cwd=root / "src", env=env)
    assert not any("current folder" in w for w in r.json["result"]["warnings"]), r.out


def test_a_time_filter_judges_a_file_by_its_mtime_now(tmp_path):
    """`--after`/`--before` filter on the mtime the index holds; a file re-stamped since
    (`touch -d`) was still returned by `--after 2h`. A hit is now judged by its file's
    mtime at the recheck."""
    root = make_tree(tmp_path / "t", {"tool.md": "# Tool\n\njson tool helper\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env=env).code == 0

    def hits(*flags: str) -> list[str]:
        r = run_inprocess("search", "json tool", "--search-type", "keywords", *flags, "-o", "json",
                          cwd=root, env=env)
        return [h["path"] for h in r.json["result"]["hits"]]

    assert hits("--after", "2h") == ["tool.md"]
    old = 929_000_000  # 1999
    os.utime(root / "tool.md", (old, old))
    assert hits("--after", "2h") == []
    assert hits() == ["tool.md"]


def test_a_tier_hit_of_a_changed_file_is_not_its_old_abstract(tmp_path):
    """`-L 0`/`-L 1` hits and folder tiers showed the abstract a file had when indexed,
    with stale 0 and no warning, after the file was edited: a tier row's file was never
    rechecked. A tier the file no longer gives is dropped and counted as stale; one it
    still gives is shown."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {
        "src/mod4.py": '"""Module 4: handles the frobnication of widget number 4."""\n\ndef frob(x):\n    return x\n',
        "src/mod5.py": '"""Module 5: parses quokka headers."""\n\ndef parse(s):\n    return s\n'})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    p = root / "src" / "mod4.py"
    p.write_text(p.read_text().replace("handles the frobnication of widget number 4",
                                       "manages the teleportation of gadget 4"))
    (root / "src" / "mod5.py").write_text((root / "src" / "mod5.py").read_text() + "\n# a comment\n")
    r = run_inprocess("search", "-L", "0", "--search-type", "keywords", "frobnication widget", "-o", "json",
                      cwd=root, env=env)
    assert r.json["result"]["hits"] == [] and r.json["result"]["stale"] == 1, r.out
    r = run_inprocess("search", "-L", "0", "--search-type", "keywords", "quokka", "-o", "json", cwd=root, env=env)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["src/mod5.py"], r.out  # changed, same abstract
    listing = run_inprocess("read", "src", "--level", "1", cwd=root, env=env).out
    assert "teleportation" in listing and "frobnication" not in listing, listing


def test_a_file_grown_past_the_size_cap_is_not_read_whole_to_recheck_a_hit(tmp_path):
    """A file indexed small that grew huge was read whole (and cut into tiers) by search,
    context mode and read: a 100 MB log took 48 s and 1.5 GB. Grown past --max-filesize,
    its hits are dropped as stale (the next `ov index` leaves it out) and read says why."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"notes.md": "# Keepers\n\nKeepers polished brass every evening.\n",
                                      "other.md": "# Other\n\ntides\n", ".ov/config.toml": "max-filesize = 4096\n"})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    with open(root / "notes.md", "a") as f:
        f.write("log line: keepers polished brass\n" * 2000)  # 66 KB, past the 4 KB cap
    r = run_inprocess("search", "--search-type", "keywords", "keepers polished brass", "-o", "json",
                      cwd=root, env=env)
    assert r.json["result"]["hits"] == [] and r.json["result"]["stale"] == 1, r.out
    r = run_inprocess("search", "--mode", "context", "keepers polished brass", "-o", "json", cwd=root, env=env)
    assert "notes.md" not in [e["uri"] for e in r.json["result"]["entries"]], r.out
    r = run_inprocess("read", "notes.md", "--level", "0", "-o", "json", cwd=root, env=env)
    assert r.code == 2 and "max-filesize" in r.json["error"]["message"], r.out


def test_a_scope_that_names_nothing_indexed_says_so(tmp_path):
    """`-u` naming an ignored file answered "no results" with no warning (rg finds the
    match); an `--exclude-uri` naming nothing left nothing out silently; a result's uri
    (root-relative) handed back as --exclude-uri from a subfolder named a file below it,
    and nothing was left out. Each is said, and the uri is taken from the root."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {".gitignore": "*.log\n", "x.log": "needle log\n",
                                      "docs/a.md": "needle doc\n", "src/b.py": "needle = 1\n"})
    (root / ".git").mkdir(exist_ok=True)
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    r = run_inprocess("search", "needle", "-u", "x.log", "-o", "json", cwd=root, env=env)
    assert r.code == 1 and any(w.startswith("-u x.log: no indexed file") for w in r.json["result"]["warnings"])
    kw = ["--search-type", "keywords", "-o", "json"]
    r = run_inprocess("search", "needle", *kw, "--exclude-uri", "src/b.py", cwd=root / "docs", env=env)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["a.md"] and r.json["result"]["warnings"] == [], r.out
    r = run_inprocess("search", "needle", *kw, "--exclude-uri", "nope.txt", cwd=root / "docs", env=env)
    assert any("nope.txt: no such file or folder" in w for w in r.json["result"]["warnings"]), r.out
    r = run_inprocess("search", "needle", *kw, "-u", "docs", cwd=root, env=env)
    assert r.json["result"]["warnings"] == [], r.out


def test_a_tier_hit_in_text_names_its_tier_not_a_line(tmp_path):
    """`-L 0`/`-L 1` hits printed `path:1: text`, which says the file's first line holds
    the text (its line 1 was `---` or a docstring's quotes). They print `path: [abstract]`
    or `path: [overview]` and the tier's best line."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"src/mod.py": '"""Parses quokka headers."""\n\n\ndef parse_quokka(s):\n'
                                                    '    return s\n\n\ndef other():\n    pass\n'})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", cwd=root, env=env).code == 0
    out = run_inprocess("search", "-L", "0", "--search-type", "keywords", "quokka", cwd=root, env=env).out
    assert out.startswith("src/mod.py: [abstract] Parses quokka headers."), out
    out = run_inprocess("search", "-L", "1", "--search-type", "keywords", "parse_quokka", cwd=root, env=env).out
    assert out.startswith("src/mod.py: [overview] ") and "parse_quokka" in out.splitlines()[0], out


def test_a_file_indexed_under_a_larger_size_cap_flag_keeps_its_hits_when_it_grows(tmp_path):
    """The recheck's cap is the one the index was built with (`ov index --max-filesize`),
    not the tree's config: a 1.5 MB file indexed under a 5 MB flag lost its hits, and read
    refused it, once it grew by a byte."""
    from conftest import make_tree, run_inprocess

    root = make_tree(tmp_path / "t", {"big.log": "zanzibar quokka notes\n\n" + "alpha beta gamma\n" * 90_000})
    env = {"OV_EMBEDDER": "hash"}
    assert run_inprocess("index", ".", "--no-embed", "--max-filesize", "5000000", cwd=root, env=env).code == 0
    with open(root / "big.log", "a") as f:
        f.write("appended line\n")
    r = run_inprocess("search", "zanzibar quokka", "--search-type", "keywords", "-o", "json", cwd=root, env=env)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["big.log"], r.out
    assert run_inprocess("read", "big.log", "--level", "0", cwd=root, env=env).code == 0


def test_an_empty_index_says_why_it_may_be_empty(tmp_path):
    """In a home folder whose dotfiles repository ignores `*`, a first search indexed
    nothing (rg: "No files were searched") and answered no results without a word."""
    from conftest import make_tree, run_inprocess

    home = make_tree(tmp_path / "h", {".gitignore": "*\n", "proj/src/a.py": "hello = 1\n"})
    (home / ".git").mkdir(exist_ok=True)
    r = run_inprocess("search", "hello", "-o", "json", cwd=home / "proj",
                      env={"OV_EMBEDDER": "hash", "OV_BACKGROUND": "0", "HOME": str(home)})
    assert r.code == 1 and r.json["result"]["hits"] == [], r.out
    assert any(w.startswith("the index holds no file") and str(home) in w for w in r.json["result"]["warnings"]), r.out


def test_t_h_is_rgs_headers_in_grep_and_search(ov, tree):
    """`-t h` is ripgrep's type (`*.h`, `*.hpp`), not the `c` type a `.h` file is stored
    under: a `.c` file holding the word is not among the hits of either command."""
    root = build(tree, {"inc/list.h": "struct list_head { int alloc_count; };\n",
                        "src/list.c": "int alloc_count = 0; /* list alloc */\n",
                        "src/vec.hpp": "class Vec { int alloc_count; };\n",
                        "notes.md": "# alloc\n\nalloc_count notes\n"})
    r = ov("grep", "-t", "h", "alloc_count", "-o", "json", cwd=root)
    assert sorted(m["path"] for m in r.json["result"]["matches"]) == ["inc/list.h", "src/vec.hpp"]
    for stype in ("keywords", "hybrid"):
        r = ov("search", "alloc_count", "-t", "h", "--search-type", stype, "-o", "json", cwd=root)
        assert sorted(h["path"] for h in r.json["result"]["hits"]) == ["inc/list.h", "src/vec.hpp"], stype
    r = ov("search", "alloc_count", "-t", "c", "--search-type", "keywords", "-o", "json", cwd=root)
    assert sorted(h["path"] for h in r.json["result"]["hits"]) == ["inc/list.h", "src/list.c"]


@pytest.mark.parametrize("name,inside,outside", [("h", "a.hpp", "a.c"), ("less", "a.less", "a.css"),
                                                 ("sass", "a.scss", "a.less"), ("zsh", ".zshrc", "a.sh")])
def test_rgs_narrower_type_names_select_their_files_alone(name, inside, outside):
    """rg's names for a part of a wider type (`h` of `c`, `less` and `sass` of `css`, `zsh`
    of `sh`) select that part, as in rg, not the wider type an extension would name."""
    from ov.kinds import type_matcher

    keep = type_matcher([name])
    assert keep(f"d/{inside}") and not keep(f"d/{outside}")


@pytest.mark.parametrize("name,inside,outside", [("asm", "runtime/asm_amd64.s", "a.c"), ("asm", "boot.S", "a.sh"),
                                                 ("asm", "x.asm", "x.as"), ("awk", "f.awk", "f.sed"),
                                                 ("ada", "m.adb", "m.ad")])
def test_rgs_type_names_for_assembly_and_more_are_known(name, inside, outside):
    """`-t asm` was unknown (a Go tree holds hundreds of `.s` files); rg's asm, awk and ada."""
    from ov.kinds import type_matcher

    keep = type_matcher([name])
    assert keep(inside) and not keep(outside)


@pytest.mark.parametrize("query", ["!!!", '"*:()', "@ ++"])
def test_a_query_of_only_symbols_says_keywords_could_not_search_it(tmp_path, query):
    """`ov search '!!!' --search-type keywords` answered no hits without a word, which
    reads as "nothing matched"; a query with a word keeps no such warning."""
    root = make_tree(tmp_path / "t", {"a.md": "# Bang\n\nbang bang !!! here\n"})
    env = {"OV_EMBEDDER": "hash", "OV_BACKGROUND": "0"}
    r = run_inprocess("search", query, "--search-type", "keywords", "-o", "json", cwd=root, env=env)
    assert r.code == 1 and r.json["result"]["hits"] == [], r.out
    assert any("no word the keyword index can search" in w for w in r.json["result"]["warnings"]), r.out
    r = run_inprocess("search", "bang", "--search-type", "keywords", "-o", "json", cwd=root, env=env)
    assert r.code == 0 and not any("no word" in w for w in r.json["result"]["warnings"]), r.out


def test_search_type_context_points_to_the_mode(tmp_path):
    """`--search-type context` (context is a mode) said only "use hybrid, keywords, lexical
    or semantic" (a review on a Go tree)."""
    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nalpha\n"})
    r = run_inprocess("search", "alpha", "--search-type", "context", "-o", "json", cwd=root,
                      env={"OV_EMBEDDER": "hash", "OV_BACKGROUND": "0"})
    assert r.code == 2 and "--mode context" in r.json["error"]["message"], r.out


@pytest.mark.model
def test_a_first_page_of_weak_hits_says_so_in_text(ov, tree):
    """Text shows no scores: a query of words no file holds still lists the nearest files,
    and they look like answers. The notice gives the best hit's score and what it means;
    a query the tree answers, a next page and JSON print none."""
    root = build(tree)
    r = ov("search", "qwxzv blorpt frandle", cwd=root)
    assert r.code == 0 and r.out.strip()
    assert "low scores: the best hit scores" in r.err, r.err
    best = ov("search", "qwxzv blorpt frandle", "-o", "json", cwd=root).json["result"]["hits"][0]["score"]
    assert best < 0.01
    said = "under 0.001" if best < 0.001 else f"{best:.3f}"
    assert f"the best hit scores {said}, the estimated chance" in r.err
    r = ov("search", "qwxzv blorpt frandle", "-o", "json", cwd=root)
    assert "low scores:" not in r.err
    for cmd in ("search", "find"):
        r = ov(cmd, "open a network socket to a host", cwd=root)
        assert r.code == 0 and "src/net.py" in r.out and "low scores:" not in r.err, r.err
    r = ov("find", "qwxzv blorpt frandle", "-n", "1", cwd=root)
    assert "low scores:" in r.err and "more hits: add --cursor" in r.err
    cursor = r.err.split("--cursor ")[1].split()[0]
    r = ov("find", "qwxzv blorpt frandle", "-n", "1", "--cursor", cursor, cwd=root)
    assert r.code == 0 and "low scores:" not in r.err, r.err
