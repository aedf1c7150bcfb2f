"""Leaving paths out by glob: `--exclude-uri GLOB` on every command that takes it, and
`-g/--glob` on `find` and `search`, read as `ov grep -g` reads its globs.

A review on the Go standard library: 56 of 180 keyword hits were `_test.go` or
`testdata/` files, `--exclude-uri '*_test.go'` warned "no such file or folder" and left
them in, and `ov search -g` was "No such option". Each test runs the command line on a
real tree (the small deterministic embedder) and asks what a user would see.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import make_tree, run_inprocess

GO = {
    "net/http/cookie.go": "package http\n\n// cookie parsing of the Set-Cookie header\nfunc readCookies() {}\n",
    "net/http/cookie_test.go": "package http\n\n// cookie parsing tests\nfunc TestReadCookies() {}\n",
    "net/http/testdata/cookie.txt": "cookie parsing fixture\n",
    "net/url/url.go": "package url\n\n// cookie parsing helpers for URLs\nfunc parse() {}\n",
    "net/url/url_test.go": "package url\n\n// cookie parsing in url tests\nfunc TestParse() {}\n",
    "cmd/vendor/golang.org/x/net/cookie.go": "package net\n\n// vendored cookie parsing\n",
    "README.md": "# Go\n\nNothing about the query here.\n",
}
TYPES = ("keywords", "semantic", "hybrid")


def _indexed(tmp_path, files=GO, *extra):
    root = make_tree(tmp_path / "go", files)
    r = run_inprocess("index", ".", *extra, cwd=root)
    assert r.code == 0, r.err
    return root


def _hits(root, *args, cwd=None):
    r = run_inprocess("search", *args, "-n", "50", "-o", "json", cwd=cwd or root)
    assert r.code in (0, 1), r.out + r.err
    res = r.json["result"]
    return [h["path"] for h in res["hits"]], res["warnings"]


def _is_test(p: str) -> bool:
    return p.endswith("_test.go") or "testdata/" in p


@pytest.mark.parametrize("stype", TYPES)
def test_exclude_uri_takes_a_glob_in_every_search_type(tmp_path, stype):
    root = _indexed(tmp_path)
    kw = ("cookie parsing", "--search-type", stype)
    every, _ = _hits(root, *kw)
    assert any(p.endswith("_test.go") for p in every)
    hits, warnings = _hits(root, *kw, "--exclude-uri", "*_test.go")
    assert hits and not any(p.endswith("_test.go") for p in hits), hits
    assert set(hits) == {p for p in every if not p.endswith("_test.go")}
    assert warnings == []
    # folders by glob, at any depth (`testdata/` and `vendor`, with no glob character, are paths)
    hits, warnings = _hits(root, *kw, "--exclude-uri", "*_test.go", "--exclude-uri", "**/testdata",
                           "--exclude-uri", "**/vendor/")
    assert set(hits) == {p for p in every if not _is_test(p) and "vendor/" not in p} and warnings == []
    assert {"net/http/cookie.go", "net/url/url.go"} <= set(hits)


def test_find_takes_exclude_uri_globs_and_g(tmp_path):
    root = _indexed(tmp_path)
    r = run_inprocess("find", "cookie parsing", "--exclude-uri", "*_test.go", "-g", "!vendor/",
                      "-n", "50", "-o", "json", cwd=root)
    assert r.code == 0, r.out + r.err
    paths = [h["path"] for h in r.json["result"]["hits"]]
    assert paths and not any(p.endswith("_test.go") or "vendor/" in p for p in paths)


def test_g_keeps_or_leaves_out_as_ripgrep_does(tmp_path):
    root = _indexed(tmp_path)
    kw = ("cookie parsing", "--search-type", "keywords")
    hits, _ = _hits(root, *kw, "-g", "*_test.go")
    assert sorted(hits) == ["net/http/cookie_test.go", "net/url/url_test.go"]
    hits, _ = _hits(root, *kw, "-g", "!*_test.go", "-g", "!testdata/", "--glob", "!vendor/")
    assert sorted(hits) == ["net/http/cookie.go", "net/url/url.go"]
    # the last glob that matches decides
    hits, _ = _hits(root, *kw, "-g", "*.go", "-g", "!*_test.go")
    assert sorted(hits) == ["cmd/vendor/golang.org/x/net/cookie.go", "net/http/cookie.go", "net/url/url.go"]
    hits, _ = _hits(root, *kw, "-g", "!*_test.go", "-g", "url_test.go")
    assert hits == ["net/url/url_test.go"]  # an include glob keeps only what some glob takes
    # an --exclude-uri glob is never taken back by a -g
    r = run_inprocess("search", *kw, "-g", "*_test.go", "--exclude-uri", "*_test.go", "-o", "json", cwd=root)
    assert r.code == 1 and r.json["result"]["hits"] == [], r.out


def test_text_output_and_the_fast_path(tmp_path):
    """The command line's own spelling, in text mode: no warning, no test file."""
    root = _indexed(tmp_path)
    r = run_inprocess("search", "cookie parsing", "--search-type", "keywords", "--exclude-uri", "*_test.go",
                      "-g", "!testdata", cwd=root)
    assert r.code == 0 and "warning" not in r.err, r.err
    assert "_test.go" not in r.out and "testdata" not in r.out and "net/http/cookie.go" in r.out


@pytest.mark.parametrize("stype", TYPES)
def test_globs_filter_before_the_limit(tmp_path, stype):
    """Forty test files say the query many times and two small files once: `-n 2` with
    the tests left out still gets both, and a page after them stays without tests."""
    files = {f"pkg/t{i:02}_test.go": "needle needle needle needle needle\n" for i in range(40)}
    files["pkg/a.go"] = "// one needle\n" + "filler words\n" * 40
    files["pkg/b.go"] = "// another needle\n" + "other filler\n" * 40
    files["pkg/c.go"] = "// a third needle\n" + "more filler\n" * 40
    root = _indexed(tmp_path, files)
    for flags in (["--exclude-uri", "*_test.go"], ["-g", "!*_test.go"], ["-g", "*.go", "-g", "!pkg/t*"]):
        r = run_inprocess("search", "needle", "--search-type", stype, "-n", "2", *flags, "-o", "json", cwd=root)
        assert r.code == 0, r.out + r.err
        first = [h["path"] for h in r.json["result"]["hits"]]
        assert len(first) == 2 and not any(_is_test(p) for p in first), (flags, first)
        r = run_inprocess("search", "needle", "--search-type", stype, "-n", "2", *flags, "-o", "json",
                          "--cursor", r.json["result"]["next_cursor"], cwd=root)
        second = [h["path"] for h in r.json["result"]["hits"]]
        assert sorted(first + second) == ["pkg/a.go", "pkg/b.go", "pkg/c.go"], (flags, second)


def test_context_mode_takes_both(tmp_path):
    root = _indexed(tmp_path)
    for flags in (["--exclude-uri", "*_test.go", "--exclude-uri", "**/testdata"],
                  ["-g", "!*_test.go", "-g", "!testdata/"]):
        r = run_inprocess("search", "cookie parsing", "--mode", "context", *flags, "-o", "json", cwd=root)
        assert r.code == 0, r.out + r.err
        uris = [e["uri"] for e in r.json["result"]["entries"]]
        assert "net/http/cookie.go" in uris and not any(_is_test(u) for u in uris), (flags, uris)
        assert not any("glob" in w or "exclude-uri" in w for w in r.json["result"].get("warnings", []))


def test_a_glob_that_matches_no_indexed_file_says_so(tmp_path):
    root = _indexed(tmp_path)
    kw = ("cookie parsing", "--search-type", "keywords")
    hits, warnings = _hits(root, *kw, "--exclude-uri", "*_tset.go")
    assert len(hits) == 6 and warnings == [
        "--exclude-uri *_tset.go: no indexed file matches this glob, so nothing was left out for it"]
    hits, warnings = _hits(root, *kw, "-g", "!*.rs")
    assert warnings == ["-g !*.rs: no indexed file matches *.rs, so nothing was left out for it"]
    hits, warnings = _hits(root, *kw, "-g", "src/**")
    assert hits == [] and len(warnings) == 1 and warnings[0].startswith("-g src/**: no indexed file matches it")
    r = run_inprocess("search", *kw, "-g", "!*.rs", cwd=root)
    assert "ov: warning: -g !*.rs: no indexed file matches *.rs" in r.err


def test_a_name_with_no_glob_character_is_a_path_and_the_warning_says_the_glob(tmp_path):
    root = _indexed(tmp_path)
    hits, warnings = _hits(root, "cookie parsing", "--search-type", "keywords", "--exclude-uri", "testdata/")
    assert "net/http/testdata/cookie.txt" in hits
    assert warnings == ["--exclude-uri testdata: no such file or folder, so nothing was left out for it "
                        "(a glob such as '**/testdata' leaves out such a name at any depth)"]
    hits, warnings = _hits(root, "cookie parsing", "--search-type", "keywords", "--exclude-uri", "**/testdata")
    assert "net/http/testdata/cookie.txt" not in hits and warnings == []


def test_a_path_that_exists_keeps_its_meaning(tmp_path):
    """`app/[id]` is a folder of a Next.js tree, not a class of one character."""
    root = _indexed(tmp_path, {"app/[id]/page.md": "needle in the page\n", "app/i/x.md": "needle too\n",
                               "app/other.md": "a needle\n"})
    hits, warnings = _hits(root, "needle", "--search-type", "keywords", "--exclude-uri", "app/[id]")
    assert sorted(hits) == ["app/i/x.md", "app/other.md"] and warnings == []
    r = run_inprocess("grep", "-l", "needle", "--exclude-uri", "app/[id]", cwd=root)
    assert r.out.splitlines() == ["app/i/x.md", "app/other.md"], r.out + r.err


def test_globs_are_read_from_the_current_folder_as_grep_reads_them(tmp_path):
    """The same globs leave out the same files in `ov search` as in `ov grep -l`, from the
    root and from a folder below it (rg reads `-g` from the current folder)."""
    root = _indexed(tmp_path)
    cases = [["--exclude-uri", "*_test.go"], ["--exclude-uri", "http/*"], ["-g", "/url/**"],
             ["-g", "*.go", "-g", "!*_test.go"], ["-g", "cookie*"], ["-g", "!**/testdata/**"],
             ["-g", "http/**", "--exclude-uri", "*.txt"], ["--exclude-uri", "net/*/*_test.go"]]
    for where, top in ((root, "."), (root / "net", "..")):
        for flags in cases:
            r = run_inprocess("grep", "-l", "cookie parsing", top, *flags, cwd=where)
            grep = sorted(r.out.splitlines())
            hits, _ = _hits(root, "cookie parsing", "--search-type", "keywords", *flags, cwd=where)
            assert sorted(hits) == grep, (where, flags)


def test_the_size_cap_warning_leaves_out_what_the_globs_do(tmp_path):
    """Files over --max-filesize are named in every ranked answer whose scope holds them
    (`Filters.holds_path`); a big test file left out by glob is not."""
    files = dict(GO)
    files["net/http/big_test.go"] = "// cookie parsing\n" + "x = 1\n" * 400
    root = _indexed(tmp_path, files, "--max-filesize", "1K")
    kw = ("cookie parsing", "--search-type", "keywords")
    _, warnings = _hits(root, *kw)
    assert any("over --max-filesize" in w for w in warnings)
    for flags in (["--exclude-uri", "*_test.go"], ["-g", "!big_test.go"], ["-g", "net/url/**"]):
        _, warnings = _hits(root, *kw, *flags)
        assert not any("over --max-filesize" in w for w in warnings), (flags, warnings)
    _, warnings = _hits(root, *kw, "-g", "net/http/*")
    assert any("over --max-filesize" in w for w in warnings)


def test_the_filters_sql_and_holds_path_agree(tmp_path):
    """`Filters.holds_path` (the size-cap warning) answers as the SQL every branch runs."""
    from ov.globs import read_from
    from ov.store import Filters
    from ov.store.queries import Store

    root = _indexed(tmp_path)
    store = Store.open(root / ".ov" / "index.db", readonly=True)
    try:
        every = store.paths_where(Filters())
        for where in (root, root / "net"):
            at = read_from(os.fspath(root), os.fspath(where))
            for f in (Filters(exclude_globs=("*_test.go",), glob_at=at), Filters(globs=("http/**",), glob_at=at),
                      Filters(globs=("*.go", "!*_test.go"), exclude_globs=("cmd",), glob_at=at),
                      Filters(uris=("net",), globs=("!testdata/",), glob_at=at)):
                assert store.paths_where(f) == {p for p in every if f.holds_path(p)}, f
    finally:
        store.close()


def test_the_vector_branch_lists_only_rows_with_a_vector(tmp_path):
    """With a glob, the KNN is handed the passing rows that have a vector, not every passing
    row (2.9 million on the kernel with 2 % of its vectors); the answers of the glob,
    remembered per path, are the same when asked again."""
    from ov.globs import read_from
    from ov.store import Filters
    from ov.store.queries import Store

    root = _indexed(tmp_path, GO, "--no-embed")
    store = Store.open(root / ".ov" / "index.db", readonly=True)
    try:
        f = Filters(exclude_globs=("*_test.go",), glob_at=read_from(os.fspath(root), os.fspath(root)))
        passing = store.allowed_chunk_ids(f)
        assert passing and store.allowed_chunk_ids(f) == passing
        assert store.allowed_chunk_ids(f, with_vector=True) == []
        assert store.vector_search(b"\0" * 4 * 384, f, 10) == []
    finally:
        store.close()
    assert run_inprocess("index", ".", cwd=root).code == 0  # (re-cut to the model's window)
    store = Store.open(root / ".ov" / "index.db", readonly=True)
    try:
        passing = store.allowed_chunk_ids(f)
        assert passing and sorted(store.allowed_chunk_ids(f, with_vector=True)) == sorted(passing)
    finally:
        store.close()


BAD = [
    (["--exclude-uri", "a[b"], "exclude_uri", "--exclude-uri a[b: invalid glob: unclosed '['"),
    (["--exclude-uri", "!*_test.go"], "exclude_uri", "--exclude-uri !*_test.go: an --exclude-uri glob"),
    (["-g", "a[b"], "glob", "-g a[b: invalid glob: unclosed '['"),
    (["--glob", "{a,b"], "glob", "-g {a,b: invalid glob: unclosed '{'"),
]


@pytest.mark.parametrize("flags,field,message", BAD)
@pytest.mark.parametrize("command", [["search", "q"], ["search", "q", "--mode", "context"], ["find", "q"]])
def test_a_bad_glob_is_invalid_pattern_before_anything_is_built(tmp_path, flags, field, message, command):
    root = make_tree(tmp_path / "t", {"a.md": "q\n"})
    r = run_inprocess(*command, *flags, "-o", "json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.err, r.out + r.err
    err = r.json["error"]
    assert (err["code"], err["field"]) == ("invalid_pattern", field) and err["message"].startswith(message), err
    assert not (root / ".ov").exists()  # refused before a first use built the index
    r = run_inprocess(*command, *flags, cwd=root)
    assert r.code == 2 and r.out == "" and r.err.startswith("ov: error[invalid_pattern]: " + message), r.err


@pytest.mark.parametrize("command", [["grep", "q"], ["grep", "--files"], ["glob", "*"]])
def test_grep_and_glob_refuse_a_bad_exclude_uri_glob(tmp_path, command):
    root = make_tree(tmp_path / "t", {"a.md": "q\n"})
    for flags, _, message in BAD[:2]:
        r = run_inprocess(*command, *flags, "-o", "json", cwd=root)
        assert r.code == 2 and "Traceback" not in r.err, r.out + r.err
        assert r.json["error"]["code"] == "invalid_pattern" and r.json["error"]["field"] == "exclude_uri"
        assert r.json["error"]["message"].startswith(message)


def test_grep_and_glob_take_exclude_uri_globs(tmp_path):
    root = make_tree(tmp_path / "go", GO)
    r = run_inprocess("grep", "-l", "cookie", "--exclude-uri", "*_test.go", "--exclude-uri", "**/testdata",
                      "--exclude-uri", "**/vendor", cwd=root)
    assert r.code == 0 and r.out.splitlines() == ["net/http/cookie.go", "net/url/url.go"], r.out + r.err
    r = run_inprocess("grep", "--files", "--exclude-uri", "*.go", cwd=root)
    assert r.out.splitlines() == ["README.md", "net/http/testdata/cookie.txt"], r.out + r.err
    r = run_inprocess("glob", "**/*.go", "--exclude-uri", "*_test.go", "--exclude-uri", "cmd", cwd=root)
    assert r.out.splitlines() == ["net/http/cookie.go", "net/url/url.go"], r.out + r.err
    # a file named on the command line is left out by a glob, as by a path
    r = run_inprocess("grep", "cookie", "net/url/url_test.go", "net/url/url.go", "--exclude-uri", "*_test.go",
                      cwd=root)
    assert r.out.splitlines() == ["net/url/url.go:3:// cookie parsing helpers for URLs"], r.out + r.err
    # read from the current folder, as -g: `http/*` names net/http's files from net/
    r = run_inprocess("grep", "-l", "cookie", "--exclude-uri", "http/*", "-o", "json", cwd=root / "net")
    assert r.json["result"]["paths"] == ["url/url.go", "url/url_test.go"], r.out


def test_the_python_api_takes_both(tmp_path):
    import ov

    root = _indexed(tmp_path)
    with ov.Index.open(root) as ix:
        res = ix.search("cookie parsing", search_type="keywords", limit=50, exclude_uri="*_test.go",
                        globs=["!testdata/"])
        assert sorted(h.path for h in res.hits) == ["cmd/vendor/golang.org/x/net/cookie.go",
                                                    "net/http/cookie.go", "net/url/url.go"]
        with pytest.raises(ov.OvError) as e:
            ix.search("cookie", globs=["a[b"])
        assert e.value.code == "invalid_pattern"


def test_json_lines_summary_carries_the_glob_warning(tmp_path):
    root = _indexed(tmp_path)
    r = run_inprocess("search", "cookie parsing", "--search-type", "keywords", "--exclude-uri", "*.rs",
                      "-o", "jsonl", cwd=root)
    summary = [json.loads(line) for line in r.out.splitlines()][-1]
    assert summary["type"] == "summary" and any("*.rs: no indexed file" in w for w in summary["warnings"])


@pytest.mark.parametrize("stype", TYPES)
def test_brace_globs_keep_and_leave_out_in_every_search_type(tmp_path, stype):
    """`--exclude-uri '*.{ex,exs}'` left both kinds in without a word, and `-g` with braces
    matched nothing (a review of a polyglot repository): braces are rg's alternations."""
    files = {"lib/retry.ex": "defmodule Retry do\n  # retry policy for payments\nend\n",
             "test/retry_test.exs": "defmodule RetryTest do\n  # retry policy for payments tests\nend\n",
             "docs/retry.md": "# Retry\n\nThe retry policy for payments.\n"}
    root = _indexed(tmp_path, files)
    kw = ("retry policy for payments", "--search-type", stype)
    every, _ = _hits(root, *kw)
    assert set(every) == set(files)
    hits, _ = _hits(root, *kw, "-g", "*.{ex,exs}")
    assert set(hits) == {"lib/retry.ex", "test/retry_test.exs"}
    hits, warnings = _hits(root, *kw, "--exclude-uri", "*.{ex,exs}")
    assert hits == ["docs/retry.md"] and warnings == []
    hits, _ = _hits(root, *kw, "--exclude-uri", "lib/retry.{ex,md}")  # no `*`: still a glob
    assert set(hits) == {"test/retry_test.exs", "docs/retry.md"}
