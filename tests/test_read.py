"""The reader on real files: binary, empty, invalid UTF-8, BOM, CRLF, line lookups."""

from __future__ import annotations

import os
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ov.read import (BINARY_SNIFF, FileText, FileTooLarge, LineIndex, content_hash, decode,
                     is_binary, read_text)
from tests.conftest import make_tree


def test_a_nul_anywhere_is_binary(tmp_path):
    root = make_tree(tmp_path, {"bin": b"abc\x00def", "late": b"a" * BINARY_SNIFF + b"\x00",
                                "later": b"text\n" * 40_000 + b"\x00", "text": b"a" * (BINARY_SNIFF + 1)})
    assert read_text(str(root / "bin")) is None
    assert is_binary(b"abc\x00def") and not is_binary(b"abc def")
    # a NUL past the sniffed head, or past ripgrep's first 64 KiB read, is binary too:
    # the index keeps no part of a file
    assert read_text(str(root / "late")) is None and read_text(str(root / "later")) is None
    assert read_text(str(root / "text")).size == BINARY_SNIFF + 1


def test_empty_file(tmp_path):
    root = make_tree(tmp_path, {"empty": b""})
    ft = read_text(str(root / "empty"))
    st = os.stat(root / "empty")
    assert ft == FileText("", content_hash(b""), 0, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert LineIndex("").line_count() == 0


def test_invalid_utf8_replaced_and_offsets_consistent(tmp_path):
    raw = b"ab\xffcd\n\xe9t\xc3\xa9\n"  # a lone 0xff, a Latin-1 e-acute, a valid e-acute
    root = make_tree(tmp_path, {"bad.txt": raw})
    ft = read_text(str(root / "bad.txt"))
    assert ft.text == "ab\ufffdcd\n\ufffdt\u00e9\n"
    assert ft.text == decode(raw)
    assert ft.hash == content_hash(raw) and ft.size == len(raw)
    # code-point offsets: "cd" at 3, line 2 starts after the newline at 5
    assert ft.text[3:5] == "cd"
    li = LineIndex(ft.text)
    assert li.line_start(2) == 6 and li.line_text(2) == "\ufffdt\u00e9"
    assert li.line_of(ft.text.index("t\u00e9")) == 2


def test_bom_stripped_but_hashed(tmp_path):
    raw = b"\xef\xbb\xbfhello\n"
    root = make_tree(tmp_path, {"bom.txt": raw})
    ft = read_text(str(root / "bom.txt"))
    assert ft.text == "hello\n" and ft.text[0] == "h"
    assert ft.hash == content_hash(raw) != content_hash(b"hello\n")
    assert ft.size == len(raw)


def test_crlf_line_numbers(tmp_path):
    root = make_tree(tmp_path, {"crlf.txt": b"one\r\ntwo\r\nthree\r\n"})
    text = read_text(str(root / "crlf.txt")).text
    assert text == "one\r\ntwo\r\nthree\r\n"  # bytes are never rewritten
    li = LineIndex(text)
    assert li.line_count() == 3
    assert [li.line_of(text.index(w)) for w in ("one", "two", "three")] == [1, 2, 3]
    assert li.line_of(text.index("\r")) == 1 and li.line_of(text.index("\n")) == 1
    assert [li.line_text(n) for n in (1, 2, 3)] == ["one", "two", "three"]
    # a lone \r is not a line break (ripgrep splits on \n only)
    assert LineIndex("a\rb\nc").line_count() == 2


def test_last_line_without_trailing_newline():
    text = "first\nlast"
    li = LineIndex(text)
    assert li.line_count() == 2
    assert li.line_start(2) == 6
    assert li.line_of(len(text) - 1) == 2 and li.line_of(len(text)) == 2
    assert li.line_text(2) == "last" and li.line_end(2) == len(text)
    with_nl = LineIndex("first\nlast\n")
    assert with_nl.line_count() == 2 and with_nl.line_of(len("first\nlast\n")) == 2
    with pytest.raises(ValueError):
        li.line_of(len(text) + 1)
    with pytest.raises(ValueError):
        li.line_start(3)


@given(st.text(alphabet="ab\r\n\u00e9\U0001f600", max_size=60))
def test_line_index_agrees_with_counting_newlines(text):
    li = LineIndex(text)
    lines = text.split("\n")
    count = len(lines) - 1 if text.endswith("\n") or not text else len(lines)
    assert li.line_count() == count
    for i in range(len(text)):
        assert li.line_of(i) == text.count("\n", 0, i) + 1
        assert text[li.line_start(li.line_of(i)):i].count("\n") == 0
    for n in range(1, count + 1):
        # "\r" is stripped only as part of "\r\n"; a lone one at the end is content
        want = lines[n - 1].removesuffix("\r") if n < len(lines) else lines[n - 1]
        assert li.line_text(n) == want


def test_stat_values_are_those_of_the_file_read(tmp_path):
    root = make_tree(tmp_path, {"a.txt": b"hello"})
    os.utime(root / "a.txt", ns=(1_500_000_000_000_000_001, 1_500_000_000_000_000_001))
    ft = read_text(str(root / "a.txt"))
    assert (ft.size, ft.mtime_ns) == (5, 1_500_000_000_000_000_001)


def test_max_bytes_refuses_a_larger_file(tmp_path):
    root = make_tree(tmp_path, {"a.txt": b"x" * 11, "b.txt": b"x" * 10})
    with pytest.raises(FileTooLarge) as ei:
        read_text(str(root / "a.txt"), max_bytes=10)
    assert isinstance(ei.value, OSError)
    assert read_text(str(root / "b.txt"), max_bytes=10).size == 10


def test_unreadable_paths_raise_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_text(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError):
        read_text(str(tmp_path))


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def attempt():
        try:
            read_text(str(fifo))
        except OSError as e:
            outcome.append(e)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "read_text blocked on a fifo"
    assert len(outcome) == 1 and "not a regular file" in str(outcome[0])
