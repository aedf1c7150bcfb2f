"""A `Store` that remembers the facts every ranked query re-reads (semantic coverage,
which counts the chunks table: 7-20 ms a query on the stdlib's 104k rows; the generation;
meta values) until the index changes. A long-lived `ov.Index` (`ov mcp`) then pays for
them once per change, not once per query.

"Changed" is SQLite's own word for it: `PRAGMA data_version` moves whenever another
connection commits (the watcher, `ov index`, a background worker). This connection's own
writes do not move it, so a transaction of its own (`tx()`, `set_meta`, any open write)
forgets everything.

With `keep_keywords` it ranks keyword queries from postings it holds (`ov.store.postings`:
FTS5's bm25, the same numbers), read as queries ask for each word and dropped with the
remembered facts.

With `keep_vectors` it also holds the index's vectors in memory (`ov.store.vectors`) and
answers vector queries from them, refreshed whenever the remembered facts are forgotten.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ov.errors import OvError
from ov.store.queries import Store
from ov.store.text import or_phrases


def _identity(path: Path, content: bool = False) -> tuple[int, ...] | None:
    """The index file's identity: its device and inode, and with `content` its size and
    mtime too (an immutable read sees no WAL: the file changes when its owner checkpoints)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) if content else (st.st_dev, st.st_ino)


class WarmStore(Store):
    def __init__(self, conn, path: Path) -> None:
        super().__init__(conn, path)
        self._facts: dict[Any, Any] = {}
        self._facts_at: int | None = None
        self._vectors = None
        self._postings = None
        self._word_terms_seen: dict[str, tuple[str, ...]] = {}
        self._immutable = False  # opened read-only in a folder this user cannot write (`open`)
        self._identity = _identity(self.path)

    @classmethod
    def open(cls, db_path: Path, *, readonly: bool = False, upgrading=None) -> WarmStore:
        store = super().open(db_path, readonly=readonly, upgrading=upgrading)
        # a folder this user cannot write: ov.store.db read it as immutable (no locks, no
        # WAL), so its owner's changes show only by the file's own size and mtime
        store._immutable = readonly and not os.access(store.path.parent, os.W_OK)
        store._identity = _identity(store.path, store._immutable)
        return store

    def follow_replacement(self) -> None:
        """`ov index --full` renames a new file over the index, and the owner of an index
        read as immutable changes it under this connection: a long-lived connection would
        go on reading the old one for ever (or pages of both). Seen at a query's start (one
        stat), the file is opened again and everything held is dropped (its row ids are not
        the new file's). An immutable index its owner is writing right now cannot be opened
        again: that is `index_busy`, retryable."""
        now = _identity(self.path, self._immutable)
        if now is None or now == self._identity:
            return
        try:
            fresh = Store.open(self.path, readonly=self.readonly)
        except OvError as e:
            if not self._immutable:
                raise
            raise OvError("index_busy", f"the index {self.path} is being changed by its owner ({e.message}); "
                          "try again", retryable=True) from None
        self.conn, fresh.conn = fresh.conn, self.conn
        fresh.close()
        self._identity = now
        self.forget()
        self._word_terms_seen.clear()
        if self._postings is not None:
            self._postings = None
            self.keep_keywords()
        if self._vectors is not None:
            self._vectors = None
            self.keep_vectors()

    def _fact(self, key, compute: Callable[[], Any]) -> Any:
        at = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if at != self._facts_at or self.conn.in_transaction:
            self._facts.clear()
            self._facts_at = None if self.conn.in_transaction else at
        if key not in self._facts:
            value = compute()
            if self._facts_at is None:
                return value
            self._facts[key] = value
        return self._facts[key]

    def forget(self) -> None:
        self._facts.clear()
        self._facts_at = None

    # -- the keyword postings in memory (ov.store.postings), once `keep_keywords` asked --

    def keep_keywords(self) -> None:
        if self._postings is None:
            from ov.store.postings import Postings  # noqa: PLC0415 - numpy: a warm index only

            self._postings = Postings()
        self._held_postings()

    def _held_postings(self):
        """The postings of this state of the index; None when the SQL path must answer
        (none kept, or inside a transaction of this connection)."""
        if self._postings is None or self.conn.in_transaction:
            return None
        self._fact("postings", lambda: self._postings.refresh(self))
        return self._postings if self._postings.usable else None

    def _word_terms(self, words):
        """The tokenizer's terms of each word, remembered (the tokenizer never changes)."""
        new = [w for w in dict.fromkeys(words) if w not in self._word_terms_seen]
        if new:
            if len(self._word_terms_seen) > 100_000:
                self._word_terms_seen.clear()
            self._word_terms_seen.update(super()._word_terms(new))
        return {w: self._word_terms_seen[w] for w in words}

    def _term_df(self, term):
        return self._fact(("df", term), lambda: super(WarmStore, self)._term_df(term))

    def fts_averages_block(self):
        return self._fact("fts_averages", super().fts_averages_block)

    def file_count(self):
        return self._fact("file_count", super().file_count)

    def rows_holding(self, term):
        return self._fact(("held", term), lambda: super(WarmStore, self).rows_holding(term))

    def _top_at_levels(self, match, filters, limit, table):
        held = self._held_postings() if table == "chunks_fts" else None
        words = or_phrases(match) if held is not None else None
        if words:
            terms = self._word_terms(words)
            if all(len(t) == 1 for t in terms.values()):
                return held.top(self, [terms[w][0] for w in words], limit, filters.levels,
                                filters.vectorless)
        return super()._top_at_levels(match, filters, limit, table)

    def _term_counts(self, term, ids):
        held = self._held_postings()
        if held is None or not held.wanted(term):
            return super()._term_counts(term, ids)
        return held.counts(self, term, ids)

    # -- the vectors in memory (ov.store.vectors), once `keep_vectors` asked for them --

    def keep_vectors(self) -> None:
        if self._vectors is None:
            from ov.store.vectors import Vectors  # noqa: PLC0415 - numpy: a warm index only

            self._vectors = Vectors()
        self._held()

    def _held(self):
        """The vectors, brought up to date when the remembered facts were forgotten;
        None when the SQL path must answer (none kept, or inside a transaction of this
        connection, whose uncommitted rows the matrix does not hold)."""
        if self._vectors is None or self.conn.in_transaction:
            return None
        self._fact("vectors", lambda: self._vectors.refresh(self))
        return self._vectors

    def new_query(self) -> None:
        """A query starts: the matrix product of the last one is not reused (within a
        query the same vector is asked for up to three times; across queries a
        repeated one would skip the product, and a benchmark would time nothing)."""
        self.follow_replacement()
        if self._vectors is not None:
            self._vectors.forget_query()

    def vector_search(self, qvec: bytes, filters, k: int):
        held = self._held()
        if held is None or not held.usable_for(qvec):
            return super().vector_search(qvec, filters, k)
        allowed = self.allowed_chunk_ids(filters, with_vector=True) if filters.restricts_files else None
        if allowed is not None and not allowed:
            return []
        return held.search(qvec, held.mask(filters, allowed), k)

    def file_vector_distances(self, qvec: bytes, chunk_ids, nearest_only: bool = False):
        held = self._held()
        if held is None or not held.usable_for(qvec) or not chunk_ids:
            return super().file_vector_distances(qvec, chunk_ids)
        return held.file_distances(qvec, self.files_first_passages(chunk_ids), nearest_only)

    def chunk_paths(self, ids):
        """Remembered per state of the index (a hybrid query asks for the same rows' paths
        up to three times, and the next query for many of them again)."""
        known = self._fact("paths", dict)
        missing = [i for i in ids if i not in known]
        if missing:
            if len(known) > 500_000:
                known.clear()
            known.update(super().chunk_paths(missing))
        return {i: known[i] for i in ids if i in known}

    def coverage(self) -> tuple[int, int]:
        return self._fact("coverage", super().coverage)

    def get_meta(self, key: str) -> str | None:
        return self._fact(("meta", key), lambda: Store.get_meta(self, key))

    def set_meta(self, key: str, value: str) -> None:
        self.forget()
        super().set_meta(key, value)

    def tx(self):
        return _Forgetting(super().tx(), self)


class _Forgetting:
    """A store's transaction that makes its store forget its remembered facts at both ends."""

    def __init__(self, tx, store) -> None:
        self.tx, self.store = tx, store

    def __enter__(self):
        self.store.forget()
        return self.tx.__enter__()

    def __exit__(self, *exc):
        try:
            return self.tx.__exit__(*exc)
        finally:
            self.store.forget()
