"""Keeping an index fresh: watch a tree and re-index only what changed.

The OS reports the paths that changed: on Linux through the change journal below
(inotify, changes alone), elsewhere, or where the journal could not watch every folder,
through `watchfiles` (FSEvents, ReadDirectoryChangesW, inotify, through Rust's `notify`,
which on Linux also hears every file opened in the tree: ~0.4 s of this process's CPU for
each rg over the kernel, where the journal costs nothing). Each batch goes to
`ov.indexer.index_paths`, so a save costs the work of the saved file, never a walk of the
tree. A burst (a branch switch, a build, a formatter over the tree) arrives as one batch:
events are gathered until `STEP_MS` pass without one, `DEBOUNCE_MS` at most. A change to
an ignore file re-reads its folder, whose rules it changes; a change to the tree's config
(`.ov/config.toml`, `pyproject.toml` at the root) re-reads the tree, incrementally. The
index's own writes (`.ov/`) and `.git/` are not events.

Before watching, `catch_up` runs one incremental `index_tree` for the keyword rows: what
changed while nothing watched, and what a killed update left undone (a transaction rolled
back), is done then. Events that arrive meanwhile are queued by the watcher and applied
after it. Vectors come after the keywords and never hold a batch back: the rows waiting
for one are embedded when the watcher is idle, and a batch that arrives meanwhile stops
that work after at least EMBED_MIN_S of it, within one step of the model (EMBED_STEP
texts; with watchfiles, whose queue cannot be looked at, a stretch of embedding lasts at
most EMBED_SLICE_S). A saved file is searchable by its words within a second or two even
while a large catch-up embeds, and a tree that never stops changing still gets its vectors.

Another `ov index` holding the index lock is waited for: the batch stays pending and is
retried every `RETRY_S`; a holder that is embedding or writing grep's trigram rows lets
the lock go to it between two commits (ov.indexer `yield_lock`). Any other failure is
reported through `warn` and the watch goes on (the next start's catch-up repairs what it
missed).

While it watches, a change journal (`ov.journal`, Linux) records every path the OS says
changed since the last catch-up and answers grep on a socket beside the index, so a grep
with a fresh index need not `lstat` each file it rules out. The journal vouches for the
index only after a catch-up that began after it started watching; when it loses events
(queue overflow, too many changes) it asks for another (`Journal.wants_catch_up`).

watchfiles (and its anyio) is imported only when a watch uses it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ov.paths import db_path_for
from ov.errors import OvError
from ov.indexer import GoneTags, IndexOptions, complete_index, held_lock, index_paths, index_tree
from ov.journal import Journal
from ov.model import IndexReport
from ov.walk import ALWAYS_SKIPPED

STEP_MS = 50  # quiet time that ends a batch: a single save is indexed ~50 ms after it
DEBOUNCE_MS = 1000  # longest a burst is gathered before its first part is indexed
RETRY_S = 1.0  # how often a batch blocked by another indexer is retried
# Past the OS's limit of inotify watches the tree is polled (watchfiles' poll watcher
# stats every file) at this interval: watchfiles' own watches failed at the same limit,
# silently (each folder's error is ignored, as for a folder it may not read), and a
# watch over the kernel's 5,097 folders with max_user_watches 1000 saw no change at all
POLL_MS = 2000
EMBED_SLICE_S = 5.0  # longest stretch of embedding between two looks at watchfiles' events
EMBED_MIN_S = 1.0  # shortest stretch of embedding a queued change stops (so vectors always come)
RULE_FILES = frozenset({".gitignore", ".ignore", ".rgignore", ".ovignore"})

Notice = Callable[[str], None]


def changed_paths(root: str, paths: Iterable[str]) -> tuple[set[str], bool]:
    """(root-relative paths to re-index, whether the whole tree must be re-read) for the
    absolute paths a watcher reported."""
    rels: set[str] = set()
    whole = False
    for p in paths:
        rel = os.path.relpath(p, root)
        if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
            continue
        parts = rel.split(os.sep)
        if parts == [".ov", "config.toml"] or parts == ["pyproject.toml"]:
            whole = True
        if ALWAYS_SKIPPED.intersection(parts):
            continue
        if parts[-1] in RULE_FILES:
            if len(parts) == 1:
                whole = True
            else:
                rels.add("/".join(parts[:-1]))
        rels.add("/".join(parts))
    return rels, whole


@dataclass
class WatchState:
    """What the watcher has done, for a status report."""

    updates: int = 0  # batches applied
    files_changed: int = 0  # files added, updated or removed by them
    last_update: float | None = None  # time.time() of the last applied batch
    pending: int = 0  # paths of the batch being applied, or waiting (another indexer holds the lock)
    catching_up: bool = False  # a pass over the whole tree is running: changes queue behind it
    # the change journal's `handed` count when the watcher last had nothing left to apply:
    # every change it queued up to there is in the index (ov.mcp `_settle`)
    applied: int = 0
    errors: list[str] = field(default_factory=list)


class Watcher:
    """Re-indexes `root`'s changed files into the index at `db_path` while it runs.

    `on_update(report)` hears each applied batch (and the catch-up); `warn` per-file
    warnings and failures. `embedder` is shared with the caller (one model in memory)."""

    def __init__(self, root: Path, db_path: Path | None = None, opts: IndexOptions = IndexOptions(), *,
                 embedder=None, on_update: Callable[[IndexReport], None] | None = None,
                 warn: Notice | None = None,
                 settings: Callable[[], IndexOptions] | None = None) -> None:
        self.root = Path(root).resolve()
        self.db_path = Path(db_path) if db_path else db_path_for(self.root)
        self.opts = opts
        self.settings = settings  # the options read again (the tree's config) per catch-up
        self.embedder = embedder
        self.on_update = on_update or (lambda _r: None)
        self.warn = warn or (lambda _m: None)
        self.state = WatchState()
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self.journal: Journal | None = None
        self.gone_tags = GoneTags()  # a rename's halves may come in two batches
        self.unembedded = opts.embed  # rows may wait for a vector (`_embed_idle`)
        self._mark = 0  # the journal's `handed` count at the batch being applied (`_applied_upto`)
        self._slice_s: float | None = None  # set while events come from watchfiles, not the journal
        self._slice_start = 0.0  # when the embedding now running began (`_preempted`)

    # -- applying changes --

    def _model(self):
        """The embedder, loaded by the first update that may need it and kept."""
        if self.embedder is None and self.opts.embed:
            from ov.embed import load_embedder  # noqa: PLC0415

            self.embedder = load_embedder("index")
        return self.embedder

    def catch_up(self) -> IndexReport:
        """One incremental pass over the whole tree (at start, or after a config change),
        with the tree's settings read again: the keyword rows, then the vectors until
        they are done or a change arrives (`_embed_idle` goes on when the watch is idle)."""
        if self.settings is not None:
            self.opts = self.settings()
        self._model()
        journal = self.journal
        mark = journal.reset() if journal is not None else None
        self.state.catching_up = True
        # vectors later, not a --no-embed index: the index says they are coming
        lexical = replace(self.opts, embed=False, embed_later=True) if self.opts.embed else self.opts
        try:  # a watch being stopped (`ov mcp` whose client left) stops at the next batch of files
            rep = index_tree(self.root, self.db_path, lexical, warn=self.warn, embedder=self.embedder,
                             stop=self.stop_event.is_set)
        finally:
            self.state.catching_up = False
        if rep.partial:  # cut short: the journal has not caught up, and the rest is the next pass's
            return rep
        if journal is not None and mark is not None:
            journal.caught_up(mark)
        self._applied(rep)  # the index has the tree's words: said now, before any vector
        self.unembedded = self.opts.embed
        self._embed_idle()
        return rep

    def apply(self, rels: set[str], whole: bool = False) -> IndexReport:
        """Re-index `rels` (or the whole tree, incrementally); raises `index_busy` when
        another indexer holds the lock. The batch's new rows are embedded with it, unless
        another change arrives first (then later, when the watch is idle)."""
        if whole:
            return self.catch_up()
        self._slice_start = time.monotonic()
        # the batch is searchable once its keyword rows are in: a search waiting for it
        # (ov.mcp `_settle`) does not wait for the vectors of the whole backlog as well
        mark = self._mark
        rep = index_paths(self.root, rels, self.db_path, self.opts, warn=self.warn,
                          embedder=self._model(), gone_tags=self.gone_tags, stop=self._preempted,
                          searchable=lambda: self._applied_upto(mark))
        self.unembedded = self.opts.embed
        self._applied(rep)
        return rep

    def _applied_upto(self, mark: int) -> None:
        self.state.applied = max(self.state.applied, mark)

    def _preempted(self) -> bool:
        """Whether embedding must stop for what the watcher has to do first: the watch
        ends, a change is queued in the journal, or (events from watchfiles, which cannot
        be looked at) EMBED_SLICE_S of it have passed; either only after EMBED_MIN_S of
        embedding, so that a tree that never stops changing (a log written every few
        milliseconds, ignored or not: the journal hears it) still gets its vectors. Or
        another process waits for the index lock this watcher holds (a second server's
        batch, an `ov index`): the watcher's embedding is what is left over, so it stops
        and lets it go rather than take turns with it (ov.indexer `yield_lock`)."""
        if self.stop_event.is_set():
            return True
        lock = held_lock(self.db_path)
        if lock is not None and lock.wanted():
            return True
        spent = time.monotonic() - self._slice_start
        if spent < EMBED_MIN_S:
            return False
        if self._slice_s is None:  # the journal's queue, when it is the source
            journal = self.journal
            return journal is not None and journal.queued()
        return spent > self._slice_s

    def _embed_idle(self) -> None:
        """Embed the rows still waiting for a vector, until done or `_preempted` (then the
        next idle moment, or the next batch, goes on)."""
        if not self.unembedded or not self.opts.embed:
            return
        self._slice_start = time.monotonic()
        cut = []

        def stop() -> bool:
            if self._preempted():
                cut.append(True)
                return True
            return False

        try:
            complete_index(self.db_path, embedder=self._model(), stop=stop)
        except OvError as e:
            if e.code == "index_busy":
                return  # another indexer: the next idle moment tries again
            self.unembedded = False  # told once (`_guarded`); the next batch tries again
            raise
        if not cut:
            self.unembedded = False  # done: until the next batch or catch-up

    def _applied(self, rep: IndexReport) -> None:
        self.state.updates += 1
        self.state.files_changed += rep.added + rep.updated + rep.removed
        self.state.last_update = time.time()
        self.on_update(rep)

    # -- the loop --

    def run(self, catch_up: bool = True) -> None:
        """Watch until `stop()` (blocking). With `catch_up`, first bring the index up to
        date with the tree."""
        try:
            self._run(catch_up)
        finally:
            self.state.catching_up = False  # (set by `start`) a watch that ended catches up no more
            self.close_journal()

    def _run(self, catch_up: bool) -> None:
        root = str(self.root)
        pending: set[str] = set()
        whole = False
        if self.journal is None:
            # watching before the catch-up starts, so that it can vouch for what follows
            self.journal = Journal.open(self.root, self.db_path, self.warn)
        from_journal = self.journal is not None and self.journal.complete
        self._slice_s = None if from_journal else EMBED_SLICE_S
        polling = not from_journal and self._out_of_watches()
        if from_journal:
            # the journal's own events (every folder watched before the catch-up starts)
            events = self.journal.batches(self.stop_event, STEP_MS / 1000, DEBOUNCE_MS / 1000,
                                          RETRY_S)
            first = None
        else:
            events = self._watchfiles(polling)
            # the OS watch is set up by the first next(); changes during the catch-up queue
            # in it, so none is missed between the catch-up's walk and the first batch
            first = next(events, None) if catch_up else None
        batches: Iterable = []
        if catch_up:
            whole = not self._guarded(lambda: self.catch_up())
            batches = [first] if first else []
        source = _chain(batches, events)
        while (changes := next(source, None)) is not None and not self.stop_event.is_set():
            journal = self.journal
            if from_journal and (journal is None or not journal.complete):
                # a folder it could not watch (the OS's limit): watchfiles from here on, and
                # a catch-up for what went unseen
                polling = self._out_of_watches()
                if not polling:
                    self.warn("the change journal could not watch every folder: watching through watchfiles")
                source, from_journal, whole = self._watchfiles(polling), False, True
                self._slice_s = EMBED_SLICE_S
                next(source, None)  # sets the OS watch up
            self._mark = journal.handed if from_journal and journal is not None else 0
            rels, all_ = changed_paths(root, (p for _c, p in changes))
            pending |= rels
            whole = whole or all_ or (self.journal is not None and self.journal.wants_catch_up)
            if not pending and not whole:
                self._applied_upto(self._mark)
                self._guarded(lambda: self._embed_idle())  # idle: vectors for the rows that wait
                continue
            self.state.pending = len(pending)
            if self._guarded(lambda: self.apply(pending, whole)):
                pending, whole = set(), False
                self.state.pending = 0
                self._applied_upto(self._mark)

    def _out_of_watches(self) -> bool:
        """Whether the journal ran out of the OS's inotify watches: then it is closed, its
        watches given back (it had kept them all, and grep cannot trust it anyway), the tree
        is polled (POLL_MS), and the watch's state says so (`ov mcp`'s status)."""
        journal = self.journal
        if journal is None or not journal.out_of_watches:
            return False
        self.close_journal()
        note = (f"the OS's limit of inotify watches (fs.inotify.max_user_watches) is below this tree's "
                f"folders: changes are found by polling the tree every {POLL_MS / 1000:g} s, and grep "
                "stats each file; raise the limit to have them within a second")
        self._said(note)
        return True

    def _said(self, note: str) -> None:
        """A note on how the watch works (polling): warned, and kept in the watch's state."""
        self.state.errors = (self.state.errors + [note])[-10:]
        self.warn(note)

    def _watchfiles(self, polling: bool = False):
        """The OS's events through watchfiles (where no complete journal is kept); with
        `polling`, its poll watcher, which needs no inotify watch. Where the OS refuses a
        watcher (`fs.inotify.max_user_instances` used up by other programs: a watch had
        ended on `error[internal]`), the tree is polled, and the watch's state says so."""
        events = self._watchfiles_of(polling)
        return events if polling else self._or_polled(events)

    def _or_polled(self, events):
        """`events`, or the poll watcher's if the OS's watcher cannot be made (at the first
        `next()`, which sets the watch up)."""
        try:
            first = next(events, None)
        except Exception as e:  # watchfiles' WatchfilesRustInternalError
            if "creating recommended watcher" not in str(e):
                raise
            self._said(f"the OS refused a file watcher ({e}; fs.inotify.max_user_instances?): changes are "
                       f"found by polling the tree every {POLL_MS / 1000:g} s")
            yield from self._watchfiles_of(True)
            return
        if first is not None:
            yield first
        yield from events

    def _watchfiles_of(self, polling: bool):
        import watchfiles  # noqa: PLC0415 - only a watch pays for it (and its anyio)

        root = str(self.root)

        def wanted(_change, path: str) -> bool:
            rel = os.path.relpath(path, root)
            return not ALWAYS_SKIPPED.intersection(rel.split(os.sep))

        return watchfiles.watch(root, watch_filter=wanted, debounce=DEBOUNCE_MS, step=STEP_MS,
                                stop_event=self.stop_event, rust_timeout=int(RETRY_S * 1000),
                                yield_on_timeout=True, raise_interrupt=False,
                                ignore_permission_denied=True, force_polling=polling or None,
                                poll_delay_ms=POLL_MS)

    def _guarded(self, step: Callable[[], object]) -> bool:
        """Run one update; False when it must be retried (the lock was busy)."""
        try:
            step()
            return True
        except OvError as e:
            if e.code == "index_busy":
                return False
            self._failed(f"{e.code}: {e.message}")
        except Exception as e:  # a bug must not end the watch of a long-lived server
            self._failed(f"internal: {type(e).__name__}: {e}")
        return True

    def _failed(self, msg: str) -> None:
        self.state.errors = (self.state.errors + [msg])[-10:]
        self.warn(f"re-indexing after a change failed: {msg}")

    def start(self, catch_up: bool = True) -> Watcher:
        """`run` in a daemon thread."""
        # said from now, not once the thread reaches it: a status read before then is behind too
        self.state.catching_up = catch_up
        self._thread = threading.Thread(target=self.run, args=(catch_up,), name="ov-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.close_journal()

    def close_journal(self) -> None:
        journal, self.journal = self.journal, None
        if journal is not None:
            journal.close()


def _chain(first: Iterable, rest: Iterable):
    yield from first
    yield from rest
