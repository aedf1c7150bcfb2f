"""Path globs: `ov glob` patterns, grep's `-g/--glob` filters and `-t/--type` filters.

- `compile_glob` (for `ov glob`): wcmatch `globmatch` (its translated regexes) against
  the path relative to the search root, '/' separators: `*` and `?` never cross `/`,
  `**` spans folders, `[...]`, `{a,b}`; case-sensitive unless `ignore_case`; a leading
  dot is matched by `*` only with `hidden` (fd's `-H`). An unclosed `[` or `{` is
  refused (fd refuses it too) rather than silently read as a literal.
- `PathFilter` (for `ov grep -g`): ripgrep's override globs, with gitignore syntax (a
  glob without `/` matches the name at any depth, a folder's glob covers what is below
  it); `!` excludes; the last glob that matches decides; when any include glob is given,
  a path no glob matches is left out.
- `ov.kinds.type_matcher` (for `-t/--type`): the file name matches one of the type's globs
  (`ov.kinds.type_globs`, ripgrep's type names).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from ov.errors import OvError

# wcmatch and pathspec are imported where they are used (~10 ms each): a plain grep
# needs neither.


MAX_GLOB_CHARS = 8192  # as a query's limit (ov.config.MAX_QUERY_CHARS); a million took minutes


def check_glob(pattern: str, field: str = "pattern") -> None:
    """Refuse an empty glob or one with an unclosed `[` or `{` (with its position)."""
    if not pattern:
        raise OvError("invalid_pattern", "empty glob", field=field)
    if len(pattern) > MAX_GLOB_CHARS:  # compiling one costs time in its length squared
        raise OvError("invalid_pattern", f"the glob is {len(pattern)} characters; at most "
                      f"{MAX_GLOB_CHARS}", field=field)
    i, n = 0, len(pattern)
    braces: list[int] = []
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            k = _class_end(pattern, i)
            if k < 0:
                raise OvError("invalid_pattern", f"invalid glob: unclosed '[' at position {i}",
                              field=field)
            _check_ranges(pattern, i, k, field)
            i = k + 1
            continue
        if c == "{":
            braces.append(i)
        elif c == "}" and braces:
            braces.pop()
        i += 1
    if braces:
        raise OvError("invalid_pattern", f"invalid glob: unclosed '{{' at position {braces[-1]}",
                      field=field)


def _class_end(pattern: str, i: int) -> int:
    """The offset of the `]` that closes the class opening at `pattern[i]` (`[`): a `]`
    right after the `[` or its `!`/`^` is a member; -1 when none closes it."""
    j, n = i + 1, len(pattern)
    if j < n and pattern[j] in "!^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)


def _check_ranges(pattern: str, start: int, end: int, field: str) -> None:
    """Refuse a range running backwards in the class `pattern[start:end + 1]` (`[z-a]`), as
    `-g` and rg do: as a glob it matched nothing, silently."""
    body = pattern[start + 1:end]
    chars: list[str] = []  # the class's characters, escapes read
    t = 1 if body[:1] in ("!", "^") else 0
    while t < len(body):
        if body[t] == "\\" and t + 1 < len(body):
            t += 1
        chars.append(body[t] if body[t] != "-" or t in (0, len(body) - 1) else "\0-")
        t += 1
    for a, dash, b in zip(chars, chars[1:], chars[2:]):
        if dash == "\0-" and a != "\0-" and b != "\0-" and a > b:
            raise OvError("invalid_pattern", f"invalid glob: invalid range '{a}-{b}' in the class at "
                          f"position {start}", field=field)


def compile_glob(pattern: str, *, ignore_case: bool = False,
                 hidden: bool = False) -> Callable[[str], bool]:
    """A predicate on root-relative '/' paths for an `ov glob` pattern."""
    check_glob(pattern)
    pattern = pattern.removeprefix("./")
    forms = _simple_forms(pattern)
    include = None
    if forms is not None:
        # (wcmatch, its brace expander and `typing` cost ~9 ms of an `ov glob`)
        rx = "|".join(f"(?:{_translate(f, hidden)})" for f in forms)
        try:
            include = re.compile(rx, re.DOTALL | (re.IGNORECASE if ignore_case else 0)).fullmatch
        except re.error:  # a class like [z-a]: wcmatch says what is wrong
            include = None
        exclude = None
        tails = () if ignore_case else _tails(forms)
    if include is None:
        include, exclude = _wcmatch_glob(pattern, ignore_case, hidden)
        tails = () if ignore_case else _literal_tails(pattern)
    if exclude is None:
        if tails:
            return lambda rel: rel.endswith(tails) and include(rel) is not None
        return lambda rel: include(rel) is not None
    return lambda rel: (rel.endswith(tails) and include(rel) is not None
                        and exclude(rel) is None)


def _wcmatch_glob(pattern: str, ignore_case: bool, hidden: bool):
    from wcmatch import glob as wc_glob  # noqa: PLC0415

    flags = wc_glob.GLOBSTAR | wc_glob.BRACE | wc_glob.FORCEUNIX
    if ignore_case:
        flags |= wc_glob.IGNORECASE
    if hidden:
        flags |= wc_glob.DOTGLOB
    try:
        # wcmatch's own matcher builds an object per call; its regexes (`translate`)
        # matched directly give the same answers, several times faster.
        inc, exc = wc_glob.translate(pattern, flags=flags)
        include = re.compile("|".join(f"(?:{x})" for x in inc)).fullmatch
        exclude = re.compile("|".join(f"(?:{x})" for x in exc)).fullmatch if exc else None
    except Exception as e:  # wcmatch reports malformed patterns as plain exceptions
        raise OvError("invalid_pattern", f"invalid glob: {e}", field="pattern") from None
    return include, exclude


# -- the common globs without wcmatch -----------------------------------------------------
# A glob made only of plain characters, `*`, `?`, `**` as a whole path component, simple
# `[...]` classes and non-nested `{a,b}` braces is translated here, with wcmatch's meaning
# (GLOBSTAR | BRACE | FORCEUNIX, DOTGLOB with `hidden`): `*` and `?` never match `/`; a
# wildcard or class at the start of a component never matches a leading dot unless
# `hidden`; `**` spans zero or more folders, none hidden unless `hidden`; a run of `*`
# inside a component is one `*`. Anything else (escapes, nested braces, ranges `{1..3}`,
# POSIX classes, empty components) goes to wcmatch. tests/test_glob.py compares the two on
# generated globs and paths.
_SIMPLE_CLASS = re.compile(r"\[([!^]?)(\]?[^\]\[/\\{},]*)\]")
_MAX_FORMS = 256


def _simple_forms(pattern: str) -> list[str] | None:
    """The brace expansions of a glob this module translates itself, or None."""
    # (`${` opens no brace group in wcmatch's expander, as in bash)
    if "\\" in pattern or "[:" in pattern or "[." in pattern or "[=" in pattern or "${" in pattern:
        return None
    forms = [""]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "{":
            j = pattern.find("}", i)
            inner = pattern[i + 1:j]
            if j < 0 or "{" in inner or "," not in inner or ".." in inner or "[" in inner:
                return None
            alts = inner.split(",")
            if len(forms) * len(alts) > _MAX_FORMS:
                return None
            forms = [f + a for f in forms for a in alts]
            i = j + 1
            continue
        if c == "}":
            return None
        if c == "[":
            m = _SIMPLE_CLASS.match(pattern, i)
            if m is None or not m.group(2):
                return None
            forms = [f + m.group(0) for f in forms]
            i = m.end()
            continue
        forms = [f + c for f in forms]
        i += 1
    for f in forms:
        parts = f.split("/")
        if not f or any(p in ("", ".", "..") for p in parts) or sum(p == "**" for p in parts) > 3:
            return None
        if any(p.strip("*") == "" and len(p) > 2 for p in parts):
            return None
    return forms


def _translate(form: str, hidden: bool) -> str:
    """A regex for one brace-free form (see above)."""
    no_dot = "" if hidden else "(?!\\.)"
    folder = f"(?:{no_dot}[^/]+/)"
    parts = form.split("/")
    out = []
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        if part == "**":
            out.append(f"{folder}*{no_dot}[^/]+" if last else f"{folder}*")
            continue
        rx = []
        i = 0
        while i < len(part):
            c = part[i]
            if c == "*":
                while i < len(part) and part[i] == "*":
                    i += 1
                rx.append("[^/]*")
                continue
            if c == "?":
                rx.append("[^/]")
            elif c == "[":
                m = _SIMPLE_CLASS.match(part, i)
                assert m is not None  # _simple_forms checked it
                neg, body = m.groups()
                body = body.replace("\\", "\\\\").replace("^", "\\^")
                # a range such as [+-0] or [ -~] spans "/", which a class never matches
                rx.append(f"[^{body}/]" if neg else f"(?!/)[{body}]")
                i = m.end()
                continue
            else:
                rx.append(re.escape(c))
            i += 1
        lead = no_dot if part[0] in "*?[" else ""
        out.append(lead + "".join(rx) + ("" if last else "/"))
    return "".join(out)


def _tails(forms: list[str]) -> tuple[str, ...]:
    """Literal endings one of which ends every match (".c", ".h" for "**/*.{c,h}"), from
    a glob's brace expansions, or () when some form has none: a cheap test that spares
    most paths the regex. Walked paths never end with "/", so the text after the last
    special character or "/" of each form must end the path."""
    tails = []
    for form in forms:
        tail = re.split(r"[*?\[\]{}/]", form)[-1]
        if not tail or "\\" in tail:
            return ()
        tails.append(tail)
    return tuple(tails)


def _literal_tails(pattern: str) -> tuple[str, ...]:
    """`_tails` of a glob wcmatch reads (its own brace expander)."""
    import bracex  # noqa: PLC0415  (wcmatch's own brace expander, loaded with it)

    try:
        forms = bracex.expand(pattern, keep_escapes=True, limit=1000)
    except Exception:  # too many forms, or what bracex cannot read: no prefilter
        return ()
    return _tails(forms)


MAX_BRACE_FORMS = 10_000  # (rg took a group of 1,025; a product of groups can explode)


def brace_forms(pattern: str, field: str = "glob") -> list[str]:
    """A `-g` glob's `{a,b}` alternations expanded as ripgrep's globs read them: each group
    one of its comma-separated parts (`*.{ex,exs}`: `*.ex`, `*.exs`; `{x}` is `x`, `{}`
    nothing), a group inside another refused as rg refuses it, `\\{` and a `{` inside a
    `[...]` class left as they are. The glob must have passed `check_glob`."""
    if "{" not in pattern:
        return [pattern]
    forms, i, n = [""], 0, len(pattern)
    group: list[str] | None = None  # the parts of the open group
    while i < n:
        c = pattern[i]
        if c == "\\":
            piece = pattern[i:i + 2]
            i += 2
        elif c == "[":
            j = _class_end(pattern, i) + 1
            piece, i = pattern[i:j], j
        elif c == "{":
            if group is not None:
                raise OvError("invalid_pattern", f"invalid glob: nested alternate groups are not allowed "
                              f"(position {i})", field=field)
            group, i = [""], i + 1
            continue
        elif c == "," and group is not None:
            group.append("")
            i += 1
            continue
        elif c == "}" and group is not None:
            if len(forms) * len(group) > MAX_BRACE_FORMS:
                raise OvError("invalid_pattern", f"invalid glob: its braces make more than "
                              f"{MAX_BRACE_FORMS} globs", field=field)
            forms = [f + g for f in forms for g in group]
            group, i = None, i + 1
            continue
        else:
            piece, i = c, i + 1
        if group is not None:
            group[-1] += piece
        else:
            forms = [f + piece for f in forms]
    return forms


def _gitignore_lines(body: str, field: str) -> list[str]:
    """A `-g` glob as gitignore lines for pathspec: its brace forms (`brace_forms`), each
    anchored at the root when any of them holds a `/` (rg anchors the whole glob so:
    `{docs/*.md,b.txt}` takes `b.txt` at the top alone), and a form's leading `!` or `#`
    escaped (`{!a,b}.txt` takes `!a.txt`, as in rg; in a gitignore line they would negate
    or comment it out). A glob written with a leading `#` stays a comment, as rg reads it."""
    if body.startswith(("#", "!")):  # a comment (rg skips the glob) or a negation, as written
        return [body]
    forms = brace_forms(body, field=field)
    if len(forms) > 1 and any("/" in f.rstrip("/") for f in forms):
        forms = [f if "/" in f.rstrip("/") else "/" + f for f in forms]
    return ["\\" + f if f.startswith(("!", "#")) else f for f in forms]


def _one_regex(patterns: list) -> Callable:
    """The match function of a glob's brace forms as one regex (pathspec's patterns; each
    names its folder group `ps_d`, renamed here): a thousand forms tried one by one had made
    a grep 25 times slower than `*.txt`."""
    if len(patterns) == 1:
        return patterns[0].regex.match
    return re.compile("|".join(f"(?:{p.regex.pattern.replace('(?P<ps_d>', f'(?P<ps_d{i}>')})"
                               for i, p in enumerate(patterns))).match


def _folder_group(m: re.Match) -> str | None:
    """What a match's folder group (`ps_d`, or one of a brace glob's `ps_dN`) matched."""
    return next((v for k, v in m.groupdict().items() if k.startswith("ps_d") and v is not None), None)


class PathFilter:
    """ripgrep's `-g/--glob` overrides over root-relative paths. As in rg, a glob is read
    from the current folder (`under`): a path below it is matched without the current
    folder's own part (`-g 'deep/*.py'` run in `src/` of a repository whose top is the
    root takes `src/deep/n.py`), one outside it as it is printed (`../other/x/d.py`, which
    an anchored glob such as `x/*.py` does not take; `*.py` does)."""

    def __init__(self, globs: Sequence[str], field: str = "glob") -> None:
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # noqa: PLC0415

        self.rules: list[tuple[Callable, bool]] = []  # (regex match, include), last first
        self.has_include = False
        self.base = ""  # the current folder's root-relative path and '/', when below the root
        self.up = ""  # the root's path from the current folder and '/', when not under it
        for g in globs:
            include = not g.startswith("!")
            body = g if include else g[1:]
            flag = "--exclude-uri" if field == "exclude_uri" else "-g"
            try:
                check_glob(body, field=field)
                # (pathspec reads gitignore lines, which have no braces: rg's `-g` has)
                pats = [p for p in map(GitIgnoreSpecPattern, _gitignore_lines(body, field)) if p.regex is not None]
                if not pats:
                    continue
                match = _one_regex(pats)
            except OvError as e:
                raise OvError(e.code, f"{flag} {g}: {e.message}", field=field) from None
            except Exception as e:
                raise OvError("invalid_pattern", f"{flag} {g}: invalid glob: {e}", field=field) from None
            self.rules.append((match, include))
            self.has_include |= include
        self.rules.reverse()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def under(self, root: str, cwd: str) -> PathFilter:
        """This filter as read from `cwd` for the paths of `root` (both absolute)."""
        return self.at(*read_from(root, cwd))

    def at(self, base: str, up: str) -> PathFilter:
        """This filter as read from the folder `read_from` describes by (`base`, `up`)."""
        import copy  # noqa: PLC0415

        if not base and not up:
            return self
        out = copy.copy(self)
        out.base, out.up = base, up
        return out

    def _local(self, rel: str) -> str:
        if self.up:
            return self.up + rel
        return rel[len(self.base):] if self.base and rel.startswith(self.base) else rel

    def __call__(self, rel: str) -> bool:
        rel = self._local(rel)
        for match, include in self.rules:
            if match(rel):
                return include
        return not self.has_include

    def overrides(self, rel: str) -> bool:
        """Whether the last glob to match `rel` is an include glob that names `rel`
        itself: rg's -g "always overrides any other ignore logic", so the walk keeps
        such a file or folder (and enters the folder) whatever the ignore files and the
        hidden-name rule say. A glob that takes `rel` in as a folder above it (`-g src`
        for `src/a.py`) does not: rg selects no file so, and the ignored files of a
        folder named to narrow a search are not wanted."""
        rel = self._local(rel)
        for match, include in self.rules:
            m = match(rel)
            if m:
                return include and _folder_group(m) is None
        return False


def split_excludes(values: Sequence[str], folders: Sequence[str | os.PathLike]) -> tuple[list[str], list[str]]:
    """`--exclude-uri` values as (paths, globs): a value holding `*`, `?`, `[` or `{` is a glob,
    read as `-g` is, unless it names a file or folder in one of `folders` (a path such as
    `app/[id]` keeps its meaning). The globs are checked (`invalid_pattern`)."""
    paths: list[str] = []
    globs: list[str] = []
    for v in values:
        glob = any(c in v for c in "*?[{") and not any(os.path.lexists(os.path.join(f, v)) for f in folders)
        (globs if glob else paths).append(v)
    if globs:
        check_exclude_globs(globs)
    return paths, globs


def check_exclude_globs(globs: Sequence[str]) -> None:
    """Refuse an `--exclude-uri` glob grep's `-g` could not read (`invalid_pattern`), or
    one starting with `!`, which in `-g` takes paths back in and here would mean nothing."""
    for g in globs:
        if g.startswith("!"):
            raise OvError("invalid_pattern", f"--exclude-uri {g}: an --exclude-uri glob leaves out the "
                          f"paths it matches and takes no '!'; -g '{g[1:]}' keeps only the paths "
                          "matching it", field="exclude_uri")
    PathFilter(globs, field="exclude_uri")


def read_from(root: str, cwd: str) -> tuple[str, str]:
    """Where `-g` globs are read from (rg reads them from the current folder), for the
    paths of `root`: (the current folder's path from the root and "/", when it lies below
    the root; the root's path from the current folder and "/", when it does not), ("", "")
    at the root. Both absolute."""
    inner = os.path.relpath(cwd, root)
    if inner == ".":
        return "", ""
    if inner == ".." or inner.startswith(".." + os.sep):  # the current folder is not in the root
        return "", os.path.relpath(root, cwd).replace(os.sep, "/") + "/"
    return inner.replace(os.sep, "/") + "/", ""


def norm_rel(path: str) -> str:
    """A relative path with '/' separators and no leading './'."""
    p = path.replace(os.sep, "/")
    return re.sub(r"^(\./)+", "", p)
