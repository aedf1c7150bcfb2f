"""Walking a tree: ignore rules, hidden files, symlinks, size cap, sorted order.

Ignore rules follow git, read through `pathspec`: a `.gitignore` in any folder holds
rules relative to that folder, `.git/info/exclude` holds rules for the root, and within
one file the last matching line wins (`!` re-includes). As in rg and fd, `.gitignore`
files count only inside a git work tree (a folder holding `.git`, at, above or below the
root); `.ignore`, `.rgignore` and `.ovignore` count everywhere. A folder that is excluded is
never entered, so nothing below it can be re-included (git's rule). As in ripgrep,
`.ignore`, `.rgignore` and `.ovignore` use the same syntax with higher precedence: the
kinds are asked in the order extra rules (`WalkOptions.extra_ignores`, rooted at the walk
root, from the config file or `--exclude`), `.ovignore`, `.rgignore` (ripgrep's own, read
so that what a user hid from rg stays hidden), `.ignore`, `.gitignore`,
`.git/info/exclude`, then git's global excludes file (`core.excludesFile`, by default
`~/.config/git/ignore`; `global_excludes`), lowest as in git and rg, inside a git work
tree only; within a kind the deepest folder with a matching line decides.
`--no-ignore` drops the files but keeps the extra rules, which the user typed.

Hidden names (a leading dot) are skipped unless `hidden` is set or an ignore file
re-includes them by name (`!.github/`, as ripgrep allows); `.git` and `.ov` are always
skipped. `WalkOptions.override` (grep's `-g` include globs) keeps what the ignore files
or the hidden-name rule would leave out, as rg's overrides do. Symlinks are skipped unless `follow` is set (or listed as links with
`yield_symlinks`); followed links never lead outside the root nor into a folder that is
already on the current path. Per-entry problems (an unreadable folder, a broken link)
are reported through `on_warning` and the walk goes on.

Order: each folder's entries sorted by name, files and folders interleaved, depth first:
the order of the relative paths compared component by component (ripgrep's
`--sort path`). The hot loop works on `os.scandir` entries and strings, never `Path`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from ov.config import WalkOptions, foreign, leads_outside, read_control
from ov.errors import OvError
from ov.kinds import is_notebook
from ov.model import FileEntry

# What a walk says when it could not read a folder, a file's entry or an ignore file:
# "{path}: {the OS's words}", or a link it follows that is broken or loops. `ov grep`
# exits 2 after its results when it heard one, as rg does: a search that could not read
# part of the tree did not find that nothing matched (`read_error`). The words are told
# apart by their text because warnings cross to the grep helper by marshal and are kept
# in the listing cache as text.
_OS_WORDS = frozenset(os.strerror(e) for e in (
    errno.EACCES, errno.EPERM, errno.ELOOP, errno.EIO, errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG,
    errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EOVERFLOW, errno.ESTALE, errno.ENXIO, errno.EBADF))
BROKEN_LINK = "broken symbolic link"
# ... or a link that `-L` (or a PATH named) asked it to follow, which leads out of the tree:
# never followed (DESIGN), so not read either
LINK_OUT = "a symbolic link leading outside the tree, not followed"
LOOP = "file system loop found (links to a folder above it)"


def read_error(warning: str) -> bool:
    """Whether a walk's warning says it could not read something (above)."""
    return (warning.rpartition(": ")[2] in _OS_WORDS or warning.endswith((": " + BROKEN_LINK, ": " + LOOP))
            or ": " + LINK_OUT in warning)

ALWAYS_SKIPPED = frozenset({".git", ".ov"})

# Ignore-file kinds in precedence order (ripgrep's): earlier kinds win over later ones
# whatever the folder depth; within a kind the deepest folder wins.
_EXTRA, _OVIGNORE, _RGIGNORE, _IGNORE, _GITIGNORE, _EXCLUDE, _GLOBAL = range(7)
# Not an ignore file: the mark (with no rules) of a folder at or below which the walk is
# inside a git work tree. `.gitignore` applies only there, as in rg and fd (their
# `--no-require-git` off): a source tarball's `.gitignore` is its packagers' — Debian's
# linux-source ends its own with `/*`, which left ov nothing of a tree rg searches whole.
_GIT = 7
_PER_FOLDER = ((".ovignore", _OVIGNORE), (".rgignore", _RGIGNORE), (".ignore", _IGNORE),
               (".gitignore", _GITIGNORE))
# a folder holding `.git` (a repository inside the tree) has its own .git/info/exclude
_PER_FOLDER_NAMES = frozenset([*(n for n, _ in _PER_FOLDER), ".git"])


def git_exclude(folder: str) -> str:
    """The `info/exclude` file of the repository whose work tree top is `folder`: in its
    `.git` folder, or, when `.git` is a file (a worktree, a submodule, a repository made
    with `--separate-git-dir`), in the git folder it names, a worktree's being its
    repository's common folder, as git reads it."""
    dot = os.path.join(folder, ".git")
    if not os.path.isdir(dot):
        try:
            data = read_control(dot)
        except OSError:
            data = None
        if data is not None and data.startswith(b"gitdir:"):
            gitdir = os.path.join(folder, os.fsdecode(data[7:].strip()))
            try:
                common = read_control(os.path.join(gitdir, "commondir"))
            except OSError:
                common = None
            if common and common.strip():
                gitdir = os.path.join(gitdir, os.fsdecode(common.strip()))
            return os.path.normpath(os.path.join(gitdir, "info", "exclude"))
    return os.path.join(dot, "info", "exclude")


def _watched(folder: str, name: str) -> str:
    """The file the listing cache watches for an ignore-file name present in a folder."""
    return git_exclude(folder) if name == ".git" else os.path.join(folder, name)

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


def _exact(path: str, dirs: bool = False) -> Callable[[str], bool | None]:
    """The rule of a line naming one path (`dirs`: a folder only, the line ending in '/')."""
    folder = path + "/"

    def search(s: str) -> bool | None:
        return True if s == folder or (s == path and not dirs) else None

    search.exact = path  # type: ignore[attr-defined]  # read by _checks
    search.dirs = dirs  # type: ignore[attr-defined]
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


# Three `*` or more in one part of a path (`*a*a*a*b`) make pathspec's regex backtrack
# polynomially in the name's length: a committed `.gitignore` of `*a*a*a*a*a*a*a*a*a*a*a*a*b`
# and a file named with 40 `a`s hung every walk. Each `*` and the literal piece after it,
# but the last, is matched lazily and then kept (an atomic group): a piece of fixed length
# (letters, escapes, `?`) found at its leftmost place leaves the rest the most room, so
# the answer is the same, and each part of the path is read once.
_STAR_RX = r"\[\^/\]\*"
_PIECE_RX = r"(?:\\.|\[\^/\](?!\*)|\[(?!\^)[^\]/\\]+\]|[^\\\[\]()*+?{}|^$/.])+"
_STAR_RUN = re.compile(rf"(?:{_STAR_RX}{_PIECE_RX}){{2,}}(?={_STAR_RX})")
_STAR_PIECE = re.compile(rf"{_STAR_RX}({_PIECE_RX})")


def _defuse(src: str) -> str:
    """pathspec's regex `src` with each run of three `[^/]*` or more in one part of the
    path made linear (see above); other regexes unchanged."""
    if src.count("[^/]*") < 3:
        return src
    return _STAR_RUN.sub(lambda m: _STAR_PIECE.sub(lambda p: f"(?>[^/]*?{p.group(1)})", m.group()), src)


# Past this many `*` left as they are (in a run `_defuse` cannot read: a negated class
# between them), a line is skipped, as git skips a malformed one: its regex could run for
# hours on one name (README, "Ignore files").
MAX_FREE_STARS = 3
# ... and past this many `**` in one line (`**/a/**/a/**/a/**/b`: each may stand for any
# run of folders, and the regex tries every way to cut a deep path among them)
MAX_GLOBSTARS = 3


def _too_slow(line: str, src: str) -> bool:
    """Whether the rule's regex `src` keeps more than MAX_FREE_STARS `*` in one part of a
    path, or the line more than MAX_GLOBSTARS `**`."""
    if line.count("**") > MAX_GLOBSTARS:
        return True
    if src.count("[^/]*") <= MAX_FREE_STARS:
        return False
    marked = src.replace("[^/]*?", "").replace("[^/]*", "\0").replace("[^/]", "")
    return any(part.count("\0") > MAX_FREE_STARS for part in marked.split("/"))


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
    if line.endswith("/**/"):  # the folders below `a` (`a/**/`), not `a`: pathspec's regex
        line += "*/"  # matched `a` itself, where git and rg do not; `a/**/*/` says the same
    # a literal path: anchored by its leading '/' or by a '/' inside it (`src/gen/x.c`, as
    # git reads it), a folder only with a '/' at its end; a 30,000-line .ignore of such
    # paths took 1.5 s of pathspec and regex compiling a walk
    dirs = line.endswith("/") and not line.endswith("\\/")
    body = line[:-1] if dirs else line
    if not body.startswith("/") and "/" in body:
        body = "/" + body
    if _ANCHORED_LITERAL.fullmatch(body):
        parts = _UNESCAPE.sub(r"\1", body[1:]).split("/")
        if "." not in parts and ".." not in parts:
            return (_exact("/".join(parts), dirs), True, True)
    # pathspec costs ~10 ms to import: only trees with ignore rules to interpret need it
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # noqa: PLC0415

    src, include = GitIgnoreSpecPattern.pattern_to_regex(line)
    if include is None or src is None:
        return None
    src = _defuse(src)
    if _too_slow(line, src):
        return None
    if "(?P<ps_d>" in src:
        return (_Lazy(f"(?:{src})\\Z"), bool(include), True)
    return (_Lazy(src), bool(include), False)


class _Lazy:
    """A rule's regex, compiled on its first use: a walk tests most rules only through
    the combined regexes of `_matcher`, built from `pattern`, so compiling each line
    alone as well cost as much again (1090 lines of the kernel's 306 .gitignore files)."""

    __slots__ = ("pattern", "_search")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._search = None

    def __call__(self, s: str):
        if self._search is None:
            try:
                self._search = re.compile(self.pattern).search
            except re.error:  # a malformed line is skipped, as git skips it
                self._search = lambda _s: None
        return self._search(s)


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


def _read_rules(path: str, rel: str, warn: Callable[[str], None], root: str | None = None) -> Rules:
    """An ignore file's rules; one inside the tree (`root`) that is a link leading out of
    it is skipped with a warning, as a link out is never followed (an outside file's lines
    applied as rules would tell what it holds)."""
    if root is not None and leads_outside(path, root):
        warn(f"{rel}: a symbolic link leading outside the tree; skipped")
        return ()
    try:  # a regular file under 1 MB only: a link to /dev/zero must not hang a walk
        data = read_control(path)
    except OSError as e:  # (not a `read_error`: an ignore file unread leaves more searched, as rg counts it)
        warn(f"{rel}: {e.strerror or e}; its rules are not applied")
        return ()
    if data is None:
        return ()
    # a UTF-8 byte order mark (a Windows editor's) is not the first pattern's: git skips it
    return _compile(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace"))


# git's global excludes file, as git and rg find it: `core.excludesFile` of the user's git
# config ($GIT_CONFIG_GLOBAL when set, as git; else ~/.gitconfig, then
# $XDG_CONFIG_HOME/git/config), else $XDG_CONFIG_HOME/git/ignore ($XDG_CONFIG_HOME:
# ~/.config). rg reads the same (not the system's /etc/gitconfig); a user who keeps
# `.env` or `*.swp` out of every repository there keeps them out of ov's answers too.
_SECTION_RE = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*"\s*)?\]')
_SETTING_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*?)\s*$")


def _git_value(raw: str) -> str:
    """A git config value: quotes removed, `\\` and `\"` read, a `#` or `;` comment
    outside quotes dropped."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def _home_path(v: str, home: str | None) -> str | None:
    """A git config path with `~/` read as the home folder (None: no home to read it by)."""
    if v == "~" or v.startswith("~/"):
        return None if home is None else home + v[1:]
    return v


def _excludes_setting(path: str, home: str | None, read: list[str]) -> str | None:
    """`core.excludesFile` as one git config file sets it, with the files its `[include]`
    sections name read where they stand (the last setting wins, as in git; `includeIf`
    is not read), or None. `read` gathers the files read (at most 10)."""
    if path in read or len(read) >= 10:
        return None
    read.append(path)
    try:
        data = read_control(path)
    except OSError:
        return None
    if data is None:
        return None
    section, value = "", None
    for line in data.decode("utf-8", "replace").splitlines():
        m = _SECTION_RE.match(line)
        if m:
            section = m.group(1).lower() if '"' not in line.split("]", 1)[0] else ""
            line = line[m.end():]
        m = _SETTING_RE.match(line)
        if m is None or section not in ("core", "include"):
            continue
        key, got = m.group(1).lower(), _git_value(m.group(2))
        if section == "core" and key == "excludesfile":
            value = got
        elif section == "include" and key == "path" and got:
            inc = _home_path(got, home)
            if inc is not None:  # a relative path is the including file's neighbour
                v = _excludes_setting(os.path.join(os.path.dirname(path), inc), home, read)
                value = v if v is not None else value
    return value


def global_excludes() -> tuple[str | None, tuple[str, ...]]:
    """(git's global excludes file, or None; the config files read to find it, which the
    listing cache watches)."""
    env = os.environ
    home = env.get("HOME") or None
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    if env.get("GIT_CONFIG_GLOBAL"):
        configs = [env["GIT_CONFIG_GLOBAL"]]
    else:
        configs = [c for c in (home and os.path.join(home, ".gitconfig"),
                               xdg and os.path.join(xdg, "git", "config")) if c]
    read: list[str] = []
    for c in configs:
        v = _excludes_setting(c, home, read)
        if v is not None:
            return _home_path(v, home) or None, tuple(read)
    return (os.path.join(xdg, "git", "ignore") if xdg else None), tuple(read)


def _global_level(depth: int, base: str, top: str, warn: Callable[[str], None]) -> list[Level]:
    """The level of git's global excludes file for the work tree whose top is `top` (a
    relative `core.excludesFile` is read from there, as git reads it)."""
    path = global_excludes()[0]
    if path is None:
        return []
    path = os.path.join(top, path)
    try:  # `excludesFile = /dev/null`, a common way to have none, is no file to warn of
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []
    except OSError:
        return []
    rules = _read_rules(path, path, warn)
    return [(_GLOBAL, depth, base, rules)] if rules else []


def _root_levels(root: str, opts: WalkOptions, warn: Callable[[str], None]) -> tuple[Level, ...]:
    levels: list[Level] = []
    if opts.extra_ignores:
        rules = _compile("\n".join(opts.extra_ignores))
        if rules:
            levels.append((_EXTRA, 0, "", rules))
    if not opts.no_ignore:
        top = git_top_above(root)
        if _in_work_tree(root, top):
            levels.append((_GIT, 0, "", ()))
        exclude_at = top if top is not None else root
        rules = _read_rules(git_exclude(exclude_at), ".git/info/exclude", warn)
        if rules:
            levels.append((_EXCLUDE, 0, "" if top is None else _ABOVE + _down(top, root), rules))
        if _in_work_tree(root, top):
            levels += _global_level(0, "" if top is None else _ABOVE + _down(top, root), top or root, warn)
        for folder, depth, files in _folders_above(root, top):
            for fname, kind in files:
                rules = _read_rules(os.path.join(folder, fname), os.path.join(folder, fname), warn)
                if rules:
                    levels.append((kind, depth, _ABOVE + _down(folder, root), rules))
        levels.sort(key=lambda lv: (lv[0], -lv[1]))
    return tuple(levels)


# A root inside a git work tree (an index made in a subfolder of a repository: a first
# `ov search` run there makes one) keeps the ignore files of the folders above it, up to
# the work tree's top, and the top's .git/info/exclude, as git, rg and fd apply them: with
# the root's own alone, grep and glob listed git-ignored files and the index held them.
# Above the work tree's top (or above a root in none), only `.ignore`, `.rgignore` and `.ovignore`
# apply, as rg reads `.ignore` in every parent folder and `.gitignore` only inside git.
# Such a level's base is _ABOVE and the path from its folder down to the root.
_ABOVE = "\0"


def git_top_above(root: str) -> str | None:
    """The top of the git work tree `root` lies inside, when it is above `root` (a folder
    holding `.git`); None when `root` is the top or in no work tree."""
    if os.path.exists(os.path.join(root, ".git")):
        return None
    d = os.path.dirname(root)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            # another user's `.git` (git refuses such a repository): no work tree of this
            # tree's, so none of its ignore files applies (ov.paths.search_root)
            return None if foreign(os.path.join(d, ".git")) else d
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def _in_work_tree(root: str, top: str | None) -> bool:
    """Whether `root` lies in a git work tree: it holds `.git`, or `top` (`git_top_above`) does."""
    return top is not None or os.path.lexists(os.path.join(root, ".git"))


def gitignore_unread(root: str) -> bool:
    """Whether `root` holds a `.gitignore` that no walk of it reads: `root` lies in no git
    work tree (`_GIT`). A first index says so, as it may then hold what a project's
    `.gitignore` names (`node_modules/` in a downloaded copy)."""
    return os.path.isfile(os.path.join(root, ".gitignore")) and not _in_work_tree(root, git_top_above(root))


_OUTSIDE_GIT = tuple((n, k) for n, k in _PER_FOLDER if n != ".gitignore")


def _folders_above(root: str, top: str | None) -> list[tuple[str, int, tuple]]:
    """(folder, depth, ignore files read there) for every folder above `root`, its parent
    first; depths below 0 (a deeper ignore file outranks a shallower one, as inside the
    tree). Up to the work tree's `top` every ignore file; above it `.ignore`, `.rgignore`, `.ovignore`."""
    out = []
    d, depth, inside = os.path.dirname(root), -1, top is not None
    while True:
        out.append((d, depth, _PER_FOLDER if inside else _OUTSIDE_GIT))
        if d == top:
            inside = False
        up = os.path.dirname(d)
        if up == d:
            return out
        d, depth = up, depth - 1


def _down(folder: str, root: str) -> str:
    return os.path.relpath(root, folder).replace(os.sep, "/")


def parent_ignore_files(root: str, opts: WalkOptions) -> list[str]:
    """The ignore files above `root` that its walk reads (the listing cache watches them)."""
    if opts.no_ignore:
        return []
    top = git_top_above(root)
    files = [git_exclude(top)] if top is not None else []
    path, configs = global_excludes()
    files += [*configs, os.path.join(top or root, path)] if path is not None else configs
    for folder, _, names in _folders_above(root, top):
        files += [os.path.join(folder, fname) for fname, _ in names]
    return files


def _add_folder(levels: tuple[Level, ...], folder: str, rel: str, depth: int,
                names: frozenset[str] | set[str] | None, warn: Callable[[str], None]
                ) -> tuple[Level, ...]:
    """`levels` plus the ignore files of `folder` (names None: probe for them). A folder
    holding `.git` is a repository of its own: as in git and rg, the `.gitignore` files
    and `.git/info/exclude` of the folders above it stop there (`.ignore`, `.ovignore` and
    the extra rules go on). A `.gitignore` outside every work tree is not read (`_GIT`)."""
    new = list(levels)
    root = folder[:len(folder) - len(rel) - 1] if rel else folder  # the links' bound
    if rel and (".git" in names if names is not None else os.path.lexists(os.path.join(folder, ".git"))):
        new = [lv for lv in new if lv[0] not in (_GITIGNORE, _EXCLUDE, _GLOBAL)]
        new.append((_GIT, depth, rel, ()))
        new += _global_level(depth, rel, folder, warn)
    in_git = any(lv[0] == _GIT for lv in new)
    for fname, kind in _PER_FOLDER:
        if (names is not None and fname not in names) or (kind == _GITIGNORE and not in_git):
            continue
        rules = _read_rules(os.path.join(folder, fname), f"{rel}/{fname}" if rel else fname, warn, root)
        if rules:
            new.append((kind, depth, rel, rules))
    if rel and (names is None or ".git" in names):  # a repository inside the tree (the root's
        # own, or its work tree's top's, is read by _root_levels)
        # (one a `.git` file leads out of the tree to is not read: a copied tree's `.git`
        # file may name any folder)
        excl = git_exclude(folder)
        rules = () if not excl.startswith(os.path.join(folder, ".git") + os.sep) and leads_outside(
            excl, root, folder_inside=False) else _read_rules(excl, f"{rel}/.git/info/exclude", warn, root)
        if rules:
            new.append((_EXCLUDE, depth, rel, rules))
    if new == list(levels):
        return levels
    new.sort(key=lambda lv: (lv[0], -lv[1]))
    return tuple(new)


def _checks(levels: tuple[Level, ...], rel: str) -> tuple[tuple[str, Matcher], ...]:
    """For the entries of folder `rel`: each level's path prefix and matcher, in order.

    A rule naming one path exactly (`/a/b`) can decide only for the entries of that
    path's folder; a level holding only such rules, none for this folder, is left out,
    so most folders test no rule at all.
    """
    out = []
    for _, _, base, rules in levels:
        if base == rel:
            prefix = ""
        elif not base:
            prefix = rel + "/"
        elif base[0] == _ABOVE:  # a folder above the root: the path from there down
            prefix = base[1:] + "/" + (rel + "/" if rel else "")
        else:
            prefix = rel[len(base) + 1:] + "/"
        if any(_may_decide(r, prefix) for r in rules):
            m = _matcher(rules)
            out.append((prefix, _narrow(m, prefix) if m is not None else [rules]))
    return tuple(out)


def _may_decide(rule: Rule, prefix: str) -> bool:
    exact = getattr(rule[0], "exact", None)
    return exact is None or (exact.startswith(prefix) and "/" not in exact[len(prefix):])


# A level's rules as at most four regexes, so that an entry costs one regex call per
# level rather than one per rule (the kernel's root .gitignore has ~100 lines: 2.4M
# calls for a walk of drivers/, 4.6 of its 9.5 s). A rule tested against the entry's
# name alone (pathspec's `^(?:.+/)?BODY...` with no '/' in BODY: `*.o`, `.*`, `foo/`)
# goes into the name regexes, any other into the path regexes; each is an alternation of
# the rules, last line first, each in its own group, matched at the start of the tested
# string, so the first alternative that matches is the line that decides (Python's
# alternation is ordered) and `lastindex` names it. Files are tested as "path", folders
# as "path/"; a rule pathspec tests against the bare path (`foo/**` -> `^foo/`, `*` ->
# `.`) gets `(?=[\s\S])` in the folder regex, so it cannot use that trailing slash.
# Plain names, `*LITERAL` names and anchored literal paths (`/defconfig`) skip the
# regexes: a dict lookup each (most lines of a real .gitignore are of these kinds).
# Matcher: for files and for folders (exact names, extensions, other suffixes, their
# lengths, name regex, path regex), then each rule's verdict, then the literal paths
# (for files, for folders).
Matcher = tuple
_GROUPS = re.compile(r"\(\?P<\w+>")
_NAME_HEAD = "(?:^(?:.+/)?"  # a slash rule (see _compile_line) that may start at any depth


def _rule_source(rule: Rule) -> tuple[str, bool] | None:
    """(regex tested at the start of "path" or "path/", whether the rule tests the bare
    path), or None for a shape the combined regexes cannot hold."""
    search, _, slash = rule
    exact = getattr(search, "exact", None)
    if exact is not None:
        return "^" + re.escape(exact) + ("/\\Z" if search.dirs else "/?\\Z"), False
    if not isinstance(search, _Lazy):
        return None
    src = _GROUPS.sub("(?:", search.pattern)
    if slash:  # "(?:^...)\Z" (see _compile_line), tested with `match`: a rule pathspec
        # leaves unanchored (`*/` is "(?P<ps_d>/)": any folder) may start anywhere, as its
        # own `search` reads it; `!*/` of an allow-list had re-included no folder
        return (src if src.startswith("(?:^") else "(?:^[\\s\\S]*?" + src + ")"), False
    if src == "." or src.startswith("^"):
        return src, True
    return None


def _name_body(src: str) -> str | None:
    """The regex of a slash rule that tests only the last path component, rooted at that
    component's start ("path" -> "name", "path/" -> "name/"), or None."""
    if not src.startswith(_NAME_HEAD) or not src.endswith(")\\Z"):
        return None
    body = src[len(_NAME_HEAD):-3]
    # the only slash such a body may hold is the folder mark at its end
    rest = body.removesuffix("(?:(?:/)|$)").removesuffix("(?:/)").replace("[^/]", "")
    if "/" in rest:
        return None
    return body + "\\Z"


_LITERAL = re.compile(r"(?:\\[^0-9A-Za-z]|[^\\.^$*+?{}\[\]|()])*")
_UNESCAPE_RX = re.compile(r"\\(.)")
_BOTH, _DIR_ONLY = "(?:(?:/)|$)", "(?:/)"  # the folder marks of a name rule's end


def _name_parts(body: str) -> tuple[str, str, bool] | None:
    """("exact" | "suffix", the literal, dirs only) for a name rule that is a plain name
    (`Makefile.bak`) or a star and a literal (`*.o`, `*~`), None for any other."""
    for mark, dirs in ((_BOTH, False), (_DIR_ONLY, True)):
        if body.endswith(mark):
            rest = body[:-len(mark)]
            break
    else:
        return None
    kind = "exact"
    if rest.startswith("[^/]*"):
        kind, rest = "suffix", rest[5:]
    if not rest or not _LITERAL.fullmatch(rest):
        return None
    return kind, _UNESCAPE_RX.sub(r"\1", rest), dirs


@lru_cache(maxsize=1024)
def _matcher(rules: Rules) -> Matcher | None:
    """The combined form of one level's rules (see above); None when a rule's regex has a
    shape it cannot hold, and the level is then asked rule by rule."""
    # (exact names, suffixes) for files and for folders: literal -> first rule index
    names: tuple[dict[str, int], dict[str, int]] = ({}, {})
    suffixes: tuple[dict[str, int], dict[str, int]] = ({}, {})
    # `/a/b` lines (anchored literals), for files and for folders: path -> first index
    paths: tuple[dict[str, int], dict[str, int]] = ({}, {})
    alts: tuple[list[tuple[str, int]], ...] = ([], [], [], [])  # name f/d, path f/d
    for i, rule in enumerate(rules):
        exact = getattr(rule[0], "exact", None)
        if exact is not None:
            for k in ((1,) if rule[0].dirs else (0, 1)):
                paths[k].setdefault(exact, i)
            continue
        got = _rule_source(rule)
        if got is None:
            return None
        src, bare = got
        name = None if bare else _name_body(src)
        if name is not None:
            plain = _name_parts(name[:-2])
            if plain is not None:
                kind, lit, dirs = plain
                table = names if kind == "exact" else suffixes
                for k in ((1,) if dirs else (0, 1)):
                    table[k].setdefault(lit, i)
                continue
            if not name.endswith(_DIR_END):  # a folder-only rule never matches a file
                alts[0].append((name, i))
            alts[1].append((name, i))
        elif bare:
            alts[2].append((src, i))
            alts[3].append((f"(?:{src})(?=[\\s\\S])", i))
        else:
            if not src.endswith(_DIR_END_PATH):
                alts[2].append((src, i))
            alts[3].append((src, i))
    regexes: list = []
    for group in alts:
        if not group:
            regexes.append(None)
            continue
        try:
            with warnings.catch_warnings():  # `[[]` of an ignore line: a FutureWarning on stderr
                warnings.simplefilter("ignore", FutureWarning)  # ("possible nested set"), its meaning kept
                rx = re.compile("|".join(f"({src})" for src, _ in group))
        except re.error:
            return None
        if rx.groups != len(group):
            return None  # a rule with a group of its own would shift `lastindex`
        regexes.append((rx.match, tuple(i for _, i in group)))
    per_kind = []
    for k in (0, 1):
        # ".o", ".ko": the name's extension, one lookup; "~", ".mod.c": by length, after
        # one endswith() of them all (most names end in none)
        exts = {x: i for x, i in suffixes[k].items() if x.rfind(".") == 0}
        rest = {x: i for x, i in suffixes[k].items() if x not in exts}
        lens = tuple(sorted({len(x) for x in rest}))
        per_kind.append((names[k], exts, rest, lens, tuple(rest), regexes[k], regexes[2 + k]))
    heads = (tuple({_literal_head(src) for src, _ in alts[2]}),
             tuple({_literal_head(src) for src, _ in alts[3]}))
    return (per_kind[0], per_kind[1], tuple(r[1] for r in rules), paths, heads)


_DIR_END, _DIR_END_PATH = "(?:/)\\Z", "(?:/))\\Z"  # a name / path rule for folders only
_HEAD_UNIT = re.compile(r"\\[^0-9A-Za-z]|[^\\.^$*+?{}\[\]|()]")
# A regex that cannot match a '/': `[^/]`, positive classes without '/', escaped and plain
# characters, each with a quantifier or none.
_ONE_PART = re.compile(r"(?:(?:\[\^/\]|\[[^\^\]/\\][^\]/\\]*\]|\\[^0-9A-Za-z/]"
                       r"|[^\\.^$\[\](){}|*+?/])(?:[*+?]|\{\d+(?:,\d*)?\})?)*")
_PATH_ENDS = ("(?:(?:/)|$))\\Z", "(?:/))\\Z")
# The head of an anchored rule that matches only the names of its own folder (the
# kernel's root `/*.spec`): no prefix but that folder's own ("") starts with it, and no
# path starts with a NUL.
_OWN_FOLDER = "\0"


def _literal_head(src: str) -> str:
    """The text every string a path rule matches starts with ("arch/" for
    `(?:^arch/[^/]+/include/generated(?:/))\\Z`); "" when the rule is not anchored;
    `_OWN_FOLDER` when it is anchored and cannot match a '/' (`/*.spec`)."""
    while src.startswith("(?:"):
        src = src[3:]
    if not src.startswith("^"):
        return ""
    units, pos = [], 1
    while (m := _HEAD_UNIT.match(src, pos)) is not None:
        units.append(m.group()[-1])
        pos = m.end()
    if pos < len(src) and src[pos] in "?*{" and units:
        units.pop()  # `^ab?`: the last character may be absent
    if not units:
        body = src[1:]
        for end in _PATH_ENDS:
            if body.endswith(end) and _ONE_PART.fullmatch(body[:-len(end)]):
                return _OWN_FOLDER
    return "".join(units)


def _narrow(matcher: Matcher, prefix: str) -> Matcher:
    """`matcher` for the entries of one folder (tested as `prefix` + name): a path regex
    none of whose rules can start with `prefix` is left out (the kernel's root rules
    `/arch/*/include/generated/`, `/include/config/`... outside those folders), so most
    folders test a name against the path rules of no level."""
    heads = matcher[4]
    drop = [not any(h.startswith(prefix) or prefix.startswith(h) for h in hs) for hs in heads]
    if not (drop[0] and matcher[0][6] is not None) and not (drop[1] and matcher[1][6] is not None):
        return matcher
    kinds = tuple(m[:6] + (None,) if d else m for m, d in zip(matcher[:2], drop))
    return kinds + matcher[2:]


_NONE = 1 << 30


def _decide(checks: tuple[tuple[str, Matcher], ...], name: str, is_dir: bool) -> bool | None:
    """True: ignored; False: re-included by a `!` line; None: no rule says anything."""
    k = 1 if is_dir else 0
    n = name + "/" if is_dir else name
    for prefix, matcher in checks:
        if type(matcher) is not tuple:  # Rules whose regexes would not combine
            p = prefix + name
            ps = p + "/" if is_dir else p
            for search, ignores, slash in matcher[0]:
                if search(ps if slash else p) is not None:
                    return ignores
            continue
        exact, exts, suffixes, lens, ends, nm, pm = matcher[k]
        best = exact.get(name, _NONE)
        if exts:
            dot = name.rfind(".")
            if dot >= 0:
                i = exts.get(name[dot:])
                if i is not None and i < best:
                    best = i
        if lens and name.endswith(ends):
            size = len(name)
            for ln in lens:
                if ln > size:
                    break
                i = suffixes.get(name[-ln:])
                if i is not None and i < best:
                    best = i
        if nm is not None:
            m = nm[0](n)
            if m is not None:
                i = nm[1][m.lastindex - 1]
                if i < best:
                    best = i
        if pm is not None:
            m = pm[0](prefix + n)
            if m is not None:
                i = pm[1][m.lastindex - 1]
                if i < best:
                    best = i
        if matcher[3][k]:
            i = matcher[3][k].get(prefix + name)
            if i is not None and i < best:
                best = i
        if best != _NONE:
            return matcher[2][best]
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
    out of the root), "depth" (a folder `max_depth` left unentered). With
    `yield_symlinks` (and not `follow`), symlinks are yielded themselves (`is_symlink=True`, lstat's size and time) instead of being skipped.
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
    keep: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, str]]:
    """(path relative to `root`, absolute path) of each file `walk` would yield, for
    callers that only open them: no stat (without `max_filesize`), no record per file."""
    return _walk(root, opts, start, on_warning, on_skip,  # type: ignore[return-value]
                 False, False, True, keep)


def _walk(root: Path, opts: WalkOptions, start: Path | None,
          on_warning: Callable[[str], None] | None, on_skip: Callable[[str, str], None] | None,
          yield_symlinks: bool, stat_files: bool, pairs: bool,
          keep: Callable[[str], bool] | None
          ) -> Iterator[FileEntry | tuple[str, str]]:
    """`walk` and `walk_paths`: a loop over a stack of open folders whose per-entry work is
    inline; what runs once a folder, or for a symlink only, is in functions of its own."""
    warn, skip = on_warning or _noop, on_skip or _noop
    begun = _walk_start(root, opts, start, warn, skip, pairs, keep)
    if len(begun) < 4:  # nothing, or the one file named as the start
        yield from begun
        return
    first, real_root, n_parts, on_path = begun
    hidden_ok, follow, max_size, max_depth = opts.hidden, opts.follow, opts.max_filesize, opts.max_depth
    override = opts.override
    lazy = not stat_files and max_size is None
    stack = [first]
    while stack:
        it, prefix, depth, lv, checks, _ = stack[-1]
        walk_depth = depth - n_parts + 1  # 1 for the start folder
        for e in it:
            name = e.name
            if name in ALWAYS_SKIPPED:
                continue
            if not checks and name[0] == "." and not hidden_ok and override is None:
                continue  # no rule could re-include it; spares the stat of a link
            rel = prefix + name
            try:
                is_link = e.is_symlink()
                is_dir = not is_link and e.is_dir(follow_symlinks=False)
            except OSError as err:
                warn(f"{rel}: {err.strerror or err}")
                continue
            out = False  # a link `follow` would take out of the root: said once the rules keep it
            if is_link:
                kind = _link_kind(e, rel, follow, yield_symlinks, real_root, warn, skip)
                if kind is None:
                    continue
                st, is_dir, out = kind
            verdict = _decide(checks, name, is_dir) if checks else None
            if (verdict or (name[0] == "." and not hidden_ok and verdict is not False)) and (
                    override is None or not override(rel)):
                continue
            if out and (is_dir or keep is None or keep(rel)):
                skip(rel, "outside_root")
                warn(f"{rel}: {LINK_OUT}")  # asked to follow links: an answer must not read as all of them
                continue
            if is_dir:
                if max_depth is not None and walk_depth >= max_depth:
                    skip(rel, "depth")  # a cut the caller reports (no silent limits)
                    continue
                frame = _descend(e, rel, depth, lv, st if is_link else None, follow, on_path,
                                 opts.no_ignore, warn)
                if frame is not None:
                    stack.append(frame)
                    break
                continue
            if keep is not None and not keep(rel):
                continue
            if is_link:
                entry = _link_file(e, rel, st, pairs, max_size, warn, skip)
                if entry is not None:
                    yield entry
                continue
            if not e.is_file(follow_symlinks=False):
                continue  # fifos, sockets, devices
            if lazy:
                yield (rel, e.path) if pairs else FileEntry(rel, e.path, -1, -1, 0, False)
                continue
            entry = _stat_file(e, rel, max_size, pairs, warn, skip)
            if entry is not None:
                yield entry
        else:
            fid = stack.pop()[5]
            if fid is not None:
                on_path.discard(fid)


# A Jupyter notebook is held to the size cap by what it says, not by its outputs' encoded
# data: a notebook of a few plots passes 1 MiB (one of 1.7 MB held 11 KB of cell sources)
# and had gone from every ranked answer. The walk lets one through up to this many times
# the cap; the indexer, once it has read it, weighs it without its data (`notebook_weight`).
NOTEBOOK_CAP_FACTOR = 16


def file_cap(rel: str, cap: int | None) -> int | None:
    """The most bytes the walk and the indexer read of `rel` under the size cap `cap`."""
    return cap * NOTEBOOK_CAP_FACTOR if cap is not None and is_notebook(rel) else cap


def over_cap(rel: str, size: int, cap: int) -> bool:
    return size > file_cap(rel, cap)  # type: ignore[operator]


def _stat_file(e, rel: str, max_size: int | None, pairs: bool, warn, skip):
    """A regular file's entry with its stat, or None (unreadable, over the size cap)."""
    try:
        s = e.stat(follow_symlinks=False)
    except OSError as err:
        warn(f"{rel}: {err.strerror or err}")
        skip(rel, "unreadable")
        return None
    if max_size is not None and s.st_size > max_size and over_cap(rel, s.st_size, max_size):
        skip(rel, "size")
        return None
    return (rel, e.path) if pairs else FileEntry(rel, e.path, s.st_size, s.st_mtime_ns, s.st_mode, False,
                                                 s.st_ctime_ns, s.st_ino)


# `_link_target`'s answer for a link yielded as itself (yield_symlinks, no follow)
_LINK_ITSELF = os.stat_result((0,) * 10)


def _link_kind(e, rel: str, follow: bool, yield_symlinks: bool, real_root: str, warn, skip):
    """(`_link_target`'s stat, is a folder, leads out of the root) of a link the walk met;
    None to leave it out (not followed, broken, or the system could not tell)."""
    try:
        st = _link_target(e, rel, follow, yield_symlinks, real_root, warn, skip)
    except OSError as err:
        warn(f"{rel}: {err.strerror or err}")
        return None
    if st is None:
        return None
    out = isinstance(st, _LinkOut)
    if out:
        st = st.st
    return st, st is not None and st is not _LINK_ITSELF and stat.S_ISDIR(st.st_mode), out


class _LinkOut(NamedTuple):
    """A link `follow` met that leads out of the root, with its target's stat (None: none
    to read): never followed, and said (`LINK_OUT`) unless the rules leave it out anyway
    (a `venv` link in `.gitignore`, a `-t py` filter: rg never looks at those either)."""

    st: os.stat_result | None


def _link_target(e, rel: str, follow: bool, yield_symlinks: bool, real_root: str, warn, skip):
    """What a symlink met by the walk stands for: `_LINK_ITSELF` (not followed, but
    `yield_symlinks`: the link is yielded itself), its target's stat (followed), a
    `_LinkOut`, or None to leave it out (not followed, a broken one). OSError passes to
    the caller."""
    if not follow:
        return _LINK_ITSELF if yield_symlinks else None
    if not _under(os.path.realpath(e.path), real_root):
        try:  # never followed; its kind only, for the ignore rules and filters that may leave it out
            return _LinkOut(os.stat(e.path))
        except OSError:
            return _LinkOut(None)
    try:
        return os.stat(e.path)
    except FileNotFoundError:
        warn(f"{rel}: {BROKEN_LINK}")
        return None


def _link_file(e, rel: str, st, pairs: bool, max_size: int | None, warn, skip):
    """The entry of a symlink to a file: the link itself (`_LINK_ITSELF`: lstat's size and
    times), or its target when followed (a regular file under the size cap); None for
    anything else."""
    if st is _LINK_ITSELF:
        try:
            s = e.stat(follow_symlinks=False)
        except OSError as err:
            warn(f"{rel}: {err.strerror or err}")
            return None
        return FileEntry(rel, e.path, s.st_size, s.st_mtime_ns, s.st_mode, True)
    if not stat.S_ISREG(st.st_mode):
        return None
    if max_size is not None and st.st_size > max_size and over_cap(rel, st.st_size, max_size):
        skip(rel, "size")
        return None
    return (rel, e.path) if pairs else FileEntry(rel, e.path, st.st_size, st.st_mtime_ns,
                                                 st.st_mode, True, st.st_ctime_ns, st.st_ino)


def _descend(e, rel: str, depth: int, lv, st, follow: bool, on_path: set, no_ignore: bool, warn):
    """The frame of a folder the walk enters, or None (unreadable, or a link loop)."""
    fid = None
    if follow:
        try:
            s = st if st is not None else e.stat(follow_symlinks=False)
        except OSError as err:
            warn(f"{rel}: {err.strerror or err}")
            return None
        fid = (s.st_dev, s.st_ino)
        if fid in on_path:
            warn(f"{rel}: {LOOP}")
            return None
    frame = _open_folder(e.path, rel, depth + 1, lv, fid, no_ignore, warn)
    if frame is not None and fid is not None:
        on_path.add(fid)
    return frame


def _open_folder(path: str, rel: str, depth: int, lv, fid: tuple[int, int] | None,
                 no_ignore: bool, warn):
    """A frame of the walk: (entries iterator, folder rel path + "/", depth, ignore levels,
    checks, folder id); None when the folder cannot be listed."""
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


def _walk_start(root: Path, opts: WalkOptions, start: Path | None, warn, skip, pairs: bool,
                keep):
    """Where a walk begins: () (nothing to walk), (the one entry,) when `start` is a
    file (named explicitly: yielded whatever the ignore rules say), else (the start
    folder's frame, the real root, the start's depth below the root, the ids of the
    folders on the path when links are followed)."""
    root_abs = os.path.abspath(os.fspath(root))
    base = root_abs if start is None else os.path.abspath(os.fspath(start))
    rel0 = os.path.relpath(base, root_abs)
    if rel0 == ".":
        rel0 = ""
    elif rel0 == ".." or rel0.startswith(".." + os.sep) or os.path.isabs(rel0):
        raise OvError("invalid_path", f"{start} is outside the root {root_abs}", field="path")
    rel0 = rel0.replace(os.sep, "/")
    real_root = os.path.realpath(root_abs)
    if start is not None and not _under(os.path.realpath(base), real_root):
        skip(rel0, "outside_root")  # a named path that is a link leading out of the root
        return ()
    try:
        st0 = os.stat(base)
    except OSError as e:
        warn(f"{rel0 or '.'}: {e.strerror or e}")
        return ()
    if not stat.S_ISDIR(st0.st_mode):
        if not stat.S_ISREG(st0.st_mode) or (keep is not None and not keep(rel0)):
            return ()
        if opts.max_filesize is not None and over_cap(rel0, st0.st_size, opts.max_filesize):
            skip(rel0, "size")
            return ()
        return ((rel0, base) if pairs else FileEntry(
            rel0, base, st0.st_size, st0.st_mtime_ns, st0.st_mode, os.path.islink(base),
            st0.st_ctime_ns, st0.st_ino),)
    if opts.max_depth is not None and opts.max_depth < 1:
        skip(rel0 or ".", "depth")  # the start folder itself is left unentered: said, not silent
        return ()
    # The ignore files of the root and of each folder above `start` (the start
    # folder's own are read when it is scanned).
    parts = rel0.split("/") if rel0 else []
    levels = _root_levels(root_abs, opts, warn)
    if not opts.no_ignore:
        for k in range(len(parts)):
            folder = os.path.join(root_abs, *parts[:k])
            levels = _add_folder(levels, folder, "/".join(parts[:k]), k, None, warn)
    # Loop detection: the (device, inode) of every folder on the current path.
    on_path: set[tuple[int, int]] = set()
    if opts.follow:
        for k in range(len(parts) + 1):
            try:
                s = os.stat(os.path.join(root_abs, *parts[:k]))
            except OSError:
                continue
            on_path.add((s.st_dev, s.st_ino))
    first = _open_folder(base, rel0, len(parts), levels, None, opts.no_ignore, warn)
    return () if first is None else (first, real_root, len(parts), on_path)


def left_out_by_rules(root: Path, rel: str) -> bool:
    """Whether the tree's ignore rules (hidden names, .gitignore, .ovignore, the config's
    `ignore`) leave `rel` out: such a file is not read whole for `ov read` (`.env`, a
    secret listed in .ovignore, through `ov mcp`), and an index above such a folder does
    not answer for it (ov.paths `find_index`). A broken config raises, as everywhere."""
    from ov.config import load_config  # noqa: PLC0415

    return is_ignored(root, rel, load_config(root).walk_options())


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


# -- the listing cache ---------------------------------------------------------------------
# Git's untracked cache, for a tree with an index: each walked folder's mtime and ctime and
# what the walk kept of it (names and kinds, after the ignore and hidden rules), and the
# state of every ignore file read. A later walk with the same options lstats each cached
# folder and scans again only those whose mtime or ctime moved (a name added, removed or
# renamed moves both; `rsync -a`, `cp -a` and `touch -r` put the mtime back but move the
# ctime, as git's own check reads it). A cached folder that is no longer a folder (a link
# put in its place: never followed) makes the listing stale;
# a changed ignore file, or a folder whose set of ignore files changed, makes the whole
# listing stale and the tree is walked afresh. A folder modified within RACY_NS of the
# listing's making is never trusted (its mtime could hide a second change in the same
# tick). File contents are not the cache's business: callers that need them stat files.
# The kernel tree (78,255 files, 5,106 folders): the walk cost ~2 s at load ~12, the
# cached listing ~0.2 s (see docs/BENCHMARKS.md).
CACHE_VERSION = 12  # 2: a folder's (mtime, ctime), ignore files' ctime; 3, 4: the folders above; 5: inner repositories' exclude; 7: no .gitignore across an inner repository;
# 8: .rgignore; 9: the names each folder left out (grep's -g overrides); 10: .gitignore only in git;
# 11: an ignore file's byte order mark skipped; 12: git's global excludes file
RACY_NS = 2_000_000_000
_FILE, _DIR, _LINK = 0, 1, 2
# a listing with more changed folders than this is walked afresh (and written anew)
MAX_RESCANS = 256


class _Stale(Exception):
    """The listing cannot be trusted: the tree is walked afresh."""


def cache_name(opts: WalkOptions) -> str:
    """The listing's file name for these walk options (one listing per option set), and
    for the global excludes file in force (another HOME or GIT_CONFIG_GLOBAL, an editor's
    server beside a shell, read a listing made under the other's rules)."""
    import zlib  # noqa: PLC0415

    key = repr((CACHE_VERSION, opts.hidden, opts.no_ignore, tuple(opts.extra_ignores),
                None if opts.no_ignore else global_excludes()[0]))
    return f"walk-{zlib.crc32(key.encode('utf-8', 'surrogateescape')):08x}.cache"


def _ignore_state(path: str) -> tuple[int, int, int, int] | None:
    try:
        s = os.stat(path)
    except OSError:
        return None
    return (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)


def _may_list(path: str, s: os.stat_result) -> bool:
    """Whether this process may list the folder `path` (its stat `s`). A listing made by a
    run with more rights (root's read override) must not show names this run cannot read
    (`glob` listed a shut folder's files from one). The system is asked only of a folder not
    open to every user."""
    return s.st_mode & 0o005 == 0o005 or os.access(path, os.R_OK | os.X_OK)


def _stamp(s: os.stat_result, t0: int) -> tuple[int, int] | None:
    """A folder's (mtime, ctime) as the listing keeps it; None when it moved within
    RACY_NS of `t0` (the same tick could hide a second change)."""
    return (s.st_mtime_ns, s.st_ctime_ns) if max(s.st_mtime_ns, s.st_ctime_ns) < t0 - RACY_NS else None


def _list_folder(path: str, rel: str, depth: int, lv: tuple[Level, ...], hidden_ok: bool,
                 no_ignore: bool, warn: Callable[[str], None]):
    """What `_walk` (without `follow`) keeps of one folder: (names, kinds, ignore file
    names present, levels for its subfolders, the names the ignore files and the hidden-name
    rule left out); None when the folder cannot be read."""
    try:
        entries = _scan(path)
    except OSError as e:
        warn(f"{rel or '.'}: {e.strerror or e}")
        return None
    ign: tuple[str, ...] = ()
    if not no_ignore:
        present = {e.name for e in entries if e.name in _PER_FOLDER_NAMES}
        if present:
            ign = tuple(sorted(present))
            lv = _add_folder(lv, path, rel, depth, present, warn)
    checks = _checks(lv, rel)
    names: list[str] = []
    kinds: list[int] = []
    dropped: list[str] = []
    for e in entries:
        name = e.name
        if name in ALWAYS_SKIPPED:
            continue
        if not checks and name[0] == "." and not hidden_ok:
            dropped.append(name)
            continue
        try:
            is_link = e.is_symlink()
            is_dir = False if is_link else e.is_dir(follow_symlinks=False)
            verdict = _decide(checks, name, is_dir) if checks else None
            if verdict or (name[0] == "." and not hidden_ok and verdict is not False):
                dropped.append(name)
                continue
            if is_link:
                kind = _LINK
            elif is_dir:
                kind = _DIR
            elif e.is_file(follow_symlinks=False):
                kind = _FILE
            else:
                continue  # fifos, sockets, devices
        except OSError as err:
            warn(f"{(rel + '/' if rel else '') + name}: {err.strerror or err}")
            continue
        names.append(name)
        kinds.append(kind)
    return names, kinds, ign, lv, tuple(dropped)


def _levels_above(root_abs: str, rel: str, opts: WalkOptions, warn,
                  levels: tuple[Level, ...] | None = None, memo: dict | None = None) -> tuple[Level, ...]:
    """The ignore levels in force for the entries of folder `rel`, its own files aside
    (`levels`: the root's, when the caller has them: they read files above the root).
    `memo` (folder -> its levels) carries what one refresh worked out to the next folder:
    rescanning the folders of a chain 600 deep read each folder above each one again."""
    levels = _root_levels(root_abs, opts, warn) if levels is None else levels
    if opts.no_ignore or not rel:
        return levels
    parts = rel.split("/")
    k0 = 0
    if memo is not None:
        for k in range(len(parts), 0, -1):
            got = memo.get("/".join(parts[:k]))
            if got is not None:
                levels, k0 = got, k
                break
    for k in range(k0, len(parts)):
        levels = _add_folder(levels, os.path.join(root_abs, *parts[:k]), "/".join(parts[:k]), k,
                             None, warn)
        if memo is not None:
            memo["/".join(parts[:k + 1])] = levels
    return levels


def _build_listing(root_abs: str, opts: WalkOptions, warn) -> dict:
    t0 = time.time_ns()
    dirs: dict[str, tuple[int, list[str], list[int], tuple[str, ...]]] = {}
    ign: dict[str, tuple[int, int, int] | None] = {}
    if not opts.no_ignore:
        p = git_exclude(root_abs)
        ign[p] = _ignore_state(p)
        for p in parent_ignore_files(root_abs, opts):
            ign[p] = _ignore_state(p)
    stack = [("", root_abs, _root_levels(root_abs, opts, warn), 0)]
    while stack:
        rel, path, lv, depth = stack.pop()
        try:
            st = os.stat(path) if not rel else os.lstat(path)
        except OSError as e:
            warn(f"{rel or '.'}: {e.strerror or e}")
            continue
        if not stat.S_ISDIR(st.st_mode):  # replaced since its parent was read: never followed
            continue
        got = _list_folder(path, rel, depth, lv, opts.hidden, opts.no_ignore, warn)
        if got is None:
            continue
        names, kinds, present, sub_lv, dropped = got
        for n in present:
            p = _watched(path, n)
            ign[p] = _ignore_state(p)
        dirs[rel] = (_stamp(st, t0), names, kinds, present, dropped)
        for name, kind in zip(reversed(names), reversed(kinds)):
            if kind == _DIR:
                stack.append((f"{rel}/{name}" if rel else name, os.path.join(path, name),
                              sub_lv, depth + 1))
    top = None if opts.no_ignore else git_top_above(root_abs)
    return {"v": CACHE_VERSION, "root": root_abs, "ign": ign, "dirs": dirs, "top": top}


def _journal_folders(dirs: dict, changes, after: int) -> tuple[list[str], set[str]]:
    """(the listed folders a change journal's paths numbered past `after` may have changed,
    those of them to list again whatever their mtime): each path's folder (a name came or
    went: its mtime says so) and the path itself when it is a listed folder (created,
    moved or replaced: listed again, as two folders swapped with equal mtimes would fool
    the mtime)."""
    look, force = set(), set()
    for t, n in changes.paths.items():
        if n <= after:
            continue
        parent = t.rpartition("/")[0]
        if parent in dirs:
            look.add(parent)
        if t in dirs:
            look.add(t)
            force.add(t)
    return sorted(look, reverse=True), force


def _refresh(listing: dict, root_abs: str, start_rel: str, opts: WalkOptions, warn,
             changes=None) -> bool:
    """Bring the folders at and below `start_rel` up to date; True when any changed.
    Raises _Stale when the listing cannot be mended.

    With a change journal's answer (`changes`, `ov.journal.Changes`) from the journal and
    catch-up the listing was last refreshed at (`listing["since"]`), only the folders of
    the paths touched since that refresh (`listing["seq"]`) are looked at, and the folders
    new to the listing under them: every other folder is as it was then. Otherwise every
    folder at and below `start_rel` is stat'ed, and a refresh of the whole tree remembers
    the journal's point."""
    for p, state in listing["ign"].items():
        if _ignore_state(p) != state:
            raise _Stale()
    if not opts.no_ignore and listing.get("top") != git_top_above(root_abs):
        raise _Stale()  # a work tree made (or gone) above the root: other ignore files apply
    base = _root_levels(root_abs, opts, warn)  # once: each rescanned folder starts from it
    memo: dict[str, tuple[Level, ...]] = {}
    dirs = listing["dirs"]
    t0 = time.time_ns()
    rescans = 0
    partial = (changes is not None and listing.get("since") == changes.since
               and isinstance(listing.get("seq"), int))
    if partial:
        todo, force = _journal_folders(dirs, changes, listing["seq"])
    else:  # every folder; with a journal, those it names as replaced whatever their mtime
        todo, force = [start_rel], (_journal_folders(dirs, changes, -1)[1] if changes else set())
    while todo:
        rel = todo.pop()
        path = os.path.join(root_abs, rel) if rel else root_abs
        rec = dirs.get(rel)
        try:
            s = os.stat(path) if not rel else os.lstat(path)  # a link is not a folder here
        except OSError:
            s = None
        if s is None or not stat.S_ISDIR(s.st_mode):
            if rel == start_rel or s is not None:  # a file or a link in a folder's place
                raise _Stale()
            dirs.pop(rel, None)
            continue
        if rec is None or rec[0] is None or rec[0] != _stamp(s, t0) or rel in force or not _may_list(path, s):
            rescans += 1
            if rescans > MAX_RESCANS:
                raise _Stale()
            got = _list_folder(path, rel, rel.count("/") + 1 if rel else 0,
                               _levels_above(root_abs, rel, opts, warn, base, memo), opts.hidden,
                               opts.no_ignore, warn)
            if got is None:  # unreadable (said by `warn`)
                if rec is None:  # as when it was listed: left out again, as the walk leaves it
                    continue
                raise _Stale()
            names, kinds, present, _, dropped = got
            if rec is not None and present != rec[3]:
                raise _Stale()  # an ignore file came or went: decisions below may move
            for n in present:
                p = _watched(path, n)
                listing["ign"][p] = _ignore_state(p)
            old = rec
            rec = (_stamp(s, t0), names, kinds, present, dropped)
            if old is None or rec[:3] != old[:3] or dropped != old[4]:
                listing["changed"] = True
            dirs[rel] = rec
        names, kinds = rec[1], rec[2]
        for i in range(len(names) - 1, -1, -1):
            if kinds[i] == _DIR:
                sub = f"{rel}/{names[i]}" if rel else names[i]
                if not partial or sub not in dirs:  # partial: only folders new to it
                    todo.append(sub)
    if changes is not None and (partial or start_rel == "") and (
            listing.get("since"), listing.get("seq")) != (changes.since, changes.seq):
        # the journal's point is written with a change of the listing or a new journal, not
        # alone: a listing (and the unindexed files') rewritten after every save costs more
        # than looking again at the folders of the paths touched since the last point
        if listing.get("changed") or listing.get("since") != changes.since:
            listing["since"], listing["seq"] = changes.since, changes.seq
            listing["changed"] = True
    return bool(listing.get("changed"))


# The listing this process loaded last, by its file's state: a run with several PATHs
# reads and unpacks it once.
_LOADED: dict[str, tuple[tuple[int, int, int], dict]] = {}


def _load_listing(path: str, root_abs: str) -> dict | None:
    import marshal  # noqa: PLC0415

    try:
        s = os.stat(path)
        sig = (s.st_size, s.st_mtime_ns, s.st_ino)
        hit = _LOADED.get(path)
        if hit is not None and hit[0] == sig:
            data = hit[1]
        else:
            raw = read_sealed(path)
            if raw is None:
                return None
            data = marshal.loads(raw)
            _LOADED.clear()
            _LOADED[path] = (sig, data)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if (not isinstance(data, dict) or data.get("v") != CACHE_VERSION or data.get("root") != root_abs
            or not isinstance(data.get("dirs"), dict) or not isinstance(data.get("ign"), dict)):
        return None
    return data


def read_private(path: str | os.PathLike, max_bytes: int = 1 << 30) -> bytes | None:
    """The bytes of one of ov's own files beside the index (a cache, the worker's state),
    or None when it is missing, not a regular file (a fifo would block the read, a link
    to /dev/zero would fill memory: a cloned tree can carry any `.ov/`), reached through
    a link, or larger than `max_bytes`."""
    try:
        return read_control(path, max_bytes, follow=False)
    except OSError:
        return None


def read_json(path: str | os.PathLike) -> dict:
    """One of ov's own small JSON files under `.ov/` (the worker's state, why it failed):
    {} when it is missing, not ov's kind of file, or not a JSON object."""
    import json  # noqa: PLC0415

    try:  # (a planted pid of 1e400 is infinity: int() of it had raised OverflowError)
        got = json.loads(read_private(path, 1 << 16) or b"{}", parse_constant=_not_finite,
                         parse_float=_finite)
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def _finite(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise ValueError(text)
    return x


def _not_finite(text: str) -> float:
    raise ValueError(text)  # NaN, Infinity: never written by ov


def _seal(path: str) -> bytes | None:
    """The header of a cache file ov writes in a folder: the folder's device and inode. A
    file committed in a cloned tree (whose folder is new on this disk) cannot carry it, so
    its bytes are never unmarshalled (crafted marshal data took 16 GB to decode)."""
    try:
        s = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    return b"ov1" + s.st_dev.to_bytes(8, "little") + s.st_ino.to_bytes(8, "little")


def read_sealed(path: str | os.PathLike) -> bytes | None:
    """What `write_sealed` wrote at `path`, or None (missing, not ov's, or not from here)."""
    raw = read_private(path)
    head = _seal(os.fspath(path))
    if raw is None or head is None or not raw.startswith(head):
        return None
    return raw[len(head):]


def write_sealed(path: str, data: bytes) -> bool:
    """`write_private` of `data` after the folder's seal (`_seal`)."""
    head = _seal(path)
    return head is not None and write_private(path, head + data)


def write_private(path: str, data: bytes) -> bool:
    """Write a cache file beside the index atomically (a new owner-only file, never
    through a link, renamed into place); a failure only costs speed, so it is swallowed
    (False). In ov's own `.ov` folder the folder itself is not followed either: a cloned
    tree's `.ov` linked out had taken `ov index --stop`'s mark into the folder it named."""
    folder, name = os.path.split(path)
    tmp = f"{name}.{os.getpid()}.tmp"
    no_link = getattr(os, "O_NOFOLLOW", 0)
    try:
        dfd = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
                      | (no_link if os.path.basename(folder) == ".ov" else 0))
    except OSError:
        return False
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | no_link | getattr(os, "O_CLOEXEC", 0),
                     0o600, dir_fd=dfd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return True
    except OSError:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        return False
    finally:
        os.close(dfd)


def _save_listing(path: str, listing: dict) -> bool:
    """Write the listing beside the index, atomically; a failure only costs speed (False)."""
    import marshal  # noqa: PLC0415

    return write_sealed(path, marshal.dumps({k: v for k, v in listing.items() if k != "changed"}))


def cached_walk(root: Path, opts: WalkOptions, cache_dir: Path, *, start: Path | None = None,
                on_warning: Callable[[str], None] | None = None,
                on_skip: Callable[[str], None] | None = None
                ) -> list[tuple[str, str, bool]] | None:
    """(path relative to `root`, absolute path, is a symlink) of the files and symlinks
    `walk` would meet under folder `start` (default `root`), in its order, through the
    listing cache kept in `cache_dir` (made or mended on the way); None when the cache
    cannot answer (`follow`, a size cap, a start that is not a walked folder), and the
    caller walks. Symlinks are listed whatever `yield_symlinks` would say: callers that
    do not want them drop them. `max_depth` applies as in `walk`; `on_skip(path)` hears
    of each folder it leaves unentered."""
    if opts.follow or opts.max_filesize is not None:
        return None
    warn = on_warning or _noop
    root_abs = os.path.abspath(os.fspath(root))
    rel0 = "" if start is None else os.path.relpath(os.path.abspath(os.fspath(start)), root_abs)
    rel0 = "" if rel0 == "." else rel0.replace(os.sep, "/")
    if rel0.startswith("..") or os.path.isabs(rel0):
        return None
    got = _current_listing(root_abs, opts, cache_dir, rel0, warn, None)
    if got is None or _overridden(got[0]["dirs"], rel0, opts.override):
        return None
    return _flatten(got[0]["dirs"], root_abs, rel0, opts.max_depth, on_skip or _noop)


def listed_walk(root: Path, opts: WalkOptions, cache_dir: Path) -> Iterator[FileEntry] | None:
    """The regular files `walk(root, opts)` yields (no links, as without `yield_symlinks`),
    through the listing cache in `cache_dir`: each listed file stat'ed once, and held to
    `opts.max_filesize`; None when the cache cannot answer (`follow`, no usable cache) and
    the caller walks. A walk decides every name against the ignore rules again (the
    kernel's 78,000 files: ~1.5 s); the listing re-reads only folders that changed."""
    if opts.follow:
        return None
    listed = cached_walk(root, replace(opts, max_filesize=None), cache_dir)
    if listed is None:
        return None
    cap = opts.max_filesize

    def stats() -> Iterator[FileEntry]:
        for rel, path, link in listed:
            if link:
                continue
            try:
                s = os.lstat(path)
            except OSError:  # gone since the listing, as a walk would not have met it
                continue
            if stat.S_ISREG(s.st_mode) and (cap is None or s.st_size <= cap or not over_cap(rel, s.st_size, cap)):
                yield FileEntry(rel, path, s.st_size, s.st_mtime_ns, s.st_mode, False, s.st_ctime_ns, s.st_ino)

    return stats()


def _overridden(dirs: dict, rel0: str, override: Callable[[str], bool] | None) -> bool:
    """Whether grep's `-g` overrides (`WalkOptions.override`) keep a name that a listed
    folder at or below `rel0` left out: then the walk, which asks the override of each
    such name, differs from the listing, and the tree is walked afresh. Otherwise the
    listing is the walk's answer, the globs filtering it as they filter a walk (`-g
    '*.c'` in the kernel: no ignored or hidden name ends in `.c`)."""
    if override is None:
        return False
    inner = rel0 + "/" if rel0 else ""
    for rel, rec in dirs.items():
        if rel == rel0 or not rel0 or rel.startswith(inner):
            prefix = rel + "/" if rel else ""
            if any(override(prefix + n) for n in rec[4]):
                return True
    return False


def _current_listing(root_abs: str, opts: WalkOptions, cache_dir: Path, rel0: str, warn,
                     changes) -> tuple[dict, tuple | None] | None:
    """The listing of `root_abs` brought up to date (loaded, mended or built, and saved),
    and its file's (size, mtime_ns, inode) when the file holds exactly it (None when it
    could not be written); None when the cache cannot serve folder `rel0`."""
    if not os.path.isdir(cache_dir) or os.path.islink(cache_dir):
        return None
    path = os.path.join(os.fspath(cache_dir), cache_name(opts))
    listing = _load_listing(path, root_abs)
    changed = False
    if listing is not None:
        said: list[str] = []  # the refresh's warnings: a build after it says them again
        try:
            if rel0 not in listing["dirs"]:
                return None  # a folder the walk leaves out, named explicitly: walk it
            changed = _refresh(listing, root_abs, rel0, opts, said.append, changes)
        except (_Stale, KeyError, TypeError, ValueError, AttributeError, IndexError):
            listing = None  # stale, or not of this shape (damaged): walked afresh
        else:
            for w in said:
                warn(w)
    if listing is None:
        listing = _build_listing(root_abs, opts, warn)
        if changes is not None:  # built after the journal's answer: true as of it
            listing["since"], listing["seq"] = changes.since, changes.seq
        changed = True
        if rel0 not in listing["dirs"]:
            _save_listing(path, listing)
            return None
    sig = None
    if changed:
        listing.pop("changed", None)
        if _save_listing(path, listing):
            try:
                s = os.stat(path)
                sig = (s.st_size, s.st_mtime_ns, s.st_ino)
            except OSError:
                pass
    else:
        hit = _LOADED.get(path)
        sig = hit[0] if hit is not None and hit[1] is listing else None
    return listing, sig


class Listed:
    """A listing cache's files, asked about one by one (no list of every file is made):
    whether a path is a listed file, and its place in the walk's order. For grep with a
    change journal, which reads a handful of files out of the whole tree."""

    def __init__(self, dirs: dict, root_abs: str, sig: tuple | None) -> None:
        self.dirs = dirs
        self.root_abs = root_abs
        self.sig = sig  # the listing file's state, when it holds exactly this listing
        self._pos: dict[str, dict[str, tuple[int, int]]] = {}

    def _names(self, folder: str) -> dict[str, tuple[int, int]] | None:
        got = self._pos.get(folder)
        if got is None:
            rec = self.dirs.get(folder)
            if rec is None:
                return None
            got = self._pos[folder] = {n: (i, k) for i, (n, k) in enumerate(zip(rec[1], rec[2]))}
        return got

    def order(self, rel: str) -> tuple[int, ...] | None:
        """`rel`'s place in the walk (its folders' and its own places), when it is a listed
        file (not a link) reached from the root through folders; else None."""
        return self._reach(rel, _FILE)

    def is_folder(self, rel: str) -> bool:
        """Is `rel` a listed folder reached from the root through folders (not links)?"""
        return not rel or self._reach(rel, _DIR) is not None

    def _reach(self, rel: str, kind: int) -> tuple[int, ...] | None:
        parts = rel.split("/")
        key = []
        folder = ""
        for i, part in enumerate(parts):
            names = self._names(folder)
            got = names.get(part) if names is not None else None
            if got is None or got[1] != (kind if i == len(parts) - 1 else _DIR):
                return None
            key.append(got[0])
            folder = f"{folder}/{part}" if folder else part
        return tuple(key)

    def files(self) -> list[str]:
        """Every listed file (not links), in walk order."""
        return [r for r, _a, link in _flatten(self.dirs, self.root_abs, "", None, _noop) if not link]


def listed(root: Path, opts: WalkOptions, cache_dir: Path, *, changes=None,
           on_warning: Callable[[str], None] | None = None) -> Listed | None:
    """The listing cache of `root` (made or mended as `cached_walk` does), as a `Listed`;
    None where `cached_walk` would not answer, or with `max_depth`."""
    if opts.follow or opts.max_filesize is not None or opts.max_depth is not None:
        return None
    root_abs = os.path.abspath(os.fspath(root))
    got = _current_listing(root_abs, opts, cache_dir, "", on_warning or _noop, changes)
    if got is None or _overridden(got[0]["dirs"], "", opts.override):
        return None
    return Listed(got[0]["dirs"], root_abs, got[1])


def _flatten(dirs: dict, root_abs: str, rel0: str, max_depth: int | None,
             on_skip: Callable[[str], None]) -> list[tuple[str, str, bool]]:
    out: list[tuple[str, str, bool]] = []
    append = out.append
    sep = os.sep
    if max_depth is not None and max_depth < 1:
        on_skip(rel0 or ".")
        return out

    # depth first in each folder's order, by a stack rather than recursion: ~1,000 nested
    # folders (a cloned tree's) had raised RecursionError in every command once indexed
    stack: list = []

    def enter(rel: str, depth: int) -> None:
        rec = dirs.get(rel)
        if rec is not None:
            stack.append((rel + "/" if rel else "", root_abs + sep + (rel.replace("/", sep) + sep if rel else ""),
                          depth, max_depth is None or depth < max_depth, zip(rec[1], rec[2])))

    enter(rel0, 1)
    while stack:
        prefix, aprefix, depth, deeper, entries = stack[-1]
        for name, kind in entries:
            if kind == _DIR:
                if deeper:
                    enter(prefix + name, depth + 1)
                    break
                on_skip(prefix + name)
            else:
                append((prefix + name, aprefix + name, kind == _LINK))
        else:
            stack.pop()
    return out
