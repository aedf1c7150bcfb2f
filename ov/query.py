"""Query text and flags → a plan: quoted FTS5 expressions, filters, limits. Pure.

The user's text is never parsed as FTS5 syntax: it is split into words the way FTS5's
unicode61 tokenizer splits them, each word is quoted, and the words are OR-ed (FTS5's
implicit AND returns nothing for most natural-language questions: 0.047 nDCG@10 on
SciFact against 0.687 for OR, see ../shared/bench/README.md). Runs of characters from
scripts written without spaces (Chinese, Japanese, Thai...) are unicode61 "words" as a
whole, so they are also searched as substrings through the trigram table.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ov.config import MAX_LIMIT, MAX_QUERY_CHARS
from ov.errors import OvError
from ov.tags import parse_tags  # noqa: F401 - the search options' parser
from ov.kinds import is_notebook
from ov.read import blake2b
from ov.store import KNN_MAX, fts_phrase

SEARCH_TYPES = {"hybrid": "hybrid", "keywords": "keywords", "lexical": "keywords",
                "semantic": "semantic"}
TIME_FIELDS = ("updated_at", "created_at")

# unicode61 token characters: letters, numbers (and marks, which join them)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# scripts without word separators: CJK ideographs, kana, hangul, thai, lao, khmer, myanmar
_NOSPACE = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]+")


@dataclass(frozen=True)
class KeywordPlan:
    fts: str | None  # for chunks_fts MATCH (quoted words OR-ed)
    trigram: str | None  # for chunks_tri MATCH (substring phrases of >= 3 chars, OR-ed)
    short: tuple[str, ...]  # no-space runs of 1-2 chars: matched with instr() on the text
    terms: int = 0  # the words and runs searched (a score's keyword share reads it: rank.Tree)
    runs: tuple[str, ...] = ()  # the no-space runs of >= 3 chars `trigram` asks (Store.score_runs)
    pairs: tuple[str, ...] = ()  # their pairs of characters, matched as `short`, one term in all


def check_query(text: str) -> str:
    if text is None or not text.strip():
        raise OvError("invalid_argument", "the query is empty", field="query")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 arrive as lone surrogates
        raise OvError("invalid_argument", "the query is not valid UTF-8", field="query") from None
    if "\x00" in text:
        raise OvError("invalid_argument", "the query contains a NUL byte", field="query")
    if len(text) <= MAX_QUERY_CHARS and all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text):
        # (a zero-width space or \x01\x02 ranked ten junk hits with exit 0: a Go tree's review)
        raise OvError("invalid_argument", "the query is empty: it holds only control or invisible characters "
                      f"({', '.join(sorted({f'U+{ord(c):04X}' for c in text if not c.isspace()})[:4])})",
                      field="query")
    if len(text) > MAX_QUERY_CHARS:
        raise OvError("query_too_long",
                      f"the query has {len(text)} characters; the limit is {MAX_QUERY_CHARS}",
                      field="query")
    return text


# Words of a question that say nothing of its subject: question words, pronouns and
# auxiliaries. In a small tree each is "rare" (a note that happens to say "how long" is
# the only one holding both), so `how long to bake bread` gave an unrelated log 0.94 in a
# folder of 15 notes. Modal verbs that are also nouns (may, can, must) are not among them.
QUESTION_WORDS = frozenset(
    "how what when where which who whom whose why do does did doing i me my we us our you your "
    "he him his she her its them am been being were has have had could should would from about "
    "than".split())

# Lucene's English stop words. OR-ed, they match most chunks and make FTS5 score nearly
# the whole table (one query: 168 ms with "and"/"for", 28 ms without, on 100k chunks)
# while adding almost nothing to BM25. A query made only of them keeps them. Words that are
# common in this index rather than in English are left out at search time, where their
# frequency is known (ov.bm25.split_common).
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()) | QUESTION_WORDS


# A query that is one identifier of code: `parse_args`, `BaseEventLoop`, `hashGrow`, `EOF`,
# or a qualified one, `io.EOF`, `std::vector`, `errors.Is` (`identifier`). A plain word
# (`json`, `Attribute`) is not one: it reads as prose as well.
_IDENT_RE = re.compile(r"\\?[A-Za-z_$][\w$]*(?:(?:\.|::|->|#|\\)[A-Za-z_$][\w$]*)*")
_IDENT_SEP_RE = re.compile(r"\.|::|->|#|\\")  # (PHP's namespaces: `Symfony\Component\...\Request`)
_CODE_SHAPE_RE = re.compile(r"_|\.|::|->|#|\$|\\|[a-z0-9][A-Z]|[A-Z]{2}")
# what qualifies a name without being a type or a package: the object itself (`this.`,
# `self.`, Ruby's `def self.call`), PHP's `static::` and `parent::`, and a PHP variable
# before `->` (`$request->getPathInfo()`; JavaScript's `$scope.apply` keeps its `$scope`)
_NOT_QUALIFIERS = frozenset({"this", "self", "$this"})
_NOT_QUALIFIERS_PHP = frozenset({"static", "parent"})  # before `::`


# a call as pasted from code: the name before `(...)` or a bare `(`
_CALL_TAIL_RE = re.compile(r"([A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*)\((?:[^()]*\))?\s*;?")
# file endings that are also methods' names: after a capitalised type's name they are its
# method (`Response.json`, `Console.log`, `Template.render`... `Report.html` stays a file
# when no file defines `html`: the file-name rule comes after the definers)
_METHOD_ENDINGS = frozenset({"json", "log", "html", "xml", "out", "lock"})


# a Go method expression: `(*Client).Do`, `(*http.Client).Do`, `(Point).Dist`
_METHOD_EXPR_RE = re.compile(r"\(\s*\*?\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*\)\.([A-Za-z_]\w*)")


# a line of a stack trace as pasted: Java's `at java.util.HashMap.putVal(HashMap.java:631)`
# (an inner class's `$` a dot: `ArrayList$Itr.next`), Python's `File "x.py", line 3, in
# raw_decode`; the method or function it names is the identifier (its line had found
# import lines)
_STACK_FRAME_RE = re.compile(r"(?:at\s+(?:[\w.@-]*/)*([A-Za-z_$][\w$.]*[\w$])\((?:[\w$.-]+:\d+|[\w$.-]+|Native Method|"
                             r"Unknown Source)\)|File\s+\"[^\"]+\",\s+line\s+\d+,\s+in\s+([A-Za-z_]\w*))")


# a dotted word ending so names a file (`setup.py`, `README.md`), not a member
_FILE_ENDINGS = frozenset(
    "py pyi js mjs cjs ts tsx jsx go rs c h cc cpp hpp java kt rb php cs swift md rst txt html "
    "htm css scss json yaml yml toml ini cfg conf xml sh bash zsh lock sql csv log out "
    "rake gemspec erb ru rbs phtml twig vue svelte gradle kts sbt scala dart".split())


def identifier(text: str) -> tuple[str, str | None] | None:
    """(name, qualifier or None) when the query is one code identifier, its name the last
    part of a qualified one (`io.EOF`: EOF, io); else None. Not one: a file name
    (`setup.py`), a bare word in capitals (`TODO`, `NULL`: words of prose and of every
    C file; `PAGE_SIZE` and `io.EOF` are). A definition as it is written, `class
    UsageError`, `def parse`, `struct page`, asks for its name too (`_defined`). `ov
    search` ranks the files defining the name first (ov.engine `_definers`)."""
    parts = _identifier_parts(text)
    return None if parts is None else (parts[-1], parts[-2] if len(parts) > 1 else None)


def package_of(text: str) -> str | None:
    """The package before a qualified name's type, when the query names one: `bufio` of
    `bufio.Scanner.Scan`, `http` of `(*http.Client).Do`; else None."""
    parts = _identifier_parts(text)
    return parts[-3] if parts is not None and len(parts) >= 3 else None


def _identifier_parts(text: str) -> list[str] | None:
    """The parts of the identifier a query is (`identifier`), outermost first, a
    JavaScript `prototype` left out; None when it is not one."""
    q = text.strip()
    framed = (frame := _STACK_FRAME_RE.fullmatch(q)) is not None  # a pasted stack trace's line
    if framed:  # (it names a function, whatever its name: `in main`)
        q = frame.group(1).replace("$", ".") if frame.group(1) else f"{frame.group(2)}"
    if (expr := _METHOD_EXPR_RE.fullmatch(q)) is not None:  # Go's `(*Client).Do`: Client.Do
        q = f"{expr.group(1)}.{expr.group(2)}"
    called = (call := _CALL_TAIL_RE.fullmatch(q)) is not None  # pasted: `raise_for_status()`, `click.echo(`
    if called:
        q = call.group(1)
    called = called or framed
    if (named := _defined(q)) is not None:
        q = named[1]
    elif not _IDENT_RE.fullmatch(q) or not (_CODE_SHAPE_RE.search(q) or called):
        return None
    bare = q.lstrip("\\")  # (PHP's fully qualified `\Illuminate\...`)
    if "\\" in q and not all(p[:1].isupper() for p in bare.split("\\")):
        return None  # PHP's namespaces are capitalised; not a regex (`\bword\b`, `\d`) nor a path (`src\utils`)
    q = bare
    seps = _IDENT_SEP_RE.findall(q)
    parts = _IDENT_SEP_RE.split(q)
    if len(parts) == 1 and q.isupper() and "_" not in q and not called:
        return None
    parts = [p for p, sep in zip(parts, seps) if not (
        p in _NOT_QUALIFIERS or (p.startswith("$") and sep == "->") or (p in _NOT_QUALIFIERS_PHP and sep == "::"))] \
        + parts[-1:]
    if (len(parts) > 1 and "." in q and parts[-1].lower() in _FILE_ENDINGS and not called
            and not (parts[-1] in _METHOD_ENDINGS and parts[-2][:1].isupper() and not parts[-2].isupper())):
        return None  # (`Response.json`, `Console.log`: a type's method, not a file)
    if len(parts) > 2 and parts[-2] == "prototype":  # JavaScript's `Layer.prototype.match`: Layer's
        parts.pop(-2)
    return parts


# Words that begin a definition in code, and those of them that are rarely prose: `class
# UsageError` had its subclass `class BadArgumentUsage(UsageError)` first and the
# definition out of the first five (a shorter passage holding both words), where the
# name alone puts the definers first. `class action` and `type annotations` stay prose.
# words that come just before a name they define (ov.tiers.defines decides; ov.engine reads
# the definitions of a name so spelled)
DEFINITION_WORDS = ("def", "class", "func", "function", "fn", "struct", "type", "interface", "enum",
                    "trait", "define", "var", "const", "let", "val", "module", "mod", "union", "typedef")
# ... of which these begin a query written as a definition (`var x`, `let x` read as prose too;
# after a modifier, `export const x`, they are code)
_DEFINING = frozenset(DEFINITION_WORDS) - {"define", "var", "const", "let", "val", "mod"}
_DEFINING_AFTER_MODIFIER = frozenset(DEFINITION_WORDS) - {"define"}
_DEFINING_ONLY = frozenset("def func fn struct enum trait typedef".split())
# ... and those after which a name in capitals is a type's (`class Diagram` is a title too,
# but rarer typed so than `class diagram`; `module Reference`, `type Systems` stay prose)
_DEFINING_TYPES = frozenset("class interface struct enum trait".split())
# a definition's name and what may follow it as written: `class UsageError(Exception):`,
# `def parse(args)`, `struct page {`, `interface Reader<T>`
_DEFINED_RE = re.compile(r"([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)\s*(?:[(:{<].*)?")


# words that may come before a definition's word (`pub trait Deserializer`, `export
# function f`, `public static class C`): left aside when a query is read as a definition
_MODIFIERS_RE = re.compile(r"(?:(?:pub(?:\([\w:\s]+\))?|export|default|public|private|protected|internal|"
                           r"static|async|abstract|final|sealed|unsafe|extern|inline|virtual|override|"
                           r"partial|open|data|const(?=\s+(?:fn|enum)\b))\s+)+")


_CODE_LEAD_RE = re.compile(r"(?:pub|export)\b")


def _defined(q: str) -> tuple[str, str] | None:
    """(the definition's word, the name) of a query written as a definition's start (`class
    UsageError`, `def parse(args)`, `pub trait Deserializer`), else None: modifiers (`_MODIFIERS_RE`), a
    definition word, then one identifier (what follows it as code writes it aside) that
    has a code's shape, begins with a capital after a type's word (`_DEFINING_TYPES`), or
    follows a word prose rarely uses (`_DEFINING_ONLY`). After `pub` the query is code
    whatever the name (`pub mod io`); after `export`, with a name of a code's shape or a
    capital (`export const useStore`, `export default function App`), `const`, `let`,
    `var`, `val` and `mod` are definitions' words too. English modifiers are not enough:
    `export function names`, `static type checking`, `abstract data type definition` stay
    prose."""
    lead = _MODIFIERS_RE.match(q)
    if lead and lead.end() < len(q) and lead.group().strip() != "const":  # (`const fn pointers`)
        q = q[lead.end():]
    else:
        lead = None
    code = lead is not None and _CODE_LEAD_RE.match(lead.group()) is not None
    word, _, rest = q.partition(" ")
    rest = rest.strip()
    if word == "func" and (recv := _GO_RECEIVER_RE.match(rest)):  # `func (c *Client) Do`: Client.Do
        rest = f"{recv.group(1)}.{rest[recv.end():]}"
    go_type = word == "type" and (kind := _GO_TYPE_KIND_RE.search(rest)) is not None
    if go_type:  # `type Client struct`, `type Handler interface {`
        rest = rest[:kind.start()]
    m = _DEFINED_RE.fullmatch(rest) if word in (_DEFINING_AFTER_MODIFIER if code else _DEFINING) else None
    if m is None:
        return None
    name = m.group(1)
    if ((code and (lead.group().startswith("pub") or name[:1].isupper())) or _CODE_SHAPE_RE.search(name)
            or word in _DEFINING_ONLY or (name[:1].isupper() and word in _DEFINING_TYPES) or go_type):
        return word, name
    return None


# Go's method receiver (`func (c *Client) Do`, `func (l *List[T]) Len`) and the kind a `type`
# declaration names after its name (`type Client struct`), read by `_defined`
_GO_RECEIVER_RE = re.compile(r"\(\s*(?:\w+\s+)?\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\s*")
_GO_TYPE_KIND_RE = re.compile(r"\s+(?:struct|interface)\b\s*\{?\s*\}?$")


def definition_word(text: str) -> str | None:
    """The definition's word of a query written as a definition (`trait` of `pub trait
    Deserializer`), else None: ov.engine takes only the definitions written with it."""
    named = _defined(text.strip())
    return named[0] if named else None


# a word of a sentence: letters and digits, and the marks prose puts around words
_PROSE_WORD_RE = re.compile(r"[(\"'`]*[^\W_]+(?:[-'][^\W_]+)*[)\"'`.,;:!?]*")


def worded(text: str) -> bool:
    """Whether the query is a phrase in words (`set a cookie on the response`, `how are
    goroutines scheduled`): three words or more, at least two of them not stop words, and
    none with a code's shape (`_CODE_SHAPE_RE`: `io.EOF`, `parse_args`, `hashGrow`; an
    acronym, `TLS`, is a word). Its
    hybrid hits show the passage the model reads closest to it (ov.rank `fuse`)."""
    words = text.split()
    if len(words) < 3 or not all(_PROSE_WORD_RE.fullmatch(w) for w in words):
        return False
    bare = [w.strip("()\"'`.,;:!?") for w in words]
    if any(_CODE_SHAPE_RE.search(w) and not (w.isalpha() and w.isupper()) for w in bare):
        return False  # (an acronym, `TLS`, `HTTP`, is a word of prose too)
    return sum(fold(w) not in STOPWORDS for w in bare) >= 2


_TYPE_NAME_RE = re.compile(r"[A-Z][a-z][A-Za-z0-9]*")


def type_name(text: str) -> str | None:
    """The word a query is when it may name a type without a code's shape (`Deserializer`,
    `Runtime`): one word of letters and digits, a capital then small letters. Such a word
    is prose as often (`Introduction`), so `ov search` only raises the files that define it
    as code does (ov.engine `_definers`), its rows keeping their keywords-only probability
    (ov.engine `query_tree`)."""
    q = text.strip()
    return q if _TYPE_NAME_RE.fullmatch(q) and identifier(q) is None else None


_JARGON_RE = re.compile(r"[a-z][a-z0-9]{3,}|[A-Z][A-Z0-9]{3,}")


def jargon(text: str) -> str | None:
    """The word a query is when it may name a function in small letters (`kmalloc`,
    `newproc`, `mallocgc`) or a constant in capitals (`GOMAXPROCS`): one word of four
    letters and digits or more, in one case, that the model's vocabulary does not hold
    whole (English does: `bread`, `socket`, `express`; `parse`, `json` and `runtime` are
    jargon to it). `ov search` only raises the files that define it as a function or a
    type (ov.engine `_definers`: not a field or a variable, as `timeout` is in many a
    struct), its rows keeping their keywords-only probability (ov.engine `query_tree`). None
    without the tokenizer's vocabulary."""
    q = text.strip()
    if not _JARGON_RE.fullmatch(q) or identifier(q) is not None:
        return None
    vocab = _vocabulary()
    return q if vocab and q.lower() not in vocab else None


@functools.lru_cache(maxsize=1)
def _vocabulary() -> frozenset[str]:
    """The whole words of the model's WordPiece vocabulary (empty when not installed)."""
    from ov.embed import model_paths  # noqa: PLC0415

    path = model_paths()[1][0]
    try:
        with open(path, encoding="utf-8") as f:
            vocab = json.load(f)["model"]["vocab"]
    except (OSError, TypeError, ValueError, KeyError):
        return frozenset()
    if not isinstance(vocab, dict):  # (a Unigram tokenizer's is a list of pairs: not WordPiece's)
        return frozenset()
    return frozenset(w for w in vocab if isinstance(w, str) and w.isalnum())


_FILE_NAME_RE = re.compile(r"[\w.+@-]+(?:/[\w.+@-]+)*")


def file_name(text: str) -> str | None:
    """The file name or path a query is, or None: one word ending in a file's extension
    (`kernel-parameters.txt`, `setup.py`) or a path of names (`net/http/server.go`,
    `http/server.go`), without a leading `./` or `/`. `ov search` ranks the files
    at that path or of that name first (ov.engine `_named_files`); a docs reader types the
    name a cross-reference gave, and the file held no word of it more than the files that
    cite it. Never an identifier (`identifier`): `io.EOF` is not a file."""
    q = text.strip().removeprefix("./").strip("/")
    if not q or not _FILE_NAME_RE.fullmatch(q) or ".." in q.split("/"):
        return None
    last = q.rsplit("/", 1)[-1]
    stem, dot, ext = last.rpartition(".")
    if "/" in q or (dot and stem and ext.lower() in _FILE_ENDINGS):
        return q
    return None


# a wikilink as notes write it: `[[Certificates]]`, `[[Certificates|certs]]`, `[[Note#Heading]]`
_WIKILINK_RE = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
STEM_WORDS_MAX = 6


def stem_words(text: str) -> str | None:
    """The words of a query that may be a file's name without its extension, lowercased
    and joined by one space, or None: at most STEM_WORDS_MAX words, 3 characters or more in
    all, a wikilink read as the note it names. `ov search` ranks the few files whose name
    reads so first (ov.engine `_named_files`): "Reading list" had put `notes/Reading
    list.md` 25th and "npm install" `commands/npm-install.md` 10th, under passages the
    model read closer to two words (a review of a notes tree)."""
    m = _WIKILINK_RE.fullmatch(text.strip())
    name = m.group(1) if m else text.strip()
    stem, dot, ext = name.rpartition(".")
    if dot and stem and ext.lower() in _FILE_ENDINGS:  # `Reading list.md`: a name with a space
        name = stem
    words = re.findall(r"[^\W_]+", name)
    if not words or len(words) > STEM_WORDS_MAX or sum(map(len, words)) < 3:
        return None
    return " ".join(words).lower()


# a tag as notes write it in their text (Obsidian, Logseq): `#project`, `#project/falcon`,
# `#旅行`; not a number (`#42`, an issue), and not a heading's `# ` (a space follows)
_TAG_RE = re.compile(r"#([^\W\d_][\w/-]*|[\d_][\w/-]*[^\W\d_][\w/-]*)")
TAGS_MAX = 4


def tag_words(text: str) -> tuple[str, ...] | None:
    """The tags a query is, when it is nothing but 1 to TAGS_MAX of them (`#project`,
    `#project #falcon`), without their `#`; else None. `ov search` ranks the notes carrying
    them all first (ov.engine `_tagged_files`): `#project` had put the two notes tagged so
    12th and 36th, under notes using the word (a review of a notes tree)."""
    parts = text.split()
    if not 1 <= len(parts) <= TAGS_MAX or not all(_TAG_RE.fullmatch(p) for p in parts):
        return None
    return tuple(dict.fromkeys(p[1:] for p in parts))


def path_words(query: str) -> tuple[str, ...]:
    """The words of a query a file's path may hold, lowercased: 3 letters or more, not a
    stop word; a plural as its singular (`requests`: request); a name's parts too
    (`ServeHTTP`: servehttp, serve, http: a first search on the Go tree read `cmd/` first and
    answered with no file of net/http)."""
    out: dict[str, None] = {}
    for run in re.findall(r"[^\W_]+", query):
        parts = [run, *(_NAME_PART_RE.findall(run) if not run.islower() and not run.isupper() else ())]
        for w in (x.lower() for x in parts):
            if len(w) >= 3 and w not in STOPWORDS:  # a plural as its singular, which a path holding either holds
                out[w[:-1] if len(w) > 4 and w.endswith("s") else w] = None
    return tuple(out)


_NAME_PART_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def keyword_plan(text: str) -> KeywordPlan:
    words = []
    seen = set()
    for w in _WORD.findall(text):
        lw = w.lower()
        if lw not in seen:
            seen.add(lw)
            words.append(w)
    content = [w for w in words if w.lower() not in STOPWORDS]
    words = content or words
    # a word wholly of a script without spaces is searched as a substring (the trigram
    # table, or instr() for 1-2 characters), which finds every row the keyword table would
    # (there such a word is a row's whole run) and more; searched in both, its score would
    # count twice in the sum of the reads (ov.engine `_branches`)
    fts = " OR ".join(fts_phrase(w) for w in words if not _NOSPACE.fullmatch(w)) or None
    runs = _NOSPACE.findall(text)
    tri = [r for r in dict.fromkeys(runs) if len(r) >= 3]
    short = tuple(r for r in dict.fromkeys(runs) if len(r) < 3)
    # a run that is a whole word is searched twice (as a word, and in the trigram table or
    # by substring) but is one term of the query
    lowered = {w.lower() for w in words}
    terms = len(words) + sum(1 for r in (*tri, *short) if r.lower() not in lowered)
    # ... and a longer run is also searched by its pairs of characters, as CJK search
    # engines index such text: a question is written without spaces, and the text holds
    # its words apart ("如何关闭抽屉", how to close the drawer, found nothing where the
    # docs say "抽屉的关闭按钮"; "抽屉 关闭", with a space, found them)
    # The pairs count as one term of the query in all, each weighing its share (`Tree`):
    # counted one each, they had cut a word's share ("Docker 容器网络配置": en.md 0.76 -> 0.064)
    pairs = tuple(dict.fromkeys(p for r in tri for p in (r[i:i + 2] for i in range(len(r) - 1))
                                if p not in short))[:PAIRS_MAX]
    return KeywordPlan(fts, " OR ".join(fts_phrase(r) for r in tri) or None, short,
                       terms + bool(pairs), tuple(tri), pairs)


PAIRS_MAX = 12  # pairs of characters a query's runs without spaces are searched by (each a scan)


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise OvError("invalid_argument", f"--limit must be between 1 and {MAX_LIMIT}, not {limit}",
                      field="limit")
    return limit


def search_type(name: str) -> str:
    try:
        return SEARCH_TYPES[name]
    except KeyError:
        hint = "; context is a mode: --mode context" if name == "context" else ""
        raise OvError("invalid_argument",
                      f"unknown search type {name!r} (use hybrid, keywords, lexical or semantic{hint})",
                      field="search_type") from None


_REL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(value: str, field: str, now: datetime | None = None) -> float:
    """`2h`, `7d`, ISO 8601 or `YYYY-MM-DD` → epoch seconds (UTC where no zone is given)."""
    now = now or datetime.now(UTC)
    m = _REL.match(value or "")
    if m:
        try:  # `800000d` reaches before year 1: a clear error, not an overflow (issue 17)
            return (now - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2).lower()])).timestamp()
        except (OverflowError, ValueError):
            raise OvError("invalid_argument", f"--{field}: {value!r} reaches outside the years "
                          "1 to 9999", field=field) from None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise OvError("invalid_argument",
                      f"--{field}: cannot read {value!r} as a time (use 2h, 7d, 2024-05-01 or ISO 8601)",
                      field=field) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return dt.timestamp()
    except (OverflowError, ValueError, OSError):  # 0001-01-01T00:00+14:00
        raise OvError("invalid_argument", f"--{field}: {value!r} is outside the years 1 to 9999",
                      field=field) from None


def parse_levels(value: str | None) -> tuple[int, ...]:
    if value is None:
        return (2,)
    try:
        levels = tuple(sorted({int(x) for x in value.split(",") if x.strip()}))
    except ValueError:
        levels = ()
    if not levels or any(x not in (0, 1, 2) for x in levels):
        raise OvError("invalid_argument", f"--level must be a list of 0, 1 and 2, not {value!r}",
                      field="level")
    return levels


def request_key(*parts) -> str:
    return blake2b(json.dumps(parts, sort_keys=True, default=str).encode(),
                           digest_size=8).hexdigest()


# A cursor names the rankings its pages came from: (depth read, hits taken) per run of
# pages ranked at one depth (ov.engine.search). Depths grow by x4 from 64 to 4,096, so a
# real cursor holds at most five segments; anything beyond these bounds is not ours.
CURSOR_MAX_SEGMENTS = 8
CURSOR_MAX_DEPTH = 16 * KNN_MAX  # no page is ranked deeper than the branches can be read
# (vectors: KNN_MAX, sqlite-vec's largest k; keywords alone: this, ov.engine)
CURSOR_MAX_SHOWN = 100_000


def encode_cursor(generation: str, key: str, segments: list[tuple[int, int, str, int]]) -> str:
    raw = json.dumps({"g": generation, "k": key, "s": [list(x) for x in segments]},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, generation: str, key: str) -> list[tuple[int, int, str, int]]:
    """The (depth, hits taken, mark of the last hit taken, hits shown: the others were
    folded into a hit as its duplicates) segments a cursor carries; refused if it is
    malformed or the index changed."""
    invalid = OvError("invalid_argument", "the cursor is not valid; rerun the query without --cursor",
                      field="cursor")
    try:
        pad = "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(cursor + pad).decode())
        g, k = data["g"], data["k"]
        segments = [(int(seg[0]), int(seg[1]), str(seg[2]) if len(seg) > 2 else "",
                     int(seg[3]) if len(seg) > 3 else int(seg[1])) for seg in data["s"]]
    except Exception:
        raise invalid from None
    if k != key:
        raise OvError("invalid_argument", "the cursor belongs to another query; rerun the query",
                      field="cursor")
    if g != generation and str(g).split("/")[0] == generation.split("/")[0]:
        # only vectors came: a worker adding them (for hours on a big tree) made every
        # cursor of a hybrid or semantic search fail with "the index changed" (two reviews)
        raise OvError("invalid_argument",
                      "vectors were added since this cursor was made (the background worker is still adding "
                      "them, and a ranking that reads them changes as they come); rerun the query, or page "
                      "`--search-type keywords`, whose cursors last until the files change", field="cursor")
    if g != generation:
        raise OvError("invalid_argument",
                      "the index changed since this cursor was made; rerun the query", field="cursor")
    if (not segments or len(segments) > CURSOR_MAX_SEGMENTS
            or any(not 1 <= d <= CURSOR_MAX_DEPTH or n < 0 or len(t) > 16 or not 0 <= r <= n
                   for d, n, t, r in segments)
            or sum(n for _, n, _, _ in segments) > CURSOR_MAX_SHOWN):
        raise invalid
    return segments


# ---- the query's words in a text: the evidence a hit shows (ov.render, ov.engine) ----------


INFLECTIONS = ("ies", "es", "s", "ing", "ed")
# endings Porter's stemmer (FTS5's `porter`) can take off or reduce, for `query_stems`
DERIVATIONS = ("ational", "ations", "ation", "itions", "ition", "ions", "ion", "ments", "ment", "ness",
               "ities", "ity", "ically", "ical", "ives", "ive", "izes", "ized", "ize", "ises", "ised",
               "ise", "ures", "ure", "ers", "er", "ly", "e")


def query_pattern(query: str):
    """One regex per distinct query word (stop words left out unless the query is only
    them), each matching the word at a word start up to the end of that word; [] for a
    query with no word of two or more characters."""
    pats = []
    for w in _query_words(query):
        if any(c >= "\u3000" for c in w):  # CJK: no spaces between words, so any place
            pats.append(re.compile(re.escape(w)))
            continue
        # the shortest of the word and its forms without an English ending, kept to four
        # letters or more: "files" -> "file" (not "fil", which would find "filler")
        forms = [w[:-len(end)] for end in INFLECTIONS if w.endswith(end)]
        pats.append(_at_word_start(min((f for f in forms if len(f) >= 4), key=len, default=w)))
    return pats


def query_stems(query: str):
    """Weaker patterns, for the line a hit shows when no line holds a word of
    `query_pattern`: each word without a longer ending, to five letters or more.
    The keyword index stems "configuration" and "configured" alike, and the line shown
    had been the note's title; tried first, these had shown `import functools` for
    "function" and `#define` for "definition", so they only break ties."""
    out = []
    for w in _query_words(query):
        if any(c >= "\u3000" for c in w):
            continue
        forms = [w[:-len(end)] for end in DERIVATIONS if w.endswith(end) and len(w) - len(end) >= 5]
        if forms:
            out.append(_at_word_start(min(forms, key=len)))
    return out


def query_roots(query: str) -> list[str]:
    """What every match of each query word holds, as the keyword index stems them: the
    word (folded, stop words aside as `query_pattern` leaves them) without the shortest
    ending `query_pattern` or `query_stems` takes off (`configuration`: configur, which
    `configured` holds). For a test of literal text, such as a big file's trigram bitmap."""
    out = []
    for w in _query_words(query):
        forms = [w[:-len(end)] for ends, least in ((INFLECTIONS, 4), (DERIVATIONS, 5)) for end in ends
                 if w.endswith(end) and len(w) - len(end) >= least and not any(c >= "\u3000" for c in w)]
        out.append(min(forms, key=len, default=w))
    return out


def _query_words(query: str) -> list[str]:
    words = list(dict.fromkeys(w for w in re.findall(r"[^\W_]+", fold(query)) if len(w) > 1))
    return [w for w in words if w not in STOPWORDS] or words


def _at_word_start(stem: str):
    return re.compile(rf"(?<![^\W_]){re.escape(stem)}[^\W_]*", re.IGNORECASE)


def fold(text: str) -> str:
    """`text` lower-cased without its accents, as the keyword index reads it (unicode61
    `remove_diacritics 2`): "Poêle" -> "poele", so the line shown is the one that matched
    a query typed without them."""
    import unicodedata  # noqa: PLC0415

    if text.isascii():
        return text.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def words_in(text: str, pats) -> tuple[int, int]:
    """(the distinct query words `text` holds, their matches): how a line or a passage is
    judged as a hit's evidence (`query_pattern`'s patterns)."""
    t = fold(text)
    hits = [len(p.findall(t)) for p in pats]
    return sum(1 for n in hits if n), sum(hits)


# ---- the line a ranked hit is shown at (ov.engine, ov.render) ------------------------------
# A hit is shown as the line that best matches the query (`path:line: text`, which editors
# and `cut -d:` still read). A chunk's first line is often a decorator or a signature far
# above what matched; the best line is the one holding the most distinct query words (a
# word matches at a word start, so "event" finds "events").


class QueryPatterns(list):
    """`ov.query.query_pattern`'s patterns, with `weak`: `query_stems`' (`best_line`)."""

    def __init__(self, pats, weak=()) -> None:
        super().__init__(pats)
        self.weak = list(weak)


def best_line(lines: list[str], pats) -> int:
    """The index of the line holding the most distinct query words (then the most
    matches, then the most of `pats.weak`, the words without longer endings; the first of
    equals); without any match, the first non-blank line. A line
    of reStructuredText markup (`.. _serial_console:`) or a MyST target (`(parameter-types)=`)
    is the line only when no other holds a query word: its label had been shown above the
    title it names (click's docs: `parameter-types.md:1: (parameter-types)=`)."""
    from ov.chunk import MYST_TARGET_RE  # noqa: PLC0415 (ranked hits only: grep need not load it)

    best, best_key = None, (False, 0, 0, False, 0, 0)
    weak = getattr(pats, "weak", ())  # ov.query.query_stems: they break ties only
    for i, line in enumerate(lines):
        d, m = words_in(line, pats)
        dw, mw = words_in(line, weak) if weak else (0, 0)
        label = line.startswith(".. ") or MYST_TARGET_RE.match(line) is not None
        key = (d > 0 and not label, d, m, dw > 0 and not label, dw, mw)
        if key > best_key:
            best, best_key = i, key
    if best is not None:
        return best
    return next((i for i, line in enumerate(lines) if line.strip()), 0)


def name_line(lines: list[str], path: str, name: str) -> int | None:
    """For a query that is one code identifier (ov.query.identifier): the index of the line
    defining `name` (ov.tiers.defines), else of the first line holding it as a whole word,
    else None. The query's words would pick a line holding its qualifier most:
    `os.path.join` was shown by posixpath.py's `elif not path or path.endswith(sep)`, and
    `alloc_pages` by a `#define alloc_page(...) alloc_pages(...)` below its definition."""
    from ov.tiers import defines  # noqa: PLC0415

    text = "\n".join(lines)
    at = defines(text, path, name)
    if at is not None:
        return text.count("\n", 0, at)
    word = re.compile(r"(?<![\w$]){}(?![\w$])".format(re.escape(name)))
    return next((i for i, line in enumerate(lines) if word.search(line)), None)


def shown_line(lines: list[str], path: str, pats, name: str | None = None) -> int:
    """The index in `lines` (a hit's passage) of the line a hit is shown at: the one
    defining `name` or first holding it (`name_line`), else the best match (`best_line`).
    Text prints it as `path:line:`, and JSON carries it as the hit's `line` (ov.engine):
    an editor or an agent jumping to `start_line` had landed on the passage's comment."""
    at = name_line(lines, path, name) if name else None
    if at is not None:
        return at
    at = best_line(lines, pats)
    if is_notebook(path) and _NB_STRUCTURE_RE.match(lines[at] if at < len(lines) else "") \
            and not words_in(lines[at], pats)[0]:
        # no line holds a query word: a notebook's first line is its JSON's (`"source": [`),
        # shown for hit after hit; the first line of what the cell says instead
        return next((i for i, ln in enumerate(lines) if ln.strip() and not _NB_STRUCTURE_RE.match(ln)), at)
    return at


# a line of a notebook's JSON structure: a key opening a list or an object, or a bracket
_NB_STRUCTURE_RE = re.compile(r'^\s*(?:"[\w-]+"\s*:\s*[\[{]?\s*(?:[\]}]\s*)?,?|[\]}],?)\s*$')


def shown_line_terms(query: str) -> tuple[QueryPatterns, str | None]:
    """What `shown_line` reads of a query: its words' patterns, and the name it asks for
    (an identifier, or a word that may name a type or a function, shown where defined)."""
    ident = identifier(query)
    return QueryPatterns(query_pattern(query), query_stems(query)), (ident[0] if ident else type_name(query) or jargon(query))

