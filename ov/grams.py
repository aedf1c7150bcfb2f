"""Byte-trigram bitmaps: what grep's prefilter knows of a file too large to index.

`ov index` skips files over `max-filesize` (ov.config), yet grep searches them. On the
Linux kernel 84 generated register headers (351 MB) were read whole by every grep: ~0.25 s
of a selective search that ripgrep answers in 0.6-0.9 s (issue 18). So the index keeps, for
each such file, a bitmap of the byte trigrams it holds (a Bloom filter with one hash), and
grep reads the file only when the bitmap holds every trigram of the pattern's literals,
or when the file changed since (ov.search.prefilter).

- `bitmap(blocks)`: the bitmap of a file's bytes, handed over in blocks (numpy, imported
  here only when a bitmap is built: `ov index`; grep imports no numpy);
- `literal_grams(literals)`: what grep asks of a bitmap, from the literals' UTF-8 bytes;
- `lacks(bits, grams)`: whether a bitmap misses one of them (plain Python).

Layout: 2^k bits, bit i being bit (i & 7) of byte i >> 3; at least BITS_PER_GRAM bits per
distinct trigram of the file (the kernel's big files hold 1.7k-15k each; at most 2^24
bits), so under 1 in 16 bits is set and a trigram the file lacks passes with odds under
1/16: a ten-character literal (eight trigrams) the file lacks entirely, under 1 in 4
billion. A trigram b0 b1 b2 is the key b0 | b1 << 8 | b2 << 16, and its bit the top k
bits of key * MULT mod 2^32 (Fibonacci hashing: the product's high bits mix every key
bit). A file gets no bitmap when grep would not read it whole (a NUL in its first 64 KiB)
or when the bitmap would not be much smaller than the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

BITS_PER_GRAM = 16
MIN_LOG2 = 9  # the smallest bitmap: 512 bits
MAX_LOG2 = 24  # the largest: 2 MiB (as many bits as there are trigrams)
MAX_SHARE = 1 / 8  # a bitmap is kept when it holds at most this share of the file's bytes
HEAD = 64 * 1024  # ripgrep's first buffer (ov.search.matcher.RG_BUFFER; a test holds them equal)
MULT = 0x9E3779B1  # 2^32 / the golden ratio, odd
MAX_GRAMS = 256  # trigrams of the literals a grep asks (fewer only let more files in)


def bitmap(blocks: Iterable[bytes]) -> bytes | None:
    """The trigram bitmap of the bytes `blocks` hold end to end (any block sizes: two bytes
    are carried across each cut), or None when it is not worth keeping: a NUL in the first
    HEAD bytes (grep reads no further into such a file), or a bitmap over MAX_SHARE of the
    file (high-entropy text; it would cost a grep about as much to read as the file).
    Memory: a 16 MiB array of every possible trigram, plus a few times the largest block."""
    import numpy as np  # noqa: PLC0415 - the index path only

    seen = np.zeros(1 << 24, dtype=bool)
    tail = b""
    size = 0
    for block in blocks:
        if not size and b"\0" in block[:HEAD]:
            return None
        size += len(block)
        buf = tail + block + b"\0"  # the pad: each trigram is read as 4 bytes
        _mark(np, seen, buf, len(buf) - 3)
        tail = buf[-3:-1]
    keys = np.flatnonzero(seen).astype(np.uint32)
    k = min(MAX_LOG2, max(MIN_LOG2, (len(keys) * BITS_PER_GRAM - 1).bit_length()))
    if (1 << k) > size * 8 * MAX_SHARE:
        return None
    on = np.zeros(1 << k, dtype=bool)
    on[(keys * np.uint32(MULT)) >> np.uint32(32 - k)] = True
    return np.packbits(on, bitorder="little").tobytes()


def _mark(np, seen, buf: bytes, n: int) -> None:
    """Mark in `seen` the `n` trigrams starting at buf[0..n-1]: four strided little-endian
    uint32 views (offsets 0-3) masked to their low three bytes, with no per-byte shifts
    (~10 ns a byte, most of it the scatter into `seen`)."""
    for o in range(min(4, n)):
        v = np.frombuffer(buf, dtype="<u4", count=(n - 1 - o) // 4 + 1, offset=o)
        seen[v & 0xFFFFFF] = True


def literal_grams(literals: Sequence[str], fold: bool = False) -> list[int | tuple[int, ...]]:
    """The hashed trigrams (key * MULT mod 2^32) of the literals' UTF-8 bytes: every file
    holding a match holds them all. A literal says nothing when it holds U+FFFD (it stands
    for any invalid byte of the file), a newline (a binary file named explicitly is
    searched with its NULs read as newlines) or a lone surrogate (no UTF-8 form); one
    under three bytes has no trigram. Past MAX_GRAMS, an evenly spread share.

    `fold` (grep's `-i`): each trigram is the tuple of the hashes it may take in the file,
    a file holding any one of which may match: for each three characters of the literal
    in a row, the first three bytes of each spelling `-i` matches (`_SPELLINGS`: the
    letter in either case, and the letters outside ASCII `-i` pairs with i, k and s). The
    literal is cut at characters outside ASCII, whose case pairs are not listed here."""
    keys: dict[int | tuple[int, ...], None] = {}
    for lit in literals:
        if "\ufffd" in lit or "\n" in lit:
            continue
        try:
            b = lit.encode("utf-8")
        except UnicodeEncodeError:
            continue
        if not fold:
            for i in range(len(b) - 2):
                keys[b[i] | b[i + 1] << 8 | b[i + 2] << 16] = None
            continue
        for piece in _NOT_ASCII.split(lit):
            ways = [_spellings(c) for c in piece]
            for i in range(len(ways) - 2):
                keys[tuple(sorted({int.from_bytes((x + y + z)[:3], "little") for x in ways[i]
                                   for y in ways[i + 1] for z in ways[i + 2]}))] = None
    got = list(keys)
    if len(got) > MAX_GRAMS:
        got = [got[i * len(got) // MAX_GRAMS] for i in range(MAX_GRAMS)]
    return [tuple((k * MULT) & 0xFFFFFFFF for k in key) if isinstance(key, tuple) else (key * MULT) & 0xFFFFFFFF
            for key in got]


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
# What `-i` matches beside an ASCII letter's two cases (the `regex` module's simple case
# folding, checked over every code point in tests/test_grep_big_files.py): `i` also takes
# İ, `I` also ı (both are listed for either), `k` the Kelvin sign, `s` the long s.
_SPELLINGS = {"i": "İı", "k": "\u212a", "s": "ſ"}


def _spellings(c: str) -> tuple[bytes, ...]:
    """The UTF-8 forms of what `-i` matches for the ASCII character `c`."""
    low = c.lower()
    return tuple(x.encode() for x in dict.fromkeys((c, low, c.upper(), *_SPELLINGS.get(low, ""))))


def lacks(bits: bytes, grams: Sequence[int | tuple[int, ...]]) -> bool:
    """Whether the file of bitmap `bits` cannot hold one of `grams` (`literal_grams`: a
    hash, or a tuple of which any one will do). A bitmap not of the layout (no power of
    two) rules nothing out."""
    size = len(bits) << 3
    if size < 8 or size & (size - 1):
        return False
    shift = 33 - size.bit_length()  # 32 - k
    for g in grams:
        if not any(bits[i >> 3] >> (i & 7) & 1 for i in ((a >> shift for a in g) if isinstance(g, tuple)
                                                          else (g >> shift,))):
            return True
    return False
