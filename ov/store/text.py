"""The text the keyword and trigram tables are given, and user text quoted for FTS5.

Contentless FTS5 tables delete a row only when fed the same text again, so these are the
one definition of what a row holds: a chunk with its file's title and its camelCase words
split (`keyword_text`), a file's distinct runs for grep's prefilter (`trigram_doc`,
`trigram_runs`).
`fts_phrase` quotes user text so it is never parsed as FTS5 syntax. Pure.
"""

from __future__ import annotations

import re as _re
import re



_CAMEL = _re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_IDENT = _re.compile(r"\b[A-Za-z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*\b")
# what every _IDENT match holds: a small letter before a capital (`camel_words`)
_LETTER_CASE = bytes(97 if 97 <= c <= 122 else 65 if 65 <= c <= 90 else 32 for c in range(256))


def keyword_text(text: str, title: str = "", camel: str | None = None) -> str:
    """The text indexed for BM25: the chunk, its file's title, and camelCase identifiers
    split into words.

    unicode61 already splits snake_case at `_`; `parseHttpHeader` is indexed as itself
    and as `parse Http Header` so a query for "http header" finds it. The title (the
    file's first line: a heading, a signature) keeps a document's subject in every chunk
    of it, not only the first. `camel`, when given, is `camel_words(text)` computed before.
    """
    extra = camel_words(text) if camel is None else camel
    parts = [text]
    if title:
        parts.append(title)
    if extra:
        parts.append(extra)
    return "\n".join(parts)


def camel_words(text: str) -> str:
    """The camelCase identifiers of `text` split into words, each once, sorted, joined by
    spaces ("" for none): what `keyword_text` adds. Runs of encoded data (a notebook's
    plotted image in base64: `ov.chunk.data_runs`) are no identifiers: split, they gave
    English words (`...BQOSGZmpOwl...` made `Owl`), and a keyword search for "owl" put a
    plot's base64 first at 0.907."""
    # the seam looked for first: most text (C, prose) has none. A small letter and a
    # capital become `a` and `A`, all else a space, and `aA` is found at C speed: 2.9 ms a
    # MB of the kernel's fs/, where a regex search for [a-z][A-Z] took 10.5
    if b"aA" not in text.encode("utf-8", "surrogatepass").translate(_LETTER_CASE):
        return ""
    from ov.chunk import data_runs  # noqa: PLC0415 - the keyword rows' writers alone need it

    for a, b in reversed(data_runs(text)):
        # judged by its parts between `/`, `+` and `=`: a URL or a path with a hash in it is
        # a run too, and its names (`fooBar/bazQux/<sha>/mainFile`) keep their words
        text = text[:a] + _SEP_RE.sub(_data_part, text[a:b]) + text[b:]
    return camel_words_of(text)


_SEP_RE = re.compile(r"[^+/=]+")
_PIECE_RE = re.compile(r"[A-Z][a-z]*|[a-z]+|[0-9]+")  # a capital and its small letters: one piece


def _data_part(m: re.Match) -> str:
    """A part of a data run, blanked when it switches case and digits as random data does
    (`GZmpOwlKQ3e`: 8 pieces in 11 characters), kept when its pieces are words
    (`getUserById`: 4 in 11)."""
    part = m.group()
    return " " if len(_PIECE_RE.findall(part)) >= 0.4 * len(part) else part


def camel_words_of(text: str) -> str:
    """`camel_words` of every identifier, data runs too: the keyword rows of schema 8 and
    before (ov.store.db's migration 9 deletes them by it)."""
    return " ".join(sorted({_CAMEL.sub(" ", m.group(0)) for m in _IDENT.finditer(text)}))


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
    distinct `trigram_runs`, each once, joined by spaces.

    Passages cover every non-whitespace character of the file and what lies between two
    of them is whitespace, so a passage touching the next is joined to it as it stands
    (a long line cut in two) and one that does not is followed by a space: the runs of
    the result are exactly the file's. A literal's runs lie inside the file's, so every
    trigram of them is in the row. Each run once: the kernel's C repeats its runs about
    twice, and a row's cost and size follow its characters. Computed from the stored
    passages, so the row can be deleted (contentless FTS5 wants the same text back)."""
    return " ".join(trigram_runs(" ".join(dict.fromkeys(joined(passages, " ").split()))))


# `trigram_runs` splits text into runs of one class: word characters (`\w`: letters,
# digits, `_`) or punctuation (neither a word character nor whitespace). On the kernel's
# C a file's distinct whitespace-separated runs (`dev->priv;`, `(struct`) were 433,000
# characters a MB of fs/, and the single SQLite writer spent 44 ms a MB on their trigram
# rows; its distinct runs of one class are 213,000 (`dev`, `priv`, `struct`): 21 ms a MB.
_CLASS_RUN = _re.compile(r"\w{3,}|[^\w\s]{3,}")
_ASCII_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# ASCII text is cut with two translations (a third of the regex's cost): every character
# that is not of the class kept becomes a space (whitespace is already one)
_NOT_WORD = {c: " " for c in range(128) if c not in _ASCII_WORD}
_NOT_PUNCT = {c: " " for c in _ASCII_WORD}


def trigram_runs(text: str) -> list[str]:
    """The distinct runs of three or more characters of one class in `text` (above), each
    once (shorter runs have no trigram). A literal found in a file has each of its runs inside
    one of the file's (a run's characters keep their class in the file around them), so
    grep's prefilter asks only the trigrams of these, on both sides."""
    if not text.isascii():
        return list(dict.fromkeys(_CLASS_RUN.findall(text)))
    runs = [r for r in text.translate(_NOT_WORD).split() if len(r) >= 3]
    runs += [r for r in text.translate(_NOT_PUNCT).split() if len(r) >= 3]
    return list(dict.fromkeys(runs))


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
