"""Walking a tree: ignore rules, hidden files, symlinks, size cap, sorted order.

Ignore rules follow git, read through `pathspec`: a `.gitignore` in any folder holds
rules relative to that folder, `.git/info/exclude` holds rules for the root, and within
one file the last matching line wins (`!` re-includes). A folder that is excluded is
never entered, so nothing below it can be re-included (git's rule). As in ripgrep,
`.ignore` and `.ovignore` use the same syntax with higher precedence: the kinds are
asked in the order extra rules (`WalkOptions.extra_ignores`, rooted at the walk root,
from the config file or `--exclude`), `.ovignore`, `.ignore`, `.gitignore`,
`.git/info/exclude`; within a kind the deepest folder with a matching line decides.
`--no-ignore` drops the files but keeps the extra rules, which the user typed.

Hidden names (a leading dot) are skipped unless `hidden` is set or an ignore file
re-includes them by name (`!.github/`, as ripgrep allows); `.git` and `.ov` are always
skipped. Symlinks are skipped unless `follow` is set (or listed as links with
`yield_symlinks`); followed links never lead outside the root nor into a folder that is
already on the current path. Per-entry problems (an unreadable folder, a broken link)
are reported through `on_warning` and the walk goes on.

Order: each folder's entries sorted by name, files and folders interleaved, depth first:
the order of the relative paths compared component by component (ripgrep's
`--sort path`). The hot loop works on `os.scandir` entries and strings, never `Path`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from functools import lru_cache
from operator import attrgetter
from pathlib import Path

from ov.config import WalkOptions, read_control
from ov.errors import OvError
from ov.model import FileEntry

ALWAYS_SKIPPED = frozenset({".git", ".ov"})

# Ignore-file kinds in precedence order (ripgrep's): earlier kinds win over later ones
# whatever the folder depth; within a kind the deepest folder wins.
_EXTRA, _OVIGNORE, _IGNORE, _GITIGNORE, _EXCLUDE = range(5)
_PER_FOLDER = ((".ovignore", _OVIGNORE), (".ignore", _IGNORE), (".gitignore", _GITIGNORE))
_PER_FOLDER_NAMES = frozenset(n for n, _ in _PER_FOLDER)

# A compiled rule: (regex search, ignores, tested against "path/" for folders).
Rule = tuple[Callable, bool, bool]
Rules = tuple[Rule, ...]  # last line first, so the first hit decides
# An ignore file in force: (kind, folder depth, folder path relative to the root, rules).
Level = tuple[int, int, str, Rules]

_by_name = attrgetter("name")


def _noop(*_: object) -> None:
    return None


# An anchored line naming one path literally ("/a/b", specials escaped), as --exclude-uri
# writes them: it matches that path exactly (a folder or a file), without pathspec.
_ANCHORED_LITERAL = re.compile(r"/(?:[^\\*?\[\]!#\s/]|\\[\\*?\[\]!# ])+"
                               r"(?:/(?:[^\\*?\[\]!#\s/]|\\[\\*?\[\]!# ])+)*")
_UNESCAPE = re.compile(r"\\(.)")


def _exact(path: str) -> Callable[[str], bool | None]:
    folder = path + "/"

    def search(s: str) -> bool | None:
        return True if s == path or s == folder else None

    search.exact = path  # type: ignore[attr-defined]  # read by _checks
    return search


# A run of `*` matches what one `*` matches, except `**` standing alone between slashes;
# left as written, pathspec's regex for sixteen `*` then `z` backtracks exponentially.
_STARS = re.compile(r"\\.|\*{2,}")


def _collapse_stars(m: re.Match) -> str:
    run = m.group()
    if run[0] == "\\":
        return run  # an escaped character, kept
    s, a, b = m.string, m.start(), m.end()
    alone = (a == 0 or s[a - 1] == "/") and (b == len(s) or s[b] == "/")
    return "**" if alone else "*"


@lru_cache(maxsize=4096)
def _compile_line(line: str) -> Rule | None:
    """One gitignore line as a rule matching only the entry itself, or None.

    pathspec's regexes also match every path below a matched folder (its `ps_d` group
    marks the folder's slash). The walker never enters an excluded folder, so such
    "content" matches are dropped here: a rule with the folder mark must end exactly at
    the end of the tested string ("name/" for a folder, so `build/` skips folders only),
    and a rule without it (`foo/**`, `*`) is tested against the bare path, so `foo/**`
    matches what is inside foo but not foo itself, as in git.
    """
    line = _STARS.sub(_collapse_stars, line)
    if _ANCHORED_LITERAL.fullmatch(line):
        parts = _UNESCAPE.sub(r"\1", line[1:]).split("/")
        if "." not in parts and ".." not in parts:
            return (_exact("/".join(parts)), True, True)
    # pathspec costs ~10 ms to import: only trees with ignore rules to interpret need it
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # noqa: PLC0415

    pat = GitIgnoreSpecPattern(line)
    if pat.include is None or pat.regex is None:
        return None
    rx = pat.regex
    if "ps_d" in rx.groupindex:
        return (re.compile(f"(?:{rx.pattern})\\Z").search, bool(pat.include), True)
    return (rx.search, bool(pat.include), False)


@lru_cache(maxsize=512)
def _compile(text: str) -> Rules:
    """The rules of one ignore file's text (cached by content: walks repeat a lot)."""
    rules = []
    for line in text.splitlines():
        try:
            r = _compile_line(line)
        except Exception:  # a malformed line is skipped, as git skips it
            continue
        if r is not None:
            rules.append(r)
    return tuple(reversed(rules))


def _read_rules(path: str, rel: str, warn: Callable[[str], None]) -> Rules:
    try:  # a regular file under 1 MB only: a link to /dev/zero must not hang a walk
        data = read_control(path)
    except OSError as e:
        warn(f"{rel}: {e.strerror or e}")
        return ()
    if data is None:
        return ()
    return _compile(data.decode("utf-8", "replace"))


def _root_levels(root: str, opts: WalkOptions, warn: Callable[[str], None]) -> tuple[Level, ...]:
    levels: list[Level] = []
    if opts.extra_ignores:
        rules = _compile("\n".join(opts.extra_ignores))
        if rules:
            levels.append((_EXTRA, 0, "", rules))
    if not opts.no_ignore:
        rules = _read_rules(os.path.join(root, ".git", "info", "exclude"), ".git/info/exclude", warn)
        if rules:
            levels.append((_EXCLUDE, 0, "", rules))
    return tuple(levels)


def _add_folder(levels: tuple[Level, ...], folder: str, rel: str, depth: int,
                names: frozenset[str] | set[str] | None, warn: Callable[[str], None]
                ) -> tuple[Level, ...]:
    """`levels` plus the ignore files of `folder` (names None: probe for them)."""
    new = list(levels)
    for fname, kind in _PER_FOLDER:
        if names is not None and fname not in names:
            continue
        rules = _read_rules(os.path.join(folder, fname), f"{rel}/{fname}" if rel else fname, warn)
        if rules:
            new.append((kind, depth, rel, rules))
    if len(new) == len(levels):
        return levels
    new.sort(key=lambda lv: (lv[0], -lv[1]))
    return tuple(new)


def _checks(levels: tuple[Level, ...], rel: str) -> tuple[tuple[str, Rules], ...]:
    """For the entries of folder `rel`: each level's path prefix and rules, in order.

    A rule naming one path exactly (`/a/b`) can decide only for the entries of that
    path's folder; elsewhere it is left out, so most folders test no rule at all.
    """
    out = []
    for _, _, base, rules in levels:
        if base == rel:
            prefix = ""
        elif not base:
            prefix = rel + "/"
        else:
            prefix = rel[len(base) + 1:] + "/"
        rules = tuple(r for r in rules if _may_decide(r, prefix))
        if rules:
            out.append((prefix, rules))
    return tuple(out)


def _may_decide(rule: Rule, prefix: str) -> bool:
    exact = getattr(rule[0], "exact", None)
    return exact is None or (exact.startswith(prefix) and "/" not in exact[len(prefix):])


def _decide(checks: tuple[tuple[str, Rules], ...], name: str, is_dir: bool) -> bool | None:
    """True: ignored; False: re-included by a `!` line; None: no rule says anything."""
    for prefix, rules in checks:
        p = prefix + name
        ps = p + "/" if is_dir else p
        for search, ignores, slash in rules:
            if search(ps if slash else p) is not None:
                return ignores
    return None


def _scan(path: str) -> list[os.DirEntry]:
    with os.scandir(path) as it:
        return sorted(it, key=_by_name)


def _under(path: str, real_root: str) -> bool:
    return path == real_root or path.startswith(real_root.rstrip(os.sep) + os.sep)


def walk(
    root: Path,
    opts: WalkOptions = WalkOptions(),
    *,
    start: Path | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    yield_symlinks: bool = False,
    stat_files: bool = True,
    keep: Callable[[str], bool] | None = None,
) -> Iterator[FileEntry]:
    """Yield the regular files under `start` (default `root`), paths relative to `root`.

    `start` may be a folder or a file inside `root`; the ignore files of `root` and of
    every folder down to `start` apply, but `start` itself is never filtered: a path
    named explicitly is walked, as ripgrep does. `on_warning(message)` hears about
    unreadable folders, files and ignore files, broken links and link loops;
    `on_skip(path, reason)` about files left out for a reason worth counting: "size"
    (over `max_filesize`), "unreadable" (stat failed), "outside_root" (a link leading
    out of the root). With `yield_symlinks` (and not `follow`), symlinks are yielded
    themselves (`is_symlink=True`, lstat's size and time) instead of being skipped.
    Without `stat_files` (and without `max_filesize`), regular files found by the walk
    are not stat'ed (a system call each): their size and mtime_ns are -1 and mode 0,
    for callers that only open them. `keep(path)`, when given, is asked before a file or
    link is stat'ed or yielded (`ov glob` asks its pattern; a record per walked file
    would cost more than the match).
    """
    return _walk(root, opts, start, on_warning, on_skip, yield_symlinks, stat_files, False, keep)


def walk_paths(
    root: Path,
    opts: WalkOptions = WalkOptions(),
    *,
    start: Path | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
) -> Iterator[tuple[str, str]]:
    """(path relative to `root`, absolute path) of each file `walk` would yield, for
    callers that only open them: no stat (without `max_filesize`), no record per file."""
    return _walk(root, opts, start, on_warning, on_skip,  # type: ignore[return-value]
                 False, False, True, None)


def _walk(root: Path, opts: WalkOptions, start: Path | None,
          on_warning: Callable[[str], None] | None, on_skip: Callable[[str, str], None] | None,
          yield_symlinks: bool, stat_files: bool, pairs: bool,
          keep: Callable[[str], bool] | None
          ) -> Iterator[FileEntry | tuple[str, str]]:
    warn = on_warning or _noop
    skip = on_skip or _noop
    root_abs = os.path.abspath(os.fspath(root))
    base = root_abs if start is None else os.path.abspath(os.fspath(start))
    rel0 = os.path.relpath(base, root_abs)
    if rel0 == ".":
        rel0 = ""
    elif rel0 == ".." or rel0.startswith(".." + os.sep) or os.path.isabs(rel0):
        raise OvError("invalid_path", f"{start} is outside the root {root_abs}", field="path")
    rel0 = rel0.replace(os.sep, "/")

    hidden_ok = opts.hidden
    no_ignore = opts.no_ignore
    follow = opts.follow
    max_size = opts.max_filesize
    max_depth = opts.max_depth
    lazy = not stat_files and max_size is None
    real_root = os.path.realpath(root_abs)
    if start is not None and not _under(os.path.realpath(base), real_root):
        skip(rel0, "outside_root")  # a named path that is a link leading out of the root
        return

    try:
        st0 = os.stat(base)
    except OSError as e:
        warn(f"{rel0 or '.'}: {e.strerror or e}")
        return
    if not stat.S_ISDIR(st0.st_mode):
        # A file named explicitly is yielded whatever the ignore rules say.
        if stat.S_ISREG(st0.st_mode) and (keep is None or keep(rel0)):
            if max_size is not None and st0.st_size > max_size:
                skip(rel0, "size")
            else:
                yield (rel0, base) if pairs else FileEntry(
                    rel0, base, st0.st_size, st0.st_mtime_ns, st0.st_mode, os.path.islink(base),
                    st0.st_ctime_ns, st0.st_ino)
        return
    if max_depth is not None and max_depth < 1:
        return

    # The ignore files of the root and of each folder above `start` (the start
    # folder's own are read when it is scanned).
    parts = rel0.split("/") if rel0 else []
    levels = _root_levels(root_abs, opts, warn)
    if not no_ignore:
        for k in range(len(parts)):
            folder = os.path.join(root_abs, *parts[:k])
            levels = _add_folder(levels, folder, "/".join(parts[:k]), k, None, warn)

    # Loop detection: the (device, inode) of every folder on the current path.
    on_path: set[tuple[int, int]] = set()
    if follow:
        for k in range(len(parts) + 1):
            try:
                s = os.stat(os.path.join(root_abs, *parts[:k]))
            except OSError:
                continue
            on_path.add((s.st_dev, s.st_ino))

    # A frame: (entries iterator, folder rel path, depth, levels, checks, folder id).
    def open_folder(path: str, rel: str, depth: int, lv: tuple[Level, ...],
                    fid: tuple[int, int] | None):
        try:
            entries = _scan(path)
        except OSError as e:
            warn(f"{rel or '.'}: {e.strerror or e}")
            return None
        if not no_ignore:
            names = {e.name for e in entries if e.name in _PER_FOLDER_NAMES}
            if names:
                lv = _add_folder(lv, path, rel, depth, names, warn)
        return (iter(entries), rel + "/" if rel else "", depth, lv, _checks(lv, rel), fid)

    first = open_folder(base, rel0, len(parts), levels, None)
    if first is None:
        return
    stack = [first]
    while stack:
        it, prefix, depth, lv, checks, _ = stack[-1]
        walk_depth = depth - len(parts) + 1  # 1 for the start folder
        for e in it:
            name = e.name
            if name in ALWAYS_SKIPPED:
                continue
            if not checks and name[0] == "." and not hidden_ok:
                continue  # no rule could re-include it; spares the stat of a link
            rel = prefix + name
            try:
                is_link = e.is_symlink()
                if is_link:
                    if not follow:
                        if not yield_symlinks:
                            continue
                        is_dir = False
                    else:
                        if not _under(os.path.realpath(e.path), real_root):
                            skip(rel, "outside_root")
                            continue
                        try:
                            st = os.stat(e.path)
                        except FileNotFoundError:
                            warn(f"{rel}: broken symbolic link")
                            continue
                        is_dir = stat.S_ISDIR(st.st_mode)
                else:
                    is_dir = e.is_dir(follow_symlinks=False)
            except OSError as err:
                warn(f"{rel}: {err.strerror or err}")
                continue

            verdict = _decide(checks, name, is_dir) if checks else None
            if verdict:
                continue
            if name[0] == "." and not hidden_ok and verdict is not False:
                continue

            if is_dir:
                if max_depth is not None and walk_depth >= max_depth:
                    continue
                fid = None
                if follow:
                    try:
                        s = st if is_link else e.stat(follow_symlinks=False)
                    except OSError as err:
                        warn(f"{rel}: {err.strerror or err}")
                        continue
                    fid = (s.st_dev, s.st_ino)
                    if fid in on_path:
                        warn(f"{rel}: file system loop found (links to a folder above it)")
                        continue
                frame = open_folder(e.path, rel, depth + 1, lv, fid)
                if frame is None:
                    continue
                if fid is not None:
                    on_path.add(fid)
                stack.append(frame)
                break

            if keep is not None and not keep(rel):
                continue
            if is_link:
                if not follow:  # yield_symlinks: the link itself
                    try:
                        s = e.stat(follow_symlinks=False)
                    except OSError as err:
                        warn(f"{rel}: {err.strerror or err}")
                        continue
                    yield FileEntry(rel, e.path, s.st_size, s.st_mtime_ns, s.st_mode, True)
                    continue
                s = st
                if not stat.S_ISREG(s.st_mode):
                    continue
            else:
                if not e.is_file(follow_symlinks=False):
                    continue  # fifos, sockets, devices
                if lazy:
                    yield (rel, e.path) if pairs else FileEntry(rel, e.path, -1, -1, 0, False)
                    continue
                try:
                    s = e.stat(follow_symlinks=False)
                except OSError as err:
                    warn(f"{rel}: {err.strerror or err}")
                    skip(rel, "unreadable")
                    continue
            if max_size is not None and s.st_size > max_size:
                skip(rel, "size")
                continue
            yield (rel, e.path) if pairs else FileEntry(rel, e.path, s.st_size, s.st_mtime_ns,
                                                         s.st_mode, is_link, s.st_ctime_ns, s.st_ino)
        else:
            fid = stack.pop()[5]
            if fid is not None:
                on_path.discard(fid)


def is_ignored(root: Path, rel_path: str, opts: WalkOptions = WalkOptions()) -> bool:
    """Whether the walker would leave `rel_path` (relative to `root`) out by its ignore,
    hidden and always-skipped rules, counting the rules of every folder above it.

    The size cap and symlink policy are not considered.
    """
    root_abs = os.path.abspath(os.fspath(root))
    parts = [p for p in rel_path.replace(os.sep, "/").split("/") if p and p != "."]
    if not parts:
        return False
    levels = _root_levels(root_abs, opts, _noop)
    folder, rel = root_abs, ""
    target_is_dir = os.path.isdir(os.path.join(root_abs, *parts))
    for i, name in enumerate(parts):
        if not opts.no_ignore:
            levels = _add_folder(levels, folder, rel, i, None, _noop)
        if name in ALWAYS_SKIPPED:
            return True
        is_dir = i < len(parts) - 1 or target_is_dir
        checks = _checks(levels, rel)
        verdict = _decide(checks, name, is_dir) if checks else None
        if verdict:
            return True
        if name[0] == "." and not opts.hidden and verdict is not False:
            return True
        folder = os.path.join(folder, name)
        rel = f"{rel}/{name}" if rel else name
    return False
