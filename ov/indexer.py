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
from ov.read import FileText, content_hash, read_text
from ov.store import Store, title_of
from ov.walk import walk

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
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
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


# the layout of rows and vectors an index run has given every file (VECTOR_LEVELS); an index
# of another layout (older: prose sentence rows, overview vectors) re-chunks each file once,
# its passages and abstracts keeping their vectors by text hash
ROWS_META = "rows"
ROWS_LAYOUT = "2"


# The rows given a vector: passages (level 2) and abstracts (level 0). Overviews (level 1)
# keep their keyword rows only; prose sentences have no rows. Tokens run through the model
# then stay near the source's own (scripts/bench_tokens.py: SciFact 2.31x -> 1.08x), and
# the semantic ranking is chosen by cross-validation on that evidence (docs/BENCHMARKS.md).
VECTOR_LEVELS = (0, 2)


def wants_vector(level: int, path: str) -> bool:
    """Whether a row of this level in this file is given a vector."""
    return level in VECTOR_LEVELS


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

    if not db_path.parent.exists():
        db_path.parent.mkdir(mode=0o700, parents=True)
        (db_path.parent / ".gitignore").write_text("*\n")
    if opts.embed and embedder is None:
        # a missing model must fail before anything is changed (not after --full cleared
        # the index); the model itself is loaded only when there is something to embed
        from ov.embed import check_available  # noqa: PLC0415 - cheap: no onnxruntime

        check_available()
    with IndexLock(db_path):
        store = Store.create(db_path)
        try:
            with store.tx():
                store.set_meta("root", str(root))
            _lexical_phase(store, root, opts, report, progress, warn_)
            if opts.embed:
                _embed_phase(store, report, progress, embedder)
        finally:
            store.close()
    report.seconds = round(time.perf_counter() - t0, 3)
    report.warnings = warnings
    return report


def _lexical_phase(store: Store, root: Path, opts: IndexOptions, report: IndexReport,
                   progress: Progress | None, warn: Callable[[str], None]) -> None:
    known = store.file_states()
    seen: set[str] = set()
    pending = 0
    last_commit = time.monotonic()
    changed_any = False

    def on_skip(path: str, reason: str) -> None:
        report.skipped += 1

    store.conn.execute("BEGIN IMMEDIATE")
    relayout = bool(known) and store.get_meta(ROWS_META) != ROWS_LAYOUT
    try:
        for n, entry in enumerate(walk(root, opts.walk, on_warning=warn, on_skip=on_skip), 1):
            if progress:
                progress("scan", n, None)
            try:
                entry.path.encode("utf-8")
            except UnicodeEncodeError:  # the index stores names as UTF-8 text
                warn(f"{entry.path.encode('utf-8', 'backslashreplace').decode()}: "
                     "file name is not valid UTF-8; skipped")
                report.skipped += 1
                continue
            state = known.get(entry.path)
            # an index of another row layout re-chunks its files once (ROWS_META)
            resplit = relayout and state is not None
            if (not opts.full and state and state[1] == entry.size and state[2] == entry.mtime_ns
                    and not resplit):
                seen.add(entry.path)
                report.unchanged += 1
                continue
            try:
                ft = read_text(entry.abspath, max_bytes=opts.walk.max_filesize)
            except OSError as e:
                warn(f"{entry.path}: {e.strerror or e}")
                report.skipped += 1
                continue
            if ft is None:  # binary
                report.skipped += 1
                continue
            seen.add(entry.path)
            if not opts.full and state and state[3] == ft.hash and not resplit:
                store.touch_file(state[0], ft.size, ft.mtime_ns)
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
        store.set_meta(ROWS_META, ROWS_LAYOUT)
        store.conn.execute("COMMIT")
    except BaseException:
        try:
            store.conn.execute("ROLLBACK")
        except Exception:
            pass
        raise


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
        abstract=abstract, overview=overview, tags=_front_matter_tags(text), title=title)
    chunks = body + tier_rows
    hashes = [content_hash(c.text.encode("utf-8")) for c in chunks]
    ids = store.insert_chunks(file_id, chunks, hashes, title)
    want = [wants_vector(c.level, path) for c in chunks]
    store.no_vectors([cid for cid, w in zip(ids, want) if not w])
    if reuse:
        report.reused += store.reuse_vectors(
            [cid for cid, w in zip(ids, want) if w],
            {cid: kept[h] for cid, h, w in zip(ids, hashes, want) if w and h in kept})
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
        # identical texts are embedded once: within the batch, and across batches through
        # the vector an earlier one stored
        with store.tx():
            done_before = store.reused_by_hash(part)
        fresh = [i for i in part if i not in done_before]
        first_of: dict[str, int] = {}
        for i in fresh:
            first_of.setdefault(texts[i], i)
        uniq = list(first_of.values())
        # batch size: the embedder's default, the fastest and leanest measured (ov/embed.py)
        vecs = embedder.embed([texts[i] for i in uniq])
        blob_of = {texts[i]: v.astype("float32").tobytes() for i, v in zip(uniq, vecs)}
        with store.tx():
            store.store_vectors(fresh, [blob_of[texts[i]] for i in fresh])
        done += len(part)
        report.embedded += len(uniq)
        report.reused += len(part) - len(uniq)
        if progress:
            progress("embed", done, total)


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
