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
from ov.indexer import worker_state
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
                                      f"vectors of {rows} (`ov index` continues from there; or the next "
                                      "search adds the rest in the background)"), r.err
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
    from ov.indexer import INLINE_FILES

    n = 4000
    root = tree({f"d{i % 20}/f{i}.txt": f"line {i} of a file about harbours and boats\n" * 20 for i in range(n)})
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", "."], cwd=root, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        try:
            if held(root)[0] > INLINE_FILES:
                break  # a batch the file pool read is committed (not while the pool starts)
        except Exception:  # noqa: BLE001 - not created yet, or its schema not written
            pass
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    files, vectors, rows = held(root)
    said = re.fullmatch(r"ov: interrupted; the index keeps (the first )?(\d+) files(?: read)? and (\d+) "
                        r"vectors of (\d+) \(`ov index` continues from there; or the next search adds the "
                        r"rest in the background\)", err.splitlines()[-1])
    assert "Traceback" not in err, err
    assert said and [int(g) for g in said.groups()[1:]] == [files, vectors, rows], err
    assert (said.group(1) is not None) == (files < n)  # the first build's files, while it is one
    assert run_subprocess(["grep", "-c", "-F", "harbours", "d1"], cwd=root).code == 0
    again = run_subprocess(["index", ".", "--json"], cwd=root, env={"OV_EMBEDDER": "hash"})
    res = again.json["result"]
    assert (res["added"], res["unchanged"]) == (n - files, files), res


# ---- a background worker stopped by `ov index` -------------------------------------------


def _held_worker(root: Path) -> int:
    """A background worker for the index of `root`, whose vectors all wait, held still
    (SIGSTOP) from its start: a first search's worker on the test embedder can finish
    before it is caught, or be caught in its last batch."""
    from ov.indexer import IndexOptions, index_tree
    from ov.worker import spawn

    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    pid = spawn(_db(root))
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        # stopped once it is: before, it may be inside its exec, with no command line yet,
        # which `worker_state` reads to know it is this index's worker
        deadline = time.monotonic() + 30
        while _proc_state(pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        state = worker_state(_db(root))
        assert state is not None and int(state["pid"]) == pid
    except BaseException:
        os.kill(pid, signal.SIGKILL)  # never left stopped behind a failed test
        raise
    return pid


def _proc_state(pid: int) -> str:
    """The state letter of `pid` in /proc (T: stopped), "" where unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return ""


def _term_pending(pid: int) -> bool:
    """Whether SIGTERM waits to be delivered to the stopped `pid` (Linux /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    masks = [int(ln.split()[1], 16) for ln in status.splitlines() if ln.startswith(("SigPnd:", "ShdPnd:"))]
    return any(m & (1 << (signal.SIGTERM - 1)) for m in masks)


def _index_stopping(root: Path, pid: int, *args: str) -> subprocess.CompletedProcess:
    """`ov index ARGS` while the worker `pid` is held: it is let go once told to stop."""
    env = {**os.environ, "OV_EMBEDDER": "hash"}
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", ".", *args], cwd=root, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _term_pending(pid) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.kill(pid, signal.SIGCONT)
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_index_says_it_stops_the_background_worker(tree):
    root = tree(notes(600))
    pid = _held_worker(root)
    p = _index_stopping(root, pid)
    assert p.returncode == 0, p.stderr
    assert (f"ov: stopping the background worker (pid {pid}) after its current batch; this run "
            "does its work\n") in p.stderr, p.stderr
    assert worker_state(_db(root)) is None and held(root)[1] == held(root)[2]


def test_index_no_embed_says_it_stops_the_worker_and_what_adds_the_vectors(tree):
    """After `ov index --no-embed` the index is keywords-only: no search starts a worker
    for the rows still without a vector, and only a plain `ov index` adds them."""
    root = tree(notes(600))
    pid = _held_worker(root)
    p = _index_stopping(root, pid, "--no-embed")
    assert p.returncode == 0, p.stderr
    files, vectors, rows = held(root)
    assert vectors < rows
    assert p.stderr.splitlines()[:2] == [
        f"ov: stopping the background worker (pid {pid}) after its current batch; this run does its "
        "work, keywords only (--no-embed)",
        f"ov: {rows - vectors} of {rows} rows have no vector; a --no-embed index starts no background "
        "worker for them: `ov index` adds them"], p.stderr
    # what the line says: a search starts no worker for them ...
    r = run_subprocess(["search", "lighthouse keeper", "--json"], cwd=root)
    assert r.code == 0 and "background worker" not in r.err and worker_state(_db(root)) is None, r.err
    assert held(root)[1] == vectors
    # ... and `ov index` adds them
    assert run_subprocess(["index", "."], cwd=root).code == 0
    assert held(root)[1] == rows


def test_no_embed_from_the_start_hears_nothing_of_vectors(ov, tree):
    root = tree(notes(5))
    r = ov("index", ".", "--no-embed", cwd=root)
    assert r.code == 0 and r.err.startswith("ov: indexed ") and len(r.err.splitlines()) == 1, r.err
    # an index with its vectors, refreshed --no-embed after an edit: the new rows lack one
    assert ov("index", ".", cwd=root).code == 0
    (root / "docs" / "n001.md").write_text(PROSE.format(i="one") + "\nA new paragraph on tides.\n")
    r = ov("index", ".", "--no-embed", cwd=root)
    files, vectors, rows = held(root)
    assert r.code == 0 and vectors < rows
    assert r.err.splitlines()[0] == (f"ov: {rows - vectors} of {rows} rows have no vector; a --no-embed "
                                     "index starts no background worker for them: `ov index` adds them")


# ---- `ov index --stop` while a foreground indexer holds the index ---------------------------


def test_stop_names_a_foreground_indexer_holding_the_index(ov, tree):
    """`--stop` said only "no background worker runs" while an `ov index` wrote the index
    for an hour: it now says what holds it (as `ov status` sees it) and how to stop that."""
    root = tree(notes(3))
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"), str(_db(root)) + ".lock"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        r = ov("index", ".", "--stop", cwd=root)
        assert r.code == 0
        assert r.err == (f"ov: no background worker runs for this index; a foreground indexer (pid "
                         f"{holder.pid}) is writing it (an `ov index`, or a watcher: `ov index --watch`, "
                         f"`ov mcp`): Ctrl-C in its terminal or `kill {holder.pid}` stops it\n"), r.err
        r = ov("index", ".", "--stop", "--json", cwd=root)  # the JSON keeps its shape
        assert r.json["result"] == {"stopped": False, "pid": None}
    finally:
        holder.kill()
        holder.wait()
    assert ov("index", ".", "--stop", cwd=root).err == "ov: no background worker runs for this index\n"


# ---- off a terminal: one line when a long embedding starts -----------------------------------


def test_off_a_terminal_a_long_embedding_says_so_once(ov, tree, monkeypatch):
    """A CI log showed nothing for the 23 minutes of the Go stdlib's vectors: rg and fd
    are quiet off a terminal, but a run that long says once what it is doing."""
    from ov.cli.run import Progress

    monkeypatch.setattr(Progress, "HINT_ROWS", 20)
    root = tree(notes(30))
    r = ov("index", ".", "--json", cwd=root)  # stderr is not a terminal here
    rows = held(root)[2]
    assert r.code == 0 and r.json["status"] == "ok"  # stdout keeps its envelope
    assert r.err == f"ov: embedding {rows} rows; --progress prints progress lines\n", r.err
    # fewer rows than that to embed, or either progress flag: no such line
    (root / "docs" / "n000.md").write_text(PROSE.format(i="zero"))
    assert "embedding" not in ov("index", ".", cwd=root).err
    assert "embedding" not in ov("index", ".", "--full", "--no-progress", cwd=root).err
    lines = ov("index", ".", "--full", "--progress", cwd=root).err.splitlines()
    assert "ov: embedding" in "\n".join(lines) and not any("--progress prints" in ln for ln in lines), lines


def test_status_in_another_shell_shows_a_foreground_indexers_progress(tree):
    """During an `ov index`, `ov status` elsewhere said only "an indexer holds the index
    now" (a review's finding): no phase, count, rate or time left. The run now keeps a state
    file as the worker does; status shows it while that process holds the index lock, and
    not after it ends, nor from a file naming another process."""
    from ov import api
    from ov.indexer import indexer_file

    root = tree(notes(80))
    seen: list[dict] = []

    embeds: list[int] = []

    def progress(phase, done, total):
        if phase != "embed":
            return
        embeds.append(done)
        if len(embeds) == 1:
            time.sleep(0.6)  # past the state file's half-second between writes: this step is written
        elif len(embeds) == 2:
            r = run_subprocess(["status", "--json"], cwd=root)
            seen.append(r.json["result"])
            seen.append({"text": run_subprocess(["status"], cwd=root).out})

    api.index(root, progress=progress)
    got, text = seen[0]["indexer"], seen[1]["text"]
    assert got is not None and got["pid"] == os.getpid(), seen[0]
    assert got["phase"] == "embed" and got["total"] > 0, got
    assert f"an indexer writes the index now (pid {os.getpid()}, " in text, text
    assert f"`kill {os.getpid()}` stops it" in text, text
    assert not indexer_file(_db(root)).exists()
    assert run_subprocess(["status", "--json"], cwd=root).json["result"]["indexer"] is None
    indexer_file(_db(root)).write_text(f'{{"pid": {os.getpid()}, "phase": "embed", "done": 1, "total": 9}}')
    r = run_subprocess(["status", "--json"], cwd=root)  # no lock held: a planted or stale file
    assert r.json["result"]["indexer"] is None, r.out
