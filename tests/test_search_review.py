"""Edge cases of the index-backed paths found in review: grep's trigram prefilter with
literals longer than a piece of a cut line, and keyword queries over odd words."""

from __future__ import annotations

import random

import pytest

from conftest import run_subprocess
from ov.query import worded
from ov.store import Store


def _matches(ov, root, args):
    r = ov("grep", "-o", "json", "--node-limit", "100000", *args, cwd=root)
    assert r.code in (0, 1), r.out + r.err
    return [(m["path"], m["line"], m["content"]) for m in r.json["result"]["matches"]]


def _cuts(root, path):
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        return st.rows("SELECT c.start, c.end FROM chunks c JOIN files f ON f.id = c.file_id "
                       "WHERE c.level = 2 AND f.path = ? ORDER BY c.start", (path,))


@pytest.mark.parametrize("alphabet", ["abcdefghijklmnopqrstuvwxyz0123456789+/", "a1b2c3d4e5+",
                                      "{}[]();,.:=<>!&|"])
def test_grep_literal_spanning_several_pieces_of_a_cut_line(ov, tree, alphabet):
    """A literal with no whitespace that covers whole pieces of a line cut into many (a
    long base64 or minified run): neither of its halves lies in one keyword row, yet the
    file holds it."""
    from ov.chunk import DATA_PIECE_CHARS, encoded_blob

    rnd = random.Random(7)
    line = "".join(rnd.choice(alphabet) for _ in range(20000))
    data = encoded_blob(line)  # encoded data is cut in pieces of DATA_PIECE_CHARS, not of tokens
    if data:
        line = "".join(rnd.choice(alphabet) for _ in range(6 * DATA_PIECE_CHARS + 1000))
    root = tree({"blob.txt": "header\n" + line + "\n", "other.txt": "nothing here\n"})
    assert ov("index", root, "--no-embed").code == 0
    cuts = _cuts(root, "blob.txt")
    assert len(cuts) > (5 if data else 10)
    base = len("header\n")
    spans = [(s - base, e - base) for s, e in cuts[1:]]  # in `line`
    lits = [line[1000:3000]]
    for k in (1, len(spans) // 2, len(spans) - 3):
        (s1, e1), e3 = spans[k], spans[k + 2][1]
        # one whole piece and a little on each side; three pieces
        lits += [line[s1 - 5:e1 + 5], line[s1 - 1:e1 + 1], line[s1 - 3:e3 + 7]]
    for lit in lits:
        args = ["-F", lit]
        assert _matches(ov, root, args) == _matches(ov, root, ["--no-index", *args]) != []


def _pages(ov, root, args, size):
    got, cursor = [], None
    while True:
        r = ov(*args, "-n", str(size), *(["--cursor", cursor] if cursor else []), cwd=root)
        assert r.code in (0, 1), r.err
        got += [(h["path"], h["excerpt"]["start"], h["score"]) for h in r.json["result"]["hits"]]
        cursor = r.json["result"].get("next_cursor")
        if not cursor:
            return got


def _marks(i: int) -> str:
    """Punctuation unique to `i`: texts that tie in every branch (no word differs) and are
    not word for word the same (those are folded into one hit: ov.engine `_fold`)."""
    return "!" * (1 + i % 10) + "?" * (1 + i // 10)


@pytest.mark.parametrize("search_type,query", [("keywords", "zebra"), ("semantic", "zebra"),
                                               ("hybrid", "zebra"), ("keywords", "数")])
def test_pages_of_tied_hits_neither_repeat_nor_skip(ov, tree, search_type, query):
    """100 files of the same text tie in every branch (a 1-character CJK query goes through
    the substring scan); re-indexing some gives them later chunk ids, so the index's order
    of the tie (by id) is not the result's (by path)."""
    root = tree({f"f{i:03d}.txt": f"alpha beta 数 zebra{_marks(i)}\n" for i in range(100)})
    assert ov("index", root).code == 0
    for i in range(12):
        (root / f"f{i:03d}.txt").write_text(f"alpha beta 数 zebra {_marks(i)}\n")
    assert ov("index", root).code == 0
    args = ("search", query, "--search-type", search_type, "-o", "json")
    paged = _pages(ov, root, args, 10)
    assert len(paged) == 100
    assert [p for p, _, _ in paged] == [f"f{i:03d}.txt" for i in range(100)]
    assert paged[:50] == _pages(ov, root, args, 50)[:50]


def test_the_line_shown_is_the_one_that_matched_without_accents_or_inside_cjk(ov, tree):
    """The keyword index folds accents and finds CJK words inside a run; the line marked
    as the match did neither, and showed the passage's first line (the matching one left
    out of the excerpt)."""
    root = tree({"cuisine.md": "# Notes de cuisine\n\nPremière ligne.\nDeuxième ligne.\nTroisième ligne.\n"
                               "Quatrième ligne.\nFaire fondre le beurre dans la poêle.\n",
                 "ml.md": "# 机器学习笔记\n\n第一段：数据准备。\n梯度下降是一种优化算法，用于最小化损失函数。\n"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    for query, want in (("poele", "cuisine.md:7: Faire fondre"), ("POÊLE", "cuisine.md:7: Faire fondre"),
                        ("优化算法", "ml.md:4: 梯度下降")):
        r = ov("search", query, "--search-type", "keywords", cwd=root)
        assert r.code == 0 and r.out.startswith(want), (query, r.out)


def test_the_line_shown_holds_the_word_the_stemmer_matched(ov, tree):
    """The keyword index stems "configuration" and "configured" alike (Porter); the line
    shown knew only plural and -ing/-ed endings, and showed the note's title."""
    root = tree({"server.md": "# Server notes\n\nThe server starts on boot.\nIt listens on port 8080.\n"
                              "Logs go to syslog.\nThe proxy is configured by the ops team.\n",
                 "words.md": "# Words\n\nA list of words.\nThat was a nonsensical remark.\n",
                 "other.md": "# Other\n\nNothing about cats.\n",
                 # the longer endings only break ties: "funct" must not pick the import
                 "util.py": "import functools\n\n\ndef wrap(f):\n    \"\"\"Wrap a function in a cache.\"\"\"\n"
                            "    return functools.cache(f)\n",
                 "defs.h": "#define MAX 10\n/* the definition of the limit */\nint limit;\n"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    for query, want in (("configuration", "server.md:6: The proxy is configured"),
                        ("nonsense", "words.md:4: That was a nonsensical"),
                        ("function", "util.py:5: \"\"\"Wrap a function"),
                        ("definition", "defs.h:2: /* the definition")):
        r = ov("search", query, "--search-type", "keywords", cwd=root)
        assert r.code == 0 and r.out.startswith(want), (query, r.out)


def test_an_answer_says_when_the_tree_moved_since_the_index(ov, tree):
    """After a `git checkout` brought new files, a search answered nothing, exit 1, with no
    word that the index was behind; a CI job reading the JSON could not tell. And right
    after an edit, a search answered confident hits elsewhere from the old text, while
    `ov status` knew (a review on a JS project): every answer says so now."""
    root = tree({"a.txt": "alpha\n", "b.txt": "beta alpha\n", "c.txt": "gamma\n"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    r = ov("search", "alpha", "-o", "json", cwd=root)
    assert r.code == 0 and not any("changed since" in w for w in r.json["result"]["warnings"]), r.out
    (root / "new.txt").write_text("zebrafish\n")
    r = ov("search", "zebrafish", "-o", "json", cwd=root)
    moved = "the tree changed since the last `ov index` ({}): the ranking read the indexed text"
    assert r.code == 1 and any(moved.format("1 new file(s)") in w for w in r.json["result"]["warnings"]), r.out
    (root / "b.txt").write_text("beta alpha, and now zebrafish too\n")
    (root / "c.txt").unlink()
    r = ov("search", "alpha", "-o", "json", cwd=root)  # an answer, from the old text: said too
    assert r.code == 0 and any(moved.format("1 changed, 1 new, 1 deleted file(s)") in w
                               for w in r.json["result"]["warnings"]), r.out
    assert moved.format("1 changed, 1 new, 1 deleted file(s)") in r.err  # text mode's stderr too
    # while an indexer holds the index (a worker adding vectors for hours on a big tree, which
    # reads no file again) the answer said nothing of the edits (a review on the Go stdlib)
    import fcntl
    import os
    fd = os.open(root / ".ov" / "index.db.lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = ov("search", "alpha", "-o", "json", cwd=root)
        assert r.json["result"]["coverage"]["indexing"], r.out
        assert any(moved.format("1 changed, 1 new, 1 deleted file(s)") in w for w in r.json["result"]["warnings"]), r.out
    finally:
        os.close(fd)
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    r = ov("search", "zebrafish", "-o", "json", cwd=root)
    assert r.code == 0 and not any("changed since" in w for w in r.json["result"]["warnings"]), r.out
    # a file the ignore rules leave out now (a checkout changed the .gitignore) is still in
    # the index until `ov index`: said as `ov status` says it, not as "1 new" alone
    (root / ".ignore").write_text("a.txt\n")
    r = ov("search", "alpha", "-o", "json", cwd=root)
    assert any(moved.format("1 file(s) the ignore rules or the size cap leave out now") in w
               for w in r.json["result"]["warnings"]), r.out


def test_a_hit_won_by_its_abstract_shows_the_passage_holding_the_words(ov, tree):
    """The abstract's words sit in the first passage's keyword row and its vector speaks
    for that passage, so a code file's hit was shown at its licence header (`route.js:1:
    /*!`) while the doc comment it came from was at line 51 (a review on a JS project)."""
    head = "/*!\n * express\n * MIT Licensed\n */\n\n'use strict';\n\n" + "".join(
        f"var mod{i} = require('module-number-{i}')('router:part{i}');\n" for i in range(40))
    doc = ("\n/**\n * Calculate the shipping cost for an order, with taxes.\n */\n"
           "exports.shippingCost = function shippingCost(order) {\n  return order.weight * 2;\n};\n")
    root = tree({"route.js": head + doc, "notes.md": "# Notes\n\nnothing here\n"})
    assert ov("index", ".", cwd=root).code == 0
    assert ov("read", "route.js", "-L", "0", cwd=root).out.startswith("Calculate the shipping cost")
    for how in (("--search-type", "keywords"), ()):
        r = ov("search", "shipping cost for an order", *how, "-n", "1", cwd=root)
        assert r.code == 0 and r.out.startswith("route.js:50: * Calculate the shipping cost"), (how, r.out)
    r = ov("search", "shipping cost for an order", "--search-type", "keywords", "-n", "1", "-o", "json", cwd=root)
    hit = r.json["result"]["hits"][0]
    assert hit["start_line"] <= 50 <= hit["end_line"] and "shipping cost" in hit["excerpt"]["text"], hit
    # a query none of whose words the file holds keeps the lead passage
    r = ov("search", "express", "--search-type", "keywords", "-n", "1", "-o", "json", cwd=root)
    assert r.json["result"]["hits"][0]["start_line"] == 1


def test_the_moved_tree_check_has_bounds(ov, tree, monkeypatch):
    """The check walks the tree at every ranked answer: past BEHIND_CHECK_FILES indexed
    files only an empty answer pays for it; past BEHIND_SNIFFS unindexed files to open (a
    tree of 30,000 images) it says nothing rather than read them all at every query; a
    file replaced by a folder is deleted, not changed; `ov mcp`'s watched index is not
    walked at all."""
    from ov import api, engine

    root = tree({"a.txt": "alpha\n", "b.txt": "beta alpha\n", "c.txt": "gamma\n"})
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    (root / "new.txt").write_text("alpha again\n")
    (root / "c.txt").unlink()
    (root / "c.txt").mkdir()

    def warned(**kw) -> list[str]:
        r = ov("search", "alpha", "--search-type", "keywords", "-o", "json", cwd=root)
        assert r.code == 0, r.out
        return [w for w in r.json["result"]["warnings"] if "changed since" in w]

    assert warned() and "(1 new, 1 deleted file(s))" in warned()[0]
    monkeypatch.setattr(engine, "BEHIND_CHECK_FILES", 2)
    assert warned() == []
    monkeypatch.setattr(engine, "BEHIND_CHECK_FILES", 20_000)
    monkeypatch.setattr(engine, "BEHIND_SNIFFS", 0)
    assert warned() == []
    monkeypatch.setattr(engine, "BEHIND_SNIFFS", 1_000)
    with api.Index.open(root) as ix:
        ix.store.checks_drift = False  # as `ov mcp` sets it beside its watcher
        res = ix.search("alpha", search_type="keywords")
        assert res.hits and not [w for w in res.warnings if "changed since" in w]


@pytest.mark.parametrize("query, yes", [
    ("set a cookie on the response", True), ("how are goroutines scheduled", True),
    ("TLS handshake client certificate", True), ("What is the (default) timeout?", True),
    ("findrunnable", False), ("set cookie", False), ("how does it work", False),
    ("io.EOF reader loop", False), ("parse_args in main", False), ("HTTPServer shutdown grace", False)])
def test_a_phrase_in_words(query, yes):
    """Three words or more, two of them not stop words, none of a code's shape (an acronym
    is a word)."""
    assert worded(query) is yes


def _response_js() -> str:
    head = ("'use strict';\n\n" + "".join(f"var {n} = require('{m}');\n" for n, m in [
        ("http", "http"), ("path", "path"), ("merge", "utils-merge"), ("sign", "cookie-signature"),
        ("normalizeType", "./utils"), ("setCharset", "./utils"), ("cookie", "cookie"), ("send", "send"),
        ("vary", "vary")]) + "\n/**\n * Response prototype.\n */\n\n"
        "var res = Object.create(http.ServerResponse.prototype);\nmodule.exports = res;\n")
    body = "".join(f"""
/**
 * Write {what}.
 */

res.{name} = function {name}(value) {{
  var opts = merge({{}}, this.options);
  if (value === undefined) {{
    throw new TypeError('argument value is required');
  }}
  this.setHeader('X-{name}', String(value));
  this.end(JSON.stringify({{ value: value, opts: opts }}));
  return this;
}};
""" for name, what in [("status", "the HTTP status code"), ("links", "the Link header field"),
                       ("json", "a JSON body"), ("location", "the location header to the url")])
    setter = """
/**
 * Store a small piece of state in the browser of the visitor, signed if asked.
 */

res.remember = function remember(name, value, options) {
  var opts = merge({}, options);
  var secret = this.req.secret;
  if (opts.signed && !secret) {
    throw new Error('a secret is required to sign');
  }
  var val = typeof value === 'object' ? 'j:' + JSON.stringify(value) : String(value);
  if (opts.signed) {
    val = 's:' + sign(val, secret);
  }
  if (opts.maxAge != null) {
    opts.expires = new Date(Date.now() + opts.maxAge);
    opts.maxAge = opts.maxAge / 1000;
  }
  this.append('Set-Cookie', cookie.serialize(name, String(val), opts));
  return this;
};
"""
    return head + body + setter


@pytest.mark.model
def test_a_phrase_in_words_is_shown_by_the_passage_that_does_what_it_says(tree):
    """A review on express: `ov search "set a cookie on the response"` found response.js
    first but showed its `require` lines, whose words the keywords counted (`cookie`,
    `setCharset`, `ServerResponse`), not the function that sets the cookie; `ov find` showed
    that function. A name still shows the passage holding it."""
    root = tree({"lib/response.js": _response_js(), "lib/other.js": "function add(a, b) { return a + b; }\n"})
    assert run_subprocess(["index", "."], cwd=root).code == 0
    text = (root / "lib/response.js").read_text().splitlines()
    setter = next(i for i, ln in enumerate(text, 1) if "Set-Cookie" in ln)
    for mode in ("hybrid", "semantic"):
        r = run_subprocess(["search", "set a cookie on the response", "--search-type", mode, "-n", "1", "--json"],
                           cwd=root)
        hit = r.json["result"]["hits"][0]
        assert hit["path"] == "lib/response.js" and hit["start_line"] <= setter <= hit["end_line"], (mode, hit)
    # the keywords alone judge the `require` lines likelier: the hybrid's choice is not theirs
    r = run_subprocess(["search", "set a cookie on the response", "--search-type", "keywords", "-n", "1", "--json"],
                       cwd=root)
    assert not r.json["result"]["hits"][0]["start_line"] <= setter <= r.json["result"]["hits"][0]["end_line"]
    r = run_subprocess(["search", "setCharset", "-n", "1", "--json"], cwd=root)
    hit = r.json["result"]["hits"][0]
    assert "setCharset" in hit["excerpt"]["text"] and hit["start_line"] < setter, hit
