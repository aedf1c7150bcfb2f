"""Leaving paths out by glob: `--exclude-uri GLOB` on every command that takes it, and
`-g/--glob` on `find` and `search`, read as `ov grep -g` reads its globs.

A review on the Go standard library: 56 of 180 keyword hits were `_test.go` or
`testdata/` files, `--exclude-uri '*_test.go'` warned "no such file or folder" and left
them in, and `ov search -g` was "No such option". Each test runs the command line on a
real tree (the small deterministic embedder) and asks what a user would see.
"""

from __future__ import annotations

import os


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


