"""grep's second process: a forked helper that searches the files the parent hands it.

A search of a whole tree is bound by the walk, by one open, read and close per file and
by the regex engine (a thread pool measured no faster: the GIL). Past the first
HELPER_AFTER files, with a core idle, grep forks a helper. The tree is walked once, by
the parent: it hands the helper blocks of BLOCK files over a socket, up to AHEAD blocks
the helper has not answered, and the helper searches them and answers block by block
what each file holds (nothing, binary, unreadable, or its records as plain tuples, up
to SHIP_MAX of them). A block the helper has no room for is the parent's: searched in
its turn, or before it while the parent waits for an answer to an earlier block (so
neither process idles while the other has work, whichever of walking and searching
costs more). The parent yields every file's answer in walk order and builds the
records, counts and limits from them, so the answer is the one it would find alone. A
block whose answer never comes (the helper died) is searched by the parent.

The search of one file is the driver's (`ov.search.files`), handed in: this module owns
the protocol (the answers, the wire form of a record, the schedule, when a helper is
worth starting).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from itertools import islice

from ov.model import ContextLine, Match, Submatch

BLOCK = 64  # files a block
AHEAD = 3  # blocks handed to the helper and not yet answered, at most
PENDING = 16  # blocks walked and not yet yielded, at most (the memory of searching ahead)
# the bytes of block messages the helper has not answered, at most: a socket holds them
# all, so the parent never waits to send
SEND_ROOM = 48 << 10
HELPER_AFTER = 512
# A file with more records than this is left to the parent: rebuilding a record from its
# tuple costs the parent about what finding it does (`\)$`, 234,256 lines: 1.46 s alone,
# 1.97 s with every record shipped, 1.30 s with at most 16 a file).
SHIP_MAX = 16
# per-file answers of the helper
NO_MATCH, SEARCH, BINARY, UNREADABLE, FOUND, BINARY_MATCH = 0, 1, 2, 3, 4, 5
_HEAD = 4  # a message: its length (4 bytes, little-endian), then its marshal body
_NOTE = (NO_MATCH, None)  # the answer for an item that is no file (see `stream`)


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


# the owner of a block in the parent's queue
_HELPERS, _OWN = 0, 1


class Helper:
    """The forked helper of one grep run (see above); `stream` is the parent's side."""

    def __init__(self, check: Callable[[str, str], tuple[int, object]]) -> None:
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
                _serve(theirs, check)
                code = 0
            finally:
                os._exit(code)  # no flush of the parent's buffers, no atexit
        theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.nosignal = getattr(socket, "MSG_NOSIGNAL", 0)  # a dead helper is no SIGPIPE
        self.inbox = bytearray()
        self.unsent = b""  # the end of a message the socket had no room for yet
        self.sent: deque[list] = deque()  # blocks handed over and not answered, in order
        self.unanswered = 0  # their message bytes
        self.alive = True

    def stream(self, files: Iterator[tuple[str, str]], ahead: Callable[[str, str], tuple[int, object]],
               mode: str) -> Iterator[tuple[str, str, int, object]]:
        """(relative path, absolute path, answer, found) for each of `files`, in their
        order: the helper's answer, or the parent's, found by `ahead(rel, abspath)` while
        it waited for the helper, or (SEARCH, None): the caller searches it now. With
        `mode` "matches", found records come back as `Match` objects. An item whose
        relative path is None is no file: it passes through in its place, unsearched."""
        queue: deque[list] = deque()  # [files, owner, answers], in walk order
        walking = True
        while True:
            self._pump(wait=False)
            while walking and self._room():
                block = list(islice(files, BLOCK))
                if not block:
                    walking = False
                    break
                queue.append(self._send([block, _HELPERS, None]))
                if queue[-1][1] == _OWN:
                    break  # no room in the socket: the parent's, and no more for now
            if not queue:
                if not walking:
                    return
                block = list(islice(files, BLOCK))  # the helper took no more (it died)
                walking = bool(block)
                if walking:
                    queue.append([block, _OWN, None])
                continue
            front = queue[0]
            if front[1] == _OWN or front[2] is not None:
                queue.popleft()
                yield from _answered(front, mode)
                continue
            mine = next((b for b in queue if b[1] == _OWN and b[2] is None), None)
            if mine is not None:  # search the parent's next block while the helper works
                mine[2] = [ahead(rel, abspath) if rel is not None else _NOTE
                           for rel, abspath in mine[0]]
            elif walking and len(queue) < PENDING:
                block = list(islice(files, BLOCK))
                walking = bool(block)
                if walking:
                    queue.append([block, _OWN, None])
            else:
                self._pump(wait=True)

    def _room(self) -> bool:
        return self.alive and not self.unsent and len(self.sent) < AHEAD

    def _send(self, block: list) -> list:
        """Hand `block` to the helper, or keep it for the parent (no room in the socket,
        no helper): the block, its owner set."""
        import marshal  # noqa: PLC0415

        body = marshal.dumps(block[0])
        msg = len(body).to_bytes(_HEAD, "little") + body
        if self.unanswered + len(msg) > SEND_ROOM:
            block[1] = _OWN
            return block
        try:
            n = self.sock.send(msg, self.nosignal)
        except BlockingIOError:
            block[1] = _OWN
            return block
        except OSError:
            self._lost()
            block[1] = _OWN
            return block
        self.unsent = msg[n:]
        self.unanswered += len(msg)
        block.append(len(msg))
        self.sent.append(block)
        return block

    def _pump(self, wait: bool) -> None:
        """Send what is left of a message and take in the helper's answers; with `wait`,
        until at least one more block is answered (or the helper is gone)."""
        import marshal  # noqa: PLC0415
        import select  # noqa: PLC0415

        if wait and not self.sent:
            return
        waiting = len(self.sent) if wait else 0
        while self.alive:
            if wait:
                select.select([self.sock], [self.sock] if self.unsent else [], [])
            if self.unsent:
                try:
                    self.unsent = self.unsent[self.sock.send(self.unsent, self.nosignal):]
                except BlockingIOError:
                    pass
                except OSError:
                    self._lost()
                    return
            ended = False
            try:
                while True:
                    got = self.sock.recv(1 << 18)
                    if not got:
                        ended = True  # the helper ended: its answers so far stand
                        break
                    self.inbox += got
            except BlockingIOError:
                pass
            except OSError:
                ended = True
            while len(self.inbox) >= _HEAD and self.sent:
                size = int.from_bytes(self.inbox[:_HEAD], "little")
                if len(self.inbox) < _HEAD + size:
                    break
                try:
                    answers = marshal.loads(self.inbox[_HEAD:_HEAD + size])
                except (ValueError, EOFError, TypeError):
                    self._lost()
                    return
                del self.inbox[:_HEAD + size]
                block = self.sent.popleft()
                self.unanswered -= block.pop()
                if isinstance(answers, list) and len(answers) == len(block[0]):
                    block[2] = answers
                else:
                    block[1] = _OWN
            if ended:
                self._lost()
                return
            if not wait or len(self.sent) < waiting:
                return

    def _lost(self) -> None:
        """The helper is gone: the blocks it did not answer are the parent's."""
        self.alive = False
        for block in self.sent:
            block.pop()
            block[1] = _OWN
        self.sent.clear()
        self.unsent = b""

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.sock.close()


def _answered(block: list, mode: str) -> Iterator[tuple[str, str, int, object]]:
    files, owner, answers = block[0], block[1], block[2]
    if answers is None:
        for rel, abspath in files:
            yield rel, abspath, SEARCH, None
        return
    for (rel, abspath), (answer, found) in zip(files, answers):
        if answer == FOUND and mode == "matches" and owner == _HELPERS:
            tuples, more = found
            found = ([record(rel, t) for t in tuples], more)
        yield rel, abspath, answer, found


def _serve(sock, check: Callable[[str, str], tuple[int, object]]) -> None:
    """The helper's loop: a block of (relative, absolute) paths in, their answers out,
    until the parent closes the socket."""
    import marshal  # noqa: PLC0415

    inbox = sock.makefile("rb")
    while True:
        head = inbox.read(_HEAD)
        if len(head) < _HEAD:
            return
        size = int.from_bytes(head, "little")
        body = inbox.read(size)
        if len(body) < size:
            return
        answers: list[tuple[int, object]] = []
        for rel, abspath in marshal.loads(body):
            if rel is None:  # the walk's note, the parent's to read (see `stream`)
                answers.append(_NOTE)
                continue
            try:
                answers.append(check(rel, abspath))
            except BaseException:  # the parent searches it and reports what goes wrong
                answers.append((SEARCH, None))
        body = marshal.dumps(answers)
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
            records, more = found  # type: ignore[misc]
            if len(records) > SHIP_MAX:
                return SEARCH, None
            found = ([record_tuple(r) for r in records], more)
        return answer, found

    return check


def start(search, limit: int, mode: str) -> Helper | None:
    """A helper for this run, or None when no socket or no fork can be had (EMFILE,
    EAGAIN): the parent then searches alone."""
    try:
        return Helper(shipping(search, limit, mode))
    except OSError:
        return None
