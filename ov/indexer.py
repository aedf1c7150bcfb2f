"""The indexer: walk → read → skip unchanged → chunk → store → embed.

Incremental by design: a file whose size and mtime match the index costs one `stat`; one
whose content hash still matches is only re-stamped; only changed files are re-chunked.
New chunks whose text was embedded before (a renamed or copied file) reuse the stored
vector by content hash. Work is committed in batches, so a Ctrl-C or a kill leaves a
consistent index and the next run carries on where it stopped. Embedding is a second
phase over every chunk that lacks a vector, so `--no-embed` followed by a plain run adds
the vectors without re-reading anything.

One indexer at a time: an exclusive lock on `.ov/index.lock`, waited for briefly, then
`index_busy`. Searches read the WAL's last committed state meanwhile.

Files over the size cap are not indexed, but the keyword phase's last batch keeps a
byte-trigram bitmap of each (`refresh_big_files`, ov.grams) for grep's prefilter.

Three phases, each committed in batches: the keyword rows (walk, read, chunk, FTS5),
the trigram rows (grep's prefilter; `ov index` writes them with the keyword rows, a first
search's budgeted run leaves them), and the vectors. The keyword phase alone answers a
first search; the other two need no walk, so a background worker (ov.worker) can add them
later and a run killed in either is carried on by the next.

Minified, generated, lock, map and data files are indexed for keywords and grep but never
embedded (`embeddable`; config keys `embed-skip` and `embed-long-lines`).

Progress goes through the `progress(phase, done, total)` hook; the CLI draws it. A hook
that also has a `work(done, total)` method hears the embed phase's progress in estimated
model tokens as well, just before each of its reports (`TokenCost`): rows differ tenfold
in what they cost the model, and the shortest go first, so rows alone make a poor ETA.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import errno
import fcntl
import fnmatch
import functools
import hashlib
import io
import itertools
import json
import os
import re
import signal
import stat
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

from ov import chunk as chunking
from ov.chunk import encoded_blob
from ov import grams, tiers
from ov.config import DEFAULT_EMBED_SKIP, INDEX_DIRNAME, WalkOptions, env_number, load_config
from ov.errors import OvError, shown_bytes
from ov.kinds import TYPES, category, file_type, is_notebook, kind_of
from ov.model import Chunk, IndexReport
from ov.paths import db_path_for, index_root_of
from ov.read import FileText, binary_file, content_hash, digest_under, freshness, read_under, stat_under
from ov.store import (SENTENCE_LEVEL, Store, damaged, camel_words, prepare_index_dir, salvage_file_meta,
                      sqlite_errors, title_of, trigram_doc)
from ov.store.db import (BARE, CAP_META, KEYWORDS_META, Unusable, WriteHold, check_db_file, clear_rebuild, map_error,
                         own_files, rebuild_path, salvage_front_texts, salvage_sessions, unretire)
from ov.store.queries import user_tags
from ov.walk import (ALWAYS_SKIPPED, NOTEBOOK_CAP_FACTOR, file_cap, gitignore_unread, is_ignored, walk,
                     write_private)

Progress = Callable[[str, int, "int | None"], None]

COMMIT_FILES = 200  # files per transaction
COMMIT_SECONDS = 1.0
EMBED_COMMIT = 256  # chunks per transaction while embedding
EMBED_STEP = 32  # texts embedded between two progress reports
# `TokenCost`: waiting rows whose tokens are counted for an ETA, and how many of them (by
# length) share one tokens-per-character ratio
COST_SAMPLES = 512
COST_BIN = 16
# what a row costs beside its tokens (hashing, the vector's insert), in tokens
ROW_TOKENS = 1
RENAME_WINDOW_S = 30.0  # a rename's two halves in two watcher batches at most this far apart
LOCK_WAIT_S = env_number("OV_LOCK_WAIT", 3.0)
STOP_WAIT_S = 60.0  # for a stopped background worker to finish its batch and let go
EMBED_META = "embed"  # "off" after an `ov index --no-embed`: no vectors are coming
# The file-type table (ov.kinds.TYPES) the stored types and categories were read by
# (`types_key`): a run under another table stores each file's type again (`_restamp_types`)
TYPES_META = "types"
# A passage's budget in estimated model tokens (ov.chunk): prose 200, code the model's
# window of 256. A function is code's unit of meaning, and a longer one cut at 200 had its
# second half read apart from the name and docstring that say what it does. Through the
# CLI with the real model (docs/BENCHMARKS.md "Code passages at the model's window"), code
# at 256 against 200: CoSQA dev `find` 0.604 -> 0.607, hybrid 0.604 -> 0.608; the stdlib
# code set 0.688 -> 0.689 and 0.761 -> 0.771; 240 read 0.606 / 0.607 on CoSQA and 0.687 /
# 0.761 on the code set. Prose stays
# at 200: SciFact train lost 0.004 (`find`) and 0.007 (hybrid) at 256. The estimate
# under-counts dense C, so 1.7 % of the kernel's C passages run past the window (their
# tail has keyword rows, no share of the vector).
CHUNK_TOKENS = 200
CODE_CHUNK_TOKENS = 256
# a first answer's cut walk counts the tree's files for its warning (`walk_total`) this long
WALK_TOTAL_S = 1.0
# a first answer with query words walks so long before it reads (`_LexicalPass.entries`)
FIRST_WALK_S = 1.0
WALK_TOTAL_META = "walk_total"


INLINE_FILES = 200  # files read in this process before a pool starts (~0.3 s to start one)
IN_FLIGHT = 512  # files handed to the pool ahead of the writer (`_bounded_imap`)
TRIGRAM_BATCH = 4000  # chunks per transaction while writing trigram rows

EMBED_SKIP = DEFAULT_EMBED_SKIP  # ov.config: `embed-skip` replaces it
# Code and data files with most of their text on lines this long are minified or
# generated data (`embed-long-lines = false` turns the check off). Prose is left alone:
# a paragraph per line is common in markdown and plain-text corpora.
LONG_LINE = 1000
LONG_SHARE = 0.5
GENERATED = ("code generated", "do not edit", "@generated", "auto-generated", "autogenerated")
# a build's output ends by naming its source map (`//# sourceMappingURL=axios.js.map`): a
# bundle or a compiled file, whose source is in the tree as well when the tree is a project
# (a review of a JS tree: axios's three `dist/` bundles came before its `lib/` source)
SOURCE_MAP_LINES = ("//# sourceMappingURL=", "/*# sourceMappingURL=", "//@ sourceMappingURL=")


def built_output(path: str, text: str) -> bool:
    """Whether a file's last line names its source map, as a bundler or a compiler writes it.
    Not a TypeScript declaration file (`.d.ts`, its declaration map named so): it is the
    package's API, its doc comments included; nor a file that only holds the words (code
    that writes the comment)."""
    if path.endswith((".d.ts", ".d.mts", ".d.cts")):
        return False
    return text[-500:].rstrip().rsplit("\n", 1)[-1].lstrip().startswith(SOURCE_MAP_LINES)


@dataclass(frozen=True)
class IndexOptions:
    embed: bool = True
    full: bool = False
    walk: WalkOptions = WalkOptions()
    trigrams: bool = True  # write grep's trigram rows in this run (else ov.worker does)
    embed_skip: tuple[str, ...] = EMBED_SKIP
    embed_long_lines: bool = True  # check for minified / generated content
    # a first answer: the keyword phase stops after this many seconds (committed), and
    # ov.worker indexes the rest; None = the whole tree
    budget_s: float | None = None
    # no vectors in this run, but the background worker adds them: the index says they
    # are coming from its first commit (not a --no-embed index, whenever this run is killed)
    embed_later: bool = False
    # a first answer's query words (ov.query.path_words): within its budget, the files whose
    # paths hold the most of them are read first (`_LexicalPass.entries`)
    first_words: tuple[str, ...] = ()
    # passages cut for keywords alone (`ov.chunk.line_cut`): set from the index's rows
    # layout (`cut_as_index`), not by a caller
    keyword_cut: bool = False


def walk_from_config(root: Path) -> WalkOptions:
    """Walk options from the tree's config alone (no flags): what a first search and the
    background worker walk with."""
    return load_config(root).walk_options()


def options_for(root: Path, walk: WalkOptions, *, embed: bool = True, full: bool = False) -> IndexOptions:
    """Index options for the tree at `root`: the flags given, its config for the rest."""
    cfg = load_config(root)
    return IndexOptions(embed=embed, full=full, walk=walk, embed_skip=tuple(cfg.get("embed-skip")),
                        embed_long_lines=bool(cfg.get("embed-long-lines")))


def embeddable(path: str, text: str, opts: IndexOptions = IndexOptions()) -> bool:
    """Whether a file's chunks get vectors: not a skipped name, not generated, not minified."""
    name = path.rsplit("/", 1)[-1]
    skip = _skip_matcher(opts.embed_skip)
    if skip is not None and (skip(name) or skip(path)):
        return False
    if not opts.embed_long_lines or kind_of(path) in ("markdown", "rst"):
        return True
    head = text[:600].lower()
    if any(m in head for m in GENERATED) or built_output(path, text):
        return False
    if kind_of(path) != "code" and not name.lower().endswith(DATA_EXT):
        return True
    if len(text) < LONG_LINE:
        return True
    long_chars = sum(len(ln) for ln in text.split("\n") if len(ln) >= LONG_LINE)
    return long_chars < LONG_SHARE * len(text)


DATA_EXT = (".json", ".xml", ".yaml", ".yml", ".toml", ".dat")


@functools.lru_cache(maxsize=8)
def _skip_matcher(globs: tuple[str, ...]):
    """`embed-skip`'s globs as one compiled pattern (fnmatchcase's meaning), made once: a
    tree's config of ~92,000 globs had made each file's test cost 3-4 s, as fnmatch's
    cache of 32,768 compiled globs turned over for every file."""
    if not globs:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)).match



WANT_FRESH_S = 5.0  # a waiter's mark older than this is one that gave up (the watcher retries every 1 s)
YIELD_S = 0.2  # how long a holder that let go waits before it asks for the lock again
_HELD: dict[str, IndexLock] = {}  # this process's held locks, by lock path (`yield_lock`)


# every file ov opens beside the index: never through a link put there (issue 17), and not
# inherited by the worker a search spawns
_NO_LINK = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def lock_path(db_path: Path) -> Path:
    """Where the index lock of `db_path` lives (ov.store.db SIDECARS names it too)."""
    return Path(db_path).with_name(Path(db_path).name + ".lock")


class IndexLock:
    """An exclusive advisory lock next to the database; released on close or process death.

    A short write that waits for it says so (`acquire(announce=True)`: `index.db.lock.want`,
    touched while it waits), and a holder in a long phase (embedding, grep's trigram rows)
    lets it go between two of its commits (`yield_lock`): a watcher's batch of a few saved
    files is written within a second or two, not after the other process's last vector. The
    holder then waits for the lock again, saying so in turn. A long run that waits (`ov
    index`, a `--full` rebuild, a worker) does not say so: it waits its few seconds and is
    `index_busy`, as before, rather than cut into a run that would then fail or stall."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = Path(db_path)
        self.path = lock_path(db_path)
        self.want_path = self.path.with_name(self.path.name + ".want")
        self.fd: int | None = None

    def acquire(self, wait_s: float = LOCK_WAIT_S, announce: bool = False) -> None:
        if self.fd is not None:
            return
        try:  # never through a link put where the lock goes (issue 17)
            self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR | _NO_LINK, 0o600)
        except OSError as e:
            raise OvError("invalid_path", f"{self.path}: cannot open the index lock "
                          f"({e.strerror or e})", field="db") from None
        deadline = time.monotonic() + wait_s
        said = 0.0  # when this waiter last touched the want mark
        try:
            while True:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    _HELD[os.path.abspath(self.path)] = self
                    return
                except OSError as e:
                    if e.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() >= deadline:
                        os.close(self.fd)
                        self.fd = None
                        # (OV_LOCK_WAIT sets the default wait alone, not a stopped worker's)
                        longer = (f" (OV_LOCK_WAIT=SECONDS waits longer than {wait_s:g} s)"
                                  if wait_s == LOCK_WAIT_S else "")
                        raise OvError("index_busy", f"{_holder_said(self.db_path)} is updating this index; "
                                      f"try again when it ends{longer}", retryable=True) from None
                    if announce and time.monotonic() - said > 0.5:
                        said = time.monotonic()
                        self._want()
                    time.sleep(0.05)
        finally:
            if said:
                self._unwant()

    def _want(self) -> None:
        """Touch the want mark (never through a link put where it goes)."""
        try:
            fd = os.open(self.want_path, os.O_CREAT | os.O_WRONLY | _NO_LINK, 0o600)
            try:
                os.utime(fd)
            finally:
                os.close(fd)
        except OSError:
            pass  # a holder then keeps the lock until it ends, as before the mark

    def _unwant(self) -> None:
        try:
            os.unlink(self.want_path)
        except OSError:
            pass

    def wanted(self) -> bool:
        """Whether another process waits for this lock now: a mark touched in the last
        WANT_FRESH_S (one dated in the future, after a clock step back or a restored
        `.ov`, is a stale one: it would make every holder give the lock up at every step)."""
        try:
            age = time.time() - os.lstat(self.want_path).st_mtime
        except OSError:
            return False
        return -1.0 < age < WANT_FRESH_S  # a second's skew allowed (file systems' timestamps)

    def release(self) -> None:
        if self.fd is not None:
            _HELD.pop(os.path.abspath(self.path), None)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


# A background worker gives the CPU to a search that runs beside it (`Searching`): it waits
# before each SEARCH_STEP texts while one runs, at most SEARCH_WAIT_S at a time and then
# embeds at least as long before it waits again, so a search that hangs (a stopped `ov
# search`) slows the vectors down by half, never stops them.
SEARCH_STEP = 4  # the embedder's own batch (ov.embed): no slower than longer steps
SEARCH_WAIT_S = 10.0


def searching_path(db_path: Path) -> Path:
    """The file searches hold a shared lock on while they run (ov.store.db SIDECARS names it)."""
    return Path(db_path).with_name(Path(db_path).name + ".search")


class Searching:
    """A search's claim on the CPU while a background worker embeds: a shared advisory lock
    on `searching_path`, held until `release` (or the process's end: a search that dies
    leaves no mark behind). The worker, which runs the same model on the same two cores,
    waits while any is held (`SearchYield`), so a query during the hours a big tree's
    vectors take answers nearly as fast as on an idle machine (docs/BENCHMARKS.md, "A search
    claims the CPU from the worker beside it"). Nothing is said when it cannot be
    taken (an index the user may read but not write, a link put where it goes): the search
    then runs beside the worker, as before."""

    def __init__(self, db_path: Path) -> None:
        self.fd: int | None = None
        try:
            fd = os.open(searching_path(db_path), os.O_CREAT | os.O_RDONLY | _NO_LINK, 0o600)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # the worker's test holds it for an instant: the search runs as before
            os.close(fd)
            return
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Searching:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class SearchYield:
    """The worker's side of `Searching`: called before each SEARCH_STEP texts it embeds, it
    returns once no search holds the mark, or after SEARCH_WAIT_S of waiting (then it does
    not wait again for as long), or when `stop` says so."""

    def __init__(self, db_path: Path, stop: Callable[[], bool]) -> None:
        self.path, self.stop = searching_path(db_path), stop
        self.free_until = 0.0  # no waiting before then (`SEARCH_WAIT_S`)

    def held(self) -> bool:
        """Whether a search holds the mark now (a test of an exclusive lock, at once let go)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | _NO_LINK)
        except OSError:
            return False  # no search has run since the index was made, or a link: no wait
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except OSError:
            return True
        finally:
            os.close(fd)  # lets the test's lock go

    def __call__(self) -> None:
        start = time.monotonic()
        if start < self.free_until:
            return
        while self.held() and not self.stop():
            if time.monotonic() - start >= SEARCH_WAIT_S:
                self.free_until = time.monotonic() + SEARCH_WAIT_S
                break
            time.sleep(0.02)


def held_lock(db_path: Path) -> IndexLock | None:
    """The index lock of `db_path` when this process holds it."""
    return _HELD.get(os.path.abspath(lock_path(db_path)))


def yield_lock(db_path: Path, stop: Callable[[], bool] | None = None) -> bool:
    """Between two commits of a long phase: when this process holds the index lock and
    another waits for it, let it go, give the waiter YIELD_S to take it, and take it again
    once the waiter is done (however long that is, unless `stop` says to give up first:
    then False, and the lock is not held). True when the lock is held on return."""
    lock = held_lock(db_path)
    if lock is None or not lock.wanted():
        return True
    lock.release()
    time.sleep(YIELD_S)
    while True:
        try:
            lock.acquire(1.0, announce=True)  # a watcher that took it then gives way (ov.watch)
            return True
        except OvError as e:
            if e.code != "index_busy":
                raise
            if stop and stop():
                return False


def clear_stale_mark(db_path: Path) -> bool:
    """A `--full` rebuild's mark on the old file (`SUPERSEDED_META`) left by a rebuild
    that did not finish, taken back when no process holds the index lock (so no rebuild
    runs); False when one does."""
    lock = IndexLock(db_path)
    try:
        lock.acquire(0)
    except OvError:
        return False
    try:
        clear_rebuild(db_path)
        unretire(db_path)  # a writer found the mark, and no rebuild runs
    finally:
        lock.release()
    return True


# ---- the background worker's state (ov.worker runs it; here so `ov index` can stop it) ----


START_S = 30.0  # how long a just-spawned worker counts as running before it holds the lock
SPAWN_ARGS_WAIT_S = 2.0  # how long a just-spawned worker's empty command line is read again (`_is_worker`)


def worker_file(db_path: Path) -> Path:
    """Where a running background worker records its pid and progress (JSON)."""
    return Path(db_path).with_name(Path(db_path).name + ".worker")


def indexer_file(db_path: Path) -> Path:
    """Where a foreground indexer (`ov index`, a watcher's first build) records its pid and
    progress (JSON, as the worker's `worker_file`), for `ov status` in another shell."""
    return Path(db_path).with_name(Path(db_path).name + ".indexer")


def indexer_state(db_path: Path) -> dict | None:
    """The progress of the foreground indexer holding the index now (the fields of the
    worker's state, ov.worker._fresh), or None: only while the pid it names holds the
    index lock (where the system names the holder; else while it runs and the lock is
    held), so a killed run's file, or one a cloned tree planted, says nothing."""
    from ov.walk import read_json  # noqa: PLC0415

    state = read_json(indexer_file(db_path))
    try:
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    holder = lock_holder(db_path)
    if holder is not None:
        return state if holder == pid else None
    return state if pid > 1 and lock_held(db_path) and process_alive(pid) else None


def _holder_said(db_path: Path) -> str:
    """Who holds the index lock, in words: "another ov (pid 4242: `ov index --full`)", or
    "another ov" where the system does not say (a busy `ov index` had named no one)."""
    held = holder_state(db_path)
    if held is None:
        return "another ov"
    return f"another ov (pid {held['pid']}" + (f": `{held['command']}`)" if held["command"] else ")")


def lock_held(db_path: Path) -> bool:
    """Whether some process holds the index lock now (asked without waiting). Never opened
    through a link or as anything but a regular file (a cloned tree's `.ov/index.db.lock`
    linked out had been opened for writing and locked where it led)."""
    try:
        fd = os.open(lock_path(db_path), os.O_RDWR | _NO_LINK | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def holder_state(db_path: Path) -> dict | None:
    """The process holding the index lock, as `{"pid", "command"}` (`ov mcp`, `ov index
    --watch`: its command line from its `ov` on), where the system names it (Linux's
    /proc); None when none holds it. `ov status` says who holds an index that neither the
    worker nor a foreground `ov index` (each with a state of its own) does: after `ov mcp`,
    whose watcher adds the missing vectors while the server is idle, it had said only that
    "an indexer holds the index now"."""
    pid = lock_holder(db_path)
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read(4096).split(b"\0") if a]
    except OSError:
        return {"pid": pid, "command": ""}
    names = [os.path.basename(a) for a in argv]
    at = next((i for i, n in enumerate(names) if n == "ov"), None)
    if at is None and "-m" in argv[:-1] and argv[argv.index("-m") + 1] == "ov":
        at = argv.index("-m") + 1
    return {"pid": pid, "command": " ".join(["ov", *argv[at + 1:at + 4]]) if at is not None else ""}


def lock_holder(db_path: Path) -> int | None:
    """The pid of the process holding the index lock, as Linux's /proc/locks names it (the
    process that took the flock); None when none holds it, or where the system does not
    say (no /proc/locks; a file system whose device numbers differ from its files')."""
    try:
        st = os.stat(lock_path(db_path))
        with open("/proc/locks", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}".encode()
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2147422 0 EOF" (a waiter's: "1: -> FLOCK ...")
        f = line.split()
        if len(f) >= 6 and f[1] == b"FLOCK" and f[5] == want and f[4].isdigit():
            return int(f[4])
    return None


def _is_worker(pid: int, db_path: Path | None = None, wait_s: float = 0.0) -> bool:
    """Whether `pid` is an ov worker (not a reused pid, nor one a cloned tree's planted
    state file names): its command line says `ov.worker` and, given `db_path`, that index.
    `wait_s`: how long an empty command line is read again. A process just spawned shows
    none for a moment: the spawner's `Popen` returns once the new program is loaded, before
    the kernel has set its arguments, and under load that moment lasted long enough for the
    search that spawned a worker to find none (3 of 20 spawns beside a test suite)."""
    if pid <= 1 or pid == os.getpid():
        return False
    want = None if db_path is None else os.fsencode(str(Path(db_path).resolve()))
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        until = time.monotonic() + wait_s
        while not raw and time.monotonic() < until:
            time.sleep(0.01)
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        args = raw.split(b"\0")
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return False
        cmd = _ps_command(pid)  # no /proc (macOS): ps gives the arguments joined by spaces
        return cmd is not None and b"ov.worker" in cmd and (want is None or cmd.endswith(b" " + want))
    except OSError:
        return False
    return b"ov.worker" in args and (want is None or want in args)


def _ps_command(pid: int) -> bytes | None:
    import subprocess  # noqa: PLC0415

    try:
        out = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def process_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: alive is all that can be known
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def worker_state(db_path: Path) -> dict | None:
    """The running background worker's state (pid, started, phase, done, total, rate,
    eta_s, ...: ov.worker._fresh), or None when none runs. A state file left by a killed
    worker is ignored."""
    from ov.walk import read_json  # noqa: PLC0415

    state = read_json(worker_file(db_path))
    try:
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        starting = state.get("phase") == "starting" and 0 <= time.time() - float(state.get("started", 0)) < START_S
    except (TypeError, ValueError):  # (not what ov writes)
        starting = False
    # (a cloned tree's planted file may name any process)
    if not _is_worker(pid, db_path, wait_s=SPAWN_ARGS_WAIT_S if starting else 0.0):
        return None
    if starting:
        # spawned a moment ago: it may not have its lock yet
        return state if process_alive(pid) else None
    if not lock_held(db_path):
        return None
    return state


def paused_file(db_path: Path) -> Path:
    """The mark `ov index --stop` leaves: no search starts a worker while it is there (one
    stopped to give the CPU back had been started again by the next search); the next
    `ov index` takes it away (`index_tree`)."""
    return Path(db_path).parent / "worker.paused"


def worker_paused(db_path: Path) -> bool:
    return os.path.isfile(paused_file(db_path)) and not os.path.islink(paused_file(db_path))


def pause_worker(db_path: Path) -> None:
    """Leave the mark (`paused_file`), never through a symlink; nothing when .ov/ is gone."""
    write_private(os.fspath(paused_file(db_path)), b"")


def stop_worker(db_path: Path) -> int | None:
    """Ask a running background worker to stop (SIGTERM: it ends after its current batch,
    which is committed). Returns its pid, or None when none was running."""
    state = worker_state(db_path)  # (only a pid that is this index's worker)
    if state is None:
        return None
    try:
        os.kill(int(state["pid"]), signal.SIGTERM)
    except OSError:
        return None
    return int(state["pid"])


def _user_tags_kept(kept: dict[str, tuple[str, float]], fronts: dict[str, str]) -> dict[str, tuple[str, float]]:
    """`kept` (path -> (tags, created_at) of the index a rebuild replaces) with only the
    tags `ov tag` set: those equal to the old front matter's are the file's to say, and
    the rebuild has read it again (they used to be copied back over it)."""
    out = {}
    for path, (tags, created) in kept.items():
        front = fronts.get(path)
        if front:
            try:
                tags = json.dumps(user_tags(json.loads(tags or "{}"), _front_matter_tags(front)),
                                  ensure_ascii=False, sort_keys=True)
            except (ValueError, TypeError):
                pass
        out[path] = (tags, created)
    return out


def _front_matter_tags(text: str) -> dict[str, str]:
    """`tags:` from markdown front matter as strict k=v pairs (bare words are left out)."""
    try:
        raw = tiers.front_matter(text).get("tags")
    except Exception:
        return {}
    out: dict[str, str] = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            if str(k).strip():
                out[str(k).strip()] = str(v).strip()
    elif isinstance(raw, (list, tuple)):
        for item in raw:
            k, sep, v = str(item).partition("=")
            if sep and k.strip():
                out[k.strip()] = v.strip()
    elif isinstance(raw, str):
        for item in raw.replace(",", " ").split():
            k, sep, v = item.partition("=")
            if sep and k.strip():
                out[k.strip()] = v.strip()
    return out


# the layout of rows and vectors an index run has given every file (VECTOR_LEVELS); an index
# of another layout (older: prose sentence rows, overview vectors) re-chunks each file once,
# its passages and abstracts keeping their vectors by text hash
ROWS_META = "rows"
# [layout, path]: the last file a stopped background re-cut to that layout wrote
# (`_LexicalPass.recut_jobs`): the next one goes on after it
RECUT_META = "recut_upto"
ROWS_LAYOUT = "6"
# The layout of an index built keywords-only (`ov index --no-embed` from nothing): its
# passages are cut by characters at blank lines (ov.chunk.line_cut), for keyword hits
# alone, and stay so while the index is keywords-only; a run that adds vectors re-cuts
# every file to the model's window first (as from any older layout). An index that had
# model passages keeps them through a `--no-embed` run. One of an older ROWS_LAYOUT is cut
# by lines again, every file.
LINES = "lines"
KEYWORDS_LAYOUT = LINES + ROWS_LAYOUT
# From these layouts only files of these kinds (ov.kinds.kind_of) or extensions have other
# rows now: only they are re-chunked (3: a markdown file's front matter block has no vector,
# `front_block`; 4: code passages of CODE_CHUNK_TOKENS). From any other, every file is. 5: a
# run of encoded data (a notebook's plot, a data URI) is cut in 32 KiB passages (ov.chunk
# `data_runs`), in a file of any kind, so from every older layout every file is re-cut (an
# upgraded index had kept a notebook's 256-token base64 passages, each holding its title's
# words: 49 of the first 50 keyword hits for a word of the title). 6: the abstracts and
# outlines of the languages ov.tiers learnt to read (SQL, Protocol Buffers, GraphQL,
# Haskell, OCaml, Elixir, R, Julia, Lua, Terraform, Zig), from 5 their files alone.
RESPLIT_KINDS: dict[str, frozenset[str]] = {
    "5": frozenset({".sql", ".psql", ".proto", ".graphql", ".graphqls", ".gql", ".hs", ".ml", ".mli", ".ex",
                    ".exs", ".r", ".jl", ".lua", ".tf", ".hcl", ".tfvars", ".zig"}),
}


def resplit(path: str, kinds: frozenset[str] | None) -> bool:
    """Whether a file of an older layout whose `RESPLIT_KINDS` are `kinds` is re-cut."""
    return kinds is None or kind_of(path) in kinds or os.path.splitext(path)[1].lower() in kinds


def _relaid(store: Store, was_older: str | None) -> None:
    """After a run that found the rows of the older layout `was_older`: once every file is
    re-cut (every row deleted, every vector copied), the pages the old rows held are given
    back; after a re-cut of some kinds alone, when they are over a quarter of the file
    (a VACUUM rewrites the whole file: 1.7 GB for the kernel's keyword index)."""
    if was_older and older_layout(store) is None:
        store.reclaim(always=RESPLIT_KINDS.get(was_older) is None)


def older_layout(store: Store, keywords: bool | None = None) -> str | None:
    """The index's rows layout when its files must be cut again (None: current, or a
    first build not yet through its walk): older than ROWS_LAYOUT, or KEYWORDS_LAYOUT when
    vectors are wanted. `keywords`: whether the run (or the index, when None: ov.worker's,
    a search's note) is keywords-only."""
    layout = store.get_meta(ROWS_META)
    if keywords is None:
        keywords = keywords_index(store)
    if layout is None or layout == ROWS_LAYOUT or (keywords and layout == KEYWORDS_LAYOUT):
        return None
    return layout


def keywords_only(opts: IndexOptions) -> bool:
    """Whether a run with these options leaves the index without vectors coming."""
    return not opts.embed and not opts.embed_later


def keywords_index(store: Store) -> bool:
    """Whether the index is keywords-only: its last run said so (EMBED_META)."""
    return store.get_meta(EMBED_META) == "off"


def lines_cut(store: Store) -> bool:
    """Whether the index's passages are cut by lines (KEYWORDS_LAYOUT, or an older one)."""
    return (store.get_meta(ROWS_META) or "").startswith(LINES)


def cut_as_index(store: Store, opts: IndexOptions) -> IndexOptions:
    """`opts` cutting passages as the index's do for this run: by lines while an index cut
    so stays keywords-only, else to the model's window (a first build's layout: `_fill`)."""
    return dataclasses.replace(opts, keyword_cut=keywords_only(opts) and lines_cut(store))


# The rows given a vector: passages (level 2) and abstracts (level 0). Overviews (level 1)
# keep their keyword rows only; prose sentences have no rows. Tokens run through the model
# then stay near the source's own (scripts/bench_tokens.py: SciFact 2.31x -> 1.08x), and
# the semantic ranking is chosen by cross-validation on that evidence (docs/BENCHMARKS.md).
VECTOR_LEVELS = (0, 2)


def wants_vector(level: int, path: str) -> bool:
    """Whether a row of this level in this file is given a vector."""
    return level in VECTOR_LEVELS


def tier_chunks(text: str, path: str) -> list[Chunk]:
    """The L0/L1 chunk rows (a file's abstract and overview are these rows' text, schema 7).
    Tier rows carry the tier text, no file span."""
    rows = []
    if abstract := tiers.abstract(text, path):
        rows.append(Chunk(0, 0, 1, 1, abstract, level=0))
    if overview := tiers.overview(text, path):
        rows.append(Chunk(0, 0, 1, 1, overview, level=1))
    return rows


def chunk_budget(path: str) -> int:
    """The passage budget of a file, by its kind (CHUNK_TOKENS, CODE_CHUNK_TOKENS)."""
    return CODE_CHUNK_TOKENS if kind_of(path) == "code" else CHUNK_TOKENS


def passages(text: str, path: str, keyword_cut: bool = False) -> list[Chunk]:
    """A file's passages (level-2 rows) as indexing cuts them: to the model's window, or
    for keywords alone in an index of KEYWORDS_LAYOUT; `ov read PATH:LINE` cuts a file
    changed since indexing the same way."""
    if keyword_cut:
        return chunking.line_cut(text)
    return chunking.chunk_text(text, path, max_tokens=chunk_budget(path))


def index_tree(root: Path, db_path: Path | None = None, opts: IndexOptions = IndexOptions(), *,
               progress: Progress | None = None, warn: Callable[[str], None] | None = None,
               embedder=None, stop: Callable[[], bool] | None = None, locked: bool = False,
               notice: Callable[[str], None] | None = None) -> IndexReport:
    """Build or refresh the index of `root`. Returns what changed. A background worker
    adding vectors to this index is stopped first (this run does its work), unless the
    caller holds the index lock already (`locked`); `notice` hears it, and, after a run
    without vectors, that rows still lack one."""
    t0 = time.perf_counter()
    root = Path(root).resolve()
    if not root.is_dir():
        raise OvError("not_found" if not root.exists() else "invalid_path",
                      f"{root} is not a folder", field="path")
    db_path = Path(db_path) if db_path else db_path_for(root)
    report = IndexReport(root=str(root))
    warnings: list[str] = []

    def warn_(msg: str) -> None:
        warnings.append(msg)
        if warn:
            warn(msg)

    prepare_index_dir(db_path)  # refuses links under .ov; writes .ov/.gitignore
    if os.path.lexists(db_path):
        check_db_file(db_path)  # not someone's file: refused before a lock file is made beside it
    elif notice and not opts.walk.no_ignore and gitignore_unread(str(root)):
        notice("this folder is not in a git work tree, so its .gitignore is not read (as in rg "
               "and fd) and the index takes the files it names; .ovignore takes the same lines "
               "and counts everywhere")
    if opts.embed and embedder is None:
        # a missing model must fail before anything is changed (not after --full cleared
        # the index); the model itself is loaded only when there is something to embed
        from ov.embed import check_available  # noqa: PLC0415 - cheap: no onnxruntime

        check_available()
    lock = IndexLock(db_path)
    stopped = None if locked else stop_worker(db_path)
    if stopped is not None and notice:  # said before the wait: its batch may take half a minute
        notice(f"stopping the background worker (pid {stopped}) after its current batch; "
               + ("this run writes the keyword rows and starts it again" if opts.embed_later else
                  f"this run does its work{'' if opts.embed else ', keywords only (--no-embed)'}"))
    if not locked:
        lock.acquire(STOP_WAIT_S if stopped is not None else LOCK_WAIT_S)
        try:  # an `ov index` resumes what `ov index --stop` paused
            paused_file(db_path).unlink()
        except OSError:
            pass
    try:
        store, problem = _open_checked(db_path, thorough=opts.full)
        if problem is not None:
            if not opts.full:  # an incremental run must not report ok on a damaged index
                raise problem
            # the cause alone: this run is the advice the error gives
            warn_(f"{db_path} {problem.what}; rebuilding it from nothing")
            _rebuild(db_path, root, opts, report, progress, warn_, embedder, stop)
        elif opts.full:  # aside too: an interrupted --full must leave the old index whole
            store.close()
            _rebuild(db_path, root, opts, report, progress, warn_, embedder, stop)
        else:
            try:
                relayout = older_layout(store, keywords_only(opts))
                _fill(store, root, opts, report, progress, warn_, embedder, stop)
                if notice and keywords_only(opts):
                    _vectors_left(store, stopped is not None, notice)
                _relaid(store, relayout)
            finally:
                store.close()
    finally:
        if not locked:
            lock.release()
    report.seconds = round(time.perf_counter() - t0, 3)
    report.warnings = warnings
    return report


def _fill(store: Store, root: Path, opts: IndexOptions, report: IndexReport,
          progress: Progress | None, warn: Callable[[str], None], embedder,
          stop: Callable[[], bool] | None = None) -> None:
    with store.tx():
        store.set_meta("root", str(root))
        store.set_meta(EMBED_META, "off" if keywords_only(opts) else "on")
        # the size cap this run kept files under: a search does not read a changed file past
        # it (or past the file's own indexed size) to recheck a hit (ov.engine.size_cap)
        store.set_meta(CAP_META, str(opts.walk.max_filesize) if opts.walk.max_filesize else "none")
        store.pin_tri_upto()
        if not store.file_count():  # no row of another layout: a killed first build's rows are kept
            store.set_meta(ROWS_META, KEYWORDS_LAYOUT if keywords_only(opts) else ROWS_LAYOUT)
        if store.get_meta(TYPES_META) != types_key():
            _restamp_types(store)
    _lexical_phase(store, root, opts, report, progress, warn, stop)
    if opts.trigrams:
        trigram_phase(store, progress, stop)
    if opts.embed:
        embed_phase(store, report, progress, embedder, stop)


@functools.cache
def types_key() -> str:
    """A short digest of ov.kinds.TYPES, the table a file's stored type is read by."""
    return hashlib.blake2b(json.dumps(TYPES).encode(), digest_size=8).hexdigest()


def _restamp_types(store: Store) -> None:
    """Each file's type and category read again by this ov's table, where the index was
    written under another (TYPES_META): an unchanged file is never stored again, so the
    types an upgrade adds or widens (rg's `gradle`; `perl`'s `*.PL`) would otherwise reach
    a file only when it changes, and `-t` of a ranked search would miss it (the vector
    table's copy too: `Store.retype_files`). Inside the caller's transaction. 1.05 s on the
    kernel's 78,171 files (199 changed), once after an upgrade. An `ov index` (or a watch's
    catch-up) runs it; a search never writes it."""
    if store.retype_files(lambda path: (file_type(path), category(path))):
        store.bump_generation()  # a cursor over the old types no longer replays
    store.set_meta(TYPES_META, types_key())


def _vectors_left(store: Store, stopped: bool, notice: Callable[[str], None]) -> None:
    """After a `--no-embed` run: the rows still without a vector, and what adds them. Such
    a run marks the index keywords-only, so no search starts a worker for them any more
    (ov.worker `resume`); only a plain `ov index` does. Said when some rows have a vector
    (the index had them) or a worker adding them was stopped; a tree indexed --no-embed
    from the start hears nothing it did not ask for."""
    vectors, rows = store.coverage()
    if vectors < rows and (vectors or stopped):
        notice(f"{rows - vectors} of {rows} rows have no vector; a --no-embed index starts no "
               "background worker for them: `ov index` adds them")


def _open_checked(db_path: Path, thorough: bool) -> tuple[Store | None, Unusable | None]:
    """The index at `db_path` opened for writing, or (None, the error that says what is
    wrong with it) when it is damaged (issue 17). `thorough` (for --full) adds SQLite's
    quick_check; without it the checks are cheap: the tables, the file's length, each
    table's first rows."""
    clear_rebuild(db_path, stale=True)
    try:
        store = Store.create(db_path)
    except OvError as e:
        if not thorough or e.code in ("index_busy", "invalid_path") or (
                "not an ov index" in e.message and db_path.parent.name != INDEX_DIRNAME):
            raise  # its own advice; a link under .ov, a busy index, someone else's database
        return None, e if isinstance(e, Unusable) else damaged(db_path, e.message)
    except sqlite_errors() as e:
        err = map_error(e, db_path)  # (a full disk is no damage: --full would need room for two copies)
        if not thorough or err.code != "invalid_argument":
            raise err from None
        return None, err
    problem = store.health(thorough)
    if problem is not None:
        store.close()
        return None, damaged(db_path, problem)
    return store, None


def _rebuild(db_path: Path, root: Path, opts: IndexOptions, report: IndexReport,
             progress: Progress | None, warn: Callable[[str], None], embedder,
             stop: Callable[[], bool] | None = None) -> None:
    """An index rebuilt from nothing (`--full`, or a damaged one): a new file beside it,
    filled (vectors included), checkpointed, then renamed over it (atomic: a reader sees
    the old file or the new one), so an interrupted rebuild leaves the old index as it was
    and costs its size again in disk while it runs. The tags, first-seen times and
    context-mode ledgers the old file still yields are carried over."""
    new = rebuild_path(db_path)
    clear = partial(clear_rebuild, db_path)
    clear()
    store, hold = None, WriteHold(db_path)
    try:
        store = Store.create(new)  # inside: a stop while the schema is made leaves nothing either
        _fill(store, root, opts, report, progress, warn, embedder, stop)
        # the tags and ledgers are copied last, with the old file's writers held off, so a
        # `ov tag` while the rebuild ran is not lost (from here on it waits, or gets
        # index_busy); released before the rename, as its close checkpoints the old file
        with hold:
            kept, ledgers = salvage_file_meta(db_path), salvage_sessions(db_path)
            kept = _user_tags_kept(kept, salvage_front_texts(db_path))
            if kept:  # counted against the old index, as an in-place run counts: updated, removed
                now = set(store.file_states())
                again = len(now & kept.keys())
                report.added, report.updated = report.added - again, report.updated + again
                report.removed += len(kept.keys() - now)
            if kept or ledgers:
                with store.tx():
                    store.restore_file_meta(kept)
                    store.restore_sessions(ledgers)
            store.checkpoint()
            store.close()
            _same_mode(db_path, new)
            hold.retire()  # a writer held off until now finds the mark, and tries the new file
    except BaseException:
        if store is not None:
            store.close()
        if hold.retired:  # stopped after the mark was committed: the old file stays the index
            unretire(db_path)
        clear()  # stopped (Ctrl-C) or failed: the old index stays, and no half of a new one
        raise
    try:
        for s in ("-wal", "-shm", "-journal"):  # the old file's: they would be replayed into the new
            p = Path(f"{db_path}{s}")
            if os.path.lexists(p):
                os.unlink(p)
        os.replace(new, db_path)
    except BaseException:
        unretire(db_path)
        clear()
        raise
    for s in ("-wal", "-shm"):
        p = Path(f"{new}{s}")
        if os.path.lexists(p):
            os.unlink(p)


def _same_mode(old: Path, new: Path) -> None:
    """The rebuilt file keeps the old one's permission bits and group (an index shared
    with readers stays readable by them; a new index is owner-only), and its owner when
    root rebuilds it.

    The folder may be another user's (root rebuilding it), who could swap a link or a
    hard link to any file in for the new one: the changes go through a descriptor of the
    file opened without following a link, and only to a regular file with one name that
    this process owns, as the file it made is."""
    try:
        st = os.stat(old)
        fd = os.open(new, os.O_RDONLY | os.O_NONBLOCK | _NO_LINK)
    except OSError:
        return
    try:
        mine = os.fstat(fd)
        if not stat.S_ISREG(mine.st_mode) or mine.st_nlink != 1 or mine.st_uid != os.geteuid():
            return  # not the file this rebuild made: nothing is changed through it
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        if (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
            # root rebuilding a user's index (`sudo ov index --full`) leaves it the user's
            os.fchown(fd, st.st_uid if os.geteuid() == 0 else -1, st.st_gid)
    except OSError:  # not allowed: the new file stays owner-only
        pass
    finally:
        os.close(fd)


def complete_index(db_path: Path, *, progress: Progress | None = None, embedder=None,
                   stop: Callable[[], bool] | None = None, wait_s: float = 0.0,
                   locked: bool = False, pause: Callable[[], None] | None = None) -> IndexReport:
    """The phases after the keyword rows: grep's trigram rows, then the vectors (unless
    the index was built with --no-embed). A lexical pass first when files wait for their
    keyword rows (a first answer's budget: a walk) or for passages of the current layout
    (`older_layout`: a re-cut of the indexed files). What ov.worker runs; `index_busy`
    when another process holds the index (`locked`: the caller holds the lock). `pause`
    is called before each SEARCH_STEP texts the model embeds (the worker's `SearchYield`)."""
    t0 = time.perf_counter()
    report = IndexReport(root=str(index_root_of(db_path)))
    lock = IndexLock(db_path)
    if not locked:
        lock.acquire(wait_s)
    try:
        clear_rebuild(db_path, stale=True)
        store = Store.open(db_path)
        try:
            # a first answer's budget left files unread, or the passages are of an older
            # layout (ROWS_META): a user who only searches gets them re-cut too
            partial = bool(store.get_meta(KEYWORDS_META))
            relayout = older_layout(store)  # (keywords-only when the index is)
            if partial or relayout:
                root = index_root_of(db_path)
                opts = options_for(root, walk_from_config(root), embed=not keywords_index(store))
                _lexical_phase(store, root, opts, report, progress, lambda msg: None, stop, recut_only=not partial)
            if stop and stop():
                return report
            trigram_phase(store, progress, stop)
            if not keywords_index(store) and not (stop and stop()):
                embed_phase(store, report, progress, embedder, stop, pause)
            if not (stop and stop()):
                _relaid(store, relayout)
        finally:
            store.close()
    finally:
        lock.release()
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _lexical_phase(store: Store, root: Path, opts: IndexOptions, report: IndexReport,
                   progress: Progress | None, warn: Callable[[str], None],
                   stop: Callable[[], bool] | None = None, recut_only: bool = False) -> None:
    """Walk the tree and write the keyword rows of every new or changed file, committing
    every COMMIT_FILES files or COMMIT_SECONDS; then remove the rows of files gone. A
    time budget (`opts.budget_s`, a first answer) or `stop` ends it early, the rest left
    to ov.worker. `recut_only` (`_LexicalPass.recut_jobs`): no walk, the indexed files of
    an older layout cut again, nothing added or removed."""
    run = _LexicalPass(store, root, opts, report, progress, warn, recut_only)
    deadline = run.deadline
    cut = False
    try:
        with store.batches() as batches:
            for path, state, prep in run.prepared():
                if (deadline is not None and time.monotonic() > deadline) or (stop and stop()):
                    cut = True  # this file and the rest: ov.worker's lexical pass
                    break
                if run.take(path, state, prep):
                    run.commit(batches)
            moved = not recut_only and not cut and run.moved()
            run.finish(cut or moved)
    finally:
        for pool in run.pools:
            end_pool(pool)
    if moved:
        # the walk found no folder past the move: its files are not gone, only not walked
        # (`ov index` said "added 200", exit 0 and not partial, with 189 files never read)
        raise OvError("not_found", f"{root} was moved or deleted while it was indexed; the "
                      f"{report.added + report.updated} file(s) read so far are kept: run `ov index` "
                      "where the tree is now", field="path")


def _folder_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class _LexicalPass:
    """The state of one lexical pass: the files the index knows, those seen on this walk,
    those skipped and why, and what changed since the last commit."""

    def __init__(self, store: Store, root: Path, opts: IndexOptions, report: IndexReport,
                 progress: Progress | None, warn: Callable[[str], None], recut_only: bool = False) -> None:
        self.store, self.root, self.opts, self.report = store, root, opts, report
        self.recut_only = recut_only
        self.last = ""  # the path of the last file taken (`take`)
        self.progress, self.warn = progress, warn
        self.known = store.file_states()
        self.own = own_files(root, store.path)
        self.seen: set[str] = set()
        self.skipped: list[tuple[str, str]] = []  # (path, reason): `ov status` lists them
        self.big: list[str] = []  # skipped for their size: grep's bitmaps (refresh_big_files)
        self.added: list[tuple[str, str]] = []  # (path, content hash) of the files new to the index
        self.pending = 0
        self.last_commit = time.monotonic()
        self.changed_any = False
        self.pools: list = []
        layout = store.get_meta(ROWS_META)
        # the layout this pass writes (a worker's pass is keywords-only as the index is)
        self.opts = opts = cut_as_index(store, opts)
        self.layout = KEYWORDS_LAYOUT if opts.keyword_cut else ROWS_LAYOUT
        self.relayout = bool(self.known) and layout != self.layout
        self.resplit_kinds = RESPLIT_KINDS.get(layout or "")  # None: every kind
        self.deadline = time.monotonic() + opts.budget_s if opts.budget_s is not None else None
        self.walked: int | None = None  # the files of a whole walk `entries` made first
        # a first build not through its walk yet (BUILDING, or a budget's cut): a cut pass
        # of a finished index (a watch's catch-up stopped as `ov mcp` leaves) leaves it
        # finished, its files not reached yet merely stale, not "still being built"
        self.unfinished = store.get_meta(KEYWORDS_META) is not None
        self.root_id = _folder_id(root)

    def moved(self) -> bool:
        """Whether the tree's folder is no longer where the pass began: moved or deleted."""
        return _folder_id(self.root) != self.root_id

    def on_skip(self, path: str, reason: str) -> None:
        if path in self.own:  # the index itself, named inside the tree: not a file of it
            return
        self.report.skipped += 1
        if reason == "size":
            self.big.append(path)
        # a name that is not UTF-8 (surrogate escapes) is kept as its escaped spelling
        self.skipped.append((shown_bytes(path), skip_reason(self.root, path, reason)))

    def jobs(self):
        """The files to read, as jobs for `_prepare`; files unchanged by size and mtime
        are counted here and never read."""
        opts, progress, known = self.opts, self.progress, self.known
        for n, entry in enumerate(self.entries(), 1):
            if progress:
                progress("scan", n, None)
            try:
                entry.path.encode("utf-8")
            except UnicodeEncodeError:  # the index stores names as UTF-8 text
                shown = shown_bytes(entry.path)
                self.warn(f"{shown}: file name is not valid UTF-8; skipped")
                self.on_skip(shown, "name_not_utf8")
                continue
            if entry.path in self.own:
                continue
            state = known.get(entry.path)
            # an index of another row layout re-chunks its files once (ROWS_META)
            recut = self.relayout and state is not None and resplit(entry.path, self.resplit_kinds)
            if (not opts.full and state and not recut
                    and (state[1], state[2], state[4], state[5]) == _freshness(entry)):
                self.seen.add(entry.path)
                self.report.unchanged += 1
                continue
            same = state[3] if state and not opts.full and not recut else None
            yield str(self.root), entry.path, file_cap(entry.path, opts.walk.max_filesize), same, opts, state

    def entries(self):
        """The walk's files. A first answer with query words (`opts.first_words`) walks for
        up to FIRST_WALK_S (a quarter of its budget at most), then reads the files walked
        so far by how many of the words their paths hold (walk order among equals), then
        the rest of the walk. The Go
        stdlib's first answer to "where does the http server parse the request line" read
        410 files in walk order (archive/, bufio/, cmd/) and held no file of net/http."""
        entries = walk(self.root, self.opts.walk, on_warning=self.warn, on_skip=self.on_skip)
        words = self.opts.first_words
        if not words or self.deadline is None:
            yield from entries
            return
        # a share of the budget: a 0.5 s budget spent whole on a 30,000-file walk read nothing
        head, until = [], time.monotonic() + min(FIRST_WALK_S, (self.opts.budget_s or 0) / 4)
        for e in entries:
            head.append(e)
            if len(head) % 256 == 0 and time.monotonic() > until:
                break
        else:  # the whole walk: its count is the tree's (`walk_total`)
            self.walked = sum(e.path not in self.own for e in head)
        head.sort(key=lambda e: -sum(w in e.path.lower() for w in words))
        yield from head
        yield from entries

    def recut_jobs(self):
        """The jobs of a background re-cut (`recut_only`): the indexed files of the kinds
        the older layout cut otherwise, by their stored paths, under the size cap the index
        was built with. No walk: the worker knows only the tree's config, and a walk by it
        would have dropped the files an `ov index --hidden` (or -L, --no-ignore,
        --max-filesize) had added."""
        cap = self.store.get_meta(CAP_META)
        max_bytes = int(cap) if cap and cap.isdigit() else None
        try:  # a re-cut stopped before: the files up to its last are cut already
            layout, after = json.loads(self.store.get_meta(RECUT_META) or "null") or (None, "")
        except (ValueError, TypeError):
            layout, after = None, ""
        after = after if layout == self.layout and isinstance(after, str) else ""
        for n, (path, state) in enumerate(sorted(self.known.items()), 1):
            if self.progress:
                self.progress("scan", n, len(self.known))
            if path > after and resplit(path, self.resplit_kinds):
                yield str(self.root), path, file_cap(path, max_bytes), None, self.opts, state

    def prepared(self):
        """`_prepare` of every job: the first INLINE_FILES here, the rest in a pool."""
        todo = self.recut_jobs() if self.recut_only else self.jobs()
        yield from map(_prepare, itertools.islice(todo, INLINE_FILES))
        pool = _pool()
        if pool is None:
            yield from map(_prepare, todo)
            return
        self.pools.append(pool)
        yield from _bounded_imap(pool, _prepare, todo)

    def take(self, path: str, state, prep) -> bool:
        """Store one prepared file (or count why not); True when it counts to the batch."""
        self.last = path
        if isinstance(prep, str):
            self.warn(prep)
            self.on_skip(path, "unreadable")
            return False
        if isinstance(prep, int):  # OVER_CAP
            self.on_skip(path, "size")
            return False
        if prep is None:  # binary
            self.on_skip(path, "binary")
            return False
        self.seen.add(path)
        if isinstance(prep, tuple):  # same content hash: only the stat changed
            self.store.touch_file(state[0], *prep)
            self.report.unchanged += 1
        else:
            # a first answer's budgeted run leaves the trigram rows to ov.worker
            _write_file(self.store, path, prep, state, self.report, reuse=not self.opts.full,
                        trigrams=self.opts.trigrams and self.opts.budget_s is None)
            if state is None:
                self.added.append((path, prep.hash))
            self.changed_any = True
        self.pending += 1
        return True

    def walk_total(self) -> list:
        """[files the tree holds to index, whether that is all of them]: a first answer's
        budget ends its walk early, and "410 files read so far" did not say they were 5 % of
        the Go stdlib's. A second walk, no file read, for at most WALK_TOTAL_S."""
        if self.walked is not None:
            return [self.walked, True]
        deadline, n = time.monotonic() + WALK_TOTAL_S, 0
        for entry in walk(self.root, self.opts.walk):
            n += entry.path not in self.own
            if n % 256 == 0 and time.monotonic() > deadline:
                return [n, False]
        return [n, True]

    def commit(self, batches) -> None:
        """End the batch when it holds COMMIT_FILES files or is COMMIT_SECONDS old."""
        if self.pending >= COMMIT_FILES or time.monotonic() - self.last_commit > COMMIT_SECONDS:
            if self.recut_only:  # with the rows: a re-cut stopped after this goes on from here
                self.store.set_meta(RECUT_META, json.dumps([self.layout, self.last]))
            if self.changed_any:
                self.store.bump_generation()
            batches.commit()
            self.pending, self.last_commit = 0, time.monotonic()

    def finish(self, cut: bool) -> None:
        """The last batch: files gone removed (unless the walk was cut: the files not
        walked are not known to be gone), the skipped list, the generation."""
        store, report = self.store, self.report
        if self.recut_only:
            # nothing was walked: no file is known gone, none skipped. Stopped, every file
            # keeps its rows, those not reached still of the older layout; the next re-cut
            # starts after the last one written (RECUT_META)
            if cut and self.last:
                store.set_meta(RECUT_META, json.dumps([self.layout, self.last]))
            elif not cut:
                store.set_meta(ROWS_META, self.layout)
                store.delete_meta(RECUT_META)
        elif cut:
            if self.unfinished:
                store.set_meta(KEYWORDS_META, "1")
                store.set_meta(WALK_TOTAL_META, json.dumps(self.walk_total()))
                # those of the files read so far (`ov status` said "skipped: 0 files" while the
                # first build had said 84: a review of the Go tree); the run that ends the walk
                # writes them all
                store.set_skipped(self.skipped)
            report.partial = True
        else:
            moved: dict[str, dict | None] = {}  # content hash -> the `ov tag` tags of a file gone
            for path, state in self.known.items():
                if path not in self.seen:
                    _going(moved, store, state[0], state[3])
                    store.delete_file(state[0])
                    report.removed += 1
                    self.changed_any = True
            _carry_tags(store, self.added, moved)
            store.set_meta(ROWS_META, self.layout)
            store.delete_meta(RECUT_META)
            store.set_skipped(self.skipped)
            store.delete_meta(KEYWORDS_META)
            store.delete_meta(WALK_TOTAL_META)
            refresh_big_files(store, self.root, self.big, store.big_file_states(), full=self.opts.full,
                              progress=self.progress, deadline=self.deadline)
        if self.changed_any:
            store.bump_generation()
            store.record_chunk_count()


class GoneTags:
    """The `ov tag` tags of files a watcher's batch removed, by content hash, for RENAME_WINDOW_S:
    an editor's rename can reach the watcher as two batches, the old path in one and the
    new in the next, and the file is then one gone and one come, as in one batch."""

    def __init__(self, window: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = RENAME_WINDOW_S if window is None else window
        self.clock = clock
        self.held: dict[str, tuple[dict | None, float]] = {}

    def merge(self, moved: dict[str, dict | None]) -> dict[str, dict | None]:
        """This batch's files gone, with those of earlier batches still within the window
        (a content gone twice, here and before: whose tags are whose is not known)."""
        now = self.clock()
        self.held = {h: got for h, got in self.held.items() if now - got[1] <= self.window}
        out = {h: tags for h, (tags, _) in self.held.items()}
        for h, tags in moved.items():
            out[h] = None if h in out else tags
        return out

    def keep(self, moved: dict[str, dict | None], arrived: set[str]) -> None:
        """Hold what no file of this batch took (a content that came is taken or refused)."""
        now = self.clock()
        for h, tags in moved.items():
            if tags and h not in arrived:
                self.held[h] = (tags, self.held.get(h, (None, now))[1])
            else:  # taken, refused, or no longer anyone's (two files gone with it)
                self.held.pop(h, None)


def _going(moved: dict, store: Store, file_id: int, h: str) -> None:
    """Note the `ov tag` tags of a file about to leave the index, by its content hash (two
    files gone with one content: whose tags go where is not known, so neither's)."""
    moved[h] = _own_tags(store, file_id) if h not in moved else None


def _own_tags(store: Store, file_id: int) -> dict:
    """The tags `ov tag` gave a file (not its front matter's)."""
    return user_tags(store.tags_of(file_id), _front_matter_tags(store.front_text(file_id)))


def _carry_tags(store: Store, added: list[tuple[str, str]], moved: dict[str, dict]) -> None:
    """A file renamed or moved (gone from one path, new at another with the same content
    in one run) keeps the tags `ov tag` gave it, as its vectors are kept: `ov tag` says
    its tags are kept across re-indexing, and a notes app renames notes all the time."""
    arrivals: dict[str, int] = {}
    for _, h in added:
        arrivals[h] = arrivals.get(h, 0) + 1
    for path, h in added:
        # one file gone and one come with the same content: a move (two empty notes made
        # where one tagged empty note was deleted take nobody's tags)
        tags = moved.get(h) if arrivals[h] == 1 else None
        row = store.file_row(path) if tags else None
        if row:  # as `ov tag` wins over front matter
            store.set_tags(row["id"], {**store.tags_of(row["id"]), **tags})


def refresh_big_files(store: Store, root: Path, big: list[str], known: dict, *, full: bool = False,
                      progress: Progress | None = None, deadline: float | None = None) -> None:
    """Grep's rows of the files a walk skipped for their size (`big`; ov.grams): a file
    whose (size, mtime_ns, ctime_ns, inode) is its row's (in `known`, the rows the walk
    covered) costs a stat; any other is read in blocks and its row written (`full`: every
    one). Rows of `known` the walk did not skip for size (deleted, ignored, under the size
    cap now), and of files that changed but get no bitmap, are removed. Past `deadline` (a
    first answer's budget) no more files are read: grep reads them, the same answer."""
    wanted = set(big)
    todo = []
    for rel in dict.fromkeys(big):
        try:
            rel.encode("utf-8")  # the index stores names as UTF-8 text
            state = freshness(stat_under(str(root), rel))
        except (OSError, UnicodeEncodeError):
            wanted.discard(rel)
            continue
        if full or known.get(rel) != state:
            todo.append(rel)
    for n, rel in enumerate(todo, 1):
        try:
            late = deadline is not None and time.monotonic() > deadline
            got = None if late else digest_under(str(root), rel, grams.bitmap)
        except OSError:
            got = None
        if got is None or got[1] is None:  # late, unreadable, written to meanwhile, no bitmap
            wanted.discard(rel)
        else:
            store.put_big_file(rel, *got)
        if progress:
            progress("grams", n, len(todo))
    store.delete_big_files([p for p in known if p not in wanted])


def _freshness(entry) -> tuple[int, int, int, int] | None:
    """(size, mtime_ns, ctime_ns, inode) of a walked file (issue 17: a restored mtime must
    not hide a change): the walk's, or one stat where the walk did not record them."""
    if entry.inode:
        return (entry.size, entry.mtime_ns, entry.ctime_ns, entry.inode)
    try:
        st = os.stat(entry.abspath)
    except OSError:
        return None
    return freshness(st)


def _bounded_imap(pool, fn, jobs, window: int | None = None):
    """`pool.imap(fn, jobs)`, results in order, with at most `window` jobs handed to the pool
    ahead of the consumer. imap alone takes every job at once and keeps each result until
    it is taken, so a writer slower than the pool (SQLite has one) held the rows of most of
    a big tree in memory: 1.5 GB of the parent's on the kernel. Two halves are in flight,
    so the pool has the next while this one is taken."""
    half = max(1, (window or IN_FLIGHT) // 2)
    ahead: collections.deque = collections.deque()

    def hand_out() -> None:
        part = list(itertools.islice(jobs, half))
        if part:  # in groups of POOL_GROUP: imap's own chunks come as a bare generator
            groups = [part[i:i + POOL_GROUP] for i in range(0, len(part), POOL_GROUP)]
            ahead.append(pool.imap(partial(_each, fn), groups))

    hand_out()
    hand_out()
    while ahead:
        yield from _awaited(pool, ahead.popleft())
        hand_out()


POOL_CHECK_S = 1.0  # how often a wait on the pool checks that its processes are alive
POOL_GROUP = 8  # files a pool process takes at once


def _each(fn, items: list) -> list:
    return [fn(item) for item in items]


def _awaited(pool, results):
    """The results of one `imap`, each waited for at most POOL_CHECK_S at a time, between
    which the pool's processes are checked. A pool process that dies (the kernel's
    out-of-memory killer, a `kill -9`) takes the file it held with it, and the stock
    iterator waits for that file's result for ever: `ov index` and a first search hung
    with nothing said. Its death is an error now; the batches committed before it stay."""
    from multiprocessing import TimeoutError as Waited  # noqa: PLC0415

    while True:
        try:
            yield from results.next(POOL_CHECK_S)
        except StopIteration:
            return
        except Waited:
            _check_alive(pool)
        except RuntimeError as e:
            # a Ctrl-C or SIGTERM (`ov index` takes it as one) that lands in the iterator's
            # condition wait after it let go of its lock: leaving the `with` then fails with
            # "release unlocked lock" (seen once in ~120 SIGTERMs of a review): the
            # interrupt it hides is what happened
            if isinstance(e.__context__, KeyboardInterrupt):
                raise e.__context__ from None
            raise


def _check_alive(pool) -> None:
    """An `internal` error (retryable: a next run goes on from the last commit) when one of
    the pool's first processes has ended. They never end on their own while the pool runs:
    there is no `maxtasksperchild`, and the stock pool would start another in its place."""
    for proc in getattr(pool, "ov_first", ()):
        code = proc.exitcode
        if code is None:
            continue
        how = f"exited with status {code}" if code >= 0 else f"was killed by {_signal_name(-code)}"
        if code == -signal.SIGKILL:
            how += " (out of memory?)"
        raise OvError("internal", f"a process reading files for the index {how}; what was "
                      "committed is kept: run `ov index` again to go on", retryable=True)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _pool():
    """Processes that read and chunk files while this one writes them (past the first
    INLINE_FILES of a run; `OV_INDEX_JOBS` sets how many, 1 = none). Reading, tiers and chunking are ~85 %
    of the keyword phase's CPU and independent per file; SQLite takes one writer."""
    jobs = int(env_number("OV_INDEX_JOBS", 0)) or min(os.cpu_count() or 1, 4)
    if jobs <= 1 or (sys.flags.ignore_environment and not sys.flags.safe_path):
        return None  # (python -E passes -E on: its children would not read PYTHONSAFEPATH)
    import multiprocessing  # noqa: PLC0415 - only a large run pays for it

    # forkserver: no fork of a process with threads (the progress bar's) or SQLite handles
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ov.indexer"])
    # the forkserver and its resource tracker start as `python -c ...`, whose first import
    # path is the current folder: often the tree being indexed, whose `multiprocessing/` or
    # `ov/` would run as code. PYTHONSAFEPATH (-P) keeps the folder off it.
    saved = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        _quiet_resource_tracker()
        return _calm_pool_class()(jobs, initializer=_pool_worker_start, initargs=(os.getpid(),), context=ctx)
    finally:
        if saved is None:
            del os.environ["PYTHONSAFEPATH"]
        else:
            os.environ["PYTHONSAFEPATH"] = saved


@lru_cache(maxsize=1)
def _calm_pool_class():
    """multiprocessing's Pool whose worker-handler thread wakes only when a worker exits or
    the pool changes. The stock one also wakes whenever a result waits unread in the result
    pipe, and so spins (checking every worker's exit status) until the result thread has
    read it: ~8 % of a core through `ov index --no-embed` of the kernel's `fs/ net/
    kernel/ mm/`, taken from the workers and the writer (docs/BENCHMARKS.md). The wake is
    for workers that leave after `maxtasksperchild` tasks, which these never do."""
    from multiprocessing import pool as mp_pool  # noqa: PLC0415

    class CalmPool(mp_pool.Pool):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.ov_first = list(self._pool)  # the processes `_check_alive` watches

        def _get_sentinels(self):
            return [self._change_notifier._reader]

    return CalmPool


POOL_END_S = 5.0  # how long `end_pool` waits for multiprocessing's own terminate


def end_pool(pool) -> None:
    """`pool.terminate()`, bounded. A Ctrl-C during a loaded first build once left `ov
    search` waiting for ever inside it (seen in the suite: the main thread joining the pool's
    task thread, which waited for the task queue's write lock; the pool processes were gone).
    After POOL_END_S the pool's processes are killed and the command goes on to end: its
    exit (`ov.cli.run.exit_now`) does not wait for the stuck thread, a daemon."""
    import threading  # noqa: PLC0415

    ender = threading.Thread(target=pool.terminate, name="ov-pool-end", daemon=True)
    ender.start()
    ender.join(POOL_END_S)
    if ender.is_alive():
        for proc in list(getattr(pool, "_pool", ()) or ()):
            try:
                proc.kill()
            except (OSError, ValueError, AttributeError):
                pass


# A pool process's nice, above the command's: the one writer is what bounds a run, and on
# two cores its two readers took their share of its core (the writer got 75 % of one through
# `ov index --no-embed` of the kernel: 170.7 s; with the readers at nice 10, 86 % and 145.0 s)
POOL_NICE = 10


def _pool_worker_start(owner: int | None = None) -> None:
    """A pool process leaves Ctrl-C to the command: the terminal sends SIGINT to the whole
    process group, and each busy pool process printed the head of its KeyboardInterrupt
    traceback (`Process ForkServerPoolWorker-2:`) above `ov: interrupted`. The command
    ends the pool itself (`pool.terminate()`, SIGTERM). Once the command (`owner`) is gone,
    killed with SIGKILL, the process says nothing more: each had printed two chained
    BrokenPipeError tracebacks into the user's terminal as it failed to send its result.
    It runs at POOL_NICE, below the writer."""
    try:
        os.nice(POOL_NICE)
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if owner is not None:
        sys.stderr = _WhileOwned(sys.stderr, owner)


class _WhileOwned(io.TextIOBase):
    """A pool process's stderr, silent once the process that owns the pool has died."""

    def __init__(self, stream, owner: int) -> None:
        self.stream, self.owner = stream, owner

    def write(self, s: str) -> int:
        if process_alive(self.owner):
            return self.stream.write(s)
        return len(s)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass


def _quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with its stderr on /dev/null. A pool stopped
    mid-run (a first answer's time budget) leaves its semaphores to the tracker, which
    unlinks them when this process ends, as is its job, but first printed "There appear to
    be 6 leaked semaphore objects to clean up at shutdown" on the user's terminal, after
    the answer. The tracker is started once per process; this only chooses its stderr."""
    from multiprocessing import resource_tracker  # noqa: PLC0415

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    saved = os.dup(2)
    try:
        os.dup2(devnull, 2)
        resource_tracker.ensure_running()
    except Exception:
        pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


@dataclass
class _Rows:
    """Everything one file's rows need, computed without SQL (`_prepare`)."""

    size: int
    mtime_ns: int
    hash: str
    title: str
    tags: dict[str, str]
    ftype: str
    category: str
    chunks: list  # Chunk, or _Span after the trip from a pool process
    hashes: list[str]  # each row's text hash when it may get a vector, else ""
    camel: list[str]  # camel_words of each non-sentence chunk (its keyword row: keyword_text)
    embed: bool
    tri_doc: str  # the file's files_tri row (store.trigram_doc)
    ctime_ns: int = 0
    inode: int = 0

    def __reduce__(self):
        # From a pool process to the writer, whose unpickling sets the pace: the chunks as
        # plain tuples (a frozen Chunk took 16 ms a MB of the kernel's fs/ to unpickle,
        # tuples 3, with _Span 7), and each keyword row's camelCase words, not its text
        # again (keyword_text joins them in the writer).
        state = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        state["chunks"] = [(c.start, c.end, c.start_line, c.end_line, c.text, c.level) for c in self.chunks]
        return _rows_from, (state,)


# a chunk as the writer needs it: the fields of ov.model.Chunk, a tuple
_Span = collections.namedtuple("_Span", "start end start_line end_line text level")


def _rows_from(state: dict) -> _Rows:
    rows = _Rows(**state)
    rows.chunks = [_Span._make(c) for c in rows.chunks]
    return rows


def _prepare(job) -> tuple[str, object, object]:
    """Read one file and compute its rows: (path, state, rows), where rows is a warning
    (str), None (binary), (size, mtime_ns) when its content hash is `same`, or `_Rows`.
    Runs in a pool process or in line."""
    root, path, max_bytes, same, opts, state = job
    try:
        # opened under the root now: a link swapped in since the walk is refused
        ft = read_under(root, path, max_bytes=max_bytes)
    except OSError as e:
        return path, state, f"{path}: {e.strerror or e}"
    if ft is None:
        return path, state, None
    if heavy_notebook(path, ft, max_bytes):
        return path, state, OVER_CAP
    if same is not None and ft.hash == same:
        return path, state, (ft.size, ft.mtime_ns, ft.ctime_ns, ft.inode)
    return path, state, _file_rows(path, ft, opts)


OVER_CAP = 0  # `_prepare`'s answer for a notebook over the size cap without its encoded data


def heavy_notebook(path: str, ft: FileText, max_bytes: int | None) -> bool:
    """Whether `path`, read under `max_bytes` (`ov.walk.file_cap`: a notebook's is the size
    cap times NOTEBOOK_CAP_FACTOR), is a notebook over the cap by what it weighs: its
    characters less its outputs' encoded data (`ov.chunk.data_runs`: plotted images)."""
    if max_bytes is None or not is_notebook(path):
        return False
    cap = max_bytes // NOTEBOOK_CAP_FACTOR
    # (bytes: the data runs are ASCII, one byte a character; CJK cells weigh 3 a character)
    return ft.size > cap and ft.size - sum(b - a for a, b in chunking.data_runs(ft.text)) > cap


def front_block(text: str, path: str, body: list[Chunk]) -> bool:
    """Whether a file's first passage is its markdown front matter alone, before other
    passages. Such a block gets no vector: YAML's `title:` and `tags:` lines were closer
    to most queries of a notes vault than the notes' text, so its `---` lines were the hit
    and context mode's entry (a keyword hit on it is shown at the passage after it,
    ov.engine; its title and tags stay on every keyword row and in the tags)."""
    if len(body) < 2 or body[0].start != 0 or kind_of(path) != "markdown":
        return False
    fm = tiers.front_matter_block(text)
    return fm is not None and body[0].end <= fm[1]


# A passage of at most one word (`pass` after a class's long docstring, a closing `}`,
# `end`, `return 0;`), cut off by the budget from the passage before it, says nothing of
# its file; its vector sat near every short query ("option" ranked `typer/models.py`'s
# `    pass` first, and a nonsense query put it in its top 3). It keeps its keyword row. A
# file's only passage keeps its vector, however short (a one-word note).
_WORD = re.compile(r"[^\W\d_]{2,}")
BARE_CHARS = 40  # longer passages are never so bare: the test is skipped for them
BARE_HASH = "-"  # `_Rows.hashes` of such a passage: no vector, the BARE state (not NO_VECTOR)


def bare(text: str) -> bool:
    """Whether a passage holds at most one word of two letters or more."""
    return len(text) < BARE_CHARS and len(_WORD.findall(text)) <= 1


def _file_rows(path: str, ft: FileText, opts: IndexOptions) -> _Rows:
    text = ft.text
    tier_rows = tier_chunks(text, path)
    body = passages(text, path, opts.keyword_cut)
    title = file_title(text, path, body)
    embed = embeddable(path, text, opts)
    chunks = body + tier_rows  # prose sentences have no rows (VECTOR_LEVELS)
    skip = 0 if front_block(text, path, body) else -1  # the one row of a vector level without one
    embed_rows = notebook_rows(text, chunks) if embed and is_notebook(path) else None
    # only a row that may get a vector needs its hash (reuse, `_write_file`)
    hashes = [content_hash(c.text.encode("utf-8"))
              if embed and wants_vector(c.level, path) and i != skip
              and (embed_rows is None or embed_rows[i])
              and not (opts.embed_long_lines and encoded_blob(c.text))
              else "" for i, c in enumerate(chunks)]
    # a passage of one word gets none when another passage of the file gets one (a note's
    # one-word body keeps its vector, and with it its front matter's place in the ranking)
    few = [i for i, c in enumerate(body) if hashes[i] and bare(c.text)]
    if few and len(few) < sum(1 for h in hashes[:len(body)] if h):
        for i in few:
            hashes[i] = BARE_HASH
    return _Rows(ft.size, ft.mtime_ns, ft.hash, title, _front_matter_tags(text),
                 file_type(path), category(path), chunks, hashes,
                 [camel_words(c.text) for c in chunks if c.level != SENTENCE_LEVEL], embed,
                 trigram_doc([(c.start, c.end, c.text) for c in body]), ft.ctime_ns, ft.inode)


def notebook_rows(text: str, chunks: list[Chunk]) -> list[bool] | None:
    """Which of a notebook's rows may get a vector: its abstract (read from its cells) and
    the passages of its cells' sources, not those of its JSON structure, cell metadata or
    outputs (ov.chunk.notebook_sources); None for a notebook written on one line."""
    sources = chunking.notebook_sources(text.split("\n"))
    if not sources:
        return None
    firsts = [a for a, _ in sources]
    out = []
    for c in chunks:
        if c.level != 2:
            out.append(True)
            continue
        k = bisect.bisect_right(firsts, c.start_line - 1) - 1
        out.append(k >= 0 and c.start_line - 1 <= sources[k][1])
    return out


def file_title(text: str, path: str, body: list[Chunk]) -> str:
    """A file's title (every keyword row of the file carries it): the first line of its
    first chunk, past a markdown file's front matter (a chunk of its own, whose first line
    is `---`), whose `title` key is taken when it has one; a Kubernetes manifest's objects
    (`tiers.manifest_text`)."""
    if not body:
        return ""
    if is_notebook(path) and (cells := tiers.notebook_text(text)) and cells.strip():
        return title_of(tiers.unfenced(cells).lstrip())  # its first cell, not the JSON's `{`
    if tiers.is_yaml(path) and (said := tiers.manifest_text(text.split("\n", 2000)[:2000])):
        return title_of(said)  # not `apiVersion: apps/v1`, every manifest's first line
    fm = tiers.front_matter_block(text) if kind_of(path) == "markdown" else None
    if fm is None:
        return title_of(body[0].text)
    named = tiers.front_matter(text).get("title")
    if isinstance(named, str) and named.strip():
        return title_of(named)
    # the first line past the closing `---` that holds text
    after = text[fm[1]:].lstrip()
    return title_of(after) if after else ""


def _index_file(store: Store, path: str, ft: FileText, state, report: IndexReport,
                opts: IndexOptions) -> None:
    """(Re)index one file read here."""
    _write_file(store, path, _file_rows(path, ft, opts), state, report, reuse=not opts.full,
                trigrams=opts.trigrams)


def _write_file(store: Store, path: str, rows: _Rows, state, report: IndexReport, *,
                reuse: bool, trigrams: bool) -> None:
    """(Re)write one file: its row, tiers and chunks replace the old ones in the same
    transaction, so a search never sees the file half-written. Vectors of identical chunk
    text are reused (not with --full, which re-embeds everything). With `trigrams` its
    trigram rows are written too when no earlier file waits for its own (one pass over
    the tree instead of a second one reading the chunks back)."""
    # the vectors of the file's chunks that stay the same are kept (by text hash)
    kept = store.file_vectors(state[0]) if state and reuse and rows.embed else {}
    # the front-matter tags it had: read from its old first passage, before it goes
    old_front = _front_matter_tags(store.front_text(state[0])) if state else None
    if state:  # before the row takes its new title: the old keyword rows carry the old one
        store.delete_chunks(state[0])
        report.updated += 1
    else:
        report.added += 1
    file_id = store.upsert_file(
        path, rows.size, rows.mtime_ns, rows.hash, ftype=rows.ftype, category=rows.category,
        tags=rows.tags, title=rows.title, ctime_ns=rows.ctime_ns, inode=rows.inode, old_front=old_front)
    ids = store.insert_chunks(file_id, rows.chunks, rows.title, embed=rows.embed,
                              trigrams=trigrams, camel=rows.camel, tri_doc=rows.tri_doc)
    # a row has a hash only when it may get a vector (`_file_rows`: passages and abstracts,
    # VECTOR_LEVELS, not front matter nor encoded data)
    if rows.embed:
        store.no_vectors([cid for cid, h in zip(ids, rows.hashes) if not h])
        store.no_vectors([cid for cid, h in zip(ids, rows.hashes) if h == BARE_HASH], BARE)
    if reuse and rows.embed:
        wanted = {cid: h for cid, h in zip(ids, rows.hashes) if h and h != BARE_HASH}
        report.reused += store.reuse_vectors(wanted, {cid: kept[h] for cid, h in wanted.items() if h in kept})
    report.chunks += sum(1 for c in rows.chunks if c.level == 2)


def trigram_phase(store: Store, progress: Progress | None = None,
                  stop: Callable[[], bool] | None = None) -> int:
    """Write grep's trigram rows for the chunks that lack them; a batch per transaction,
    the index lock let go between two to a process that waits for it (`yield_lock`)."""
    total = store.trigram_pending()
    done = 0
    if progress and total:
        progress("trigram", 0, total)
    while not (stop and stop()):
        n = store.fill_trigrams(TRIGRAM_BATCH)
        if not n and store.trigrams_complete():
            break
        done += n
        if progress:
            progress("trigram", min(done, total), total)
        if (stop and stop()) or not yield_lock(store.path, stop):
            break
    return done


def embed_phase(store: Store, report: IndexReport, progress: Progress | None, embedder,
                stop: Callable[[], bool] | None = None, pause: Callable[[], None] | None = None) -> None:
    """Embed every chunk waiting for a vector, shortest first (similar lengths batch
    well). A text is run through the model once: chunks with the same text hash share its
    vector, and one already stored elsewhere in the index is copied, not recomputed.

    The pending rows are read EMBED_COMMIT at a time and their text hashed here (a row has
    no hash until it has a vector). Copies of a text in one batch share one run of the
    model; a copy in a later batch finds the vector an earlier batch stored (each batch
    commits before the next is read).

    `stop`, or another process waiting for the index lock, is heard every EMBED_STEP texts:
    what was embedded by then is committed; then the phase ends (`stop`) or lets the lock
    go to the waiter and, holding it again, reads the rows still pending and goes on.
    `pause`, when given, is called before each SEARCH_STEP texts run through the model."""
    pending = store.pending_embeddings()
    if not pending:
        return
    if embedder is None:
        from ov.embed import load_embedder  # noqa: PLC0415 - only indexing with vectors needs it

        embedder = load_embedder("index")
    with store.tx():
        model = store.get_meta("model")
        # vectors of two models must not meet; with none left (`--full` re-chunked every
        # file) the index takes the new model
        if model and model != embedder.model_id and store.has_vectors():
            raise OvError("unsupported",
                          f"this index was embedded with {model!r}, not {embedder.model_id!r}; "
                          "rebuild it with `ov index --full`")
        store.set_meta("model", embedder.model_id)
    lock = held_lock(store.path)
    run = _EmbedRun(store, report, progress, embedder, pending, pause)

    def stopped() -> bool:
        return bool(stop and stop())

    while pending and not stopped():
        if not run.parts(pending, lambda: stopped() or (lock is not None and lock.wanted())):
            return  # all done
        if stopped() or not yield_lock(store.path, stop):
            return
        pending = store.pending_embeddings()  # what the waiter changed, and what is left


class _EmbedRun:
    """`embed_phase`'s counts across the turns it takes with other writers: rows, and for a
    progress hook with a `work` method, estimated model tokens (`TokenCost`)."""

    def __init__(self, store: Store, report: IndexReport, progress: Progress | None, embedder,
                 pending: list[tuple[int, int]], pause: Callable[[], None] | None = None) -> None:
        self.store, self.report, self.progress, self.embedder = store, report, progress, embedder
        self.pause = pause
        self.total = len(pending)
        self.done = 0
        self.work = getattr(progress, "work", None)
        self.cost = TokenCost.sample(store, pending, embedder) if self.work else None
        self.work_done = 0.0
        self.work_total = self.cost.total(pending) if self.cost else 0.0
        self.tell(0, 0.0)

    def tell(self, done: int, work_done: float) -> None:
        """Report `done` rows (and `work_done` tokens, to a hook that asks for them)."""
        if self.work:
            self.work(round(work_done), round(self.work_total))
        if self.progress:
            self.progress("embed", min(done, self.total), self.total)

    def parts(self, pending: list[tuple[int, int]], cut: Callable[[], bool]) -> bool:
        """Embed `pending` EMBED_COMMIT rows a commit; True when `cut` ended it early."""
        if self.cost:  # a later turn: what the waiter added or removed is counted in
            self.work_total = self.work_done + self.cost.total(pending)
        for start in range(0, len(pending), EMBED_COMMIT):
            if self.part(pending[start:start + EMBED_COMMIT], cut):
                return True
        return False

    def part(self, rows: list[tuple[int, int]], cut: Callable[[], bool]) -> bool:
        """Embed and commit `rows` (id, length); True when `cut` ended it early."""
        store = self.store
        part = [cid for cid, _ in rows]
        cost = {cid: self.cost(n) for cid, n in rows} if self.cost else {}
        texts = store.chunk_texts(part)
        # a row deleted since the list was read (a concurrent change) is not there
        hash_of = {cid: content_hash(text.encode("utf-8")) for cid, text in texts.items()}
        by_hash: dict[str, list[int]] = {}
        for cid in part:
            if cid in hash_of:
                by_hash.setdefault(hash_of[cid], []).append(cid)
        known = store.vectors_by_hash(list(by_hash))
        todo = [ids[0] for h, ids in by_hash.items() if h not in known]
        # batch size: the embedder's default, the fastest and leanest measured (ov/embed.py);
        # progress is told every EMBED_STEP texts, not once a commit (12-31 s apart on a
        # loaded machine, where `--progress` promises a line a second)
        vecs: list = []
        stopped = False
        for k in range(0, len(todo), EMBED_STEP):
            if k and cut():
                stopped = True
                break
            vecs += self.embed([texts[i] for i in todo[k:k + EMBED_STEP]])
            if k + EMBED_STEP < len(todo):
                self.tell(self.done + k + EMBED_STEP,
                          self.work_done + sum(cost.get(i, 0.0) for i in todo[:k + EMBED_STEP]))
        for i, v in zip(todo, vecs):
            known[hash_of[i]] = v.astype("float32").tobytes()
        ids = [cid for h, ids in by_hash.items() if h in known for cid in ids]
        with store.tx():
            store.store_vectors(ids, [known[hash_of[cid]] for cid in ids], [hash_of[cid] for cid in ids])
            # new vectors change every hybrid and semantic ranking: a cursor of one made
            # before them is refused (its next page would skip hits the new ranking puts first)
            store.bump_vectors()
        finished = ids if stopped else part
        self.done += len(finished)
        self.spent(finished, set(todo[:len(vecs)]), cost)
        self.report.embedded += len(vecs)
        self.report.reused += len(ids) - len(vecs)
        self.tell(self.done, self.work_done)
        return stopped or cut()

    def embed(self, texts: list[str]) -> list:
        """The model's vectors of `texts`; with a `pause`, SEARCH_STEP texts at a time, each
        after it (a search beside the worker waits at most that long for the CPU)."""
        if self.pause is None:
            return list(self.embedder.embed(texts))
        vecs: list = []
        for j in range(0, len(texts), SEARCH_STEP):
            self.pause()
            vecs += list(self.embedder.embed(texts[j:j + SEARCH_STEP]))
        return vecs

    def spent(self, rows: list[int], ran: set[int], cost: dict[int, float]) -> None:
        """Count the tokens of committed `rows`: a row the model ran on costs its estimate,
        a copy of a text embedded before (or a row deleted meanwhile) ROW_TOKENS at most,
        and the total drops by the difference. So the rate is the model's, and the tokens
        left assume no copies among the rows still waiting (on a Go tree 16 % of the
        shortest eighth of the rows were copies, 4 % of the longest)."""
        for cid in rows:
            est = cost.get(cid, 0.0)
            used = est if cid in ran else min(est, ROW_TOKENS)
            self.work_done += used
            self.work_total -= est - used


class TokenCost:
    """What a row waiting for a vector will cost the model, in tokens, estimated from its
    length in characters: an ETA's unit of work. The model's time grows with a text's
    tokens (~1.4 ms a token from 18 to 160 tokens, at batch 4 on two loaded cores, with no
    fixed part to speak of), and the embed phase takes the shortest rows first, so rows a
    second fall fourfold as it goes (a 119 MB Go tree: 128/s early, 27/s later). Characters
    are not tokens either: on that tree the tokens per character fall from 0.49 in the
    shortest eighth of the rows to 0.30 in the longest (chunks are cut at a token budget,
    so the long ones hold more blanks and long words). So COST_SAMPLES waiting rows, spread
    evenly over the length order, are tokenised once, and each COST_BIN of them in a row
    give the tokens per character of the lengths they span. Replayed over that tree's
    147k rows with a time per row of its tokens, an ETA from a recent rate in these units
    stayed within 15 % of the time left from 2 % done on; one from characters was 1.5-1.8x
    too long, one from rows 0.1-0.5x too short. On a real run the worker embedded ~800 of
    these tokens a second for ten minutes while its rows a second fell from 56 to 6
    (docs/BENCHMARKS.md)."""

    def __init__(self, samples: Sequence[tuple[int, int]]) -> None:
        """`samples`: (length in characters, tokens) of some waiting rows, by length."""
        from ov.embed import MAX_TOKENS  # noqa: PLC0415

        self.cap = MAX_TOKENS  # a longer text is cut there
        self.bounds: list[int] = []  # each bin's longest length
        self.ratios: list[float] = []  # its tokens per character
        for i in range(0, len(samples), COST_BIN):
            part = samples[i:i + COST_BIN]
            chars = sum(n for n, _ in part)
            self.bounds.append(part[-1][0])
            self.ratios.append(sum(min(t, self.cap) for _, t in part) / chars if chars else 0.0)

    @classmethod
    def sample(cls, store: Store, pending: Sequence[tuple[int, int]], embedder) -> TokenCost:
        """From COST_SAMPLES of `pending` (id, length, by length): one read of their texts."""
        picked = list(pending[::max(1, -(-len(pending) // COST_SAMPLES))])
        texts = store.chunk_texts([cid for cid, _ in picked])
        count = getattr(embedder, "count_tokens", len)  # (characters from one that cannot count)
        return cls([(n, count(texts[cid])) for cid, n in picked if cid in texts])

    def __call__(self, length: int) -> float:
        if not self.ratios:
            return float(ROW_TOKENS)
        ratio = self.ratios[min(bisect.bisect_left(self.bounds, length), len(self.ratios) - 1)]
        return min(length * ratio, self.cap) + ROW_TOKENS

    def total(self, rows: Sequence[tuple[int, int]]) -> float:
        """The tokens of `rows` (id, length)."""
        return sum(self(n) for _, n in rows)


def index_paths(root: Path, rels, db_path: Path | None = None, opts: IndexOptions = IndexOptions(), *,
                warn: Callable[[str], None] | None = None, embedder=None,
                gone_tags: GoneTags | None = None, stop: Callable[[], bool] | None = None,
                searchable: Callable[[], None] | None = None) -> IndexReport:
    """Re-index only `rels`: root-relative paths a watcher saw change (files or folders,
    added, modified or deleted), without walking the rest of the tree.

    A folder is walked (its files as `index_tree` would see them, and rows under it that
    the walk no longer yields are removed); a file is re-read and compared by content
    hash (the watcher says it changed, so size and mtime are not trusted to say it did
    not); a path that is gone, ignored, a symlink the walk would skip, over the size cap
    or binary loses its rows. Same lock and one transaction as `index_tree`, then the
    embedding phase, which also finishes whatever an interrupted run left unembedded (until
    `stop` says to leave the rest for later).

    `gone_tags`, kept by the caller from one call to the next (a watcher's batches), lets a
    rename that falls across two batches (the old path gone in one, the new come in the
    next) keep the file's `ov tag` tags, as one within a batch does. `searchable` is
    called once the keyword and grep rows are committed, before the embedding."""
    t0 = time.perf_counter()
    root = Path(root).resolve()
    db_path = Path(db_path) if db_path else db_path_for(root)
    report = IndexReport(root=str(root))
    warn_ = warn or (lambda _m: None)
    todo = sorted({r for r in (os.path.normpath(str(x)).replace(os.sep, "/") for x in rels)
                   if r not in (".", "") and not r.startswith("../") and r != ".."
                   and not os.path.isabs(r) and not ALWAYS_SKIPPED.intersection(r.split("/"))}
                  - own_files(root, db_path))
    prepare_index_dir(db_path)
    lock = IndexLock(db_path)
    lock.acquire(announce=True)  # a short write: a holder embedding lets it in (`yield_lock`)
    try:
        store, problem = _open_checked(db_path, thorough=False)
        if problem is not None:  # `ov index --full` rebuilds it; a watcher must not write into it
            raise problem
        try:
            with store.tx():  # one transaction: a search sees all of the batch or none
                if _refresh_paths(store, root, todo, opts, report, warn_, gone_tags):
                    store.bump_generation()
                    store.record_chunk_count()
            trigram_phase(store)  # grep's rows for what changed
            if searchable is not None:
                searchable()
            if opts.embed:  # `stop`: the rest waits for a later call (a watcher's idle moment)
                embed_phase(store, report, None, embedder, stop)
        finally:
            store.close()
    finally:
        lock.release()
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _refresh_paths(store: Store, root: Path, rels: list[str], opts: IndexOptions, report: IndexReport,
                   warn: Callable[[str], None], gone_tags: GoneTags | None = None) -> bool:
    """`index_paths`' lexical part, inside its transaction; True when a row changed."""
    opts = cut_as_index(store, opts)  # (a keywords-only watch of an index cut by lines: by lines)
    changed = False
    seen: set[str] = set()
    big: list[str] = []  # skipped for their size: grep's bitmaps
    added: list[tuple[str, str]] = []  # a rename is a file gone and one come: tags follow
    moved: dict[str, dict | None] = {}

    skips: dict[str, str] = {}  # what this batch skipped that `ov status` would count as new

    def on_skip(path: str, why: str) -> None:
        if why == "size":
            big.append(path)
        if why in ("size", "binary"):
            skips[path] = skip_reason(root, path, why)

    for rel in rels:
        full = root / rel
        gone = (not os.path.lexists(full) or is_ignored(root, rel, opts.walk)
                or (os.path.islink(full) and not opts.walk.follow))
        entries = [] if gone else walk(root, opts.walk, start=full, on_warning=warn, on_skip=on_skip)
        for entry in entries:
            if entry.path in seen:
                continue
            seen.add(entry.path)
            row = store.file_row(entry.path)
            state = (row["id"], row["size"], row["mtime_ns"], row["hash"], row["ctime_ns"],
                     row["inode"]) if row else None
            cap = file_cap(entry.path, opts.walk.max_filesize)
            try:
                # opened under the root now: a link swapped in since the walk is refused
                ft = read_under(str(root), entry.path, max_bytes=cap)
            except OSError as e:
                warn(f"{entry.path}: {e.strerror or e}")
                seen.discard(entry.path)  # as the full walk: an unreadable file leaves the index
                continue
            if ft is None:  # binary now
                seen.discard(entry.path)
                on_skip(entry.path, "binary")
                continue
            if heavy_notebook(entry.path, ft, cap):
                seen.discard(entry.path)
                on_skip(entry.path, "size")
                continue
            if state and state[3] == ft.hash:
                if (state[1], state[2], state[4], state[5]) != (ft.size, ft.mtime_ns, ft.ctime_ns, ft.inode):
                    store.touch_file(state[0], ft.size, ft.mtime_ns, ft.ctime_ns, ft.inode)
                report.unchanged += 1
                continue
            _index_file(store, entry.path, ft, state, report, opts)
            if state is None:
                added.append((entry.path, ft.hash))
            changed = True
        # rows at or under `rel` that the walk did not yield: deleted, ignored or skipped
        for row in store.files_under(rel):
            if row["path"] not in seen:
                _going(moved, store, row["id"], row["hash"])
                store.delete_file(row["id"])
                report.removed += 1
                changed = True
    if gone_tags is not None:  # what earlier batches saw go, and what this one leaves over
        moved = gone_tags.merge(moved)
        gone_tags.keep(moved, {h for _, h in added})
    _carry_tags(store, added, moved)
    _note_skips(store, rels, skips)
    known = {p: state for rel in rels for p, state in store.big_file_states(rel).items()}
    refresh_big_files(store, root, big, known)
    return changed


def skip_reason(root: Path, path: str, reason: str) -> str:
    """What `ov status` says of a skipped file: one over the size cap that is binary (a
    library, an archive) is binary, whatever its size (search warns of text files over the
    cap: grep finds those)."""
    return "binary" if reason == "size" and binary_file(str(root), path) else reason


def _note_skips(store: Store, rels: list[str], skips: dict[str, str]) -> None:
    """The skipped list (`ov status`) after a batch of `rels`: its entries under them are
    this batch's. Only `ov index` wrote it, so a file the watcher skipped (a notebook over
    the cap by its cells, a NUL past the first 8 KiB) stayed "new" in every status and
    search until one ran. A list cut at SKIPPED_KEEP is left to the next `ov index`."""
    total, listed = store.skipped()
    if total > len(listed):
        return

    def under(p: str) -> bool:
        return any(r in ("", ".") or p == r or p.startswith(r.rstrip("/") + "/") for r in rels)
    now = sorted([(p, r) for p, r in listed if not under(p)] + [(shown_bytes(p), r) for p, r in skips.items()])
    if now != sorted(listed):
        store.set_skipped(now)
