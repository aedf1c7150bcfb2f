"""What a long `ov index` says about itself (a review of the first hour on a 119 MB Go
tree): what an interrupted run kept, a background worker it stopped, what holds the index
when `--stop` finds no worker, and one line off a terminal when a long embedding starts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import run_subprocess
from ov.embed import HashEmbedder
from ov.store import Store

PROSE = ("# Notes {i}\n\nThe tide tables for harbour {i} list high water. Boats leave at dawn.\n\n"
         "A second paragraph about lighthouse {i} and its keeper. The lamp turns all night.\n")


def notes(n: int) -> dict[str, str]:
    return {f"docs/n{i:03d}.md": PROSE.format(i=i) for i in range(n)}


def _db(root: Path) -> Path:
    return root / ".ov" / "index.db"


def held(root: Path) -> tuple[int, int, int]:
    """(files, rows with a vector, rows that get one) committed in the index of `root`."""
    with Store.open(_db(root), readonly=True) as s:
        return (s.file_count(), *s.coverage())


def interrupt_embedding_at(monkeypatch, call: int) -> None:
    """The test embedder's `call`-th run of the model is a Ctrl-C."""
    calls = []
    real = HashEmbedder.embed

    def embed(self, texts, *args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(self, texts, *args, **kwargs)

    monkeypatch.setattr(HashEmbedder, "embed", embed)


# ---- an interrupted run says what it kept ------------------------------------------------


def test_an_interrupted_index_says_what_it_kept_and_the_next_run_goes_on(ov, tree, monkeypatch):
    """Ctrl-C said only `ov: interrupted`: after an hour nobody knew what was left."""
    from ov.indexer import EMBED_COMMIT, EMBED_STEP

    root = tree(notes(150))
    interrupt_embedding_at(monkeypatch, EMBED_COMMIT // EMBED_STEP + 2)  # within the second commit
    r = ov("index", ".", cwd=root)
    files, vectors, rows = held(root)
    assert r.code == 130 and 0 < vectors < rows and files == 150, (r.err, vectors, rows)
    assert r.err.splitlines()[-1] == (f"ov: interrupted; the index keeps {files} files and {vectors} "
                                      f"vectors of {rows} (`ov index` continues from there)"), r.err
    monkeypatch.undo()
    monkeypatch.setenv("OV_EMBEDDER", "hash")
    again = ov("index", ".", "--json", cwd=root).json["result"]
    assert (again["added"], again["unchanged"]) == (0, 150)  # the files were kept
    assert again["embedded"] + again["reused"] == rows - vectors  # and the vectors: none twice
    assert held(root)[1] == rows


def test_an_interrupted_full_rebuild_says_the_old_index_stays(ov, tree, monkeypatch):
    root = tree(notes(20))
    assert ov("index", ".", cwd=root).code == 0
    before = held(root)
    interrupt_embedding_at(monkeypatch, 1)
    r = ov("index", ".", "--full", cwd=root)
    assert r.code == 130 and held(root) == before
    assert r.err.splitlines()[-1] == (
        f"ov: interrupted; the rebuild was dropped; the index keeps its {before[0]} files and "
        f"{before[1]} vectors of {before[2]} (`ov index --full` starts it again)"), r.err
    assert sorted(p.name for p in (root / ".ov").glob("index.db*") if "rebuild" in p.name) == []


def test_an_index_interrupted_before_its_first_commit_says_so(ov, tree, monkeypatch):
    from ov import indexer

    root = tree(notes(3))

    def walk(*_args, **_kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(indexer, "walk", walk)
    r = ov("index", "--no-embed", str(root), cwd=root.parent)
    assert r.code == 130
    assert r.err.splitlines()[-1] == ("ov: interrupted; the index holds no file yet "
                                      f"(`ov index {root} --no-embed` starts again)"), r.err


def test_a_first_index_stopped_by_sigint_keeps_its_first_files(tree):
    """A real Ctrl-C in the middle of a tree's first index: the files of every committed
    batch stay, the index answers, and the next `ov index` reads only the others."""
    n = 4000
    root = tree({f"d{i % 20}/f{i}.txt": f"line {i} of a file about harbours and boats\n" * 20 for i in range(n)})
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", "."], cwd=root, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        try:
            if held(root)[0]:
                break  # a batch is committed
        except Exception:  # noqa: BLE001 - not created yet, or its schema not written
            pass
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    files, vectors, rows = held(root)
    said = re.fullmatch(r"ov: interrupted; the index keeps (the first )?(\d+) files(?: read)? and (\d+) "
                        r"vectors of (\d+) \(`ov index` continues from there\)", err.splitlines()[-1])
    assert said and [int(g) for g in said.groups()[1:]] == [files, vectors, rows], err
    assert (said.group(1) is not None) == (files < n)  # the first build's files, while it is one
    assert run_subprocess(["grep", "-c", "-F", "harbours", "d1"], cwd=root).code == 0
    again = run_subprocess(["index", ".", "--json"], cwd=root, env={"OV_EMBEDDER": "hash"})
    res = again.json["result"]
    assert (res["added"], res["unchanged"]) == (n - files, files), res
