"""A change journal for a watched tree: which paths changed since the index was last
brought up to date, so that grep can trust the index for every other file without one
`lstat` per file (git's fsmonitor and watchman serve git the same way).

Why: with a fresh index, a selective grep of the Linux kernel spent most of its time
proving that 78,000 files the index rules out had not changed since indexing (an `lstat`
each, ~0.5 s of the ~1 s run; docs/BENCHMARKS.md). A watcher already sees every change;
this module writes down what it saw and answers grep over a socket.

How it stays exact:
- Linux inotify (through ctypes: no dependency). A watch is added on every folder of the
  tree except `.git` and `.ov` (whatever the ignore rules say: a rule can change), before
  the watcher's catch-up pass (`ov.watch.Watcher.catch_up`) starts. Every event names a
  path; the path goes into `touched`, numbered in the order seen (`seq`). A folder
  created or moved in is watched at once and everything in it is touched.
- `reset()` is called as a catch-up starts (it empties `touched`); `caught_up(mark)` as it
  ends. Once a catch-up that started after the last reset has finished, every file not
  touched since then has the index row of its current state: the journal is `ready`.
- grep connects to the socket beside the index (`journal.sock`). Before it answers, the
  journal reads every event the kernel has queued: inotify queues an event inside the
  system call that made the change, so every change finished before grep asked is in the
  answer. grep then compares each touched file's `lstat` with the index, finds the other
  names of a touched file with several links (the index keeps inodes), and skips the
  files the index rules out and nobody touched (`ov.search.prefilter`).
- Past COMPACT_AT touched paths the journal asks the watcher for a catch-up, which lets it
  forget them (each grep stats every touched path).
- Anything the journal cannot vouch for makes it not ready, and grep stats each file as
  without one: an overflowing event queue or more than MAX_TOUCHED changed paths (both
  ask the watcher for a new catch-up: `wants_catch_up`); for good, the tree's folder moved
  or deleted, a watch that could not be added (the OS's `max_user_watches`), a folder
  reachable by two paths (a bind mount), a file system mounted or unmounted inside the
  tree while watching, and a network or FUSE file system holding any of the tree (changes
  made on another machine send no event).
- What inotify never reports, the journal cannot know: a file changed through a hard link
  from outside the tree, or written through `mmap` without a `write` (git's fsmonitor
  shares both limits). `ov index` without `--watch`, or `--no-index`, sees them.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import time
from pathlib import Path

from ov.walk import ALWAYS_SKIPPED

SOCKET_NAME = "journal.sock"  # beside the index
MAX_TOUCHED = 200_000  # changed paths held before the journal asks for a catch-up instead
# past this many touched paths (a branch switch) the watcher is asked for a catch-up, after
# which they are forgotten: each grep stats every touched path and receives the list
COMPACT_AT = 20_000
# grep's wait for an answer before it stats every file (a healthy journal answers in ~1 ms;
# a stopped watcher, Ctrl-Z, must not hold every grep up)
ASK_TIMEOUT_S = 0.25
PROTOCOL = 2

# inotify(7)
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
        | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")
# file systems whose changes may come from elsewhere, unseen by inotify
_REMOTE = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre",
           "fuse", "sshfs", "davfs", "virtiofs", "vboxsf", "vmhgfs")
_MOUNTS = "/proc/self/mounts"


def socket_path(db: Path) -> Path:
    return Path(db).with_name(SOCKET_NAME)


# -- grep's side -----------------------------------------------------------------------------

class Changes:
    """A journal's answer: the paths (relative to the root) touched since its catch-up, each
    with the number of its last event (`paths`), and the number the journal had reached
    (`seq`); `since` names the journal and its catch-up. A listing refreshed at this answer
    stays true later but for the folders of paths numbered past `seq`."""

    __slots__ = ("since", "seq", "paths")

    def __init__(self, since: str, seq: int, paths: dict[str, int]) -> None:
        self.since = since
        self.seq = seq
        self.paths = paths


def ask(db: Path, root: Path) -> Changes | None:
    """The paths (relative to `root`) changed since the index was brought up to date, from
    the journal of a watcher running on `root` with the index `db`; None when there is no
    such journal or it cannot vouch for the index (then every file must be checked)."""
    got = _reply(db, root)
    if got is None or not got.get("ready"):
        return None
    touched, since, seq = got.get("touched"), got.get("since"), got.get("seq")
    if (not isinstance(touched, dict) or not isinstance(since, str) or not isinstance(seq, int)
            or not all(isinstance(v, int) for v in touched.values())):
        return None
    return Changes(since, seq, touched)


def status(db: Path, root: Path) -> dict | None:
    """What `ov status` says of the journal of a watcher running on `root` with the index
    `db`: {"ready", "not_ready" (why not), "changed" (paths touched since its catch-up)};
    None when no watcher serves one."""
    got = _reply(db, root, brief=True)
    if got is None:
        return None
    changed = got.get("changed")
    return {"ready": bool(got.get("ready")), "not_ready": str(got.get("not_ready") or ""),
            "changed": changed if isinstance(changed, int) else None}


def _own_socket(path) -> bool:
    """Whether `path` is a socket of this user's, not a link: a cloned tree's
    `.ov/journal.sock` linked to another program's socket had been connected to and sent
    the journal's question."""
    import stat  # noqa: PLC0415

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()


def _reply(db: Path, root: Path, brief: bool = False) -> dict | None:
    """The journal's answer for this root and index (`brief`: without the touched paths),
    or None (no socket, nobody listening in time, another tree's journal, a garbled answer)."""
    path = socket_path(db)
    if not _own_socket(path) or len(os.fsencode(path)) > 100:
        return None
    import _socket  # noqa: PLC0415 - `socket` costs grep ~3 ms more to import, for enums

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(ASK_TIMEOUT_S)
        s.connect(os.fspath(path))
        s.sendall(b"brief\n" if brief else b"full\n")
        parts = []
        while chunk := s.recv(1 << 16):
            parts.append(chunk)
        got = json.loads(b"".join(parts))
    except (OSError, ValueError):
        return None
    finally:
        s.close()
    if (not isinstance(got, dict) or got.get("protocol") != PROTOCOL
            or got.get("root") != os.fspath(Path(root).resolve())
            or got.get("db") != os.fspath(Path(db).resolve())):
        return None
    return got


# -- the watcher's side ----------------------------------------------------------------------

def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount this process sees."""
    out = []
    try:
        with open(_MOUNTS, encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3:
                    out.append((fields[1].replace("\\040", " "), fields[2]))
    except OSError:
        pass
    return out


def _mounts_touching(root: str) -> tuple[tuple[str, str] | None, frozenset[tuple[str, str]]]:
    """(the mount holding `root`, the mounts inside it)."""
    holder: tuple[str, str] | None = None
    inside = set()
    for mnt, kind in _mounts():
        if root == mnt or root.startswith(mnt.rstrip("/") + "/"):
            if holder is None or len(mnt) >= len(holder[0]):
                holder = (mnt, kind)
        elif mnt.startswith(root.rstrip("/") + "/"):
            inside.add((mnt, kind))
    return holder, frozenset(inside)


def _remote(kind: str) -> bool:
    return kind in _REMOTE or kind.startswith("fuse")


class Journal:
    """The changes under `root` as inotify reports them, served to grep on a socket beside
    the index `db`. `open()` returns None where no journal can be kept (not Linux, a socket
    path too long); `not_ready` then says why a started one cannot vouch."""

    def __init__(self, root: Path, db: Path, fd: int, libc) -> None:
        self.root = os.fspath(Path(root).resolve())
        self.db = os.fspath(Path(db).resolve())
        self._fd = fd
        self._libc = libc
        self._wds: dict[int, str] = {}  # watch descriptor -> folder, relative ("" the root)
        self._lock = threading.Lock()  # the state below
        self._drain_lock = threading.Lock()  # one reader of the event queue at a time
        self._touched: dict[str, int] = {}  # path -> number of its last event
        self._seq = 0
        self._epoch = 0  # bumped by each reset
        self._id = f"{os.getpid()}-{time.time_ns()}"  # this journal among all that were
        self._ready = False
        self.not_ready = "the watcher's first catch-up has not finished"
        self.wants_catch_up = False
        self._broken: str | None = None  # set for good: nothing but a new journal mends it
        self._stop = threading.Event()
        self._sock = None  # the listening socket, once its folder exists
        self._sock_path = socket_path(db)
        self._sock_id: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._inside: frozenset[tuple[str, str]] = frozenset()  # mounts inside the tree
        self.complete = False  # every folder watched from the start: a source of changes
        self.out_of_watches = False  # the OS's limit of watches (max_user_watches) was reached
        self._queue: list[str] = []  # changed paths not yet taken by the watcher (`batches`)
        # how many changes `batches` has handed to the watcher: a search waits until the
        # watcher has written what it was handed (ov.mcp `_settle`, ov.watch `applied`)
        self.handed = 0
        self._queued = threading.Condition()
        self._ov_wd = -1  # the index's folder: watched for its config.toml alone

    # -- life --

    @classmethod
    def open(cls, root: Path, db: Path, warn=lambda _m: None) -> Journal | None:
        """A journal watching every folder under `root`, its socket listening (once the
        index's folder exists); None where it cannot be kept (told to `warn` when that is a
        surprise)."""
        if not sys.platform.startswith("linux"):
            return None
        if len(os.fsencode(socket_path(db))) > 100:  # sun_path's limit
            return None
        import ctypes.util  # noqa: PLC0415 - the watcher's alone; grep asks over a socket

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            warn(f"no change journal: inotify: {os.strerror(ctypes.get_errno())}")
            return None
        j = cls(root, db, fd, libc)
        holder, j._inside = _mounts_touching(j.root)
        remote = [k for _m, k in ([holder] if holder else []) + sorted(j._inside) if _remote(k)]
        if remote:
            j._break(f"the tree is on a {remote[0]} file system, whose changes may come unseen")
        else:
            j._add_tree("", touch=False)
            j._watch_ov()
            j.complete = j._broken is None
        try:
            j._listen()
        except OSError as e:
            warn(f"no change journal: {j._sock_path}: {e.strerror or e}")
            j._close_fd()
            return None
        if j._broken is not None:  # served all the same: `ov status` says why it cannot vouch
            warn(f"the change journal cannot vouch for the index ({j._broken}): grep stats each file")
        j._thread = threading.Thread(target=j._serve, name="ov-journal", daemon=True)
        j._thread.start()
        return j

    def _listen(self) -> None:
        """Listen on the socket beside the index; nothing yet while the index's folder does
        not exist (a first `ov index --watch` makes it in its catch-up: `caught_up` listens)."""
        path = self._sock_path
        if self._sock is not None or not path.parent.is_dir():
            return
        try:
            os.unlink(path)  # a dead watcher's socket, or one another watcher gives up
        except FileNotFoundError:
            pass
        import socket  # noqa: PLC0415

        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(os.fspath(path))
            os.chmod(path, 0o600)
            s.listen(16)
            st = os.stat(path)
        except OSError:
            s.close()
            raise
        self._sock_id = (st.st_dev, st.st_ino)
        self._sock = s

    def close(self) -> None:
        """Stop serving, remove the socket (if still ours) and the watches."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            try:
                st = os.stat(self._sock_path)
                if (st.st_dev, st.st_ino) == self._sock_id:
                    os.unlink(self._sock_path)
            except OSError:
                pass
            sock.close()
        self._close_fd()

    def _close_fd(self) -> None:
        with self._drain_lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    # -- what the watcher tells --

    def reset(self) -> int:
        """A catch-up starts: forget what was touched before it; the mark for `caught_up`."""
        with self._lock:
            self._epoch += 1
            self._touched.clear()
            self._ready = False
            self.wants_catch_up = False
            if self._broken is None:
                self.not_ready = "a catch-up of the index is running"
            return self._epoch

    def caught_up(self, mark: int) -> None:
        """The catch-up that `reset` returned `mark` for has finished."""
        try:
            self._listen()
        except OSError:
            pass  # grep goes without: it stats each file
        with self._lock:
            if mark == self._epoch and self._broken is None and not self.wants_catch_up:
                self._ready = True
                self.not_ready = ""

    def state(self, brief: bool = True) -> dict:
        """The answer to grep (`brief`: the number of touched paths, for `ov status`, not
        the paths), once every queued event is read."""
        self._drain()
        with self._lock:
            out = {"protocol": PROTOCOL, "root": self.root, "db": self.db, "ready": self._ready,
                   "not_ready": self.not_ready, "since": f"{self._id}:{self._epoch}",
                   "seq": self._seq, "changed": len(self._touched),
                   "watched_folders": len(self._wds)}
            if not brief and self._ready:
                out["touched"] = dict(self._touched)
            return out

    # -- events --

    def _break(self, why: str) -> None:
        with self._lock:
            if self._broken is None:
                self._broken = why
            self._ready = False
            self.not_ready = self._broken

    def _lost(self, why: str) -> None:
        """Changes were lost or are too many to hold: a new catch-up is needed."""
        with self._lock:
            self._ready = False
            self._touched.clear()
            self.wants_catch_up = True
            if self._broken is None:
                self.not_ready = why

    def _touch(self, rel: str) -> None:
        with self._lock:
            self._seq += 1
            self._touched[rel] = self._seq
            over = len(self._touched) > MAX_TOUCHED
            if len(self._touched) > COMPACT_AT:
                self.wants_catch_up = True  # still vouching until the catch-up starts
        self._tell(rel)
        if over:
            self._lost(f"more than {MAX_TOUCHED} paths changed")

    def _tell(self, rel: str) -> None:
        """Queue a changed path for the watcher (`batches`)."""
        with self._queued:
            self._queue.append(rel)
            self._queued.notify()

    def drain(self) -> None:
        """Record now every event the kernel has queued: a file saved before this call is
        among `queued_paths` after it (the journal's own thread may not have read it yet)."""
        self._drain()

    def queued_paths(self) -> list[str]:
        """The changed paths waiting to be taken by `batches` (root-relative)."""
        with self._queued:
            return list(self._queue)

    def queued(self) -> bool:
        """Whether a change waits to be taken by `batches` (asked while the watcher embeds)."""
        return bool(self._queue)

    def batches(self, stop: threading.Event, step_s: float, longest_s: float, idle_s: float):
        """The watcher's changes, as watchfiles gives them ({(None, absolute path)}): each
        batch gathered until `step_s` pass without a change or `longest_s` since its first;
        an empty batch after `idle_s` without any. Only a `complete` journal is a source:
        it subscribes to changes alone, where watchfiles (notify) also hears every file
        opened in the tree, which cost its thread ~0.4 s of CPU for each rg over the kernel."""
        while not stop.is_set():
            with self._queued:
                if not self._queue:
                    self._queued.wait(idle_s)
                if self._queue:
                    first = time.monotonic()
                    while True:
                        n = len(self._queue)
                        left = min(step_s, first + longest_s - time.monotonic())
                        if left <= 0:
                            break
                        self._queued.wait(left)
                        if len(self._queue) == n:
                            break
                got, self._queue = self._queue, []
                self.handed += len(got)
            yield {(None, os.path.join(self.root, r)) for r in got}

    def _watch_ov(self) -> None:
        """Watch the index's folder (its `config.toml` changes what is indexed)."""
        path = os.path.join(self.root, ".ov")
        if self._ov_wd < 0 and os.path.isdir(path) and not os.path.islink(path):
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), MASK)
            if wd >= 0:
                self._ov_wd = wd

    def _add_tree(self, rel: str, touch: bool) -> None:
        """Watch the folder `rel` and every folder under it; with `touch`, every path found
        is touched (a folder that appeared: its files were never seen by the journal)."""
        stack = [rel]
        while stack:
            d = stack.pop()
            path = os.path.join(self.root, d) if d else self.root
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), MASK)
            if wd < 0:
                import ctypes  # noqa: PLC0415

                err = ctypes.get_errno()
                if err in (2, 20):  # ENOENT, ENOTDIR: gone or replaced meanwhile (evented)
                    continue
                self._break(f"no watch on {d or '.'}: {os.strerror(err)}"
                            + (" (raise fs.inotify.max_user_watches)" if err == 28 else ""))
                self.complete = False  # not a source of changes any more (`ov.watch`)
                self.out_of_watches = self.out_of_watches or err == 28
                return
            was = self._wds.get(wd)
            if was is not None and was != d and self._same_folder(was, path):
                # one folder under two paths (a bind mount): an event names only one of them
                self._break(f"{d} and {was or '.'} are one folder (a bind mount)")
                return
            self._wds[wd] = d  # a folder moved within the tree keeps its watch: its new path
            try:
                with os.scandir(path) as it:
                    for e in it:
                        if e.name in ALWAYS_SKIPPED:
                            continue
                        r = f"{d}/{e.name}" if d else e.name
                        if touch:
                            self._touch(r)
                        try:
                            if e.is_dir(follow_symlinks=False):
                                stack.append(r)
                        except OSError:
                            continue
            except OSError:
                continue  # unreadable: what the walk cannot read, grep does not search

    def _same_folder(self, rel: str, path: str) -> bool:
        """Is `rel` (still, through folders alone: no link on the way) the folder at `path`?"""
        import stat  # noqa: PLC0415

        try:
            here = self.root
            for part in rel.split("/") if rel else []:
                here = os.path.join(here, part)
                if not stat.S_ISDIR(os.lstat(here).st_mode):
                    return False  # a link (or a file) now stands on the old path
            a = os.lstat(here)
            b = os.lstat(path)
        except OSError:
            return False
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    def _drain(self) -> None:
        """Read and record every event the kernel has queued."""
        with self._drain_lock:
            while self._fd >= 0:
                try:
                    buf = os.read(self._fd, 1 << 16)
                except OSError:  # BlockingIOError: the queue is empty
                    return
                if not buf:
                    return
                self._events(buf)

    def _events(self, buf: bytes) -> None:
        off, n = 0, len(buf)
        while off + _EVENT.size <= n:
            wd, mask, _cookie, size = _EVENT.unpack_from(buf, off)
            name = buf[off + _EVENT.size: off + _EVENT.size + size].rstrip(b"\0")
            off += _EVENT.size + size
            if mask & IN_Q_OVERFLOW:
                self._lost("the OS's event queue overflowed")
                continue
            if wd == self._ov_wd:
                if name == b"config.toml":
                    self._tell(".ov/config.toml")
                elif mask & IN_IGNORED:
                    self._ov_wd = -1
                continue
            base = self._wds.get(wd)
            if base is None:
                continue
            if mask & IN_IGNORED:  # the folder's watch is gone (deleted, unmounted)
                self._wds.pop(wd, None)
                continue
            if not name:  # the watched folder itself
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF) and base == "":
                    self._break("the tree's folder was moved or deleted")
                continue
            n_ = os.fsdecode(name)
            if n_ in ALWAYS_SKIPPED:
                if n_ == ".ov" and base == "" and mask & (IN_CREATE | IN_MOVED_TO):
                    self._watch_ov()
                continue
            rel = f"{base}/{n_}" if base else n_
            self._touch(rel)
            if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                self._add_tree(rel, touch=True)

    def _mounts_moved(self) -> None:
        """The mount table changed: a file system mounted or unmounted inside the tree hides
        or shows files with no event."""
        if _mounts_touching(self.root)[1] != self._inside:
            self._break("a file system was mounted or unmounted inside the tree "
                        "(restart the watcher)")

    def _serve(self) -> None:
        """Events as they come; each question answered after the queue is read."""
        import select  # noqa: PLC0415

        try:
            mounts = open(_MOUNTS, "rb")  # noqa: SIM115 - polled for the table's changes
            mounts.read()  # read once: select() then says when the table changes
        except OSError:
            mounts = None
        try:
            while not self._stop.is_set():
                sock = self._sock
                watched = [self._fd] + ([sock] if sock is not None else [])
                try:
                    ready, _, odd = select.select(watched, [], [mounts] if mounts else [], 0.5)
                except (OSError, ValueError):
                    return
                if odd:
                    mounts.seek(0)
                    mounts.read()
                    self._mounts_moved()
                if self._fd in ready:
                    self._drain()
                if sock is not None and sock in ready:
                    try:
                        conn, _ = sock.accept()
                    except OSError:
                        continue
                    with conn:
                        self._answer(conn)
        finally:
            if mounts is not None:
                mounts.close()

    def _answer(self, conn) -> None:
        try:
            conn.settimeout(ASK_TIMEOUT_S)
            brief = conn.recv(16).startswith(b"brief")
            reply = self.state(brief=brief)  # reads every queued event first
            conn.sendall(json.dumps(reply).encode("utf-8", "surrogateescape"))
        except OSError:
            pass
