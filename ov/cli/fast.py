"""The fast path: `ov grep`, `ov glob`, `ov find` and `ov search` (list mode) parsed
without Typer.

`ov grep` and `ov glob` are start-up bound (a search of a whole source tree takes ~0.1 s;
importing typer and building its app took ~0.03 s of it), and `ov find` / `ov search`
have a 0.3 s budget end to end. `fast(argv)` parses their arguments from
`ov.cli.flags`, a table scripts/gen_docs.py generates from the Typer app
(tests/test_docs.py holds it current), and runs the same `grep_command` /
`glob_command` / `search_command` the Typer commands call. It answers only what it fully
understands: help, a usage error, an unknown flag, a value that is not a number, or any
other command returns None, and the caller runs the Typer app (`ov.cli.app`), which
gives its usual help and messages.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ov.cli.commands import glob_command, grep_command, search_command

# ---- the fast path --------------------------------------------------------------------


class _FastArgs:
    """The state of one `parse_fast` run: the command's flag table, the values parsed so
    far, the positional arguments and the options given."""

    def __init__(self, spec: dict) -> None:
        self.opts, self.multi = spec["opts"], spec["multi"]
        self.values = dict(spec["defaults"])
        self.args: list[str] = []
        self.given: set[str] = set()

    def flag(self, dest: str, const: object) -> None:
        self.values[dest] = const
        self.given.add(dest)

    def store(self, dest: str, kind: str, raw: str) -> bool:
        """Convert and keep an option's value; False when click would refuse it."""
        if kind in ("int", "float"):
            try:
                val: object = int(raw) if kind == "int" else float(raw)
            except ValueError:
                return False
        elif kind == "path":
            val = Path(raw)
        else:
            val = raw
        self.given.add(dest)
        if dest in self.multi:
            self.values[dest] = [*(self.values[dest] or ()), val]
        else:
            self.values[dest] = val
        return True

    def long(self, a: str, argv: Sequence[str], i: int) -> int | None:
        """`--name`, `--name=value` or `--name value` at argv[i-1]; the next index, or
        None to decline."""
        name, eq, raw = a.partition("=")
        o = self.opts.get(name)
        if o is None:
            return None
        dest, kind, const = o
        if kind == "flag":
            if eq:
                return None
            self.flag(dest, const)
            return i
        if not eq:
            if i >= len(argv):
                return None
            raw, i = argv[i], i + 1
        return i if self.store(dest, kind, raw) else None

    def short(self, a: str, argv: Sequence[str], i: int) -> int | None:
        """A cluster of short flags (`-iw`, `-A3`, `-A 3`) at argv[i-1]; the next index, or
        None to decline."""
        for j in range(1, len(a)):
            o = self.opts.get("-" + a[j])
            if o is None:
                return None
            dest, kind, const = o
            if kind == "flag":
                self.flag(dest, const)
                continue
            if j + 1 < len(a):
                raw = a[j + 1:]
            elif i < len(argv):
                raw, i = argv[i], i + 1
            else:
                return None
            return i if self.store(dest, kind, raw) else None
        return i

    def bind(self, spec: dict) -> bool:
        """Hand the positional arguments to the command's arguments; False on a missing
        or extra one."""
        args = self.args
        for dest, nargs, required in spec["args"]:
            if nargs == -1:
                self.values[dest] = args or None
                args = []
            elif args:
                self.values[dest] = args.pop(0)
            elif required:
                return False
        return not args


def parse_fast(argv: Sequence[str]) -> tuple[str, dict] | None:
    """(command, its parameters) for a command line of a command in `ov.cli.flags` (grep, glob,
    find, search), parsed as click parses it: options anywhere among the arguments, `--`
    ends them, `--opt=value`, short flags clustered (`-iw`, `-A3`), an option's value taken
    from the next argument whatever it looks like, the last of a repeated option kept (all
    of a repeatable one). None for anything else: help, another command, an unknown
    option, a missing or non-numeric value, a wrong number of arguments, an environment
    variable click would read; Typer then answers as usual."""
    if not argv:
        return None
    from ov.cli.flags import COMMANDS  # noqa: PLC0415

    spec = COMMANDS.get(argv[0])
    if spec is None:
        return None
    p = _FastArgs(spec)
    i, n = 1, len(argv)
    while i < n:
        a = argv[i]
        i += 1
        if a == "--":
            p.args.extend(argv[i:])
            break
        if a.startswith("--"):
            nxt = p.long(a, argv, i)
        elif a.startswith("-") and len(a) > 1:
            nxt = p.short(a, argv, i)
        else:
            p.args.append(a)
            continue
        if nxt is None:
            return None
        i = nxt
    if not p.bind(spec):
        return None
    if any(var in os.environ for dest, var in spec["envvars"].items() if dest not in p.given):
        return None  # click would read it: its conversion and messages are Typer's
    return argv[0], p.values


# Options of `ov search` that only context mode reads; with any of them, or a --mode other
# than list, the command line goes to Typer (ov/cli/app.py's search_cmd, then context_command).
_CONTEXT_ONLY = ("max_tokens", "detail", "session_id", "dedup_turns")


def fast(argv: Sequence[str]) -> int | None:
    """Run `ov grep`, `ov glob`, `ov find` or `ov search` (list mode) without Typer; None
    when `parse_fast` declines or the line is one for context mode."""
    parsed = parse_fast(argv)
    if parsed is None:
        return None
    name, params = parsed
    if name == "grep":
        if params["pattern"] is None and not (params["regexps"] or params["files"]
                                              or params["type_list"]):
            return None  # no PATTERN: Typer's usage message
        return grep_command(**params)
    if name == "glob":
        return glob_command(**params)
    if name == "find":
        return search_command(search_type="semantic", **params)
    if params.pop("mode") != "list" or any(params.pop(k) is not None for k in _CONTEXT_ONLY):
        return None
    return search_command(**params)
