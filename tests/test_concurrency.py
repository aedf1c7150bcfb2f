"""Concurrency (issue 7): searches of every kind, from several processes, while
`ov index --full` rebuilds a large tree.

The tree does not change during the run, so every answer can be checked against the
files: a ranked hit's excerpt is the file's text at its offsets, `grep -F` and `glob`
equal a brute-force scan (the index is only grep's prefilter, even half rebuilt), `read`
serves the file's current text, a context entry's full tier is the file. A search may
also fail with the retryable `index_busy` (a context call that records a session needs
the write lock the indexer holds), or `read` may say `not_found` for a file the rebuild
has not reached yet; nothing else. One probe reads the store directly inside one read
transaction: every indexed file has all of its chunks, each the file's text at its
offsets, so no reader sees a half-written file.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess

FILES = 1500
SEARCHES = 100
WORKERS = 4
WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega index search vector "
         "query chunk token parser render store engine walker ranking fusion cursor budget").split()


def _make_tree(root: Path, n: int) -> None:
    rng = random.Random(3)
    for i in range(n):
        p = root / f"p{i % 25}" / f"q{i % 4}" / f"f{i}.{('py', 'md', 'txt')[i % 3]}"
        p.parent.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10)))
                 for _ in range(rng.randint(2, 12))]
        p.write_text(f"# f{i}\n" + "\n".join(lines) + "\n", encoding="utf-8")


def _disk_files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".ov"]
        out += [os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/") for f in filenames]
    return sorted(out)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for_lock(lock: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            return
        finally:
            os.close(fd)
        time.sleep(0.005)
    raise AssertionError("ov index --full never took the index lock")


# ---- one search, checked (runs in a worker process) ------------------------------------------------


def _store_probe(root: Path, rng: random.Random) -> str | None:
    """Inside one read transaction: each sampled indexed file has exactly the chunks the
    chunker makes of it, each the file's text at its offsets."""
    from ov.chunk import chunk_text
    from ov.indexer import chunk_budget
    from ov.store import connect

    con = connect(root / ".ov" / "index.db", readonly=True)
    try:
        con.execute("BEGIN")
        # a row whose size is not the file's is a placeholder the rebuild has not reached
        rows = con.execute("SELECT id, path, size FROM files WHERE hash != ''").fetchall()
        rows = [r for r in rows if (root / r[1]).stat().st_size == r[2]]
        for fid, path, _ in rng.sample(rows, min(25, len(rows))):
            text = (root / path).read_text(encoding="utf-8")
            got = con.execute("SELECT start, end, text FROM chunks WHERE file_id = ? AND level = 2 "
                              "ORDER BY seq", (fid,)).fetchall()
            want = [(c.start, c.end, c.text) for c in chunk_text(text, path, max_tokens=chunk_budget(path))]
            if got != want:
                return f"{path}: {len(got)} chunks in the index, {len(want)} expected"
        con.execute("COMMIT")
    finally:
        con.close()
    return None


def one_search(root: str, kind: str, seed: int, indexer_pid: int) -> dict:
    root_p = Path(root)
    rng = random.Random(seed)
    during = _running(indexer_pid)
    word = rng.choice(WORDS)
    files = _disk_files(root_p)
    some = rng.choice(files)
    args = {
        "hybrid": ["search", f"{word} {rng.choice(WORDS)}"],
        "keywords": ["search", word, "--search-type", "keywords", "-n", "50"],
        "semantic": ["find", word],
        "context": ["search", word, "--mode", "context", "--max-tokens", "600"],
        "session": ["search", word, "--mode", "context", "--session-id", f"s{seed}"],
        "grep": ["grep", "-F", word, "-l", "--node-limit", "100000"],
        "glob": ["glob", f"p{rng.randrange(25)}/**/*.py", "--node-limit", "100000"],
        "read": ["read", some],
        "status": ["status"],
        "manifest": ["manifest"],
    }.get(kind)
    out = {"kind": kind, "during": during, "code": None, "problem": None}
    if kind == "store":
        out["problem"] = _store_probe(root_p, rng)
        out["during"] = out["during"] and _running(indexer_pid)
        return out
    r = run_inprocess([*args, "-o", "json"], cwd=root_p, env={"OV_EMBEDDER": "hash"})
    try:
        data = json.loads(r.out)
    except ValueError:
        out["problem"] = f"not JSON (exit {r.code}): {r.out[:200]!r} {r.err[:200]!r}"
        return out
    if "Traceback" in r.err:
        out["problem"] = "traceback on stderr"
        return out
    if data["status"] == "error":
        e = data["error"]
        out["code"] = e["code"]
        allowed = e["code"] == "index_busy" or (kind == "read" and e["code"] == "not_found")
        if r.code != 2 or not allowed or (e["code"] == "index_busy" and e["retryable"] is not True):
            out["problem"] = f"{' '.join(args)}: {e}"
        return out
    out["code"] = "ok" if r.code == 0 else "none"
    res = data["result"]
    problem = None
    if kind in ("hybrid", "keywords", "semantic"):
        for i, h in enumerate(res["hits"], 1):
            text = (root_p / h["path"]).read_text(encoding="utf-8")
            ex = h["excerpt"]
            if h["rank"] != i or not 0 <= h["score"] <= 1:
                problem = f"rank/score {h['rank']} {h['score']}"
            elif text[ex["start"]:ex["end"]] != ex["text"]:
                problem = f"excerpt of {h['path']} is not the file's text"
    elif kind in ("context", "session"):
        st = res["stats"]
        if st["used_tokens"] > st["max_tokens"]:
            problem = f"used {st['used_tokens']} > {st['max_tokens']} tokens"
        for e in res["entries"]:
            if e["detail"] == "full" and e["text"] != (root_p / e["uri"]).read_text(encoding="utf-8"):
                problem = f"full tier of {e['uri']} is not the file"
    elif kind == "grep":
        want = [p for p in files if word in (root_p / p).read_text(encoding="utf-8")]
        if sorted(res["paths"]) != want:
            problem = f"grep -F -l {word}: {len(res['paths'])} files, brute force {len(want)}"
    elif kind == "glob":
        pat = args[1]
        top = pat.split("/")[0] + "/"
        want = [p for p in files if p.startswith(top) and p.endswith(".py")]
        got = sorted(m if isinstance(m, str) else m["path"] for m in res["matches"])
        if got != want:
            problem = f"glob {pat}: {len(got)} paths, brute force {len(want)}"
    elif kind == "read":
        if res["text"] != (root_p / some).read_text(encoding="utf-8"):
            problem = f"read {some}: not the file's text"
    elif kind == "status":
        if not 0 <= res["files"] <= len(files):
            problem = f"status files {res['files']} of {len(files)}"
    out["problem"] = problem
    return out


# ---- the test ---------------------------------------------------------------------------------------

KINDS = ("hybrid", "keywords", "semantic", "context", "session", "grep", "glob", "read", "status",
         "manifest", "store")


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("conc") / "tree"
    _make_tree(root, FILES)
    r = run_inprocess("index", ".", cwd=root, env={"OV_EMBEDDER": "hash"})
    assert r.code == 0, r.err
    return root


def test_searches_during_a_full_rebuild(big_tree):
    root = big_tree
    env = dict(os.environ, OV_EMBEDDER="hash")
    env.pop("OV_DEBUG", None)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=WORKERS, mp_context=ctx) as pool:
        # warm the workers (imports) before the rebuild starts, so the searches overlap it
        list(pool.map(one_search, [str(root)] * WORKERS, ["status"] * WORKERS, range(WORKERS),
                      [0] * WORKERS))
        t0 = time.monotonic()
        indexer = subprocess.Popen([sys.executable, "-m", "ov", "index", ".", "--full"], cwd=root,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_lock(root / ".ov" / "index.db.lock", indexer)  # the rebuild is under way
            kinds = [KINDS[i % len(KINDS)] for i in range(SEARCHES)]
            results = list(pool.map(one_search, [str(root)] * SEARCHES, kinds,
                                    range(100, 100 + SEARCHES), [indexer.pid] * SEARCHES))
            searching_s = time.monotonic() - t0
            out, err = indexer.communicate(timeout=300)
        finally:
            if indexer.poll() is None:
                indexer.kill()
                indexer.wait()
    assert indexer.returncode == 0, err
    problems = [f"{r['kind']}: {r['problem']}" for r in results if r["problem"]]
    assert problems == [], "\n".join(problems[:20])
    codes = Counter(r["code"] for r in results if r["kind"] != "store")
    assert set(codes) <= {"ok", "none", "index_busy", "not_found"}, codes
    during = sum(r["during"] for r in results)
    # the test means something only if the searches ran while the rebuild did
    assert during >= SEARCHES // 4, (during, searching_s)
    assert codes["ok"] + codes["none"] >= SEARCHES // 2, codes
    # and the rebuild, with readers all along, produced the whole index
    r = run_inprocess("status", "-o", "json", cwd=root, env={"OV_EMBEDDER": "hash"})
    st = r.json["result"]
    assert st["files"] == FILES and st["embedded_coverage"] == 1.0


def test_opening_the_index_again_keeps_the_lock_a_long_lived_connection_holds(tmp_path):
    """`ov mcp` holds a connection for hours and its watcher opens the index again for each
    batch. Checking the file by a descriptor of ov's own and closing it dropped the held
    connection's POSIX locks (closing any descriptor of a file drops them all), so another
    process closing its connection took itself for the last one, checkpointed and removed
    the WAL under the server: the index was corrupt. The WAL must outlive that process."""
    import subprocess
    import sys

    from ov.store import Store

    root = make_tree(tmp_path / "t", {"a.md": "# A\n\nalpha\n"})
    assert run_inprocess("index", ".", "--no-embed", cwd=root, env={"OV_EMBEDDER": "hash"}).code == 0
    db = root / ".ov" / "index.db"
    writer = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n"
              "c.execute(\"INSERT OR REPLACE INTO meta(key, value) VALUES ('probe', '1')\")\n"
              "c.commit()\nc.close()\n")
    with Store.open(db) as held:
        assert held.q1("SELECT count(*) FROM files") == 1
        with Store.open(db) as again:  # a watcher's batch
            assert again.q1("SELECT count(*) FROM files") == 1
        subprocess.run([sys.executable, "-c", writer, str(db)], check=True, timeout=60)
        assert os.path.exists(f"{db}-wal"), "another process removed the WAL of a connection in use"
        assert held.q1("PRAGMA integrity_check") == "ok"
        assert held.get_meta("probe") == "1"
