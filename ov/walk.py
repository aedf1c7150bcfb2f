"""Walking a tree: ignore rules, hidden files, symlinks, size cap, sorted order.

(Interim version: sorted walk without ignore rules. Replaced by the full walker.)
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ov.config import WalkOptions
from ov.model import FileEntry

ALWAYS_SKIPPED = frozenset({".git", ".ov"})


def walk(
    root: Path,
    opts: WalkOptions = WalkOptions(),
    *,
    start: Path | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Iterator[FileEntry]:
    """Yield the files under `start` (default `root`), paths relative to `root`.

    Order: depth-first with each folder's entries sorted by name, which is the order of
    sorting the relative paths component by component (ripgrep's `--sort path`).
    """
    root = Path(root)
    base = Path(start) if start is not None else root

    def rec(d: Path, rel: str, depth: int) -> Iterator[FileEntry]:
        try:
            names = sorted(os.listdir(d))
        except OSError as e:
            if on_warning:
                on_warning(f"{rel or '.'}: {e.strerror}")
            return
        for name in names:
            if name in ALWAYS_SKIPPED or (name.startswith(".") and not opts.hidden):
                continue
            p = d / name
            r = f"{rel}/{name}" if rel else name
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                if opts.max_depth is None or depth < opts.max_depth:
                    yield from rec(p, r, depth + 1)
            elif stat.S_ISREG(st.st_mode):
                if opts.max_filesize is not None and st.st_size > opts.max_filesize:
                    continue
                yield FileEntry(r, str(p), st.st_size, st.st_mtime_ns, st.st_mode)

    rel0 = base.relative_to(root).as_posix() if base != root else ""
    yield from rec(base, "" if rel0 == "." else rel0, 1)
