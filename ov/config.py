"""Settings: limits, chunk policy and where the index lives.

Values come from flags (passed in by the CLI), then environment variables, then the
built-in defaults below. The index of a tree lives at `ROOT/.ov/index.db`; commands find
it by walking up from their scope, as git finds `.git`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

INDEX_DIRNAME = ".ov"
DB_NAME = "index.db"

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 8192
MAX_QUERY_TOKENS = 256  # the model's window; longer semantic queries are refused, never cut
DEFAULT_NODE_LIMIT = 256
DEFAULT_LEVEL_LIMIT = 10
DEFAULT_MAX_FILESIZE = 1 << 20  # 1 MiB
DEFAULT_MAX_TOKENS = 1600  # context mode budget
REGEX_TIMEOUT_S = 5.0  # a regex that runs longer on one file ends with deadline_exceeded


@dataclass(frozen=True)
class WalkOptions:
    """How a tree is walked (shared by `index`, `grep` and `glob`)."""

    hidden: bool = False  # include dotfiles and dot-folders (never .git/ or .ov/)
    no_ignore: bool = False  # disregard .gitignore/.ignore/.ovignore/.git/info/exclude
    follow: bool = False  # follow symlinks (never outside the root, never in a loop)
    max_filesize: int | None = DEFAULT_MAX_FILESIZE  # None: no cap
    max_depth: int | None = None  # None: unlimited; 1 = only the start folder's files
    extra_ignores: tuple[str, ...] = field(default_factory=tuple)  # gitignore-style lines


def db_path_for(root: Path) -> Path:
    return root / INDEX_DIRNAME / DB_NAME


def find_index(start: Path) -> Path | None:
    """The nearest `.ov/index.db` at or above `start` (a file or a folder), or None."""
    p = start if start.is_dir() else start.parent
    p = p.resolve()
    for d in (p, *p.parents):
        candidate = db_path_for(d)
        if candidate.is_file():
            return candidate
    return None


def env_db() -> Path | None:
    v = os.environ.get("OV_DB")
    return Path(v) if v else None
