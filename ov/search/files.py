"""`ov grep`'s driver: the files under the PATH arguments, each read once and searched,
in walk order, up to the node limit; `--files` lists them instead.

`iter_grep` yields records as files are searched (for JSON Lines); `grep` collects them
into a `GrepResult`. Both stop at the node limit, after checking that one more record
exists, so `truncated` is never a guess. What a run searches and reports besides its
records is `ov.search.scope`'s; the index's prefilter and tags, `ov.search.prefilter`;
the matcher, `ov.search.matcher` (imported by grep only: `--files` and glob need neither
it nor `regex`); the second process, `ov.search.helper`.

The loop over files (`_grep_files`) is the hot path: its per-file work stays inline,
and what happens once a run, once a file with matches, or only with a helper is in
functions of its own.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from pathlib import Path
TYPE_CHECKING = False  # `typing` costs ~2.5 ms of a grep's start

from ov import config
from ov.config import WalkOptions
from ov.errors import OvError
from ov.kinds import type_matcher
from ov.model import FileCount, GrepResult, Match
from ov.paths import listing_dir
from ov.read import UTF16_BOMS, decode
from ov.search import helper as helpers
from ov.globs import PathFilter
from ov.search.helper import BINARY, BINARY_MATCH, FOUND, NO_MATCH, SEARCH, UNREADABLE
from ov.search.prefilter import Prefilter, index_candidates, prefiltered, tagged
from ov.search.scope import (LISTINGS, Candidates, GrepStats, check_excludes, displayer, exclusions,
                             file_paths, grep_result, grep_walk_options, limited_stats, links_out, not_files,
                             parse_tags, plan_roots, walked_entries)

if TYPE_CHECKING:
    from ov.search.matcher import Pattern

RG_BUFFER = 64 * 1024  # ripgrep's first buffer (ov.search.matcher.RG_BUFFER; a test holds them equal)


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


# A file larger than this is searched a block at a time (issue 17: a 187 MB file took
# 381-586 MB of RSS read whole), when each line is searched alone (no -U, no context).
STREAM_BYTES = 32 << 20
BLOCK_BYTES = 8 << 20


# (UTF16_BOMS, ov.read: UTF-16 is read whole, NULs and all, and transcoded)


class _Big(Exception):
    """read_searched's signal that the file is over `stream_over` bytes."""


def read_searched(abspath: str, stream_over: int | None = None) -> bytes:
    """The bytes of a file that grep may search.

    Only ripgrep's first buffer (64 KiB) is read when it holds a NUL byte: where ripgrep
    stops depends on nothing past that NUL (see `binary_cutoff`), so the rest of a
    binary file is never read. Raw `os.read` calls: no buffered file object per file.
    O_NONBLOCK: never block on a fifo put where a file was walked.
    """
    fd = os.open(abspath, _READ_FLAGS)
    try:
        head = os.read(fd, RG_BUFFER)
        if not head or (b"\x00" in head and head[:2] not in UTF16_BOMS):
            return head
        if len(head) < RG_BUFFER:
            # a short read of a regular file (all the walk yields) is its end: most files
            # cost one read, not a second to see the end
            return head
        size = os.fstat(fd).st_size
        if stream_over is not None and size > stream_over:
            raise _Big  # searched a block at a time (search_blocks): memory stays bounded
        # A larger file in one buffer: pread from the start (64 KiB read twice), rather
        # than chunks joined (a copy of the whole file: 1.0 of 14 s for drivers/ profiled)
        data = os.pread(fd, max(size, len(head)) + 1, 0)
        if len(data) <= size:
            return data
        parts = [data]
        os.lseek(fd, len(data), os.SEEK_SET)
        while True:  # to the end of the file, however it grew since it was walked
            chunk = os.read(fd, 1 << 22)
            if not chunk:
                break
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def search_blocks(pat: Pattern, rel: str, abspath: str, cap: int, mode: str) -> tuple[int, object]:
    """`_grep_files`'s search of one big file, BLOCK_BYTES at a time, each block cut
    after its last newline (a UTF-8 character never spans one) and its line numbers
    shifted by the lines before it: memory stays near two blocks whatever the file's
    size. A NUL past the first 64 KiB hands the file back to the whole-file search
    (ripgrep's cut-off depends on where its buffers fell)."""
    from ov.search.matcher import count_lines, line_matches, matched_lines  # noqa: PLC0415

    try:
        fd = os.open(abspath, _READ_FLAGS)
    except OSError:
        return UNREADABLE, None
    lines_before = 0
    carry = b""
    records: list = []
    count = 0
    first = True
    try:
        while True:
            try:
                chunk = os.read(fd, BLOCK_BYTES)
            except OSError:
                return UNREADABLE, None
            if b"\x00" in chunk:
                return SEARCH, None
            data = carry + chunk
            if chunk:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # one line longer than a block: read on
                    carry = data
                    continue
                block, carry = data[:cut], data[cut:]
            else:
                block, carry = data, b""
            if block and pat.may_match(block):
                text = decode(block) if first else block.decode("utf-8", "replace")
                if mode == "files":
                    if matched_lines(pat, text, 1)[0]:
                        return FOUND, (1,)
                elif mode == "count":
                    count += count_lines(pat, text)[0]
                else:
                    got, more = line_matches(pat, rel, text, cap - len(records))
                    for m in got:
                        m.line += lines_before
                    records += got
                    if more:
                        return FOUND, (records, True, -1)
            first = False
            lines_before += block.count(b"\n")
            if not chunk:
                break
    finally:
        os.close(fd)
    if mode == "count":
        return (FOUND, (count,)) if count else (NO_MATCH, None)
    if mode == "matches" and records:
        return FOUND, (records, False, -1)
    return NO_MATCH, None


def _searchable(root: Path, rels: list[str], opts: WalkOptions, st: GrepStats, *, excluded,
                pfilter, tfilter, allowed, may_hold, use_listing: bool = False,
                named: frozenset[str] = frozenset()) -> Iterator[tuple[str, str]]:
    """(relative, absolute) paths of the files a grep reads, in walk order. A file named
    on the command line (`named`) is searched whatever -g and -t say, as rg searches it."""
    # the listing cache holds what the ignore files keep, and the names they left out: an
    # override that keeps one of those walks afresh (ov.walk.cached_walk)
    cache_dir = listing_dir(root) if use_listing else None
    filtered = excluded is not None or pfilter is not None or tfilter is not None

    def passes(rel: str) -> bool:
        """--exclude-uri, then -g and -t/-T, which a file named on the command line passes."""
        if excluded is not None and excluded(rel):
            return False
        return rel in named or ((pfilter is None or pfilter(rel)) and (tfilter is None or tfilter(rel)))

    # -L: the walk leaves out what the filters do, so a link out of the tree they leave out
    # is never said to be one (`-L -t py` said `sub/out.txt`, which rg never reads)
    keep = passes if opts.follow and filtered else None
    if may_hold is None:  # size and mtime serve the index prefilter only
        files = file_paths(root, rels, opts, st, cache_dir, keep)
    elif isinstance(may_hold, Prefilter):
        # with a change journal, the files to read come from the listing without a pass
        # over every file; else each file the index rules out is stat'ed
        picked = (may_hold.trusted_files(root, rels, opts, st, cache_dir)
                  if cache_dir is not None else None)
        files = iter(picked) if picked is not None else prefiltered(
            file_paths(root, rels, opts, st, cache_dir, keep), may_hold, st)
    else:
        files = ((e.path, e.abspath) for e in walked_entries(root, rels, opts, st, keep=keep)
                 if may_hold(e))
    if not filtered and allowed is None:
        yield from files  # no per-path test: one generator less per file
        return
    for rel, abspath in files:
        # Tested again per path: a gitignore line cannot hold every name (a trailing
        # tab or CR, a newline), so the walk alone does not leave out all of them.
        if passes(rel) and (allowed is None or rel in allowed):
            yield rel, abspath


def _utf16(abspath: str) -> bool:
    """Whether a file starts with a UTF-16 byte order mark."""
    with open(abspath, "rb") as f:
        return f.read(2) in UTF16_BOMS


def _searcher(pat: Pattern, mode: str, before: int, after: int, invert: bool,
              max_count: int | None, named: frozenset[str],
              binary_lines: bool = False) -> Callable[[str, str, int], tuple[int, object]]:
    """`search(rel, abspath, cap)`: what one file holds, (UNREADABLE | BINARY |
    NO_MATCH, None), (BINARY_MATCH, NUL offset) or (FOUND, found) where found is (1,)
    for -l, (count,) for -c, else (records, more, stopped): up to `cap` records, whether
    more exist, and the offset of the NUL that ended the search of a walked file after
    them (-1: none; rg then says it stopped). `binary_lines`: a file named explicitly that
    holds a NUL gives its matching lines (rg --json lists them) where text output says
    "binary file matches"."""
    from ov.search.matcher import binary_cutoff  # noqa: PLC0415

    context = before or after
    may_match = pat.file_test() if not invert else None
    # a big file is searched a block at a time; context lines, -U, -v and -m want the
    # whole text
    stream_over = None if context or pat.multiline or invert or max_count else STREAM_BYTES

    def search(rel: str, abspath: str, cap: int) -> tuple[int, object]:
        try:
            try:
                data = read_searched(abspath, stream_over)
            except _Big:
                answer, found = (SEARCH, None) if _utf16(abspath) else \
                    search_blocks(pat, rel, abspath, cap, mode)
                if answer != SEARCH:
                    return answer, found
                data = read_searched(abspath)  # a NUL further on: ripgrep's cut-off applies
        except OSError:
            return UNREADABLE, None
        if data[:2] in UTF16_BOMS:  # as rg: UTF-16 with its BOM is text, searched as UTF-8
            data = data.decode("utf-16", "replace").encode("utf-8")
        # The literal test first: most files fail it, and then where a NUL lies matters
        # not (one pass over their bytes, not two). A file named explicitly is searched
        # whole even past a NUL, which its first buffer's test cannot speak for.
        is_named = rel in named
        stopped = -1
        if may_match is not None and not is_named and not may_match(data):
            return NO_MATCH, None
        nul = data.find(b"\x00")
        if nul >= 0 and is_named:
            # named explicitly: searched whole, as text. rg prints no lines of it but says
            # "binary file matches"; -l, -c and -q count it as any file (rg -l lists it)
            data = _whole(abspath, data, nul)
            if data is None:
                return UNREADABLE, None
            if may_match is not None and not may_match(data):
                return BINARY, None
            if mode == "matches" and not binary_lines:
                return _binary_named(pat, invert, rel, decode(data), nul)
        elif nul >= 0:
            cut = binary_cutoff(data, nul)
            if cut == 0:
                return BINARY, None
            data = data[:cut]
            stopped = nul  # what was searched ends before the NUL: rg says so after a match
            if may_match is not None and not may_match(data):
                return NO_MATCH, None
        elif is_named and may_match is not None and not may_match(data):
            return NO_MATCH, None
        return _answer(pat, rel, decode(data), mode, cap, max_count, invert, before, after, stopped)

    return search


def _answer(pat: Pattern, rel: str, text: str, mode: str, cap: int, max_count: int | None,
            invert: bool, before: int, after: int, stopped: int) -> tuple[int, object]:
    """`_searcher`'s answer for a file's text (see there); `stopped`: the offset of the NUL
    that ended the search of a walked file, or -1."""
    from ov.search.matcher import (build_matches, count_lines, inverted_matches, line_matches,  # noqa: PLC0415
                                   matched_lines)

    def at_nul(n: int) -> bool:
        """Whether rg's search of this walked file, `n` lines found, went on to the NUL
        that ended it (-m can end it first): rg then says it stopped after a match, and
        -c counts no line of the file (rg 13: the count is dropped with it)."""
        return stopped >= 0 and (max_count is None or n < max_count)

    # -m: a file's own cap is no cut of the result; the node limit's (cap) is
    each = cap if max_count is None else min(cap, max_count)
    if invert:
        records, more = inverted_matches(pat, rel, text, None if mode != "matches" else each)
        if mode == "files":
            return (FOUND, (1,)) if records else (NO_MATCH, None)
        if mode == "count":
            n = len(records) if max_count is None else min(len(records), max_count)
            return (FOUND, (n,)) if n and not at_nul(n) else (NO_MATCH, None)
    elif mode == "files":
        return (FOUND, (1,)) if matched_lines(pat, text, 1)[0] else (NO_MATCH, None)
    elif mode == "count":
        n, _ = count_lines(pat, text, max_count)
        return (FOUND, (n,)) if n and not at_nul(n) else (NO_MATCH, None)
    elif before or after:
        lines, more = matched_lines(pat, text, each)
        records = build_matches(rel, text, lines, before, after)
    else:
        records, more = line_matches(pat, rel, text, each)
    if max_count is not None and each == max_count:
        more = False
    if not records:
        return NO_MATCH, None
    return FOUND, (records, more, stopped if not more and at_nul(len(records)) else -1)


def _whole(abspath: str, data: bytes, nul: int) -> bytes | None:
    """The whole file of which `read_searched` returned `data`, its first NUL at `nul`:
    only the first buffer when that holds the NUL (None: unreadable)."""
    if len(data) != RG_BUFFER or nul >= RG_BUFFER:
        return data
    try:
        with open(abspath, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _binary_named(pat: Pattern, invert: bool, rel: str, text: str, nul: int) -> tuple[int, object]:
    """A file named explicitly that holds a NUL, in line mode: (BINARY_MATCH, the NUL's
    offset) when it matches, as rg then says so rather than printing its lines. Its NULs
    are plain characters, its lines end at newlines alone: rg 13's answers (`a.b` matches
    across a NUL, `a$` does not match before one)."""
    from ov.search.matcher import inverted_matches, matched_lines  # noqa: PLC0415

    if (invert and inverted_matches(pat, rel, text, 1)[0]) or (
            not invert and matched_lines(pat, text, 1)[0]):
        return BINARY_MATCH, nul
    return BINARY, None


def _grep_files(pat: Pattern, root: Path, rels: list[str], opts: WalkOptions, st: GrepStats, *,
                mode: str, before: int, after: int, limit: int, excluded, pfilter, tfilter,
                allowed, may_hold, helper_after: int | None = helpers.HELPER_AFTER,
                use_listing: bool = False, invert: bool = False, max_count: int | None = None,
                named: frozenset[str] = frozenset(), show: Callable[[str], str] = str,
                binary_lines: bool = False) -> Iterator[Match | FileCount]:
    """The records of the files under `rels` in walk order, up to `limit`: searched here or,
    past `helper_after` files with a core free, the rest of the walk and some of the
    searches by a forked helper (`ov.search.helper`)."""
    search = _searcher(pat, mode, before, after, invert, max_count, named, binary_lines)
    emitted = 0
    files = _searchable(root, rels, opts, st, excluded=excluded, pfilter=pfilter, tfilter=tfilter,
                        allowed=allowed, may_hold=may_hold, use_listing=use_listing, named=named)
    alarm = _WallClock(pat, st)
    if helper_after is not None and isinstance(may_hold, Prefilter) \
            and len(may_hold.cands) >= helper_after:
        # the index names many files: the stat of the others (one lstat each, ~0.1 s on
        # linux-ad) is the helper's from the first file on, while the parent searches
        helper_after = 0
    answered = _answered(files, st, search, limit, mode, helper_after)
    current: str | None = None  # the file being searched, for a regex past its time
    try:
        for rel, abspath, answer, found in answered:
            if rel is None:  # what the walk told on the way (see _noted), in its place
                _tell(st, abspath)
                continue
            if pat.deadline is not None and time.monotonic() > pat.deadline:
                raise _past_deadline(pat, st)
            if answer == SEARCH:
                if alarm.active:
                    alarm.file_deadline = time.monotonic() + pat.timeout * FILE_WALL_FACTOR
                current = rel
                answer, found = search(rel, abspath, max(1, limit - emitted))
                alarm.file_deadline = current = None
            if answer == UNREADABLE:
                st.unreadable += 1
                continue
            st.searched += 1
            if answer == BINARY:
                st.binary += 1
                continue
            if answer == BINARY_MATCH:
                st.binary_matches.append((show(rel), found))  # type: ignore[arg-type]
                continue
            if answer != FOUND:
                continue
            if emitted >= limit:
                # One more record would exist: say the limit cut, and stop.
                st.truncated = True
                return
            if mode != "matches":  # -l: (1,); -c: (count,)
                st.files += 1
                st.count += found[0]  # type: ignore[index]
                emitted += 1
                yield FileCount(rel) if mode == "files" else FileCount(rel, found[0])  # type: ignore[index]
                continue
            records, more, stopped = found  # type: ignore[misc]
            room = limit - emitted
            if len(records) > room:  # the helper's, found up to the whole limit
                got = _within(search, rel, abspath, records, room, bool(before or after))
                if got is None:
                    continue
                records, more, stopped = got
            if stopped >= 0 and not more:
                st.binary_stopped.append((show(rel), stopped))
            st.files += 1
            st.count += len(records)
            emitted += len(records)
            yield from records
            if more:
                st.truncated = True
                return
    except OvError as e:  # a regex past its time: the command's deadline, or the file's
        alarm.file_deadline = None
        raise _timed_out(e, pat, st, current, show) from None
    finally:
        answered.close()  # and with it the helper, if one runs
        alarm.cancel()


def _answered(files: Iterator[tuple[str, str]], st: GrepStats, search, limit: int, mode: str,
              helper_after: int | None) -> Iterator[tuple]:
    """(rel, abspath, answer, found) for each file in walk order: (SEARCH, None) for the
    caller to search it, or, once a helper runs, maybe the helper's answer (and then, in
    their places, the walk's notes: (None, note, NO_MATCH, None))."""
    for i, (rel, abspath) in enumerate(files):
        if i == helper_after and helpers.idle_core() and helpers.single_threaded():
            # asked here, once, when a tree is large enough: a small one pays nothing
            items = _noted(chain([(rel, abspath)], files), st)
            helper = helpers.start(items, search, limit, mode)
            if helper is not None:
                try:
                    yield from helper.stream(items, mode)
                finally:
                    helper.close()
                return
        yield rel, abspath, SEARCH, None


def _noted(files: Iterator[tuple[str, str]], st: GrepStats) -> Iterator[tuple]:
    """`files`, with what the walk tells `st` on the way (warnings, unreadable files, a
    depth cut) taken back out of `st` and passed along in its place as a (None, note)
    item: the helper's walk tells its own copy of `st`, and a walk that runs ahead of
    the search must not report what lies past the point where a node limit stops it."""
    w = st.warnings
    n, unreadable, cut = len(w), st.unreadable, st.level_cut
    for item in chain(files, [None]):
        if len(w) != n or st.unreadable != unreadable or st.level_cut != cut:
            yield None, (w[n:], st.unreadable - unreadable, st.level_cut and not cut)
            del w[n:]
            st.unreadable, st.level_cut = unreadable, cut
        if item is not None:
            yield item


def _tell(st: GrepStats, note: tuple) -> None:
    warnings, unreadable, cut = note
    st.warnings += warnings
    st.unreadable += unreadable
    st.level_cut = st.level_cut or cut


def _within(search, rel: str, abspath: str, records: list, room: int, context: bool):
    """The helper's records of one file cut to the `room` left: (records, more, NUL offset
    or -1), or None
    when the file changed since the helper read it."""
    if not context:  # line records do not depend on those after them
        return records[:room], True, -1
    # context lines stop at the next match: find them anew
    again, found = search(rel, abspath, room)
    if again != FOUND:
        return None
    return found


# A file's search may take this many times the regex limit in wall time. The limit
# itself is `regex`'s, in CPU time (5 s ran 17.6 s of wall at load 16, and past 60 s under
# the test suite's load); held to 5 s of wall, a linear search of 200,000 blank lines
# failed under that load, so the wall bound is looser.
FILE_WALL_FACTOR = 4


class _WallClock:
    """The deadlines in wall time: the command's (--timeout), and a file's search at
    FILE_WALL_FACTOR times the regex limit. `regex`'s own timeout counts CPU time, while a
    SIGALRM handler's exception interrupts a running regex search: so, in the main thread
    and with no timer of another user, a timer ticking four times a second raises
    `deadline_exceeded` when either time is up (`file_deadline` is set around each file's
    search: an attribute store, no system call per file). Elsewhere the checks against
    `Pattern.deadline` and `regex`'s timeout stand alone."""

    TICK_S = 0.25

    def __init__(self, pat: Pattern, st: GrepStats) -> None:
        import signal  # noqa: PLC0415
        import threading  # noqa: PLC0415

        self.old = None
        self.active = False
        self.file_deadline: float | None = None
        if pat.deadline is None or threading.current_thread() is not threading.main_thread() \
                or not hasattr(signal, "setitimer") or signal.getitimer(signal.ITIMER_REAL)[0]:
            return

        def fire(signum, frame):
            now = time.monotonic()
            if now >= pat.deadline:  # type: ignore[operator]
                raise _past_deadline(pat, st)
            if self.file_deadline is not None and now >= self.file_deadline:
                self.file_deadline = None
                raise OvError("deadline_exceeded", f"the pattern ran past "
                              f"{pat.timeout * FILE_WALL_FACTOR:g} s of wall time on one file",
                              field="pattern")

        self.old = signal.signal(signal.SIGALRM, fire)
        self.active = True
        signal.setitimer(signal.ITIMER_REAL, self.TICK_S, self.TICK_S)

    def cancel(self) -> None:
        if self.old is not None:
            import signal  # noqa: PLC0415

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
            self.old = None
            self.active = False


def _timed_out(e: OvError, pat: Pattern, st: GrepStats, current: str | None, show) -> OvError:
    """The error a grep ends with when `e` was raised searching `current` (None: between
    files): past the command's deadline, say how far it got; past a file's, name the file
    (a 2.6 MB line of minified HTML among 8,000 Go files was not named)."""
    if e.code != "deadline_exceeded":
        return e
    if pat.deadline is not None and time.monotonic() >= pat.deadline:
        return _past_deadline(pat, st)
    if current is not None and e.field == "pattern":
        return OvError("deadline_exceeded", f"{e.message} ({show(current)}); leave it out with "
                       f"-g '!{current}', or use -F if the pattern is a plain string", field="pattern")
    return e


def _past_deadline(pat: Pattern, st: GrepStats) -> OvError:
    return OvError("deadline_exceeded",
                   f"grep ran past its time limit (--timeout) after searching {st.searched} "
                   f"file(s), {st.count} match(es) found so far", field="timeout")


def iter_grep(
    pattern: str,
    paths: Sequence[str] = (),
    *,
    cwd: Path | None = None,
    fixed: bool = False,
    ignore_case: bool = False,
    word: bool = False,
    line: bool = False,
    multiline: bool = False,
    before: int = 0,
    after: int = 0,
    globs: Sequence[str] = (),
    types: Sequence[str] = (),
    types_not: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    no_ignore: bool = False,
    max_depth: int | None = None,
    node_limit: int = config.DEFAULT_NODE_LIMIT,
    mode: str = "matches",
    tags: Sequence[str] = (),
    candidates: Candidates | None = None,
    use_index: bool = True,
    timeout: float = config.REGEX_TIMEOUT_S,
    stats: GrepStats | None = None,
    ignores: Sequence[str] = (),
    invert: bool = False,
    max_count: int | None = None,
    follow: bool = False,
    deadline_s: float | None = None,
    missing_ok: bool = False,
    binary_lines: bool = False,
) -> Iterator[Match | FileCount]:
    """Search file contents: the `Match` records (mode "matches"), or `FileCount`
    records (mode "count": files with their matching-line counts; mode "files": paths).

    `node_limit` caps the records (`stats.truncated` says when it cut); `invert` (-v): the
    lines without a match; `max_count` (-m): matching lines a file (0: none, as rg);
    `follow` (-L): follow symlinks (never out of the root). Past `deadline_s` of wall
    time, `deadline_exceeded` says how far it got (the records yielded so far stand).

    Bad options, a bad pattern and a missing path raise here, before the records are
    asked for (not at the first `next()`); the search runs as they are read. With
    `missing_ok`, a missing PATH is a warning in `stats.missing` (and `stats.warnings`)
    and the others are searched, as rg does (`ov grep` in text and JSON Lines).
    `binary_lines`: a file named explicitly that holds a NUL and a match gives its
    matching lines as records, as rg --json lists them (JSON output, `ov mcp`); without
    it, `stats.binary_matches` holds it and text output says "binary file matches"."""
    st = _checked(mode, stats, node_limit, max_depth, before, after, max_count, invert,
                  multiline, deadline_s)
    started = time.monotonic()
    from ov.search.matcher import compile_pattern  # noqa: PLC0415

    LISTINGS.clear()  # a listing serves one run, never a later one
    pat = compile_pattern(pattern, fixed=fixed, ignore_case=ignore_case, word=word,
                          multiline=multiline, timeout=timeout, line=line)
    if deadline_s is not None:
        pat = dataclasses.replace(pat, deadline=started + deadline_s)
    cwd = Path.cwd() if cwd is None else Path(cwd)
    tag_pairs = parse_tags(tags) if tags else None
    pfilter = PathFilter(globs) if globs else None
    tfilter = type_matcher(types, types_not) if types or types_not else None
    groups = _planned(cwd, paths, st, missing_ok)
    check_excludes(groups, cwd, exclude)
    if max_count == 0:  # no line may match: nothing is read (the paths are checked)
        st.root = st.root or os.fspath(groups[0][0])
        return _no_records()
    return _records(pat, groups, st, cwd=cwd, before=before, after=after, exclude=exclude,
                    hidden=hidden, no_ignore=no_ignore, max_depth=max_depth, node_limit=node_limit,
                    mode=mode, candidates=candidates, use_index=use_index, ignores=ignores,
                    invert=invert, max_count=max_count, follow=follow, tag_pairs=tag_pairs,
                    pfilter=pfilter, tfilter=tfilter, binary_lines=binary_lines)


def _from_cwd(pfilter: PathFilter | None, root: Path, cwd: Path) -> PathFilter | None:
    """The -g globs as rg reads them, from the current folder (PathFilter.under)."""
    return pfilter.under(os.fspath(root), os.path.abspath(os.fspath(cwd))) if pfilter else None


def _no_records() -> Iterator[Match | FileCount]:
    yield from ()


def _records(pat, groups, st: GrepStats, *, cwd: Path, before: int, after: int, exclude: Sequence[str],
             hidden: bool, no_ignore: bool, max_depth: int | None, node_limit: int, mode: str,
             candidates: Candidates | None, use_index: bool, ignores: Sequence[str], invert: bool,
             max_count: int | None, follow: bool, tag_pairs, pfilter, tfilter,
             binary_lines: bool = False) -> Iterator[Match | FileCount]:
    """`iter_grep`'s records, root by root, once its options are checked."""
    for root, rels, indexed in groups:
        st.root = st.root or os.fspath(root)
        ex_rels, excluded, rels = exclusions(root, cwd, exclude, rels)
        pf = _from_cwd(pfilter, root, cwd)  # each root's own: another root is no cwd's
        allowed = tagged(root, tag_pairs, indexed, st.warnings.append)
        hook = candidates if candidates is not None else (
            index_candidates(root, st.warnings.append) if use_index and indexed else None)
        # -v: a file without the pattern is all matches, so nothing may be ruled out
        may_hold = hook(list(pat.literals), pat.fold) if hook and not invert else None
        opts = grep_walk_options(hidden, no_ignore, max_depth, ex_rels, ignores, follow, pf)
        named = frozenset(r for r in rels if r and (root / r).is_file())
        show = st.shown = displayer(root, cwd, st.absolute)
        links_out(root, rels, show, st.warnings)
        not_files(root, rels, show, st.warnings)
        last = ("", "")
        for r in _grep_files(pat, root, rels, opts, st, mode=mode, before=before, after=after,
                             limit=node_limit - st.records, excluded=excluded, pfilter=pf,
                             tfilter=tfilter, allowed=allowed, may_hold=may_hold,
                             use_listing=use_index and indexed, invert=invert,
                             max_count=max_count, named=named, show=show, binary_lines=binary_lines):
            if r.path != last[0]:
                last = (r.path, show(r.path))
            r.path = last[1]
            st.records += 1
            yield r
        if st.truncated:
            return


def _checked(mode: str, stats: GrepStats | None, node_limit: int, max_depth: int | None,
             before: int, after: int, max_count: int | None, invert: bool, multiline: bool,
             deadline_s: float | None) -> GrepStats:
    """A grep's options checked (`invalid_argument`), and the run's stats."""
    if mode not in ("matches", "count", "files"):
        raise OvError("invalid_argument", f"unknown grep mode {mode!r}", field="mode")
    st = limited_stats(stats, node_limit, max_depth)
    if before < 0 or after < 0:
        which = "after" if after < 0 else "before"
        raise OvError("invalid_argument", f"-{which[0].upper()}/--{which}-context must be 0 or more lines",
                      field=which)
    if max_count is not None and max_count < 0:
        raise OvError("invalid_argument", "--max-count must be 0 or more", field="max_count")
    if invert and (multiline or before or after):
        raise OvError("invalid_argument", "-v/--invert-match takes neither -U nor context lines",
                      field="invert")
    if deadline_s is not None and not 0 < deadline_s <= config.MAX_TIMEOUT_S:  # also NaN
        raise OvError("invalid_argument", config.TIMEOUT_RANGE, field="timeout")
    return st


def iter_files(paths: Sequence[str] = (), *, cwd: Path | None = None, globs: Sequence[str] = (),
               types: Sequence[str] = (), types_not: Sequence[str] = (), exclude: Sequence[str] = (),
               hidden: bool = False, no_ignore: bool = False, max_depth: int | None = None,
               node_limit: int = config.DEFAULT_NODE_LIMIT, follow: bool = False,
               use_index: bool = True, stats: GrepStats | None = None,
               ignores: Sequence[str] = (), tags: Sequence[str] = (),
               missing_ok: bool = False) -> Iterator[str]:
    """`--files`: the paths grep would search (relative to the current folder), in its
    order; `node_limit` caps them and `stats.truncated` says when it cut; `tags` keeps
    the indexed files carrying every one (as grep's search does). Bad options and missing
    paths raise here, before the paths are asked for (`missing_ok`: as `iter_grep`)."""
    st = limited_stats(stats, node_limit, max_depth)
    tag_pairs = parse_tags(tags) if tags else None
    LISTINGS.clear()
    cwd = Path.cwd() if cwd is None else Path(cwd)
    pfilter = PathFilter(globs) if globs else None
    tfilter = type_matcher(types, types_not) if types or types_not else None
    groups = _planned(cwd, paths, st, missing_ok)
    check_excludes(groups, cwd, exclude)
    return _file_paths(groups, st, cwd, exclude, hidden, no_ignore, max_depth, node_limit, follow,
                       use_index, ignores, tag_pairs, pfilter, tfilter)


def _planned(cwd: Path, paths: Sequence[str], st: GrepStats, missing_ok: bool):
    """`plan_roots`, a missing PATH a warning with `missing_ok`, else an error. The PATHs
    given absolute are kept in `st.absolute` (their files are shown absolute)."""
    st.absolute = [p for p in paths if os.path.isabs(p)]
    if not missing_ok:
        return plan_roots(cwd, paths)
    groups = plan_roots(cwd, paths, st.missing)
    st.warnings.extend(st.missing)
    return groups


def _file_paths(groups, st: GrepStats, cwd: Path, exclude, hidden, no_ignore, max_depth, node_limit,
                follow, use_index, ignores, tag_pairs, pfilter, tfilter) -> Iterator[str]:
    """`iter_files`' paths, root by root, once its options are checked."""
    for root, rels, indexed in groups:
        st.root = st.root or os.fspath(root)
        ex_rels, excluded, rels = exclusions(root, cwd, exclude, rels)
        pf = _from_cwd(pfilter, root, cwd)  # each root's own: another root is no cwd's
        opts = grep_walk_options(hidden, no_ignore, max_depth, ex_rels, ignores, follow, pf)
        show = st.shown = displayer(root, cwd, st.absolute)
        links_out(root, rels, show, st.warnings)
        allowed = tagged(root, tag_pairs, indexed, st.warnings.append)
        named = frozenset(r for r in rels if r and (root / r).is_file())
        for rel, _ in _searchable(root, rels, opts, st, excluded=excluded, pfilter=pf,
                                  tfilter=tfilter, allowed=allowed, may_hold=None,
                                  use_listing=use_index and indexed, named=named):
            if st.records >= node_limit:
                st.truncated = True
                return
            st.records += 1
            st.files += 1
            yield show(rel)


def grep(pattern: str, paths: Sequence[str] = (), **kw) -> GrepResult:
    """Run `iter_grep` to the end and collect a `GrepResult` (see `iter_grep` for options)."""
    st = GrepStats()
    from ov.search.matcher import gc_paused  # noqa: PLC0415

    with gc_paused():  # see gc_paused: millions of acyclic records
        records = list(iter_grep(pattern, paths, stats=st, **kw))
    return grep_result(records, st, kw.get("mode", "matches"))
