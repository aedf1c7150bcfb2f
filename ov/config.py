"""Settings: limits, chunk policy and where the index lives.

Values come from flags (passed in by the CLI), then environment variables, then the
tree's config files (`load_config`: `.ov/config.toml`, `[tool.ov]` of `pyproject.toml`),
then the built-in defaults below. The index of a tree lives at `ROOT/.ov/index.db`; commands find
it by walking up from their scope, as git finds `.git`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

def env_number(name: str, default: float) -> float:
    """A number from the environment (`OV_FIRST_BUDGET`, `OV_LOCK_WAIT`...); one that is
    not a number, or is below 0, counts as `default`: read when a module loads, a value
    such as `OV_WORKER_DELAY=abc` had made every search an internal error."""
    try:
        v = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return v if v >= 0 else default  # (NaN too)


INDEX_DIRNAME = ".ov"
DB_NAME = "index.db"

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 8192
MAX_QUERY_TOKENS = 256  # the model's window; longer semantic queries are refused, never cut
DEFAULT_NODE_LIMIT = 256
# grep and glob cut by depth only when asked (--level-limit): rg and fd have no default
# cut, and a Java tree passes 10 levels easily (DESIGN.md departs from OpenViking's 10)
DEFAULT_LEVEL_LIMIT: int | None = None
DEFAULT_MAX_FILESIZE = 1 << 20  # 1 MiB
# The most a tree's own config may raise it to: indexing holds several times a file's size
# in memory, and a cloned tree's config raised to 4G ran out of it on one 300 MB file
CONFIG_MAX_FILESIZE = 64 << 20
DEFAULT_MAX_TOKENS = 1600  # context mode budget
# never embedded by default (name globs; the `embed-skip` key replaces the list): minified,
# map, lock, data, generated and translation files. They stay keyword- and grep-searchable
# (ov.indexer.embeddable). TypeScript's 14 `diagnosticMessages.generated.json` and 78 `.lcl`
# files, its messages in other languages, were 29 % of a JS tree's rows to embed and came
# before the answer for `React.createElement` (a review).
DEFAULT_EMBED_SKIP = ("*.min.*", "*.map", "*.lock", "*-lock.json", "*-lock.yaml", "*.lockb", "go.sum",
                      "npm-shrinkwrap.json", "*.csv", "*.tsv", "*.jsonl", "*.ndjson", "*.svg", "*.pb.go",
                      "*_pb2.py", "*.snap", "*.generated.*", "*.lcl", "*.xlf", "*.xliff", "*.po")
REGEX_TIMEOUT_S = 5.0  # a regex that runs longer on one file ends with deadline_exceeded
GREP_TIMEOUT_S = 60.0  # wall time for a whole grep (--timeout); then deadline_exceeded
MAX_TIMEOUT_S = 1e6  # the most a timeout may be (a week and a half: "no limit" is not a number)
# what a timeout out of range is told, on the command line and through `ov mcp` alike
TIMEOUT_RANGE = f"timeout must be more than 0 and at most {MAX_TIMEOUT_S:.0f} seconds"


@dataclass(frozen=True)
class WalkOptions:
    """How a tree is walked (shared by `index`, `grep` and `glob`)."""

    hidden: bool = False  # include dotfiles and dot-folders (never .git/ or .ov/)
    no_ignore: bool = False  # disregard .gitignore/.ignore/.rgignore/.ovignore/.git/info/exclude
    follow: bool = False  # follow symlinks (never outside the root, never in a loop)
    max_filesize: int | None = DEFAULT_MAX_FILESIZE  # None: no cap
    max_depth: int | None = None  # None: unlimited; 1 = only the start folder's files
    extra_ignores: tuple[str, ...] = field(default_factory=tuple)  # gitignore-style lines
    # rg's -g include globs: `override(path)` true keeps an entry that an ignore file or
    # the hidden-name rule would leave out (a folder so kept is entered)
    override: Callable[[str], bool] | None = None


# ---- config files (issue 7) -------------------------------------------------------------
# Defaults for one tree, read from ROOT/.ov/config.toml and the [tool.ov] table of
# ROOT/pyproject.toml. Key by key: a flag beats .ov/config.toml, which beats pyproject.toml,
# which beats the built-in default. Names are the flags' long names, so a setting reads
# the same in a file and on the command line.

CONFIG_NAME = "config.toml"
SEARCH_TYPE_NAMES = ("hybrid", "keywords", "lexical", "semantic")
DEFAULT_SEARCH_TYPE = "hybrid"
DEFAULT_SOURCE = "default"


def _positive_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
MAX_SIZE = 1 << 50  # 1 PiB: past any file, and within what a read and SQLite take


def parse_size(v: object) -> int | None:
    """A size in bytes as rg's --max-filesize takes it: a positive integer, or digits
    with a suffix K, M or G (KiB, MiB, GiB; either case), as text. None: not a size."""
    if _positive_int(v):
        return v if v <= MAX_SIZE else None  # type: ignore[return-value,operator]
    if not isinstance(v, str):
        return None
    t = v.strip().upper()
    unit = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    digits = t[:len(t) - len(unit)].strip()
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    n = int(digits) * _SIZE_UNITS[unit]
    return n if 0 < n <= MAX_SIZE else None


# key -> (built-in default, type description, check)
SETTINGS: dict[str, tuple[object, str, object]] = {
    "ignore": ((), "a list of gitignore lines",
               lambda v: isinstance(v, list) and all(isinstance(x, str) and "\x00" not in x for x in v)),
    "max-filesize": (DEFAULT_MAX_FILESIZE, "a positive number of bytes, or a size such as \"2M\" (K, M, G)",
                     lambda v: parse_size(v) is not None),
    "hidden": (False, "true or false", lambda v: isinstance(v, bool)),
    "search-type": (DEFAULT_SEARCH_TYPE, "one of " + ", ".join(SEARCH_TYPE_NAMES),
                    lambda v: isinstance(v, str) and v in SEARCH_TYPE_NAMES),
    "limit": (DEFAULT_LIMIT, f"an integer from 1 to {MAX_LIMIT}",
              lambda v: _positive_int(v) and v <= MAX_LIMIT),
    "node-limit": (DEFAULT_NODE_LIMIT, "a positive integer", _positive_int),
    "embed-skip": (DEFAULT_EMBED_SKIP, "a list of file name globs",
                   lambda v: isinstance(v, list) and all(isinstance(x, str) and "\x00" not in x for x in v)),
    "embed-long-lines": (True, "true or false", lambda v: isinstance(v, bool)),
}


@dataclass(frozen=True)
class Config:
    """Every setting's value and where it came from (`default`, `.ov/config.toml` or
    `pyproject.toml [tool.ov]`)."""

    values: dict[str, object]
    sources: dict[str, str]

    def get(self, key: str, flag: object = None) -> object:
        """The flag's value when given (not None), else the configured one."""
        return flag if flag is not None else self.values[key]

    # The merges every front end gets through ov.api: flag > config file > default, here.
    def walk_options(self, hidden: bool | None = None, no_ignore: bool = False, follow: bool = False,
                     max_filesize: int | None = None) -> WalkOptions:
        """How `ov index` (and a first search, and the worker) walks the tree."""
        size = self.get("max-filesize", max_filesize)
        if max_filesize is None and size > CONFIG_MAX_FILESIZE:  # type: ignore[operator]
            _held_warning(self.sources["max-filesize"])
            size = CONFIG_MAX_FILESIZE
        return WalkOptions(hidden=bool(self.get("hidden", hidden)), no_ignore=no_ignore, follow=follow,
                           max_filesize=size,  # type: ignore[arg-type]
                           extra_ignores=tuple(self.get("ignore")))  # type: ignore[arg-type]

    def search_options(self, hidden: bool | None = None, node_limit: int | None = None) -> dict:
        """The settings of `ov grep` and `ov glob` a tree's config may give."""
        return {"hidden": self.get("hidden", hidden), "node_limit": self.get("node-limit", node_limit),
                "ignores": self.get("ignore")}

    def ranked_options(self, search_type: str | None = None, limit: int | None = None) -> tuple:
        """(search type, limit) of `ov search` / `ov find`, the type not yet normalised."""
        return self.get("search-type", search_type), self.get("limit", limit)

    def settings(self, flags: dict[str, object] | None = None) -> dict[str, dict[str, object]]:
        """`{key: {"value": v, "source": s}}`; flags given (not None) are shown as `flag`."""
        out: dict[str, dict[str, object]] = {}
        for key in SETTINGS:
            f = (flags or {}).get(key)
            v, s = (f, "flag") if f is not None else (self.values[key], self.sources[key])
            out[key] = {"value": list(v) if isinstance(v, tuple) else v, "source": s}
            if key == "max-filesize" and f is None and isinstance(v, int) and v > CONFIG_MAX_FILESIZE:
                # the value in use, as `walk_options` holds it: `ov status` had shown 64G
                out[key] = {"value": CONFIG_MAX_FILESIZE, "source": s, "configured": v}
        return out


CONTROL_MAX_BYTES = 1 << 20  # ignore files and configs larger than this are skipped


class ControlFileRefused(OSError):
    """A control file that is not a regular file, or larger than CONTROL_MAX_BYTES."""


def read_control(path: str | Path, max_bytes: int = CONTROL_MAX_BYTES, follow: bool = True) -> bytes | None:
    """The bytes of a control file (an ignore file, a config): None when it does not exist
    or is a folder; `ControlFileRefused` when it is not a regular file (a link to
    /dev/zero, a fifo) or holds more than `max_bytes`, so a cloned tree cannot make a
    command hang or fill memory (issue 17). Read at most once past the cap. `follow`
    False: a link is not opened (OSError), as for ov's own files (`ov.walk.read_private`)."""
    import errno  # noqa: PLC0415
    import os  # noqa: PLC0415
    import stat  # noqa: PLC0415

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
                     | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return None
        if not stat.S_ISREG(st.st_mode):
            raise ControlFileRefused(errno.EINVAL, "not a regular file; skipped", str(path))
        too_big = ControlFileRefused(errno.EFBIG, f"larger than {max_bytes} bytes; skipped", str(path))
        if st.st_size > max_bytes:
            raise too_big
        chunks, got = [], 0
        while got <= max_bytes:
            b = os.read(fd, min(1 << 24, max_bytes + 1 - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got > max_bytes:
            raise too_big
        return b"".join(chunks)
    finally:
        os.close(fd)


_HELD: set[str] = set()  # the sources `_held_warning` spoke of in this process


def _held_warning(source: str) -> None:
    """Once a process: the config's max-filesize was held at CONFIG_MAX_FILESIZE."""
    if source in _HELD:
        return
    _HELD.add(source)
    import sys  # noqa: PLC0415

    sys.stderr.write(f"ov: warning: {source}: max-filesize is held at {CONFIG_MAX_FILESIZE >> 20}M (a "
                     "tree's config may come with the tree; `--max-filesize` sets more)\n")


def leads_outside(path: str, root: str, folder_inside: bool = True) -> bool:
    """Whether `path`, a file under `root`, is reached through a link to a place outside
    the tree. `folder_inside`: its folder is known to be inside (the walk reached it, never
    through a link out), so only the file itself can be such a link."""
    import os  # noqa: PLC0415

    if folder_inside and not os.path.islink(path):
        return False
    real, top = os.path.realpath(path), os.path.realpath(root)
    return not real.startswith(top.rstrip(os.sep) + os.sep)


_WARNED: set[str] = set()  # config files and index folders said not to be read, in this run


def new_run() -> None:
    """A command starts (ov.cli.run.run_body): what the last one said is said again."""
    _WARNED.clear()


def _read_toml(path: Path, label: str, root: Path) -> dict | None:
    import sys  # noqa: PLC0415

    from ov.errors import OvError  # noqa: PLC0415

    if leads_outside(str(path), str(root), folder_inside=False):  # its keys and values would be echoed in errors
        import os  # noqa: PLC0415

        # (nothing there: nothing to say; the link on the way may be the folder, `.ov`)
        if os.path.lexists(path) and label not in _WARNED:
            _WARNED.add(label)  # once a run: a search reads the config more than once
            what = next((f"{p}: a symbolic link leading outside the tree, so its {path.name} is not read"
                         for p in (path.parent,) if os.path.islink(p)),
                        f"{label}: a symbolic link leading outside the tree; settings there are not applied")
            sys.stderr.write(f"ov: warning: {what}\n")
        return None
    try:
        data = read_control(path)
        if data is None:
            return None
    except ControlFileRefused as e:
        sys.stderr.write(f"ov: warning: {label}: {e.strerror}\n")
        return None
    except PermissionError:  # another user's owner-only .ov/: its settings are that user's
        sys.stderr.write(f"ov: warning: {label}: this user cannot read it (its folder is another "
                         "user's); settings there are not applied\n")
        return None
    except OSError as e:
        raise OvError("invalid_argument", f"{label}: cannot read it ({e.strerror or e})",
                      field="config") from e
    import tomllib  # noqa: PLC0415 - only when a config file exists (~2 ms a run otherwise)

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise OvError("invalid_argument", f"{label}: not valid TOML ({e})", field="config") from e


def _check_table(table: object, label: str) -> dict[str, object]:
    import difflib  # noqa: PLC0415

    from ov.errors import OvError  # noqa: PLC0415

    if not isinstance(table, dict):
        raise OvError("invalid_argument", f"{label}: must be a table of settings", field="config")
    for key, v in table.items():
        if key not in SETTINGS:
            near = difflib.get_close_matches(key.replace("_", "-"), SETTINGS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else f" (known: {', '.join(SETTINGS)})"
            raise OvError("invalid_argument", f"{label}: unknown key {key!r}{hint}", field=key)
        _, want, ok = SETTINGS[key]
        if not ok(v):  # type: ignore[operator]
            raise OvError("invalid_argument", f"{label}: {key} must be {want}, not {v!r}", field=key)
    return dict(table)


# ---- another user's files: an `.ov/` or a `.git` planted above a tree -----------------


SAFE_ENV = "OV_SAFE_DIRECTORIES"


def _safe(path: str) -> bool:
    """Whether `path` lies at or under a folder of OV_SAFE_DIRECTORIES (paths joined by
    `:`; `*` for every folder), where another user's `.ov/` and `.git` are used as this
    user's own: git's `safe.directory`, for a container that runs as root over a checkout
    another user owns."""
    listed = os.environ.get(SAFE_ENV, "")
    if not listed:
        return False
    if "*" in listed.split(":"):
        return True
    # absolute entries only, as git's, links resolved on both sides (`..` from wherever
    # the command runs would trust whatever folder is above it)
    a = os.path.realpath(path)
    return any(a == d or a.startswith(d.rstrip(os.sep) + os.sep)
               for d in (os.path.realpath(e) for e in listed.split(":") if os.path.isabs(e)))


def _owners() -> set[int]:
    """The owners whose files this user trusts: itself, root, and under sudo the user who
    ran it (git's `SUDO_UID` rule)."""
    me = os.geteuid()
    mine = {me, 0}
    if me == 0 and os.environ.get("SUDO_UID", "").isdigit():
        mine.add(int(os.environ["SUDO_UID"]))
    return mine


def foreign(path: str) -> str | None:
    """Why the file at `path` (a `.git`) is not this user's to trust (`_owners`,
    OV_SAFE_DIRECTORIES), said once a run (`distrusted`); None when it is, or is not there."""
    try:
        uid = os.lstat(path).st_uid
    except OSError:
        return None
    if uid in _owners() or _safe(path):
        return None
    why = f"{path} is owned by another user (uid {uid})"
    distrusted(why)
    return why


def untrusted(db_path: Path) -> str | None:
    """Why the index at `db_path` (or another file of ov's in its folder: config.toml) is
    not this user's to use, or None when it is (or is not there). An index folder or file
    another user owns (root aside), or a folder every user may write in, could have been
    planted: as git refuses a `.git` another user owns (the
    `/tmp/.git` of CVE-2022-24765 steered every command below it), an `.ov/` found that way
    would show another user's files as this tree's and its config could hide this tree's.
    An index named by `--db` is the user's choice and is not asked; under sudo, the index of
    the user who ran sudo is theirs (as git's `SUDO_UID` rule)."""
    if _safe(os.fspath(db_path)):
        return None
    mine = _owners()  # (under sudo, `sudo ov index --full` on the user's own index)
    for p in (db_path.parent, db_path):
        try:
            st = os.lstat(p)
        except OSError:  # not there, or not this user's to look in: nothing planted here
            return None
        if st.st_uid not in mine:
            return f"{p} is owned by another user (uid {st.st_uid})"
        if stat.S_ISLNK(st.st_mode):  # refused as a link where it is opened (check_index_files)
            return None
        if p == db_path.parent and st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX:
            return f"{p} is a folder every user may write in"
    return None


def distrusted(why: str) -> None:
    """Say once a run that another user's `.ov/` (its index, its config.toml) is passed over
    (`untrusted`)."""
    import sys  # noqa: PLC0415

    if why not in _WARNED:
        _WARNED.add(why)
        sys.stderr.write(f"ov: warning: {why}: not used, as git ignores a .git another user can change "
                         f"(--db names an index to use; {SAFE_ENV}=FOLDER trusts a tree's)\n")


def _trusted(path: Path) -> bool:
    """Whether `.ov/config.toml` may be read: not another user's, nor in a folder every
    user may write (`untrusted`; said once a run), asked before it is read, so that
    a planted file that is not even TOML stops nothing. (`pyproject.toml` is the tree's
    own, as its `.gitignore` is; a tree above found through another user's `.git` is not
    searched from: ov.paths.search_root.)"""
    # (none there: nothing to say; an index named with --db, another user's, may have none)
    return not os.path.lexists(path) or not passed_over(path)


def passed_over(path: Path) -> bool:
    """Whether ov's file at `path` is another user's (`untrusted`): said once a run."""
    why = untrusted(path)
    if why:
        distrusted(why)
    return why is not None


def load_config(root: Path) -> Config:
    """The settings of the tree at `root`: `.ov/config.toml`, then `[tool.ov]` of
    `pyproject.toml`, then the defaults. An unknown key or a value of the wrong type is
    `invalid_argument` naming the file and the key. Reads files only; no side effects."""
    root = Path(root)
    values = {k: d for k, (d, _, _) in SETTINGS.items()}
    sources = dict.fromkeys(SETTINGS, DEFAULT_SOURCE)
    layers: list[tuple[str, dict[str, object]]] = []
    ov_label = f"{INDEX_DIRNAME}/{CONFIG_NAME}"
    ov_toml = _read_toml(root / INDEX_DIRNAME / CONFIG_NAME, str(root / ov_label), root) \
        if _trusted(root / INDEX_DIRNAME / CONFIG_NAME) else None
    pyproject = _read_toml(root / "pyproject.toml", str(root / "pyproject.toml"), root)
    if pyproject is not None:
        tool = pyproject.get("tool", {})
        if isinstance(tool, dict) and "ov" in tool:
            label = str(root / "pyproject.toml") + " [tool.ov]"
            layers.append(("pyproject.toml [tool.ov]", _check_table(tool["ov"], label)))
    if ov_toml is not None:
        layers.append((ov_label, _check_table(ov_toml, str(root / ov_label))))
    for source, table in layers:  # later layers win
        for key, v in table.items():
            values[key] = tuple(v) if isinstance(v, list) else parse_size(v) if key == "max-filesize" else v
            sources[key] = source
    return Config(values, sources)
