"""Shared test fixtures: a fixture-tree builder and a CLI runner.

`make_tree(root, {"a.py": "...", "sub/.gitignore": "build/\n"})` writes files (str or bytes)
and returns the root. `ov(*args, cwd=...)` runs the CLI in-process and returns a result
with `code`, `out`, `err` and `json` (the parsed stdout); `ov_proc` runs it in a real
subprocess (for pipes, signals and import checks).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


# The background workers the tests start and wait for run at normal priority: at the
# default nice 10 they shared the CPU evenly with any other worker on the machine, and the
# one the README's quick start leaves embedding the repository doubled the suite (386 s
# alone, 748 s beside it). A user's workers keep nice 10; one test checks that.
os.environ.setdefault("OV_WORKER_NICE", "0")

# git's global excludes file (core.excludesFile, ~/.config/git/ignore) applies in every git
# work tree the tests make, as in rg: the tests read none of the user's, unless one sets
# its own (test_walk.py's global excludes tests).
_NO_GIT_HOME = tempfile.mkdtemp(prefix="ov-tests-xdg-")
os.environ["XDG_CONFIG_HOME"] = _NO_GIT_HOME
os.environ["GIT_CONFIG_GLOBAL"] = os.path.join(_NO_GIT_HOME, "gitconfig")


def require_tool(name: str, package: str) -> None:
    """Skip the calling test, with the reason, where the program `name` is not installed
    (a user's machine may lack man, zsh or fish). `.ci/run` installs them and sets
    OV_REQUIRE_TOOLS=1, which turns the skip into a failure: CI runs every such test."""
    import shutil  # noqa: PLC0415

    if shutil.which(name):
        return
    msg = f"{name} is not installed (apt-get install {package}); .ci/run installs it"
    if os.environ.get("OV_REQUIRE_TOOLS"):
        pytest.fail(msg)
    pytest.skip(msg)


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """`files` written under `root`. A tree given a `.gitignore` is made a git work tree
    (an empty `.git` folder at its root, unless the files name one), as a project holding
    one is: `.gitignore` counts only inside git (ov.walk)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if any(Path(rel).name == ".gitignore" for rel in files) and not any(
            rel == ".git" or rel.startswith(".git/") for rel in files):
        (root / ".git").mkdir(exist_ok=True)
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_bytes(content.encode("utf-8"))
    return root


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def jsonl(self) -> list:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


def run_inprocess(*args, cwd: Path | None = None, env: dict | None = None) -> Result:
    """`run_inprocess("search", "q", cwd=root)` or `run_inprocess(["search", "q"])`."""
    from ov.cli.app import main

    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])

    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    old_env = dict(os.environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        if env:
            os.environ.update(env)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main([str(a) for a in args])
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
    return Result(code, out.getvalue(), err.getvalue())


def run_subprocess(args: list[str], cwd: Path | None = None, env: dict | None = None,
                   timeout: float = 120, input: str | None = None) -> Result:
    """Run `python -m ov ARGS` in a real process."""
    e = dict(os.environ)
    e.pop("OV_DEBUG", None)
    if env:
        e.update(env)
    p = subprocess.run([sys.executable, "-m", "ov", *map(str, args)], cwd=cwd, env=e,
                       capture_output=True, text=True, timeout=timeout, input=input)
    return Result(p.returncode, p.stdout, p.stderr)


def imported_by(args: list[str], cwd: Path, timeout: float = 60) -> tuple[Result, set[str]]:
    """Run `python -X importtime -m ov ARGS` (the `ov` command's own entry) in `cwd`: its
    result, and the name of every module the run imported."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "ov", *map(str, args)], cwd=cwd,
                       capture_output=True, text=True, timeout=timeout)
    lines = p.stderr.splitlines()
    modules = {ln.rsplit("|", 1)[-1].strip() for ln in lines if ln.startswith("import time:")}
    other = "\n".join(ln for ln in lines if not ln.startswith("import time:"))
    return Result(p.returncode, p.stdout, other), modules


def spy_reads(monkeypatch, root: Path) -> list[str]:
    """The files grep reads from now on (paths relative to `root`), in a list that grows
    as it reads them."""
    from ov.search import files as fsearch  # noqa: PLC0415

    opened: list[str] = []
    real = fsearch.read_searched

    def spy(abspath, stream_over=None):
        opened.append(os.path.relpath(abspath, root).replace(os.sep, "/"))
        return real(abspath, stream_over)

    monkeypatch.setattr(fsearch, "read_searched", spy)
    return opened


@pytest.fixture
def ov():
    return run_inprocess


@pytest.fixture
def ov_proc():
    return run_subprocess


@pytest.fixture
def tree(tmp_path):
    def build(files: dict[str, str | bytes], name: str = "tree") -> Path:
        return make_tree(tmp_path / name, files)

    return build


@pytest.fixture(autouse=True)
def _fake_embedder_by_default(monkeypatch, request):
    """Unit tests use the small deterministic embedder; tests marked `model` use the real one."""
    if request.node.get_closest_marker("model") is None:
        monkeypatch.setenv("OV_EMBEDDER", "hash")
    else:
        monkeypatch.delenv("OV_EMBEDDER", raising=False)
