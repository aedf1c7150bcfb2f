"""The queries: every statement the commands run against the index, and nothing else in
`ov` runs SQL (tests/test_one_home.py holds it).

The index holds:
- `files`: one row per indexed file (path relative to the root, size, mtime_ns, content
  hash, created_at = first seen, updated_at = mtime, indexed_at, tags, tiers);
- `chunks`: spans of each file's decoded text (code-point offsets, lines, the text itself,
  a hash of it so identical text is never embedded twice), level 2 = full text (the
  passages), 0/1 = the abstract/overview tiers, 3 = a prose file's sentences (a vector
  each, no keyword row: evidence for the passage holding them);
- `chunks_fts` (FTS5, porter + unicode61) for BM25 keyword ranking; `chunks_tri` (FTS5
  trigram) for ranking text without word separators, holding only the passages that have
  such text; `files_tri` (FTS5 trigram, `detail=none`) for grep's literal prefilter, one
  row per file holding its distinct runs of word characters or punctuation
  (`trigram_doc`). All three
  are contentless: `chunks.text` is the one copy of the text, and rows are deleted with
  FTS5's 'delete' command fed the same text, which the stored chunks give back;
- `chunks_vec` (sqlite-vec `vec0`, 384 float dims, cosine) partitioned by level, with
  metadata columns so filters run inside the KNN query rather than after its limit;
- `big_files` (made when an index is opened for writing, ov.store.db OPTIONAL_TABLES): a
  row per file the last `ov index` skipped for its size, with the (size, mtime_ns,
  ctime_ns, inode) it was read at and its byte-trigram bitmap (ov.grams), for grep's
  prefilter.

Filters become SQL here (`Filters`), inside each branch, before any limit. The keyword
ranking's arithmetic (BM25's IDF, the cutoff frequency, FTS5's record decoding) is
`ov.bm25`'s; this module only reads what it needs. The store is handed vectors as float32
bytes and never imports the embedder.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
TYPE_CHECKING = False  # `typing` costs ~2 ms of a grep with an index: annotations only
if TYPE_CHECKING:
    from typing import Any

from ov.bm25 import (BM25_K1, COMMON_DF, RARE_MIN, RESCORE_POOL, TermStats, bm25_idf, fts_averages, rescore,
                     split_common, varint)
from ov.errors import OvError
from ov.globs import PathFilter, check_exclude_globs
from ov.kinds import MARKDOWN_EXT
from ov.store.db import (FTS_TOKENIZE, KNN_MAX, NO_VECTOR, PATH_FUNCTION, SENTENCE_LEVEL, TRI_KEPT_META, TRI_META,
                         Database, _errors, map_error, damaged, path_filter)
from ov.store.text import (FRONT_CHARS, front_of, fts_phrase, has_nospace, keyword_text, or_phrases, trigram_doc,
                           trigram_runs)

# ---- filters --------------------------------------------------------------------------


def front_block_sql(prefix: str = "") -> str:
    """SQL: whether a level-2 `chunks` row is a markdown note's front matter block
    (ov.indexer.front_block): its first passage, starting with `---`."""
    return f"{prefix}start = 0 AND substr({prefix}text, 1, 3) = '---'"


def left_out_sql(prefix: str = "c.") -> str:
    """SQL: whether a `chunks` row belongs to a file the default ranking leaves out (a
    NO_VECTOR file: minified, generated, lock, data). Rows that never get a vector in any
    file say nothing by their own mark, and their file decides:
    - an overview row (level 1): its file is left out when one of its passages, other
      than a front matter block, is NO_VECTOR (a file's passages are all NO_VECTOR or none is);
    - a markdown note's front matter block (ov.indexer.front_block: its first passage,
      `---` first, NO_VECTOR in every file): kept when the passage after it has a vector
      or waits for one. Its title, tags and names are the note's words, and a keyword hit
      on it is shown at that passage (ov.engine); left out, `Priya` named in a note's
      front matter scored 0.92 in keyword search and 0.003 in the default one.
    The level-1 subquery is not correlated: SQLite runs it once a statement, not once a row
    (a correlated one cost `fts_rows` half again); the front block's is a point read
    (idx_chunks_file_id_level_seq), asked only of NO_VECTOR first passages."""
    c = prefix
    return (f"({c}embedded = {NO_VECTOR} AND CASE {c}level "
            f"WHEN 1 THEN {c}file_id IN (SELECT file_id FROM chunks WHERE level = 2 "
            f"AND embedded = {NO_VECTOR} AND NOT ({front_block_sql()})) "
            f"WHEN 2 THEN NOT ({front_block_sql(c)} AND EXISTS (SELECT 1 FROM "
            f"chunks x WHERE x.file_id = {c}file_id AND x.level = 2 AND x.seq = {c}seq + 1 "
            f"AND x.embedded >= 0)) ELSE 1 END)")


def user_tags(stored: dict, old_front: dict[str, str] | None) -> dict:
    """The stored tags that `ov tag` set: all of them, but for those equal to the file's
    front-matter tags as last read (`old_front`; None: not known, all are kept)."""
    if not old_front or not isinstance(stored, dict):
        return stored if isinstance(stored, dict) else {}
    return {k: v for k, v in stored.items() if old_front.get(k) != v}


# markdown files (ov.kinds), where notes write `#tags`
_NOTES = "(" + " OR ".join(f"lower(f.path) LIKE '%{e}'" for e in sorted(MARKDOWN_EXT)) + ")"
# the rows of the files with a passage the trigram table holds, one with text without
# spaces (ov.query `_NOSPACE`): only they can hold such text, tiers included; and the rows
# it does not hold yet (ids above its mark, TRI_META: a first search leaves them to the
# background worker; a file's rows take consecutive ids)
_IN_TRI = ("(c.id > ? OR c.file_id IN (SELECT t.file_id FROM chunks t "
           "WHERE t.id IN (SELECT id FROM chunks_tri_docsize)))")


@dataclass(frozen=True)
class Filters:
    """What a ranked query may return; applied inside each branch, before any limit."""

    uris: tuple[str, ...] = ()  # relative paths: a file, or a folder ("" = everything)
    exclude_uris: tuple[str, ...] = ()
    # `-g` globs (`!GLOB` excludes) and `--exclude-uri` globs, read as grep reads `-g`
    # (ov.globs.PathFilter) from the folder `glob_at` names (ov.globs.read_from)
    globs: tuple[str, ...] = ()
    exclude_globs: tuple[str, ...] = ()
    glob_at: tuple[str, str] = ("", "")
    ftypes: tuple[str, ...] = ()  # file type names (ov.kinds.file_type)
    after: float | None = None  # epoch seconds
    before: float | None = None
    time_field: str = "updated_at"
    tags: tuple[tuple[str, str], ...] = ()  # AND
    levels: tuple[int, ...] = (2,)
    # NO_VECTOR rows (minified, generated, lock, data files): keyword search asks for
    # them, the default hybrid ranking leaves them out (ov.indexer.embeddable)
    vectorless: bool = True

    def __post_init__(self) -> None:
        # a glob the SQL function could not read would fail inside SQLite, where the error
        # reads as a damaged index: refused here, as grep refuses it
        if self.globs:
            PathFilter(self.globs)
        if self.exclude_globs:
            check_exclude_globs(self.exclude_globs)

    def level_where(self, prefix: str = "c.") -> str:
        """SQL over `chunks` for the levels (and NO_VECTOR rows when they are left out)."""
        lv = ",".join(str(int(x)) for x in self.levels)
        where = f"{prefix}level IN ({lv})"
        return where if self.vectorless else f"{where} AND NOT {left_out_sql(prefix)}"


    def file_where(self, alias: str = "f") -> tuple[str, list[Any]]:
        """SQL over `files` for every filter except levels."""
        parts: list[str] = []
        params: list[Any] = []
        if self.uris and "" not in self.uris:
            ors = []
            for u in self.uris:
                ors.append(f"({alias}.path = ? OR substr({alias}.path, 1, ?) = ?)")
                params += [u, len(u) + 1, u + "/"]
            parts.append("(" + " OR ".join(ors) + ")")
        for u in self.exclude_uris:
            parts.append(f"NOT ({alias}.path = ? OR substr({alias}.path, 1, ?) = ?)")
            params += [u, len(u) + 1, u + "/"]
        rules = self.path_rules
        if rules is not None:
            # the globs are asked of each file once, not of each of its rows
            parts.append(f"{alias}.id IN (SELECT id FROM files WHERE {PATH_FUNCTION}(?, path))")
            params.append(rules)
        self.kind_time_where(f"{alias}.", parts, params)
        for k, v in self.tags:
            parts.append(f"json_extract({alias}.tags, ?) = ?")
            params += ['$."' + k.replace('"', '') + '"', v]
        return (" AND ".join(parts) if parts else "1"), params

    def kind_time_where(self, prefix: str, parts: list[str], params: list[Any]) -> None:
        """The file-type and time filters, on columns `files` and `chunks_vec` share
        (`prefix` = "f." for files; "" inside the vec0 KNN query)."""
        if self.ftypes:
            stored, globs = self.stored_types()
            if stored is not None:  # (None: any type, the names alone decide; vec0 then
                # reads the files' chunk ids, `restricts_files`)
                parts.append(f"{prefix}ftype IN ({','.join('?' * len(stored))})")
                params += list(stored)
            if globs and prefix:  # the file's name (its path past the last /) by glob
                base = f"replace({prefix}path, rtrim({prefix}path, replace({prefix}path, '/', '')), '')"
                parts.append("(" + " OR ".join(f"{base} GLOB ?" for _ in globs) + ")")
                params += list(globs)
        col = "created_at" if self.time_field == "created_at" else "updated_at"
        if self.after is not None:
            parts.append(f"{prefix}{col} >= ?")
            params.append(self.after)
        if self.before is not None:
            parts.append(f"{prefix}{col} < ?")
            params.append(self.before)

    def holds_path(self, path: str) -> bool:
        """Whether a file at `path` lies in the scope `file_where` asks SQL for (uris,
        exclude_uris, file types; not tags or times, which a path does not carry): for
        files the index does not hold, such as those skipped for their size."""
        from ov.kinds import type_matcher  # noqa: PLC0415

        def under(u: str) -> bool:
            return not u or path == u or path.startswith(u + "/")
        rules = self.path_rules
        return ((not self.uris or any(under(u) for u in self.uris))
                and not any(under(u) for u in self.exclude_uris if u)
                and (rules is None or path_filter(rules)(path))
                and (not self.ftypes or type_matcher(list(self.ftypes))(path)))

    @property
    def path_rules(self) -> str | None:
        """The globs as one `PATH_FUNCTION` argument (`ov.store.db.path_filter` reads it),
        or None without any: `-g`'s in their order, then each `--exclude-uri` glob as a
        `!` glob, which the last-match rule lets no `-g` take back."""
        if not self.globs and not self.exclude_globs:
            return None
        rules = [*self.globs, *("!" + g for g in self.exclude_globs)]
        return json.dumps([rules, list(self.glob_at)], separators=(",", ":"))

    @property
    def restricts_rows(self) -> bool:
        """Whether anything but the level limits the chunks (what file_where filters)."""
        return self.file_where("f")[0] != "1"

    @property
    def restricts_files(self) -> bool:
        return bool((self.uris and "" not in self.uris) or self.exclude_uris or self.tags
                    or self.globs or self.exclude_globs or (self.ftypes and self.stored_types()[1]))

    def stored_types(self) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
        """(stored file types, name globs) of `ftypes` (see `ov.kinds.type_filter`): type
        names and extensions (`.canvas`); any other name is taken as a stored type itself.
        Stored types None: any (the globs decide); such a name is then not read (only a
        `Filters` built in code passes one)."""
        from ov.kinds import TYPES, type_filter  # noqa: PLC0415

        known = [t for t in self.ftypes if t in TYPES or t.startswith(".")]
        stored, globs = type_filter(known)
        if stored is None:
            return None, globs
        return (*stored, *(t for t in self.ftypes if t not in known)), globs


@dataclass
class ChunkRow:
    id: int
    file_id: int
    path: str
    level: int
    start: int
    end: int
    start_line: int
    end_line: int
    text: str
    size: int
    mtime_ns: int
    abstract: str | None = None
    overview: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    ctime_ns: int = 0
    inode: int = 0


# ---- the store ----------------------------------------------------------------------


class Store(Database):
    """An open index. Use `Store.open(path)` / `Store.create(root)`; close when done."""

    # Files the last `ov index` walked past and why, for `ov status`: every run walks the
    # whole tree and meets every such file again, so each run replaces the list.
    SKIPPED_KEEP = 1000
    # a ranked answer walks the tree for edits the index lacks (ov.engine._behind_warning);
    # `ov mcp` turns it off where its watcher keeps the index current
    checks_drift = True

    def restore_sessions(self, rows: Sequence[tuple]) -> None:
        """Context-mode ledgers carried over from the index a rebuild replaces
        (`salvage_sessions`: session, turn, uri, served_at)."""
        self.conn.executemany("INSERT INTO sessions(session, turn, uri, served_at) VALUES (?, ?, ?, ?)",
                              rows)

    def front_text(self, file_id: int) -> str:
        """The start of a file as last indexed, where front matter is: its passages from
        the first (when that begins the file) up to FRONT_CHARS, joined as the file had
        them (front matter longer than a passage spans several)."""
        return front_of(self.conn.execute(
            "SELECT start, end, text FROM chunks WHERE file_id = ? AND level = 2 AND start < ? "
            "ORDER BY start", (file_id, FRONT_CHARS)).fetchall())

    def restore_file_meta(self, kept: dict[str, tuple[str, float]]) -> None:
        """Tags (those set by `ov tag`: `user_tags`) and first-seen times carried over from
        the index a rebuild replaces (by path)."""
        rows = self.rows("SELECT id, path, tags FROM files")
        for fid, path, tags in rows:
            if path in kept:
                old_tags, created = kept[path]
                merged = json.loads(tags or "{}")
                try:
                    merged.update(json.loads(old_tags or "{}"))
                except (ValueError, TypeError, AttributeError):
                    pass
                self.conn.execute("UPDATE files SET tags = ?, created_at = ? WHERE id = ?",
                                  (json.dumps(merged, ensure_ascii=False, sort_keys=True),
                                   created if isinstance(created, (int, float)) else time.time(), fid))

    def set_skipped(self, skipped: Sequence[tuple[str, str]]) -> None:
        kept = sorted(skipped)[:self.SKIPPED_KEEP]
        self.set_meta("skipped_files", json.dumps({"total": len(skipped), "files": kept},
                                                  ensure_ascii=False))

    def skipped(self) -> tuple[int, list[tuple[str, str]]]:
        """(how many files the last `ov index` skipped, the first SKIPPED_KEEP of them as
        (path, reason) in path order); (0, []) for an index from before the list."""
        raw = self.get_meta("skipped_files")
        if not raw:
            return 0, []
        try:
            data = json.loads(raw)
            return int(data["total"]), [(str(p), str(r)) for p, r in data["files"]]
        except (ValueError, TypeError, KeyError, OverflowError):  # (not what ov writes: a planted value)
            raise damaged(self.path, "its list of skipped files is not ov's") from None

    def meta_int(self, key: str, default: int | None = 0) -> int | None:
        """A meta value ov writes as an integer (`default` when it has none); `damaged` when it
        is not one (a cloned tree's `tri_upto = 'x'` had ended every command, grep's too, in an
        `internal` ValueError)."""
        v = self.get_meta(key)
        if v is None:
            return default
        try:
            return int(v)
        except (TypeError, ValueError):
            raise damaged(self.path, f"its {key} is not a number") from None

    # -- files --
    def chunked_states(self) -> dict[str, tuple[int, int, int, int]]:
        """path -> (size, mtime_ns, ctime_ns, inode) of every indexed file with chunks (a
        file row without chunks says nothing about its text: skipped content). One probe
        of the chunks' (file_id, ...) index per file, not a scan of the chunks."""
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in self.rows(
            "SELECT f.path, f.size, f.mtime_ns, f.ctime_ns, f.inode FROM files f "
            "WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id)")}

    def chunked_states_of(self, paths) -> dict[str, tuple[int, int, int, int]]:
        """`chunked_states()` for the given paths only (those indexed with chunks; a name
        that is not UTF-8 is never indexed)."""
        return self._chunked_states_in("path", [p for p in paths if _utf8(p)])

    def chunked_states_of_inodes(self, inodes) -> dict[str, tuple[int, int, int, int]]:
        """`chunked_states()` of the indexed files with one of these inodes (the other
        names of a file with several links)."""
        return self._chunked_states_in("inode", list(inodes))

    def _chunked_states_in(self, column: str, values: list) -> dict[str, tuple[int, int, int, int]]:
        out: dict[str, tuple[int, int, int, int]] = {}
        for i in range(0, len(values), 500):
            part = values[i:i + 500]
            out.update((r[0], (r[1], r[2], r[3], r[4])) for r in self.rows(
                "SELECT f.path, f.size, f.mtime_ns, f.ctime_ns, f.inode FROM files f "
                f"WHERE f.{column} IN ({','.join('?' * len(part))}) "
                "AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id)", part))
        return out

    def file_states(self) -> dict[str, tuple[int, int, int, str, int, int]]:
        """path -> (id, size, mtime_ns, hash, ctime_ns, inode) for every indexed file."""
        got = {r[0]: tuple(r[1:]) for r in self.rows(
            "SELECT path, id, size, mtime_ns, hash, ctime_ns, inode FROM files")}
        if not all(isinstance(p, str) for p in got):  # (a planted BLOB path: `damaged`, not internal)
            raise damaged(self.path, "a file's path in it is not text")
        return got

    def touch_file(self, file_id: int, size: int, mtime_ns: int, ctime_ns: int = 0,
                   inode: int = 0) -> None:
        """Same content, new times: record them so the next run skips the hash."""
        self.conn.execute("UPDATE files SET size = ?, mtime_ns = ?, updated_at = ?, ctime_ns = ?, "
                          "inode = ? WHERE id = ?",
                          (size, mtime_ns, mtime_ns / 1e9, ctime_ns, inode, file_id))
        # the KNN filter reads updated_at from the vector table's own metadata column; vec0
        # refuses an UPDATE of several rows of a partitioned table, so one row at a time
        ids = self.rows("SELECT id FROM chunks WHERE file_id = ? AND embedded = 1", (file_id,))
        self.conn.executemany("UPDATE chunks_vec SET updated_at = ? WHERE chunk_id = ?",
                              [(mtime_ns / 1e9, cid) for (cid,) in ids])

    def retype_files(self, typed: Callable[[str], tuple[str, str]]) -> int:
        """Each file's (type, category) set to `typed(path)` where it differs, in `files`
        and in the vector table's copy of the type (row by row: vec0 takes no UPDATE over a
        subquery); the files changed. Inside the caller's transaction (ov.indexer
        `_restamp_types`)."""
        changed = [(*tc, fid) for fid, path, ftype, cat in self.rows("SELECT id, path, ftype, category FROM files")
                   if isinstance(path, str) and (tc := typed(path)) != (ftype, cat)]
        if changed:
            self.conn.executemany("UPDATE files SET ftype = ?, category = ? WHERE id = ?", changed)
            types = {fid: t for t, _c, fid in changed}
            rows = self.rows("SELECT c.id, c.file_id FROM chunks c JOIN json_each(?) j ON j.value = c.file_id "
                             "WHERE c.embedded = 1", (json.dumps(list(types)),))
            self.conn.executemany("UPDATE chunks_vec SET ftype = ? WHERE chunk_id = ?",
                                  [(types[fid], cid) for cid, fid in rows])
        return len(changed)

    def upsert_file(self, path: str, size: int, mtime_ns: int, hash_: str, *, ftype: str,
                    category: str, tags: dict[str, str] | None,
                    title: str = "", ctime_ns: int = 0, inode: int = 0,
                    old_front: dict[str, str] | None = None) -> int:
        """Insert or update a file row (keeping created_at and stored tags); returns its id.

        `tags` are front-matter tags read from the file: merged under the tags set by
        `ov tag`, which win. `old_front` are the front-matter tags the file held when it
        was last indexed: a stored tag equal to one of them came from the front matter,
        not from `ov tag`, and goes when the front matter drops or changes it (it used to
        stay, and win over the new value, for good). The file's abstract and overview are its level-0 and level-1
        rows (`_TIER`): the columns of those names stay NULL (schema 7).
        """
        now = time.time()
        row = self.conn.execute("SELECT id, tags FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO files(path, size, mtime_ns, hash, created_at, updated_at, indexed_at, "
                "tags, ftype, category, abstract, overview, title, ctime_ns, inode) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,NULL,NULL,?,?,?)",
                (path, size, mtime_ns, hash_, now, mtime_ns / 1e9, now,
                 json.dumps(tags or {}, ensure_ascii=False, sort_keys=True), ftype, category,
                 title, ctime_ns, inode))
            return cur.lastrowid
        file_id, old_tags = row
        merged = dict(tags or {})
        merged.update(user_tags(json.loads(old_tags or "{}"), old_front))
        self.conn.execute(
            "UPDATE files SET size=?, mtime_ns=?, hash=?, updated_at=?, indexed_at=?, tags=?, "
            "ftype=?, category=?, abstract=NULL, overview=NULL, title=?, ctime_ns=?, inode=? WHERE id=?",
            (size, mtime_ns, hash_, mtime_ns / 1e9, now,
             json.dumps(merged, ensure_ascii=False, sort_keys=True), ftype, category,
             title, ctime_ns, inode, file_id))
        return file_id

    def delete_file(self, file_id: int) -> None:
        self.delete_chunks(file_id)
        self.conn.execute("DELETE FROM files WHERE id = ?", (file_id,))

    # -- chunks --
    def delete_chunks(self, file_id: int) -> None:
        rows = self.conn.execute("SELECT id, level, text, start, end FROM chunks WHERE file_id = ? "
                                 "ORDER BY id", (file_id,)).fetchall()
        if not rows:
            return
        # the keyword rows were written with the file's title as it was then: delete a
        # file's chunks before its row takes a new title (see ov.indexer._index_file)
        title = self.q1("SELECT title FROM files WHERE id = ?", (file_id,)) or ""
        self.conn.executemany(
            "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)",
            [(r[0], keyword_text(r[2], title)) for r in rows if r[1] != SENTENCE_LEVEL])
        upto = self.tri_upto()
        passages = [r for r in rows if r[1] == 2 and r[0] <= upto]  # those with trigram rows
        ranked = [r for r in rows if r[1] == 2 and r[0] <= max(upto, self.tri_kept())]  # with a chunks_tri row
        self.conn.executemany(
            "INSERT INTO chunks_tri(chunks_tri, rowid, text) VALUES ('delete', ?, ?)",
            [(r[0], r[2]) for r in ranked if has_nospace(r[2])])
        if passages:
            self.conn.execute("INSERT INTO files_tri(files_tri, rowid, text) VALUES ('delete', ?, ?)",
                              (file_id, trigram_doc([(r[3], r[4], r[2]) for r in passages])))
        self.conn.executemany("DELETE FROM chunks_vec WHERE chunk_id = ?", [(r[0],) for r in rows])
        self.conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))

    def insert_chunks(self, file_id: int, chunks: Sequence[Any], title: str = "", *,
                      embed: bool = True, trigrams: bool = True,
                      camel: Sequence[str] | None = None, tri_doc: str | None = None) -> list[int]:
        """Insert chunks (objects with start, end, start_line, end_line, text, level).

        Ids are assigned here so the tables take one `executemany` each; this runs inside
        the indexer's write transaction, so no other writer can take them. `embed=False`
        marks the rows NO_VECTOR. `trigrams=False` leaves the trigram rows to
        `fill_trigrams`; with True they are written now unless earlier chunks still wait
        for theirs (the mark, TRI_META, can only move over a contiguous run of ids).
        `chunks` are all of the file's rows; `camel` (`camel_words` of each keyword row)
        and `tri_doc` (`trigram_doc` of its passages), when given, were computed beside
        the chunking, out of this process.
        A row's text hash is written with its vector (`_insert_vec`), not here.
        """
        upto = self.tri_upto()
        top = self.q1("SELECT max(id) FROM chunks") or 0
        first = max(top, upto) + 1
        ids = list(range(first, first + len(chunks)))
        state = 0 if embed else NO_VECTOR
        self.conn.executemany(
            "INSERT INTO chunks(id, file_id, level, seq, start, end, start_line, end_line, text, "
            "embedded) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(cid, file_id, c.level, seq, c.start, c.end, c.start_line, c.end_line, c.text, state)
             for seq, (cid, c) in enumerate(zip(ids, chunks))])
        # sentence rows (level 3) are vectors only: no keyword rows of their own
        kw_ids = [cid for cid, c in zip(ids, chunks) if c.level != SENTENCE_LEVEL]
        texts = [c.text for c in chunks if c.level != SENTENCE_LEVEL]
        keywords = [keyword_text(t, title, w) for t, w in zip(texts, camel)] if camel is not None \
            else [keyword_text(t, title) for t in texts]
        self.conn.executemany("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", zip(kw_ids, keywords))
        if trigrams and ids and upto >= top:
            passages = [(cid, c) for cid, c in zip(ids, chunks) if c.level == 2]
            self._write_trigrams(file_id, [(cid, c.start, c.end, c.text) for cid, c in passages], tri_doc)
            self.set_meta(TRI_META, str(ids[-1]))
        return ids

    # -- grep's trigram rows (written after the keyword rows) --
    def tri_upto(self) -> int:
        """Level-2 chunks with an id at or below this have their trigram rows. An index
        from before the mark wrote them with the chunks: all of them have."""
        v = self.meta_int(TRI_META, None)
        return v if v is not None else self.q1("SELECT max(id) FROM chunks") or 0

    def tri_kept(self) -> int:
        """Level-2 chunks with an id at or below this kept their `chunks_tri` rows through
        the upgrade to schema 8, which emptied `files_tri` alone (0: none)."""
        return self.meta_int(TRI_KEPT_META)

    def pin_tri_upto(self) -> None:
        """Record the mark (inside a write transaction) before chunks are added without
        trigram rows, so that an older index's rows stay counted as written."""
        if self.get_meta(TRI_META) is None:
            self.set_meta(TRI_META, str(self.tri_upto()))

    def trigram_pending(self) -> int:
        """Level-2 chunks still without trigram rows."""
        return self.q1("SELECT count(*) FROM chunks WHERE id > ? AND level = 2", (self.tri_upto(),))

    def trigrams_complete(self) -> bool:
        return self.q1("SELECT 1 FROM chunks WHERE id > ? AND level = 2 LIMIT 1",
                       (self.tri_upto(),)) is None

    def fill_trigrams(self, batch: int = 2000) -> int:
        """Write the trigram rows of the files whose chunks lack them, about `batch` chunks
        in one transaction (a file's chunks always together); returns how many passages
        (0 = none left). Chunks are taken in id order, so the mark moves over every chunk
        it passes."""
        with self.tx():
            upto, kept = self.tri_upto(), self.tri_kept()
            rows = self.rows("SELECT id, file_id, level, start, end, text FROM chunks WHERE id > ? "
                             "ORDER BY id LIMIT ?", (upto, batch))
            if not rows:
                return 0
            # the last file's chunks may run past the batch: a file is written whole
            rows += self.rows("SELECT id, file_id, level, start, end, text FROM chunks WHERE id > ? "
                              "AND file_id = ? ORDER BY id", (rows[-1][0], rows[-1][1]))
            by_file: dict[int, list[tuple[int, int, int, str]]] = {}
            for cid, fid, level, start, end, text in rows:
                if level == 2:
                    by_file.setdefault(fid, []).append((cid, start, end, text))
            for fid, passages in by_file.items():
                self._write_trigrams(fid, passages, ranked=passages[0][0] > kept)
            self.set_meta(TRI_META, str(rows[-1][0]))
        return sum(1 for r in rows if r[2] == 2)

    def _write_trigrams(self, file_id: int, passages: Sequence[tuple[int, int, int, str]],
                        doc: str | None = None, ranked: bool = True) -> None:
        """A file's trigram rows from its passages (chunk id, start, end, text), in file
        order: its `files_tri` row, and a `chunks_tri` row for each passage holding text
        without word separators (unless `ranked` is False: the file's passages kept theirs
        through the upgrade to schema 8, `tri_kept`)."""
        if not passages:
            return
        # (isascii first: has_nospace's call costs more than its answer on ASCII text)
        if ranked:
            self.conn.executemany("INSERT INTO chunks_tri(rowid, text) VALUES (?, ?)",
                                  [(p[0], p[3]) for p in passages if not p[3].isascii() and has_nospace(p[3])])
        self.conn.execute("INSERT INTO files_tri(rowid, text) VALUES (?, ?)",
                          (file_id, doc if doc is not None else trigram_doc([p[1:] for p in passages])))

    def file_vectors(self, file_id: int) -> dict[str, bytes]:
        """A file's stored vectors by their chunk's text hash (read before its chunks are
        replaced, so that the unchanged ones keep their vectors: `reuse_vectors`)."""
        return dict(self.rows("SELECT c.hash, v.embedding FROM chunks c JOIN chunks_vec v ON v.chunk_id = c.id "
                              "WHERE c.file_id = ?", (file_id,)))

    def reuse_vectors(self, hashes: dict[int, str], known: dict[int, bytes] | None = None) -> int:
        """Give new chunks (chunk id -> its text hash) a vector without embedding them:
        `known[chunk id]` when given (the caller matched it by text hash), else a stored one
        of the same text hash. Returns count."""
        known = known or {}
        if not known and not self.has_vectors():
            return 0
        stored = self.vectors_by_hash([h for cid, h in hashes.items() if cid not in known])
        n = 0
        for cid, h in hashes.items():
            blob = known.get(cid) or stored.get(h)
            if blob is not None:
                self._insert_vec(cid, blob, h)
                n += 1
        return n

    def no_vectors(self, chunk_ids: Sequence[int], state: int = NO_VECTOR) -> None:
        """Mark rows that are never given a vector (`embedded` = NO_VECTOR, or BARE: keyword
        rows only), so they are not pending (ov.indexer.wants_vector)."""
        self.conn.executemany("UPDATE chunks SET embedded = ? WHERE id = ?", [(state, c) for c in chunk_ids])

    def _insert_vec(self, chunk_id: int, blob: bytes, text_hash: str) -> None:
        meta = self.conn.execute(
            "SELECT c.level, f.ftype, f.updated_at, f.created_at FROM chunks c JOIN files f "
            "ON f.id = c.file_id WHERE c.id = ?", (chunk_id,)).fetchone()
        self.conn.execute(
            "INSERT INTO chunks_vec(chunk_id, embedding, level, ftype, updated_at, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)", (chunk_id, blob, meta[0], meta[1] or "", meta[2], meta[3]))
        # the hash is what `vectors_by_hash` finds the vector by; a row without a vector has none
        self.conn.execute("UPDATE chunks SET embedded = 1, hash = ? WHERE id = ?", (text_hash, chunk_id))

    def pending_embeddings(self) -> list[tuple[int, int]]:
        """(chunk id, text length) of chunks waiting for a vector, shortest first (the embed
        phase hashes their text as it reads it)."""
        return self.rows("SELECT id, length(text) FROM chunks WHERE embedded = 0 "
                         "ORDER BY length(text), id")

    def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, bytes]:
        """A stored vector for each text hash that has one."""
        if not hashes:
            return {}
        # from the hashes, through the hash index: left to itself the planner walked every
        # row with a vector (idx_chunks_embedded), ~0.1 s a call at 200k vectors
        return dict(self.rows(
            "SELECT c.hash, v.embedding FROM json_each(?) j CROSS JOIN chunks c "
            "ON c.hash = j.value AND c.embedded = 1 JOIN chunks_vec v ON v.chunk_id = c.id GROUP BY c.hash",
            (json.dumps(list(dict.fromkeys(hashes))),)))

    def coverage(self) -> tuple[int, int]:
        """(rows with a vector, rows that will have one): every level, NO_VECTOR rows left
        out. One pass over the `embedded` index."""
        n = dict(self.rows("SELECT embedded, count(*) FROM chunks GROUP BY embedded"))
        return n.get(1, 0), n.get(1, 0) + n.get(0, 0)

    def chunk_texts(self, ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            for cid, text in self.rows(
                    f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(part))})", part):
                out[cid] = text
        return out

    def store_vectors(self, ids: Sequence[int], blobs: Sequence[bytes], hashes: Sequence[str]) -> None:
        """Each row's vector and the hash of the text it was computed from."""
        for cid, blob, h in zip(ids, blobs, hashes):
            # a chunk deleted since it was read (a concurrent change) is skipped
            if self.conn.execute("SELECT 1 FROM chunks WHERE id = ? AND embedded = 0",
                                 (cid,)).fetchone():
                self._insert_vec(cid, blob, h)

    # -- reading for search --
    def counts(self) -> dict[str, int]:
        return {
            "files": self.q1("SELECT count(*) FROM files"),
            "chunks": self.q1("SELECT count(*) FROM chunks WHERE level = 2"),
            "tier_chunks": self.q1("SELECT count(*) FROM chunks WHERE level IN (0, 1)"),
            "embedded": self.q1("SELECT count(*) FROM chunks WHERE embedded = 1 AND level = 2"),
            "pending": self.q1("SELECT count(*) FROM chunks WHERE embedded = 0"),
            "no_vector": self.q1("SELECT count(*) FROM chunks WHERE embedded < 0"),
        }

    def file_count(self) -> int:
        return self.q1("SELECT count(*) FROM files")

    def files_named(self, name: str, filters: Filters, limit: int) -> dict[str, int]:
        """path -> file id of the indexed files passing `filters` at the path `name`
        (relative to the root) or whose path ends in `/name`, the case of ASCII letters
        aside (`readme.md` names README.md); at most `limit`, by path. A scan of the
        paths."""
        like = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where, params = filters.file_where("f")
        rows = self.rows(
            f"SELECT f.path, f.id FROM files f WHERE (f.path LIKE ? ESCAPE '\\' OR f.path LIKE ? ESCAPE '\\') "
            f"AND {where} ORDER BY f.path LIMIT ?", [like, "%/" + like, *params, limit])
        return {r[0]: r[1] for r in rows}

    def files_of_stem(self, words: str, filters: Filters, limit: int) -> dict[str, int] | None:
        """path -> file id of the indexed files passing `filters` whose name, without its
        last extension, reads as `words` (ov.query.stem_words: `npm-install.md`, `Reading
        list.md`); None when more than `limit` do (a name as common as `index`). A scan of
        the paths that hold the words in order."""
        # (the words are letters and digits: nothing to escape. LIKE folds the case of ASCII
        # letters only: any other letter is any character there, and the names are compared
        # lowercased below: `Über Uns` names `Über Uns.md`)
        like = "%" + "%".join("".join(ch if ch.isascii() else "_" for ch in w) for w in words.split()) + "%"
        where, params = filters.file_where("f")
        out: dict[str, int] = {}
        for path, fid in self.rows(f"SELECT f.path, f.id FROM files f WHERE f.path LIKE ? ESCAPE '\\' "
                                   f"AND {where}", [like, *params]):
            stem = path.rsplit("/", 1)[-1]
            stem = stem.rsplit(".", 1)[0] if "." in stem.lstrip(".") else stem
            if " ".join(re.findall(r"[^\W_]+", stem)).lower() == words:
                out[path] = fid
                if len(out) > limit:
                    return None
        return out

    def tag_candidates(self, tag: str, filters: Filters) -> list[tuple[str, int, bool, str]]:
        """(path, chunk id, whether it is a front matter block, text) of the markdown
        passages (notes: a C file's `#include` is no tag) passing `filters` that hold `tag`
        as text, the case of ASCII letters aside (a scan: the caller checks it is a tag
        there, `#tag` or an entry of the front matter's `tags`), in the files' order."""
        fw, fp = filters.file_where("f")
        return [(r[0], r[1], bool(r[2]), r[3]) for r in self.rows(
            # (the notes first, then their passages: the kernel's 1 GB of text, lowercased, took 3-5 s)
            f"SELECT f.path, c.id, {front_block_sql('c.')}, c.text FROM files f CROSS JOIN chunks c ON c.file_id = f.id "
            f"WHERE {_NOTES} AND c.level = 2 AND {fw} AND instr(lower(c.text), lower(?)) > 0 "
            f"ORDER BY f.path, c.seq, c.id", [*fp, tag])]

    def file_ids(self, paths: Sequence[str]) -> dict[str, int]:
        """path -> file id of those of `paths` the index holds."""
        return dict(self.rows("SELECT path, id FROM files WHERE path IN (SELECT value FROM json_each(?))",
                              (json.dumps(list(paths)),)))

    def paths_where(self, filters: Filters) -> set[str]:
        """Paths of the indexed files that pass `filters`' file conditions (tags, types,
        times, paths)."""
        where, params = filters.file_where("f")
        return {r[0] for r in self.rows(f"SELECT f.path FROM files f WHERE {where}", params)}

    def file_tags(self) -> dict[str, str]:
        """path -> its tags as stored (a JSON object), for every indexed file."""
        return dict(self.rows("SELECT path, tags FROM files"))

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def chunk_count(self) -> int:
        """Full-text chunks in the index (recorded by the indexer; counted if missing)."""
        v = self.get_meta("chunks")
        return int(v) if v is not None else self.q1("SELECT count(*) FROM chunks WHERE level = 2")

    def record_chunk_count(self) -> None:
        self.set_meta("chunks", str(self.q1("SELECT count(*) FROM chunks WHERE level = 2")))

    def has_left_out(self) -> bool:
        """Whether any passage belongs to a file the default ranking leaves out
        (`left_out_sql`): NO_VECTOR passages read through the `embedded` index."""
        return self.q1(f"SELECT 1 FROM chunks c WHERE c.embedded = {NO_VECTOR} AND c.level = 2 "
                       f"AND {left_out_sql('c.')} LIMIT 1") is not None

    def has_vectors(self) -> bool:
        return self.q1("SELECT 1 FROM chunks WHERE embedded = 1 LIMIT 1") is not None

    def generation(self) -> str:
        """Changes whenever the indexed content changes (for cursors)."""
        return self.get_meta("generation") or "0"

    def bump_generation(self) -> None:
        """A new generation, above every earlier one whatever the clock does (grep's cache of
        file states is keyed on it, ov.search.prefilter: a value met again would be trusted)."""
        try:
            prev = int(self.get_meta("generation") or "0", 16)
        except ValueError:
            prev = 0
        self.set_meta("generation", f"{max(time.time_ns(), prev + 1):x}")

    def vectors_generation(self) -> str:
        """Moves whenever vectors are added (`bump_vectors`): a cursor of a ranking that
        reads vectors is bound to it too."""
        return self.get_meta("vgeneration") or "0"

    def bump_vectors(self) -> None:
        self.set_meta("vgeneration", f"{time.time_ns():x}")

    def allowed_chunk_sql(self, filters: Filters, with_vector: bool = False) -> tuple[str, list[Any]]:
        """SQL selecting chunk ids that pass every filter (with `with_vector`, only those
        that have a vector)."""
        fw, fp = filters.file_where("f")
        vec = " AND c.embedded = 1" if with_vector else ""
        return (f"SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                f"WHERE {filters.level_where()}{vec} AND {fw}", fp)

    def allowed_chunk_ids(self, filters: Filters, with_vector: bool = False) -> list[int]:
        """The ids of the chunks that pass every filter. The vector branch asks only for
        rows with a vector: on the kernel with 2 % of its vectors, `-g '!*_test.go'` had
        listed all 2.9 million passages (2.8 s) for a KNN that reads 60,000."""
        sql, params = self.allowed_chunk_sql(filters, with_vector)
        return [r[0] for r in self.rows(sql, params)]

    def keyword_search(self, match: str, filters: Filters, limit: int,
                       table: str = "chunks_fts") -> list[tuple[int, float]]:
        """(chunk id, bm25) best first; bm25 is FTS5's (lower is better), negated here.
        Rows tying the last one are all returned (see `_with_ties`)."""
        cut = self._cutoff(match, filters, table)  # once: `_with_ties` may fetch again
        return _with_ties(lambda n: self._keyword_search(match, filters, n, table, cut), limit)

    def _cutoff(self, match: str, filters: Filters, table: str):
        """(rare words, common words, their stats) when `match` loses its common words.

        On `chunks_fts` with no file filter, an OR of quoted words (query.keyword_plan)
        loses its common words when a rarer one remains (Lucene's cutoff frequency): see
        `_pruned_search`. A file filter already limits the ranking to the rows it passes,
        and there the rare words often fill fewer than `limit` rows, which would cost a
        second, whole query (34 -> 65 ms for -u, -t and --after together on 100k chunks)."""
        if table != "chunks_fts" or filters.restricts_rows:
            return None
        words = or_phrases(match)
        if not words or len(words) < 2:
            return None
        stats = self.term_stats(words)
        rare, common = split_common(words, stats, COMMON_DF)
        return (rare, common, stats) if common else None

    def _keyword_search(self, match: str, filters: Filters, limit: int, table: str,
                        cut) -> list[tuple[int, float]]:
        """The best `limit` rows of `match`, ties by rowid (see `_cutoff`)."""
        if cut is not None:
            pool = self._pruned_search(*cut, filters, limit)
            if pool is not None:
                return pool
        return self._match_search(match, filters, limit, table)

    def _match_search(self, match: str, filters: Filters, limit: int,
                      table: str) -> list[tuple[int, float]]:
        fw, fp = filters.file_where("f")
        if fw == "1":
            hits = self._top_at_levels(match, filters, limit, table)
            if hits is not None:
                return hits
        sql = (f"SELECT t.rowid, bm25({table}) AS s FROM {table} t "
               f"JOIN chunks c ON c.id = t.rowid JOIN files f ON f.id = c.file_id "
               f"WHERE {table} MATCH ? AND {filters.level_where()} AND {fw} "
               f"ORDER BY s, t.rowid LIMIT ?")
        return [(r[0], -r[1]) for r in self.rows(sql, [match, *fp, limit])]

    def _top_at_levels(self, match: str, filters: Filters, limit: int,
                       table: str) -> list[tuple[int, float]] | None:
        """The best `limit` rows of `match` among the levels `filters` allows, when only the
        level is to be checked; None when too few of the best rows pass (the caller's
        join ranks the passing rows only). A warm store answers from the postings it
        holds (`ov.store.postings`)."""
        # rank the FTS5 rows alone and look up the chunks of the best few, since joining
        # every matching row costs as much as ranking it (50 -> 28 ms for two words in 28%
        # of 100k chunks). Exact whenever enough of them pass.
        k = limit * TOP_OVERFETCH
        # bm25() is most of a keyword query's time: named once, it is computed once a row
        # (`SELECT -bm25(t) ... ORDER BY bm25(t)` computed it twice: 425 -> 356 ms for the 8
        # benchmark queries on the stdlib, loaded machine)
        top = [(r[0], -r[1]) for r in self.rows(
            f"SELECT rowid, bm25({table}) AS s FROM {table} WHERE {table} MATCH ? "
            f"ORDER BY s, rowid LIMIT ?", (match, k))]
        ok = {r[0] for r in self.rows(
            f"SELECT c.id FROM chunks c WHERE c.id IN (SELECT value FROM json_each(?)) "
            f"AND {filters.level_where()}", (json.dumps([r[0] for r in top]),))} if top else set()
        hits = [(r[0], r[1]) for r in top if r[0] in ok][:limit]
        return hits if len(hits) == limit or len(top) < k else None

    def _temp_tables(self) -> None:
        """Per-connection helpers in the temp schema (so read-only connections have them
        too): a scratch FTS5 table with the keyword table's tokenizer, which turns query
        words into the index's terms (porter stems), and vocabulary views of chunks_fts."""
        if self.q1("SELECT 1 FROM temp.sqlite_master WHERE name = 'ov_words'"):
            return
        try:
            for sql in (f"ov_words USING fts5(text, tokenize='{FTS_TOKENIZE}')",
                        "ov_words_terms USING fts5vocab(temp, ov_words, instance)",
                        "ov_fts_terms USING fts5vocab(main, chunks_fts, row)",
                        "ov_fts_hits USING fts5vocab(main, chunks_fts, instance)"):
                self.conn.execute(f"CREATE VIRTUAL TABLE temp.{sql}")
        except _errors() as e:
            raise map_error(e, self.path) from e

    def term_stats(self, words: Sequence[str]) -> TermStats:
        """The index terms of each word and how many keyword rows hold each term (one
        vocabulary lookup per term: its doclist is counted, not ranked)."""
        terms = self._word_terms(words)
        df = {t: self._term_df(t) for t in dict.fromkeys(t for ts in terms.values() for t in ts)}
        rows, avg_len = fts_averages(self.fts_averages_block())
        return TermStats(rows, avg_len, terms, df)

    def _term_df(self, term: str) -> int:
        """Keyword rows holding index term `term` (its doclist counted, not ranked)."""
        return self.q1("SELECT doc FROM temp.ov_fts_terms WHERE term = ?", (term,)) or 0

    def fts_averages_block(self) -> bytes | None:
        """The keyword table's averages record (rows, tokens: `ov.bm25.fts_averages`)."""
        return self.q1("SELECT block FROM chunks_fts_data WHERE id = 1")

    def keyword_rows(self) -> int:
        """The keyword table's rows, from its averages record (what bm25's idf counts)."""
        return fts_averages(self.fts_averages_block())[0]

    def fts_rows(self) -> tuple[list[int], list[bytes], list[int], list[bool]]:
        """Every keyword row's id, ascending, its docsize record, its chunk's level (-1: no
        chunk) and whether its file is left out of the default ranking (what
        `Filters.level_where` checks: `left_out_sql`)."""
        rows = self.rows(f"SELECT d.id, d.sz, coalesce(c.level, -1), coalesce({left_out_sql()}, 0) "
                         "FROM chunks_fts_docsize d LEFT JOIN chunks c ON c.id = d.id ORDER BY d.id")
        return tuple(list(col) for col in zip(*rows)) if rows else ([], [], [], [])

    def term_postings(self, term: str) -> tuple[list[int], list[int]]:
        """The keyword rows holding index term `term`, ascending, and its occurrences in each."""
        self._temp_tables()
        rows = self.rows("SELECT doc, count(*) FROM temp.ov_fts_hits WHERE term = ? "
                         "GROUP BY doc ORDER BY doc", (term,))
        return tuple(list(col) for col in zip(*rows)) if rows else ([], [])

    def _word_terms(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Each word's index terms, as the keyword table's tokenizer makes them."""
        self._temp_tables()
        try:
            self.conn.execute("DELETE FROM temp.ov_words")
            self.conn.executemany("INSERT INTO temp.ov_words(rowid, text) VALUES (?, ?)",
                                  list(enumerate(words)))
            toks: dict[int, list[str]] = {}
            for i, term in self.conn.execute(
                    "SELECT doc, term FROM temp.ov_words_terms ORDER BY doc, offset"):
                toks.setdefault(i, []).append(term)
            self.conn.execute("DELETE FROM temp.ov_words")
        except _errors() as e:
            raise map_error(e, self.path) from e
        return {w: tuple(toks.get(i, ())) for i, w in enumerate(words)}

    def _pruned_search(self, rare: Sequence[str], common: Sequence[str], stats: TermStats,
                       filters: Filters, limit: int) -> list[tuple[int, float]] | None:
        """The rows holding a rare word: the rare words ranked by FTS5, then the first
        RESCORE_POOL candidates' bm25 completed with the common words' share, computed
        here as FTS5's bm25() does (a sum over the query's phrases), so each of them keeps
        the score of the whole query and the hybrid schedule its scale. Reading a common
        word's occurrences costs about a fifth of ranking its rows. Candidates past the
        pool follow with their rare words' bm25 alone, which is at most any pooled row's.

        Neither the pool nor the choice between these rows and the whole query (None:
        fewer than RARE_MIN of them) depends on `limit`: the engine asks deeper for later
        pages, and a ranking that changed with the depth would repeat or skip hits from
        one page to the next."""
        match = " OR ".join(fts_phrase(w) for w in rare)
        pool = self._match_search(match, filters, max(limit, RESCORE_POOL), "chunks_fts")
        if len(pool) < RARE_MIN:
            return None
        return (self._rescore(pool[:RESCORE_POOL], common, stats) + pool[RESCORE_POOL:])[:limit]

    def _rescore(self, pool: list[tuple[int, float]], common: Sequence[str],
                 stats: TermStats) -> list[tuple[int, float]]:
        """`pool` with the common words' share of bm25 added (`ov.bm25.rescore`), from
        each pooled row's length and its occurrences of each common word."""
        ids = [cid for cid, _ in pool]
        dl = {cid: varint(blob)[0] for cid, blob in self.rows(
            "SELECT id, sz FROM chunks_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),))}
        hits = [(stats.terms[w][0], self._term_counts(stats.terms[w][0], ids)) for w in common]
        return rescore(pool, common, stats, dl, hits)

    def _term_counts(self, term: str, ids: Sequence[int]) -> list[tuple[int, int]]:
        """(row, occurrences of `term`) of the keyword rows among `ids`."""
        return self.rows("SELECT doc, count(*) FROM temp.ov_fts_hits WHERE term = ? AND "
                         "doc IN (SELECT value FROM json_each(?)) GROUP BY doc", (term, json.dumps(list(ids))))

    def vector_search(self, qvec: bytes, filters: Filters, k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine distance) nearest first, filters inside the KNN query; rows
        tying the k-th are all returned (see `_with_ties`), up to KNN_MAX."""
        k = max(1, min(k, KNN_MAX))
        return _with_ties(lambda n: self._vector_search(qvec, filters, min(n, KNN_MAX)), k)

    def _vector_search(self, qvec: bytes, filters: Filters, k: int) -> list[tuple[int, float]]:
        """The k nearest rows of the filters' levels. `level` is the table's partition key:
        vec0 reads only the levels named, and returns k rows for each, so the merged rows
        are cut to k."""
        where = ["embedding MATCH ?", "k = ?"]
        params: list[Any] = [qvec, k]
        if filters.levels:
            where.append(f"level IN ({','.join(str(int(x)) for x in filters.levels)})")
        filters.kind_time_where("", where, params)
        if filters.restricts_files:
            ids = self.allowed_chunk_ids(filters, with_vector=True)
            if not ids:
                return []
            where.append("chunk_id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(ids))
        sql = f"SELECT chunk_id, distance FROM chunks_vec WHERE {' AND '.join(where)} ORDER BY distance"
        # vec0 allows only `ORDER BY distance`; ties are ordered by id here for determinism
        return sorted(((r[0], r[1]) for r in self.rows(sql, params)), key=lambda r: (r[1], r[0]))[:k]

    def substring_search(self, term: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
        """Chunks containing `term` (for 1-2 character terms the trigram table cannot serve),
        scored as bm25 scores a word without its length norm: the idf of the rows holding
        it among the keyword table's rows, times its count saturated by k1 (a raw count had
        no idf: a word in 9 notes of 10 scored as a rare one, ov.rank.Tree). A scan,
        bounded by the filters. Rows tying the last one are all returned (as
        `_with_ties`), by a second scan at most: most rows hold a term once, so a tie there
        is often most of the table. `term` is a run without spaces, or a pair of characters
        of one (ov.query.keyword_plan): only the rows of the files that hold such text are
        read (`_IN_TRI`). Twelve pairs had read the kernel's whole text 24 times (29.5 s for
        a 16-character question), and `内存` alone took 4.3 s."""
        rows = self._substring_search(term, filters, limit + 1)
        if len(rows) > limit and rows[limit][1] == rows[limit - 1][1]:
            rows = self._substring_search(term, filters, -1, rows[limit - 1][1])
        else:
            rows = rows[:limit]
        if not rows:
            return []
        idf = bm25_idf(self.keyword_rows(), self.rows_holding(term))
        return [(cid, idf * n * (BM25_K1 + 1) / (n + BM25_K1)) for cid, n in rows]

    def score_runs(self, runs: Sequence[str], hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """The trigram table's hits (of no-space runs of 3+ characters) scored as
        `substring_search` scores a short run, best first: each run's idf among the keyword
        table's rows (the passages holding it counted in the trigram table), times its count
        in the row saturated by k1, summed over the runs. FTS5's own bm25 there counts only
        the trigram table's rows, which hold just the passages of such scripts: in a tree of
        English with a few Japanese notes every run held by most of them had an idf at or
        under 0, and an exact match of `検索エンジン` scored 0.0013."""
        if not hits or not runs:
            return hits
        n = self.keyword_rows()
        idf = {r: bm25_idf(n, self.q1("SELECT count(*) FROM chunks_tri WHERE chunks_tri MATCH ?", (fts_phrase(r),)))
               for r in runs}
        texts = self.chunk_texts([cid for cid, _ in hits])
        scored = []
        for cid, _ in hits:
            t = texts.get(cid, "")
            s = sum(idf[r] * c * (BM25_K1 + 1) / (c + BM25_K1) for r in runs if (c := t.count(r)))
            scored.append((cid, s))
        return sorted(scored, key=lambda h: (-h[1], h[0]))

    def rows_holding(self, term: str) -> int:
        """The keyword rows whose text holds `term` (a run without spaces), as FTS5 counts a
        word's rows (whatever the scope: a file's score does not depend on it). A scan of the
        text of the files that hold such text (`_IN_TRI`)."""
        return self.q1(f"SELECT count(*) FROM chunks c WHERE c.level != {SENTENCE_LEVEL} AND {_IN_TRI} "
                       "AND instr(c.text, ?) > 0", (self.tri_upto(), term))

    def _substring_search(self, term: str, filters: Filters, limit: int,
                          least: float = 0.0) -> list[tuple[int, float]]:
        fw, fp = filters.file_where("f")
        sql = (f"SELECT c.id, (length(c.text) - length(replace(c.text, ?, ''))) / length(?) AS n "
               f"FROM chunks c JOIN files f ON f.id = c.file_id WHERE {filters.level_where()} AND {fw} "
               f"AND {_IN_TRI} AND instr(c.text, ?) > 0 AND n >= ? ORDER BY n DESC, c.id LIMIT ?")
        return [(r[0], float(r[1])) for r in self.rows(sql, [term, term, *fp, self.tri_upto(), term, least, limit])]

    def left_out(self, ids: Sequence[int]) -> set[int]:
        """Those of `ids` whose rows the default ranking leaves out (`left_out_sql`)."""
        if not ids:
            return set()
        return {r[0] for r in self.rows(f"SELECT c.id FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value "
                                         f"WHERE {left_out_sql('c.')}", (json.dumps(list(ids)),))}

    def chunk_paths(self, ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        ids = list(dict.fromkeys(ids))
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            for cid, path in self.rows(
                    f"SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id "
                    f"WHERE c.id IN ({','.join('?' * len(part))})", part):
                if not isinstance(path, str):
                    raise damaged(self.path, "a file's path in it is not text")
                out[cid] = path
        return out

    def file_vector_distances(self, qvec: bytes, chunk_ids: Sequence[int],
                              nearest_only: bool = False) -> list[tuple[int, int, int, float]]:
        """(row id, level, first passage id, cosine distance) of every passage and abstract
        with a vector in the files holding `chunk_ids`: a file's semantic evidence read
        exactly, whatever the KNN's depth. With `nearest_only` a caller that reads only
        each file's nearest passage and nearest abstract allows the others to be left out
        (here they are all read; ov.store.vectors leaves them out)."""
        if not chunk_ids:
            return []
        return self.rows(
            # the plan is forced: the files first, their rows by (file_id, level), one vec0
            # point read each. Left to itself the planner walked idx_chunks_embedded (every
            # embedded row) once per file: 1 s a hybrid query on SciFact, now 25 ms.
            "WITH f AS (SELECT DISTINCT file_id FROM chunks WHERE id IN (SELECT value FROM json_each(?))), "
            "r AS MATERIALIZED (SELECT c.id, c.level, c.file_id FROM f CROSS JOIN chunks c "
            "ON c.file_id = f.file_id WHERE c.level IN (0, 2) AND +c.embedded = 1) "
            "SELECT r.id, r.level, (SELECT p.id FROM chunks p WHERE p.file_id = r.file_id AND p.level = 2 "
            "ORDER BY p.seq, p.id LIMIT 1), vec_distance_cosine(v.embedding, ?) FROM r "
            "CROSS JOIN chunks_vec v ON v.chunk_id = r.id", (json.dumps(list(chunk_ids)), qvec))

    # -- the vectors, read whole (ov.store.vectors holds them in memory for a long-lived index) --
    def embedded_count(self) -> int:
        return self.q1("SELECT count(*) FROM chunks WHERE embedded = 1")

    def embedded_ids(self) -> list[int]:
        """The ids of the rows with a vector (one pass over the `embedded` index)."""
        return [r[0] for r in self.rows("SELECT id FROM chunks WHERE embedded = 1")]

    def file_marks(self) -> dict[int, tuple]:
        """file id -> what changes whenever the vector rows of the file may have changed:
        the content hash and when it was indexed (its chunks are re-written then), its
        times and type (copied into `chunks_vec`'s metadata)."""
        return {r[0]: tuple(r[1:]) for r in self.rows(
            "SELECT id, hash, indexed_at, updated_at, created_at, ftype FROM files")}

    def vector_rows(self, ids: Sequence[int]) -> list[tuple[int, int, int, str, float, float, bytes]]:
        """(chunk id, file id, level, ftype, updated_at, created_at, embedding) of rows with a
        vector, the metadata as `chunks_vec` holds it; one point read each."""
        out: list = []
        for i in range(0, len(ids), 500):
            out += self.rows(
                "SELECT c.id, c.file_id, v.level, v.ftype, v.updated_at, v.created_at, v.embedding "
                "FROM chunks c CROSS JOIN chunks_vec v ON v.chunk_id = c.id "
                "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids[i:i + 500])),))
        return out

    def vector_meta(self) -> list[tuple[int, int, int, str, float, float]]:
        """(chunk id, file id, level, ftype, updated_at, created_at) of every row with a
        vector, from `chunks` and `files` (what `_insert_vec` and `touch_file` copy into
        `chunks_vec`): one pass, where reading `chunks_vec`'s own columns costs ~16 us a row."""
        return self.rows("SELECT c.id, c.file_id, c.level, coalesce(f.ftype, ''), f.updated_at, "
                         "f.created_at FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.embedded = 1")

    def vector_slots(self) -> list[tuple[int, int, int]]:
        """(chunk id, block, offset): where sqlite-vec keeps each vector (`vector_blocks`)."""
        return self.rows("SELECT rowid, chunk_id, chunk_offset FROM chunks_vec_rowids")

    def vector_blocks(self):
        """(block, bytes) of sqlite-vec's storage: each block holds its vectors end to end,
        float32. Reading them is ~10x faster than `SELECT embedding FROM chunks_vec` (a
        whole-table scan of vec0 reads its rows one by one); ov.store.vectors checks what it
        read against point reads, as the layout is sqlite-vec's own."""
        try:
            yield from self.conn.execute("SELECT rowid, vectors FROM chunks_vec_vector_chunks00")
        except _errors() as e:
            raise map_error(e, self.path) from e

    def files_first_passages(self, chunk_ids: Sequence[int]) -> dict[int, int | None]:
        """file id -> its lead passage's id (`lead_passages`; None if it has none) for the
        files holding `chunk_ids` (`file_vector_distances` without the distances)."""
        if not chunk_ids:
            return {}
        fids = [r[0] for r in self.rows("SELECT DISTINCT file_id FROM chunks WHERE id IN "
                                        "(SELECT value FROM json_each(?))", (json.dumps(list(chunk_ids)),))]
        lead = self.lead_passages(fids)
        return {fid: lead.get(fid) for fid in fids}

    def waiting_vectors(self, ids: Sequence[int]) -> set[int]:
        """Of the chunks `ids`, those waiting for a vector (a background worker or the next
        `ov index` adds it)."""
        if not ids:
            return set()
        return {r[0] for r in self.rows("SELECT id FROM chunks WHERE id IN (SELECT value FROM json_each(?)) "
                                        "AND embedded = 0", (json.dumps(list(ids)),))}

    def waiting_abstracts(self, ids: Sequence[int]) -> dict[int, int]:
        """Of the chunks `ids`, each whose file's abstract (its level-0 row) waits for a
        vector -> that abstract's id."""
        if not ids:
            return {}
        return dict(self.rows(
            "SELECT c.id, a.id FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value "
            "JOIN chunks a ON a.file_id = c.file_id AND a.level = 0 AND a.embedded = 0",
            (json.dumps(list(ids)),)))

    def first_passages(self, ids: Sequence[int]) -> dict[int, int]:
        """Tier row id -> the id of its file's lead passage (`lead_passages`: the one the
        abstract speaks for); files without a passage are left out."""
        if not ids:
            return {}
        owner = dict(self.rows("SELECT id, file_id FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
                               (json.dumps(list(ids)),)))
        lead = self.lead_passages(list(set(owner.values())))
        return {tid: lead[fid] for tid, fid in owner.items() if fid in lead}

    def front_leads(self, ids: Sequence[int]) -> dict[int, int]:
        """Of the passages `ids`, each that is a markdown file's front matter block (the
        first passage, before its lead passage) -> that lead passage (`lead_passages`)."""
        if not ids:
            return {}
        rows = self.rows("SELECT id, file_id FROM chunks WHERE id IN (SELECT value FROM json_each(?)) "
                         f"AND level = 2 AND {front_block_sql()}",
                         (json.dumps(list(ids)),))
        lead = self.lead_passages(list({f for _, f in rows})) if rows else {}
        return {cid: lead[f] for cid, f in rows if lead.get(f, cid) != cid}

    def passages(self, file_id: int) -> list[tuple[int, str]]:
        """(id, text) of a file's passages (its level-2 chunks, a note's front matter block
        aside: never a hit, `front_leads`), in the file's order."""
        return self.rows(f"SELECT id, text FROM chunks WHERE file_id = ? AND level = 2 AND NOT ({front_block_sql()}) "
                         "ORDER BY seq, id", (file_id,))

    def passage_lines(self, file_id: int) -> list[tuple[int, int]]:
        """(start_line, end_line) of each of a file's passages (its level-2 chunks, a note's
        front matter block too), in the file's order: `ov read PATH:LINE` prints the one
        holding the line."""
        return self.rows("SELECT start_line, end_line FROM chunks WHERE file_id = ? AND level = 2 "
                         "ORDER BY seq, id", (file_id,))

    def lead_passages(self, file_ids: Sequence[int]) -> dict[int, int]:
        """file id -> the passage its abstract speaks for: its first level-2 chunk, or, in a
        markdown file with front matter, the first one after it (the abstract is the title
        or first paragraph after the front matter, and a hit shown at its `---` lines says
        nothing). Files without a passage are left out."""
        from ov.kinds import is_notebook, kind_of  # noqa: PLC0415

        out: dict[int, int] = {}
        if not file_ids:
            return out
        rows = self.rows(
            "WITH f AS (SELECT value AS id FROM json_each(?)), "
            "l AS (SELECT f.id AS fid, (SELECT p.id FROM chunks p WHERE p.file_id = f.id AND p.level = 2 "
            "ORDER BY p.seq, p.id LIMIT 1) AS cid FROM f) "
            "SELECT l.fid, l.cid, c.start, substr(c.text, 1, 8), files.path FROM l "
            "JOIN chunks c ON c.id = l.cid JOIN files ON files.id = l.fid",
            (json.dumps(list(file_ids)),))
        for fid, cid, start, head, path in rows:
            if not isinstance(head, str) or not isinstance(path, str):  # (a planted BLOB)
                raise damaged(self.path, "a row of it is not ov's")
            out[fid] = cid
            # only a file whose text opens with a `---` line may have front matter
            if start == 0 and head.split("\n", 1)[0].rstrip() == "---" and kind_of(path) == "markdown":
                out[fid] = self._past_front_matter(fid) or cid
            elif is_notebook(path):  # its first cell's source, not the JSON before it
                out[fid] = self.q1("SELECT id FROM chunks WHERE file_id = ? AND level = 2 "
                                   "AND ltrim(text) LIKE '\"source\"%' ORDER BY seq, id LIMIT 1", (fid,)) or cid
        return out

    def _past_front_matter(self, file_id: int) -> int | None:
        """The first passage after a markdown file's front matter (`tiers.front_matter_block`,
        over the text the passages rebuild: they are exact slices in file order, and what
        lies between them is blank), or one that holds text after it (an index chunked
        before the cut); None when the file has no front matter."""
        from ov.tiers import front_matter_block  # noqa: PLC0415

        rows = self.rows("SELECT id, start, text FROM chunks WHERE file_id = ? AND level = 2 "
                         "ORDER BY seq, id", (file_id,))
        parts, at = [], 0
        for _, start, text in rows:
            parts += ["\n" * (start - at), text]
            at = start + len(text)
        fm = front_matter_block("".join(parts))
        if fm is None:
            return None
        end = fm[1] - 1  # the closing line's end
        for cid, start, text in rows:
            if start >= end or text[end - start:].strip():
                return cid
        return None

    def passages_holding(self, ids: Sequence[int]) -> dict[int, int]:
        """Sentence row id -> the id of the passage (level-2 chunk) of its file that holds
        its start: the last one starting at or before it."""
        out: dict[int, int] = {}
        if not ids:
            return out
        for sid, cid in self.rows(
                "SELECT s.id, (SELECT c.id FROM chunks c WHERE c.file_id = s.file_id AND c.level = 2 "
                "AND c.start <= s.start ORDER BY c.start DESC, c.id LIMIT 1) FROM chunks s "
                "WHERE s.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)):
            if cid is not None:
                out[sid] = cid
        return out

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for i in range(0, len(ids), 500):
            part = list(ids[i:i + 500])
            for r in self.rows(
                    "SELECT c.id, c.file_id, f.path, c.level, c.start, c.end, c.start_line, c.end_line, "
                    f"c.text, f.size, f.mtime_ns, {_TIER.format(0)}, {_TIER.format(1)}, f.tags, f.ctime_ns, f.inode "
                    f"FROM chunks c JOIN files f ON f.id = c.file_id "
                    f"WHERE c.id IN ({','.join('?' * len(part))})", part):
                out[r[0]] = ChunkRow(*r[:13], tags=self._tags_of(r[13]), ctime_ns=r[14], inode=r[15])
                if not _ROW_TYPES(r):
                    raise damaged(self.path, f"its row of {r[2]!r} is not ov's")
        return out

    def _tags_of(self, raw) -> dict:
        try:
            tags = json.loads(raw or "{}")
        except (TypeError, ValueError):
            tags = None
        if not isinstance(tags, dict):
            raise damaged(self.path, "a file's tags are not ov's")
        return tags

    def file_row(self, path: str) -> dict[str, Any] | None:
        cur = self.conn.execute(f"SELECT {_FILE_COLUMNS} FROM files f WHERE path = ?", (path,))
        row = cur.fetchone()
        if row is None:
            return None
        got = dict(zip([d[0] for d in cur.description], row))
        if not all(isinstance(got.get(k, 0), int) for k in ("size", "mtime_ns", "ctime_ns", "inode")):
            raise damaged(self.path, f"its row of {path!r} is not ov's")
        return got

    def files_under(self, prefix: str, *, tiers: bool = False) -> list[dict[str, Any]]:
        """File rows at or under a relative path ("" = all), sorted by path; with `tiers`
        their abstract and overview too (a read of their tier rows each)."""
        cols = _FILE_COLUMNS if tiers else _FILE_BASE
        cur = self.conn.execute(f"SELECT {cols} FROM files f WHERE {_UNDER} ORDER BY path", _under(prefix))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def any_path_passes(self, path_rules: str) -> bool:
        """Whether an indexed file's path passes globs (`Filters.path_rules`)."""
        return self.q1(f"SELECT 1 FROM files WHERE {PATH_FUNCTION}(?, path) LIMIT 1", (path_rules,)) is not None

    def any_file(self, filters: Filters) -> bool:
        """Whether any indexed file passes `filters`' file conditions (one row read)."""
        fw, fp = filters.file_where("f")
        return self.q1(f"SELECT 1 FROM files f WHERE {fw} LIMIT 1", fp) is not None

    def has_files_under(self, prefix: str) -> bool:
        """Whether any file is indexed at or under a relative path ("" = anywhere)."""
        return self.conn.execute(f"SELECT 1 FROM files WHERE {_UNDER} LIMIT 1", _under(prefix)).fetchone() is not None

    def tags_of(self, file_id: int) -> dict[str, str]:
        """A file's tags as stored (`ov tag`'s and its front matter's)."""
        return json.loads(self.q1("SELECT tags FROM files WHERE id = ?", (file_id,)) or "{}")

    def set_tags(self, file_id: int, tags: dict[str, str]) -> None:
        self.conn.execute("UPDATE files SET tags = ? WHERE id = ?",
                          (json.dumps(tags, ensure_ascii=False, sort_keys=True), file_id))

    def trigram_files(self, literals: Sequence[str], within_s: float | None = None,
                      fold: bool = False) -> set[str] | None:
        """Paths of the files whose text may contain every literal; None when no literal
        says anything, or when the query runs past `within_s` seconds of wall time (then
        every file must be read).

        A file's `files_tri` row holds its distinct runs of word characters or of
        punctuation (`trigram_doc`), and each literal splits into such runs
        (`trigram_runs`), each inside one of the file's: a file qualifies when its row
        holds every trigram of every run of three or more characters (case folded, as the
        table folds them). An index written before schema 8 holds whitespace-separated
        runs, each of which holds such runs whole: the same question is right there too. At most
        MAX_GRAMS trigrams are asked, spread over each run: fewer only let more files in.

        `fold` (grep's `-i`): the literals match in any case. The table folds case, but
        not as grep does everywhere: `-i` pairs `i` with `İ` and `I` with `ı`, which the
        table keeps apart, so a trigram holding `i` is asked in each of those spellings
        (OR); a non-ASCII letter's pairs differ between Unicode's tables and SQLite's, so
        each run is cut at those and only the ASCII pieces are asked. `k` and `s`, which
        `-i` pairs with the Kelvin sign and the long s, are safe: the table folds those two
        to `k` and `s` (tests/test_index_trigrams.py).
        """
        runs = sorted({r for lit in literals for r in trigram_runs(lit)})
        if fold:
            runs = sorted({p for r in runs for p in _FOLD_CUT.split(r) if len(p) >= 3})
        if not runs or not self.trigrams_complete():  # rows still being written: read every file
            return None
        grams: dict[str, None] = {}
        for run in runs:
            step = max(1, (len(run) - 2 + MAX_GRAMS - 1) // MAX_GRAMS)
            for k in [*range(0, len(run) - 2, step), len(run) - 3]:
                grams[run[k:k + 3]] = None
        match = " AND ".join(_spelled(g) if fold else fts_phrase(g) for g in sorted(grams))
        if within_s is None:
            return self._trigram_paths(match)
        deadline = time.perf_counter() + within_s
        self.conn.set_progress_handler(lambda: time.perf_counter() > deadline, 20000)
        try:
            return self._trigram_paths(match)
        except OvError:
            return None  # interrupted (mapped to an error): read every file
        except Exception as e:  # the driver's OperationalError("interrupted")
            if "interrupt" in str(e).lower():
                return None
            raise
        finally:
            self.conn.set_progress_handler(None, 0)

    def _trigram_paths(self, match: str) -> set[str]:
        return {r[0] for r in self.rows(
            "SELECT f.path FROM files_tri t JOIN files f ON f.id = t.rowid WHERE files_tri MATCH ?",
            (match,))}

    # -- big files: skipped for their size, kept with grep's trigram bitmap (ov.grams) --
    def big_file_states(self, under: str = "") -> dict[str, tuple[int, int, int, int]]:
        """path -> (size, mtime_ns, ctime_ns, inode) of the big-file rows at or under a
        relative path ("" = all)."""
        return {r[0]: tuple(r[1:]) for r in self.rows(
            f"SELECT path, size, mtime_ns, ctime_ns, inode FROM big_files WHERE {_UNDER}", _under(under))}

    def put_big_file(self, path: str, state: tuple[int, int, int, int], grams: bytes) -> None:
        self.conn.execute("INSERT OR REPLACE INTO big_files(path, size, mtime_ns, ctime_ns, inode, grams) "
                          "VALUES (?, ?, ?, ?, ?, ?)", (path, *state, grams))

    def delete_big_files(self, paths: Sequence[str]) -> None:
        self.conn.executemany("DELETE FROM big_files WHERE path = ?", [(p,) for p in paths])

    def big_file_grams(self) -> list[tuple[str, tuple[int, int, int, int], bytes]]:
        """(path, (size, mtime_ns, ctime_ns, inode), bitmap) of every big-file row; none
        in an index without the table (made by an older ov, or only read since)."""
        if not self.has_table("big_files"):
            return []
        return [(r[0], (r[1], r[2], r[3], r[4]), r[5]) for r in self.rows(
            "SELECT path, size, mtime_ns, ctime_ns, inode, grams FROM big_files")]

    def integrity_ok(self) -> bool:
        return self.q1("PRAGMA integrity_check") == "ok"

    # -- tags, session ledger, tiers (issue 5) --
    def paths_with_tags(self, tags: Sequence[tuple[str, str]] | dict[str, str]) -> set[str]:
        """Paths of the indexed files carrying every tag (AND); all files for no tags."""
        pairs = tuple(tags.items()) if isinstance(tags, dict) else tuple(tags)
        where, params = Filters(tags=pairs).file_where("f")
        return {r[0] for r in self.rows(f"SELECT f.path FROM files f WHERE {where}", params)}

    def tag_files(self, paths: Sequence[str], pairs: Sequence[tuple[str, str]],
                  mode: str) -> list[tuple[str, dict[str, str]]]:
        """Change the tags of indexed files in one transaction; (path, new tags) each.

        set: the tags become exactly `pairs`; append: add or overwrite those keys;
        remove: drop each key given as `k=` (any value) or `k=v` (only with that value).
        """
        out = []
        with self.tx():
            for path in paths:
                row = self.conn.execute("SELECT id, tags FROM files WHERE path = ?", (path,)).fetchone()
                if row is None:
                    continue
                cur = json.loads(row[1] or "{}")
                if mode == "set":
                    new = dict(pairs)
                elif mode == "append":
                    new = {**cur, **dict(pairs)}
                else:
                    new = dict(cur)
                    for k, v in pairs:
                        if k in new and (v == "" or new[k] == v):
                            del new[k]
                if new != cur:
                    self.set_tags(row[0], new)
                out.append((path, dict(sorted(new.items()))))
        return out

    def session_served(self, session: str, last_k: int) -> tuple[int, set[str]]:
        """(this call's turn number, uris served to `session` within its last `last_k` turns)."""
        last = self.q1("SELECT max(turn) FROM sessions WHERE session = ?", (session,)) or 0
        if last_k <= 0:
            return last + 1, set()
        served = {r[0] for r in self.rows(
            "SELECT DISTINCT uri FROM sessions WHERE session = ? AND turn > ? AND uri != ''",
            (session, last - last_k))}
        return last + 1, served

    def record_session(self, session: str, turn: int, uris: Sequence[str]) -> None:
        """Write one turn to the ledger; a row with an empty uri marks a turn that served nothing
        new, so every call counts as a turn."""
        now = time.time()
        with self.tx():
            rows = [(session, turn, u, now) for u in dict.fromkeys(uris)] or [(session, turn, "", now)]
            self.conn.executemany(
                "INSERT INTO sessions(session, turn, uri, served_at) VALUES (?, ?, ?, ?)", rows)

    def tier_levels(self) -> list[int]:
        """Levels with at least one chunk row (2 = full text chunks)."""
        return [lv for lv in (0, 1, 2)
                if self.q1("SELECT 1 FROM chunks WHERE level = ? LIMIT 1", (lv,)) is not None]



# a row's path is `prefix` or lies under it ("" = every row): the parameters of `_under`
_UNDER = "(? = '' OR path = ? OR substr(path, 1, ?) = ?)"
# A file's abstract (level 0) or overview (level 1): its tier row's text, '' without one
# (schema 7 keeps no second copy in `files`, whose columns of those names stay NULL).
_TIER = "coalesce((SELECT t.text FROM chunks t WHERE t.file_id = f.id AND t.level = {} ORDER BY t.seq LIMIT 1), '')"
_FILE_BASE = ("f.id, f.path, f.size, f.mtime_ns, f.hash, f.created_at, f.updated_at, f.indexed_at, "
              "f.tags, f.ftype, f.category, f.title, f.ctime_ns, f.inode")
_FILE_COLUMNS = f"{_FILE_BASE}, {_TIER.format(0)} AS abstract, {_TIER.format(1)} AS overview"


def _under(prefix: str) -> tuple[str, str, int, str]:
    return (prefix, prefix, len(prefix) + 1, prefix + "/")


MAX_GRAMS = 32  # trigrams of a literal run that grep's prefilter asks for (Store.trigram_files)
# where `Store.trigram_files` cuts a run under `-i`: what is not ASCII
_FOLD_CUT = re.compile(r"[^\x00-\x7f]+")
_I_SPELLINGS = ("i", "\u0130", "\u0131")  # i (the table folds I to it), İ, ı


def _spelled(gram: str) -> str:
    """A trigram of an `-i` literal as an FTS5 query: each spelling of its `i`s, OR-ed."""
    forms = [""]
    for ch in gram:
        forms = [f + c for f in forms for c in (_I_SPELLINGS if ch in "iI" else (ch,))]
    return fts_phrase(forms[0]) if len(forms) == 1 else "(" + " OR ".join(fts_phrase(f) for f in forms) + ")"


TOP_OVERFETCH = 4  # FTS5 rows ranked per wanted chunk before the level check


def _ROW_TYPES(r) -> bool:
    """Whether a `chunk_rows` row holds what ov writes (SQLite keeps any value in any
    column: a committed index's `files.size = 'x'` or `chunks.text = NULL` had ended a
    search in `internal`)."""
    return (isinstance(r[2], str) and all(isinstance(v, int) for v in (r[3], r[4], r[5], r[6], r[7], r[9], r[10]))
            and isinstance(r[8], str) and all(v is None or isinstance(v, int) for v in (r[14], r[15])))


def _with_ties(fetch: Callable[[int], list[tuple[int, float]]], limit: int) -> list[tuple[int, float]]:
    """The best `limit` rows of `fetch(n)` (the best n, sorted, ties by rowid) and every row
    tying the last of them. The engine orders ties by path and asks deeper for later
    pages: a tie cut by rowid at one depth and not at the next would repeat or skip hits
    (100 files of the same text, 12 of them re-indexed: 12 repeats in 100)."""
    n = limit + 1
    while True:
        rows = fetch(n)
        if len(rows) <= limit:
            return rows
        last = rows[limit - 1][1]
        if rows[-1][1] != last or len(rows) < n:
            break
        n *= 2
    end = limit
    while end < len(rows) and rows[end][1] == last:
        end += 1
    return rows[:end]


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
