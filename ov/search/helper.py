"""grep's second process: a forked helper that searches every other block of files.

A search of a whole tree is bound by one open, read and close per file and by the regex
engine, one file at a time (a thread pool measured no faster: the GIL). Past the first
HELPER_AFTER files, a forked helper process takes every other block of BLOCK files: it
walks the same tree in the same order, searches the files of its blocks and sends the
parent, block by block, what each file holds (nothing, binary, unreadable, or its
records as plain tuples, up to SHIP_MAX of them). The parent builds the records, counts
and limits from those, in its own order, so the answer is the one it would find alone.
A helper block is checked name by name against the parent's own walk, and a block whose
names differ (the tree changed between the two walks), or that never arrives (the helper
died), is searched by the parent itself.

The search of one file is the driver's (`ov.search.files`), handed in: this module owns
the protocol (the answers, the wire form of a record, when a helper is worth starting).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from ov.model import ContextLine, Match, Submatch

BLOCK = 64
HELPER_AFTER = 512
# A file with more records than this is left to the parent: rebuilding a record from its
# tuple costs the parent about what finding it does (`\)$`, 234,256 lines: 1.46 s alone,
# 1.97 s with every record shipped, 1.30 s with at most 16 a file).
SHIP_MAX = 16
# per-file answers of the helper
NO_MATCH, SEARCH, BINARY, UNREADABLE, FOUND, BINARY_MATCH = 0, 1, 2, 3, 4, 5


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
    """The forked helper of one grep run (see above); `verdict` is the parent's side."""

    def __init__(self, first: int, make_files: Callable[[], Iterator[tuple[str, str]]],
                 check: Callable[[str, str], tuple[int, object]]) -> None:
        self.first = first  # the helper's blocks: first, first + 2, first + 4...
        self.size = BLOCK  # files a block
        self.block = -1
        self.answers: tuple[list[str], list[tuple[int, object]]] | None = None
        rfd, wfd = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:  # a process limit, no memory: the caller searches alone
            os.close(rfd)
            os.close(wfd)
            raise
        if self.pid == 0:  # the helper: never returns
            os.close(rfd)
            code = 1
            try:
                self._serve(wfd, make_files, check)
                code = 0
            finally:
                os._exit(code)  # no flush of the parent's buffers, no atexit
        os.close(wfd)
        self.pipe = os.fdopen(rfd, "rb")

    def owns(self, block: int) -> bool:
        return block >= self.first and (block - self.first) % 2 == 0

    def _serve(self, wfd: int, make_files, check) -> None:
        import marshal  # noqa: PLC0415

        names: list[str] = []
        answers: list[tuple[int, object]] = []
        current = -1

        def send() -> None:
            body = marshal.dumps((names, answers))
            msg = b"%d %d\n" % (current, len(body)) + body
            while msg:
                msg = msg[os.write(wfd, msg):]

        for i, (rel, abspath) in enumerate(make_files()):
            block = i // BLOCK
            if not self.owns(block):
                continue
            if block != current:
                if names:
                    send()
                names, answers, current = [], [], block
            names.append(rel)
            try:
                answers.append(check(rel, abspath))
            except BaseException:  # the parent searches it and reports what goes wrong
                answers.append((SEARCH, None))
        if names:
            send()

    def verdict(self, block: int, offset: int, rel: str, mode: str | None = None) -> tuple[int, object]:
        """The helper's (answer, records) for the file at `offset` in `block` named
        `rel`; (SEARCH, None) when the parent must search it itself. With `mode`
        "matches", the records come back as `Match` objects."""
        if block != self.block:
            self.block = block
            self.answers = self._receive(block)
        got = self.answers
        if got is None:
            return SEARCH, None
        names, answers = got
        if offset >= len(names) or names[offset] != rel:
            self.answers = None  # the trees differ: the parent searches the rest
            return SEARCH, None
        answer, found = answers[offset]
        if answer == FOUND and mode == "matches":
            tuples, more = found
            found = ([record(rel, t) for t in tuples], more)
        return answer, found

    def _receive(self, block: int):
        import marshal  # noqa: PLC0415

        while True:
            head = self.pipe.readline()
            if not head:
                return None  # the helper ended early
            try:
                got, size = (int(x) for x in head.split())
            except ValueError:
                return None
            body = self.pipe.read(size)
            if len(body) != size:
                return None
            if got < block:
                continue  # a block the parent no longer waits for
            if got > block:
                return None  # the helper had no files in this block: the walks differ
            try:
                return marshal.loads(body)
            except (ValueError, EOFError, TypeError):
                return None

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.pipe.close()


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


def start(i: int, search, limit: int, mode: str,
          make_files: Callable[[], Iterator[tuple[str, str]]]) -> Helper | None:
    """A helper for the blocks after the one holding file `i`, or None when no pipe or no
    fork can be had (EMFILE, EAGAIN): the parent then searches alone."""
    try:
        return Helper(i // BLOCK + 1, make_files, shipping(search, limit, mode))
    except OSError:
        return None
