"""The vectors searches computed for themselves while the index's own are still coming
(`ov.engine._VectorsNow`), kept beside the index for the searches after them.

While the background worker adds vectors (hours on a big tree), a hybrid search computes
the vectors of its best keyword files' passages: about 80 rows, 2-9 s on a loaded 2-core
machine. They were thrown away, so the same query again, its `-o json`, or its next page
(`--cursor`) paid the model's time again (two reviews: 6.2 s a query on the JDK's
sources, each time). They are kept here, in the index's sidecar `<index>.searched`
(`.ov/index.db.searched`; ov.store.db SIDECARS names it):

- keyed by the model and the row's text (BLAKE2b), so a row whose file changed, or an
  index of another model, finds nothing of the old;
- at most CAP rows (~31 MB), the least recently written going first;
- never the index: the worker stores its own vectors and reads nothing here, and the file
  is removed when the index has all its vectors (`drop_beside`).

As the index itself is, it is a file a cloned tree may carry: nothing is written through a
link or into anything but a regular file, a schema ov did not make (a view, a trigger) is
never run, and a file that is not ov's cache (damaged, or another schema) is removed and
made again. A missing, locked or damaged file is a miss, never an error: a search then
computes the rows as it did without it. A read-only index (`readonly`) writes none.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from hashlib import blake2b
from pathlib import Path

CAP = 20_000  # rows kept: 384 float32 each, ~31 MB
SUFFIX = ".searched"  # beside the index: `index.db.searched`
_BUSY_S = 0.2  # another search writing: wait so long, then go without
_CREATE = (os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_CLOEXEC", 0))
# what ov makes in the file, and nothing else: a planted view named `v` hung every search
_SCHEMA = {("table", "v"), ("index", "sqlite_autoindex_v_1")}


def cache_path(index_path: Path) -> Path:
    index_path = Path(index_path)
    return index_path.with_name(index_path.name + SUFFIX)


class SearchedVectors:
    """Vectors by (model, text) in the sidecar of the index at `index_path`."""

    def __init__(self, index_path: Path, model: str, readonly: bool = False) -> None:
        self.path = cache_path(index_path)
        self.model = model
        self.readonly = readonly

    def _key(self, text: str) -> bytes:
        return blake2b(f"{self.model}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        """A connection to the cache, or None: no file (and not `create`), or one that is
        a link or no regular file (nothing is written through it)."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            if not create:
                return None
            os.close(os.open(self.path, _CREATE, 0o600))  # (readable by this user alone, as the index)
        else:
            if not stat.S_ISREG(st.st_mode):
                return None
        conn = sqlite3.connect(self.path, timeout=_BUSY_S, isolation_level=None)
        try:
            conn.execute("PRAGMA trusted_schema=OFF")
            have = {(str(t).lower(), n) for t, n in conn.execute("SELECT type, name FROM sqlite_master")}
            if not have and create:
                conn.execute("CREATE TABLE v (k BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            elif have != _SCHEMA:
                raise sqlite3.DatabaseError("not ov's cache")
        except BaseException:
            conn.close()
            raise
        return conn

    def _discard(self) -> None:
        """Remove a damaged file (or one of another schema) under the cache's name, so the
        next search makes it again; a link or a folder by that name is left alone."""
        if self.readonly:
            return
        try:
            if stat.S_ISREG(os.lstat(self.path).st_mode):
                os.unlink(self.path)
        except OSError:
            pass

    def get(self, texts: dict[int, str], size: int) -> dict[int, bytes]:
        """Of `texts` (row id -> text), the vectors held: row id -> `size` bytes (rows of
        one text all get its vector)."""
        try:
            conn = self._connect(create=False)
        except sqlite3.DatabaseError:
            self._discard()
            return {}
        except (sqlite3.Error, OSError):
            return {}
        if conn is None:
            return {}
        keys: dict[bytes, list[int]] = {}
        for rid, t in texts.items():
            keys.setdefault(self._key(t), []).append(rid)
        out: dict[int, bytes] = {}
        try:
            ks = list(keys)
            for i in range(0, len(ks), 500):
                part = ks[i:i + 500]
                for k, vec in conn.execute(f"SELECT k, vec FROM v WHERE k IN ({','.join('?' * len(part))})", part):
                    if isinstance(vec, bytes) and len(vec) == size:
                        out.update(dict.fromkeys(keys.get(k, ()), vec))
        except sqlite3.DatabaseError:
            conn.close()
            self._discard()
            return {}
        except sqlite3.Error:
            pass
        finally:
            conn.close()
        return out

    def put(self, items: list[tuple[str, bytes]]) -> None:
        """Keep each (text, vector); the oldest rows past CAP go. A read-only index keeps none."""
        if not items or self.readonly:
            return
        try:
            conn = self._connect(create=True)
        except sqlite3.DatabaseError:
            self._discard()
            return
        except (sqlite3.Error, OSError):
            return
        if conn is None:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO v (k, vec) VALUES (?, ?)",
                             [(self._key(t), vec) for t, vec in items])
            conn.execute("DELETE FROM v WHERE rowid <= (SELECT max(rowid) FROM v) - ?", (CAP,))
            conn.execute("COMMIT")
        except sqlite3.Error:
            pass
        finally:
            conn.close()

    @staticmethod
    def drop_beside(index_path: Path) -> None:
        """Remove the cache of the index at `index_path`, if it has one (the index has all
        its vectors: nothing there is needed). Only a regular file by the cache's name."""
        path = cache_path(index_path)
        for p in (path, Path(f"{path}-journal")):
            try:
                if stat.S_ISREG(os.lstat(p).st_mode):
                    os.unlink(p)
            except OSError:
                pass
