"""The background worker: what makes a first search answer in seconds on any tree.

A search on a tree without an index builds the keyword rows only (`first_use`), answers
from them, and leaves the rest to this worker, a detached process that outlives the
command:

    python -m ov.worker DB      (started by `spawn`: its own session, no terminal)

It writes grep's trigram rows, then the vectors (ov.indexer.complete_index). One per
index: it holds the index lock while it works, so a second worker, or one started while
`ov index` runs, exits at once; `ov index` stops it (and does its work in the
foreground). SIGTERM or SIGINT (`ov index --stop`) ends it after the current batch.
Every batch is its own transaction, so a SIGKILL at any point leaves a consistent index
that the next run (a worker or `ov index`) completes. It runs at a lower CPU priority so
the searches it serves stay quick, and reports its progress to `ov status` through a JSON
file beside the index (ov.indexer.worker_state).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ov.config import env_number
from ov.errors import OvError
from ov.indexer import (EMBED_META, KEYWORDS_META, IndexLock, IndexOptions, Progress, SearchYield, complete_index,
                        embed_phase, index_tree, indexer_file, lock_held, older_layout, process_alive, stop_worker,
                        trigram_phase, worker_file, worker_paused, worker_state)
from ov.model import IndexReport
from ov.store import Store, prepare_index_dir
from ov.store.db import stored_setting, unfinished
from ov.walk import read_json, write_private


# the worker's CPU priority, for itself and its session's scheduler group (`lower_priority`);
# OV_WORKER_NICE sets another (0-19): the test suite runs the workers it waits for at 0, so
# that a worker another session left running (the README's quick start) does not halve them
NICE = int(min(19, env_number("OV_WORKER_NICE", 10)))
AUTOGROUP_RATE = 0.1  # seconds: the kernel's limit on /proc/*/autogroup writes (HZ / 10)
AUTOGROUP_PATIENCE = 2.0  # seconds a refused write is tried again
# a first search reads files for this long, then answers from the keyword rows written so
# far (saying how many) and leaves the rest of the tree to the worker
FIRST_BUDGET_S = env_number("OV_FIRST_BUDGET", 6.0)
# a first search that finds another one building the index waits for it this long (its
# budget, and time to start and to commit), then ends with the retryable `index_busy`
FIRST_WAIT_S = FIRST_BUDGET_S + 15
# a first search whose keyword rows cover the whole tree embeds this many waiting rows
# itself, within its budget, before it answers: a folder of a few notes gets its first
# answer from both branches (four notes: 0.85 s in all, against 0.55 s from keywords
# alone, docs/BENCHMARKS.md), where a larger tree answers from its keywords and leaves the
# vectors to the worker
FIRST_INLINE_ROWS = int(env_number("OV_FIRST_INLINE_ROWS", 64))
# seconds a worker waits, holding the index, before it writes anything: a test (or a
# script) that reads the first answer as the keyword rows alone give it, on a loaded
# machine where the worker could add vectors before the search that started it answers
START_DELAY_S = env_number("OV_WORKER_DELAY", 0.0)
START_LOCK_WAIT_S = 1.0  # how long a starting worker waits for the index lock before it leaves it to its holder
STATE_EVERY_S = 0.5  # how often the state file is rewritten
# the memory of the worker's rate (`Throughput`): a change of speed (the machine's load, rows
# of another length) shows two-thirds in this time, nearly all within a minute
RATE_WINDOW_S = 20.0
LOG_NAME = "worker.log"


def enabled() -> bool:
    """`OV_BACKGROUND=0` turns the worker off: a first search then indexes everything
    before it answers, as `ov index` does."""
    return os.environ.get("OV_BACKGROUND", "1") != "0"


def first_use(root: Path, db_path: Path, opts: IndexOptions, *, progress: Progress | None = None,
              warn=None, stop: Callable[[], bool] | None = None) -> tuple[IndexReport | None, int | None]:
    """Index `root` for a first search: the keyword rows now, the rest by a background
    worker. Returns (the keyword run's report, the worker's pid or None); the report is
    None when another process finished the index while this one waited for it. `stop`
    ends the keyword rows early, as the time budget does (`ov mcp` whose client left).

    Also what a search does with an index whose first build was killed (ov.store.db
    `unfinished`): the walk goes on from the files that build committed."""
    if stored_setting(db_path, EMBED_META) == "off":  # a killed `ov index --no-embed` stays so
        opts = replace(opts, embed=False)
    if enabled():
        later = opts.embed and model_available(warn)
        opts = replace(opts, embed=False, embed_later=later, trigrams=False, budget_s=FIRST_BUDGET_S)
    prepare_index_dir(db_path)
    lock = IndexLock(db_path)
    if not _lock_unless_built(lock, db_path):
        return None, None
    deadline = time.monotonic() + FIRST_BUDGET_S
    try:
        report = index_tree(root, db_path, opts, progress=progress, warn=warn, locked=True, stop=stop)
        if opts.embed_later and not report.partial and _finish_small(
                db_path, report, progress, lambda: time.monotonic() > deadline or bool(stop and stop())):
            return report, None  # nothing left for a worker
    finally:
        lock.release()
    return report, spawn(db_path)


def _finish_small(db_path: Path, report: IndexReport, progress: Progress | None,
                  stop: Callable[[], bool]) -> bool:
    """A first search's keyword rows cover the whole tree: when it holds at most
    FIRST_INLINE_ROWS rows waiting for a vector, write grep's trigram rows and embed them
    here until `stop` (the search's time budget; what is left then is the worker's). True
    when the index is complete. The caller holds the index lock."""
    if FIRST_INLINE_ROWS <= 0:
        return False
    t0 = time.perf_counter()
    store = Store.open(db_path)
    try:
        waiting = store.coverage()
        if waiting[1] - waiting[0] > FIRST_INLINE_ROWS or stop():
            return False
        trigram_phase(store, progress, stop)
        if stop():  # the budget is spent: no model load for nothing (the worker loads it)
            return False
        embed_phase(store, report, progress, None, stop)
        emb, total = store.coverage()
        return emb == total and store.trigrams_complete()
    except OvError:
        return False  # the answer comes from the keywords; the worker tries again and logs why
    finally:
        store.close()
        report.seconds = round(report.seconds + time.perf_counter() - t0, 3)


def _lock_unless_built(lock: IndexLock, db_path: Path) -> bool:
    """Take the index lock for a first build, waiting while another process builds the
    index (parallel first searches: one builds, the others wait for it and answer from
    its index). False, without the lock, when the index is finished meanwhile; a build
    that outlasts FIRST_WAIT_S is `index_busy`."""
    deadline = time.monotonic() + FIRST_WAIT_S
    while unfinished(db_path):
        try:
            lock.acquire(0)
        except OvError as e:
            if e.code != "index_busy":
                raise
            if time.monotonic() > deadline:
                raise OvError("index_busy", f"another ov is building the index {db_path}; "
                              "try again when it ends", retryable=True) from None
            time.sleep(0.05)
            continue
        if unfinished(db_path):  # read again under the lock: it may have ended just before
            return True
        lock.release()
    return False


def model_available(warn) -> bool:
    from ov.embed import check_available  # noqa: PLC0415 - cheap: no onnxruntime

    try:
        check_available()
    except OvError as e:
        if warn:
            warn(f"{e.message}; the index has keywords only")
        return False
    return True


def spawn(db_path: Path) -> int | None:
    """Start a worker for the index unless one runs (its pid), an `ov index` holds the
    index (None: that run does the work), or the worker is turned off."""
    db_path = Path(db_path).resolve()
    if not enabled():
        return None
    state = worker_state(db_path)
    if state is not None:
        return int(state["pid"])
    if lock_held(db_path) or low_disk(db_path) is not None:
        return None
    log = _open_log(db_path.parent / LOG_NAME)
    try:
        # -P: `-m` would put its working folder (the tree's .ov/) first on the import path,
        # and a cloned tree's `.ov/ov/` would run as ov; PYTHONSAFEPATH does the same for
        # the processes it starts in turn
        proc = subprocess.Popen([sys.executable, "-P", "-m", "ov.worker", str(db_path)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=log if log is not None else subprocess.DEVNULL,
                                start_new_session=True, close_fds=True, cwd=str(db_path.parent),
                                env={**os.environ, "PYTHONSAFEPATH": "1"})
    finally:
        if log is not None:
            os.close(log)
    # the state until the worker writes its own, so that the search that started it
    # already reports it (ov.indexer.worker_state)
    _write_json(worker_file(db_path), {"pid": proc.pid, "started": time.time(), **_fresh("starting")})
    return proc.pid


# A worker is not started on a disk with less free than this: on a full disk each search
# had started one, which loaded the model and died on its first write, unheard (its
# failure mark could not be written either: a review). A batch of vectors with its WAL
# needs a few MB (sqlite-vec takes room for 1,024 vectors at once, 1.5 MB).
MIN_FREE_BYTES = 32 * 1024 * 1024


def low_disk(db_path: Path) -> int | None:
    """The bytes free on the index's disk when under MIN_FREE_BYTES, else None."""
    try:
        free = shutil.disk_usage(Path(db_path).parent).free
    except OSError:
        return None
    return free if free < MIN_FREE_BYTES else None


def _write_json(path: Path, data: dict) -> None:
    """Replace `path` atomically, never through a symlink (`write_private`; a failure is
    swallowed: the state is a report, and the next write tries again)."""
    write_private(str(path), json.dumps(data).encode("utf-8"))


def stop(db_path: Path, wait_s: float = 60.0) -> int | None:
    """Stop the index's background worker: SIGTERM, then wait until it has committed its
    batch and let go of the index. Returns its pid, or None when none ran."""
    state = worker_state(db_path)
    if state is None or not stop_worker(db_path):
        return None
    deadline = time.monotonic() + wait_s
    while worker_state(db_path) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    if worker_state(db_path) is not None:
        raise OvError("index_busy", f"the background worker (pid {state['pid']}) did not stop "
                      f"within {wait_s:.0f}s", retryable=True)
    # ... and until its process is gone, a few seconds at most: it lets go of the index
    # before it exits, and `ps` a second after "stopped" still showed it (a review)
    gone = time.monotonic() + EXIT_WAIT_S
    while _running(int(state["pid"])) and time.monotonic() < gone:
        time.sleep(0.05)
    try:  # one stopped before it took over its state file leaves the spawner's
        if read_json(worker_file(db_path)).get("pid") == state["pid"]:
            worker_file(db_path).unlink()
    except (OSError, ValueError):
        pass
    return int(state["pid"])


EXIT_WAIT_S = 5.0


def _running(pid: int) -> bool:
    """Whether `pid` runs (ov.indexer.process_alive); a worker this process spawned is reaped."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False  # this process's child, reaped now
    except ChildProcessError:
        pass
    except OSError:
        return False
    return process_alive(pid)


def resume(store: Store) -> int | None:
    """Start a worker when the index still waits for work (`left_to_do`: a worker killed, a
    machine restarted) and none runs, unless `ov index --stop` paused it
    (ov.indexer.worker_paused); its pid, else None."""
    if worker_paused(store.path) or not left_to_do(store):
        return None
    return spawn(store.path)


def left_to_do(store: Store) -> list[str]:
    """What the index still waits for a worker to write, in words: files a first answer's
    time budget left ("files", then the rest), grep's trigram rows ("grep rows": also
    after the upgrade to schema 8), vectors when they are coming; [] when nothing."""
    if store.get_meta(KEYWORDS_META):
        return ["files", "grep rows", "vectors"]
    out = ["passages"] if older_layout(store) else []  # (a layout change: ov.indexer.ROWS_LAYOUT)
    out += [] if store.trigrams_complete() else ["grep rows"]
    if store.get_meta(EMBED_META) == "on":
        have, want = store.coverage()
        if have < want:
            out.append("vectors")
    return out


def failed_file(db_path: Path) -> Path:
    """Where a worker that ended on an error leaves why (removed by one that ends well)."""
    return Path(db_path).parent / "worker.failed"


def last_failure(db_path: Path) -> str | None:
    """Why the last worker ended on an error, or None."""
    try:
        return str(read_json(failed_file(db_path))["message"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def lost_worker(db_path: Path) -> int | None:
    """The pid a worker's state file still names when no worker runs: one that ended
    without removing it (a `kill -9`, an out-of-memory kill, a machine restarted). A search
    after a `kill -9` said "started a background worker" and nothing of the one lost (a
    review of the Go tree)."""
    try:
        return int(read_json(worker_file(db_path))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _open_log(path: Path) -> int | None:
    """The worker's stderr: appended, owner-only, never through a symlink."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None


def _fresh(phase: str) -> dict:
    """A state file's progress fields at the start of `phase`: `rate` rows (files in a
    scan) a second, `eta_s`, and in the embed phase `tokens_done` / `tokens_total`, the
    model's estimated work (ov.indexer.TokenCost), and `tokens_rate`."""
    return {"phase": phase, "phase_started": round(time.time(), 3), "done": 0, "total": 0, "rate": None,
            "eta_s": None, "tokens_done": None, "tokens_total": None, "tokens_rate": None}


class Throughput:
    """Work a second over the last RATE_WINDOW_S or so: the work done between two reports
    and the time it took, each summed with weights that fade by e every RATE_WINDOW_S, and
    one sum divided by the other. A rate since the phase began kept the speed of its first
    rows: the embed phase starts with the shortest, and the machine's load moves."""

    def __init__(self, now: float, done: float, window_s: float = RATE_WINDOW_S) -> None:
        self.t, self.done, self.window_s = now, done, window_s
        self.work = self.time = 0.0

    def update(self, now: float, done: float) -> None:
        dt = max(0.0, now - self.t)
        keep = math.exp(-dt / self.window_s)
        self.work = self.work * keep + max(0.0, done - self.done)
        self.time = self.time * keep + dt
        self.t, self.done = now, done

    @property
    def rate(self) -> float | None:
        return self.work / self.time if self.time > 0 and self.work > 0 else None


class _State:
    """The worker's progress, written atomically for `ov status`: the progress hook of
    ov.indexer, with its `work` method for the embed phase's tokens."""

    def __init__(self, db_path: Path, orphaned=lambda: False, path: Path | None = None) -> None:
        self.path = worker_file(db_path) if path is None else path
        self.orphaned = orphaned  # its index is gone: the folder may be another worker's now
        self.data = {"pid": os.getpid(), "started": time.time(), **_fresh("start")}
        self.rows = Throughput(time.monotonic(), 0)
        self.tokens: Throughput | None = None
        self.told: tuple[float, float] | None = None  # the tokens told for the next report
        self.written = 0.0
        if path is None:  # (a foreground run's first write waits for its first step: the lock)
            self.write(force=True)

    def work(self, done: float, total: float) -> None:
        """The embed phase's estimated model tokens, told just before each of its reports."""
        self.told = (done, total)

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        told, self.told = self.told, None
        if phase != self.data["phase"]:
            self.data.update(_fresh(phase))
            self.rows, self.tokens = Throughput(now, done), None
        else:
            self.rows.update(now, done)
        if told is None:
            self.tokens = None
        elif self.tokens is None:
            self.tokens = Throughput(now, told[0])
        else:
            self.tokens.update(now, told[0])
        self.data.update(done=done, total=total or 0, rate=_rounded(self.rows.rate),
                         eta_s=_rounded(_eta(self.rows, total, self.tokens, told)))
        if told is not None:
            self.data.update(tokens_done=round(told[0]), tokens_total=round(told[1]),
                             tokens_rate=_rounded(self.tokens.rate))
        self.write()

    def write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.written < STATE_EVERY_S:
            return
        self.written = now
        if not self.orphaned():
            _write_json(self.path, self.data)

    def remove(self) -> None:
        try:
            if read_json(self.path).get("pid") == os.getpid():
                self.path.unlink()
        except (OSError, ValueError):
            pass


class Reported:
    """A foreground indexer's progress hook (`ov index`): `progress` (its bar or lines, or
    None), and the state file `ov status` reads in another shell (ov.indexer.indexer_state),
    kept as the worker keeps its own. Its first write comes with the first step, which the
    index lock precedes: a run still waiting for the lock does not replace the holder's."""

    def __init__(self, db_path: Path, progress: Progress | None) -> None:
        self.progress = progress
        self.state = _State(db_path, path=indexer_file(db_path))

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if self.progress is not None:
            self.progress(phase, done, total)
        self.state(phase, done, total)

    def work(self, done: float, total: float) -> None:
        self.state.work(done, total)
        told = getattr(self.progress, "work", None)
        if told:
            told(done, total)

    def remove(self) -> None:
        self.state.remove()


def _eta(rows: Throughput, total: int | None, tokens: Throughput | None,
         told: tuple[float, float] | None) -> float | None:
    """Seconds left: the tokens left at the recent token rate where the phase tells its
    tokens (embedding), else the rows left at the recent row rate; None until a rate is known."""
    if tokens is not None and told is not None:
        rate = tokens.rate
        return max(0.0, told[1] - told[0]) / rate if rate else None
    return (total - rows.done) / rows.rate if total and rows.rate else None


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


class _Orphaned:
    """Whether the index file this worker writes is no longer the one at `db_path`: after
    `rm -rf .ov` (or the file replaced) the worker would go on embedding into a deleted
    file, unseen by `ov status` and beside the next search's own worker. The worker holds
    the file open, so its inode number cannot be taken by a new file while it runs.
    Called between batches; two stats each."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        try:
            self.fd: int | None = os.open(db_path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def __call__(self) -> bool:
        if self.fd is None:
            return True
        try:
            mine, there = os.fstat(self.fd), os.stat(self.db_path)
        except OSError:
            return True
        return mine.st_nlink == 0 or (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def lower_priority() -> None:
    """The worker's CPU priority: NICE, for itself and for its session's autogroup. It is
    started in a session of its own (it outlives the command), and where the kernel groups
    a session's processes for the scheduler (`sched_autogroup_enabled`, on in most desktop
    distributions) a nice value counts only inside the group: the worker at nice 10 took a
    whole core of two from a test suite running beside it (101 % CPU against 41-43 % for
    each of pytest's two processes). The group's own nice
    (`/proc/self/autogroup`, which a process may raise for itself) lowers it against
    every other session.

    Without CAP_SYS_ADMIN the kernel takes one such write per AUTOGROUP_RATE seconds from
    the whole machine and refuses the rest with EAGAIN (seen when a test suite starts
    several workers at once), so a refused write is tried again for up to
    AUTOGROUP_PATIENCE seconds before the worker starts its work. Nice 0 writes nothing:
    it is every new group's nice already, and it would spend another worker's turn."""
    if NICE <= 0:
        return
    try:
        os.nice(NICE)
    except OSError:
        pass
    deadline = time.monotonic() + AUTOGROUP_PATIENCE
    while True:
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(NICE))
            return
        except BlockingIOError:  # EAGAIN: another process's write took this tenth of a second
            if time.monotonic() >= deadline:
                return
            time.sleep(AUTOGROUP_RATE / 2)
        except OSError:  # no autogroups (a container's kernel, another OS): nice alone serves
            return


def run(db_path: Path) -> int:
    """The worker's body: 0 when done, stopped, or another process holds the index."""
    db_path = Path(db_path)
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(True))
    lower_priority()
    lock = IndexLock(db_path)
    state = None
    try:
        # a moment's wait: a search asking whether the index is held (`lock_held`) takes
        # the lock for an instant, and a worker started just then had taken that for
        # another indexer and quit, leaving a first search nothing to wait for
        lock.acquire(START_LOCK_WAIT_S)
        orphaned = _Orphaned(db_path)
        state = _State(db_path, orphaned)
        until = time.monotonic() + START_DELAY_S
        while time.monotonic() < until and not stopping:
            time.sleep(0.05)
        stop = lambda: bool(stopping) or orphaned()  # noqa: E731
        # a search beside it gets the CPU first (ov.indexer.Searching)
        complete_index(db_path, progress=state, stop=stop, locked=True, pause=SearchYield(db_path, stop))
        try:
            failed_file(db_path).unlink()
        except OSError:
            pass
    except OvError as e:
        if e.code == "index_busy" and state is None:
            return 0  # another worker or `ov index` has the index
        print(f"ov worker: {db_path}: {e.message}", file=sys.stderr)
        _write_json(failed_file(db_path), {"pid": os.getpid(), "at": time.time(), "message": e.message})
        return 2
    finally:
        if state is not None:
            state.remove()
            state.orphaned.close()
        lock.release()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m ov.worker INDEX_DB", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run(Path(sys.argv[1])))
