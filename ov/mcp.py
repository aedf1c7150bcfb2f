"""`ov mcp`: a Model Context Protocol server over stdio, serving one tree.

Tools `search` (list and context modes), `find`, `grep`, `glob`, `read` and `status`, on
the library API (`ov.api`): their arguments are the command line's flags by name, their
results the `-o json` envelope the command line prints (`{"status":"ok","result":...,
"usage":...}`), as the tool's structured content and as its JSON text. A failure is a
tool result with `isError` and the same `{"status":"error","error":{code, message,
retryable, field}}` the command line prints; the server goes on. Paths in arguments and
results are relative to the tree's root; a path argument that lies outside the tree
(absolute, climbing, or through a link leading out) is `invalid_path`, grep's and glob's
too, which on the command line may name any folder.

Warm: one open index (one SQLite connection) and one loaded model for the server's
life; a query pays only its own work. Ranked queries run one at a time on that
connection, in a worker thread, so the event loop keeps reading requests; grep and glob
read the files and run beside them.

First: the server answers `initialize` at once. The index is opened (on first use built:
keywords within a few seconds, vectors after, as for a first `ov search`) in a thread;
grep and glob answer from the files meanwhile, and a ranked tool called before it is
open waits up to OPEN_WAIT_S, then says `index_busy` (retryable). An index that cannot be
opened (damaged, from a newer ov) does not stop the server: every call that needs it gets
that error, and grep and glob go on.

Fresh: an `ov.watch.Watcher` thread re-indexes each saved, added or deleted file within
a moment of the change, through its own connection (WAL: a query sees the last committed
state) and the same model.

The SDK (`mcp`, with pydantic and anyio) is imported only by this module, which only
`ov mcp` imports: no other command pays for it.
"""

from __future__ import annotations

import re
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ov import api
from ov.config import MAX_LIMIT
from ov.context import MAX_BUDGET
from ov.errors import OvError, debug_enabled
from ov.paths import resolve
from ov.read import OutsideRoot, binary_file, resolve_under
from ov.render import dumps, to_data

# ---- the tools' arguments: one table, read by the schemas and by the checks ---------------

# name -> (JSON type, description[, more JSON Schema: enum, minimum, maximum]); "array"
# means an array of strings; "level" (search's tiers) a string or an integer
Param = tuple
_AT_LEAST_0 = {"minimum": 0}
# The most grep or glob records one reply carries: `node_limit` 1,000,000 over a tree of
# 263 files made one 246 MB JSON-RPC line (its text and structured copies) and took the
# server to 3.7 GB; no agent reads that much, and `paths`, `glob` or `type` narrow a search.
MCP_NODE_MAX = 10_000

_EXCLUDE_URI = ("Leave out these files or folders (root-relative), or the paths a glob holding *, ? or [ "
                "matches, as in globs (*_test.go, **/testdata; testdata alone is a path).")
_GLOBS = "Only paths matching these globs; !GLOB excludes (gitignore syntax, root-relative; the last match wins)."
_SEARCH_COMMON: dict[str, Param] = {
    "limit": ("integer", "Hits per page, 1-50 (default 10).", {"minimum": 1, "maximum": MAX_LIMIT}),
    "threshold": ("number", "Drop hits scoring below this (0-1; scores share one scale across queries).",
                  {"minimum": 0, "maximum": 1}),
    "after": ("string", "Only files changed at or after this time: 2h, 7d, 2024-05-01 or ISO 8601 (UTC)."),
    "before": ("string", "Only files changed before this time (same forms as after)."),
    "time_field": ("string", "Time used by after/before: updated_at (default) or created_at.",
                   {"enum": ["updated_at", "created_at"]}),
    "tags": ("array", "Only files with every one of these k=v tags."),
    "types": ("array", "Only these file types or extensions (py, md, rust, .txt ...)."),
    "level": ("level", "Tiers searched: 0 abstract, 1 overview, 2 full text; one, or several "
                       "comma-separated (\"1,2\"; default 2)."),
    "exclude_uri": ("array", _EXCLUDE_URI),
    "globs": ("array", _GLOBS),
}
_LIST_ONLY: dict[str, Param] = {
    "uri": ("array", "Only inside these files or folders (root-relative)."),
    "cursor": ("string", "A previous result's next_cursor: the next page of the same query."),
    "explain": ("boolean", "Add each branch's raw score and rank to every hit."),
    "read_content": ("boolean", "Inline each hit's whole file as content."),
    "all_chunks": ("boolean", "Every matching chunk, not one hit per file."),
}
_CONTEXT_ONLY: dict[str, Param] = {
    "max_tokens": ("integer", "Context mode: token budget of the block (default 1600; chars/4).",
                   {"minimum": 1, "maximum": MAX_BUDGET}),
    "detail": ("string", "Context mode: default tier, abstract, overview or full, or JSON per "
                         'category ({"code":"full"}).'),
    "session_id": ("string", "Context mode: record what is served under this id, so later turns "
                             "skip it."),
    "dedup_turns": ("integer", "Context mode: skip entries served to the session in its last K "
                               "turns (default 1).", _AT_LEAST_0),
}

TOOLS: dict[str, dict[str, Any]] = {
    "search": {
        "description": (
            "Ranked search of the indexed tree by meaning and keywords: the tool for questions in "
            "plain words ('where are retries configured', 'how is the cache invalidated'). "
            "search_type hybrid (default: keywords + meaning), keywords, or semantic. "
            "mode list (default) returns hits {rank, path, start_line, end_line, line (the line the hit is shown at: "
            "the definition of the name asked for, or the best match), score 0-1, level, "
            "excerpt {text, start, end}, and duplicates [{path, start_line, end_line}]: other files "
            "whose passage is word for word this one} best first, and next_cursor when more exist "
            "(pass it as cursor). mode context returns the best files packed under max_tokens as "
            "entries and a `rendered` block ready to put in a prompt (in the text result the entries "
            "come without their text, which `rendered` holds). For an exact string or regex use grep; "
            "for file names use glob."),
        "required": ["query"],
        "params": {
            "query": ("string", "What to look for, in plain words."),
            "mode": ("string", "list (ranked hits, default) or context (packed for a prompt).",
                     {"enum": ["list", "context"]}),
            "search_type": ("string", "hybrid (default), keywords or semantic.",
                            {"enum": ["hybrid", "keywords", "semantic"]}),
            **_SEARCH_COMMON, **_LIST_ONLY, **_CONTEXT_ONLY,
        },
    },
    "find": {
        "description": (
            "Semantic search only (vectors, no keywords): passages close in meaning to the query "
            "even when they share no word with it. Same hits and cursor as search's list mode; "
            "prefer search unless keywords mislead."),
        "required": ["query"],
        "params": {"query": ("string", "What to look for, in plain words."), **_SEARCH_COMMON,
                   **_LIST_ONLY},
    },
    "grep": {
        "description": (
            "Exact search of file contents for a regex (ripgrep syntax) or, with fixed, a literal "
            "string, straight from the files (always current). Returns matches {path, line, "
            "content, submatches [{start, end, text}] (code-point columns), before_context, "
            "after_context} ordered by path and line, or per-file counts (count) or paths "
            "(files_with_matches); truncated is true when node_limit cut the result. Use for "
            "identifiers, error messages, exact phrases."),
        "required": ["pattern"],
        "params": {
            "pattern": ("string", "A regex (or, with fixed, a plain string)."),
            "paths": ("array", "Files or folders to search (default: the whole tree)."),
            "fixed": ("boolean", "The pattern is a plain string."),
            "ignore_case": ("boolean", "Fold case (Unicode simple folding)."),
            "word": ("boolean", "Only matches with no word character on either side."),
            "line": ("boolean", "Only matches that are a whole line (wins over word)."),
            "multiline": ("boolean", "Let matches span lines."),
            "before": ("integer", "Lines of context before each match.", _AT_LEAST_0),
            "after": ("integer", "Lines of context after each match.", _AT_LEAST_0),
            "context": ("integer", "Lines of context before and after each match.", _AT_LEAST_0),
            "globs": ("array", _GLOBS),
            "types": ("array", "Only these file types (py, rust, md ...)."),
            "types_not": ("array", "Leave out these file types, as rg -T (wins over types)."),
            "exclude_uri": ("array", _EXCLUDE_URI),
            "hidden": ("boolean", "Search dotfiles and dot-folders too."),
            "no_ignore": ("boolean", "Disregard .gitignore, .ignore, .rgignore and .ovignore."),
            "node_limit": ("integer", f"Most matches (or files) returned (default 256, at most {MCP_NODE_MAX:,}).",
                           {"minimum": 1, "maximum": MCP_NODE_MAX}),
            "level_limit": ("integer", "Folder depth below each path (default: no limit).", _AT_LEAST_0),
            "tags": ("array", "Only indexed files with every one of these k=v tags."),
            "invert": ("boolean", "Lines that do not match."),
            "max_count": ("integer", "At most this many matching lines per file.", _AT_LEAST_0),
            "timeout": ("number", "Seconds before the search stops with deadline_exceeded (default 60)."),
            "count": ("boolean", "Per-file numbers of matching lines instead of matches."),
            "files_with_matches": ("boolean", "Only the paths of files with a match."),
            "no_index": ("boolean", "Do not use the index to skip files."),
        },
    },
    "glob": {
        "description": (
            "List files whose root-relative path matches a glob: * and ? never cross /, ** spans "
            "folders, [...] and {a,b}. Returns matches (paths, or objects with the asked fields), "
            "count, and truncated when node_limit cut. Use to find files by name or extension."),
        "required": ["pattern"],
        "params": {
            "pattern": ("string", "A glob such as **/*.py or src/*.{c,h}."),
            "path": ("string", "Folder to list (default: the whole tree)."),
            "ignore_case": ("boolean", "Fold case."),
            "hidden": ("boolean", "Include dotfiles and dot-folders."),
            "no_ignore": ("boolean", "Disregard .gitignore, .ignore, .rgignore and .ovignore."),
            "node_limit": ("integer", f"Most paths returned (default 256, at most {MCP_NODE_MAX:,}).",
                           {"minimum": 1, "maximum": MCP_NODE_MAX}),
            "level_limit": ("integer", "Folder depth below path (default: no limit).", _AT_LEAST_0),
            "fields": ("string", "Fields per path, comma-separated: name,path,type,size,mode,mtime,tags."),
            "exclude_uri": ("array", _EXCLUDE_URI),
            "tags": ("array", "Only indexed files with every one of these k=v tags."),
        },
    },
    "read": {
        "description": (
            "Read one tier of an indexed file or folder: level 0 abstract (~256 characters), 1 "
            "overview (headings, class and function signatures), 2 full text (default for a "
            "file; a folder's 2 lists its files). Read the abstract or overview first to decide "
            "whether the full text is worth its tokens. `file:LINE` (a hit's path and line) "
            "reads only the indexed passage that holds the line, `file:START-END` those lines; "
            "the result's start_line and end_line say which."),
        "required": ["path"],
        "params": {
            "path": ("string", "A file or folder, relative to the root; `file:LINE` or "
                     "`file:START-END` for lines of a file (level 2 only)."),
            "level": ("integer", "0 abstract, 1 overview, 2 full text.", {"enum": [0, 1, 2]}),
        },
    },
    "status": {
        "description": (
            "What is indexed: root, files, chunks, embedded coverage, stale and missing files, "
            "model, schema and settings; `watch` says how many changes the server has re-indexed "
            "since it started and how many wait."),
        "required": [],
        "params": {},
    },
}

_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list}


def input_schema(name: str) -> dict[str, Any]:
    """A tool's JSON Schema, from its table."""
    spec = TOOLS[name]
    props = {}
    for arg, (typ, desc, *more) in spec["params"].items():
        props[arg] = ({"type": "array", "items": {"type": "string"}, "description": desc}
                      if typ == "array" else {"type": ["string", "integer"], "description": desc}
                      if typ == "level" else {"type": typ, "description": desc})
        props[arg].update(*more)
    return {"type": "object", "properties": props, "required": list(spec["required"]),
            "additionalProperties": False}


class _ToolArgError(OvError):
    """An error `check_args` words in the tool's own arguments: `as_arguments` leaves it be
    (it made "grep takes no argument 'path'" into "...'paths'", the name it does take)."""


def check_args(name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments of a call, checked against the tool's table: an unknown name, a
    missing required one or a value of the wrong type is `invalid_argument` (a typo must
    not be a silently ignored option). Nulls count as absent."""
    spec = TOOLS[name]
    out = {}
    for arg, value in (args or {}).items():
        if arg not in spec["params"]:
            near = [p for p in (arg + "s", arg[:-1]) if p != arg and p in spec["params"]]
            raise _ToolArgError("invalid_argument", f"{name} takes no argument {arg!r}"
                                + (f" (did you mean {near[0]!r}?)" if near else "")
                                + f" (it takes: {', '.join(spec['params']) or 'none'})", field=arg)
        if value is None:
            continue
        typ = spec["params"][arg][0]
        if typ == "level":  # tiers: "1,2", "2" or 2
            typ = "string"
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
        ok = isinstance(value, _JSON_TYPES[typ]) and not (typ in ("integer", "number") and isinstance(value, bool))
        if typ == "array" and ok:
            ok = all(isinstance(v, str) for v in value)
        if not ok:
            raise OvError("invalid_argument", f"{arg} must be {'an array of strings' if typ == 'array' else typ}",
                          field=arg)
        if arg == "node_limit" and value > MCP_NODE_MAX:  # (the library checks the rest of the bounds)
            raise OvError("invalid_argument", f"node_limit must be at most {MCP_NODE_MAX:,} through the server: "
                          "no agent reads more in one reply (paths, globs or types narrow a search)", field=arg)
        out[arg] = value
    for arg in spec["required"]:
        if arg not in out:
            raise OvError("invalid_argument", f"{name} needs {arg}", field=arg)
    return out


# The library's checks name the command line's flags ("--limit must be between 1 and
# 50"); a client of the server knows the tool's arguments. A flag the tool takes as an
# argument is named as the argument: by its long name with `_` for `-`, or by these.
_FLAG_ARGS = {"path": "paths", "type": "types", "type_not": "types_not", "-T": "types_not", "glob": "globs",
              "invert_match": "invert", "fixed_strings": "fixed",
              "word_regexp": "word", "line_regexp": "line", "after_context": "after", "before_context": "before",
              "max_depth": "level_limit", "-L": "level", "-U": "multiline", "-v": "invert",
              "-t": "types", "-n": "limit", "-u": "uri", "-g": "globs", "-A": "after",
              "-B": "before", "-C": "context", "-F": "fixed", "-i": "ignore_case", "-w": "word", "-x": "line",
              "-c": "count", "-l": "files_with_matches", "-f": "fields", "-e": "pattern",
              "deadline_s": "timeout"}
# `-x/--long`, `--long` or `-x`, not inside a word or a path, nor right after a quote (a
# value quoted in a message is the user's, kept as given)
_FLAG = re.compile(r"(?<![\w'\"/-])(?:-[A-Za-z0-9]/)?--[a-z][a-z0-9-]*(?![\w/])"
                   r"|(?<![\w'\"/-])-[A-Za-z0-9](?![\w/-])")


def as_arguments(err: OvError, tool: str, args: dict[str, Any] | None = None) -> OvError:
    """`err` with the flags its message names, and its `field`, as `tool`'s arguments (a
    flag the tool does not take stays as written). The text of the call's own string
    arguments (`args`: a path named `docs/-i`, a pattern) is never touched."""
    if isinstance(err, _ToolArgError):
        return err
    params = TOOLS.get(tool, {}).get("params", {})

    def arg(flag: str) -> str | None:
        name = flag[2:].replace("-", "_") if flag.startswith("--") else flag
        name = _FLAG_ARGS.get(name, name)
        return name if name in params else None

    field = err.field if err.field is None or err.field in params else (arg(err.field) or err.field)
    message = err.message
    # a library keyword the tool names otherwise (deadline_s: the tool's timeout), as a word;
    # then the flags. A name is the user's own text only inside an argument's value (a path
    # `docs/-i`); an argument that merely overlaps it (a query "x" in `--max-tokens`) does not
    # keep it.
    steps = [(_FLAG, lambda m: arg(m.group().rpartition("/")[2]) or m.group())]
    if field != err.field and not err.field.startswith("-"):
        steps.insert(0, (re.compile(rf"(?<![\w-]){re.escape(err.field)}(?![\w-])"), lambda m: field))
    for pattern, name in steps:
        kept = _spans_of(message, args or {})
        message = pattern.sub(lambda m: m.group() if any(a <= m.start() and m.end() <= b for a, b in kept)
                              else name(m), message)
    if message == err.message and field == err.field:
        return err
    return OvError(err.code, message, retryable=err.retryable, field=field)


def _spans_of(message: str, args: dict[str, Any]) -> list[tuple[int, int]]:
    """Where the call's string arguments (lists of them too) appear in `message`."""
    values = [v for x in args.values() for v in (x if isinstance(x, list) else [x])
              if isinstance(v, str) and v]
    spans = []
    for v in values:
        at = message.find(v)
        while at >= 0:
            spans.append((at, at + len(v)))
            at = message.find(v, at + 1)
    return spans


# ---- the tools: each returns a result dataclass (or data) from the API ---------------------


OPEN_WAIT_S = 20.0  # a call that needs the index waits this long for the server to open it
REOPEN_S = 2.0  # an index that could not be opened is tried again by a call this long after
INDEXED = ("search", "find", "read", "status")  # the tools that need the index
# a search waits this long at most for the watcher to apply the changes heard before it
# (`_settle`): a batch is gathered for 50 ms, then written, and embedded when it is small
SETTLE_S = 2.0
UNAPPLIED_CHECKS = 512  # queued paths `_unapplied` judges at most in one call


class Opening:
    """The index being opened (`open_tree`'s work) in a thread: `wait` for it, then
    `value` is (index, watcher), or `error` says why there is none."""

    def __init__(self, work: Callable[[], tuple[Any, Any]], closing: threading.Event | None = None) -> None:
        self.work = work
        # set as the server closes: a first build stops at its next batch of files, what
        # it wrote kept and the rest left to its worker (the server had taken 5-11 s to
        # leave a client that closed during the first build of a 42 MB tree)
        self.closing = closing if closing is not None else threading.Event()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.value: tuple[Any, Any] | None = None
        self.error: OvError | None = None
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(work,), name="ov-open", daemon=True).start()

    def _run(self, work: Callable[[], tuple[Any, Any]]) -> None:
        try:
            self.value = work()
        except OvError as e:
            self.error = e
        except Exception as e:  # a bug: told on every call that needs the index
            self.error = OvError("internal", f"the index could not be opened: {type(e).__name__}: {e}")
        finally:
            self.ended = time.monotonic()
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class Tools:
    """The six tools over one index: open (`ix`), or being opened (`opening`). Not
    thread-safe by itself: `Server` runs the ranked ones one at a time."""

    def __init__(self, ix=None, watcher=None, *, root: Path | None = None,
                 opening: Opening | None = None) -> None:
        self.ix = ix
        self.root = ix.root if ix is not None else Path(root)
        self.watcher = watcher
        self.opening = opening

    def _open(self) -> None:
        """The index, once the server has opened it: `index_busy` (retryable) while it
        is still being built or opened, or the error that kept it from opening."""
        if self.ix is not None:
            return
        op = self.opening
        if (op is not None and op.error is not None and op.ended is not None
                and time.monotonic() - op.ended > REOPEN_S):
            # the fix the error named (`ov index --full`) may have been run since: try again
            op = self.opening = Opening(op.work, op.closing)
        if op is None or not op.wait(OPEN_WAIT_S):
            spent = time.monotonic() - op.started if op is not None else 0.0
            raise OvError("index_busy", f"the index of {self.root} is being opened (on first use built: "
                          f"keywords first, {spent:.0f} s so far); grep and glob answer from the files "
                          "meanwhile; try again in a few seconds", retryable=True)
        if op.error is not None:
            e = op.error
            raise OvError(e.code, f"{e.message} (grep and glob answer from the files meanwhile)",
                          retryable=e.retryable, field=e.field)
        self.adopt()

    def adopt(self) -> None:
        """Take the opening's index and watcher if it has them now (no wait)."""
        op = self.opening
        if self.ix is None and op is not None and op.value is not None:
            self.ix, self.watcher = op.value

    def call(self, name: str, args: dict[str, Any] | None) -> dict[str, Any]:
        """The envelope of one call: `{"status":"ok","result":...,"usage":...}`, or
        `{"status":"error","error":...}`; never raises."""
        t0 = time.perf_counter()
        try:
            if name not in TOOLS:
                raise OvError("invalid_argument", f"no tool {name!r} (tools: {', '.join(TOOLS)})",
                              field="name")
            checked = check_args(name, args)
            if name in INDEXED:
                self._open()
            result = getattr(self, f"_{name}")(**checked)
        except OvError as e:
            return {"status": "error", "error": as_arguments(e, name, args).to_dict()}
        except Exception as e:  # a bug: reported, and the server goes on
            if debug_enabled():
                import traceback  # noqa: PLC0415

                traceback.print_exc()
            return {"status": "error", "error": OvError(
                "internal", f"{type(e).__name__}: {e} (set OV_DEBUG=1 for the traceback)").to_dict()}
        return {"status": "ok", "result": result,
                "usage": {"elapsed_ms": int((time.perf_counter() - t0) * 1000)}}

    def _in_tree(self, p: str, field: str) -> str:
        """A grep or glob path argument as a root-relative path ("." for the root), or
        `invalid_path` when it lies outside the served tree: absolute or climbing out as
        written (`resolve`, as `read` checks its path), or through a link that leads out
        now (`resolve_under`). The command line searches any folder a user names, as rg
        does; the server serves one tree, to a client whose arguments may be any text."""
        rel = resolve(self.root, self.root, p, must_exist=False, field=field, links=True)
        if rel:
            try:
                resolve_under(str(self.root), rel)
            except OutsideRoot:
                raise OvError("invalid_path", f"{p}: leads outside the index root {self.root}",
                              field=field) from None
        return rel or "."

    def _search(self, query: str, mode: str = "list", max_tokens: int | None = None,
                detail: str | None = None, session_id: str | None = None,
                dedup_turns: int | None = None, **options: Any) -> Any:
        verdicts = self._settle()
        if mode == "context":
            ignored = [k for k in ("cursor", "explain", "read_content", "all_chunks") if options.pop(k, None)]
            return to_data(self.ix.context(query, max_tokens=max_tokens, detail=detail,
                                           session_id=session_id, dedup_turns=dedup_turns,
                                           ignored=ignored, **options))
        if mode != "list":
            raise OvError("invalid_argument", f"unknown mode {mode!r} (use list or context)", field="mode")
        given = [k for k, v in (("max_tokens", max_tokens), ("detail", detail), ("session_id", session_id),
                                ("dedup_turns", dedup_turns)) if v is not None]
        if given:
            raise OvError("invalid_argument", f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'} with mode context",
                          field=given[0])
        return self._behind(to_data(self._coming(self.ix.search, query, **options)), verdicts)

    def _find(self, query: str, **options: Any) -> Any:
        verdicts = self._settle()
        return self._behind(to_data(self._coming(self.ix.find, query, **options)), verdicts)

    def _coming(self, ranked: Callable[..., Any], query: str, **options: Any) -> Any:
        """`ranked(query, ...)`, with `unsupported` "no vectors yet" made `index_busy`
        (retryable) while this server's watcher is to add them: between two of its
        stretches of embedding no process holds the index, and the library then takes
        the vectors for ones nobody is adding."""
        try:
            return ranked(query, **options)
        except OvError as e:
            w = self.watcher
            if (e.code != "unsupported" or "no vectors yet" not in e.message or w is None
                    or not w.opts.embed or not (w.unembedded or w.state.catching_up)):
                raise
            raise OvError("index_busy", "semantic search has no vectors to read yet: this server is adding "
                          "them (`status` shows the coverage); try again", retryable=True,
                          field=e.field) from None

    def _settle(self) -> dict[str, bool]:
        """Wait, SETTLE_S at most, until the watcher has the changes its journal has heard
        of in the index's keyword rows: an agent that saves a file and searches for it at
        once found nothing (the watcher gathers a batch for 50 ms, then writes it), and no
        warning said so. Changes to files the index leaves out (an ignored log written
        every few ms, a binary file) are not waited for, nor the vectors of a batch.
        Without a journal (watchfiles) there is nothing to count. Returns each queued
        path's verdict (`_waits_for`), for `_behind`."""
        w, verdicts = self.watcher, {}
        journal = getattr(w, "journal", None)
        if journal is None or not journal.complete or w.state.catching_up:
            return verdicts  # (a pass over the whole tree may last minutes: the result says so)
        # the kernel queued the event of a file saved before this call, but the journal's
        # thread may not have read it yet: a search 8-77 ms after a save had found nothing
        # waiting, and answered without the file (a review, 7 misses in 24 tries)
        journal.drain()
        deadline = time.monotonic() + SETTLE_S
        while not w.stop_event.is_set() and self._unapplied(verdicts, deadline, first=True) \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        return verdicts

    def _unapplied(self, verdicts: dict[str, bool], deadline: float, first: bool = False) -> int:
        """The changes not in the keyword rows yet (at least so many): with the watcher's
        journal, the queued paths it would index (`_waits_for`, each judged once in
        `verdicts`; past `deadline` or UNAPPLIED_CHECKS of them, the rest are counted
        unjudged), or the batch being written until its keyword rows are committed
        (`WatchState.applied`); without, the batch being applied. `first`: stop at the
        first."""
        w = self.watcher
        journal = getattr(w, "journal", None)
        if journal is None or not journal.complete:
            return w.state.pending
        queued, judged = 0, 0
        for rel in dict.fromkeys(journal.queued_paths()):
            if rel not in verdicts and judged < UNAPPLIED_CHECKS and time.monotonic() < deadline:
                verdicts[rel] = self._waits_for(rel)
                judged += 1
            if verdicts.get(rel, True):
                queued += 1
                if first:
                    break
        return max(queued, w.state.pending if journal.handed > w.state.applied else 0)

    def _waits_for(self, rel: str) -> bool:
        """Whether a search waits for a change to `rel`: an ignore file or the tree's config
        (the watcher re-reads what they govern), or a file the walk would index that is not
        binary."""
        from ov.walk import is_ignored  # noqa: PLC0415 - the server starts without the walk
        from ov.watch import RULE_FILES  # noqa: PLC0415

        w = self.watcher
        if rel.rsplit("/", 1)[-1] in RULE_FILES or rel in (".ov/config.toml", "pyproject.toml"):
            return True
        return not is_ignored(w.root, rel, w.opts.walk) and not binary_file(str(w.root), rel)

    def _behind(self, data: Any, verdicts: dict[str, bool]) -> Any:
        """A ranked result read while the watcher has changes it has not applied yet (a
        catch-up over the whole tree, a batch being written, or one waiting for another
        indexer): says so, since a file changed just now may be missing from the hits or
        shown as it was, and no hit is counted stale for it. `verdicts`: `_settle`'s."""
        if self.watcher is None:
            return data
        w = self.watcher.state
        unapplied = self._unapplied(verdicts, time.monotonic() + 0.2)
        if not (w.catching_up or unapplied):
            return data
        what = ("a pass over the whole tree is running" if w.catching_up else
                f"{unapplied} changed path(s) are being re-indexed")
        data.setdefault("warnings", []).append(
            f"the index is catching up with the tree: {what}; files changed in the last moments may "
            "be missing from these hits or shown as they were (grep reads the files as they are)")
        return data

    def _grep(self, pattern: str, paths: list[str] | None = None, before: int | None = None,
              after: int | None = None, context: int | None = None, count: bool = False,
              files_with_matches: bool = False, globs: list[str] | None = None,
              types: list[str] | None = None, exclude_uri: list[str] | None = None,
              tags: list[str] | None = None, level_limit: int | None = None, no_index: bool = False,
              timeout: float | None = None, **options: Any) -> Any:
        from ov import config  # noqa: PLC0415
        from ov.search.matcher import gc_paused  # noqa: PLC0415

        if count and files_with_matches:
            raise OvError("invalid_argument", "count and files_with_matches exclude each other",
                          field="count")
        mode = "count" if count else "files" if files_with_matches else "matches"
        paths = [self._in_tree(p, "paths") for p in paths or ()]
        records, st = api.grep(
            pattern, paths, cwd=self.root, before=before if before is not None else (context or 0),
            after=after if after is not None else (context or 0), globs=globs or (),
            types=types or (), exclude=exclude_uri or (), max_depth=level_limit, mode=mode,
            tags=tags or (), use_index=not no_index, binary_lines=True,  # as `ov grep --json`
            deadline_s=config.GREP_TIMEOUT_S if timeout is None else timeout, **options)
        with gc_paused():
            recs = list(records)
        return to_data(api.grep_result(recs, st, mode))

    def _glob(self, pattern: str, path: str | None = None, fields: str | None = None,
              level_limit: int | None = None, exclude_uri: list[str] | None = None,
              tags: list[str] | None = None, **options: Any) -> Any:
        from ov.search.glob import parse_fields  # noqa: PLC0415

        if path is not None:
            path = self._in_tree(path, "path")
        parts = pattern.split("/")
        if pattern.startswith("/") or ".." in parts:  # the command line's advice names a CLI call
            raise OvError("invalid_pattern", f"the glob {pattern!r} can match nothing: a glob matches "
                          "paths relative to the folder searched (path, or the tree's root), and this "
                          "server serves only the tree under its root", field="pattern")
        return to_data(api.glob(pattern, path, cwd=self.root, max_depth=level_limit,
                                fields=parse_fields(fields), exclude=exclude_uri or (),
                                tags=tags or (), **options))

    def _read(self, path: str, level: int | None = None) -> Any:
        return to_data(self.ix.read(path, level))

    def _status(self) -> Any:
        # the watcher's state first: every update it counts is then in the index read below
        # (read after, an update committed while the index was read was counted but not seen)
        watch = None
        if self.watcher is not None:
            w = self.watcher.state
            watch = {"updates": w.updates, "files_changed": w.files_changed,
                     "last_update": w.last_update, "pending": w.pending,
                     "catching_up": w.catching_up, "errors": list(w.errors)}
        data = to_data(self.ix.status())
        if watch is not None:
            data["watch"] = watch
        return data


# ---- the server --------------------------------------------------------------------------

INSTRUCTIONS = (
    "Search one directory tree, offline. `search` answers questions in plain words (ranked "
    "hits, or mode context for a prompt-ready block under a token budget); `grep` finds exact "
    "strings and regexes; `glob` finds files by path; `read` shows a file's abstract, overview "
    "or full text; `find` is meaning-only search; `status` says what is indexed. Paths are "
    "relative to the tree's root. The index follows saved files within a second or two.")


# One intra-op thread: a query is a few tokens, and two threads only add their hand-offs.
# One query's embedding on 2 cores at load 21: 34-48 ms wall, 8-10 ms CPU with one thread;
# 72-92 ms wall, 16-18 ms CPU with two (medians of 30, the same process).
QUERY_THREADS = 1


class SharedEmbedder:
    """One model for the query thread and the watcher's: calls take turns (the tokenizer
    is not documented as safe across threads; a query waits at most one indexing batch)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = getattr(inner, "dim", None)
        self._lock = threading.Lock()

    def embed(self, texts, *args, **kwargs):
        with self._lock:
            return self.inner.embed(texts, *args, **kwargs)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return self.inner.count_tokens(text)


def _stderr(prefix: str = "ov: ") -> Callable[[str], None]:
    def say(msg: str) -> None:
        sys.stderr.write(f"{prefix}{msg}\n")
        sys.stderr.flush()

    return say


def open_tree(path: Path | None, db: Path | None = None, *, watch: bool = True,
              notice: Callable[[str], None] | None = None) -> Tools:
    """The index of `path` (built first if there is none), its model loaded once, and a
    watcher started on the tree (with `watch`)."""
    return Tools(*_open_index(_scope(path), db, watch=watch, notice=notice))


def _scope(path: Path | None) -> Path:
    """The folder to serve: `not_found` (or `invalid_path` for a file) before anything starts."""
    scope = Path.cwd() if path is None else Path(path)
    if not scope.is_dir():
        raise OvError("not_found" if not scope.exists() else "invalid_path",
                      f"{scope}: no such folder" if not scope.exists() else
                      f"{scope} is a file: `ov mcp` serves a folder (its tree)", field="path")
    return scope


def opening_tools(path: Path | None, db: Path | None = None, *, watch: bool = True,
                  notice: Callable[[str], None] | None = None) -> Tools:
    """`open_tree`'s work started in a thread (`Opening`): the tools answer grep and glob at
    once, and the others once the index is open."""
    scope = _scope(path)
    found = api.locate(scope, db)  # a --db that is not there: said before the server starts
    root = found[1] if found is not None else scope.resolve()
    say = notice or _stderr()
    said: list[str] = []
    closing = threading.Event()

    def work() -> tuple[Any, Any]:
        try:
            return _open_index(scope, db, watch=watch, notice=notice, stop=closing.is_set)
        except OvError as e:
            if e.message not in said:  # once, not at every call that tries it again
                said.append(e.message)
                say(f"the index cannot be used ({e.code}: {e.message}); grep and glob answer from the files")
            raise

    return Tools(root=root, opening=Opening(work, closing))


def _open_index(scope: Path, db: Path | None = None, *, watch: bool = True,
                notice: Callable[[str], None] | None = None,
                stop: Callable[[], bool] | None = None) -> tuple[Any, Any]:
    """(index, watcher) of `open_tree`; `stop` ends a first build early (`Opening.closing`)."""
    import os  # noqa: PLC0415

    # One thread for numpy's BLAS, as for the query model (QUERY_THREADS): the server
    # answers one ranked query at a time, and a second BLAS thread spins on after each
    # matrix product, taking the core the rest of the query runs on (semantic 65 -> 33 ms,
    # hybrid 172 -> 70 ms on 2 shared cores at load 4). Read when numpy loads, just below.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ov.embed import load_embedder  # noqa: PLC0415
    from ov.store.db import writable  # noqa: PLC0415

    notice = notice or _stderr()
    warn = _stderr("ov: warning: ")
    embedder = None
    if api.locate(scope, db) is None:  # first use: the build embeds, so the model loads now
        embedder = SharedEmbedder(load_embedder("index", threads=QUERY_THREADS))
    ix = api.Index.open(scope, db=db, auto_index=True, notice=notice, warn=warn, embedder=embedder, stop=stop)
    if db is None and os.path.isdir(scope) and os.path.realpath(ix.root) != os.path.realpath(scope):
        # the nearest index above PATH (as git finds .git): its tools answer for that tree,
        # which `ov mcp PATH` had not said (a review: a grep under `src` found a file above it)
        notice(f"serving {ix.root}, the tree of the index found above {scope} "
               f"({ix.store.path}); its tools search all of that tree")
    if stop is not None and stop():
        # the server is closing: no model, no watch (whose catch-up would stop the worker
        # the first build just started to finish the index, then stop itself)
        return ix, None
    try:
        from ov.indexer import EMBED_META  # noqa: PLC0415

        vectors = bool((ix.manifest().index or {}).get("vectors"))
        # vectors coming (a first use's worker has not committed one yet) count as vectors:
        # the watcher must not take the index for a --no-embed one and turn embedding off
        embeds = vectors or ix.store.get_meta(EMBED_META) == "on"
        if embeds and embedder is None:
            # the "index" profile: slower to load, ~5x faster per query (ov/embed.py)
            embedder = SharedEmbedder(load_embedder("index", threads=QUERY_THREADS))
        if embedder is not None:
            embedder.embed(["warm up"])  # the first run of a session is slower than the rest
            ix.embedder = embedder
        ix.keep_keywords()
        if vectors:
            ix.keep_vectors()  # loaded now, not in the first query
        watcher = None
        if watch and not writable(ix.store.path):
            warn("not watching the tree: the index is read-only for this user")
        elif watch:
            first = [True]

            def updated(rep) -> None:
                if first[0]:  # the catch-up: the index now matches the tree
                    first[0] = False
                    notice(f"watching {ix.root}; {api.summary(rep)}")
                elif rep.added or rep.updated or rep.removed:
                    # unchanged: files of the batch read and found as indexed (a batch reads
                    # only what the OS reported, never the rest of the tree)
                    notice(f"re-indexed: {rep.added} added, {rep.updated} updated, "
                           f"{rep.removed} removed, {rep.unchanged} unchanged in {rep.seconds:.2f}s")

            watcher = api.watcher(ix.root, db=ix.store.path, embed=embeds, embedder=embedder,
                                  on_update=updated, warn=warn).start()
            # the watcher re-indexes each change, and a result says when some wait
            # (`Tools`): a walk of the tree at every query would be the server's latency
            ix.store.checks_drift = False
    except BaseException:
        ix.close()
        raise
    return ix, watcher


def require_packages(watch: bool = True) -> None:
    """`not_found`, naming what to install, where a package the server needs does not
    import: checked before the index is built or a worker started, which a server that
    cannot start should not leave behind."""
    from ov.doctor import install_hint, server_imports  # noqa: PLC0415

    failed = server_imports(watch)
    if failed:
        why = "; ".join(f"{p} ({e})" for p, e in failed.items())
        raise OvError("not_found", f"ov mcp cannot start: these packages do not import: {why}; "
                      f"install with: {install_hint(failed)}")


def serve(path: Path | None = None, db: Path | None = None, *, watch: bool = True) -> int:
    """Run the server on stdin/stdout until the client closes it; returns an exit status."""
    require_packages(watch)
    tools = opening_tools(path, db, watch=watch)
    _stop_on_signals(tools)
    try:
        import anyio  # noqa: PLC0415

        anyio.run(_serve, tools)
    finally:
        _close(tools)
    return 0


def _close(tools: Tools) -> None:
    """Stop the watcher and close the index; an opening still under way (a first build's
    keyword phase) is told to stop at its next batch of files and waited for, so no
    write is cut short at exit."""
    if tools.ix is None and tools.opening is not None:
        tools.opening.closing.set()
        tools.opening.wait(OPEN_WAIT_S * 3)
    tools.adopt()
    if tools.watcher is not None:
        tools.watcher.stop()
    if tools.ix is not None:
        tools.ix.close()


def _stop_on_signals(tools: Tools) -> None:
    """Ctrl-C or SIGTERM ends the server at once: the SDK reads stdin in a thread that a
    signal does not wake, so it used to live on until the client wrote again. The watcher
    stops (its change journal's socket is removed) within a few seconds, then the process
    leaves; a write cut short is rolled back, as after any kill."""
    import signal  # noqa: PLC0415
    import threading  # noqa: PLC0415

    def stop(signum, _frame) -> None:
        code = 128 + signum

        def leave() -> None:
            try:
                if tools.opening is not None:
                    tools.opening.closing.set()
                tools.adopt()
                if tools.watcher is not None:
                    tools.watcher.stop(timeout=3.0)
            finally:
                os._exit(code)

        sys.stderr.write("ov: interrupted\n")
        threading.Thread(target=leave, daemon=True).start()
        threading.Timer(5.0, os._exit, (code,)).start()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


def _result(envelope: dict[str, Any]):
    import mcp.types as types  # noqa: PLC0415

    return types.CallToolResult(content=[types.TextContent(text=dumps(_as_text(envelope)))],
                                structured_content=envelope, is_error=envelope["status"] != "ok")


def _as_text(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope as the model reads it: a context pack's entries without their text,
    which `rendered` holds already. Both in the text sent twice the tokens asked for (1,582
    used of 1,600, and 14,001 characters: a review of a Python tree); the structured
    content keeps them."""
    res = envelope.get("result")
    if not (isinstance(res, dict) and "rendered" in res and isinstance(res.get("entries"), list)):
        return envelope
    entries = [{k: v for k, v in e.items() if k != "text"} for e in res["entries"]]
    return {**envelope, "result": {**res, "entries": entries}}


async def _serve(tools: Tools) -> None:
    import anyio  # noqa: PLC0415
    import anyio.to_thread  # noqa: PLC0415
    import mcp.types as types  # noqa: PLC0415
    from mcp.server.lowlevel import Server  # noqa: PLC0415
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    import ov  # noqa: PLC0415

    # ranked tools share the index's one connection: one at a time; grep and glob read files
    ranked = anyio.CapacityLimiter(1)
    files = anyio.CapacityLimiter(2)
    listing = [types.Tool(name=n, description=t["description"], input_schema=input_schema(n),
                          annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False))
               for n, t in TOOLS.items()]

    async def list_tools(_ctx, _params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(_ctx, params) -> types.CallToolResult:
        limiter = files if params.name in ("grep", "glob") else ranked
        envelope = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments,
                                                  limiter=limiter)
        return _result(envelope)

    server = Server("ov", version=ov.__version__, instructions=INSTRUCTIONS,
                    on_list_tools=list_tools, on_call_tool=call_tool)
    lines = _CheckedLines(_own_stdin())
    async with stdio_server(stdin=lines) as (read, write):
        lines.answer(write)
        await server.run(read, write, server.create_initialization_options())


def _own_stdin():
    """The client's pipe, read from a private duplicate of fd 0 while fd 0 itself points
    at the null device (what the SDK does for the stdin it opens itself): nothing the
    server runs can read the client's messages."""
    import io  # noqa: PLC0415

    import anyio  # noqa: PLC0415

    fd = os.dup(0)
    os.set_inheritable(fd, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return anyio.wrap_file(io.TextIOWrapper(os.fdopen(fd, "rb", closefd=False), encoding="utf-8",
                                            errors="replace"))


DROP = "drop"  # `invalid_message`: a line to pass over without an answer


def invalid_message(line: str):
    """The JSON-RPC error to answer for a line that is not one valid message (None for one
    that is): -32700 for text that is not JSON (or nested past what the parser takes),
    -32600 for a batch (MCP sends one message a line since 2025-06-18) or a message the
    protocol does not allow (an id that is neither a string nor an integer, no "jsonrpc":
    "2.0", ...), with the id when it is one. The SDK's reader drops such a line with no
    answer, and the client waits for one. A response of the client's (no method) is never
    answered, valid or not (JSON-RPC 2.0: two sides answering each other's errors would
    never stop): DROP when the SDK would not take it."""
    import json  # noqa: PLC0415

    import mcp.types as types  # noqa: PLC0415

    def error(code: int, message: str, msg_id=None):
        return types.JSONRPCError(jsonrpc="2.0", id=msg_id, error=types.ErrorData(code=code, message=message))

    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as e:
        return error(types.PARSE_ERROR, f"Parse error: not JSON ({e})"[:300])
    if isinstance(obj, list):
        return error(types.INVALID_REQUEST, "Invalid Request: batches are not supported; send one "
                     "message per line")
    response = isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj)
    msg_id = obj.get("id") if isinstance(obj, dict) else None
    if not response and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int))):
        if isinstance(obj, dict) and "id" in obj:  # else taken for a notification, and dropped
            return error(types.INVALID_REQUEST, "Invalid Request: an id is a string or an integer")
        msg_id = None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception as e:  # pydantic's ValidationError (or RecursionError): what is wrong, first
        if response:
            return DROP
        first = e.errors()[0] if hasattr(e, "errors") and e.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ())[1:])  # past the union member's name
        what = f"{first.get('msg', e)}{f': {where}' if where else ''}"
        return error(types.INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message of MCP ({what})"[:500],
                     msg_id)


class _CheckedLines:
    """stdin's lines for the SDK's reader, each checked first (`invalid_message`): a line
    that is not a valid message is answered here, on the server's write stream, and not
    passed on; a blank line is skipped."""

    def __init__(self, source) -> None:
        import anyio  # noqa: PLC0415

        self.source = source
        self.write = None
        self._ready = anyio.Event()

    def answer(self, write) -> None:
        self.write = write
        self._ready.set()

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        from mcp.shared.message import SessionMessage  # noqa: PLC0415

        async for line in self.source:
            if not line.strip():
                continue
            bad = invalid_message(line)
            if bad is None:
                yield line
                continue
            if bad is DROP:
                continue
            await self._ready.wait()
            await self.write.send(SessionMessage(bad))

