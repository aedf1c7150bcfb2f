"""The library: one API under every front end (the Typer app, the fast path, `ov mcp`).

Everything a front end would otherwise decide lives here, once: merging flags with the
tree's config (flag > `.ov/config.toml` > `pyproject.toml [tool.ov]` > default),
validating search options before anything is opened or built, `-t` type names, finding
the index and building it on first use. A Python caller therefore gets the answers the
CLI gives:

    import ov
    with ov.Index.open("path/to/tree", auto_index=True) as ix:
        for hit in ix.search("how are files split into chunks", limit=5).hits:
            print(hit.path, hit.start_line, hit.score)
    records, stats = ov.grep(r"def \\w+", cwd="path/to/tree")

Front ends hand in hooks (`progress`, `notice`, `warn`) and never import each other. This
module imports nothing heavy at load time: `ov grep` and `ov glob` start through it
without numpy or onnxruntime.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
TYPE_CHECKING = False  # `typing` costs ~6 ms of a grep's start: annotations only
if TYPE_CHECKING:
    from typing import Any

from ov.errors import OvError
from ov.paths import locate

SUPERSEDED_WAIT_S = 5.0  # how long a write follows an `ov index --full` renaming its file

Notice = Callable[[str], None]


def _read_only_note(db_path) -> str:
    return (f"the index {db_path} is read-only for this user: searched as it stands, not updated "
            "(a changed file is rechecked; a new one is not found)")


def _quiet(_msg: str) -> None:
    """The default hook: a library prints nothing of its own."""


# ---- settings --------------------------------------------------------------------------


def walk_options(root: Path, hidden: bool | None = None, no_ignore: bool = False, follow: bool = False,
                 max_filesize: int | str | None = None):
    """Walk options for indexing `root`: the flags, else the tree's config, else defaults.
    `max_filesize` is bytes, or a size as rg takes it ("2M": K, M and G are powers of 1,024)."""
    from ov.config import load_config, parse_size  # noqa: PLC0415

    if max_filesize is not None:
        size = parse_size(max_filesize)
        if size is None:
            raise OvError("invalid_argument", f"--max-filesize must be a positive number of bytes, or a "
                          f"size such as 2M (K, M, G), not {max_filesize!r}", field="max_filesize")
        max_filesize = size
    return load_config(root).walk_options(hidden, no_ignore, follow, max_filesize)


def search_settings(root: Path, search_type: str | None, limit: int | None) -> tuple[str, int]:
    """(search type, limit): the flags, else the tree's config, else the defaults."""
    from ov.config import load_config  # noqa: PLC0415
    from ov.query import search_type as norm_type  # noqa: PLC0415

    st, lim = load_config(root).ranked_options(search_type, limit)
    return norm_type(st), lim


def search_filters(query: str, *, search_type: str | None = None, limit: int | None = None,
                   time_field: str = "updated_at", after: str | None = None,
                   before: str | None = None, tags: Sequence[str] | None = None,
                   level: str | None = None, types: Sequence[str] | None = None,
                   globs: Sequence[str] | None = None, exclude_uri: Sequence[str] | None = None,
                   cwd: Path | None = None) -> dict:
    """Check a search's options before anything is opened or built, and return the
    `Filters` fields they parse into (all but the paths, which need the index root;
    `exclude_uri` is only checked: its globs' syntax, `cwd` telling the paths among them)."""
    from ov.globs import PathFilter, split_excludes  # noqa: PLC0415
    from ov.kinds import type_names  # noqa: PLC0415
    from ov.query import (TIME_FIELDS, check_limit, check_query, parse_levels,  # noqa: PLC0415
                          parse_time, search_type as norm_type)
    from ov.tags import parse_filters  # noqa: PLC0415

    query = _text(query, "query")
    if _text(search_type, "search_type", optional=True) is not None:
        norm_type(search_type)
    if _int(limit, "limit") is not None:
        check_limit(limit)
    check_query(query)
    time_field = _text(time_field, "time_field")
    after, before = _text(after, "after", optional=True), _text(before, "before", optional=True)
    level, types = _level(level), _paths(types, "types")
    globs = _paths(globs, "globs") or []
    if globs:
        PathFilter(globs)
    split_excludes(_paths(exclude_uri, "exclude_uri") or (), [cwd or Path.cwd()])
    if time_field not in TIME_FIELDS:
        raise OvError("invalid_argument", f"--time-field must be updated_at or created_at, not {time_field!r}",
                      field="time_field")
    return dict(levels=parse_levels(level), tags=parse_filters(tags), time_field=time_field,
                after=parse_time(after, "after") if after is not None else None,
                before=parse_time(before, "before") if before is not None else None,
                ftypes=tuple(type_names(types)), globs=tuple(globs))


def context_options(detail: str | dict | None = None, max_tokens: int | None = None) -> dict:
    """Check context mode's own options before anything is opened or built; returns the
    `--detail` tiers parsed. (`-u` scopes it as it scopes a list: it had been refused,
    against the contract's "all commands scope with -u".)"""
    from ov import context as ctx  # noqa: PLC0415

    if isinstance(detail, dict):  # checked as the command line's JSON form is
        import json  # noqa: PLC0415

        try:
            detail = json.dumps(detail)
        except (TypeError, ValueError):
            raise _wrong("detail", "a tier name or a {category: tier} object", detail) from None
    det = ctx.parse_detail(_text(detail, "detail", optional=True))
    if _int(max_tokens, "max_tokens") is not None:
        ctx.check_budget(max_tokens)
    return det


# ---- arguments: what a program hands in, checked before anything runs -------------------
# The command line hands strings and numbers it parsed; a program may hand anything. A
# wrong type is `invalid_argument` naming the argument, never an AttributeError from deep
# inside. A lone string (or path) where a list goes is one item, not its characters.


def _wrong(field: str, want: str, value: Any) -> OvError:
    return OvError("invalid_argument", f"{field} must be {want}, not {type(value).__name__} {value!r:.80}",
                   field=field)


def _text(value: Any, field: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _wrong(field, "a string", value)
    return value


def _int(value: Any, field: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise _wrong(field, "an integer", value)
    return value


def _number(value: Any, field: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise _wrong(field, "a number", value)
    return value


def _path(value: Any, field: str, optional: bool = False) -> str | None:
    """A path as the string the command line would hand over (str or os.PathLike)."""
    if value is None and optional:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise _wrong(field, "a string or path", value)
    return value


def _paths(value: Any, field: str) -> list[str] | None:
    """A list of paths or names: a lone one is one item."""
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return [_path(value, field)]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise _wrong(field, "a list of strings", value)
    return [_path(v, field) for v in value]


def _level(value: Any) -> str | None:
    """search's tiers: "1,2", "2" or 2."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value, "level", optional=True)


def _folder(cwd: Any) -> Path | None:
    """grep's and glob's current folder: a folder (paths are printed relative to it)."""
    if cwd is None:
        return None
    p = Path(_path(cwd, "cwd"))
    if not p.is_dir():
        raise OvError("not_found" if not p.exists() else "invalid_path", f"{p}: cwd must be a folder",
                      field="cwd")
    return p


_LIST_OPTIONS = ("globs", "types", "types_not", "exclude", "ignores")  # (tags: ov.tags reads pairs too)
_INT_OPTIONS = ("before", "after", "max_count", "max_depth")
_NUMBER_OPTIONS = ("timeout", "deadline_s")


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """grep's and glob's keyword options with their types checked (lists, counts, times)."""
    out = dict(options)
    for k, v in options.items():
        if k in _LIST_OPTIONS:
            out[k] = _paths(v, k) or ()
        elif k in _INT_OPTIONS:
            _int(v, k)
        elif k in _NUMBER_OPTIONS and v is not None:
            from ov.config import MAX_TIMEOUT_S, TIMEOUT_RANGE  # noqa: PLC0415

            if not 0 < _number(v, k) <= MAX_TIMEOUT_S:  # also NaN
                # one name for both spellings: the command line's and `ov mcp`'s (`--timeout`)
                raise OvError("invalid_argument", TIMEOUT_RANGE, field="timeout")
    return out


# ---- building the index ------------------------------------------------------------------


def index(path: str | Path = ".", *, db: Path | None = None, embed: bool = True, full: bool = False,
          hidden: bool | None = None, no_ignore: bool = False, follow: bool = False,
          max_filesize: int | None = None, walk=None, progress=None, warn: Notice = _quiet,
          embedder=None, first_use: bool = False, notice: Notice = _quiet, first_query: str = "",
          background: bool = False, vectors_later: bool = False, stop=None):
    """Build or refresh the index of `path` (default `.`); returns an `IndexReport`.

    `progress(phase, done, total)` hears each step; it may also be a context manager
    (a progress bar), entered around the build. `embedder`: one already loaded (else the
    model is loaded when there is something to embed). `notice` hears a background worker
    stopped for this run, and the rows a run without vectors leaves without one. With
    `first_use`, the keyword rows of what can be read within a time budget now, and the
    rest by a background worker (ov.worker; `notice` hears its pid); it returns None when
    another process built the index meanwhile (this call waited for it). `first_query`:
    the query a first use answers; the files whose paths hold its words are read first
    within the budget. With `background` (and `embed`), every file's keyword rows now and
    the vectors by a background worker, as a first use leaves them (`notice` hears its pid):
    a tree edited while its first vectors are computed (tens of minutes) is searchable at
    once, where a plain `index` stops the worker and embeds the rest in the foreground.
    With `vectors_later` (and `embed`), every file's keyword rows and none of the vectors,
    which the index says are coming: a watcher (`watcher`) adds them between its batches.
    `stop()` true ends the run at its next batch of files, what was written kept (a first
    use leaves the rest to its worker)."""
    from ov.indexer import index_tree, options_for  # noqa: PLC0415
    from ov.query import path_words  # noqa: PLC0415

    root = Path(_path(path, "path"))
    opts = options_for(root, walk or walk_options(root, hidden, no_ignore, follow, max_filesize),
                       embed=embed, full=full)
    if first_use and first_query:
        opts = replace(opts, first_words=path_words(first_query))

    if vectors_later and embed:
        opts = replace(opts, embed=False, embed_later=True)
    later = False
    if background and embed:
        from ov.worker import enabled, model_available  # noqa: PLC0415

        # without a worker (OV_BACKGROUND=0) or the model (which then fails), a plain run
        later = enabled() and model_available(None)
        if later:
            opts = replace(opts, embed=False, embed_later=True, trigrams=False)

    def run(bar):
        from ov.paths import db_path_for  # noqa: PLC0415

        if later:
            from ov.store import Store  # noqa: PLC0415
            from ov.worker import resume  # noqa: PLC0415

            rep = index_tree(root, db, opts, progress=bar, warn=warn, notice=notice)
            with Store.open(Path(db) if db else db_path_for(root.resolve()), readonly=True) as store:
                pid = resume(store)  # none for a complete index
            if pid is not None:
                started.append(pid)
            return rep
        if not first_use:
            return index_tree(root, db, opts, progress=bar, warn=warn, embedder=embedder, notice=notice,
                              stop=stop)
        from ov.worker import first_use as first  # noqa: PLC0415

        rep, pid = first(root, Path(db) if db else db_path_for(root.resolve()), opts,
                         progress=bar, warn=warn, stop=stop)
        if pid is not None:
            started.append(pid)
        return rep

    started: list[int] = []
    go = run if first_use else lambda bar: _told(root, db, bar, run)
    if progress is not None and hasattr(progress, "__enter__"):
        with progress as bar:
            rep = go(bar)
    else:
        rep = go(progress)
    for pid in started:  # once the bar is gone: a terminal's live line took it in before
        notice(f"vectors are being added in the background (pid {pid}); "
               "`ov status` shows progress, `ov index --stop` stops it")
        if rep is not None:
            rep.worker_pid = pid
    return rep


def summary(r) -> str:
    """One line for an `IndexReport`: what `ov index` prints at the end."""
    return (f"indexed {r.root}: {r.added} added, {r.updated} updated, {r.removed} removed, "
            f"{r.unchanged} unchanged, {r.skipped} skipped; {r.chunks} chunks, {r.embedded} embedded"
            f"{f' and {r.reused} vector(s) copied from the same text' if r.reused else ''} in {r.seconds:.2f}s"
            f"{' (time budget reached: the rest in the background)' if getattr(r, 'partial', False) else ''}")


def committed(path: str | Path = ".", *, db: Path | None = None):
    """What the index of `path` holds as committed now. An `index` stopped midway (Ctrl-C,
    SIGTERM, a kill) keeps every batch it committed, and the next `index` goes on from
    them: this is what it kept. A `Committed`, or None when there is no index yet or it
    cannot be read."""
    from ov.model import Committed  # noqa: PLC0415
    from ov.paths import db_path_for  # noqa: PLC0415
    from ov.store import Store  # noqa: PLC0415
    from ov.store.db import KEYWORDS_META, sqlite_errors  # noqa: PLC0415

    db_path = Path(db) if db else db_path_for(Path(_path(path, "path")).resolve())
    try:
        with Store.open(db_path, readonly=True) as store:
            return Committed(store.file_count(), *store.coverage(), bool(store.get_meta(KEYWORDS_META)))
    except (OvError, *sqlite_errors()):
        return None


def watcher(path: str | Path = ".", *, db: Path | None = None, embed: bool = True,
            hidden: bool | None = None, no_ignore: bool = False, follow: bool = False,
            max_filesize: int | str | None = None, walk=None, embedder=None, on_update=None,
            warn: Notice = _quiet):
    """A `Watcher` that keeps the index of `path` fresh: `.run()` blocks, `.start()` runs
    it in a thread, `.stop()` ends it. Each batch of saved, added or deleted files is
    re-indexed alone (`on_update(report)` hears it); settings as for `index`."""
    from ov.indexer import options_for  # noqa: PLC0415
    from ov.watch import Watcher  # noqa: PLC0415

    root = Path(path)

    def settings():  # the tree's embed-skip settings too, as `index` reads them
        return options_for(root, walk or walk_options(root, hidden, no_ignore, follow, max_filesize),
                           embed=embed)

    # read again before each catch-up: a change of the tree's config asks for one
    return Watcher(root, db, settings(), embedder=embedder, on_update=on_update, warn=warn,
                   settings=settings)


# ---- an open index -----------------------------------------------------------------------


def _open_store(db_path: Path, readonly: bool, notice: Notice = _quiet):
    from ov.store.warm import WarmStore  # noqa: PLC0415 - importing the store is not free: grep and glob never need it

    return WarmStore.open(db_path, readonly=readonly, upgrading=lambda path: _upgrade_hold(path, notice))


@contextlib.contextmanager
def _upgrade_hold(db_path: Path, notice: Notice):
    """Around the upgrade in place of an index of an older schema (ov.store.db
    `Database.open`): its background worker stopped first and the index lock held. A worker
    of the older ov that still ran went on writing its rows in their old form into the new
    schema, and marked them current (an upgrade review: grep's trigram rows of schema 7 in
    a schema-9 index). The next search starts a worker of this ov to finish the index."""
    from ov.indexer import IndexLock  # noqa: PLC0415
    from ov.worker import stop  # noqa: PLC0415

    stopped = stop(db_path)
    if stopped is not None:
        notice(f"stopped the background worker (pid {stopped}) to upgrade the index {db_path} "
               "made by an older ov")
    with IndexLock(db_path):
        yield


def _resume_worker(store, db_path: Path, notice: Notice) -> None:
    """Start a worker for an index that still waits for work (ov.worker.resume), saying so,
    as at first use: one stopped to free the CPU would otherwise run again for hours
    unseen; one that failed, with why; none on a disk without room, with why."""
    from ov.indexer import worker_paused, worker_state  # noqa: PLC0415
    from ov.worker import enabled, last_failure, left_to_do, lost_worker, low_disk, resume  # noqa: PLC0415

    running = worker_state(db_path) is not None
    failed = None if running else last_failure(db_path)
    lost = None if running or failed else lost_worker(db_path)
    pid = resume(store)  # a worker stopped or killed before it finished is started again
    if pid is None and not running and enabled() and not worker_paused(db_path) \
            and (free := low_disk(db_path)) is not None and left_to_do(store):
        notice(f"no background worker started to finish the index: the disk holding it has "
               f"{free / 2**20:.1f} MB free; free some space, or run `ov index`")
    if pid is not None and not running:
        notice((f"the last background worker ended on an error ({failed}; .ov/worker.log); "
                f"started another (pid {pid})" if failed else
                (f"the last background worker (pid {lost}) ended before it finished (killed?); "
                 if lost else "")
                + f"started a background worker (pid {pid}) to finish the index's "
                + " and ".join(", ".join(left_to_do(store)).rsplit(", ", 1)))
               + "; `ov status` shows progress, `ov index --stop` stops it")


class Index:
    """An open index and its tree's root: search, find, context, read, tag, status,
    manifest. Use as a context manager, or call `close()`."""

    def __init__(self, store, root: Path, embedder=None) -> None:
        self.store = store
        self.root = Path(root)
        self.embedder = embedder  # loaded by the first query that needs it, then kept
        self.notes: list[str] = []  # said in every ranked result (a read-only index)
        self.closed = False
        self.readonly_asked = False  # Index.open(readonly=True): a write is the caller's mistake

    def _embedder(self):
        if self.embedder is None:
            from ov.embed import load_embedder  # noqa: PLC0415

            self.embedder = load_embedder("query")
        return self.embedder

    @classmethod
    def open(cls, path: str | Path | None = None, *, db: Path | None = None, auto_index: bool = False,
             readonly: bool = False, progress=None, notice: Notice = _quiet,
             warn: Notice = _quiet, embedder=None, first_query: str = "", stop=None) -> Index:
        """The nearest index at or above `path` (default: the current folder; a file's
        folder; a path that does not exist is `not_found`), or `db`.

        With `auto_index`, a tree without one gets one built at `path` first (first use);
        `notice` hears that it happens and its summary, `progress` its steps. Without it,
        a missing index is `not_found`. An index whose first build was killed is finished
        the same way (else opening it says it is unfinished). `first_query`: the query the
        first use answers (its files are read first: `index`). `embedder`: one already
        loaded, kept for every query (else the first semantic query loads one, and it is
        kept too). `stop`: as `index`'s, for the first build."""
        from ov.store.db import unfinished, writable  # noqa: PLC0415

        asked_readonly = readonly
        scope = Path.cwd() if path is None else Path(_path(path, "path"))
        if not scope.exists():  # a typo: not a new, empty tree, nor the index of a folder above
            raise OvError("not_found", f"{scope.resolve()}: no such folder", field="path")
        scope = scope if scope.is_dir() else scope.parent
        found = locate(scope, db if db is None else Path(_path(db, "db")))
        if (found is not None and not readonly and os.access(found[0], os.R_OK) and not writable(found[0])
                and not unfinished(found[0])):
            # a shared or read-only index: read as it stands (a hit is still checked against
            # its file); what writes (tag, index, a session's ledger) says it cannot
            warn(_read_only_note(found[0]))
            readonly = True
        if found is None and not auto_index:
            raise OvError("not_found", f"no index found at or above {scope.resolve()}; run `ov index`",
                          field="db")
        built = False  # this call built the index: it started what it left to a worker
        if auto_index and (found is None or unfinished(found[0])):
            from ov.config import load_config  # noqa: PLC0415

            home = _first_use_root(scope) if found is None else found[1]
            # a bad config is said before "building one", which it stops
            load_config(home)
            if found is None:
                notice(f"no index found; building one at {home.resolve() / '.ov'} ("
                       + ("the top of this git work tree; " if home != scope else "")
                       + "first use: keywords now, vectors now or in the background)")
            else:
                notice(f"the index at {found[0]} is not built yet; building it (keywords now, "
                       "vectors now or in the background)")
            rep = index(home, db=None if found is None else found[0],
                        progress=progress, warn=warn, first_use=True, notice=notice,
                        first_query=first_query, stop=stop)
            if rep is not None:  # None: another process built it while this one waited
                notice(summary(rep))
                built = True
            found = locate(scope, db)
            if found is None:
                raise OvError("internal", "the index could not be built")
        db_path, root = found
        store = _open_store(db_path, readonly, notice)
        # (not after a build here: the worker it just spawned may not yet own its state
        # file, and a second one was started, said with its pid, and exited at once)
        if auto_index and not readonly and not built:
            _resume_worker(store, db_path, notice)
        ix = cls(store, root, embedder)
        ix.readonly_asked = asked_readonly
        if readonly and found is not None and not writable(found[0]):
            ix.notes.append(_read_only_note(found[0]))
        return ix

    def keep_vectors(self) -> None:
        """Hold the index's vectors in memory from now on (ov.store.vectors): semantic and hybrid
        queries then take the same hits from a matrix product instead of sqlite-vec's scan.
        For a long-lived index (`ov mcp`): the load costs more than one query saves. The
        matrix follows the index as other connections change it."""
        self._open()
        self.store.keep_vectors()

    def keep_keywords(self) -> None:
        """Rank keyword queries from postings held in memory from now on
        (ov.store.postings): the same hits and scores as FTS5's bm25, each word's rows read
        once per state of the index instead of ranked by SQLite at every query. For a
        long-lived index (`ov mcp`)."""
        self._open()
        self.store.keep_keywords()

    def close(self) -> None:
        self.closed = True
        self.store.close()

    def _open(self) -> None:
        """A closed Index says so (its store's errors would read as a damaged index)."""
        if self.closed:
            raise OvError("invalid_argument", "this Index is closed; open it again with ov.Index.open",
                          field="index")

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- ranked search --

    def request(self, query: str, *, search_type: str | None = None, limit: int | None = None,
                threshold: float | None = None, after: str | None = None, before: str | None = None,
                time_field: str = "updated_at", tags: Sequence[str] | None = None,
                types: Sequence[str] | None = None, level: str | None = None,
                cursor: str | None = None, explain: bool = False, read_content: bool = False,
                uri: Sequence[str] | None = None, exclude_uri: Sequence[str] | None = None,
                globs: Sequence[str] | None = None, all_chunks: bool = False, cwd: Path | None = None,
                filters: dict | None = None):
        """A checked `SearchRequest`: options merged with the tree's config, paths (`uri`,
        `exclude_uri`: relative to `cwd`, else to the root) resolved under the root; `globs`
        (`-g`) and `exclude_uri`'s globs read from `cwd` as grep reads `-g`. `filters` is
        `search_filters`' result when the caller checked the options already (before opening)."""
        from ov.engine import SearchRequest, scope_paths  # noqa: PLC0415
        from ov.globs import read_from, split_excludes  # noqa: PLC0415
        from ov.store import Filters  # noqa: PLC0415

        self._open()
        _number(threshold, "threshold")
        _text(cursor, "cursor", optional=True)
        uri, exclude_uri = _paths(uri, "uri"), _paths(exclude_uri, "exclude_uri")
        cwd = self.root if cwd is None else cwd  # as for `path`
        kw = filters if filters is not None else search_filters(
            query, search_type=search_type, limit=limit, time_field=time_field, after=after,
            before=before, tags=tags, level=level, types=types, globs=globs,
            exclude_uri=exclude_uri, cwd=cwd)
        st, lim = search_settings(self.root, search_type, limit)
        ex_paths, ex_globs = split_excludes(exclude_uri or (), [cwd, self.root])
        f = Filters(uris=scope_paths(self.root, list(uri) if uri else None, cwd, must_exist=True),
                    exclude_uris=scope_paths(self.root, ex_paths, cwd, field="exclude_uri", from_root=True),
                    exclude_globs=tuple(ex_globs), glob_at=read_from(os.fspath(self.root), os.path.abspath(cwd)),
                    **kw)
        return SearchRequest(query=query, search_type=st, limit=lim, threshold=threshold, filters=f,
                             cursor=cursor, explain=explain, all_chunks=all_chunks,
                             read_content=read_content)

    def search(self, query: str, **options: Any):
        """Ranked search (`ov search`): hybrid by default; `search_type` keywords or
        semantic; the options are `request`'s. Returns a `SearchResult`."""
        from ov.engine import search  # noqa: PLC0415

        req = self.request(query, **options)
        self._new_query()
        res = search(self.store, self.root, req, self._embedder)
        res.warnings.extend(self.notes)
        return res

    def _new_query(self) -> None:
        if hasattr(self.store, "new_query"):  # a warm store (any store may be handed in)
            self.store.new_query()

    def _writing(self, write):
        """`write()` again while `ov index --full` replaces the index under it (`Superseded`:
        the write waited on the old file, and committed nothing): the new file follows
        within moments of the mark, and the write goes there. A mark no running rebuild
        holds (one was killed between its last two steps) is taken back first."""
        from ov.store.db import Superseded  # noqa: PLC0415

        deadline = time.monotonic() + SUPERSEDED_WAIT_S
        while True:
            try:
                return write()
            except Superseded:
                if time.monotonic() > deadline:
                    raise
                from ov.indexer import clear_stale_mark  # noqa: PLC0415

                # no rebuild holds the index lock: its mark was left by one that stopped
                clear_stale_mark(self.store.path)
                time.sleep(0.05)
                self._current()

    def _current(self) -> None:
        """The index file as it is now (a warm store follows a file renamed over it)."""
        self._open()
        if hasattr(self.store, "follow_replacement"):
            self.store.follow_replacement()

    def find(self, query: str, **options: Any):
        """Semantic search (`ov find`): vectors only."""
        if options.get("search_type") not in (None, "semantic"):
            raise OvError("invalid_argument", "find is semantic search: it takes no search_type "
                          f"({options['search_type']!r}); use search", field="search_type")
        return self.search(query, **{**options, "search_type": "semantic"})

    def context(self, query: str, *, max_tokens: int | None = None, detail: str | dict | None = None,
                session_id: str | None = None, dedup_turns: int | None = None,
                ignored: Sequence[str] = (), **options: Any):
        """Context mode (`ov search --mode context`): the best context packed under
        `max_tokens`. Returns a `ContextResult`."""
        from ov.engine import context  # noqa: PLC0415

        _text(session_id, "session_id", optional=True)
        _int(dedup_turns, "dedup_turns")
        det = context_options(detail, max_tokens)
        req = self.request(query, **options)

        def run():
            self._new_query()
            return context(self.store, self.root, req, max_tokens=max_tokens, detail=det,
                           session_id=session_id, dedup_turns=dedup_turns, ignored=list(ignored),
                           embedder_factory=self._embedder)

        res = self._writing(run) if session_id else run()
        res.warnings.extend(self.notes)
        res.root = str(self.root)
        return res

    # -- files --

    def path(self, path: str, cwd: Path | None = None) -> str:
        """A user's path as a root-relative path; `invalid_path` when it is malformed or
        lies outside the root. A relative path is taken from `cwd` (the command line
        passes the current folder), else from the index root."""
        from ov.paths import resolve  # noqa: PLC0415

        cwd = self.root if cwd is None else Path(_path(cwd, "cwd"))
        return resolve(self.root, cwd, _path(path, "path"), must_exist=False, links=True)

    def read(self, path: str, level: int | None = None, cwd: Path | None = None):
        """One tier of a file or folder (`ov read`): 0 abstract, 1 overview, 2 full text.
        `FILE:LINE` gives the passage holding the line, `FILE:START-END` those lines, from the
        file as it is now (the result's `start_line` and `end_line` say which)."""
        from ov.engine import read  # noqa: PLC0415

        self._current()
        return replace(read(self.store, self.root, self.path(path, cwd), _int(level, "level")), root=str(self.root))

    def tag(self, path: str, tags: str | Sequence[str] | Sequence[tuple[str, str]], mode: str = "append",
            recursive: bool = False, cwd: Path | None = None):
        """Set, add or remove tags (`ov tag`): "k=v" strings or (key, value) pairs, checked
        as the command line checks them (`invalid_argument`)."""
        from ov.engine import tag  # noqa: PLC0415
        from ov.query import parse_tags  # noqa: PLC0415

        pairs = parse_tags(tags)
        self._current()
        if self.readonly_asked:
            raise OvError("invalid_argument", "this Index was opened with readonly=True; open it "
                          "without it to tag", field="readonly")
        rel = self.path(path, cwd)
        return replace(self._writing(lambda: tag(self.store, self.root, rel, pairs, mode, recursive)),
                       root=str(self.root))

    def status(self):
        """What is indexed (`ov status`), and each setting with where it came from."""
        from ov.config import load_config  # noqa: PLC0415
        from ov.engine import status  # noqa: PLC0415

        self._current()
        # a broken index is an error (DESIGN), here too: a CI check reading `ov status` passed
        # on an index every search refused (cheap checks: every table there, each readable)
        if problem := self.store.health():
            from ov.store.db import damaged  # noqa: PLC0415

            raise damaged(self.store.path, problem)
        return replace(status(self.store, self.root), settings=load_config(self.root).settings(),
                       warnings=list(self.notes) + _older_layout(self.store))

    def manifest(self, grep_flags: Sequence[str] = ()):
        """What this build and this index can serve (`ov manifest`). `grep_flags`: the
        command line's grep flags, which only it knows (`ov manifest` passes them)."""
        from ov.engine import manifest  # noqa: PLC0415

        self._current()
        return manifest(self.store, self.root, list(grep_flags))


# ---- grep and glob: over the files, with or without an index ------------------------------


def _older_layout(store) -> list[str]:
    """A note when the index's rows are of an older layout (ov.indexer.ROWS_LAYOUT): it
    answers from them until `ov index`, or a background worker a search starts, re-chunks
    the files (a review found nothing said of it, and `ov index` then reported unchanged
    files as updated)."""
    from ov.indexer import RESPLIT_KINDS, ROWS_LAYOUT, older_layout, worker_paused  # noqa: PLC0415
    from ov.worker import enabled  # noqa: PLC0415

    layout = older_layout(store)
    if layout is None:
        return []
    kinds = RESPLIT_KINDS.get(layout)
    names = sorted(kinds or ())
    listed = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else "".join(names)
    which = f"its {listed} files" if names else "every file"
    # (no worker starts after `ov index --stop`, nor with OV_BACKGROUND=0)
    who = ("the next `ov index`, or the background worker the next search starts,"
           if enabled() and not worker_paused(store.path) else "the next `ov index`")
    return [f"the index's passages are of an older layout ({layout}; now {ROWS_LAYOUT}): {who} "
            f"cuts {which} again, keeping the vectors of texts that did not change"]


def _told(root: Path, db: Path | None, bar, run):
    """`run(bar)`, an `ov index`, with its progress kept where `ov status` in another shell
    reads it (ov.worker.Reported), as the background worker's is."""
    from ov.paths import db_path_for  # noqa: PLC0415
    from ov.worker import Reported  # noqa: PLC0415

    told = Reported(Path(db) if db else db_path_for(root.resolve()), bar)
    try:
        return run(told)
    finally:
        told.remove()


def _superuser() -> bool:
    return os.geteuid() == 0


def _first_use_root(scope: Path) -> Path:
    """Where a first use builds the index: the top of the git work tree `scope` lies in,
    as a checkout is one project to git and rg users (a later search from any folder of it
    finds the same index, where an index of the folder a first search ran in would be one
    of several); else `scope`. Not a top that:
    - is the home folder or the file system's root (a dotfiles repository holding a whole
      home folder), or one this user cannot write in (one whose `.git` another user owns is
      no top of this user's: ov.walk.git_top_above);
    - holds an `.ov` that is not this user's to use (another user's, or one every user may
      write in: passed over, and opening it is refused);
    - would leave `scope` out of its index: a git-ignored or hidden folder (`build/`,
      `node_modules/pkg`, `.notes/`) searched from inside found nothing, then or later;
    - any, for root: `sudo ov search` in /etc/nginx would index all of an etckeeper /etc."""
    from ov.config import untrusted  # noqa: PLC0415
    from ov.walk import left_out_by_rules  # noqa: PLC0415
    from ov.walk import git_top_above  # noqa: PLC0415

    top = git_top_above(str(scope.resolve()))
    if top is None or _superuser():
        return scope
    at = Path(top)
    try:
        home = Path.home().resolve()
    except RuntimeError:  # no HOME and no passwd entry (a bare container)
        home = at
    own = at / ".ov"
    if (at in (home, Path(at.anchor)) or not os.access(at, os.W_OK | os.X_OK)
            or (os.path.lexists(own) and (os.path.islink(own) or not own.is_dir() or untrusted(own / "index.db")))):
        return scope
    try:
        left_out = left_out_by_rules(at, scope.resolve().relative_to(at).as_posix())
    except OvError:  # the top's config is broken: its own search says so
        return scope
    return scope if left_out else at


def _root_config(cwd: Path | None):
    """The config of the tree grep and glob search: the nearest index root above `cwd`,
    else `cwd` itself."""
    from ov.config import load_config  # noqa: PLC0415
    from ov.paths import search_root  # noqa: PLC0415

    return load_config(search_root(Path.cwd() if cwd is None else Path(cwd)))


def grep(pattern: str, paths: Sequence[str] = (), *, cwd: Path | None = None,
         hidden: bool | None = None, node_limit: int | None = None, stats=None,
         **options: Any) -> tuple[Iterator, Any]:
    """Search file contents (`ov grep`); returns (records, stats). The records stream
    (`Match`, or `FileCount` with `mode` "count"/"files"); `stats` fills as they are read
    and says when `node_limit` cut. `hidden`, `node_limit` and ignore lines come from the
    tree's config unless given; the other options are `ov.search.files.iter_grep`'s.
    `deadline_s` bounds the whole run in wall time as `ov grep --timeout` does (default
    60 s; None: no bound); `timeout` is the per-file regex limit (default 5 s of CPU)."""
    from ov.search import files as driver  # noqa: PLC0415

    from ov.config import GREP_TIMEOUT_S  # noqa: PLC0415

    pattern, paths, cwd = _text(pattern, "pattern"), _paths(paths, "paths") or (), _folder(cwd)
    _int(node_limit, "node_limit")
    options.setdefault("deadline_s", GREP_TIMEOUT_S)  # as `ov grep --timeout` (None: no limit)
    cfg = _root_config(cwd)
    st = stats if stats is not None else driver.GrepStats()
    records = driver.iter_grep(pattern, paths, cwd=cwd, stats=st,
                               **cfg.search_options(hidden, node_limit), **_options(options))
    return records, st


def grep_result(records: Sequence, stats, mode: str = "matches"):
    """The `GrepResult` of a finished grep (what `-o json` and `ov mcp` return): its
    records under the key of `mode`, the counts, cuts and warnings of `stats`."""
    from ov.search.scope import grep_result as result  # noqa: PLC0415

    return result(records, stats, mode)


def files(paths: Sequence[str] = (), *, cwd: Path | None = None, hidden: bool | None = None,
          node_limit: int | None = None, stats=None, **options: Any) -> tuple[Iterator[str], Any]:
    """The files a grep would search (`ov grep --files`); returns (paths, stats).
    Settings merge as for `grep`; the other options are `ov.search.files.iter_files`'."""
    from ov.search import files as driver  # noqa: PLC0415

    paths, cwd = _paths(paths, "paths") or (), _folder(cwd)
    _int(node_limit, "node_limit")
    cfg = _root_config(cwd)
    st = stats if stats is not None else driver.GrepStats()
    found = driver.iter_files(paths, cwd=cwd, stats=st, **cfg.search_options(hidden, node_limit),
                              **_options(options))
    return found, st


def glob(pattern: str, path: str | None = None, *, cwd: Path | None = None,
         hidden: bool | None = None, node_limit: int | None = None, stats=None,
         **options: Any):
    """Paths matching a glob (`ov glob`); returns a `GlobResult`. Settings merge as for
    `grep`; the other options are `ov.search.glob.glob`'s."""
    from ov.search import glob as finder  # noqa: PLC0415

    pattern, path, cwd = _text(pattern, "pattern"), _path(path, "path", optional=True), _folder(cwd)
    _int(node_limit, "node_limit")
    if "fields" in options:  # "path,size" as the command line takes it, or a list
        f = options["fields"]
        options = {**options, "fields": [x.strip() for x in f.split(",") if x.strip()] if isinstance(f, str)
                   else _paths(f, "fields") or []}
    cfg = _root_config(cwd)
    st = stats if stats is not None else finder.GrepStats()
    return finder.glob(pattern, path, cwd=cwd, stats=st, **cfg.search_options(hidden, node_limit),
                       **_options(options))
