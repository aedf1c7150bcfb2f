"""The text the keyword and trigram tables are given, and user text quoted for FTS5.

Contentless FTS5 tables delete a row only when fed the same text again, so these are the
one definition of what a row holds: a chunk with its file's title and its camelCase words
split (`keyword_text`), a file's distinct runs for grep's prefilter (`trigram_doc`).
`fts_phrase` quotes user text so it is never parsed as FTS5 syntax. Pure.
"""

from __future__ import annotations

import re as _re



_CAMEL = _re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_IDENT = _re.compile(r"\b[A-Za-z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*\b")
_SEAM = _re.compile(r"[a-z][A-Z]")  # what every _IDENT match holds


def keyword_text(text: str, title: str = "") -> str:
    """The text indexed for BM25: the chunk, its file's title, and camelCase identifiers
    split into words.

    unicode61 already splits snake_case at `_`; `parseHttpHeader` is indexed as itself
    and as `parse Http Header` so a query for "http header" finds it. The title (the
    file's first line: a heading, a signature) keeps a document's subject in every chunk
    of it, not only the first.
    """
    # the seam search first: most text (C, prose) has none, and it costs a tenth of _IDENT's
    extra = {_CAMEL.sub(" ", m.group(0)) for m in _IDENT.finditer(text)} if _SEAM.search(text) else ()
    parts = [text]
    if title:
        parts.append(title)
    if extra:
        parts.append(" ".join(sorted(extra)))
    return "\n".join(parts)


# scripts without word separators (as ov.query's): CJK ideographs, kana, hangul, thai,
# lao, khmer, myanmar; the only passages `chunks_tri` holds
_NOSPACE = _re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]")


def has_nospace(text: str) -> bool:
    """Whether `text` holds a character of a script written without spaces."""
    return not text.isascii() and _NOSPACE.search(text) is not None


def trigram_doc(passages) -> str:
    """A file's `files_tri` text from its passages ((start, end, text), in file order): its
    distinct whitespace-separated runs, each once, joined by spaces.

    Passages cover every non-whitespace character of the file and what lies between two
    of them is whitespace, so a passage touching the next is joined to it as it stands
    (a long line cut in two) and one that does not is followed by a space: the runs of
    the result are exactly the file's. A literal's run lies inside one of them, so its
    trigrams are all in the row. Each run once: the kernel's C repeats its runs about
    twice, and a row's cost and size follow its characters. Computed from the stored
    passages, so the row can be deleted (contentless FTS5 wants the same text back)."""
    return " ".join(dict.fromkeys(joined(passages, " ").split()))


def joined(passages, gap: str) -> str:
    """Passages ((start, end, text), in file order) as one text, `gap` where the file had
    whitespace between two (they cover every non-space character of what they span)."""
    parts: list[str] = []
    end = None
    for start, stop, text in passages:
        if end is not None and start != end:
            parts.append(gap)
        parts.append(text)
        end = stop
    return "".join(parts)


TITLE_MAX = 200


def title_of(first_chunk_text: str) -> str:
    """A file's title: the first line of its first chunk (its first non-blank line)."""
    return first_chunk_text.split("\n", 1)[0].strip()[:TITLE_MAX]


_PHRASE = _re.compile(r'"((?:[^"]|"")*)"')
_OR_OF_PHRASES = _re.compile(r'"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*')


def or_phrases(match: str) -> list[str] | None:
    """The words of an OR of `fts_phrase`s, or None for any other FTS5 expression."""
    if not _OR_OF_PHRASES.fullmatch(match):
        return None
    return [m.replace('""', '"') for m in _PHRASE.findall(match)]


def fts_phrase(s: str) -> str:
    """A user string as one quoted FTS5 phrase: never parsed as FTS5 syntax."""
    return '"' + s.replace('"', '""') + '"'


FRONT_CHARS = 65536  # how much of a file's start its front matter is looked for in


def front_of(passages) -> str:
    """A file's start from its passages ((start, end, text), in order): "" unless the first
    begins the file; a gap between two kept as a newline (a front matter's lines stay
    lines). Read from an index row by row: a text that is not a string ends it."""
    passages = list(passages)
    if not passages or passages[0][0] != 0:
        return ""
    good = []
    for p in passages:
        if not isinstance(p[2], str):
            break
        good.append(p)
    return joined(good, "\n")
