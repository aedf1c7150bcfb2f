"""The index a first search builds (ov.worker `first_use`): a kill at any point of that
build leaves an index the next search completes before it answers, parallel first
searches wait for the one that builds, and an index that cannot be made or used is
said to be so, in one sentence with its own error code."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess, run_subprocess
from ov.indexer import IndexLock, worker_state

FILES = {f"docs/n{i:02d}.md": f"# Notes {i}\n\nThe tide tables for harbour {i} list high water.\n"
         for i in range(12)}
# walked last: the rows a killed build committed never hold it
FILES["zz/target.py"] = 'def parse_header(line):\n    """Parse one mail header line."""\n    return line\n'


def _db(root: Path) -> Path:
    return root / ".ov" / "index.db"


def _read_only(monkeypatch, folder: Path) -> None:
    """`folder` made read-only; for root, whom the mode does not stop, os.mkdir and the
    index file's creation fail there as they would for anyone else."""
    folder.chmod(0o555)
    monkeypatch.setattr("ov.store.db.os", _ReadOnlyOs(folder) if os.geteuid() == 0 else os)
    if os.geteuid() == 0:
        real = Path.mkdir

        def mkdir(self, *a, **k):
            if Path(self).parent == folder:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *a, **k)

        monkeypatch.setattr(Path, "mkdir", mkdir)


class _ReadOnlyOs:
    """`os` for ov.store.db, refusing to create a file in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def open(self, path, flags, *a):
        if Path(path).parent == self.folder and flags & os.O_CREAT and not os.path.exists(path):
            raise PermissionError(13, "Permission denied", str(path))
        return os.open(path, flags, *a)

    def __getattr__(self, name):
        return getattr(os, name)


@pytest.mark.parametrize("where", ["tree", "index folder"])
def test_a_folder_the_index_cannot_be_made_in_is_invalid_path(tree, monkeypatch, where):
    root = tree(FILES)
    folder = root
    if where == "index folder":  # `.ov` there (with its .gitignore), the file not
        folder = root / ".ov"
        folder.mkdir()
        (folder / ".gitignore").write_text("*\n")
    try:
        _read_only(monkeypatch, folder)
        for args in (["search", "parse mail header", "--json"], ["index", ".", "--json"]):
            r = run_inprocess(*args, cwd=root)
            assert r.code == 2, (args, r.out, r.err)
            err = r.json["error"]
            assert err["code"] == "invalid_path" and err["field"] == "db", err
            assert "Permission denied" in err["message"] and "PermissionError" not in err["message"], err
    finally:
        folder.chmod(0o755)
