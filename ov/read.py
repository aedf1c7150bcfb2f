"""Reading files: binary detection, decoding, content hash, line numbers (what kind of
file a path names is `ov.kinds`).

Offsets everywhere in `ov` (chunks, excerpts, grep columns) are Unicode code points
into `decode(raw bytes)`: UTF-8 with a leading BOM stripped and every invalid byte
sequence replaced by U+FFFD, so any file has one decoded text and offsets into it are
consistent from the indexer to the recheck. Lines are split on "\\n" only, as ripgrep
does: "\\r\\n" is one line break and its "\\r" belongs to the line's content.

A file that is stat'ed and read reports the size and mtime of what was read: the
open descriptor is stat'ed, before and after the read, so a file rewritten meanwhile
is read again rather than stored with another version's times.

A path named by the index is a hint, never an authority (issue 17): `open_under` opens
`root/rel` only when `rel` is a plain relative path and the file it reaches now, links
resolved, lies under the root; the last component is opened with O_NOFOLLOW, and on
Linux the descriptor's own path is checked again, so a link swapped in between the check
and the open is refused too. `Freshness` is (size, mtime_ns, ctime_ns, inode): a
restored mtime cannot hide a change, as the ctime moves with any write.
"""

from __future__ import annotations

import errno
import os
import stat
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate

# BLAKE2 for every hash ov takes (content, cursor keys, the test embedder): CPython builds
# it in, while `import hashlib` first loads OpenSSL (~2.5-5 ms on every command).
try:
    from _blake2 import blake2b
except ImportError:  # another interpreter
    from hashlib import blake2b

BINARY_SNIFF = 8192
_BOM = b"\xef\xbb\xbf"
_READ_ATTEMPTS = 3


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def is_binary(data: bytes) -> bool:
    """A NUL byte anywhere in `data` (a file's first BINARY_SNIFF bytes, or all of it)
    marks a binary file. ripgrep skips a walked file whose first 64 KiB read holds a NUL,
    and stops searching one at a later NUL; the index keeps no part of a file, so a file
    read whole for it is binary by any NUL, and `ov status` lists it so (only a NUL in the
    first 8 KiB, git's rule, had let a file grep calls binary into ranked results). UTF-16
    with its byte order mark is judged as ripgrep judges it: transcoded first (`decode`),
    then a NUL character in it marks it binary (a UTF-16 mark before binary bytes)."""
    if data[:2] in UTF16_BOMS:
        return "\x00" in data.decode("utf-16", errors="replace")
    return b"\x00" in data


def decode(data: bytes) -> str:
    """UTF-8 with a BOM stripped, or UTF-16 by its BOM (as ripgrep reads it: such files were
    grep's but never the index's); invalid bytes become U+FFFD so offsets stay consistent."""
    if data.startswith(_BOM):
        data = data[3:]
    elif data[:2] in UTF16_BOMS:
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace")


def content_hash(data: bytes) -> str:
    """A stable hex digest of the raw bytes (BLAKE2b, 16 bytes)."""
    return blake2b(data, digest_size=16).hexdigest()


class FileTooLarge(OSError):
    """The file holds more than the `max_bytes` a caller allowed (it may have grown
    since it was walked). An OSError, so callers that skip unreadable files skip it."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes", path)


@dataclass(frozen=True)
class FileText:
    text: str  # decode(bytes)
    hash: str  # content_hash(bytes), of the raw bytes as read
    size: int  # bytes read
    mtime_ns: int  # of the open file, as read
    ctime_ns: int = 0
    inode: int = 0

    @property
    def freshness(self) -> tuple[int, int, int, int]:
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode)


def freshness(st: os.stat_result) -> tuple[int, int, int, int]:
    """What says a file is unchanged since it was read: (size, mtime_ns, ctime_ns, inode)."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class OutsideRoot(OSError):
    """A path that is not a plain relative path, or reaches (through links) outside the
    root. An OSError, so callers that skip unreadable files skip it; they count it."""

    def __init__(self, rel: str) -> None:
        super().__init__(errno.EACCES, "outside the index root", rel)


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def plain_rel(rel: str) -> bool:
    """Whether `rel` is a path an index row may name: relative, "/"-separated, no empty,
    "." or ".." part, no NUL. A forged row (absolute, climbing) fails here."""
    if not rel or "\x00" in rel or rel[0] == "/":
        return False
    return all(p not in ("", ".", "..") for p in rel.split("/"))


def _inside(path: str, real_root: str) -> bool:
    return path.startswith(real_root.rstrip("/") + "/")


_real_roots: dict[str, str] = {}


def _real_root(root: str) -> str:
    got = _real_roots.get(root)
    if got is None:
        got = _real_roots[root] = os.path.realpath(root)
    return got


def resolve_under(root: str, rel: str) -> str:
    """The real path `root/rel` reaches now; `OutsideRoot` when it is not under the root."""
    if not plain_rel(rel):
        raise OutsideRoot(rel)
    real_root = _real_root(root)
    full = os.path.realpath(os.path.join(real_root, rel))
    if not _inside(full, real_root):
        raise OutsideRoot(rel)
    return full


def folder_under(root: str, rel: str, _seen: dict | None = None) -> bool:
    """Whether `rel` is plain and its folder lies under the root now (links resolved):
    enough to print an indexed path (a name, not its content); folders are cached in
    `_seen` across calls, so a listing costs one realpath per folder."""
    if not plain_rel(rel):
        return False
    folder = rel.rpartition("/")[0]
    if not folder:
        return True
    seen = {} if _seen is None else _seen
    if folder not in seen:
        real_root = _real_root(root)
        seen[folder] = _inside(os.path.realpath(os.path.join(real_root, folder)), real_root)
    return seen[folder]


_O_PATH = getattr(os, "O_PATH", 0)


def open_under(root: str, rel: str, *, path_only: bool = False) -> int:
    """A descriptor of `root/rel` (read-only; with `path_only` an O_PATH one, which needs
    no read permission and serves fstat), only when that file lies under the root at the
    moment it is opened (see the module's note). Never blocks on a fifo.

    The plain path is opened with O_NOFOLLOW, and the kernel's name for what was opened
    (/proc/self/fd) is checked: one open and one readlink, ~10 us, where a realpath
    walk costs over 100 us. A last component that is a link is resolved first."""
    if not plain_rel(rel):
        raise OutsideRoot(rel)
    real_root = _real_root(root)
    full = os.path.join(real_root, rel)
    flags = (_O_PATH | getattr(os, "O_CLOEXEC", 0)) if path_only and _O_PATH else _OPEN_FLAGS
    try:
        fd = os.open(full, flags | _NOFOLLOW)
        if path_only and _O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.ELOOP, "a link", full)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        full = resolve_under(root, rel)  # the last component is a link: where it leads now
        fd = os.open(full, flags | _NOFOLLOW)
    try:
        actual = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the folders are checked by their real path
        actual = os.path.realpath(full)
    if not _inside(actual, real_root):
        os.close(fd)
        raise OutsideRoot(rel)
    return fd


def binary_file(root: str, rel: str) -> bool | None:
    """Whether `root/rel` (opened under the root) is binary by its first BINARY_SNIFF bytes
    (`is_binary`); None when it cannot be read or lies outside the root."""
    try:
        fd = open_under(root, rel)
        try:
            return is_binary(os.read(fd, BINARY_SNIFF))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None


def stat_under(root: str, rel: str) -> os.stat_result:
    """The stat of `root/rel` when it lies under the root now (links resolved)."""
    fd = open_under(root, rel, path_only=True)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def read_under(root: str, rel: str, *, max_bytes: int | None = None) -> FileText | None:
    """`read_text` of `root/rel`, refused (`OutsideRoot`) when it is not under the root."""
    return _read_fd(open_under(root, rel), rel, max_bytes)


STREAM_BLOCK = 8 << 20


def digest_under(root: str, rel: str, digest: Callable[[Iterator[bytes]], object]
                 ) -> tuple[tuple[int, int, int, int], object] | None:
    """(freshness, `digest` of the bytes of `root/rel` in blocks of STREAM_BLOCK): a file
    of any size in bounded memory, opened as `read_under` opens it (`OutsideRoot` when
    it is not under the root). None when it is not a regular file, or was written to while
    it was read (the freshness would not be that of the bytes digested)."""
    fd = open_under(root, rel)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            return None
        got = digest(iter(lambda: os.read(fd, STREAM_BLOCK), b""))
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if freshness(after) != freshness(before):
        return None
    return freshness(after), got


def read_text(abspath: str, *, max_bytes: int | None = None) -> FileText | None:
    """Read and decode one file; None when it is binary (a NUL in it: `is_binary`).

    Raises OSError when it cannot be read (missing, permission, not a regular file),
    and `FileTooLarge` when it holds more than `max_bytes`; callers decide whether that
    is a warning or a skip. Never blocks on a fifo put where a file was walked.
    """
    return _read_fd(os.open(abspath, _OPEN_FLAGS), abspath, max_bytes)


def _read_fd(fd: int, abspath: str, max_bytes: int | None) -> FileText | None:
    with open(fd, "rb", closefd=True) as f:
        for attempt in range(_READ_ATTEMPTS):
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", abspath)
            if max_bytes is not None and before.st_size > max_bytes:
                raise FileTooLarge(abspath, max_bytes)
            if attempt:
                f.seek(0)
            # at most the cap and a byte more (a file growing past it), never a buffer of the
            # cap's size: `--max-filesize 100G` asked Python for 100 GB up front
            data = f.read() if max_bytes is None else f.read(min(max_bytes, before.st_size + (1 << 20)) + 1)
            if max_bytes is not None and len(data) > max_bytes:
                raise FileTooLarge(abspath, max_bytes)
            after = os.fstat(fd)
            if (after.st_mtime_ns == before.st_mtime_ns and after.st_size == len(data)):
                break
            # Written to while being read: read again, so the times match the bytes.
    if is_binary(data):
        return None
    return FileText(decode(data), content_hash(data), len(data), after.st_mtime_ns,
                    after.st_ctime_ns, after.st_ino)


class LineIndex:
    """Line numbers from code-point offsets into one decoded text.

    Lines end at "\\n" (a "\\r" before it is part of the line's content); a last line
    without a trailing newline is a line; the empty text has no lines. Lookups are a
    bisect over the line starts.
    """

    __slots__ = ("_text", "_starts", "_count")

    def __init__(self, text: str) -> None:
        self._text = text
        lens = map(len, text.split("\n"))
        # starts[i] = offset of line i+1; the last value (len(text) + 1) is dropped.
        starts = list(accumulate(map((1).__add__, lens), initial=0))
        starts.pop()
        self._starts = starts
        # A final "\n" ends the last line; it does not open an empty one.
        self._count = len(starts) - 1 if text.endswith("\n") or not text else len(starts)

    def line_count(self) -> int:
        return self._count

    def line_of(self, offset: int) -> int:
        """The 1-based line holding code-point `offset` (0 <= offset <= len(text)).

        The end of the text counts as part of the last line, so an exclusive end offset
        of a span that ends with the text maps to the span's last line.
        """
        if offset < 0 or offset > len(self._text):
            raise ValueError(f"offset {offset} outside the text (0..{len(self._text)})")
        return max(1, min(bisect_right(self._starts, offset), self._count))

    def line_start(self, line: int) -> int:
        """The code-point offset where 1-based `line` starts."""
        if line < 1 or line > max(self._count, 1):
            raise ValueError(f"line {line} outside the text (1..{self._count})")
        return self._starts[line - 1]

    def line_end(self, line: int) -> int:
        """The offset just past `line`'s content, before its "\\n" or "\\r\\n"."""
        start = self.line_start(line)
        end = self._starts[line] - 1 if line < len(self._starts) else len(self._text)
        if end > start and self._text[end - 1] == "\r" and end < len(self._text):
            end -= 1
        return end

    def line_text(self, line: int) -> str:
        """`line`'s content without its line break."""
        return self._text[self.line_start(line):self.line_end(line)]
