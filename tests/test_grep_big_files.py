"""Files `ov index` skips for their size keep a byte-trigram bitmap (ov.grams, the
`big_files` table), so grep with a fresh index reads such a file only when it may hold
the pattern's literals or changed since indexing (issue 18).

What must hold: the answer is the one reading every file gives (a bitmap may let a file
in, never keep one out); a file changed after indexing is read, a restored mtime
notwithstanding; the rows follow the tree (added, replaced, dropped) through `ov index`,
an incremental run and the watcher's `index_paths`; an index made before the table gains
its rows on the next `ov index`, and is read as before until then.
"""

from __future__ import annotations

import os
import random

import pytest

from conftest import imported_by, spy_reads
from ov import grams
from ov.indexer import IndexOptions, index_paths, index_tree, refresh_big_files, walk_from_config
from ov.store import Store

CAP = 2000  # max-filesize of the trees below: "big" means over 2 kB here
CONFIG = {".ov/config.toml": f"max-filesize = {CAP}\n"}
WORDS = ["mmREG_BASE", "0x00ff", "#define", "regSHIFT", "über", "日本語", "lane_enable", "= 1;"]


def _big_text(seed: int, extra: str = "", lines: int = 400) -> str:
    rnd = random.Random(seed)
    body = [" ".join(rnd.choice(WORDS) for _ in range(6)) for _ in range(lines)]
    return "\n".join(body) + "\n" + extra


def _db(root):
    return root / ".ov" / "index.db"


def _rows(root) -> dict[str, tuple]:
    with Store.open(_db(root), readonly=True) as st:
        return {p: state for p, state, _ in st.big_file_grams()}


def _spy(monkeypatch, root) -> list[str]:
    """The files grep reads (root-relative), recorded in the returned list."""
    from ov.search import files as fsearch

    monkeypatch.setattr(fsearch, "search_blocks", lambda *a: pytest.fail("no file here is streamed"))
    return spy_reads(monkeypatch, root)


def _grep(root, opened: list[str], pattern: str, **kw) -> tuple[list, list[str]]:
    """(path, line) of each match with the index, and the files it read; checked against
    a grep that reads every file."""
    from ov.search import files as fsearch

    opened.clear()
    kw = dict(cwd=root, node_limit=100000, **kw)
    got = [(m.path, m.line) for m in fsearch.grep(pattern, **kw).matches]
    read = sorted(opened)
    assert got == [(m.path, m.line) for m in fsearch.grep(pattern, use_index=False, **kw).matches]
    return got, read


def _indexed(tree, files: dict) -> object:
    root = tree({**CONFIG, **files})
    index_tree(root, opts=IndexOptions(embed=False, walk=_walk(root)))
    return root


def _walk(root):
    return walk_from_config(root)


# ---- the bitmap -------------------------------------------------------------------------


def test_a_bitmap_holds_every_trigram_of_the_bytes_whatever_the_blocks():
    rnd = random.Random(7)
    for _ in range(30):  # 216 trigrams at most: a bitmap of 512 bytes, under an eighth
        data = bytes(rnd.choice(b"ab \n\xc3\xff") for _ in range(rnd.randint(5000, 20000)))
        cuts = sorted(rnd.sample(range(1, len(data)), rnd.randint(0, 6)))
        blocks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        bits = grams.bitmap(blocks)
        assert bits is not None and bits == grams.bitmap([data])
        for i in range(len(data) - 2):
            key = data[i] | data[i + 1] << 8 | data[i + 2] << 16
            assert not grams.lacks(bits, [(key * grams.MULT) & 0xFFFFFFFF])


def test_a_bitmap_rules_out_what_the_bytes_lack():
    data = ("0123456789 abcdefghij\n" * 200).encode()
    bits = grams.bitmap([data])
    assert len(bits) * 8 >= grams.BITS_PER_GRAM * 20  # a power of two over 16 bits a trigram
    assert not grams.lacks(bits, grams.literal_grams(["3456789 abc", "fghij"]))
    assert grams.lacks(bits, grams.literal_grams(["lane_enable_bits"]))
    assert grams.lacks(bits, grams.literal_grams(["fghij", "zzz"]))  # every literal
    assert grams.lacks(b"\0" * 3, grams.literal_grams(["zzz"])) is False  # not the layout
    assert not grams.lacks(bits, grams.literal_grams(["56789 ABC", "EfGh"], fold=True))
    assert grams.lacks(bits, grams.literal_grams(["ABCDEFX"], fold=True))


def test_what_grep_asks_of_a_bitmap_is_the_literals_utf8_bytes():
    assert grams.literal_grams(["ab", ""]) == []  # no trigram
    # -i: each trigram's case variants; pieces cut at i, k, s and at bytes past ASCII
    (got,) = grams.literal_grams(["a_B"], fold=True)
    assert sorted(got) == sorted((k * grams.MULT) & 0xFFFFFFFF for k in (0x425F61, 0x625F61, 0x425F41, 0x625F41))
    assert grams.literal_grams(["üxü", "ab"], fold=True) == []  # cut at what is not ASCII
    (k_as,) = grams.literal_grams(["kas"], fold=True)  # the Kelvin sign's three bytes among them
    assert (0xAA84E2 * grams.MULT) & 0xFFFFFFFF in k_as and len(k_as) == 2 * 2 * 3 + 1


def test_the_spellings_of_i_k_s_are_every_letter_grep_i_pairs_outside_ascii():
    """`grams._SPELLINGS` lists every character outside ASCII that `-i` (the `regex`
    module's simple folding, as `ov grep` compiles it) matches for an ASCII letter."""
    import string

    import regex

    every = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    for a in string.ascii_letters:
        got = {m.group() for m in regex.finditer(regex.escape(a), every, regex.IGNORECASE | regex.V0)}
        assert got <= set(grams._SPELLINGS.get(a.lower(), "")), a
    assert grams.literal_grams(["a\ufffdb", "x\ny", "\ud800ab"]) == []  # say nothing
    assert len(grams.literal_grams(["über"])) == 3  # 5 bytes: c3 bc 62 65 72
    assert len(grams.literal_grams(["x" * 5000 + "".join(map(chr, range(0x4e00, 0x5000)))])) == grams.MAX_GRAMS


def test_no_bitmap_for_a_binary_head_or_one_not_much_smaller_than_the_file():
    assert grams.bitmap([b"ab\0cd" * 1000]) is None  # grep reads 64 KiB of it at most
    rnd = random.Random(1)
    noise = bytes(rnd.randrange(1, 256) for _ in range(50000))
    assert grams.bitmap([noise]) is None  # ~50k distinct trigrams: a bitmap of 128 kB
    assert grams.bitmap([b"ab" * 30000]) is not None


# ---- grep ----------------------------------------------------------------------------------


def test_a_big_file_is_read_only_when_it_may_hold_the_literals(tree, monkeypatch):
    root = _indexed(tree, {"regs/big.h": _big_text(1, "rare_in_big_q\n"),
                           "regs/other.h": _big_text(2), "small.c": "rare_in_small_q\n"})
    assert set(_rows(root)) == {"regs/big.h", "regs/other.h"}
    opened = _spy(monkeypatch, root)
    assert _grep(root, opened, "rare_in_big_q") == ([("regs/big.h", 401)], ["regs/big.h"])
    assert _grep(root, opened, "rare_in_small_q") == ([("small.c", 1)], ["small.c"])
    assert _grep(root, opened, "not_anywhere_q") == ([], [])
    assert _grep(root, opened, "lane_[a-z]+ über")[1] == ["regs/big.h", "regs/other.h"]
    assert _grep(root, opened, "日本語 #define")[0] != []  # a non-ASCII literal, by its UTF-8 bytes
    assert _grep(root, opened, "mmREG_BASE", fixed=True)[0] != []
    # case folded: each trigram in any of its cases (`RAR`... of `RARE_`; cut at i, k, s)
    assert _grep(root, opened, "RARE_IN_BIG_Q", ignore_case=True) == ([("regs/big.h", 401)], ["regs/big.h"])
    assert _grep(root, opened, "MMreg_BAse", ignore_case=True)[1] == ["regs/big.h", "regs/other.h"]
    # no byte-level answer: no literal of three bytes, or none outside i, k, s under -i
    assert _grep(root, opened, "q$")[1] == ["regs/big.h", "regs/other.h", "small.c"]
    assert _grep(root, opened, "q_", ignore_case=True)[1] == ["regs/big.h", "regs/other.h", "small.c"]
    assert _grep(root, opened, "skiks", ignore_case=True) == ([], [])  # every spelling asked


def test_grep_i_reads_a_big_file_that_spells_the_literal_outside_ascii(tree, monkeypatch):
    """A big file writing `kelvin` with the Kelvin sign and a long s matches `-i KELVIN`:
    its bitmap is asked each spelling's bytes, so it is read, and the others are not."""
    root = _indexed(tree, {"k.h": _big_text(9, "\u212aEL\u017fIN_BIG\n"), "o.h": _big_text(10)})
    opened = _spy(monkeypatch, root)
    assert _grep(root, opened, "kelsin_big", ignore_case=True) == ([("k.h", 401)], ["k.h"])
    assert _grep(root, opened, "KELSIN_BIG") == ([], [])


def test_a_big_file_changed_after_indexing_is_read(tree, monkeypatch):
    root = _indexed(tree, {"big.h": _big_text(3), "b2.h": _big_text(4)})
    opened = _spy(monkeypatch, root)
    assert _grep(root, opened, "added_lat3") == ([], [])
    # the same size, the mtime restored: the ctime still tells
    p = root / "big.h"
    st = p.stat()
    p.write_text(p.read_text().replace("mmREG_BASE", "added_lat3", 1))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (p.stat().st_size, p.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    got, read = _grep(root, opened, "added_lat3")
    assert len(got) == 1 and read == ["big.h"]
    with open(root / "b2.h", "a") as fh:  # content appended
        fh.write("added_later_q\n")
    assert _grep(root, opened, "added_later_q") == ([("b2.h", 401)], ["b2.h", "big.h"])
    # after the next `ov index` the rows hold the new states: nothing is read for nothing
    index_tree(root, opts=IndexOptions(embed=False, walk=_walk(root)))
    assert _grep(root, opened, "added_later_q") == ([("b2.h", 401)], ["b2.h"])
    assert _grep(root, opened, "not_there_q") == ([], [])


def test_the_answer_is_the_same_with_and_without_the_rows(ov, tree):
    """End to end: `ov index --no-embed`, then `ov grep` (text and JSON) answers as
    `--no-index` does, for literals in big files, small ones, both and neither."""
    files = {**CONFIG, "asic/big_a.h": _big_text(5, "only_in_a_q über\n"),
             "asic/big_b.h": _big_text(6, "shared_q\n"), "src/x.c": "shared_q\nonly_in_x_q\n",
             "latin1.txt": b"caf\xe9 " * 600 + b"\nend_q\n"}
    root = tree(files)
    assert ov("index", "--no-embed", ".", cwd=root).code == 0
    assert ov("status", "-o", "json", cwd=root).code == 0
    assert set(_rows(root)) == {"asic/big_a.h", "asic/big_b.h", "latin1.txt"}
    for args in (["only_in_a_q"], ["shared_q"], ["only_in_x_q"], ["-F", "zz_none_q"], ["über"],
                 ["only_in_a_q über"], ["-w", "lane_enable"], ["-c", "shared_q"], ["-l", "mmREG"],
                 ["caf\ufffd end"], ["caf\ufffd caf"], ["caf"], ["-U", "shared_q\nonly"], ["-i", "ONLY_IN_A_Q"]):
        for fmt in (["-o", "json"], []):
            r = ov("grep", "--node-limit", "100000", *fmt, *args, cwd=root)
            assert r.code in (0, 1) and r.err == ""
            every = ov("grep", "--no-index", "--node-limit", "100000", *fmt, *args, cwd=root)
            assert r.code == every.code and (r.json["result"] == every.json["result"] if fmt
                                             else r.out == every.out), args


def test_grep_with_big_file_rows_imports_no_numpy(tree):
    root = _indexed(tree, {"big.h": _big_text(8), "a.txt": "foo_q\n"})
    assert _rows(root)
    r, modules = imported_by(["grep", "foo_q"], root)
    assert r.out == "a.txt:1:foo_q\n" and not {"numpy", "onnxruntime"} & modules


# ---- the rows follow the tree -----------------------------------------------------------


def test_rows_are_added_replaced_and_dropped_with_the_files(tree):
    root = _indexed(tree, {"a.h": _big_text(1), "b.h": _big_text(2), "c.h": _big_text(3),
                           "d.h": _big_text(4), "bin.dat": b"\0" * 3000, "s.txt": "small\n"})
    first = _rows(root)
    assert set(first) == {"a.h", "b.h", "c.h", "d.h"}  # no row for a binary head
    os.remove(root / "a.h")
    (root / "b.h").write_text("now small\n")  # under the cap: indexed instead
    with open(root / "c.h", "a") as fh:
        fh.write("more\n")
    (root / "s.txt").write_text(_big_text(9))  # over the cap: a row instead
    (root / ".git").mkdir(exist_ok=True)  # a work tree: .gitignore counts only in one
    (root / ".gitignore").write_text("d.h\n")
    index_tree(root, opts=IndexOptions(embed=False, walk=_walk(root)))
    now = _rows(root)
    assert set(now) == {"c.h", "s.txt"}
    assert now["c.h"] != first["c.h"] and now["c.h"][0] == (root / "c.h").stat().st_size
    with Store.open(_db(root), readonly=True) as st:
        assert set(st.file_states()) == {"b.h"}


def test_a_full_run_reads_every_big_file_and_an_incremental_one_none_unchanged(tree, monkeypatch):
    root = _indexed(tree, {"a.h": _big_text(1), "b.h": _big_text(2)})
    from ov import indexer

    read: list[str] = []
    real = indexer.digest_under
    monkeypatch.setattr(indexer, "digest_under", lambda r, rel, f: read.append(rel) or real(r, rel, f))
    index_tree(root, opts=IndexOptions(embed=False, walk=_walk(root)))
    assert read == []
    index_tree(root, opts=IndexOptions(embed=False, full=True, walk=_walk(root)))
    assert sorted(read) == ["a.h", "b.h"] and set(_rows(root)) == {"a.h", "b.h"}


def test_the_watchers_index_paths_keeps_the_rows(tree):
    root = _indexed(tree, {"d/a.h": _big_text(1), "d/b.h": _big_text(2), "e/c.h": _big_text(3)})
    walk = _walk(root)
    before = _rows(root)
    with open(root / "d/a.h", "a") as fh:
        fh.write("appended\n")
    os.remove(root / "d/b.h")
    (root / "e/new.h").write_text(_big_text(4))
    index_paths(root, ["d/a.h", "d/b.h", "e/new.h"], opts=IndexOptions(embed=False, walk=walk))
    now = _rows(root)
    assert set(now) == {"d/a.h", "e/c.h", "e/new.h"} and now["e/c.h"] == before["e/c.h"]
    assert now["d/a.h"] != before["d/a.h"]
    (root / "e/c.h").write_text("small now\n")
    index_paths(root, ["e"], opts=IndexOptions(embed=False, walk=walk))  # a folder
    assert set(_rows(root)) == {"d/a.h", "e/new.h"}


def test_an_index_from_before_the_table_is_read_as_before_and_gains_its_rows(ov, tree, monkeypatch):
    import sqlite3

    root = _indexed(tree, {"big.h": _big_text(1, "needle_q\n"), "s.txt": "needle_q\n"})
    conn = sqlite3.connect(_db(root))
    conn.execute("DROP TABLE big_files")
    conn.commit()
    conn.close()
    opened = _spy(monkeypatch, root)
    got, read = _grep(root, opened, "not_there_q")
    assert got == [] and read == ["big.h"]  # read, as an older ov did, and no warning
    assert ov("grep", "-o", "json", "not_there_q", cwd=root).json["result"]["warnings"] == []
    index_tree(root, opts=IndexOptions(embed=False, walk=_walk(root)))  # incremental
    assert set(_rows(root)) == {"big.h"}
    assert _grep(root, opened, "not_there_q") == ([], [])
    assert _grep(root, opened, "needle_q") == ([("big.h", 401), ("s.txt", 1)], ["big.h", "s.txt"])


def test_past_a_first_answers_budget_big_files_are_left_to_grep(tree):
    """A budgeted run (a first search's) reads no big file past its deadline: a changed
    file's stale row goes, a new file gets none, an unchanged one keeps its row."""
    root = _indexed(tree, {"a.h": _big_text(1), "b.h": _big_text(2)})
    with open(root / "a.h", "a") as fh:
        fh.write("more\n")
    (root / "c.h").write_text(_big_text(3))
    with Store.create(_db(root)) as st, st.tx():
        refresh_big_files(st, root, ["a.h", "b.h", "c.h"], st.big_file_states(), deadline=0.0)
    assert set(_rows(root)) == {"b.h"}
