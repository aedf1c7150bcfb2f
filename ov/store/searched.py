"""The vectors searches computed for themselves while the index's own are still coming
(`ov.engine._VectorsNow`), kept beside the index for the searches after them.

While the background worker adds vectors (hours on a big tree), a hybrid search computes
the vectors of its best keyword files' passages: about 80 rows, 2-9 s on a loaded 2-core
machine. They were thrown away, so the same query again, its `-o json`, or its next page
(`--cursor`) paid the model's time again (two reviews: 6.2 s a query on the JDK's
sources, each time). They are kept here, in `searched.db` beside `index.db`:

- keyed by the model and the row's text (BLAKE2b), so a row whose file changed, or an
  index of another model, finds nothing of the old;
- at most CAP rows (~31 MB), the least recently written going first;
- never the index: the worker stores its own vectors and reads nothing here, and the file
  is dropped when the index has all its vectors (`SearchedVectors.drop_beside`).

A missing, locked or damaged file is a miss, never an error: a search computes the rows
as it did without it.
"""

from __future__ import annotations

import os
import sqlite3
from hashlib import blake2b
from pathlib import Path

CAP = 20_000  # rows kept: 384 float32 each, ~31 MB
NAME = "searched.db"
_BUSY_S = 0.2  # another search writing: wait so long, then go without


class SearchedVectors:
    """Vectors by (model, text) in the file beside the index at `index_path`."""

    def __init__(self, index_path: Path, model: str) -> None:
        self.path = Path(index_path).with_name(NAME)
        self.model = model

    def _key(self, text: str) -> bytes:
        return blake2b(f"{self.model}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if not self.path.exists():
            if not create:
                return None
            # (readable by this user alone, as the index is: a search's text is its own)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(self.path, timeout=_BUSY_S, isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS v (k BLOB PRIMARY KEY, vec BLOB NOT NULL)")
        return conn

    def get(self, texts: dict[int, str], size: int) -> dict[int, bytes]:
        """Of `texts` (row id -> text), the vectors held: row id -> `size` bytes."""
        try:
            conn = self._connect(create=False)
            if conn is None:
                return {}
            try:
                keys = {self._key(t): rid for rid, t in texts.items()}
                out: dict[int, bytes] = {}
                ks = list(keys)
                for i in range(0, len(ks), 500):
                    part = ks[i:i + 500]
                    for k, vec in conn.execute(f"SELECT k, vec FROM v WHERE k IN ({','.join('?' * len(part))})", part):
                        if isinstance(vec, bytes) and len(vec) == size:
                            out[keys[k]] = vec
                return out
            finally:
                conn.close()
        except (sqlite3.Error, OSError):
            return {}

    def put(self, items: list[tuple[str, bytes]]) -> None:
        """Keep each (text, vector); the oldest rows past CAP go."""
        if not items:
            return
        try:
            conn = self._connect(create=True)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO v (k, vec) VALUES (?, ?)",
                                 [(self._key(t), vec) for t, vec in items])
                conn.execute("DELETE FROM v WHERE rowid <= (SELECT max(rowid) FROM v) - ?", (CAP,))
                conn.execute("COMMIT")
            finally:
                conn.close()
        except (sqlite3.Error, OSError):
            pass

    @staticmethod
    def drop_beside(index_path: Path) -> None:
        """Remove the file beside the index at `index_path`, if there is one (the index has
        all its vectors: nothing here is needed)."""
        path = Path(index_path).with_name(NAME)
        if not path.exists():
            return
        for p in (path, Path(f"{path}-journal")):
            try:
                os.unlink(p)
            except OSError:
                pass
