"""A `Store` that remembers the facts every ranked query re-reads (semantic coverage,
which counts the chunks table: 7-20 ms a query on the stdlib's 104k rows; the generation;
meta values) until the index changes. A long-lived `ov.Index` (`ov mcp`) then pays for
them once per change, not once per query.

"Changed" is SQLite's own word for it: `PRAGMA data_version` moves whenever another
connection commits (the watcher, `ov index`, a background worker). This connection's own
writes do not move it, so a transaction of its own (`tx()`, `set_meta`, any open write)
forgets everything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ov.store.queries import Store


class WarmStore(Store):
    def __init__(self, conn, path: Path) -> None:
        super().__init__(conn, path)
        self._facts: dict[Any, Any] = {}
        self._facts_at: int | None = None

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
