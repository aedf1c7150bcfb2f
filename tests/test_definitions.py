"""An identifier query ranks the files that define the name first (ov.query.identifier,
ov.tiers.defines, ov.rank.with_definers), and its hybrid keeps the keywords-only
probability of a hit (a name whose cosine says little).

A review on the Go standard library: `ov search WithDeadline` put context_test.go first and
context.go, which defines it, past the first three; `ov search io.EOF` scored hits holding
`io.EOF` 0.16 where keywords alone said 0.77, so `--threshold 0.5` dropped them.
"""

from __future__ import annotations

import pytest

from ov import rank
from ov.query import identifier, jargon, type_name
from ov.rank import Cand
from ov.tiers import defines


@pytest.mark.parametrize("query, expected", [
    ("WithDeadline", ("WithDeadline", None)),
    ("io.EOF", ("EOF", "io")),
    ("errors.Is", ("Is", "errors")),
    ("parse_args", ("parse_args", None)),
    ("std::vector", ("vector", "std")),
    ("PAGE_SIZE", ("PAGE_SIZE", None)),
    # a bare word in capitals is prose's and every C file's; a dotted file name is a file
    ("EOF", None), ("TODO", None), ("NULL", None), ("setup.py", None), ("README.md", None),
    ("index.html", None),
    ("  hashGrow ", ("hashGrow", None)),
    # plain words read as prose too; a question is not a name
    ("json", None), ("Attribute", None), ("gopark", None), ("how to parse json", None),
    ("node-fetch", None), ("C++", None), ("x", None),
    # a definition as written asks for its name; prose that starts so does not
    ("class UsageError", ("UsageError", None)), ("def parse", ("parse", None)),
    ("struct page", ("page", None)), ("interface Reader", ("Reader", None)),
    ("class os.PathLike", ("PathLike", "os")),
    ("class action", None), ("type annotations", None), ("def", None), ("class how to", None),
    ("class UsageError(Exception):", ("UsageError", None)), ("def parse(args)", ("parse", None)),
    ("module Reference", None), ("function Overview", None), ("type Systems", None), ("union Pacific", None),
    # ... after the modifiers code writes before it
    ("pub trait Deserializer", ("Deserializer", None)), ("pub(crate) fn spawn_inner", ("spawn_inner", None)),
    ("public static class Foo", ("Foo", None)), ("export function parseArgs", ("parseArgs", None)),
    ("pub", None), ("public transport", None), ("static class action", None),
    # after `pub` a definition is code whatever its name, after `export` with a name of a
    # code's shape or a capital; English modifiers are not enough
    ("pub const fn new", ("new", None)), ("export default function App", ("App", None)),
    ("export const useStore", ("useStore", None)), ("pub mod io", ("io", None)),
    ("export type Props", ("Props", None)), ("public static function render", None),
    ("static type checking", None), ("public function names", None), ("abstract class hierarchy", None),
    ("const value", None), ("mod loader", None), ("export function names", None),
    ("export type definitions", None), ("export const values", None), ("abstract data type definition", None),
    ("static inline function definitions", None), ("private data class members", None),
    ("const enum values", None), ("const fn pointers", None),
    ("Regex::new", ("new", "Regex")), ("tokio::spawn", ("spawn", "tokio")),
    # JavaScript's prototype is not the qualifier: the type before it is
    ("Layer.prototype.match", ("match", "Layer")), ("Array.prototype.map", ("map", "Array")),
    # Go as it is written: a type with its kind, a method with its receiver, a method expression
    ("type Client struct", ("Client", None)), ("type Handler interface {", ("Handler", None)),
    ("func (c *Client) Do", ("Do", "Client")), ("func (l *List[T]) Len", ("Len", "List")),
    ("(*Client).Do", ("Do", "Client")), ("(*http.Client).Do", ("Do", "Client")),
    ("type systems are cool", None), ("type struct", None),
    ("bufio.Scanner.Scan", ("Scan", "Scanner")),
    # a capitalised type's method named as a file ending is a method; a call as pasted is
    # its name (a review of a Python tree: `Response.json`, `raise_for_status()`, `click.echo(`)
    ("Response.json", ("json", "Response")), ("Console.log", ("log", "Console")),
    ("raise_for_status()", ("raise_for_status", None)), ("click.echo(", ("echo", "click")),
    ("render_template(name, **context)", ("render_template", None)),
    ("App.js", None), ("package.json", None), ("GIF ('87 and '89 variants)", None),
])
def test_identifier_is_one_code_name(query, expected):
    assert identifier(query) == expected


@pytest.mark.parametrize("query, expected", [
    ("Deserializer", "Deserializer"), ("Runtime", "Runtime"), ("Introduction", "Introduction"),
    # an identifier, a word in capitals or small letters, two words: not this
    ("WithDeadline", None), ("EOF", None), ("runtime", None), ("Tokio runtime", None), ("X", None),
])
def test_type_name_is_one_capitalised_word(query, expected):
    assert type_name(query) == expected


@pytest.mark.parametrize("text, path, name, defined", [
    ("package context\n\nfunc WithDeadline(parent Context, d time.Time) (Context, CancelFunc) {\n", "c.go",
     "WithDeadline", True),
    ("\tctx, cancel := WithDeadline(parent, d)\n", "c_test.go", "WithDeadline", False),
    ("func (r *Reader) Read(p []byte) (n int, err error) {\n", "r.go", "Read", True),
    ("package io\n\nvar EOF = errors.New(\"EOF\")\n", "io.go", "EOF", True),
    ("\t\treturn 0, io.EOF\n", "r.go", "EOF", False),
    ("type Mutex struct {\n", "mutex.go", "Mutex", True),
    ("class BaseEventLoop(events.AbstractEventLoop):\n", "base.py", "BaseEventLoop", True),
    ("class Proactor(BaseEventLoop):\n", "p.py", "BaseEventLoop", False),
    ("    async def staggered_race(coro_fns):\n", "s.py", "staggered_race", True),
    ("DEFAULT_TIMEOUT = 30\n", "s.py", "DEFAULT_TIMEOUT", True),
    ("if DEFAULT_TIMEOUT == 30:\n", "s.py", "DEFAULT_TIMEOUT", False),
    ("#define PAGE_SIZE 4096\n", "page.h", "PAGE_SIZE", True),
    ("static struct page *alloc_pages(gfp_t gfp, unsigned order)\n", "a.c", "alloc_pages", True),
    ("\tpage = alloc_pages(gfp, 0);\n", "a.c", "alloc_pages", False),
    ("export function debounce(fn, ms) {\n", "d.js", "debounce", True),
    ("const debounce = (fn) => {\n", "d.js", "debounce", True),
    ("pub fn parse_args(argv: &[String]) -> Args {\n", "a.rs", "parse_args", True),
    ("package time\n\nconst (\n\tNanosecond Duration = 1\n\tSecond = 1000 * Millisecond\n)\n", "time.go",
     "Second", True),
    ("package http\n\nconst (\n\tStatusOK = 200 // RFC 9110, 15.3.1\n)\n", "status.go", "StatusOK", True),
    ("package x\n\ntype (\n\tPair struct {\n\t\tA int\n\t}\n)\n", "x.go", "Pair", True),
    ("func f() {\n\tSecond = 3\n}\n", "x.go", "Second", False),  # an assignment in a body
    ("func Map[T any](xs []T) []T {\n", "x.go", "Map", True),
    # a struct's fields and an interface's methods (a Go tree's review: `Server.ReadTimeout`
    # was shown by `return s.ReadTimeout`), the opener in the passage or above it
    ("type Server struct {\n\t// the timeout\n\tReadTimeout time.Duration // for reads\n}\n", "s.go",
     "ReadTimeout", True),
    ("\t// ReadTimeout is the maximum duration\n\tReadTimeout time.Duration\n", "s.go", "ReadTimeout", True),
    ("type T struct {\n\tName string `json:\"name\"`\n}\n", "t.go", "Name", True),
    ("type Handler interface {\n\tServeHTTP(ResponseWriter, *Request)\n}\n", "h.go", "ServeHTTP", True),
    ("\tServeHTTP(w, r)\n", "h.go", "ServeHTTP", False),  # a call in a body
    ("func f() {\n\tServeHTTP(w, r)\n}\n", "h.go", "ServeHTTP", False),
    ("\tt := s.ReadTimeout\n", "s.go", "ReadTimeout", False),
    # a passage that begins inside a long function: an assignment is not a field (a review
    # of this change: `timeout` raised run.go over the notes on timeouts)
    ("\tx := 1\n\ttimeout = 30 * time.Second\n", "run.go", "timeout", False),
    ("\tx := 1\n\ttimeout += 1\n", "run.go", "timeout", False),
    ("unsigned long\ncopy_from_user(void *to, const void __user *from, unsigned long n)\n{\n", "u.c",
     "copy_from_user", True),
    ("copy_from_user(to, from, n);\n", "u.c", "copy_from_user", False),
    # the kernel's attribute macros before the return type (the name is the last call's)
    ("static __always_inline __alloc_size(1) void *kmalloc_node(size_t size, gfp_t flags, int node)\n{\n",
     "slab.h", "kmalloc_node", True),
    ("static __always_inline __alloc_size(1) void *kmalloc_node(size_t size, gfp_t flags, int node)\n{\n",
     "slab.h", "__alloc_size", False),
    ("__printf(2, 3) __cold\nint dev_err_probe(const struct device *dev, int err, const char *fmt, ...)\n{\n",
     "core.c", "dev_err_probe", True),
    ("static int cb_call(int (*cb)(void *), void *arg)\n{\n", "cb.c", "cb_call", True),
    ("static int cb_call(int (*cb)(void *), void *arg)\n{\n", "cb.c", "cb", False),
    # C++ as Eigen and Boost write it (a review of a C++ tree): a template class on one line,
    # a class after an export macro, `enum class`, a template function
    ("template<typename Derived> class MatrixBase\n  : public DenseBase<Derived>\n{\n", "MatrixBase.h",
     "MatrixBase", True),
    ("template<class T> class Foo : public Bar<T> {\n", "f.hpp", "T", False),
    ("class BOOST_SYMBOL_VISIBLE illegal_backtracking : public std::exception\n{\n", "m.hpp",
     "illegal_backtracking", True),
    ("class BOOST_SYMBOL_VISIBLE illegal_backtracking : public std::exception\n{\n", "m.hpp",
     "BOOST_SYMBOL_VISIBLE", False),
    ("class BOOST_SYMBOL_VISIBLE exception;\n", "e.hpp", "exception", False),  # a declaration
    ("enum class input_format_t { json, cbor };\n", "i.hpp", "input_format_t", True),
    ("template <typename J, typename std::enable_if<is_x<J>::value, int>::type = 0>\n"
     "void from_json(const J& j, typename J::boolean_t& b)\n{\n", "f.hpp", "from_json", True),
    ("template<class T> T clamp(T x, T lo, T hi) {\n", "c.hpp", "clamp", True),
    ("struct VEC3 vec_add(struct VEC3 a, struct VEC3 b)\n{\n", "v.h", "vec_add", True),
    ("inline int twice(int x) { return 2 * x; }\n", "a.hpp", "twice", True),  # a body on its line
    ("static inline bool is_ok(const struct s *p) { return p->ok; }\n", "k.h", "is_ok", True),
    ("  return twice(x);\n", "a.hpp", "twice", False), ("if (twice(x)) { y(); }\n", "a.hpp", "twice", False),
    ("def WithDeadlineX():\n", "x.py", "WithDeadline", False),  # whole names only
    ("def withdeadline():\n", "x.py", "WithDeadline", False),  # case counts
])
def test_defines_finds_the_line_that_defines_the_name(text, path, name, defined):
    at = defines(text, path, name)
    assert (at is not None) == defined
    if defined:
        assert name in text[at:].split("\n", 1)[0]


def _cand(cid, path, score):
    return Cand(cid, path, score, {"keywords": {"raw": 1.0, "score": score}})


def test_with_definers_puts_each_definer_above_every_other_file():
    ranked = [_cand(1, "ctx_test.go", 0.95), _cand(5, "ctx.go", 0.40), _cand(9, "ex_test.go", 0.08)]
    out = rank.with_definers(ranked, "WithDeadline", {"ctx.go": 6, "other.go": 12})
    assert [c.path for c in out] == ["ctx.go", "other.go", "ctx_test.go", "ex_test.go"]
    step = 10.0 ** -rank.SCORE_DIGITS
    # above the best user, the definers in their own order a printed step apart
    assert out[0].score == pytest.approx(0.95 + 2 * step) and out[1].score == pytest.approx(0.95 + step)
    assert out[0].chunk_id == 6  # shown by the passage that defines it
    assert out[0].branches["defines"] == {"name": "WithDeadline", "score": 0.4}
    assert out[0].branches["keywords"]["score"] == 0.40  # its own evidence kept for --explain
    assert out[1].branches["defines"]["score"] == 0.0  # no branch had found it
    # a definer that already scores higher keeps its own score; no definer: unchanged
    high = rank.with_definers([_cand(1, "a.go", 0.3), _cand(2, "b.go", 0.9)], "F", {"b.go": 2})
    assert [(c.path, c.score) for c in high] == [("b.go", 0.9), ("a.go", 0.3)]
    assert rank.with_definers(ranked, "", {}) is ranked


def test_an_identifiers_hybrid_keeps_its_keywords_probability():
    tree = rank.Tree(files=200, rows=2000, terms=2)
    kw = [Cand(1, "r_test.go", 0.0, {"keywords": {"raw": 9.0}})]
    sem = [Cand(1, "r_test.go", 0.0, {"semantic": {"raw": 0.70}})]
    pk = rank.keyword_score(9.0, "r_test.go", tree)
    assert 0.05 < pk < rank.KEYWORD_FLOOR  # a case the ordinary floor leaves to the fusion
    plain = rank.fuse({"keywords": kw, "semantic": sem}, tree)[0].score
    named = rank.fuse({"keywords": kw, "semantic": sem},
                      rank.Tree(files=200, rows=2000, terms=2, identifier=True))[0].score
    assert plain < pk
    assert named == pytest.approx(pk)
    # only a row holding the name keeps it: one holding some of its words is fused
    held = rank.fuse({"keywords": kw, "semantic": sem},
                     rank.Tree(files=200, rows=2000, terms=2, identifier=True, holding=frozenset({1})))
    apart = rank.fuse({"keywords": kw, "semantic": sem},
                      rank.Tree(files=200, rows=2000, terms=2, identifier=True, holding=frozenset({7})))
    assert held[0].score == pytest.approx(pk) and apart[0].score == pytest.approx(plain)


def test_an_identifiers_tree_knows_the_rows_holding_its_name(ov, tree):
    """`secret_ignored_word` scored a file holding "ignored" and "words" but not the name
    0.705 in the hybrid (its keywords-only probability; its cosine 0.003), over
    `--threshold 0.5` (a review of typer and click): only the rows holding the name, its
    words in order, keep that probability (`rank.Tree.holding`)."""
    from ov.engine import query_tree
    from ov.store import Filters, Store

    root = tree({"notes/todo.md": "# TODO\n\n- secret_ignored_word should not show\n",
                 "notes/alias.md": "---\naliases: [secret_ignored_word]\n---\n# Alias\n\nA note of its own.\n",
                 "utils.py": "def strip(words):\n    \"\"\"Secret words are ignored here.\"\"\"\n    return words\n"})
    assert ov("index", root).code == 0
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        todo = {cid for (cid,) in st.rows("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                                          "WHERE f.path = 'notes/todo.md' AND c.level = 2")}
        # a front matter block's hit is its note's first passage's: both are held
        alias = [cid for (cid,) in st.rows("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                                           "WHERE f.path = 'notes/alias.md' AND c.level = 2 ORDER BY c.seq")]
        got = query_tree(st, "secret_ignored_word", Filters())
        assert got.identifier and len(todo) == 1 and len(alias) == 2
        assert got.holding == frozenset(todo) | frozenset(alias), (got.holding, todo, alias)
        assert query_tree(st, "secret words", Filters()).holding is None  # not an identifier
        assert query_tree(st, "secret_ignored_word").holding is None  # no scope given: not read


GO_TREE = {
    "context/context.go": (
        "// Package context defines the Context type.\npackage context\n\n"
        "// WithDeadline returns a copy of the parent context with the deadline adjusted\n"
        "// to be no later than d.\n"
        "func WithDeadline(parent Context, d time.Time) (Context, CancelFunc) {\n"
        "\treturn withDeadline(parent, d)\n}\n"),
    "context/context_test.go": (
        "package context\n\nfunc TestWithDeadline(t *testing.T) {\n"
        + "".join(f"\tc{i}, _ := WithDeadline(Background(), d) // WithDeadline case {i}\n\t_ = c{i}\n"
                  for i in range(8)) + "}\n"),
    "io/io.go": "package io\n\n// EOF is the error Read returns when no more input is available.\n"
                "var EOF = errors.New(\"EOF\")\n",
    "bufio/scan.go": "package bufio\n\nfunc (s *Scanner) Scan() bool {\n"
                     + "".join(f"\tif err == io.EOF {{ return false }} // io.EOF {i}\n" for i in range(6)) + "}\n",
    "notes/deadline.md": "# Deadlines\n\nA deadline is the time by which work must be done.\n",
    "net/http/server.go": "package http\n\n// A Handler responds to an HTTP request.\n"
                          "type Handler interface {\n\tServeHTTP(ResponseWriter, *Request)\n}\n",
    "net/http/cgi/host.go": "package cgi\n\n// Handler runs an executable in a subprocess with a CGI environment.\n"
                            "type Handler struct {\n\tPath string\n}\n\nvar _ http.Handler = (*Handler)(nil)\n",
    "notes/handler.md": "# Durations\n\n```go\nfunc ParseDuration(s string) (Duration, error)\n```\n",
    "time/testdata/time.gox": "func ParseDuration(s string) (Duration, error)\n",
    "time/format.go": "package time\n\n// ParseDuration parses a duration string.\n"
                      "func ParseDuration(s string) (Duration, error) {\n\treturn 0, nil\n}\n",
}


def _hits(ov, root, *args):
    r = ov("search", *args, "-o", "json", "--explain", cwd=root)
    assert r.code == 0, r.out + r.err
    return r.json["result"]["hits"]


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_search_puts_the_definition_first_and_shows_it(tree, ov, search_type):
    root = tree(GO_TREE)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "WithDeadline", "--search-type", search_type)
    assert [h["path"] for h in hits[:2]] == ["context/context.go", "context/context_test.go"]
    assert "func WithDeadline(" in hits[0]["excerpt"]["text"]
    assert hits[0]["scores"]["defines"]["name"] == "WithDeadline"
    assert hits[0]["score"] > hits[1]["score"]
    assert "defines" not in hits[1]["scores"]
    # a qualified name: the file of the package named, shown by its definition
    eof = _hits(ov, root, "io.EOF", "--search-type", search_type)
    assert eof[0]["path"] == "io/io.go" and "var EOF" in eof[0]["excerpt"]["text"]
    assert eof[0]["scores"]["defines"]["by"] == "module"
    assert "by" not in hits[0]["scores"]["defines"]  # a bare name's definers need no rule
    # the package named is the file's own folder: net/http/cgi's Handler is not http's
    handler = _hits(ov, root, "http.Handler", "--search-type", search_type)
    assert handler[0]["path"] == "net/http/server.go"
    assert all("defines" not in h["scores"] for h in handler if h["path"] == "net/http/cgi/host.go")
    # a qualifier no file's folder or name holds raises no definer of the bare name
    assert all("defines" not in h["scores"] for h in _hits(ov, root, "nosuchpkg.Handler", "--search-type", search_type))
    # prose defines nothing: a doc's code snippet is not the definition
    assert all(h["path"] != "notes/handler.md" or "defines" not in h["scores"]
               for h in _hits(ov, root, "ParseDuration", "--search-type", search_type))
    # a question is not a name: no file is raised for defining a word of it
    plain = _hits(ov, root, "deadline of the context", "--search-type", search_type)
    assert all("defines" not in h["scores"] for h in plain)


RUST_TREE = {
    "regex-1.7.1/src/re_unicode.rs": (
        "/// A compiled regular expression for Unicode strings.\npub struct Regex(Exec);\n\n"
        "impl Regex {\n    /// Compiles a regular expression.\n"
        "    pub fn new(re: &str) -> Result<Regex, Error> {\n        RegexBuilder::new(re).build()\n    }\n}\n"),
    "regex-1.7.1/src/builder.rs": (
        "pub struct RegexBuilder(Options);\n\nimpl RegexBuilder {\n"
        "    pub fn new(pattern: &str) -> RegexBuilder {\n        RegexBuilder(Options::new(pattern))\n    }\n}\n"),
    "regex-1.7.1/examples/dna.rs": "use regex::Regex;\n\nfn main() {\n" + "".join(
        f"    let re{i} = Regex::new(\"agggtaaa|tttaccct\").unwrap(); // Regex::new {i}\n" for i in range(6)) + "}\n",
    "tokio-1.24.2/src/task/spawn.rs": (
        "/// Spawns a new asynchronous task, returning a JoinHandle for it.\n"
        "pub fn spawn<T>(future: T) -> JoinHandle<T::Output> {\n    spawn_inner(future, None)\n}\n"),
    "tokio-1.24.2/CHANGELOG.md": "# 1.24.2\n\n" + "".join(
        f"- Fixed a panic in `tokio::spawn` when the runtime shuts down ({i}). `tokio::spawn` is safe now.\n"
        for i in range(5)),
    "other-0.1.0/src/lib.rs": "/// Spawns nothing.\npub fn spawn() {}\n",
    # a method of the same name in the crate: the item's own file is the one
    "tokio-1.24.2/src/runtime/handle.rs": "pub struct Handle;\n\nimpl Handle {\n    pub fn spawn<F>(&self, f: F) {}\n}\n",
    # a type argument is not the type implemented: `Vec::new` is not defined here
    "bytes-1.2.1/src/bytes.rs": ("pub struct Bytes;\n\nimpl Bytes {\n    pub fn new() -> Bytes { Bytes }\n}\n\n"
                                 "impl PartialEq<Vec<u8>> for Bytes {\n    fn eq(&self, o: &Vec<u8>) -> bool { true }\n}\n"),
    # an impl's associated type is not the trait
    "serde-1.0.152/src/private/de.rs": "".join(
        f"impl<'de> Deserializer<'de> for Content{i} {{\n    type Deserializer = Self;\n}}\n" for i in range(4)),
    # a docstring's `Help => About` binds nothing
    "idlelib/help.py": '"""Help menu.\n\nHelp => About IDLE\n"""\n\nimport os\n',
    "idlelib/menus.py": "menudefs = [('help', 'Help')]  # Help\n",
    "serde-1.0.152/src/de/mod.rs": (
        "/// A data format that can deserialize any data structure supported by Serde.\n"
        "pub trait Deserializer<'de>: Sized {\n    type Error: Error;\n}\n"),
    "serde-1.0.152/src/de/ignored_any.rs": "use de::{Deserialize, Deserializer, Visitor};\n\n" + "".join(
        f"fn f{i}<D: Deserializer>(d: D) {{ Deserializer::ignore(d) }} // Deserializer\n" for i in range(6)),
    "notes/intro.md": "# Introduction\n\nAn Introduction to the crates above, and an Introduction to tokio.\n",
    "notes/guide.md": "# Guide\n\nRead the Introduction first.\n",
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_rust_names_find_their_definitions(tree, ov, search_type):
    """A review of a Rust tree: `Regex::new` and `tokio::spawn` raised no definer (their
    qualifier names neither the file nor its folder), `Deserializer` put a `use` line first,
    and `pub trait Deserializer` was read as prose. The type or crate the qualifier names
    now chooses among the files defining the last part (ov.engine `_qualified`)."""
    root = tree(RUST_TREE)
    assert ov("index", root).code == 0
    by_type = _hits(ov, root, "Regex::new", "--search-type", search_type)
    assert by_type[0]["path"] == "regex-1.7.1/src/re_unicode.rs", [h["path"] for h in by_type]
    assert "pub fn new(" in by_type[0]["excerpt"]["text"]
    assert [h["path"] for h in by_type if "defines" in h["scores"]] == ["regex-1.7.1/src/re_unicode.rs"]
    assert by_type[0]["scores"]["defines"]["by"] == "type"  # the rule that kept it, in --explain
    by_crate = _hits(ov, root, "tokio::spawn", "--search-type", search_type)
    assert by_crate[0]["path"] == "tokio-1.24.2/src/task/spawn.rs", [h["path"] for h in by_crate]
    assert [h["path"] for h in by_crate if "defines" in h["scores"]] == ["tokio-1.24.2/src/task/spawn.rs"]
    assert by_crate[0]["scores"]["defines"]["by"] == "folder"
    for query in ("Deserializer", "pub trait Deserializer"):
        typed = _hits(ov, root, query, "--search-type", search_type)
        assert typed[0]["path"] == "serde-1.0.152/src/de/mod.rs", (query, [h["path"] for h in typed])
        assert [h["path"] for h in typed if "defines" in h["scores"]] == ["serde-1.0.152/src/de/mod.rs"]
    # a capitalised word no code defines raises nothing
    for query in ("Introduction", "Help", "Vec::new"):
        assert all("defines" not in h["scores"] for h in _hits(ov, root, query, "--search-type", search_type)), query


MODIFIED_TREE = {
    "src/buf.rs": "pub struct Buf { data: Vec<u8> }\n\nimpl Buf {\n    pub const fn new() -> Buf {\n"
                  "        Buf { data: Vec::new() }\n    }\n}\n",
    "src/user.rs": "pub mod io {\n    pub fn read() {}\n}\n",
    "src/lib.rs": "pub mod io;\nmod buf;\n",
    "web/App.jsx": "export default function App() {\n  return <div />;\n}\n",
    "web/store.ts": 'import create from "zustand";\n\nexport const useStore = create(() => ({ count: 0 }));\n',
    "web/types.ts": "export type Props = {\n  title: string;\n};\n",
    **{f"web/use{i}.jsx": ('import App from "./App";\nimport { useStore } from "./store";\n'
                           "export const n = useStore.getState(); export default function f() {}\n"
                           "useStore(App); App(useStore); let b = Buf::new(); pub const fn new; pub mod io;\n"
                           "const p: Props = {}; // Props Props\n")
       for i in range(6)},
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_definition_written_with_its_modifiers_raises_its_definer(tree, ov, search_type):
    """`pub const fn new`, `export default function App`, `export const useStore` and `pub mod
    io` were read as prose (a `const` before `fn`; a name without a code's shape after
    `function`; `const` and `mod` not taken as definitions' words): nothing was raised."""
    root = tree(MODIFIED_TREE)
    assert ov("index", root).code == 0
    for query, path in (("pub const fn new", "src/buf.rs"), ("export default function App", "web/App.jsx"),
                        ("export const useStore", "web/store.ts"), ("pub mod io", "src/user.rs"),
                        ("export type Props", "web/types.ts")):
        hits = _hits(ov, root, query, "--search-type", search_type)
        assert [h["path"] for h in hits if "defines" in h["scores"]] == [path], (query, hits)
        assert hits[0]["path"] == path, (query, [h["path"] for h in hits])


GO_WRITTEN = {
    "net/http/client.go": "package http\n\n// A Client is an HTTP client.\ntype Client struct {\n\tTimeout int\n}\n\n"
                          "// Do sends an HTTP request and returns an HTTP response.\n"
                          "func (c *Client) Do(req *Request) (*Response, error) {\n\treturn c.do(req)\n}\n",
    "net/rpc/client.go": "package rpc\n\n// Client represents an RPC Client.\ntype Client struct {\n\tseq uint64\n}\n",
    **{f"runtime/chan{i}_test.go": "package runtime\n\nfunc TestChan(t *testing.T) {\n"
       + "".join(f"\ttype client struct{{}} // Client struct {j}\n\tc.initOnce.Do(f) // Client Do struct\n"
                 for j in range(6)) + "}\n" for i in range(3)},
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_go_definitions_as_written_find_their_definers(tree, ov, search_type):
    """A review on the Go standard library: `type Client struct` and `type Handler interface`
    were read as prose (no definer raised; net/http/client.go out of the first 20), and
    `func (c *Client) Do` or `(*Client).Do` put tests first."""
    root = tree(GO_WRITTEN)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "type Client struct", "--search-type", search_type)
    assert sorted(h["path"] for h in hits if "defines" in h["scores"]) == ["net/http/client.go", "net/rpc/client.go"]
    assert {h["path"] for h in hits[:2]} == {"net/http/client.go", "net/rpc/client.go"}
    for query in ("func (c *Client) Do", "(*Client).Do"):
        hits = _hits(ov, root, query, "--search-type", search_type)
        assert hits[0]["path"] == "net/http/client.go" and "func (c *Client) Do(" in hits[0]["excerpt"]["text"], query
        assert [h["path"] for h in hits if "defines" in h["scores"]] == ["net/http/client.go"], query


@pytest.mark.parametrize("query, expected", [
    ("kmalloc", "kmalloc"), ("newproc", "newproc"), ("GOMAXPROCS", "GOMAXPROCS"), ("json", "json"),
    # English words the model knows whole, short words, two words, names of a code's shape
    ("bread", None), ("socket", None), ("express", None), ("main", None), ("gfp", None),
    ("kmalloc flags", None), ("kmalloc_node", None), ("Deserializer", None), ("Kmalloc", None),
])
def test_jargon_is_a_word_the_model_does_not_know(query, expected):
    assert jargon(query) == expected


def test_jargon_needs_a_wordpiece_vocabulary(tmp_path, monkeypatch):
    """A Unigram tokenizer.json (its vocabulary a list of pairs) given as OV_TOKENIZER made
    every search an `internal` AttributeError: no vocabulary, no jargon."""
    from ov import query

    uni = tmp_path / "uni.json"
    uni.write_text('{"model": {"type": "Unigram", "vocab": [["kmalloc", -1.0], ["the", -2.0]]}}')
    monkeypatch.setenv("OV_TOKENIZER", str(uni))
    query._vocabulary.cache_clear()
    try:
        assert jargon("kmalloc") is None
    finally:
        monkeypatch.delenv("OV_TOKENIZER")
        query._vocabulary.cache_clear()


C_TREE = {
    "include/linux/slab.h": "/* Slab allocator. */\n\n"
    "static __always_inline __alloc_size(1) void *kmalloc(size_t size, gfp_t flags)\n{\n"
    "\treturn __kmalloc(size, flags);\n}\n",
    **{f"drivers/d{i}.c": "".join(f"\tp{j} = kmalloc(sizeof(*p{j}), GFP_KERNEL); /* kmalloc */\n" for j in range(8))
       for i in range(4)},
    "notes/bread.md": "# Bread\n\nKnead the bread dough.\n",
    "src/bake.c": "void bread(void)\n{\n}\n",
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_word_the_model_does_not_know_raises_its_definers(tree, ov, search_type):
    """A review on the Go standard library: `newproc`, `mallocgc` and `gopark` (and the
    kernel's `kmalloc`) were read as prose, so their definitions came 3rd to 10th under the
    files calling them. A word the model's vocabulary does not hold whole raises the files
    defining it, shown at the definition; an English word does not."""
    root = tree(C_TREE)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "kmalloc", "--search-type", search_type)
    assert hits[0]["path"] == "include/linux/slab.h" and hits[0]["scores"]["defines"]["name"] == "kmalloc", hits
    r = ov("search", "kmalloc", "--search-type", search_type, "-n", "1", cwd=root)
    assert r.out.startswith("include/linux/slab.h:3: static __always_inline __alloc_size(1) void *kmalloc("), r.out
    # its rows keep their keywords-only probability, as an identifier's do (`setupmethod`'s
    # definer scored 0.038 in the hybrid and 0.244 by keywords: --threshold 0.1 lost it)
    kw = {h["path"]: h["score"] for h in _hits(ov, root, "kmalloc", "--search-type", "keywords", "-n", "50")}
    assert all(h["score"] >= kw[h["path"]] - 1e-6 for h in hits if h["path"] in kw), (hits, kw)
    from ov.engine import query_tree
    from ov.store import Filters, Store

    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        tree_ = query_tree(st, "kmalloc", Filters())
        assert tree_.identifier and tree_.holding and len(tree_.holding) == 5  # slab.h and the 4 drivers
        assert not query_tree(st, "bread", Filters()).identifier
        assert query_tree(st, "Kmalloc", Filters()).identifier  # (a word that may name a type)
    assert all("defines" not in h["scores"] for h in _hits(ov, root, "bread", "--search-type", search_type))


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_word_the_model_does_not_know_raises_functions_and_types_not_fields(tree, ov, search_type):
    """`timeout` is jargon to the model and a field of many a struct: a review had
    srv.go (`type Server struct { timeout int }`) raised from third to first over the notes
    on timeouts. Only a function or a type of that name is raised."""
    root = tree({"srv.go": "package srv\n\ntype Server struct {\n\ttimeout int\n}\n",
                 "docs/timeouts.md": "# Timeouts\n\nEvery timeout is in seconds; a timeout of 0 waits for ever.\n",
                 "net.go": "package net\n\nfunc timeout(d int) bool {\n\treturn d > 0\n}\n"})
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "timeout", "--search-type", search_type)
    assert [h["path"] for h in hits if "defines" in h["scores"]] == ["net.go"], hits


GO_QUALIFIED = {
    "bufio/scan.go": "package bufio\n\ntype Scanner struct {\n\tr io.Reader\n}\n\n"
                     "func (s *Scanner) Scan() bool {\n\treturn true\n}\n",
    "text/scanner/scanner.go": "package scanner\n\ntype Scanner struct {\n\tpos int\n}\n\n"
                               "func (s *Scanner) Scan() rune {\n\treturn 0\n}\n",
    "fmt/scan.go": "package fmt\n\ntype Scanner interface {\n\tScan(state ScanState, verb rune) error\n}\n\n"
                   "func Scan(a ...any) (n int, err error) {\n\treturn 0, nil\n}\n",
    "context/context.go": "package context\n\ntype Context interface {\n\tDone() <-chan struct{}\n}\n",
    "cmd/types2/context.go": "package types2\n\ntype Context struct {\n\tn int\n}\n",
    **{f"cmd/use{i}.go": "package main\n\n" + "".join(
        f"// context.Context scanner.Scan Scanner.Scan bufio.Scanner.Scan {j}\nvar c{j} context.Context\n"
        for j in range(6)) for i in range(3)},
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_go_qualifiers_name_packages_and_types_as_go_does(tree, ov, search_type):
    """A review on the Go standard library: `bufio.Scanner.Scan` had text/scanner and
    go/scanner first (the folder `scanner` read as the qualifier `Scanner`; `bufio` not read),
    `Scanner.Scan` raised fmt's plain `func Scan`, and `context.Context` tied
    context/context.go with types2/context.go (a file named context.go)."""
    root = tree(GO_QUALIFIED)
    assert ov("index", root).code == 0

    def definers(query):
        return sorted(h["path"] for h in _hits(ov, root, query, "--search-type", search_type) if "defines" in h["scores"])
    assert definers("bufio.Scanner.Scan") == ["bufio/scan.go"]
    assert definers("Scanner.Scan") == ["bufio/scan.go", "text/scanner/scanner.go"]
    assert definers("context.Context") == ["context/context.go"]


MESSAGES = {
    "net/http/server.go": "package http\n\n// ErrServerClosed is returned by the Server's Serve methods.\n"
                          'var ErrServerClosed = errors.New("http: Server closed")\n',
    "net/http/transport.go": "package http\n\n"
                             'var errServerClosedIdle = errors.New("http: server closed idle connection")\n',
    **{f"net/http/t{i}_test.go": "package http\n\n" + "".join(
        f"// the http server closed the connection; http server closed, server closed {j}\n" for j in range(8))
       for i in range(4)},
    "notes/common.md": "# Notes\n\nreturn the result\n",
    **{f"lib/r{i}.py": "def f():\n    # return the result\n    return 1\n" for i in range(12)},
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_query_found_word_for_word_raises_the_files_holding_it(tree, ov, search_type):
    """A review on the Go standard library: `http: Server closed`, pasted from an error,
    had net/http/server.go (`errors.New("http: Server closed")`) out of the first 10, under
    files saying "http", "server" and "closed" more often. A text in its own case comes
    before the same text in another; one held by more than VERBATIM_FILES_MAX files raises
    none."""
    root = tree(MESSAGES)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "http: Server closed", "--search-type", search_type)
    assert hits[0]["path"] == "net/http/server.go" and hits[0]["scores"]["verbatim"]["name"] == "http: Server closed"
    assert [h["path"] for h in hits if "verbatim" in h["scores"]] == ["net/http/server.go"]
    assert '"http: Server closed"' in hits[0]["excerpt"]["text"]
    hits = _hits(ov, root, '"http: server closed idle"', "--search-type", search_type)  # quoted, another case
    assert [h["path"] for h in hits if "verbatim" in h["scores"]] == ["net/http/transport.go"]
    assert not any("verbatim" in h["scores"] for h in _hits(ov, root, "return the result", "--search-type", search_type))
    assert not any("verbatim" in h["scores"] for h in _hits(ov, root, "server", "--search-type", search_type))


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_pasted_expression_with_no_space_is_found_word_for_word(tree, ov, search_type):
    """`ansible_facts['distribution_release']`, pasted from a playbook, ranked under a file
    holding its words apart (`ansible_facts.distribution_release`): the word-for-word
    raise asked for two words apart. An expression of two runs of letters or more counts;
    an identifier (`os.path.join`) is left to the files defining it."""
    root = tree({
        "repo.yml": "- name: docker repo\n  apt_repository:\n"
                    "    repo: \"deb https://example.org/{{ ansible_facts['distribution_release'] }} stable\"\n",
        **{f"vars{i}.yml": "".join(f"- include_vars: \"{{{{ ansible_facts.distribution_release }}}}.{j}.yml\"\n"
                                   "  # distribution release facts from ansible facts\n" for j in range(4))
           for i in range(3)},
        "lib/posixpath.py": "def join(a, *p):\n    return a\n",
        "lib/use.py": "import os\nx = os.path.join('a', 'b')\n",
        "package.json": '{"name": "web", "version": "1.2.0"}\n',
        "docs/release.md": "# Release\n\nBump the version in package.json first.\n",
        "README.md": "# Web\n\nThe version lives in package.json.\n",
    })
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "ansible_facts['distribution_release']", "--search-type", search_type)
    assert hits[0]["path"] == "repo.yml" and "verbatim" in hits[0]["scores"], [h["path"] for h in hits]
    assert not any("verbatim" in h["scores"] for h in _hits(ov, root, "os.path.join", "--search-type", search_type))
    # a file's name is that file's, not the files naming it (a review: package.json fell to 5th)
    hits = _hits(ov, root, "package.json", "--search-type", search_type)
    assert hits[0]["path"] == "package.json" and not any("verbatim" in h["scores"] for h in hits)


JS_TREE = {
    "lib/router/layer.js": ("'use strict';\n\nmodule.exports = Layer;\n\n"
                            "function Layer(path, options, fn) {\n  this.handle = fn;\n  this.path = path;\n}\n\n"
                            "Layer.prototype.match = function match(path) {\n  return path === this.path;\n};\n"),
    "lib/router/index.js": "var Layer = require('./layer');\n\n" + "".join(
        f"proto.use{i} = function () {{\n  var layer = new Layer('/{i}', {{}}, fn); // a Layer\n"
        f"  if (layer.match(path)) {{ stack.push(layer); }} // Layer.prototype.match\n}};\n" for i in range(6)),
    "lib/router/route.js": "var Layer = require('./layer');\n\nfunction Route(path) {\n"
                           "  this.stack = [new Layer(path), new Layer(path)]; // Layer Layer\n}\n",
    "lib/express.js": "exports.Router = Router;\nexports.static = require('serve-static');\n",
    "lib/application.js": "".join(f"// app.use(express.static('public{i}')): express.static serves files\n"
                                  for i in range(6)) + "app.listen = function listen() {};\n",
    # a module that passes a name on does not define it where another file does
    "lib/date/index.js": "exports.parseDate = require('./parse-date');\nexports.json = body.json;\n",
    "lib/date/parse-date.js": "module.exports = function parseDate(s) {\n  return new Date(s);\n};\n",
    **{f"lib/use{i}.js": "var d = require('./date');\nd.parseDate('x'); d.parseDate(d.parseDate('y'));\n"
       for i in range(3)},
}


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_commonjs_names_find_their_definitions(tree, ov, search_type):
    """A review of a JS tree (express, from Debian's node-* packages): `Layer` put two files
    using it first (a constructor function was not a type's definition), `Layer.prototype.match`
    took `prototype` for its qualifier, and `express.static` did not find `exports.static =`."""
    root = tree(JS_TREE)
    assert ov("index", root).code == 0
    for query, path, by in (("Layer", "lib/router/layer.js", None),
                            ("Layer.prototype.match", "lib/router/layer.js", "type"),
                            ("express.static", "lib/express.js", "module")):
        hits = _hits(ov, root, query, "--search-type", search_type)
        assert [h["path"] for h in hits if "defines" in h["scores"]] == [path], (query, hits)
        assert hits[0]["path"] == path and hits[0]["scores"]["defines"].get("by") == by, (query, hits[0])
    passed_on = _hits(ov, root, "parseDate", "--search-type", search_type)
    assert [h["path"] for h in passed_on if "defines" in h["scores"]] == ["lib/date/parse-date.js"], passed_on
    match = _hits(ov, root, "Layer.prototype.match", "--search-type", search_type)[0]
    assert "Layer.prototype.match = function match(path)" in match["excerpt"]["text"]


def test_the_text_output_shows_a_name_by_its_definition_line(tree, ov):
    """A definer's doc comment names it first (`// WithDeadline returns ...`, line 4): the
    line printed is the definition (line 6); a file that only uses the name is shown by a
    line holding it whole, not one holding only a qualifier's word."""
    root = tree(GO_TREE)
    assert ov("index", root).code == 0
    r = ov("search", "WithDeadline", "--search-type", "keywords", cwd=root)
    assert r.code == 0, r.err
    first = r.out.splitlines()[0]
    assert first == "context/context.go:6: func WithDeadline(parent Context, d time.Time) (Context, CancelFunc) {"
    assert "    6: func WithDeadline(" in r.out and "    4- // WithDeadline returns" in r.out
    eof = ov("search", "io.EOF", "--search-type", "keywords", cwd=root).out.splitlines()
    assert eof[0] == 'io/io.go:4: var EOF = errors.New("EOF")'
    assert any(line.startswith("bufio/scan.go:4: ") for line in eof)


def test_find_does_not_rank_by_definitions(tree, ov):
    root = tree(GO_TREE)
    assert ov("index", root).code == 0
    r = ov("find", "WithDeadline", "-o", "json", "--explain", cwd=root)
    assert r.code == 0
    assert all("defines" not in h["scores"] for h in r.json["result"]["hits"])


@pytest.mark.model
def test_real_model_an_identifier_keeps_its_keyword_score_and_its_definition_leads(tree, ov):
    root = tree(GO_TREE)
    assert ov("index", root).code == 0
    kw = {h["path"]: h["score"] for h in _hits(ov, root, "io.EOF", "--search-type", "keywords")}
    hy = _hits(ov, root, "io.EOF")
    assert hy[0]["path"] == "io/io.go"
    for h in hy:  # the hybrid never scores a hit under what keywords alone say
        if h["path"] in kw:
            assert h["score"] >= kw[h["path"]] - 1e-6
    assert ov("search", "io.EOF", "--threshold", "0.5", cwd=root).code == (0 if max(kw.values()) >= 0.5 else 1)
    wd = _hits(ov, root, "WithDeadline")
    assert wd[0]["path"] == "context/context.go"


def test_a_common_names_definition_is_found_past_the_rows_read(tree, ov, monkeypatch):
    """Past DEFINERS_READ passages holding the name, the definition is looked for where a
    definition's word comes just before the name (`#define EXPORT_SYMBOL_GPL` in the
    kernel sat past the first 2,000 passages by bm25)."""
    from ov import engine

    files = {f"drivers/d{i}.c": "".join(f"EXPORT_SYMBOL_GPL(f{i}_{j});\n" for j in range(30)) for i in range(6)}
    files["include/export.h"] = ("/* symbols a module may use */\n#define EXPORT_SYMBOL_GPL(sym) "
                                 "__EXPORT_SYMBOL(sym, \"_gpl\")\n")
    root = tree(files)
    assert ov("index", root).code == 0
    monkeypatch.setattr(engine, "DEFINERS_READ", 3)
    hits = _hits(ov, root, "EXPORT_SYMBOL_GPL", "--search-type", "keywords")
    assert hits[0]["path"] == "include/export.h" and "defines" in hits[0]["scores"]
    monkeypatch.setattr(engine, "DEFINITION_WORDS", ("zzunused",))  # without the second read: missed
    assert all("defines" not in h["scores"] for h in _hits(ov, root, "EXPORT_SYMBOL_GPL", "--search-type", "keywords"))


@pytest.mark.parametrize("query, expected", [
    ("kernel-parameters.txt", "kernel-parameters.txt"), ("setup.py", "setup.py"), ("README.md", "README.md"),
    ("net/http/server.go", "net/http/server.go"), ("./http/server.go", "http/server.go"),
    ("docs/guide", "docs/guide"),
    # not a file: an identifier, a sentence, a word, an extension alone, a climb
    ("io.EOF", None), ("WithDeadline", None), ("how to read setup.py", None), ("json", None),
    (".py", None), ("../etc/passwd", None), ("", None),
])
def test_file_name_is_a_name_or_path_of_a_file(query, expected):
    from ov.query import file_name

    assert file_name(query) == expected
    assert file_name(query) is None or identifier(query) is None


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_file_name_query_puts_that_file_first(tree, ov, search_type):
    """`ov search kernel-parameters.txt` had not shown that file in its first 20 hits: the
    files citing it hold its words more often than it does."""
    files = {
        # its start is shown, not the passage holding "kernel" most
        "admin-guide/kernel-parameters.txt": "acpi=\t\t[HW,ACPI] Advanced Configuration\n" * 60
                                             + "\nignore_loglevel\t[KNL] kernel parameters: the kernel log\n",
        "admin-guide/kernel-parameters.rst": ".. _kernelparameters:\n\nThe kernel's command-line parameters\n"
                                             "=====================================\n\nSee below.\n",
        **{f"mm/doc{i}.rst": f"Doc {i}\n=====\n\nSee kernel-parameters.txt for the kernel parameters "
                             f"(kernel-parameters.txt lists them: kernel parameters).\n" for i in range(6)},
        "net/http/server.go": "package http\n\nfunc Serve() {}\n",
        "net/http/cgi/server.go": "package cgi\n\nfunc Serve() {}\n",
    }
    root = tree(files)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "kernel-parameters.txt", "--search-type", search_type)
    assert hits[0]["path"] == "admin-guide/kernel-parameters.txt" and hits[0]["start_line"] == 1
    assert hits[0]["scores"]["file_name"]["name"] == "kernel-parameters.txt"
    assert all("file_name" not in h["scores"] for h in hits[1:])
    assert hits[0]["score"] > hits[1]["score"]
    # a path names that file, not another of the same name
    assert _hits(ov, root, "http/server.go", "--search-type", search_type)[0]["path"] == "net/http/server.go"
    # a file the filters leave out is not raised
    out = _hits(ov, root, "kernel-parameters.txt", "--search-type", search_type, "--exclude-uri", "admin-guide")
    assert all(not h["path"].startswith("admin-guide/") for h in out)


@pytest.mark.parametrize("query, expected", [
    ("npm install", "npm install"), ("Reading list", "reading list"), ("[[Certificates]]", "certificates"),
    ("[[Project Falcon|falcon]]", "project falcon"), ("[[Note#Heading]]", "note"), ("README", "readme"),
    ("how do I install a package in this project today", None), ("ab", None), ("", None), ("!!", None),
])
def test_stem_words_are_a_files_name_as_words(query, expected):
    from ov.query import stem_words

    assert stem_words(query) == expected


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_query_that_is_a_files_name_without_its_extension_puts_it_first(tree, ov, search_type):
    """"Reading list" put `notes/Reading list.md` 25th, under passages holding the words
    more often, and "npm install" put `commands/npm-install.md` 10th (a review of a notes
    tree). A file whose name reads as the query comes first, shown from its start; not when
    more than a few files share the name (`index`), nor for files the filters leave out."""
    files = {
        "notes/Reading list.md": "# Reading list\n\n- Dune\n- Middlemarch\n- The Left Hand of Darkness\n",
        "commands/npm-install.md": "---\ntitle: npm-install\n---\n\n### Synopsis\n\nInstall a package.\n",
        **{f"blog/post{i}.md": f"# Post {i}\n\nMy reading list grows: a list of reading, reading list after "
                               f"reading list. Run npm install, then npm install again (npm install).\n"
           for i in range(6)},
        **{f"pkg{i}/index.md": f"# Package {i}\n\nThe index of package {i}.\n" for i in range(9)},
        "data/npm_install.csv": "step,command\n1,npm install\n",  # a data file: the hybrid leaves it out
        "notes/Über Uns.md": "# Wir\n\nEin Team.\n",
        "asio/thread_pool.hpp": "// Copyright (c) 2003-2020 Christopher M. Kohlhoff\n\nclass thread_pool {\n};\n",
        "src/pool.cpp": "// a thread pool: each thread takes work from the pool\nvoid run_pool() {}\n",
    }
    root = tree(files)
    assert ov("index", root).code == 0
    for query, want, line in (("Reading list", "notes/Reading list.md", 1),
                              ("npm install", "commands/npm-install.md", 5),  # past its front matter
                              ("[[Reading list]]", "notes/Reading list.md", 1)):
        hits = _hits(ov, root, query, "--search-type", search_type)
        assert hits[0]["path"] == want and hits[0]["start_line"] == line, (query, hits[:3])
        named = [h["path"] for h in hits if "file_name" in h["scores"]]
        assert named == ([want, "data/npm_install.csv"] if search_type == "keywords" and query == "npm install"
                         else [want]), (query, named)
    assert all("file_name" not in h["scores"] for h in _hits(ov, root, "index", "--search-type", search_type))
    # a code file named so is not raised (`thread pool` showed Boost's thread_pool.hpp at its
    # licence), and a name with a space and its extension is a name
    code = _hits(ov, root, "thread pool", "--search-type", search_type)
    assert all("file_name" not in h["scores"] for h in code), code[:2]
    assert _hits(ov, root, "Reading list.md", "--search-type", search_type)[0]["path"] == "notes/Reading list.md"
    hits = _hits(ov, root, "Über Uns", "--search-type", search_type)  # a capital LIKE does not fold
    assert hits[0]["path"] == "notes/Über Uns.md" and "file_name" in hits[0]["scores"], hits[:2]
    out = _hits(ov, root, "Reading list", "--search-type", search_type, "--exclude-uri", "notes")
    assert all(not h["path"].startswith("notes/") for h in out)


@pytest.mark.parametrize("query, expected", [
    ("#project", ("project",)), ("#project #falcon", ("project", "falcon")), ("#project/falcon", ("project/falcon",)),
    ("#旅行", ("旅行",)), ("#2024-notes", ("2024-notes",)),
    ("#42", None), ("# Heading", None), ("project", None), ("#a #b #c #d #e", None), ("C#", None), ("", None),
])
def test_tag_words_are_a_query_of_tags(query, expected):
    from ov.query import tag_words

    assert tag_words(query) == expected


@pytest.mark.parametrize("search_type", ["hybrid", "keywords"])
def test_a_query_of_tags_puts_the_notes_carrying_them_first(tree, ov, search_type):
    """`#project` put the two notes tagged so 12th and 36th, under notes using the word
    (a review of a notes tree). Notes carrying every tag of the query come first: as `#tag`
    in their text (a nested `#project/falcon` too, the case aside) or in their front
    matter's `tags`; each shown where its tag is, or from its start."""
    files = {
        "projects/Falcon.md": "---\ntags: [project, falcon, team=platform]\n---\n# Falcon\n\nThe proxy plan.\n",
        "daily/d1.md": "# Monday\n\nMet Anna.\n\n- [ ] ask Bernd about the scraper #Project/falcon\n",
        "daily/d2.md": "# Tuesday\n\nNothing tagged here, though the project and the projects are named: project.\n",
        "notes/issue.md": "# Bugs\n\nSee #42 and the project page; C# code; &#project; a/#project.\n",
        **{f"words/w{i}.md": f"# Word {i}\n\nproject project project plans {i}\n" for i in range(8)},
    }
    root = tree(files)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, "#project", "--search-type", search_type)
    tagged = [h["path"] for h in hits if "tag" in h["scores"]]
    assert set(tagged) == {"daily/d1.md", "projects/Falcon.md"} and [h["path"] for h in hits[:2]] == tagged, hits[:4]
    lines = {h["path"]: h["start_line"] for h in hits[:2]}
    assert lines == {"daily/d1.md": 1, "projects/Falcon.md": 4}  # the passage of its `#tag`; past the front matter
    both = _hits(ov, root, "#project #falcon", "--search-type", search_type)
    assert [h["path"] for h in both if "tag" in h["scores"]] == ["projects/Falcon.md"], both[:3]
    r = ov("search", "#nosuchtag", "--search-type", search_type, "-o", "json", "--explain", cwd=root)
    assert r.code in (0, 1) and all("tag" not in h["scores"] for h in r.json["result"]["hits"]), r.out


def test_a_class_query_shows_the_class_not_its_subclass(ov, tree):
    """`class UsageError` (a review of click): keywords put `class BadArgumentUsage(UsageError)`
    first in both copies, a shorter passage holding both words, and the definitions (lines
    40 and 68) were not in the first five; the hybrid showed a file's `BadArgumentUsage`
    passage for `class BadParameter`. Written as a definition, the query asks for the name."""
    pad = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(12))
    root = tree({
        "exceptions.py": ("class ClickException(Exception):\n    pass\n" + pad
                          + "\n\nclass UsageError(ClickException):\n    \"\"\"An internal exception that signals a "
                          "usage error. This typically aborts any further handling.\"\"\"\n\n"
                          "    exit_code = 2\n\n    def __init__(self, message, ctx=None):\n"
                          "        super().__init__(message)\n        self.ctx = ctx\n" + pad
                          + "\n\nclass BadArgumentUsage(UsageError):\n    pass\n"),
        "parser.py": "from .exceptions import UsageError\n\n\ndef parse(args):\n    raise UsageError(args)\n",
    })
    assert ov("index", str(root)).code == 0
    for st in ("keywords", "hybrid"):
        r = ov("search", "class UsageError", "--search-type", st, "-o", "json", cwd=root)
        first = r.json["result"]["hits"][0]
        assert first["path"] == "exceptions.py" and "class UsageError(" in first["excerpt"]["text"], (st, first)


@pytest.mark.parametrize("query, expected", [
    # PHP's namespaces, a variable or the object itself before `->`, Ruby's `self.`
    ("Symfony\\Component\\HttpFoundation\\Request", ("Request", "HttpFoundation")),
    ("\\Illuminate\\Foundation\\Application", ("Application", "Foundation")),
    ("$request->getPathInfo()", ("getPathInfo", None)), ("$this->getPathInfo()", ("getPathInfo", None)),
    ("def self.call", ("call", None)), ("self.call", ("call", None)), ("parent::__construct", ("__construct", None)),
    ("Request::createFromGlobals", ("createFromGlobals", "Request")), ("Rack::Request#params", ("params", "Request")),
    # a stack trace's line as pasted: Java's (an inner class's `$` a dot), Python's
    ("at java.util.HashMap.putVal(HashMap.java:631)", ("putVal", "HashMap")),
    ("\tat java.util.ArrayList$Itr.next(ArrayList.java:1013)", ("next", "Itr")),
    ("at jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)", ("invoke0", "NativeMethodAccessorImpl")),
    ('File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode', ("raw_decode", None)),
    ("at java.base/java.util.HashMap.putVal(HashMap.java:631)", ("putVal", "HashMap")),  # a module's frame
    ("at app//com.foo.Bar.baz(Bar.java:3)", ("baz", "Bar")), ('File "x.py", line 3, in main', ("main", None)),
    # not PHP's namespaces: a regex, a path, an escape
    ("\\bgetPathInfo\\b", None), ("src\\utils\\helpers", None), ("\\d", None),
    # a constant after the object itself, JavaScript's `$` names, `parent` outside PHP's `::`
    ("self::VERSION", ("VERSION", None)), ("$this->URL", ("URL", None)), ("this.URL", ("URL", None)),
    ("$scope.apply", ("apply", "$scope")), ("parent.child", ("child", "parent")),
    # a file's name with Ruby's and PHP's endings
    ("config.ru", None), ("sinatra.gemspec", None), ("databases.rake", None), ("layout.phtml", None),
])
def test_ruby_and_php_names_as_written(query, expected):
    assert identifier(query) == expected


def test_a_hits_json_carries_the_line_its_text_shows(ov, tree):
    """Text showed `builder.rb:33: class Builder` where JSON and MCP said only `start_line`
    3, a comment above it: an editor or an agent jumping to the hit landed on the preamble.
    A hit's `line` is the line text prints: the definition of the name asked for, or the
    line holding most of the query's words; an overview (-L 1) has none."""
    doc = "".join(f"  # The builder's note {i} on middleware stacks.\n" for i in range(20))
    root = tree({"lib/rack/builder.rb": "module Rack\n" + doc + "  class Builder\n    def use(middleware)\n"
                 "      @use << middleware\n    end\n  end\nend\n",
                 "notes.md": "# Notes\n\nSome words.\n\nThe middleware order matters when a stack is built.\n"})
    assert ov("index", str(root)).code == 0
    for q in ("Rack::Builder", "middleware order"):
        text = ov("search", q, "--search-type", "keywords", "-n", "1", cwd=root).out.splitlines()[0]
        hit = ov("search", q, "--search-type", "keywords", "-n", "1", "-o", "json", cwd=root).json["result"]["hits"][0]
        assert text.startswith(f"{hit['path']}:{hit['line']}:"), (text, hit)
        assert hit["start_line"] <= hit["line"] <= hit["end_line"]
    assert ov("search", "Rack::Builder", "--search-type", "keywords", "-o", "json",
              cwd=root).json["result"]["hits"][0]["line"] == 22
    over = ov("search", "middleware", "--search-type", "keywords", "-L", "1", "-o", "json", cwd=root).json["result"]["hits"]
    assert over and all("line" not in h for h in over)


POLYGLOT_TREE = {
    "infra/terraform/sqs.tf": ('# Queues between the gateway and the ledger.\nresource "aws_sqs_queue" "payment_events" {\n'
                               '  name = "payment-events"\n}\n\nresource "aws_sqs_queue" "payment_retries" {\n'
                               '  name = "payment-retries"\n}\n'),
    **{f"db/migrations/00{i}_payments.sql": (f"-- Payments, part {i}: every payment and its retries.\n"
                                             f"create table payments_{i} (\n  payment_id uuid,\n  retries int\n);\n"
                                             f"create index payments_{i}_idx on payments_{i} (payment_id);\n")
       for i in range(1, 5)},
    "proto/payments.proto": ('syntax = "proto3";\n\n// Refunds a captured payment.\nservice Refunds {\n'
                             "  rpc Refund(RefundRequest) returns (RefundReply);\n}\n"
                             "message RefundRequest { string payment_id = 1; }\nmessage RefundReply { bool ok = 1; }\n"),
    "docs/payments.md": "# Payments\n\n## Refunds\n\nA refund request gets a refund reply from the gateway.\n",
}


@pytest.mark.model
@pytest.mark.parametrize("query, path, line", [
    ("payment_retries", "infra/terraform/sqs.tf", 6),
    ("RefundReply", "proto/payments.proto", 8),
    ("payments_3", "db/migrations/003_payments.sql", 2),
])
def test_real_model_a_name_defined_in_terraform_sql_or_protobuf_leads(tree, ov, query, path, line):
    """A review of a polyglot repository: `ov search payment_retries` put the Terraform file
    that defines it ninth, under SQL migrations holding "payment" and "retries", and
    `RefundReply` put a doc without the name first. Those languages' definitions now make a
    file a definer (ov.tiers), and the first hit is the definition's line."""
    root = tree(POLYGLOT_TREE)
    assert ov("index", root).code == 0
    hits = _hits(ov, root, query)
    assert (hits[0]["path"], hits[0]["line"]) == (path, line) and "defines" in hits[0]["scores"], hits[:3]
