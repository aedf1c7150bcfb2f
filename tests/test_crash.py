"""Crash safety (issue 7): `ov index` killed with SIGKILL at random points.

A tree changes between runs (files added, edited, deleted, renamed, re-stamped). Each
round applies the same changes to a reference copy and indexes it without interruption,
then starts `ov index` on the tree in a real process, waits until it holds the index lock
(so the kill lands inside the work, not in Python's start-up) and kills it after a random
share of the time the reference run took. After every kill:

- `PRAGMA integrity_check` is ok (and FTS5's own integrity check);
- every search command answers (exit 0 or 1) from what was committed, a ranked hit's
  excerpt is exactly the file's text at its offsets, and `grep -F -l` lists the same
  files as a brute-force scan (the index is only its prefilter);
- the next `ov index` completes and leaves the same content as the uninterrupted
  reference: file rows, chunk rows, vectors (by chunk), and the same keyword and
  trigram hits (a row left behind in a contentless FTS table would show there).

`crash_loop` is also the long runner's engine (scripts/crash_run.py).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import run_inprocess

WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega index search vector "
         "query chunk token parser render store engine walker ranking fusion cursor budget tier "
         "überschrift naïve 検索 データ").split()
PROBES = ("omega", "parser render", "検索", "kappa")
EXTS = ("py", "md", "txt", "rs")


@dataclass
class CrashStats:
    kills: int = 0  # runs killed while holding the index lock
    completed: int = 0  # runs that finished before their kill time
    searches: int = 0  # search commands that answered (exit 0 or 1)
    recoveries: int = 0  # next runs that matched the reference
    errors: Counter = field(default_factory=Counter)  # error code (or failure kind) -> count
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        errs = ", ".join(f"{k}={v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"kills survived: {self.kills - len({f.split(':', 1)[0] for f in self.failures})}/"
                f"{self.kills}; runs that finished first: {self.completed}; searches answered: "
                f"{self.searches}; next runs matching the reference: {self.recoveries}; "
                f"errors by code: {errs}")


# ---- the changing tree ------------------------------------------------------------------------


def _text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(3, 90)):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))))
    if rng.random() < 0.3:
        lines.insert(0, '"""' + " ".join(rng.choice(WORDS) for _ in range(6)) + '."""')
    if rng.random() < 0.3:
        lines.insert(0, "# " + rng.choice(WORDS).title())
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def _write(roots: list[Path], rel: str, text: str) -> None:
    for r in roots:
        p = r / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def _files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".ov"]
        for f in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
    return sorted(out)


def make_tree(roots: list[Path], rng: random.Random, n: int) -> None:
    for i in range(n):
        _write(roots, f"d{i % 9}/s{i % 3}/f{i}.{rng.choice(EXTS)}", _text(rng))


def mutate(roots: list[Path], rng: random.Random, share: float = 0.3, most: int = 60) -> None:
    """The same random changes in every root: edits, additions, deletions, renames, and
    files re-stamped with unchanged content. As many files are added as deleted, so the
    tree keeps its size over hundreds of rounds."""
    files = _files(roots[0])
    k = max(3, min(most, int(len(files) * share)))
    picked = rng.sample(files, min(k, len(files)))
    serial = rng.randrange(1 << 30)
    for j, rel in enumerate(picked):
        roll = rng.random()
        if roll < 0.45:
            _write(roots, rel, _text(rng))
        elif roll < 0.6:
            for r in roots:
                (r / rel).unlink()
        elif roll < 0.7:
            new = f"moved/{serial}-{j}-{Path(rel).name}"
            for r in roots:
                (r / new).parent.mkdir(parents=True, exist_ok=True)
                os.replace(r / rel, r / new)
        elif roll < 0.85:
            t = time.time() + rng.randint(1, 10_000)
            for r in roots:
                os.utime(r / rel, (t, t))
        else:
            _write(roots, f"new/{serial}-{j}.{rng.choice(EXTS)}", _text(rng))


# ---- what an index holds -------------------------------------------------------------------------


def index_content(db: Path) -> dict:
    """Everything an uninterrupted run decides, keyed by path (row ids and times differ)."""
    from ov.store import connect

    con = connect(db, readonly=True)
    try:
        files = sorted(con.execute(
            "SELECT path, size, hash, ftype, category, tags FROM files").fetchall())
        # the text of every row (the tiers' too: a file's abstract and overview are its level-0/1
        # rows), and the hash a row with a vector carries
        chunks = sorted(con.execute(
            "SELECT f.path, c.level, c.seq, c.start, c.end, c.start_line, c.end_line, c.text, c.hash, "
            "c.embedded FROM chunks c JOIN files f ON f.id = c.file_id").fetchall())
        key = {cid: (p, lv, seq) for cid, p, lv, seq in con.execute(
            "SELECT c.id, f.path, c.level, c.seq FROM chunks c JOIN files f ON f.id = c.file_id")}
        vectors = sorted((key.get(cid, ("<orphan>", cid, 0)), hashlib.sha1(blob).hexdigest())
                         for cid, blob in con.execute("SELECT chunk_id, embedding FROM chunks_vec"))
        hits = {}
        for word in PROBES:
            for table in ("chunks_fts", "chunks_tri"):
                q = " OR ".join('"' + w + '"' for w in word.split())
                rows = con.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (q,)).fetchall()
                hits[f"{table}:{word}"] = sorted(key.get(r[0], ("<orphan>", r[0], 0)) for r in rows)
        model = con.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
    finally:
        con.close()
    return {"files": files, "chunks": chunks, "vectors": vectors, "hits": hits, "model": model}


def integrity_problems(db: Path) -> list[str]:
    from ov.store import connect

    con = connect(db)
    try:
        out = []
        res = [r[0] for r in con.execute("PRAGMA integrity_check").fetchall()]
        if res != ["ok"]:
            out.append(f"integrity_check: {res[:3]}")
        for table in ("chunks_fts", "chunks_tri"):
            try:
                con.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except Exception as e:  # noqa: BLE001 - any complaint is the finding
                out.append(f"{table} integrity-check: {e}")
        return out
    finally:
        con.close()


def _diff(a: dict, b: dict) -> str:
    for k in a:
        if a[k] != b[k]:
            if isinstance(a[k], list):
                extra = [x for x in a[k] if x not in b[k]][:2]
                missing = [x for x in b[k] if x not in a[k]][:2]
                return f"{k}: extra {extra} missing {missing}"
            if isinstance(a[k], dict):
                for kk in a[k]:
                    if a[k][kk] != b[k].get(kk):
                        return f"{k}[{kk}]: {a[k][kk][:3]} vs {b[k].get(kk, [])[:3]}"
            return f"{k}: {str(a[k])[:200]} vs {str(b[k])[:200]}"
    return ""


# ---- searching a killed index ---------------------------------------------------------------------


def _brute_force(root: Path, word: str) -> list[str]:
    out = []
    for rel in _files(root):
        if word in (root / rel).read_text(encoding="utf-8", errors="replace"):
            out.append(rel)
    return out


def search_round(root: Path, rng: random.Random, stats: CrashStats, tag: str) -> None:
    """Every search command against the index as the kill left it."""
    from ov.store import connect

    con = connect(root / ".ov" / "index.db", readonly=True)
    try:  # `read` serves indexed files: pick one the kill left in the index
        indexed = sorted(r[0] for r in con.execute("SELECT path FROM files"))
    finally:
        con.close()
    on_disk = [p for p in indexed if (root / p).is_file()]
    word = rng.choice(WORDS)
    some = rng.choice(on_disk) if on_disk else "."
    calls = [
        ["status", "-o", "json"],
        ["search", f"{word} {rng.choice(WORDS)}", "-o", "json"],
        ["search", word, "--search-type", "keywords", "-o", "json", "-n", "50"],
        ["find", word, "-o", "json"],
        ["search", word, "--mode", "context", "--max-tokens", "400", "-o", "json"],
        ["grep", "-F", "-l", word, "-o", "json", "--node-limit", "100000"],
        ["glob", "**/*.py", "-o", "json", "--node-limit", "100000"],
        ["read", some, "-o", "json"],
        ["manifest", "-o", "json"],
    ]
    for args in calls:
        r = run_inprocess(args, cwd=root, env={"OV_EMBEDDER": "hash"})
        try:
            data = json.loads(r.out)
        except ValueError:
            data = None
        if r.code not in (0, 1) or data is None or data.get("status") != "ok":
            code = (data or {}).get("error", {}).get("code", f"exit{r.code}")
            stats.errors[code] += 1
            stats.failures.append(f"{tag}: {' '.join(args[:2])} -> {r.code} {r.out[:200]} {r.err[:200]}")
            continue
        stats.searches += 1
        res = data["result"]
        if args[0] in ("search", "find") and "hits" in res:
            for h in res["hits"]:
                text = (root / h["path"]).read_text(encoding="utf-8")
                ex = h["excerpt"]
                if h["level"] == 2 and text[ex["start"]:ex["end"]] != ex["text"]:
                    stats.errors["bad_excerpt"] += 1
                    stats.failures.append(f"{tag}: {args[0]} excerpt of {h['path']} is not the file's text")
        if args[0] == "grep":
            want = _brute_force(root, word)
            if sorted(res.get("paths") or []) != want:
                stats.errors["grep_mismatch"] += 1
                stats.failures.append(f"{tag}: grep -F -l {word}: {sorted(res.get('paths') or [])[:5]} "
                                      f"!= {want[:5]}")


# ---- killing -------------------------------------------------------------------------------------


def _lock_held(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(fd)


def kill_index_run(root: Path, args: list[str], work_s: float, rng: random.Random) -> bool:
    """Start `ov index ARGS` in ROOT, kill it at a random point of its work. True if it
    was killed, False if it finished first."""
    env = dict(os.environ, OV_EMBEDDER="hash")
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "index", ".", *args], cwd=root, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = root / ".ov" / "index.db.lock"
    try:
        deadline = time.monotonic() + 60
        while p.poll() is None and not _lock_held(lock):
            if time.monotonic() > deadline:
                raise AssertionError("ov index never took the index lock")
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 1.2 * work_s))
        if p.poll() is not None:
            return False
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        return p.returncode == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _index_inprocess(root: Path, *args: str) -> float:
    t0 = time.monotonic()
    r = run_inprocess(["index", ".", *args], cwd=root, env={"OV_EMBEDDER": "hash"})
    if r.code != 0:
        raise AssertionError(f"ov index {' '.join(args)} failed in {root}: {r.err or r.out}")
    return time.monotonic() - t0


def crash_loop(work: Path, kills: int, *, files: int = 120, seed: int = 0, full_every: int = 0,
               log=None) -> CrashStats:
    """Kill `ov index` `kills` times over a changing tree under WORK; see the module doc.

    full_every N: every Nth killed run is `--full` (a kill there leaves an index being
    rebuilt from empty: searches answer from what is committed; `find` may meet an index
    with no vectors yet, which `unsupported` reports)."""
    rng = random.Random(seed)
    tree, ref = work / "tree", work / "ref"
    for d in (tree, ref):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    make_tree([tree, ref], rng, files)
    _index_inprocess(tree)
    _index_inprocess(ref)
    stats = CrashStats()
    rounds = 0
    while stats.kills < kills:
        rounds += 1
        if rounds > kills * 3 + 10:
            raise AssertionError(f"only {stats.kills} of {rounds} runs could be killed")
        mutate([tree, ref], rng)
        full = bool(full_every) and rounds % full_every == 0
        args = ["--no-embed"] if rng.random() < 0.2 else []
        if full:
            args.append("--full")
        work_s = _index_inprocess(ref, *(["--full"] if full else []))
        if not kill_index_run(tree, args, work_s, rng):
            stats.completed += 1
            continue
        stats.kills += 1
        tag = f"kill {stats.kills}"
        db = tree / ".ov" / "index.db"
        for problem in integrity_problems(db):
            stats.errors["integrity"] += 1
            stats.failures.append(f"{tag}: {problem}")
        search_round(tree, rng, stats, tag)
        _index_inprocess(tree)
        diff = _diff(index_content(db), index_content(ref / ".ov" / "index.db"))
        if diff:
            stats.errors["final_content"] += 1
            stats.failures.append(f"{tag}: after the next run, {diff}")
        else:
            stats.recoveries += 1
        if log:
            log(f"{tag}: {stats.searches} searches answered, {sum(stats.errors.values())} errors")
    return stats


# ---- tests ---------------------------------------------------------------------------------------


def test_index_content_sees_a_leftover_keyword_row(tmp_path):
    """The comparison is not blind: a chunk deleted without its FTS row shows up."""
    root = tmp_path / "t"
    _write([root], "a.txt", "omega kappa\n")
    _index_inprocess(root)
    db = root / ".ov" / "index.db"
    before = index_content(db)
    from ov.store import connect

    con = connect(db)
    con.execute("DELETE FROM chunks WHERE level = 2")
    con.close()
    after = index_content(db)
    assert _diff(after, before)
    assert after["hits"]["chunks_fts:omega"] != before["hits"]["chunks_fts:omega"]


def test_kill_lands_inside_the_work(tmp_path):
    rng = random.Random(7)
    root = tmp_path / "t"
    make_tree([root], rng, 40)
    _index_inprocess(root)
    mutate([root], rng, share=0.9)
    killed = kill_index_run(root, ["--full"], 0.0, rng)  # killed as soon as it holds the lock
    assert killed
    assert integrity_problems(root / ".ov" / "index.db") == []


def test_twenty_kills_over_a_changing_tree(tmp_path):
    stats = crash_loop(tmp_path, kills=20, files=80, seed=1)
    assert stats.kills >= 20
    assert stats.failures == [], "\n".join(stats.failures[:20])
    assert not stats.errors
    assert stats.recoveries == stats.kills
    assert stats.searches == 9 * stats.kills


@pytest.mark.slow
def test_hundred_kills_over_a_changing_tree(tmp_path):
    stats = crash_loop(tmp_path, kills=100, files=200, seed=2)
    assert stats.kills >= 100
    assert stats.failures == [], "\n".join(stats.failures[:20])
    assert stats.recoveries == stats.kills


def test_ctrl_c_while_ov_starts_is_an_interrupt_not_a_traceback():
    """A Ctrl-C lands in the imports of the first ~0.3 s as often as anywhere: it ends as
    every interrupt does (`ov: interrupted`, status 130), with no traceback of an import."""
    code = ("import ov.__main__ as m\n"
            "def start():\n    import ov.cli.run\n    raise KeyboardInterrupt\n"
            "m._entry = start\nm.entry()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=Path(__file__).resolve().parent.parent)
    assert r.returncode == 130
    assert r.stderr == "ov: interrupted\n"
    assert r.stdout == ""
