"""Chunking: a file's decoded text → chunks that fit the embedding model's window; pure.

A chunk is an exact slice: `chunk.text == text[chunk.start:chunk.end]` in code points,
with 1-based inclusive line numbers that count "\\n" only (so CRLF is one break). Chunks
are cut at line boundaries, in file order, never empty, and together they cover every
non-whitespace character of the file; blank lines at a chunk's edges are left out. Only a
line that alone exceeds the budget is cut inside, at code-point positions (preferring
whitespace), into pieces of about equal size (with the default counter), each a chunk of
its own — except the first piece, which joins the lines above it when they are short (a
title or a heading: at most `JOIN_LEAD` of the budget since the last hard cut), so that
the chunk opening a long paragraph carries its subject.

Structure decides where to cut. Each non-blank line gets a priority for "a cut before
this line"; lines are packed greedily up to the token budget, and when the next line
does not fit, the chunk ends at the best-priority cut inside it (the latest one of the
best priority). Markdown headings are hard cuts: a section never joins the previous
one. Everything here is regexes over lines — it runs over every file of a tree.

Budget: `count_tokens(text)` counts what the model sees ([CLS] and [SEP] included) and
every chunk keeps it within `max_tokens`. The default counter, `model_tokens`,
over-estimates all-MiniLM-L6-v2's WordPiece count on real text (see its docstring).
Because BERT's pre-tokenizer always splits at whitespace, a chunk's count is the
counter's fixed overhead (`count_tokens("")`) plus its lines' own counts.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable

from ov.errors import OvError
from ov.model import Chunk
from ov.kinds import is_notebook, kind_of

MIN_MAX_TOKENS = 16  # below this a budget cannot hold a line of ordinary text
# An over-long line's first piece joins the lines above it when they hold at most this
# share of the budget (see `chunk_text`); measured in docs/BENCHMARKS.md.
JOIN_LEAD = 0.5

# Priorities of a cut before a line (higher is better).
HARD = 100  # always cut (a markdown heading, the end of front matter, an over-long line)
P_DEF = 4  # a top-level definition in code (with its decorators / comments)
P_PARA = 3  # a new paragraph, a fenced block; in code, a top-level line after a blank
P_BLANK = 2  # after a blank line (any indentation), a list item
P_SHALLOW = 1  # a line at indentation 0
P_NONE = 0

# --- the token estimate ---------------------------------------------------------------
# BERT splits at whitespace and at every punctuation character, lower-cases, then cuts
# each word into WordPiece pieces. A run of more than 100 letters/digits becomes one
# [UNK]; lower-case letters average about a piece per 4 characters in code and prose,
# upper-case runs (acronyms, constants) and digits about one per 2, and a switch
# between letters and digits (hex, base64, identifiers like x86_64) starts a new piece.
# Anything else that is not whitespace (punctuation, CJK, accented or other scripts,
# emoji) counts one each — exact for punctuation and CJK, high for the rest.
# One pattern, so one scan: the empty matches at letter/digit seams come first so they
# are not shadowed by the piece that starts there.
_TOKEN_RE = re.compile(
    r"(?<=[0-9])(?=[A-Za-z])|(?<=[A-Za-z])(?=[0-9])"
    r"|[A-Za-z0-9]{101,}|([A-Za-z])(?=\1)|[a-z]{1,4}|[A-Z]{1,2}|[0-9]{1,2}|[^\sA-Za-z0-9]"
)


def model_tokens(text: str) -> int:
    """A fast, conservative estimate of all-MiniLM-L6-v2's token count, [CLS]+[SEP] included.

    Measured against the real tokenizer on ~8,700 spans of 5-25 lines (median ~150
    tokens) from Python's standard library, markdown/rst documents and C/JS sources: the
    estimate / real ratio has a median of 1.16-1.22, a 1st percentile of 0.95-0.98 and a
    minimum of 0.84 (long hex and base64 runs). With prose's budget of 200 that leaves
    every chunk within the 256-token window; code's budget is the window itself, 256
    (ov.indexer.CODE_CHUNK_TOKENS), and a few dense passages run a little past it.
    """
    return 2 + _pieces(text)


# `_TOKEN_RE`'s count by parts, the same number at under half the cost on a tree's lines
# (the pattern's lookbehinds run at every position): no match crosses the edge of a run of
# ASCII letters and digits (a seam needs one on each side), so every other character that
# is not whitespace is one match, and each run counts what it counts alone. Runs repeat
# (identifiers, keywords), so theirs are remembered. tests/test_chunk.py holds the two equal.
_RUN_RE = re.compile(r"[A-Za-z0-9]+")
_RUN_PIECES: dict[str, int] = {}
# Lines repeat (`}`, `return 0;`, a license header): ~25 % of a tree's non-blank lines are
# ones the same process counted before. Each cache is cleared when full.
_LINE_TOKENS: dict[str, int] = {}
LINE_CACHE = 200_000


def _pieces(text: str) -> int:
    """`len(_TOKEN_RE.findall(text))`, by parts (above)."""
    n = len("".join(text.split()))  # the characters that are not whitespace
    for run in _RUN_RE.findall(text):
        k = _RUN_PIECES.get(run)
        if k is None:
            if len(_RUN_PIECES) >= LINE_CACHE:
                _RUN_PIECES.clear()
            k = _RUN_PIECES[run] = len(_TOKEN_RE.findall(run))
        n += k - len(run)
    return n


def _estimate_line(line: str) -> int:
    """`model_tokens(line)`, remembered."""
    n = _LINE_TOKENS.get(line)
    if n is None:
        if len(_LINE_TOKENS) >= LINE_CACHE:
            _LINE_TOKENS.clear()
        n = _LINE_TOKENS[line] = 2 + _pieces(line)
    return n


# Languages where a column-0 "type name(args" line without ';' defines a function.
_C_LIKE_EXT = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".ipp", ".tpp",
                         ".inl", ".ixx", ".cppm",
                         ".h++", ".ino", ".m", ".mm", ".cu", ".cuh", ".cs", ".java", ".d"})


# --- line priorities ------------------------------------------------------------------
_MODIFIERS = (
    r"(?:(?:export|public|private|protected|internal|static|async|abstract|final|sealed|open|"
    r"override|default|extern|inline|unsafe|declare|virtual|partial|data|suspend|"
    r"pub(?:\([\w:\s]+\))?)\s+)*"
)
_DEF_RE = re.compile(
    r"^" + _MODIFIERS + r"(?:def|class|function\*?|fn|func|impl|struct|enum|union|trait|"
    r"interface|type|typedef|const|let|var|val|module|mod|namespace|package|object|record|"
    r"protocol|extension|template|macro_rules!|local\s+function|sub|proc|defmodule|defp?|"
    r"defn|fun|resource|data|variable|output|provider|service|message|CREATE)\b"
    r"|^\[[^\]\n]+\]\s*$"  # a TOML/INI section
)
# A C/C++/Java/C# function definition at column 0: a type, a name and "(" with no ";".
_C_FUNC_RE = re.compile(r"^[A-Za-z_][\w\s\*&:<>,~\[\]]*?[\w~>\*&]\s*\([^;]*$")
_C_NOT_FUNC_RE = re.compile(r"^(?:if|for|while|switch|return|else|do|case|sizeof)\b")
# Lines that belong to the definition below them: decorators, attributes, comments.
_PREAMBLE_RE = re.compile(r"^(?:@|#\[|#!\[|//|/\*|\*|#(?!include|define|if|endif|else|pragma)|--|;)")
_CLOSER_RE = re.compile(r"^(?:[}\])]+[;,)]*|end|fi|esac|done)\s*$")

_ATX_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT_MD_RE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
RST_ADORN_RE = re.compile(r"^([=\-~^\"'`#*+:.!$%&,/;<>?@\\_|])\1{2,}\s*$")
_LIST_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _code_priorities(lines: list[str], blank: list[bool], ext: str) -> list[int]:
    c_like = ext in _C_LIKE_EXT
    n = len(lines)
    prio = [P_NONE] * n
    prev = -1  # the previous non-blank line
    for i, line in enumerate(lines):
        if blank[i]:
            continue
        top = not line[0].isspace()
        after_blank = prev >= 0 and prev != i - 1
        p = P_NONE
        if top:
            p = P_SHALLOW
            if after_blank or (prev >= 0 and _CLOSER_RE.match(lines[prev])):
                p = P_PARA
            if _DEF_RE.match(line) or (
                c_like and _C_FUNC_RE.match(line) and not _C_NOT_FUNC_RE.match(line)
            ):
                # The cut goes above the decorators and comments that belong to it.
                k = i
                while k - 1 >= 0 and not blank[k - 1] and _PREAMBLE_RE.match(lines[k - 1]):
                    k -= 1
                prio[k] = max(prio[k], P_DEF)
                if k != i:
                    p = P_NONE
                else:
                    p = P_DEF
        elif after_blank:
            p = P_BLANK
        prio[i] = max(prio[i], p)
        prev = i
    return prio


def _prose_priorities(lines: list[str], blank: list[bool], kind: str, head: list[bool]) -> list[int]:
    """Markdown, reStructuredText and plain text. `head` (one flag a line) is set where a
    line belongs to a heading: its text, its adornment, the labels above it (`_pack`)."""
    n = len(lines)
    prio = [P_NONE] * n
    fence: str | None = None  # the opening fence while inside a fenced block
    para_start = -1  # first line of the current paragraph, for setext headings
    prev = -1
    start = 0
    if kind == "markdown" and n > 1 and lines[0].rstrip() == "---":
        for j in range(1, n):
            if lines[j].rstrip() in ("---", "..."):
                start = j + 1  # front matter is a chunk of its own: the cut goes on the
                k = start  # first line after it that is not blank (blank lines are no items)
                while k < n and blank[k]:
                    k += 1
                if k < n:
                    prio[k] = HARD
                break
    for i in range(start, n):
        line = lines[i]
        if blank[i]:
            continue
        after_blank = prev >= 0 and prev != i - 1
        p = P_NONE
        if kind == "markdown":
            m = _FENCE_RE.match(line)
            if fence is not None:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                        and not line[m.end():].strip():
                    fence = None
                prio[i] = max(prio[i], P_BLANK if after_blank else P_NONE)
                prev = i
                if fence is None:
                    para_start = -1
                continue
            if m:
                fence = m.group(1)
                p = P_PARA
            elif _ATX_RE.match(line):
                top = _myst_targets_above(lines, blank, i)
                p = HARD if top == i else P_NONE  # its MyST targets start the section with it
                prio[top] = HARD
                for m in range(top, i + 1):
                    head[m] = True
            elif _SETEXT_MD_RE.match(line) and para_start >= 0 and not after_blank:
                prio[para_start] = HARD  # the paragraph above is the heading's text
                for k in range(para_start, i + 1):
                    head[k] = True
            elif after_blank or para_start < 0:
                p = P_PARA
            elif _LIST_RE.match(line):
                p = P_BLANK
        elif kind == "rst":
            if RST_ADORN_RE.match(line) and para_start >= 0 and not after_blank \
                    and len(line.rstrip()) >= min(3, len(lines[i - 1].strip())):
                # An underline: the title above it (and its overline, if any) starts a section.
                k = i - 1
                if k - 1 >= 0 and not blank[k - 1] and RST_ADORN_RE.match(lines[k - 1]):
                    k -= 1
                top = _rst_markup_above(lines, blank, k)
                if top < k:  # its label or comment lines start the section with it
                    prio[k] = P_NONE
                prio[top] = HARD
                for m in range(top, i + 1):
                    head[m] = True
            elif after_blank or para_start < 0:
                p = P_PARA
            elif _LIST_RE.match(line):
                p = P_BLANK
        else:
            if after_blank:
                p = P_PARA
            elif _LIST_RE.match(line):
                p = P_BLANK
        if after_blank or para_start < 0 or p >= P_PARA:
            para_start = i
        prio[i] = max(prio[i], p)
        prev = i
    return prio


MYST_TARGET_RE = re.compile(r"\(\S+\)=\s*$")


def _myst_targets_above(lines: list[str], blank: list[bool], k: int) -> int:
    """The first of the MyST target lines (`(parameter-types)=`) just above the heading at
    line `k`, blank lines between; `k` when there is none. Cut above the heading, a target
    was a passage of its own, and click's docs showed `parameter-types.md:1:
    (parameter-types)=` for a question its section answered (as rst's labels, below)."""
    top, m = k, k - 1
    while m >= 0 and (blank[m] or MYST_TARGET_RE.match(lines[m])):
        if not blank[m]:
            top = m
        m -= 1
    return top


def _rst_markup_above(lines: list[str], blank: list[bool], k: int) -> int:
    """The first line of the one-line explicit markup (`.. _label:`, a `..` comment such
    as the SPDX licence line) just above the title at line `k`, blank lines between; `k`
    when there is none. Cut above the title, they had been passages of their own (1,731
    of the kernel's .rst passages, ranked first for their few words)."""
    top = k
    m = k - 1
    while m >= 0:
        if blank[m]:
            m -= 1
            continue
        if not lines[m].startswith("..") or RST_ADORN_RE.match(lines[m]) \
                or (m + 1 < len(lines) and lines[m + 1][:1].isspace() and not blank[m + 1]):
            break  # not markup, or markup with a body (a directive's content)
        top = m
        m -= 1
    return top


# --- packing --------------------------------------------------------------------------
def chunk_text(
    text: str,
    path: str,
    *,
    max_tokens: int = 200,
    overlap_lines: int = 0,
    count_tokens: Callable[[str], int] | None = None,
) -> list[Chunk]:
    """Cut `text` (the decoded content of `path`) into chunks of at most `max_tokens`.

    `overlap_lines` lets a chunk repeat up to that many non-blank lines of the previous
    one (never across a hard cut such as a markdown heading).
    """
    if max_tokens < MIN_MAX_TOKENS:
        raise OvError("invalid_argument", f"max_tokens must be at least {MIN_MAX_TOKENS}",
                      field="max_tokens")
    if overlap_lines < 0:
        raise OvError("invalid_argument", "overlap_lines must be >= 0", field="overlap_lines")
    count = count_tokens or _estimate_line
    overhead = count("")
    budget = max_tokens - overhead
    if budget < 1:
        raise OvError("invalid_argument", "max_tokens leaves no room for text", field="max_tokens")

    lines = text.split("\n")
    blank = [not ln or ln.isspace() for ln in lines]
    kind = kind_of(path)
    head = [False] * len(lines)
    if kind == "code":
        prio = _code_priorities(lines, blank, os.path.splitext(path.lower())[1])
    else:
        prio = _prose_priorities(lines, blank, kind, head)

    if is_notebook(path):
        for a, b in notebook_sources(lines):  # a cell's source is never cut with its neighbours
            prio[a] = HARD
            k = b + 1
            while k < len(lines) and blank[k]:
                k += 1
            if k < len(lines):
                prio[k] = HARD
    items = _items(lines, blank, prio, count, overhead, budget, count_tokens, head)
    return _pack(text, items, budget, overlap_lines,
                 int(budget * JOIN_LEAD) if kind in ("markdown", "rst") else 0,
                 CODE_MIN_TOKENS if kind == "code" else 0)


# Encoded data inside a file the model otherwise reads: a notebook's plotted image (one
# base64 line of 20-200 KB, cut into a hundred passages or more), a data: URI in markdown or
# HTML, a certificate, a hex dump. Such a run has no words for the model, and its passages
# would take the model's time and crowd the vectors; they stay keyword- and grep-searchable.
_BLOB_RE = re.compile(r"[A-Za-z0-9+/=]{64,}")
_CLASS_RUN_RE = re.compile(r"[A-Z]+|[a-z]+|[0-9]+|[+/=]+")
BLOB_SHARE = 0.5
_BLOB_BYTES = bytes(97 if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "+/=") else 32 for c in range(256))
_BLOB_NEEDLE = b"a" * 64
# Random base64 changes between capitals, small letters and digits every 1.6 characters,
# hex every 1.9; words and identifiers run longer (CamelCase ~5, a URL's path longer): data
# is a run whose pieces of one class average at most 2.5 characters.
BLOB_PIECES = 0.4


def encoded_blob(text: str) -> bool:
    """Whether most of a row's text (spaces aside) is encoded data: runs of 64 or more
    base64 or hex characters that switch between capitals, small letters and digits as
    random data does. A rule of `=`, a long identifier (`_` breaks a run; CamelCase pieces
    are long), a URL or a word is not data (a sample of the kernel: no register name, UUID
    or link is taken for data)."""
    # a run of 64 is looked for at C speed first (1.4 ms per MB against the regex's 12;
    # nearly no passage has one)
    runs = data_runs(text)
    if not runs:
        return False
    return sum(b - a for a, b in runs) >= BLOB_SHARE * (len(text) - sum(text.count(w) for w in " \n\t"))


def data_runs(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each run of 64 or more base64 or hex characters in `text` that
    switches between capitals, small letters and digits as random data does (see
    `encoded_blob`); [] at C speed for nearly all text."""
    if _BLOB_NEEDLE not in text.encode("utf-8", "surrogatepass").translate(_BLOB_BYTES):
        return []
    return [m.span() for m in _BLOB_RE.finditer(text)
            if len(_CLASS_RUN_RE.findall(m.group())) >= BLOB_PIECES * (m.end() - m.start())]


_NB_SOURCE_RE = re.compile(r'^(\s*)"source":\s*(\[)?')


def notebook_sources(lines: list[str]) -> list[tuple[int, int]]:
    """Where a Jupyter notebook's cell sources are, as Jupyter writes its JSON (a key a
    line, a list item a line): (first, last) line indexes of each `"source": [` list, its
    closing `]` included; [] for a notebook on one line. The rest of the file is its
    structure, its cells' metadata and their outputs (tables, logs, plotted images):
    chunking cuts around each source, and only the sources' passages get vectors
    (ov.indexer), so a notebook is embedded for what its author wrote. A `"source"` key
    counts at the indent of the cells' `"cell_type"` keys only (an output's JSON may hold
    one of its own)."""
    indent = next((_indent(ln) for ln in lines if ln.lstrip().startswith('"cell_type"')), None)
    if indent is None:
        return []
    out = []
    i, n = 0, len(lines)
    while i < n:
        m = _NB_SOURCE_RE.match(lines[i])
        if m is None or len(m.group(1)) != indent:
            i += 1
            continue
        end = i
        if m.group(2) and not lines[i].rstrip().rstrip(",").endswith("]"):  # a list over lines
            end = i + 1
            while end < n and not (lines[end].lstrip().startswith("]") and _indent(lines[end]) == indent):
                end += 1
            end = min(end, n - 1)
        out.append((i, end))
        i = end + 1
    return out


def _items(lines: list[str], blank: list[bool], prio: list[int], count: Callable[[str], int],
           overhead: int, budget: int, count_tokens: Callable[[str], int] | None,
           head: list[bool]):
    """The non-blank lines, each as an item: (start, end, line number, tokens, priority,
    part of a heading), in six parallel lists; an over-long line becomes several items,
    each a chunk of its own. `prio` is updated where a split line makes the next line a
    hard cut."""
    starts: list[int] = []
    ends: list[int] = []
    nums: list[int] = []
    toks: list[int] = []
    prios: list[int] = []
    heads: list[bool] = []
    pos = 0
    since_hard = 0  # tokens of the items since the last hard cut (all in one chunk if small)
    for i, line in enumerate(lines):
        line_start = pos
        pos += len(line) + 1
        if blank[i]:
            continue
        content = line.rstrip()
        t = count(content) - overhead
        if t <= budget:
            starts.append(line_start)
            ends.append(line_start + len(content))
            nums.append(i + 1)
            toks.append(t)
            prios.append(prio[i])
            heads.append(head[i])
            since_hard = t if prio[i] == HARD or len(starts) == 1 else since_hard + t
            continue
        # A short lead (a title, a heading) shares a chunk with the first piece, so the
        # vector of the text's start carries its subject too: everything since the last
        # hard cut then fits in one chunk, which the packing below keeps together.
        # (not to encoded data, which gets no vector: the lead would lose its own)
        blob = encoded_blob(content)
        join = 0 < since_hard <= budget * JOIN_LEAD and prio[i] != HARD and not blob
        pieces = _data_pieces(content, budget, count, count_tokens or model_tokens, overhead,
                              count_tokens is None) if blob else _split_long(
            content, budget, count_tokens or model_tokens, overhead, count_tokens is None,
            budget - since_hard if join else budget)
        for k, (a, b, pt) in enumerate(pieces):
            starts.append(line_start + a)
            ends.append(line_start + b)
            nums.append(i + 1)
            toks.append(pt)
            prios.append(prio[i] if k == 0 and join else HARD)
            heads.append(False)
        since_hard = 0
        # Nothing joins the pieces either: the next non-blank line starts a chunk.
        j = i + 1
        while j < len(lines) and blank[j]:
            j += 1
        if j < len(lines):
            prio[j] = HARD

    return starts, ends, nums, toks, prios, heads


# A code passage ends at a good cut only past this many estimated tokens of lines that say
# something (`_STRUCTURAL_RE`'s say nothing): the best cut after `namespace asio {` (the
# comment above the class) had left it a passage of its own, which ranked second for
# `BOOST_ASIO_DECL` and fourth for `boost::asio::io_context` (a C++ tree's review)
CODE_MIN_TOKENS = 8
# lines that only open or close a scope or a preprocessor condition
_STRUCTURAL_RE = re.compile(r"\s*(?:(?:namespace\b[\w:\s]*\{\s*)*namespace\b[\w:\s]*\{?|[{}()\[\];,][{}()\[\];,\s]*|"
                            r"#\s*(?:if|ifdef|ifndef|elif|else|endif|pragma)\b.*|"
                            r"#\s*define\s+\w*_(?:H|HH|HPP|HXX|INCLUDED)_*\s*|"  # an include guard
                            r"(?:public|private|protected)\s*:|extern\s+\"C\"\s*\{?)\s*(?://.*)?")


def _says(text: str, starts: list[int], ends: list[int], toks: list[int], a: int, b: int, least: int) -> bool:
    """Whether items a..b-1 hold at least `least` tokens of lines that are not structural."""
    got = 0
    for k in range(a, b):
        if not _STRUCTURAL_RE.fullmatch(text, starts[k], ends[k]):
            got += toks[k]
            if got >= least:
                return True
    return False


def _pack(text: str, items, budget: int, overlap_lines: int, lead: int = 0,
          least: int = 0) -> list[Chunk]:
    """Items into chunks: as many as fit the budget, ending at the best cut when the next
    one does not fit, never across a hard cut; with `overlap_lines`, a chunk repeats up to
    that many lines of the previous one.

    With `lead` (markdown and reStructuredText), a chunk that opens with a heading of at
    most `lead` tokens is never that heading alone: it takes the next heading with it when
    the section has no text of its own, and its first block's first lines when that block
    does not fit. Headings alone had been 2,577 of the kernel's 67,079 .rst passages,
    ranked first for their few words and served as context."""
    starts, ends, nums, toks, prios, heads = items
    chunks: list[Chunk] = []
    spans: list[tuple[int, int]] = []  # each chunk's items
    n = len(starts)
    i = 0  # first item not yet in any chunk
    prev_s = -1
    while i < n:
        s = i  # first item of this chunk (earlier than i when repeating lines)
        if overlap_lines and chunks and prios[i] != HARD:
            s = max(i - overlap_lines, prev_s + 1)
            while s < i and (sum(toks[s:i + 1]) > budget or HARD in prios[s + 1:i + 1]):
                s += 1
        used = sum(toks[s:i + 1])
        body = -1 if lead and heads[i] else i  # the first item under the heading(s)
        j = i + 1
        while j < n and used + toks[j] <= budget:
            if prios[j] == HARD and (body >= 0 or used > lead):
                break
            if body < 0 and not heads[j]:
                body = j
            used += toks[j]
            j += 1
        if j < n and prios[j] != HARD and j - i > 1:
            # The next line does not fit: end at the best cut, the latest of the best
            # (after the heading's first block has begun, when it opens one)
            best = j
            low = body if body >= 0 and sum(toks[s:body]) <= lead else i
            for k in range(j - 1, low, -1):
                if prios[k] > prios[best] and (not least or _says(text, starts, ends, toks, s, k, least)):
                    best = k  # (with `least`: not a sliver)
            j = best
        if (least and chunks and j == n and prios[i] != HARD and s == i and sum(toks[spans[-1][0]:n]) <= budget
                and not _says(text, starts, ends, toks, s, n, least)):
            # the text's last lines say nothing of their own (`}`, `#endif`): with the passage before
            s = spans.pop()[0]
            chunks.pop()
        chunks.append(Chunk(starts[s], ends[j - 1], nums[s], nums[j - 1],
                            text[starts[s]:ends[j - 1]]))
        spans.append((s, j))
        prev_s = s
        i = j
    return chunks


# A run of encoded data gets no vector, so it is cut in pieces of this many characters, not
# at the model's window: a notebook's plot of 150 KB made ~200 rows of 256 tokens each. The
# cut bounds what one passage (a hit's excerpt) holds.
DATA_PIECE_CHARS = 32_768


def _data_pieces(line: str, full: int, estimate: Callable[[str], int], count: Callable[[str], int],
                 overhead: int, fast: bool):
    """Pieces (start, end, tokens) of a line that is mostly encoded data (`encoded_blob`):
    each data run (`data_runs`) in pieces of DATA_PIECE_CHARS, and the text between the
    runs (a paragraph written on the line before its `![chart](data:...)`) cut as any long
    line is, so that it keeps its vector. A short text beside a run (`"image/png": "`, the
    `)` closing a link) goes with the run's piece, not in a passage of its own."""
    out: list[tuple[int, int, int]] = []
    data_last = False  # whether out[-1] is a piece of data
    carry = None  # the start of a short text the next run's first piece takes
    pos = 0
    for a, b in [*data_runs(line), (len(line), len(line))]:
        seg = line[pos:a]
        if seg.strip():
            lead = pos + len(seg) - len(seg.lstrip())
            short = len(seg.strip()) < DATA_GLUE_CHARS or not _WORDY.search(seg)
            if short and data_last:
                s0 = out.pop()[0]
                e = pos + len(seg.rstrip())
                out.append((s0, e, estimate(line[s0:e]) - overhead))
            elif short and a < b:
                carry = lead
            else:
                t = estimate(seg) - overhead
                out += ((pos + x, pos + y, pt) for x, y, pt in (
                    [(0, len(seg.rstrip()), t)] if t <= full else _split_long(seg, full, count, overhead, fast, full)))
                data_last = False
        for k in range(a, b, DATA_PIECE_CHARS):
            s0, e = (carry if carry is not None else k), min(b, k + DATA_PIECE_CHARS)
            carry = None
            out.append((s0, e, estimate(line[s0:e]) - overhead))
            data_last = True
        pos = b
    return out


DATA_GLUE_CHARS = 64  # a text shorter than this beside a data run goes with it (`_data_pieces`)
_WORDY = re.compile(r"[^\W_]")


def _split_long(line: str, full: int, count: Callable[[str], int], overhead: int,
                fast: bool, first: int):
    """Pieces (start, end, tokens) of a line that does not fit: the first within `first`,
    the others within `full`.

    With the default estimate (`fast`), the token ends of one scan give each piece's end
    directly, and the pieces after the first are evened out (n pieces of about 1/n of
    what is left each, not n - 1 full ones and a scrap whose vector means little); with
    another counter, a prefix that fits is found by doubling, then bisection.
    """
    n = len(line)
    tok_ends = [m.end() for m in _TOKEN_RE.finditer(line)] if fast else []
    pos = 0
    budget = first
    while pos < n:
        while pos < n and line[pos].isspace():
            pos += 1
        if pos >= n:
            return
        if fast and budget == full:
            left = len(tok_ends) - bisect.bisect_right(tok_ends, pos)
            if left > full:
                # + 4: a piece's count may differ a little from its share at the seams
                budget = min(full, -(-left // -(-left // full)) + 4)

        def cost(e: int) -> int:
            return count(line[pos:e]) - overhead

        end = -1
        if fast:
            k = bisect.bisect_right(tok_ends, pos) + budget - 1
            for back in (0, 1, 2, 4, 8):  # a seam at the cut may shift the count a little
                e = n if k - back >= len(tok_ends) else tok_ends[max(k - back, 0)]
                if e > pos and cost(e) <= budget:
                    end = e
                    break
        if end < 0:
            lo, hi = pos + 1, min(n, pos + max(16, budget * 3))
            while cost(hi) <= budget:
                if hi == n:
                    break
                lo, hi = hi, min(n, pos + 2 * (hi - pos))
            if cost(hi) <= budget:
                lo = hi
            else:
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if cost(mid) <= budget:
                        lo = mid
                    else:
                        hi = mid
            end = lo
        if end < n:
            # Prefer to cut at whitespace in the second half of the piece.
            half = pos + (end - pos) // 2
            cut = max(line.rfind(" ", half, end), line.rfind("\t", half, end))
            if cut > pos and cost(cut) <= budget:
                end = cut
        piece_end = pos + len(line[pos:end].rstrip())
        yield pos, piece_end, cost(piece_end)
        pos = end
        budget = full


# ---- passages for keywords alone ------------------------------------------------------
# An index no model reads (`ov index --no-embed`) needs passages only to rank keyword hits
# and show them. Cutting to the model's window counts every line's tokens (`chunk_text`:
# 108 ms a MB of the kernel's fs/, half the keyword phase's reading side); this cut counts
# characters at C speed (~5 ms a MB). A passage ends at the first blank line past
# LINE_CUT_CHARS characters and before twice that, else at the first line end past
# LINE_CUT_CHARS; a longer line is cut inside, at its last space before twice that when it
# has one, so no passage is over twice LINE_CUT_CHARS. The chunks keep `chunk_text`'s
# contract (exact slices, file order, never empty, blank lines left out at their edges,
# every non-whitespace character covered).
LINE_CUT_CHARS = 600
_BLANK_LINE_RE = re.compile(r"\n[ \t\r\f\v]*\n")
_BLANK_LINES_RE = re.compile(r"(?:[ \t\r\f\v]*\n)+")


def line_cut(text: str, chars: int = LINE_CUT_CHARS) -> list[Chunk]:
    """`text` cut in passages of about `chars` characters at blank lines (above)."""
    out: list[Chunk] = []
    n, a, line = len(text), 0, 1
    while a < n:
        m = _BLANK_LINES_RE.match(text, a)  # the line end before, and blank lines
        if m:
            line += text.count("\n", a, m.end())
            a = m.end()
            if a >= n:
                break
        hi = a + 2 * chars
        m = _BLANK_LINE_RE.search(text, a + chars, hi)
        if m:
            b = m.start()
        elif n <= hi:
            b = n
        else:  # a long block: at a line end; a long line: at a space, else anywhere
            b = text.find("\n", a + chars, hi)
            if b < 0:
                b = text.rfind(" ", a + 1, hi)
                b = hi if b < 0 else b
        piece = text[a:b].rstrip()
        if piece:
            out.append(Chunk(a, a + len(piece), line, line + piece.count("\n"), piece))
        line += text.count("\n", a, b)
        a = b
    return out


# ---- sentences ------------------------------------------------------------------------

# Sentence rows (level 3: a vector each, no keyword row) belonged to an older index layout;
# `ov index` no longer makes them (ov.indexer.VECTOR_LEVELS). `sentences` stays for what
# that layout cost (scripts/bench_tokens.py) and for reading such an index until it is
# re-chunked.
SENTENCE = 3
# A sentence ends at . ! or ? followed by space and a capital, a digit or an opening
# bracket (so "e.g. the" and "3.5 mm" do not end one); a blank line ends one too. Single
# line breaks do not: prose is often wrapped inside a paragraph. A blank line may hold a
# "\r" (CRLF files: "# Title\r\n\r\nText." is two sentences, as with LF).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|\n[ \t\r]*\n\s*")


def sentences(text: str, passages: list[Chunk]) -> list[Chunk]:
    """A prose file's sentences, as level-3 chunks (exact slices of `text`); each is
    evidence for the passage holding its start (`Store.passages_holding`). None for a
    file of one sentence, and none that is a whole passage: the passage's own vector
    already says it. Whitespace-only pieces are left out."""
    spans = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    spans = [(a, b) for a, b in spans if text[a:b].strip()]
    if len(spans) < 2:
        return []
    whole = {(p.start, p.end) for p in passages}
    out: list[Chunk] = []
    line, counted = 1, 0  # lines counted on from the last sentence: counting from the
    # file's start for each one costs 14 s on a 1 MB file of 100,000 sentences
    for a, b in spans:
        seg = text[a:b]
        piece = seg.strip()
        a += len(seg) - len(seg.lstrip())
        b = a + len(piece)
        line += text.count("\n", counted, a)
        counted = a
        if (a, b) in whole:
            continue
        out.append(Chunk(a, b, line, line + piece.count("\n"), piece, level=SENTENCE))
    return out
