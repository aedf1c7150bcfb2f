"""grep's second process: a forked helper that walks on while the parent searches.

A search of a whole tree is bound by the walk (the ignore rules of each folder, a
decision for each entry), by one open, read and close per file and by the regex engine
(a thread pool measured no faster: the GIL). Past the first HELPER_AFTER files, with a
core idle, grep forks a helper, which goes on with the walk where the parent stood (the
tree is walked once), and sends the parent the files in walk order, block by block
over a socket. The parent searches them as they come. While the parent has AHEAD blocks
or more still to search, the helper searches the next block itself and sends what each
file holds instead (nothing, binary, unreadable, or its records as plain tuples, up to
SHIP_MAX of them): so neither process idles, whichever of walking and searching costs
more. The parent yields every file's answer in walk order and builds the records,
counts and limits from them, so the answer is the one it would find alone. What the
walk tells on the way (warnings, unreadable files, a depth cut) travels with the files,
in its place. Should the helper end before the walk does, the parent walks on itself
from where it forked, past the files it already has.

The search of one file is the driver's (`ov.search.files`), handed in: this module owns
the protocol (the answers, the wire form of a record, when a helper is worth starting).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import islice

from ov.model import ContextLine, Match, Submatch

BLOCK = 64  # files a block
AHEAD = 3  # blocks of the parent's to search, past which the helper searches a block itself
HELPER_AFTER = 512
# A file with more records than this is left to the parent: rebuilding a record from its
# tuple costs the parent about what finding it does (`\)$`, 234,256 lines: 1.46 s alone,
# 1.97 s with every record shipped, 1.30 s with at most 16 a file).
SHIP_MAX = 16
# per-file answers of the helper
NO_MATCH, SEARCH, BINARY, UNREADABLE, FOUND, BINARY_MATCH = 0, 1, 2, 3, 4, 5
_HEAD = 4  # a message: its length (4 bytes, little-endian), then its marshal body
_NOTE = (NO_MATCH, None)  # the answer for an item that is no file: the walk's note


def idle_core() -> bool:
    """Whether a second process would have a core to itself: with every core busy, the
    parent would wait on a helper that is not running (0.10 -> 0.13 s for a search of the
    standard library on 2 cores, one of them busy; 0.10 -> 0.07 s with both idle).

    What counts is the moment: the number of tasks running now (Linux's /proc/loadavg,
    this process among them), else the one-minute load average."""
    if not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        with open("/proc/loadavg", "rb") as fh:
            others = int(fh.read().split()[3].split(b"/")[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            others = os.getloadavg()[0]
        except (AttributeError, OSError):
            others = 0
    return others <= cores - 2


def single_threaded() -> bool:
    """Whether this process runs no other thread: a forked child holds copies of the locks
    other threads held at that moment, and may wait on one forever (an embedding program
    that greps from a worker thread; CPython 3.12 warns of fork with threads)."""
    import sys  # noqa: PLC0415

    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


class Helper:
    """The forked helper of one grep run (see above); `stream` is the parent's side."""

    def __init__(self, items: Iterator[tuple], check: Callable[[str, str], tuple[int, object]]) -> None:
        import socket  # noqa: PLC0415

        ours, theirs = socket.socketpair()
        try:
            self.pid = os.fork()
        except OSError:  # a process limit, no memory: the caller searches alone
            ours.close()
            theirs.close()
            raise
        if self.pid == 0:  # the helper: never returns
            ours.close()
            code = 1
            try:
                _walk_on(theirs, items, check)
                code = 0
            finally:
                os._exit(code)  # no flush of the parent's buffers, no atexit
        theirs.close()
        self.sock = ours
        self.inbox = ours.makefile("rb")
        # a dead helper is no SIGPIPE, and a full socket no wait
        self.flags = getattr(socket, "MSG_NOSIGNAL", 0) | getattr(socket, "MSG_DONTWAIT", 0)
        self.received = 0  # files received
        self.finished = False  # the walk's end received

    def stream(self, items: Iterator[tuple], mode: str) -> Iterator[tuple[str, str, int, object]]:
        """(relative path, absolute path, answer, found) for each file of the walk past the
        fork, in walk order: (SEARCH, None) for the caller to search it now, or the
        helper's answer (with `mode` "matches", records as `Match` objects). An item
        whose relative path is None is the walk's note, passed on unsearched. `items`
        is the walk as it stood at the fork: the parent's own, should the helper end
        early."""
        while True:
            got = self._receive()
            if got is None:
                break
            block, answers = got
            if answers is None:
                for rel, abspath in block:
                    yield rel, abspath, SEARCH if rel is not None else NO_MATCH, None
                try:  # one block of the parent's searched
                    self.sock.send(b"\x01", self.flags)
                except OSError:
                    pass
            else:
                for (rel, abspath), (answer, found) in zip(block, answers):
                    if answer == FOUND and mode == "matches":
                        tuples, more, stopped = found
                        found = ([record(rel, t) for t in tuples], more, stopped)
                    yield rel, abspath, answer, found
            self.received += sum(rel is not None for rel, _ in block)
        if self.finished:
            return
        skip = self.received  # the helper ended early: the parent walks on past them
        for rel, abspath in items:
            if skip:
                skip -= rel is not None
                continue
            yield rel, abspath, SEARCH if rel is not None else NO_MATCH, None

    def _receive(self) -> tuple[list, list | None] | None:
        """The helper's next block (its files, their answers or None), or None at the
        walk's end (`finished`) or when the helper is gone."""
        import marshal  # noqa: PLC0415

        head = self.inbox.read(_HEAD)
        if len(head) < _HEAD:
            return None
        size = int.from_bytes(head, "little")
        body = self.inbox.read(size)
        if len(body) < size:
            return None
        try:
            got = marshal.loads(body)
        except (ValueError, EOFError, TypeError):
            return None
        if got is None:
            self.finished = True
            return None
        block, answers = got
        if answers is not None and len(answers) != len(block):
            return None
        return block, answers

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.inbox.close()
        self.sock.close()


def _walk_on(sock, items: Iterator[tuple], check: Callable[[str, str], tuple[int, object]]) -> None:
    """The helper's loop: the walk's next block of files sent to the parent, bare while
    the parent has fewer than AHEAD of them to search, else with their answers; None at
    the walk's end."""
    import marshal  # noqa: PLC0415
    import socket  # noqa: PLC0415

    dontwait = getattr(socket, "MSG_DONTWAIT", 0)
    bare = done = 0  # the parent's blocks sent, and searched (one byte back for each)
    while True:
        block = list(islice(items, BLOCK))
        if not block:
            break
        try:
            done += len(sock.recv(1 << 12, dontwait))
        except BlockingIOError:
            pass
        answers = None
        if bare - done >= AHEAD:
            answers = []
            for rel, abspath in block:
                if rel is None:  # the walk's note
                    answers.append(_NOTE)
                    continue
                try:
                    answers.append(check(rel, abspath))
                except BaseException:  # the parent searches it and reports what goes wrong
                    answers.append((SEARCH, None))
        else:
            bare += 1
        body = marshal.dumps((block, answers))
        sock.sendall(len(body).to_bytes(_HEAD, "little") + body)
    body = marshal.dumps(None)
    sock.sendall(len(body).to_bytes(_HEAD, "little") + body)


def record_tuple(m: Match) -> tuple:
    return (m.line, m.content, [(s.start, s.end, s.text) for s in m.submatches],
            [(c.line, c.content) for c in m.before_context],
            [(c.line, c.content) for c in m.after_context])


def record(rel: str, t: tuple) -> Match:
    line, content, subs, before, after = t
    return Match(rel, line, content, [Submatch(*s) for s in subs],
                 [ContextLine(*c) for c in before], [ContextLine(*c) for c in after])


def shipping(search: Callable[[str, str, int], tuple[int, object]], limit: int,
             mode: str) -> Callable[[str, str], tuple[int, object]]:
    """`search` as the helper runs it: its records as tuples (marshal sends no objects),
    and a file with more than SHIP_MAX records left to the parent."""

    def check(rel: str, abspath: str) -> tuple[int, object]:
        # one record past SHIP_MAX says the file is the parent's, without finding the rest
        answer, found = search(rel, abspath, min(limit, SHIP_MAX + 1))
        if answer == FOUND and mode == "matches":
            records, more, stopped = found  # type: ignore[misc]
            if len(records) > SHIP_MAX:
                return SEARCH, None
            found = ([record_tuple(r) for r in records], more, stopped)
        return answer, found

    return check


def start(items: Iterator[tuple], search, limit: int, mode: str) -> Helper | None:
    """A helper that walks on with `items` (the rest of the walk, notes included: see
    `ov.search.files._noted`), or None when no socket or no fork can be had (EMFILE,
    EAGAIN): the parent then searches alone."""
    try:
        return Helper(items, shipping(search, limit, mode))
    except OSError:
        return None
