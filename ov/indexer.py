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

Progress goes through the `progress(phase, done, total)` hook; the CLI draws it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ov import chunk as chunking
from ov import tiers
from ov.config import DB_NAME, INDEX_DIRNAME, WalkOptions, db_path_for
from ov.errors import OvError
from ov.model import Chunk, IndexReport
from ov.read import FileText, content_hash, freshness, kind_of, read_under
from ov.store import Store, damaged, prepare_index_dir, salvage_file_meta, sqlite_errors, title_of
from ov.walk import ALWAYS_SKIPPED, is_ignored, walk

Progress = Callable[[str, int, "int | None"], None]

COMMIT_FILES = 200  # files per transaction
COMMIT_SECONDS = 1.0
EMBED_COMMIT = 256  # chunks per transaction while embedding
LOCK_WAIT_S = float(os.environ.get("OV_LOCK_WAIT", "3"))
CHUNK_TOKENS = 200


@dataclass(frozen=True)
class IndexOptions:
    embed: bool = True
    full: bool = False
    walk: WalkOptions = WalkOptions()


class IndexLock:
    """An exclusive advisory lock next to the database; released on close or process death."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(db_path).with_name(Path(db_path).name + ".lock")
        self.fd: int | None = None

    def acquire(self, wait_s: float = LOCK_WAIT_S) -> None:
        try:  # never through a link put where the lock goes (issue 17)
            self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)
                              | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as e:
            raise OvError("invalid_path", f"{self.path}: cannot open the index lock "
                          f"({e.strerror or e})", field="db") from None
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise OvError("index_busy",
                                  "another `ov index` is updating this index; try again when it ends",
                                  retryable=True) from None
                time.sleep(0.05)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


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


# set once an index run has given every prose file its sentence rows (ov.chunk.sentences)
SENTENCES_META = "sentences"


def tier_chunks(text: str, path: str) -> tuple[str, str, list[Chunk]]:
    """(abstract, overview, L0/L1 chunk rows). Tier rows carry the tier text, no file span."""
    abstract = tiers.abstract(text, path)
    overview = tiers.overview(text, path)
    rows = []
    if abstract:
        rows.append(Chunk(0, 0, 1, 1, abstract, level=0))
    if overview:
        rows.append(Chunk(0, 0, 1, 1, overview, level=1))
    return abstract, overview, rows


def index_tree(root: Path, db_path: Path | None = None, opts: IndexOptions = IndexOptions(), *,
               progress: Progress | None = None, warn: Callable[[str], None] | None = None,
               embedder=None) -> IndexReport:
    """Build or refresh the index of `root`. Returns what changed."""
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
    if opts.embed and embedder is None:
        # a missing model must fail before anything is changed (not after --full cleared
        # the index); the model itself is loaded only when there is something to embed
        from ov.embed import check_available  # noqa: PLC0415 - cheap: no onnxruntime

        check_available()
    with IndexLock(db_path):
        store, problem = _open_checked(db_path, thorough=opts.full)
        if problem is not None:
            if not opts.full:  # an incremental run must not report ok on a damaged index
                raise damaged(db_path, problem)
            warn_(f"{db_path} is damaged ({problem}); rebuilding it from nothing")
            _rebuild(db_path, root, opts, report, progress, warn_, embedder)
        else:
            try:
                _fill(store, root, opts, report, progress, warn_, embedder)
            finally:
                store.close()
    report.seconds = round(time.perf_counter() - t0, 3)
    report.warnings = warnings
    return report


def _fill(store: Store, root: Path, opts: IndexOptions, report: IndexReport,
          progress: Progress | None, warn: Callable[[str], None], embedder) -> None:
    with store.tx():
        store.set_meta("root", str(root))
    _lexical_phase(store, root, opts, report, progress, warn)
    if opts.embed:
        _embed_phase(store, report, progress, embedder)


def _open_checked(db_path: Path, thorough: bool) -> tuple[Store | None, str | None]:
    """The index at `db_path` opened for writing, or (None, what is wrong with it) when it
    is damaged (issue 17). `thorough` (for --full) adds SQLite's quick_check; without it
    the checks are cheap: the tables, the file's length, each table's first rows."""
    try:
        store = Store.create(db_path)
    except OvError as e:
        if e.code in ("index_busy", "invalid_path") or (
                "not an ov index" in e.message and db_path.parent.name != INDEX_DIRNAME):
            raise  # a link under .ov, a busy index, someone else's database: not ours to replace
        return None, e.message
    except sqlite_errors() as e:
        return None, str(e)
    problem = store.health(thorough)
    if problem is not None:
        store.close()
        return None, problem
    return store, None


def _rebuild(db_path: Path, root: Path, opts: IndexOptions, report: IndexReport,
             progress: Progress | None, warn: Callable[[str], None], embedder) -> None:
    """A damaged index rebuilt from nothing: a new file beside it, filled, checkpointed,
    then renamed over it (atomic: a reader sees the old file or the new one). The tags
    and first-seen times the old file still yields are carried over."""
    new = db_path.with_name(db_path.name + ".rebuild")
    for p in (new, *(Path(f"{new}{s}") for s in ("-wal", "-shm", "-journal"))):
        if os.path.lexists(p):
            os.unlink(p)
    kept = salvage_file_meta(db_path)
    store = Store.create(new)
    try:
        _fill(store, root, opts, report, progress, warn, embedder)
        if kept:
            with store.tx():
                store.restore_file_meta(kept)
        store.checkpoint()
    finally:
        store.close()
    for s in ("-wal", "-shm", "-journal"):  # the old file's: they would be replayed into the new
        p = Path(f"{db_path}{s}")
        if os.path.lexists(p):
            os.unlink(p)
    os.replace(new, db_path)
    for s in ("-wal", "-shm"):
        p = Path(f"{new}{s}")
        if os.path.lexists(p):
            os.unlink(p)


def _lexical_phase(store: Store, root: Path, opts: IndexOptions, report: IndexReport,
                   progress: Progress | None, warn: Callable[[str], None]) -> None:
    known = store.file_states()
    seen: set[str] = set()
    pending = 0
    last_commit = time.monotonic()
    changed_any = False

    skipped: list[tuple[str, str]] = []  # (path, reason): `ov status` lists them

    def on_skip(path: str, reason: str) -> None:
        report.skipped += 1
        # a name that is not UTF-8 (surrogate escapes) is kept as its escaped spelling
        skipped.append((path.encode("utf-8", "backslashreplace").decode(), reason))

    store.conn.execute("BEGIN IMMEDIATE")
    split_prose = bool(known) and store.get_meta(SENTENCES_META) is None
    try:
        for n, entry in enumerate(walk(root, opts.walk, on_warning=warn, on_skip=on_skip), 1):
            if progress:
                progress("scan", n, None)
            try:
                entry.path.encode("utf-8")
            except UnicodeEncodeError:  # the index stores names as UTF-8 text
                shown = entry.path.encode("utf-8", "backslashreplace").decode()
                warn(f"{shown}: file name is not valid UTF-8; skipped")
                on_skip(shown, "name_not_utf8")
                continue
            state = known.get(entry.path)
            # an index from before sentence rows re-splits its prose files once (their
            # passages and tiers keep their vectors by hash; only the sentences are embedded)
            resplit = split_prose and state is not None and kind_of(entry.path) != "code"
            if (not opts.full and state and not resplit
                    and (state[1], state[2], state[4], state[5]) == _freshness(entry)):
                seen.add(entry.path)
                report.unchanged += 1
                continue
            try:
                # opened under the root now: a link swapped in since the walk is refused
                ft = read_under(str(root), entry.path, max_bytes=opts.walk.max_filesize)
            except OSError as e:
                warn(f"{entry.path}: {e.strerror or e}")
                on_skip(entry.path, "unreadable")
                continue
            if ft is None:  # binary
                on_skip(entry.path, "binary")
                continue
            seen.add(entry.path)
            if not opts.full and state and state[3] == ft.hash and not resplit:
                store.touch_file(state[0], ft.size, ft.mtime_ns, ft.ctime_ns, ft.inode)
                report.unchanged += 1
            else:
                _index_file(store, entry.path, ft, state, report, reuse=not opts.full)
                changed_any = True
            pending += 1
            if pending >= COMMIT_FILES or time.monotonic() - last_commit > COMMIT_SECONDS:
                if changed_any:
                    store.bump_generation()
                store.conn.execute("COMMIT")
                store.conn.execute("BEGIN IMMEDIATE")
                pending, last_commit = 0, time.monotonic()
        for path, state in known.items():
            if path not in seen:
                store.delete_file(state[0])
                report.removed += 1
                changed_any = True
        if changed_any:
            store.bump_generation()
            store.record_chunk_count()
        store.set_meta(SENTENCES_META, "1")
        store.set_skipped(skipped)
        store.conn.execute("COMMIT")
    except BaseException:
        try:
            store.conn.execute("ROLLBACK")
        except Exception:
            pass
        raise


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


def _index_file(store: Store, path: str, ft: FileText, state, report: IndexReport, *,
                reuse: bool = True) -> None:
    """(Re)index one file: its row, tiers and chunks replace the old ones in the same
    transaction, so a search never sees the file half-written. `reuse` copies vectors of
    identical chunk text (off for --full, which re-embeds everything)."""
    text = ft.text
    abstract, overview, tier_rows = tier_chunks(text, path)
    body = chunking.chunk_text(text, path, max_tokens=CHUNK_TOKENS)
    title = title_of(body[0].text) if body else ""
    # the vectors of the file's chunks that stay the same are kept (by text hash)
    kept = store.file_vectors(state[0]) if state and reuse else {}
    if state:  # before the row takes its new title: the old keyword rows carry the old one
        store.delete_chunks(state[0])
        report.updated += 1
    else:
        report.added += 1
    file_id = store.upsert_file(
        path, ft.size, ft.mtime_ns, ft.hash, ftype=tiers.file_type(path), category=tiers.category(path),
        abstract=abstract, overview=overview, tags=_front_matter_tags(text), title=title,
        ctime_ns=ft.ctime_ns, inode=ft.inode)
    # sentence rows: vectors only, evidence for their passages (ov.rank.SENTENCE_SHARE)
    sent_rows = chunking.sentences(text, body) if kind_of(path) != "code" else []
    chunks = body + tier_rows + sent_rows
    hashes = [content_hash(c.text.encode("utf-8")) for c in chunks]
    ids = store.insert_chunks(file_id, chunks, hashes, title)
    if reuse:
        report.reused += store.reuse_vectors(
            ids, {cid: kept[h] for cid, h in zip(ids, hashes) if h in kept})
    report.chunks += sum(1 for c in chunks if c.level == 2)


def _embed_phase(store: Store, report: IndexReport, progress: Progress | None, embedder) -> None:
    pending = store.pending_embeddings()
    if not pending:
        return
    if embedder is None:
        from ov.embed import load_embedder  # noqa: PLC0415 - only indexing with vectors needs it

        embedder = load_embedder("index")
    with store.tx():
        model = store.get_meta("model")
        if model and model != embedder.model_id:
            raise OvError("unsupported",
                          f"this index was embedded with {model!r}, not {embedder.model_id!r}; "
                          "rebuild it with `ov index --full`")
        store.set_meta("model", embedder.model_id)
    ids = [r[0] for r in pending]
    total = len(ids)
    done = 0
    if progress:
        progress("embed", 0, total)
    for start in range(0, total, EMBED_COMMIT):
        part = ids[start:start + EMBED_COMMIT]
        texts = store.chunk_texts(part)
        part = [i for i in part if i in texts]
        # batch size: the embedder's default, the fastest and leanest measured (ov/embed.py)
        vecs = embedder.embed([texts[i] for i in part])
        blobs = [v.astype("float32").tobytes() for v in vecs]
        with store.tx():
            store.store_vectors(part, blobs)
        done += len(part)
        report.embedded += len(part)
        if progress:
            progress("embed", done, total)


def index_paths(root: Path, rels, db_path: Path | None = None, opts: IndexOptions = IndexOptions(), *,
                warn: Callable[[str], None] | None = None, embedder=None) -> IndexReport:
    """Re-index only `rels`: root-relative paths a watcher saw change (files or folders,
    added, modified or deleted), without walking the rest of the tree.

    A folder is walked (its files as `index_tree` would see them, and rows under it that
    the walk no longer yields are removed); a file is re-read and compared by content
    hash (the watcher says it changed, so size and mtime are not trusted to say it did
    not); a path that is gone, ignored, a symlink the walk would skip, over the size cap
    or binary loses its rows. Same lock and one transaction as `index_tree`, then the
    embedding phase, which also finishes whatever an interrupted run left unembedded."""
    t0 = time.perf_counter()
    root = Path(root).resolve()
    db_path = Path(db_path) if db_path else db_path_for(root)
    report = IndexReport(root=str(root))
    warn_ = warn or (lambda _m: None)
    todo = sorted({r for r in (os.path.normpath(str(x)).replace(os.sep, "/") for x in rels)
                   if r not in (".", "") and not r.startswith("../") and r != ".."
                   and not os.path.isabs(r) and not ALWAYS_SKIPPED.intersection(r.split("/"))})
    prepare_index_dir(db_path)
    with IndexLock(db_path):
        store, problem = _open_checked(db_path, thorough=False)
        if problem is not None:  # `ov index --full` rebuilds it; a watcher must not write into it
            raise damaged(db_path, problem)
        try:
            store.conn.execute("BEGIN IMMEDIATE")
            try:
                changed = _refresh_paths(store, root, todo, opts, report, warn_)
                if changed:
                    store.bump_generation()
                    store.record_chunk_count()
                store.conn.execute("COMMIT")
            except BaseException:
                try:
                    store.conn.execute("ROLLBACK")
                except Exception:
                    pass
                raise
            if opts.embed:
                _embed_phase(store, report, None, embedder)
        finally:
            store.close()
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _refresh_paths(store: Store, root: Path, rels: list[str], opts: IndexOptions, report: IndexReport,
                   warn: Callable[[str], None]) -> bool:
    """`index_paths`' lexical part, inside its transaction; True when a row changed."""
    changed = False
    seen: set[str] = set()
    for rel in rels:
        full = root / rel
        gone = (not os.path.lexists(full) or is_ignored(root, rel, opts.walk)
                or (os.path.islink(full) and not opts.walk.follow))
        entries = [] if gone else walk(root, opts.walk, start=full, on_warning=warn)
        for entry in entries:
            if entry.path in seen:
                continue
            seen.add(entry.path)
            row = store.file_row(entry.path)
            state = (row["id"], row["size"], row["mtime_ns"], row["hash"], row["ctime_ns"],
                     row["inode"]) if row else None
            try:
                # opened under the root now: a link swapped in since the walk is refused
                ft = read_under(str(root), entry.path, max_bytes=opts.walk.max_filesize)
            except OSError as e:
                warn(f"{entry.path}: {e.strerror or e}")
                seen.discard(entry.path)  # as the full walk: an unreadable file leaves the index
                continue
            if ft is None:  # binary now
                seen.discard(entry.path)
                continue
            if state and state[3] == ft.hash:
                if (state[1], state[2], state[4], state[5]) != (ft.size, ft.mtime_ns, ft.ctime_ns, ft.inode):
                    store.touch_file(state[0], ft.size, ft.mtime_ns, ft.ctime_ns, ft.inode)
                report.unchanged += 1
                continue
            _index_file(store, entry.path, ft, state, report)
            changed = True
        # rows at or under `rel` that the walk did not yield: deleted, ignored or skipped
        for row in store.files_under(rel):
            if row["path"] not in seen:
                store.delete_file(row["id"])
                report.removed += 1
                changed = True
    return changed


def index_root_of(db_path: Path) -> Path:
    """The tree an index belongs to: the folder holding `.ov/`, or the root stored in it."""
    db_path = Path(db_path).resolve()
    if db_path.name == DB_NAME and db_path.parent.name == INDEX_DIRNAME:
        return db_path.parent.parent
    with Store.open(db_path) as s:
        root = s.get_meta("root")
    if not root:
        raise OvError("invalid_argument", f"{db_path} does not record its root folder", field="db")
    return Path(root)
