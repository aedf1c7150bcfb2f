"""The index file: connecting (sqlite3 or sqlean, sqlite-vec loaded), the schema and its
numbered migrations, the index's own files refused when they are links, transactions,
and how SQLite's errors are reported.

One SQLite file per tree (`ROOT/.ov/index.db`, owner-only, WAL). The stdlib `sqlite3` of
several Python builds cannot load extensions; there sqlean-py (SQLite with extension
loading and FTS5 built in) is used instead. Numbered migrations move `PRAGMA
user_version` forward; an index from a newer `ov` is refused rather than misread.

`Database` is an open file with these powers and no queries of its own; `Store`
(`ov.store.queries`) is a `Database` with every query the commands run.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
TYPE_CHECKING = False  # `typing` costs ~2 ms of a grep with an index: annotations only
if TYPE_CHECKING:
    from typing import Any

from ov.config import INDEX_DIRNAME, untrusted
from ov.errors import OvError
from ov.store.text import FRONT_CHARS, camel_words_of, front_of, keyword_text, title_of

SCHEMA_VERSION = 9
# The oldest schema a read-only open accepts as it stands (grep's prefilter, `glob --tags`,
# `ov manifest`): 7 changed no row, only what new rows leave out, and this ov reads both;
# 8 changed what a `files_tri` row holds, and grep's question is right on either form;
# 9 only the words of keyword rows holding encoded data.
READABLE_FROM = 6
DIM = 384
BUSY_TIMEOUT_MS = 3000
KNN_MAX = 4096  # sqlite-vec's largest k
SENTENCE_LEVEL = 3  # ov.chunk.SENTENCE: rows with a vector and no keyword row
# chunks.embedded: 1 has a vector, 0 waits for one, NO_VECTOR never gets one (minified,
# generated, lock and data files: ov.indexer.embeddable), and is left out of the default
# (hybrid) ranking while keyword search and grep still find it
NO_VECTOR = -1
# ... and a row of a ranked file that gets no vector of its own: a passage of at most one
# word (ov.indexer.bare). Not left out of the default ranking, as a NO_VECTOR row would
# make its file (`left_out_sql` reads NO_VECTOR rows as a minified or data file's).
BARE = -2
# The trigram rows (grep's `files_tri`, and `chunks_tri`) may be written after the keyword
# rows (a phase of their own, in the background after a first search), so the level-2
# chunks with an id above this meta value have none yet. New chunks always take ids above
# it, and a file's chunks take consecutive ids, so the mark alone says which rows a file
# and a chunk have.
TRI_META = "tri_upto"
TRI_KEPT_META = "tri_kept"  # Store.tri_kept: chunks_tri rows kept through migration 8
# Set while the keyword rows do not cover the tree (ov.indexer): "1" when a first search's
# time budget left files to the background worker, BUILDING from the moment a new index's
# schema is written until its first lexical pass ends. The schema and the mark are one
# transaction, so a build killed at any point leaves no index (an empty file), or one that
# says it is unfinished; never an empty index that looks complete.
KEYWORDS_META = "keywords_partial"
# the --max-filesize `ov index` last ran with ("none": no cap): a search reads no changed
# file past it to recheck a hit (ov.engine.size_cap)
CAP_META = "max_filesize"
BUILDING = "building"
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"  # chunks_fts's tokenizer

# ---- connecting ---------------------------------------------------------------------


def _driver():
    """The sqlite module to use: stdlib when it can load extensions, else sqlean."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    import sqlean  # noqa: PLC0415 - only where the stdlib cannot load extensions

    return sqlean


def driver_name() -> str:
    return "sqlite3" if _driver() is sqlite3 else "sqlean"


def _errors():
    d = _driver()
    return d.OperationalError, d.DatabaseError


def sqlite_errors() -> tuple[type[Exception], ...]:
    """The driver's exception types (for callers that must tell a damaged file apart)."""
    d = _driver()
    return (d.Error,)


def _planted(conn) -> str | None:
    """What in the file's schema ov never makes, said in a few words: a view or a trigger,
    or an expression SQLite would compute as it reads or writes rows (a cloned tree can
    carry any `.ov/index.db`; SQLite runs such SQL in C, where neither Ctrl-C nor a
    deadline reaches it: a recursive view hung every command, and a generated column or an
    indexed expression of nested `replace()`s over `printf('%.*c', 50000000, ...)` held
    `ov grep` for 44 s in 2 GB, and `ov index` of 3 files for 168 s)."""
    conn.execute("PRAGMA trusted_schema=OFF")
    # what ov makes is tables (virtual ones and their shadows too) and indexes, spelled so:
    # a view stored as `VIEW` (writable_schema) still runs
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall():
        kind = str(kind).lower()
        if kind not in ("table", "index"):
            return f"a {kind} named {name!r}, which ov never makes"
        if sql is not None and (why := _computed(conn, kind, str(name), str(sql))):
            return f"{why} in the {kind} {name!r}, which ov never makes"
    return None


# What ov's own tables and indexes never hold (ov.store.db's DDL, FTS5's and sqlite-vec's
# shadow tables): a generated column, a CHECK, a computed DEFAULT, a virtual table of
# another module, an index on an expression, or one whose WHERE is more than `column = N`.
# Read in the SQL with its comments, strings and quoted names taken out first (a review
# hid each of them behind `/**/`, a quote inside a comment, or a quoted module name), and
# asked of SQLite itself where it says (`PRAGMA table_xinfo`, `index_xinfo`).
_SQL_NOISE_RE = re.compile(r"--[^\n]*|/\*.*?(?:\*/|\Z)|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\[[^\]]*\]|`(?:[^`]|``)*`",
                           re.S)
_COMPUTED_TABLE_RE = re.compile(r"\bGENERATED\b|\bAS\s*\(|\bCHECK\s*\(|\bDEFAULT\s*\(", re.I)
_VIRTUAL_RE = re.compile(r"^\s*CREATE\s+VIRTUAL\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\S+\s+USING\s+(\w+)\s*\(", re.I)
_INDEX_RE = re.compile(r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?\S+\s+ON\s+\S+?\s*"
                       r"\(([^()]*)\)\s*(?:WHERE\s+(.*?))?\s*$", re.I | re.S)
_INDEXED_COLUMN_RE = re.compile(r"\s*\w+(?:\s+COLLATE\s+\w+)?(?:\s+(?:ASC|DESC))?\s*", re.I)
_SIMPLE_WHERE_RE = re.compile(r"\w+\s*(?:=|<|>|<=|>=|<>|!=)\s*-?\d+|\w+\s+IS\s+(?:NOT\s+)?NULL", re.I)


def _sql_bare(sql: str) -> str:
    """`sql` without comments (a space), string literals (`''`) or quoted names (`_q`)."""
    return _SQL_NOISE_RE.sub(lambda m: " " if m.group().startswith(("--", "/*")) else
                             "''" if m.group().startswith("'") else "_q", sql)


def _computed(conn, kind: str, name: str, sql: str) -> str | None:
    """What in one schema entry SQLite would compute for each row, or None."""
    bare = _sql_bare(sql)
    quoted = name.replace('"', '""')
    if kind == "index":
        m = _INDEX_RE.match(bare)
        if m is None or not all(_INDEXED_COLUMN_RE.fullmatch(c) for c in m.group(1).split(",")) \
                or any(r[1] == -2 for r in conn.execute(f'PRAGMA index_xinfo("{quoted}")')):
            return "an index on an expression"
        if m.group(2) is not None and not _SIMPLE_WHERE_RE.fullmatch(m.group(2).strip()):
            return "an index with a computed condition"
        return None
    if re.match(r"\s*CREATE\s+VIRTUAL\b", bare, re.I):
        v = _VIRTUAL_RE.match(bare)
        return None if v is not None and v.group(1).lower() in ("fts5", "vec0") else "a virtual table of another module"
    if _COMPUTED_TABLE_RE.search(bare) or any(r[6] in (2, 3) for r in conn.execute(f'PRAGMA table_xinfo("{quoted}")')):
        return "a computed column"
    return None


def _refuse_planted_schema(conn, path) -> None:
    problem = _planted(conn)
    if problem is not None:
        conn.close()
        raise damaged(path, problem)


# The whole index mapped, up to what the SQLite build allows (the stdlib's: 2 GB). Mapped
# at 1 GB, the kernel's 1.6 GB keyword index was written past it through read() calls and
# the 64 MB page cache: the writer spent 125 CPU-s in `ov index --no-embed`, 93 mapped
# whole (145 -> 109 s; docs/BENCHMARKS.md, stop 57). Mapped pages are the OS's file
# cache, not this process's memory.
MMAP_BYTES = 1 << 36
# A new index's pages are 16 KB (SQLite's default is 4 KB): the writer of a keywords-only
# index of the kernel's drivers/net (122 MB) spent 4-15 % less CPU over interleaved runs, and
# the index was 5 % smaller (215 -> 203 MB; docs/BENCHMARKS.md, stop 58). An index made
# with other pages keeps them (SQLite changes a page size only by rewriting the file).
PAGE_BYTES = 16384


def connect(path: str | Path, *, readonly: bool = False):
    """Open a connection with sqlite-vec loaded. Errors become OvError."""
    mod = _driver()
    op_err, db_err = _errors()
    for journal in JOURNALS:  # SQLite opens them itself: a fifo planted as `.ov/index.db-journal`
        _refuse_link(Path(f"{path}{journal}"), "index")  # had blocked search and find, Ctrl-C ignored
    try:
        if readonly:
            conn = _connect_ro(mod, Path(path), op_err)
        else:
            conn = mod.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        conn.isolation_level = None  # explicit BEGIN/COMMIT below
        _refuse_planted_schema(conn, path)
        conn.create_function(PATH_FUNCTION, 2, _path_passes, deterministic=True)
        conn.enable_load_extension(True)
        conn.load_extension(_vec_path())
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # vector scans read the whole vec0 table: map it rather than page it through a
        # 2 MB cache (152 -> 73 ms on 100k chunks); a larger page cache helps FTS5 too
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        conn.execute("PRAGMA cache_size=-65536")
    except (op_err, db_err) as e:
        raise map_error(e, path) from e
    return conn


# The SQL function that asks a file's path of `-g` and `--exclude-uri` globs
# (ov.store.queries.Filters.path_rules): the one matcher grep uses (ov.globs.PathFilter),
# so a ranked search and `Filters.holds_path` answer as grep does.
PATH_FUNCTION = "ov_path_passes"


@functools.lru_cache(maxsize=64)
def path_filter(rules: str):
    """The `PathFilter` of a `Filters.path_rules` argument (compiled once a process)."""
    import json  # noqa: PLC0415

    from ov.globs import PathFilter  # noqa: PLC0415

    globs, (base, up) = json.loads(rules)
    return PathFilter(globs).at(base, up)


@functools.lru_cache(maxsize=2)
def _answers(rules: str) -> dict[str, int]:
    return {}


PATH_ANSWERS_MAX = 200_000  # paths remembered for one set of rules (~40 MB at most)


def _path_passes(rules: str, path: str) -> int:
    """Each path's answer is remembered for its rules: SQLite asks again for each
    statement of a query (three for an identifier's search: 240,785 asks on the kernel's
    78,168 files, 2.5-4.6 µs each to match), and `ov mcp` for each query."""
    known = _answers(rules)
    got = known.get(path)
    if got is None:
        if len(known) >= PATH_ANSWERS_MAX:
            known.clear()
        got = known[path] = 1 if path_filter(rules)(path) else 0
    return got


def _connect_ro(mod, path: Path, op_err):
    """A read-only connection. An index in a folder this user cannot write (a shared
    checkout, a read-only volume) cannot be opened so in WAL mode, whose readers create the
    `-shm` file: it is then read as immutable (no locks, no WAL) when no WAL beside it holds
    pages, which is how a writer that finished leaves it."""
    from urllib.parse import quote  # noqa: PLC0415 - a path's `#`, `?` or `%` is not the URI's

    uri = f"file:{quote(path.as_posix())}"
    conn = mod.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                       check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except op_err as e:
        wal = Path(f"{path}-wal")
        low = str(e).lower()
        if (("readonly" not in low and "unable to open" not in low) or os.access(path.parent, os.W_OK)
                or (wal.exists() and wal.stat().st_size > 0)):
            raise
        conn.close()
    _IMMUTABLE[str(path)] = _file_state(path)
    return mod.connect(f"{uri}?mode=ro&immutable=1", uri=True,
                       timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)


# An index read as immutable -> its file's state then. Its owner's checkpoint rewrites pages
# under such a reader, which may then read a page half old and half new: an error of
# damage from a file that changed since is the owner's write, retryable, not damage.
_IMMUTABLE: dict[str, tuple[int, ...] | None] = {}


def _file_state(path: Any) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _changed_under_reader(path: Any) -> bool:
    """Whether the immutable index at `path` (None: any, for an error no store call
    mapped) has changed since it was opened."""
    keys = list(_IMMUTABLE) if path is None else [str(path)] if str(path) in _IMMUTABLE else []
    return any(_file_state(k) != _IMMUTABLE[k] for k in keys)


def writable(db_path: Path) -> bool:
    """Whether this user may write the index (its file and its folder, for the journal)."""
    return os.access(db_path, os.W_OK) and os.access(Path(db_path).parent, os.W_OK)


def _vec_path() -> str:
    """sqlite-vec's loadable library, found without importing the package (which imports
    numpy: ~190 ms a keyword search or grep does not need)."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise OvError("not_found", "the sqlite-vec package is not installed (pip install sqlite-vec)")
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def probe_sqlite() -> tuple[str, tuple[int, int] | Exception]:
    """(SQLite's version, FTS5's answers on a fresh in-memory database: the matches of
    one porter query and one trigram query, 1 each when it works, or the driver's error
    when FTS5 cannot be used) for `ov doctor`."""
    mod = _driver()
    conn = mod.connect(":memory:")
    try:
        version = conn.execute("SELECT sqlite_version()").fetchone()[0]
        try:
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
            conn.execute("CREATE VIRTUAL TABLE tri USING fts5(x, tokenize='trigram')")
            conn.execute("INSERT INTO t(x) VALUES ('searching the chunked files')")
            conn.execute("INSERT INTO tri(x) VALUES ('parseHttpHeader')")
            hits = conn.execute("SELECT count(*) FROM t WHERE t MATCH 'search'").fetchone()[0]
            tri = conn.execute("SELECT count(*) FROM tri WHERE tri MATCH '\"HttpHead\"'").fetchone()[0]
            return version, (hits, tri)
        except mod.Error as e:
            return version, e
    finally:
        conn.close()


def probe_vec() -> tuple[str, int] | None:
    """(sqlite-vec's version, the row a two-row vec0 KNN query ranks first: 2 when it
    answers right) on a fresh in-memory database, for `ov doctor`; None when the driver
    cannot load extensions. Loading it may raise anything (a missing wheel, a refusal)."""
    conn = _driver().connect(":memory:")
    try:
        if not hasattr(conn, "enable_load_extension"):
            return None
        import sqlite_vec  # noqa: PLC0415

        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        conn.execute("CREATE VIRTUAL TABLE v USING vec0(e float[2] distance_metric=cosine)")
        conn.execute("INSERT INTO v(rowid, e) VALUES (1, '[1, 0]'), (2, '[0, 1]')")
        return version, conn.execute("SELECT rowid FROM v WHERE e MATCH '[0.1, 0.9]' AND k = 1").fetchone()[0]
    finally:
        conn.close()


def schema_version_of(db_path: Path) -> int:
    """An index file's schema version (PRAGMA user_version), read without opening it as
    a store (which refuses an index of another version)."""
    conn = connect(db_path, readonly=True)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


# What every message about a damaged index advises (doctor's too): the index is a cache,
# and `ov index --full` rebuilds it from nothing whatever the damage (issue 17).
REPAIR_ADVICE = "rebuild it with `ov index --full` (the index is only a cache of the files)"
# An error from an index is taken for damage (a garbage page, a dropped table, a vector
# blob that cannot be read...: the forms are many, sqlite-vec's included), except these,
# which only a wrong statement of ov's own can cause: those stay `internal`.
_OWN_BUGS = ("syntax error", "incomplete input", "wrong number of arguments", "bad parameter",
             "binding", "ambiguous column", "unrecognized token")
TABLES = ("meta", "files", "chunks", "sessions", "chunks_fts", "chunks_tri", "files_tri", "chunks_vec")


class Unusable(OvError):
    """An index file that cannot be used as it stands. `what` says why, as the words after
    its path ("is damaged (...)"), without the advice: `ov index --full`, which follows that
    advice, names the cause alone as it rebuilds the file."""

    def __init__(self, code: str, path: Any, what: str, advice: str = "") -> None:
        super().__init__(code, f"{path or 'the index'} {what}{f'; {advice}' if advice else ''}", field="db")
        self.what = what


class Superseded(OvError):
    """A write that waited on an index `ov index --full` has just replaced: the rebuild
    marked the old file (`SUPERSEDED_META`) as its last write, so nothing is committed into
    a file about to be renamed over (and lost). Retryable: the next try reads the new file."""

    def __init__(self, path: Any) -> None:
        super().__init__("index_busy", f"the index {path} was rebuilt by `ov index --full` while "
                         "this waited to write to it; try again", retryable=True)


def damaged(path: Any, detail: str) -> Unusable:
    # invalid_argument: DESIGN.md names no code of its own for a broken index; the field
    # (`db`) says which argument, and the advice what to do
    return Unusable("invalid_argument", path, f"is damaged ({detail})", REPAIR_ADVICE)


def map_error(e: Exception, path: Any = None) -> OvError:
    """An SQLite error as ov's own: a busy or unwritable index, a full disk, damage."""
    msg = str(e)
    low = msg.lower()
    if "locked" in low or "busy" in low:
        return OvError("index_busy", f"the index is busy ({msg}); try again", retryable=True)
    if "unable to open" in low:
        return OvError("not_found", f"cannot open the index {path}: {msg}", field="db")
    if "readonly database" in low:  # the user may not write the index or its folder: not damage
        return OvError("invalid_path", f"the index {path} cannot be written by this user ({msg}); "
                       "`ov grep` searches without it", field="db")
    if "disk is full" in low:  # SQLITE_FULL: no damage, and a rebuild needs room for two copies
        return OvError("invalid_path", f"the disk holding the index {path} is full ({msg}); what was "
                       "committed is kept: free some space and run the command again", field="db")
    if "disk i/o error" in low:  # SQLITE_IOERR: a write past `ulimit -f`, a full disk, a failing device
        return OvError("invalid_path", f"the index {path} could not be read or written ({msg}: a full "
                       "disk, a file size limit such as `ulimit -f`, or a failing device); what was "
                       "committed is kept", field="db")
    if not any(w in low for w in _OWN_BUGS):
        if _changed_under_reader(path):
            return OvError("index_busy", f"the index {path} changed while it was read (its owner "
                           f"is updating it: {msg}); try again", retryable=True)
        return damaged(path, msg)
    return OvError("internal", f"database error: {msg}")


# ---- schema ---------------------------------------------------------------------------


def _migration_1(conn) -> None:
    import sqlite_utils  # noqa: PLC0415 - heavy import, needed only when creating a schema

    db = sqlite_utils.Database(conn)
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["files"].create(
        {
            "id": int, "path": str, "size": int, "mtime_ns": int, "hash": str,
            "created_at": float, "updated_at": float, "indexed_at": float,
            "tags": str, "ftype": str, "category": str, "abstract": str, "overview": str,
        },
        pk="id", not_null={"path", "size", "mtime_ns", "hash"}, defaults={"tags": "{}"},
    )
    db["files"].create_index(["path"], unique=True)
    db["chunks"].create(
        {
            "id": int, "file_id": int, "level": int, "seq": int, "start": int, "end": int,
            "start_line": int, "end_line": int, "text": str, "hash": str, "embedded": int,
        },
        pk="id", foreign_keys=[("file_id", "files", "id")], defaults={"embedded": 0},
    )
    db["chunks"].create_index(["file_id", "level", "seq"])
    db["chunks"].create_index(["hash"])
    db["chunks"].create_index(["embedded"])
    db["sessions"].create({"session": str, "turn": int, "uri": str, "served_at": float})
    db["sessions"].create_index(["session", "turn"])
    conn.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='', tokenize='{FTS_TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE chunks_tri USING fts5(text, content='', tokenize='trigram')")
    conn.execute(
        f"CREATE VIRTUAL TABLE chunks_vec USING vec0(chunk_id integer primary key, "
        f"embedding float[{DIM}] distance_metric=cosine, level integer, ftype text, "
        f"updated_at float, created_at float)"
    )


def _migration_2(conn) -> None:
    """Files get a `title` (the first line of their first chunk) that every chunk's keyword
    row carries: +0.016 nDCG@10 on SciFact train for keywords, neutral on code
    (docs/BENCHMARKS.md). The contentless keyword table is rebuilt; vectors are kept."""
    conn.execute("ALTER TABLE files ADD COLUMN title TEXT NOT NULL DEFAULT ''")
    firsts = conn.execute("SELECT file_id, text FROM chunks WHERE level = 2 AND seq = 0").fetchall()
    conn.executemany("UPDATE files SET title = ? WHERE id = ?",
                     [(title_of(text), fid) for fid, text in firsts])
    conn.execute("DROP TABLE chunks_fts")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='', tokenize='{FTS_TOKENIZE}')")
    rows = conn.execute("SELECT c.id, c.text, f.title FROM chunks c JOIN files f ON f.id = c.file_id")
    while batch := rows.fetchmany(2000):
        conn.executemany("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)",
                         # (the words of schema 2-8, which migration 9 deletes the rows by)
                         [(cid, keyword_text(text, title, camel_words_of(text))) for cid, text, title in batch])


VEC_COLUMNS = "chunk_id, embedding, level, ftype, updated_at, created_at"


def _migration_3(conn) -> None:
    """`chunks_vec` is partitioned by level: a KNN over one level (the passages, or the
    files' abstracts) then reads only that level's vectors instead of filtering every
    vector in the index (100,000 vectors, 30 % tier rows: 73 -> 42 ms for the passages,
    77 -> 18 ms for the abstracts). The vectors are copied over unchanged."""
    conn.execute(f"CREATE TABLE vec_copy AS SELECT {VEC_COLUMNS} FROM chunks_vec")
    conn.execute("DROP TABLE chunks_vec")
    conn.execute(
        f"CREATE VIRTUAL TABLE chunks_vec USING vec0(chunk_id integer primary key, "
        f"embedding float[{DIM}] distance_metric=cosine, level integer partition key, "
        f"ftype text, updated_at float, created_at float)"
    )
    conn.execute(f"INSERT INTO chunks_vec({VEC_COLUMNS}) SELECT {VEC_COLUMNS} FROM vec_copy ORDER BY chunk_id")
    conn.execute("DROP TABLE vec_copy")


def _migration_4(conn) -> None:
    """Nothing to change: from here on `chunks` may hold level-3 rows (a prose file's
    sentences: a vector each, no keyword row). The version moves so that an older ov,
    which would feed those rows to FTS5's delete command when it re-indexes a file and so
    corrupt the keyword table's statistics, refuses the index instead. The next `ov index`
    gives the prose files their sentences (ov.indexer, SENTENCES_META)."""


def _migration_5(conn) -> None:
    """Files record their ctime_ns and inode beside size and mtime_ns (issue 17): content
    rewritten with its size kept and its mtime restored was taken for unchanged. Rows
    from before hold 0 there, which matches no file: they are re-hashed once (same hash:
    only the times are recorded) and rechecked by their text until then."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(files)")}
    for col in ("ctime_ns", "inode"):
        if col not in have:
            conn.execute(f"ALTER TABLE files ADD COLUMN {col} INTEGER NOT NULL DEFAULT 0")


FILES_TRI_SQL = "CREATE VIRTUAL TABLE files_tri USING fts5(text, content='', tokenize='trigram', detail=none)"
HASH_INDEX_SQL = "CREATE INDEX idx_chunks_hash ON chunks(hash) WHERE embedded = 1"


def _migration_6(conn) -> None:
    """Keyword indexing at disk speed (issue 13.4). On a 172 MB kernel tree the trigram rows
    of every passage (`detail=full`) were 447 MB of a 905 MB index and most of its SQL time.

    - grep's prefilter gets `files_tri`: a row per file (rowid = file id) of the file's
      distinct whitespace-separated runs, `detail=none` (grep asks only which files may hold
      a literal; positions and counts are never read);
    - `chunks_tri`, which ranks text without word separators (ov.query `_NOSPACE`), keeps
      only the passages that hold such text: no other passage can match its queries, but
      its bm25 statistics (row count, mean length) now count those passages alone;
    - the text-hash index serves only rows with a vector (what reuse looks up): a
      keyword-only index had one entry a row for nothing (38 MB on that tree).

    Both trigram tables start empty here and are filled by the next `ov index` or the
    background worker (`tri_upto` = 0); until then grep reads every file."""
    for table in ("chunks_tri", "files_tri"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("CREATE VIRTUAL TABLE chunks_tri USING fts5(text, content='', tokenize='trigram')")
    conn.execute(FILES_TRI_SQL)
    conn.execute(f"INSERT OR REPLACE INTO meta(key, value) VALUES ('{TRI_META}', '0')")
    conn.execute("DROP INDEX IF EXISTS idx_chunks_hash")
    conn.execute(HASH_INDEX_SQL)


def _migration_7(conn) -> None:
    """Nothing to change: from here on a row's text hash is written when it gets its vector
    (NULL until then: the embed phase hashes the pending rows' text itself), and a file's
    abstract and overview are read from its level-0 and level-1 rows instead of being kept
    twice in `files` (issue 13.4: on the kernel tree the hashes of rows that had no vector
    were 94 MB and the second copy of the tiers 68 MB, together 0.17x of the source). Rows
    written before keep theirs until their file is re-indexed. The version moves so that an
    older ov, whose embed phase would take every NULL hash for one text and give all those
    rows one vector, refuses the index instead."""


def _migration_8(conn) -> None:
    """A `files_tri` row holds the file's distinct runs of word characters or of punctuation
    (`trigram_doc`), not its whitespace-separated runs: half the characters on the
    kernel's C, and the single writer's trigram work 44 -> 21 ms a MB of the fs/ tree.
    Contentless rows are deleted by feeding their text back, so rows of the old form
    cannot stay: `files_tri` starts empty and is filled again by the next `ov index` or
    the background worker (`tri_upto` = 0); until then grep reads every file.
    `chunks_tri`, unchanged, keeps its rows: the keyword search of text without spaces
    (Japanese, Chinese) ranks on it, and emptied it found nothing until the refill. The
    chunks up to the old mark keep them (`tri_kept`), and the refill writes only their
    files' `files_tri` rows.
    A read-only open of an index not yet migrated stays right: grep's question (the
    trigrams of the literal's runs, `trigram_runs`) is a subset of what an old row holds."""
    old = conn.execute(f"SELECT value FROM meta WHERE key = '{TRI_META}'").fetchone()
    kept = int(old[0]) if old is not None else (conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0)
    conn.execute("DROP TABLE IF EXISTS files_tri")
    conn.execute(FILES_TRI_SQL)
    conn.execute(f"INSERT OR REPLACE INTO meta(key, value) VALUES ('{TRI_KEPT_META}', ?)", (str(kept),))
    conn.execute(f"INSERT OR REPLACE INTO meta(key, value) VALUES ('{TRI_META}', '0')")


def _migration_9(conn) -> None:
    """A keyword row no longer holds the camelCase words of a run of encoded data
    (`ov.store.text.camel_words`: a plot's base64 split into `Owl`, `Cat`, `Sun`).
    Contentless rows are deleted by feeding their text back, so each row whose words
    change is written again: deleted with the words it was written with
    (`camel_words_of`), inserted with the new ones. Only rows holding a run of 64 data
    characters can change, and finding them is a C-speed scan of the text."""
    from ov.chunk import data_runs  # noqa: PLC0415
    from ov.store.text import camel_words  # noqa: PLC0415

    rows = conn.execute("SELECT c.id, c.text, f.title FROM chunks c JOIN files f ON f.id = c.file_id "
                        f"WHERE c.level != {SENTENCE_LEVEL}")
    while batch := rows.fetchmany(2000):
        old, new = [], []
        for cid, text, title in batch:
            if not isinstance(text, str) or not data_runs(text):
                continue
            was, now = camel_words_of(text), camel_words(text)
            if was != now:
                old.append((cid, keyword_text(text, title or "", was)))
                new.append((cid, keyword_text(text, title or "", now)))
        conn.executemany("INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)", old)
        conn.executemany("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", new)


MIGRATIONS = [_migration_1, _migration_2, _migration_3, _migration_4, _migration_5, _migration_6,
              _migration_7, _migration_8, _migration_9]

# Tables an index may lack, made when it is opened for writing: no schema version moves,
# so an older ov keeps reading (and ignores) the index, and a reader copes without them.
# `big_files`: a row per file `ov index` skipped for its size, its freshness and its byte
# trigram bitmap (ov.grams), for grep's prefilter (issue 18).
OPTIONAL_TABLES = {
    "big_files": "CREATE TABLE IF NOT EXISTS big_files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
                 "mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, "
                 "grams BLOB NOT NULL)",
}

# ---- the index's own files (issue 17) -----------------------------------------------
# A cloned tree may hold `.ov`, `.ov/index.db` or its companions as links leading
# anywhere: nothing is written through one. The sidecars SQLite and the lock create.
JOURNALS = ("-journal", "-wal", "-shm")  # the files SQLite keeps beside a database
SIDECARS = ("-wal", "-shm", "-journal", ".lock", ".lock.want",  # .want: ov.indexer.IndexLock
            ".search",  # ov.indexer.Searching
            ".searched", ".searched-journal")  # ov.store.searched
REBUILD_SUFFIX = ".rebuild"  # `ov index --full` builds the new file beside the old
SUPERSEDED_META = "superseded"  # the old file's mark, written as the rebuild's last step


def rebuild_path(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).name + REBUILD_SUFFIX)


def clear_rebuild(db_path: Path, stale: bool = False) -> None:
    """A rebuild's new file and its companions removed (an interrupted `--full`). With
    `stale`, by a run that holds the index lock, so no rebuild is running: what a killed
    one left (its file, the old file's `retire` mark) goes. A file by that name that is not
    an SQLite file nor empty is someone's: `invalid_path`, and nothing is removed."""
    import stat  # noqa: PLC0415

    new = rebuild_path(db_path)
    left = os.path.lexists(new)  # a rebuild stopped between its mark and its rename leaves it
    try:  # (not blocking on a fifo planted by that name, nor through a link)
        fd = os.open(new, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OvError("invalid_path", f"{new} is not a regular file (ov builds a new index "
                              "under that name); move it away", field="db")
            head = os.read(fd, 16)
        finally:
            os.close(fd)
    except FileNotFoundError:
        head = b""
    except OSError as e:
        raise OvError("invalid_path", f"{new}: {e.strerror or e}", field="db") from None
    if head and head != SQLITE_HEADER:
        raise OvError("invalid_path", f"{new} is not ov's (ov builds a new index under that name); "
                      "move it away", field="db")
    for p in (new, *(Path(f"{new}{s}") for s in ("-wal", "-shm", "-journal"))):
        if os.path.lexists(p):
            os.unlink(p)
    if stale and left and os.path.exists(db_path) and _peek(
            Path(db_path), lambda c: c.execute("SELECT 1 FROM meta WHERE key = ?",
                                               (SUPERSEDED_META,)).fetchone() is not None, False):
        unretire(db_path)


def own_files(root: Path, db_path: Path) -> set[str]:
    """The index's own files as tree paths, when `--db` puts them inside the tree (under
    .ov/ no walk goes): never indexed, skipped or counted as new, nor re-indexed by a
    watcher as they change. `db_path` may be the rebuild's file beside the index."""
    p = Path(db_path)
    p = Path(os.path.realpath(p.parent)) / p.name  # links resolved, as in `root`
    if p.name.endswith(REBUILD_SUFFIX):
        p = p.with_name(p.name[:-len(REBUILD_SUFFIX)])
    try:
        rel = p.relative_to(root).as_posix()
    except ValueError:
        return set()
    names = (rel, rel + REBUILD_SUFFIX)
    return {*names, *(n + s for n in names for s in SIDECARS)}
_CREATE = os.O_CREAT | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _refuse_link(path: Path, what: str) -> None:
    import stat  # noqa: PLC0415

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise OvError("invalid_path", f"{path}: {e.strerror or e}", field="db") from None
    if stat.S_ISLNK(st.st_mode):
        raise OvError("invalid_path", f"{path} is a symbolic link; ov writes no {what} through a "
                      "link (remove it)", field="db")
    if what != "folder" and not stat.S_ISREG(st.st_mode):
        raise OvError("invalid_path", f"{path} is not a regular file", field="db")
    if what == "folder" and not stat.S_ISDIR(st.st_mode):
        raise OvError("invalid_path", f"{path} is not a folder", field="db")


def check_index_files(db_path: Path) -> None:
    """`invalid_path` when the index's folder (if it is ov's own `.ov`), the database or
    a sidecar of it is a link or not a regular file."""
    db_path = Path(db_path)
    if db_path.parent.name == ".ov":
        _refuse_link(db_path.parent, "folder")
        _refuse_link(db_path.parent / ".gitignore", "file")
    _refuse_link(db_path, "index")
    for suffix in SIDECARS:
        _refuse_link(db_path.with_name(db_path.name + suffix), "index")


def prepare_index_dir(db_path: Path) -> None:
    """Make the index's folder (owner-only) and, for ov's own `.ov`, its `.gitignore`
    (also when the folder was made earlier, e.g. to hold config.toml), refusing links."""
    db_path = Path(db_path)
    folder = db_path.parent
    made = False
    if not os.path.lexists(folder):
        try:
            folder.mkdir(mode=0o700, parents=True)
            made = True
        except FileExistsError:  # made meanwhile: two first searches at once (a review)
            if os.path.islink(folder) or not folder.is_dir():
                raise _cannot_create(folder, FileExistsError(errno.EEXIST, "File exists")) from None
        except OSError as e:  # a read-only tree: said as such, not as an `internal` OSError
            raise _cannot_create(folder, e) from None
    if not made and (why := untrusted(db_path)):  # another user's: writing there would share this tree with them
        raise OvError("invalid_path", f"{why}, so this user's index is not made there; an index "
                      "elsewhere can be named with --db, OV_SAFE_DIRECTORIES=FOLDER trusts the folder (as "
                      "git's safe.directory), and `ov grep` searches without one", field="db")
    check_index_files(db_path)
    ignore = folder / ".gitignore"
    if (made or folder.name == ".ov") and not os.path.lexists(ignore):
        try:
            fd = os.open(ignore, _CREATE | os.O_EXCL, 0o644)
        except FileExistsError:
            return
        except OSError as e:
            raise OvError("invalid_path", f"{ignore}: {e.strerror or e}", field="db") from None
        with open(fd, "w") as f:
            f.write("*\n")


def _cannot_create(path: Path, e: OSError) -> OvError:
    # invalid_path, as for the index's other files (.gitignore, the lock): a folder the index
    # cannot be written in is no error of ov's, and DESIGN.md has no code of its own for it
    return OvError("invalid_path", f"cannot create the index at {path} ({e.strerror or e}): the index "
                   "needs a folder it can write in; `ov grep` searches without one", field="db")


def unfinished(db_path: Path) -> bool:
    """Whether `db_path` holds no finished index, so a first search should build one there:
    no file, a file without a schema (a build killed before it wrote one) or one marked
    BUILDING (killed before its first lexical pass ended). A damaged or foreign file is not
    unfinished: opening it says what is wrong. Read without sqlite-vec: under a millisecond."""
    db_path = Path(db_path)
    try:
        os.lstat(db_path)
    except PermissionError:
        return False  # there, another user's: opening it says it cannot be read
    except OSError:
        return True
    try:
        check_db_file(db_path)
    except OvError:
        return False

    def read(conn) -> bool:
        if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
            return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (KEYWORDS_META,)).fetchone()
        return row is not None and row[0] == BUILDING

    return _peek(db_path, read, False)


def stored_setting(db_path: Path, key: str) -> str | None:
    """A meta value of the index at `db_path` as it stands (an unfinished one too), read
    as `unfinished` reads; None when there is none to read."""
    if not os.path.lexists(db_path):
        return None

    def read(conn) -> str | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    return _peek(Path(db_path), read, None)


def _peek(db_path: Path, read, failed, *, immutable: bool = False, why: bool = False):
    """`read(conn)` over a read-only connection without sqlite-vec, or `failed` (with
    `why`: the driver's error) when the file cannot be opened or read so. `immutable`:
    no lock taken and no WAL read (the file's own bytes alone)."""
    from urllib.parse import quote  # noqa: PLC0415

    mod = _driver()
    if os.path.islink(db_path) or os.path.islink(db_path.parent):
        return failed  # opened through a link, SQLite makes -shm and -wal beside its target
    try:  # (a fifo planted as `.ov/index.db`, or as its `-journal`, had blocked SQLite's open for good)
        for p in (db_path, *(Path(f"{db_path}{j}") for j in JOURNALS)):
            _refuse_link(p, "index")
    except OvError:
        return failed
    try:
        conn = mod.connect(f"file:{quote(db_path.as_posix())}?mode=ro{'&immutable=1' if immutable else ''}",
                           uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    except mod.Error as e:
        return e if why else failed
    try:
        if _planted(conn) is not None:
            return failed
        return read(conn)
    except mod.Error as e:
        return e if why else failed
    finally:
        conn.close()


SQLITE_HEADER = b"SQLite format 3\x00"


def check_db_file(db_path: Path) -> None:
    """`invalid_path` for a --db that is not a regular, readable file (a fifo would block
    SQLite; /proc/self/mem reads fail with EIO)."""
    import stat  # noqa: PLC0415

    try:
        st = os.stat(db_path)
    except PermissionError as e:
        raise OvError("invalid_path", f"the index {db_path} cannot be read by this user "
                      f"({e.strerror}); `ov grep` searches without it", field="db") from None
    except OSError as e:
        raise OvError("not_found", f"no index at {db_path}; run `ov index` ({e.strerror or e})",
                      field="db") from None
    if stat.S_ISDIR(st.st_mode):
        raise OvError("invalid_path", f"{db_path} is a folder, not an index file", field="db")
    if not stat.S_ISREG(st.st_mode):
        raise OvError("invalid_path", f"{db_path} is not a regular file", field="db")
    # The file is never opened here by a descriptor of ov's own: closing any descriptor of
    # a file drops every POSIX lock the process holds on it, SQLite's too (its shared lock
    # on a WAL database, which tells other processes the WAL is in use: `ov mcp` lost it
    # at every watcher batch, and a search beside it then checkpointed and removed the WAL
    # under the server, corrupting the index). SQLite's own descriptors defer such a close.
    if not os.access(db_path, os.R_OK):
        raise OvError("invalid_path", f"{db_path} cannot be read (permission denied)", field="db")
    if Path(db_path).parent.name == INDEX_DIRNAME:
        return  # under .ov/ a file of any bytes is ov's own: damaged, --full rebuilds it
    # a --db naming someone's file (a typo, a path swapped with the tree's) is not an index,
    # so not "damaged" either: said before anything (a lock file, WAL mode, --full) touches it
    problem = _peek(Path(db_path), lambda c: c.execute("PRAGMA schema_version").fetchone() and None,
                    "unreadable", immutable=True, why=True)
    if problem is not None:
        if "not a database" in str(problem):
            raise OvError("invalid_path", f"{db_path} is not an ov index (not an SQLite file); "
                          "--db names an index file, such as PATH/.ov/index.db", field="db")
        raise OvError("invalid_path", f"{db_path} cannot be read ({problem})", field="db")
    if _foreign(Path(db_path)):
        raise Unusable("invalid_argument", db_path, "is an SQLite file but not an ov index")


def _foreign(db_path: Path) -> bool:
    """An SQLite file with tables but no ov `meta` table holding a schema version: another
    program's, whatever its own `user_version`. One that cannot be read is not called so
    (it may be ov's, damaged)."""
    def read(c) -> bool:
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not names:
            return False  # empty: nothing of anyone's to lose
        return "meta" not in names or c.execute(
            "SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is None

    return _peek(db_path, read, False)


def salvage_file_meta(db_path: Path) -> dict[str, tuple[str, float]]:
    """path -> (tags, created_at) of what a damaged index still yields; {} when nothing."""
    out: dict[str, tuple[str, float]] = {}

    def read(conn) -> dict[str, tuple[str, float]]:
        for path, tags, created in conn.execute("SELECT path, tags, created_at FROM files"):
            if isinstance(path, str):
                out[path] = (tags if isinstance(tags, str) else "{}", created)
        return out

    return _salvage(db_path, read, out)  # failing midway: the rows read before


def salvage_front_texts(db_path: Path) -> dict[str, str]:
    """path -> the start of the file as the index about to be replaced holds it (its first
    passage when that begins the file: front matter), for the files that have one; what
    was read before a failure, or {}."""
    out: dict[str, str] = {}

    def read(conn) -> dict[str, str]:
        rows: dict[str, list] = {}
        for path, start, end, text in conn.execute(
                "SELECT f.path, c.start, c.end, c.text FROM files f JOIN chunks c ON c.file_id = f.id "
                "WHERE c.level = 2 AND c.start < ? AND f.id IN (SELECT file_id FROM chunks "
                "WHERE level = 2 AND start = 0 AND text LIKE '---%') ORDER BY f.path, c.start",
                (FRONT_CHARS,)):
            if isinstance(path, str):
                rows.setdefault(path, []).append((start, end, text))
        out.update({path: front_of(parts) for path, parts in rows.items()})
        return out

    return _salvage(db_path, read, out)


def _salvage(db_path: Path, read, failed):
    """`read(conn)` over an index about to be replaced (a damaged one too): `_peek`, after
    the file's own checks; `failed` when it cannot be read."""
    try:
        check_db_file(db_path)
    except OvError:
        return failed
    return _peek(Path(db_path), read, failed)


class WriteHold:
    """Other writers of an index held off (`BEGIN IMMEDIATE` on a connection of its own)
    while the block runs, when the file can be opened and the lock taken within the busy
    timeout; otherwise nothing is held. Readers go on. For a rebuild's last step: what is
    read from the old file then (tags, ledgers) is all it will ever hold."""

    def __init__(self, db_path: Path) -> None:
        self.db_path, self.conn, self.retired = db_path, None, False

    def retire(self) -> None:
        """Mark the old file as replaced, committed as the hold ends: a writer held off
        meanwhile then finds the mark and writes to the new file instead (`Superseded`)."""
        if self.conn is not None:
            try:
                self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')",
                                  (SUPERSEDED_META,))
                self.retired = True
            except Exception:
                pass

    def __enter__(self) -> WriteHold:
        try:
            check_db_file(self.db_path)
            self.conn = connect(self.db_path)
            self.conn.execute("BEGIN IMMEDIATE")
        except Exception:  # damaged, busy past the timeout: the copy is made unheld
            self.__exit__()
        return self

    def __exit__(self, *exc) -> None:
        if self.conn is not None:
            try:
                if self.retired:
                    self.conn.commit()
                else:
                    self.conn.rollback()
                self.conn.close()
            except Exception:
                pass
            self.conn = None


def unretire(db_path: Path) -> None:
    """The old file's `retire` mark taken back: its rebuild did not replace it (a failed
    rename, a rebuild killed between its last two steps). Run holding the index lock."""
    try:
        conn = connect(db_path)
        try:
            conn.execute("DELETE FROM meta WHERE key = ?", (SUPERSEDED_META,))
        finally:
            conn.close()
    except Exception:
        pass


def salvage_sessions(db_path: Path) -> list[tuple]:
    """The context-mode ledgers (`sessions` rows) an index still yields; [] when nothing."""
    return _salvage(db_path, lambda c: c.execute("SELECT session, turn, uri, served_at FROM sessions")
                    .fetchall(), [])

# ---- an open index file ---------------------------------------------------------------------


class Database:
    """An open index file: connecting, the schema's version and migrations, health,
    transactions and the meta table. `Store` (ov.store.queries) adds every query."""

    def __init__(self, conn, path: Path) -> None:
        self.conn = conn
        self.path = Path(path)
        self.readonly = False  # opened read-only (`open`): nothing beside it is written either

    # -- lifecycle --
    @classmethod
    def create(cls, db_path: Path) -> Database:
        """Open the index at `db_path`, creating it (owner-only) and migrating as needed."""
        db_path = Path(db_path)
        prepare_index_dir(db_path)
        if not db_path.exists():
            try:
                fd = os.open(db_path, _CREATE, 0o600)
            except OSError as e:
                raise _cannot_create(db_path, e) from None
            os.close(fd)
        check_db_file(db_path)
        store = cls(connect(db_path), db_path)
        try:
            store._migrate()
            store._add_optional_tables()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open(cls, db_path: Path, *, readonly: bool = False, upgrading=None) -> Database:
        """The index at `db_path`. Opened for writing, an index of an older schema is brought
        up to date in place, inside `upgrading(db_path)` when given (a context manager: the
        caller's hold on the index while it is upgraded, ov.api `_upgrade_hold`)."""
        db_path = Path(db_path)
        check_db_file(db_path)
        check_index_files(db_path)  # a reader's connection may create -shm too
        store = cls(connect(db_path, readonly=readonly), db_path)
        store.readonly = readonly
        try:
            v = store._user_version()
            if 0 < v < SCHEMA_VERSION and not readonly:
                with upgrading(db_path) if upgrading is not None else contextlib.nullcontext():
                    store._migrate()  # an index from an older ov is brought up to date in place
            store._check_version(readonly=readonly)
            if not readonly:
                store._add_optional_tables()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def health(self, thorough: bool = False) -> str | None:
        """What is wrong with this index, or None. Cheap checks (every table there, the
        file as long as its pages, each plain table's first rows readable); `thorough`
        adds SQLite's quick_check (seconds on a large index: for `ov index --full`)."""
        op_err, db_err = _errors()
        try:
            names = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master")}
            missing = [t for t in TABLES if t not in names]
            if missing:
                return f"missing table(s): {', '.join(missing)}"
            wal = Path(f"{self.path}-wal")
            if not wal.exists() or wal.stat().st_size == 0:  # else pages may sit in the WAL
                pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
                size = self.conn.execute("PRAGMA page_size").fetchone()[0]
                if os.path.getsize(self.path) < pages * size:
                    return f"the file is shorter than its {pages} pages: truncated"
            for t in ("meta", "files", "chunks", "sessions"):
                self.conn.execute(f"SELECT * FROM {t} LIMIT 1").fetchall()
            self.conn.execute("SELECT count(*) FROM files").fetchone()
            for t in ("chunks_fts", "chunks_tri", "files_tri"):  # one trigram: detail=none has no phrases
                self.conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH 'zzq' LIMIT 1").fetchall()
            self.conn.execute("SELECT chunk_id FROM chunks_vec LIMIT 1").fetchall()
            if thorough:
                rows = [r[0] for r in self.conn.execute("PRAGMA quick_check").fetchall()]
                if rows != ["ok"]:
                    return "; ".join(str(r) for r in rows[:3])
                for t in ("chunks_fts", "chunks_tri", "files_tri"):
                    self.conn.execute(f"INSERT INTO {t}({t}, rank) VALUES ('integrity-check', 0)")
        except (op_err, db_err) as e:
            if "locked" in str(e).lower() or "busy" in str(e).lower():
                raise map_error(e, self.path) from e
            return str(e)
        return None

    def checkpoint(self) -> None:
        """Everything in the main file (before it is renamed into place)."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _user_version(self) -> int:
        try:
            return self.conn.execute("PRAGMA user_version").fetchone()[0]
        except _errors() as e:
            raise map_error(e, self.path) from e

    def _check_version(self, readonly: bool = False) -> int:
        v = self._user_version()
        if v > SCHEMA_VERSION:
            raise Unusable("unsupported", self.path, f"has schema version {v}, newer than this ov "
                           f"supports ({SCHEMA_VERSION})", "upgrade ov or rebuild with `ov index --full`")
        if v == 0 and self.q1("SELECT count(*) FROM sqlite_master") == 0:
            raise OvError("not_found", f"{self.path} is an empty database, not an ov index; run `ov index`",
                          field="db")
        if v == 0:  # tables, but no version: no ov wrote this as it stands
            raise damaged(self.path, "it has tables but no schema version")
        if v < SCHEMA_VERSION and not (readonly and v >= READABLE_FROM):
            if readonly and not os.access(self.path, os.W_OK):
                # "run `ov index`" failed next on the lock file (an upgrade review)
                raise OvError("unsupported", f"the index {self.path} has schema version {v}, too old "
                              f"to read as it stands (from {READABLE_FROM}), and this user cannot "
                              "write it to upgrade it: its owner can, with `ov index`", field="db")
            raise OvError("unsupported", f"the index {self.path} has schema version {v}; "
                          "run `ov index` to upgrade it", field="db")
        return v

    def _migrate(self) -> None:
        v = self._user_version()
        if v > SCHEMA_VERSION:
            self._check_version()
        if v == 0 and self.q1("SELECT count(*) FROM sqlite_master") != 0:  # before WAL mode, a write
            raise Unusable("invalid_argument", self.path, "is an SQLite file but not an ov index")
        try:
            if v == 0:  # (a new file: its page size is set before its first write, WAL's header)
                self.conn.execute(f"PRAGMA page_size={PAGE_BYTES}")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        except _errors() as e:
            raise map_error(e, self.path) from e
        if v == 0:
            self._create_schema()
            return
        upgrade = 0 < v < SCHEMA_VERSION
        while v < SCHEMA_VERSION:
            with self.tx():
                # read again under the write lock: another process may have upgraded the
                # index since (migration 2 run twice fails; 3 would copy every vector again)
                v = self._user_version()
                if v >= SCHEMA_VERSION:
                    break
                MIGRATIONS[v](self.conn)
                v += 1
                self.conn.execute(f"PRAGMA user_version={v}")
                self.set_meta("schema_version", str(v))
        if upgrade:
            self.reclaim()

    def _create_schema(self) -> None:
        """A new index's schema: every migration and the BUILDING mark in one transaction,
        so a kill leaves an empty file or the whole schema, marked unfinished."""
        with self.tx():
            if self._user_version() != 0:  # made meanwhile by another process
                return
            for migration in MIGRATIONS:
                migration(self.conn)
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self.set_meta("schema_version", str(SCHEMA_VERSION))
            self.set_meta(KEYWORDS_META, BUILDING)

    def _add_optional_tables(self) -> None:
        """Make the OPTIONAL_TABLES this index lacks (a write only when one is missing)."""
        have = {r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [sql for name, sql in OPTIONAL_TABLES.items() if name not in have]
        if missing:
            with self.tx():
                for sql in missing:
                    self.conn.execute(sql)

    def has_table(self, name: str) -> bool:
        return self.q1("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) is not None

    def reclaim(self, always: bool = False) -> None:
        """Give back the pages an upgrade freed when they are over a quarter of the file
        (migration 3 copies every vector: 206 of 764 MB on 100,000 vectors; VACUUM took
        4.8 s; a re-cut to a new rows layout, ov.indexer, left 34 % of a 101 MB index free,
        65 MB after). `always`: whatever is free (after such a re-cut, once). A VACUUM that
        cannot run now (another connection reading) is left for good: SQLite reuses free
        pages anyway."""
        free, pages = self.q1("PRAGMA freelist_count"), self.q1("PRAGMA page_count")
        if pages and (free * 4 > pages or (always and free)):
            try:
                self.conn.execute("VACUUM")
            except _errors():
                pass

    def user_version(self) -> int:
        """The schema version this index's file holds."""
        return self._user_version()

    def integrity_check(self) -> list:
        """SQLite's `PRAGMA integrity_check` rows (["ok"] when the pages are sound); the
        driver's error when a damaged file fails the check itself."""
        return [r[0] for r in self.conn.execute("PRAGMA integrity_check").fetchall()]

    def versions(self) -> tuple[str, str | None]:
        """(SQLite's version, sqlite-vec's), for `ov manifest`."""
        vec = self.q1("SELECT vec_version()")
        return self.q1("SELECT sqlite_version()"), vec

    def data_version(self) -> int:
        """SQLite's `PRAGMA data_version`: moves whenever another connection commits."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    # -- helpers --
    def tx(self):
        return _Tx(self.conn, self.path)

    def snapshot(self):
        """A read transaction: the reads inside it see one state of the index, whatever
        other connections commit meanwhile (WAL)."""
        return _Snapshot(self.conn, self.path)

    def batches(self):
        """A write transaction committed in batches (`Batches`): the indexer's lexical
        pass commits every few hundred files, so a kill loses one batch at most."""
        return Batches(self.conn, self.path)

    def q1(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            row = self.conn.execute(sql, params).fetchone()
        except _errors() as e:
            raise map_error(e, self.path) from e
        return row[0] if row else None

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except _errors() as e:
            raise map_error(e, self.path) from e

    def get_meta(self, key: str) -> str | None:
        return self.q1("SELECT value FROM meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def _refuse_newer(conn, path: Path) -> None:
    """Inside a write transaction just begun: an index a newer ov has upgraded since this
    process opened it is written no more (the transaction is rolled back). A background
    worker of the older ov had gone on writing its rows in their old form into the new
    schema, marked current; the newer ov stops such a worker before it upgrades (ov.api),
    and this holds for any writer it could not stop."""
    v = conn.execute("PRAGMA user_version").fetchone()[0]
    if v > SCHEMA_VERSION:
        conn.execute("ROLLBACK")
        raise OvError("unsupported", f"the index {path} was upgraded by a newer ov (schema {v}) while "
                      f"this ov (schema {SCHEMA_VERSION}) had it open; this process writes no more to it",
                      field="db")


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT, mapping lock errors to index_busy."""

    BEGIN = "BEGIN IMMEDIATE"

    def __init__(self, conn, path) -> None:
        self.conn = conn
        self.path = path

    def __enter__(self):
        try:
            self.conn.execute(self.BEGIN)
        except _errors() as e:
            raise map_error(e, self.path) from e
        if self.BEGIN == _Tx.BEGIN:
            if self._superseded():
                self.conn.execute("ROLLBACK")
                raise Superseded(self.path)
            _refuse_newer(self.conn, self.path)
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except _errors() as e:
                try:  # a COMMIT that fails on a full disk has already rolled back
                    self.conn.execute("ROLLBACK")
                except _errors():
                    pass
                raise map_error(e, self.path) from e
        else:
            try:
                self.conn.execute("ROLLBACK")
            except Exception:
                pass
            if isinstance(exc, _errors()):
                raise map_error(exc, self.path) from exc


    def _superseded(self) -> bool:
        try:
            return self.conn.execute("SELECT 1 FROM meta WHERE key = ?",
                                     (SUPERSEDED_META,)).fetchone() is not None
        except _errors() as e:
            if "no such table" in str(e):  # a new file's first transaction makes the schema
                return False
            self.conn.execute("ROLLBACK")
            raise map_error(e, self.path) from e


class _Snapshot(_Tx):
    """BEGIN ... COMMIT around reads (a deferred transaction: no lock until the first read)."""

    BEGIN = "BEGIN"

    def __exit__(self, *exc) -> None:
        try:
            self.conn.execute("COMMIT")
        except _errors():
            pass


class Batches:
    """BEGIN IMMEDIATE at the start; `commit()` ends a batch and begins the next; COMMIT at
    a normal end, ROLLBACK (of the open batch) at any exception, which goes on. SQLite's
    errors pass as they are: the indexer maps them itself."""

    def __init__(self, conn, path: Path) -> None:
        self.conn, self.path = conn, path

    def __enter__(self) -> Batches:
        self.conn.execute("BEGIN IMMEDIATE")
        _refuse_newer(self.conn, self.path)
        return self

    def commit(self) -> None:
        self.conn.execute("COMMIT")
        self.conn.execute("BEGIN IMMEDIATE")
        _refuse_newer(self.conn, self.path)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.conn.execute("COMMIT")
                return
        except BaseException:
            self._rollback()
            raise
        self._rollback()

    def _rollback(self) -> None:
        try:
            self.conn.execute("ROLLBACK")
        except Exception:
            pass
