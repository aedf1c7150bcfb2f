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
  path; the path goes into `touched`. A folder created or moved in is watched at once and
  everything in it is touched.
- `reset()` is called as a catch-up starts (it empties `touched`); `caught_up(mark)` as it
  ends. Once a catch-up that started after the last reset has finished, every file not
  touched since then has the index row of its current state: the journal is `ready`.
- grep connects to the socket beside the index (`journal.sock`). Before it answers, the
  journal reads every event the kernel has queued: inotify queues an event inside the
  system call that made the change, so every change finished before grep asked is in the
  answer. grep then reads every touched file (or compares its `lstat` with the index, as
  without a journal) and skips the files the index rules out and nobody touched.
- Anything the journal cannot vouch for makes it not ready, and grep does what it does
  without one (an `lstat` per file): an overflowing event queue, more than MAX_TOUCHED
  changed paths (both ask the watcher for a new catch-up: `wants_catch_up`), the tree's
  folder moved, a watch that could not be added (the OS's `max_user_watches`), a network
  or FUSE file system (changes made on another machine send no event).
- What inotify never reports, the journal cannot know: a file changed through a hard link
  outside the tree, or written through `mmap` without a `write` (git's fsmonitor shares
  both limits). `ov index` without `--watch`, or `--no-index`, sees them.
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
ASK_TIMEOUT_S = 1.0  # grep's wait for an answer before it stats every file
PROTOCOL = 1

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


def socket_path(db: Path) -> Path:
    return Path(db).with_name(SOCKET_NAME)


# -- grep's side -----------------------------------------------------------------------------

class Changes:
    """A journal's answer: the paths (relative to the root) touched `since` a point that
    names one journal and one catch-up (a listing refreshed at that point stays true
    but for the folders of these paths)."""

    __slots__ = ("since", "paths")

    def __init__(self, since: str, paths: set[str]) -> None:
        self.since = since
        self.paths = paths


def ask(db: Path, root: Path) -> Changes | None:
    """The paths (relative to `root`) changed since the index was brought up to date, from
    the journal of a watcher running on `root` with the index `db`; None when there is no
    such journal or it cannot vouch for the index (then every file must be checked)."""
    got = _reply(db, root)
    if got is None or not got.get("ready"):
        return None
    touched, since = got.get("touched"), got.get("since")
    if not isinstance(touched, list) or not isinstance(since, str):
        return None
    return Changes(since, set(touched))


def status(db: Path, root: Path) -> dict | None:
    """What `ov status` says of the journal of a watcher running on `root` with the index
    `db`: {"ready", "not_ready" (why not), "changed" (paths touched since its catch-up)};
    None when no watcher serves one."""
    got = _reply(db, root)
    if got is None:
        return None
    touched = got.get("touched")
    return {"ready": bool(got.get("ready")), "not_ready": str(got.get("not_ready") or ""),
            "changed": len(touched) if isinstance(touched, list) else None}


def _reply(db: Path, root: Path) -> dict | None:
    """The journal's answer for this root and index, or None (no socket, nobody listening,
    another tree's journal, a garbled answer)."""
    path = socket_path(db)
    if not os.path.exists(path) or len(os.fsencode(path)) > 100:
        return None
    import _socket  # noqa: PLC0415 - `socket` costs grep ~3 ms more to import, for enums

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(ASK_TIMEOUT_S)
        s.connect(os.fspath(path))
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

def _remote_fs(path: str) -> str | None:
    """The type of a network or FUSE file system holding `path`, else None."""
    best, kind = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mnt = fields[1].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, kind = mnt, fields[2]
    except OSError:
        return None
    if kind and (kind in _REMOTE or kind.startswith("fuse")):
        return kind
    return None


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
        self._touched: set[str] = set()
        self._epoch = 0  # bumped by each reset
        self._id = f"{os.getpid()}-{time.time_ns()}"  # this journal among all that were
        self._ready = False
        self.not_ready = "the watcher's first catch-up has not finished"
        self.wants_catch_up = False
        self._broken: str | None = None  # set for good: nothing but a new journal mends it
        self._stop = threading.Event()
        self._sock = None  # the listening socket
        self._sock_id: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None

    # -- life --

    @classmethod
    def open(cls, root: Path, db: Path, warn=lambda _m: None) -> Journal | None:
        """A journal watching every folder under `root`, its socket listening; None where
        it cannot be kept (told to `warn` when that is a surprise)."""
        if not sys.platform.startswith("linux"):
            return None
        import ctypes.util  # noqa: PLC0415 - the watcher's alone; grep asks over a socket
        sock_path = socket_path(db)
        if len(os.fsencode(sock_path)) > 100:  # sun_path's limit
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            warn(f"no change journal: inotify: {os.strerror(ctypes.get_errno())}")
            return None
        j = cls(root, db, fd, libc)
        remote = _remote_fs(j.root)
        if remote:
            j._break(f"the tree is on a {remote} file system, whose changes may come unseen")
        else:
            j._add_tree("", touch=False)
        try:
            j._listen(sock_path)
        except OSError as e:
            warn(f"no change journal: {sock_path}: {e.strerror or e}")
            j._close_fd()
            return None
        if j._broken is not None:  # served all the same: `ov status` says why it cannot vouch
            warn(f"the change journal cannot vouch for the index ({j._broken}): grep stats each file")
        j._thread = threading.Thread(target=j._serve, name="ov-journal", daemon=True)
        j._thread.start()
        return j

    def _listen(self, path: Path) -> None:
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
        except OSError:
            s.close()
            raise
        st = os.stat(path)
        self._sock, self._sock_id = s, (st.st_dev, st.st_ino)
        self._sock_path = path

    def close(self) -> None:
        """Stop serving, remove the socket (if still ours) and the watches."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
        if self._sock is not None:
            try:
                st = os.stat(self._sock_path)
                if (st.st_dev, st.st_ino) == self._sock_id:
                    os.unlink(self._sock_path)
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        self._close_fd()

    def _close_fd(self) -> None:
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
        with self._lock:
            if mark == self._epoch and self._broken is None and not self.wants_catch_up:
                self._ready = True
                self.not_ready = ""

    def state(self) -> dict:
        """What `ov status` and grep are told (grep gets the touched paths too)."""
        self._drain()
        with self._lock:
            return {"protocol": PROTOCOL, "root": self.root, "db": self.db, "ready": self._ready,
                    "not_ready": self.not_ready, "watched_folders": len(self._wds),
                    "touched": len(self._touched)}

    # -- events --

    def _break(self, why: str) -> None:
        with self._lock:
            self._broken = why
            self._ready = False
            self.not_ready = why

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
            self._touched.add(rel)
            over = len(self._touched) > MAX_TOUCHED
        if over:
            self._lost(f"more than {MAX_TOUCHED} paths changed")

    @staticmethod
    def _libc_errno() -> int:
        import ctypes  # noqa: PLC0415

        return ctypes.get_errno()

    def _add_tree(self, rel: str, touch: bool) -> None:
        """Watch the folder `rel` and every folder under it; with `touch`, every path found
        is touched (a folder that appeared: its files were never seen by the journal)."""
        stack = [rel]
        while stack:
            d = stack.pop()
            path = os.path.join(self.root, d) if d else self.root
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), MASK)
            if wd < 0:
                err = self._libc_errno()
                if err in (2, 20):  # ENOENT, ENOTDIR: gone or replaced meanwhile (evented)
                    continue
                self._break(f"no watch on {d or '.'}: {os.strerror(err)}"
                            + (" (raise fs.inotify.max_user_watches)" if err == 28 else ""))
                return
            self._wds[wd] = d
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

    def _drain(self) -> None:
        """Read and record every event the kernel has queued."""
        with self._drain_lock:
            while self._fd >= 0:
                try:
                    buf = os.read(self._fd, 1 << 16)
                except BlockingIOError:
                    return
                except OSError:
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
                continue
            rel = f"{base}/{n_}" if base else n_
            self._touch(rel)
            if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                self._add_tree(rel, touch=True)

    def _serve(self) -> None:
        """Events as they come; each question answered after the queue is read."""
        import select  # noqa: PLC0415

        assert self._sock is not None
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._fd, self._sock], [], [], 0.5)
            except (OSError, ValueError):
                return
            if self._fd in ready:
                self._drain()
            if self._sock in ready:
                try:
                    conn, _ = self._sock.accept()
                except OSError:
                    continue
                with conn:
                    self._answer(conn)

    def _answer(self, conn) -> None:
        self._drain()  # every change finished before the question was asked
        with self._lock:
            reply = {"protocol": PROTOCOL, "root": self.root, "db": self.db,
                     "ready": self._ready, "not_ready": self.not_ready,
                     "since": f"{self._id}:{self._epoch}",
                     "touched": list(self._touched) if self._ready else None}
        try:
            conn.settimeout(ASK_TIMEOUT_S)
            conn.sendall(json.dumps(reply).encode("utf-8", "surrogateescape"))
        except OSError:
            pass
