"""The command line's half that needs no Typer: running a command (errors become exit
statuses here), grep, glob, find and search (list mode), and the fast start-up path for
them.

`ov grep` and `ov glob` are start-up bound (a search of a whole source tree takes ~0.1 s;
importing typer and building its app took ~0.03 s of it), and `ov find` / `ov search`
have a 0.3 s budget end to end. `fast(argv)` parses their arguments from `ov.flags`, a
table scripts/gen_docs.py generates from the Typer app (tests/test_docs.py holds it
current), and runs the same `grep_command` / `glob_command` / `search_command` the Typer
commands call. It answers only what it fully understands: help, a usage error,
an unknown flag, a value that is not a number, or any other command returns None, and
the caller runs the Typer app, which gives its usual help and messages.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ov.errors import EXIT_ERROR, EXIT_NONE, EXIT_OK, OvError, debug_enabled
from ov.render import FORMATS, Out


def make_out(output: str, json_flag: bool, color: str = "auto") -> Out:
    if output not in FORMATS:
        raise OvError("invalid_argument", f"unknown output format {output!r} (use text, json or jsonl)",
                      field="output")
    fmt = "json" if json_flag else output
    if color not in ("auto", "always", "never"):
        raise OvError("invalid_argument", f"unknown colour choice {color!r} (use auto, always or never)",
                      field="color")
    return Out(fmt, color)


# Control characters in a message (a file name with a newline) would split the one line
# an error gets in text mode; tabs are harmless.
_CONTROL = {i: ("\\n" if i == 10 else "\\r" if i == 13 else f"\\x{i:02x}")
            for i in (*range(32), 127) if i != 9}


def report(out: Out, err: OvError) -> None:
    """Show an error as one line on stderr (text) or one valid UTF-8 JSON object, whatever
    its message quotes: argv bytes that are not UTF-8 arrive as surrogate escapes and
    would make the JSON invalid, a newline would split the line."""
    msg = err.message.encode("utf-8", "backslashreplace").decode("utf-8")
    if out.fmt == "text":
        msg = msg.translate(_CONTROL)
    if msg != err.message:
        err = OvError(err.code, msg, retryable=err.retryable, field=err.field)
    out.error(err)


def _not_utf8(e: Exception) -> OvError | None:
    """An argument (or file name) that is not UTF-8 reaches SQLite or a UTF-8 encoder as
    surrogate escapes; that is bad input, not a bug."""
    if isinstance(e, UnicodeEncodeError) and "surrogate" in str(e.reason) and isinstance(e.object, str):
        shown = e.object if len(e.object) <= 80 else e.object[:77] + "..."
        return OvError("invalid_argument", f"{shown!r} is not valid UTF-8; ov reads names, "
                       "patterns, queries and tags as UTF-8")
    return None


def _db_error(e: Exception) -> OvError | None:
    """An SQLite error no store call mapped (a damaged index shows them anywhere): the
    store's report of it, with the repair advice, rather than `internal`."""
    if not type(e).__module__.startswith(("sqlite3", "sqlean")):
        return None
    from ov.store import map_error  # noqa: PLC0415

    got = map_error(e)
    return None if got.code == "internal" else got


def show(out: Out, result, t0: float, text: Callable[[], None], records=None) -> None:
    """A command's answer in its format: the envelope (json), one line per record or the
    result itself (jsonl), or `text()` for people."""
    if out.fmt == "json":
        out.envelope(result, elapsed_ms(t0))
    elif out.fmt == "jsonl":
        for r in (result,) if records is None else records:
            out.line(r)
    else:
        text()


def run_body(out_args: tuple[str, bool, str], body: Callable[[Out], int]) -> int:
    """Run one command body with the shared error handling; return its exit status.

    `body(out)` renders its own result and returns EXIT_OK or EXIT_NONE; an `OvError`
    becomes its report and EXIT_ERROR, a closed pipe EXIT_OK, any other exception an
    `internal` error (traceback with OV_DEBUG=1).
    """
    try:
        out = make_out(*out_args)
    except OvError as e:
        report(Out("json" if out_args[1] or out_args[0] in ("json", "jsonl") else "text"), e)
        return EXIT_ERROR
    try:
        code = body(out)
    except OvError as e:
        report(out, e)
        code = EXIT_ERROR
    except KeyboardInterrupt:
        out.stderr.write("ov: interrupted\n")
        code = 130
    except BrokenPipeError:
        # `| head` is not a failure (click would have made it exit 1)
        code = closed_pipe(out)
    except Exception as e:  # a bug: report it as `internal`, traceback only on request
        if debug_enabled():
            import traceback  # noqa: PLC0415 - only a bug pays for it

            traceback.print_exc()
        report(out, _not_utf8(e) or _db_error(e) or OvError(
            "internal", f"{type(e).__name__}: {e} (set OV_DEBUG=1 for the traceback)"))
        code = EXIT_ERROR
    try:
        out.stdout.flush()
    except BrokenPipeError:
        code = closed_pipe(out)
    return code


def elapsed_ms(t0: float) -> int:
    return int((time.perf_counter() - t0) * 1000)


def _to_devnull(stream) -> None:
    """Point `stream`'s descriptor at /dev/null, so the bytes still buffered cannot fail
    again (nor the interpreter's own flush at exit)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def closed_pipe(out: Out) -> int:
    """The reader went away (`| head`): stop quietly with exit 0, as ripgrep does."""
    _to_devnull(out.stdout)
    return EXIT_OK


def reader_gone(out: Out) -> bool:
    """True when stdout is a pipe its reader has closed. A large write into such a pipe can
    end as a silent partial write (Python keeps no error), so ask the pipe itself before
    printing a notice after the data; the notice would break the quiet of `| head`."""
    import select  # noqa: PLC0415

    if not hasattr(select, "poll"):
        return False
    try:
        fd = out.stdout.fileno()
        poller = select.poll()
        poller.register(fd, 0)  # POLLERR is always reported: the read end is closed
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _finish_warnings(out: Out, st) -> None:
    from ov.search.scope import unreadable_warning  # noqa: PLC0415

    for w in st.warnings:
        out.warn(w)
    if st.unreadable:
        out.warn(unreadable_warning(st.unreadable))


def cut_summary(st, elapsed: int, count: int | None = None) -> dict:
    """The last JSON Lines record of a run a limit cut (DESIGN.md: no silent limits)."""
    return {"type": "summary", "count": st.count if count is None else count,
            "files": st.files, "truncated": True, "truncated_reason": st.truncated_reason,
            "root": st.root or None, "elapsed_ms": elapsed}


def grep_command(*, pattern: str | None = None, paths: Sequence[str] | None = None, fixed: bool = False,
                 ignore_case: bool = False, word: bool = False, multiline: bool = False,
                 after: int | None = None, before: int | None = None, context: int | None = None,
                 globs: Sequence[str] | None = None, types: Sequence[str] | None = None,
                 exclude_uri: Sequence[str] | None = None, hidden: bool | None = None,
                 no_ignore: bool = False, node_limit: int | None = None,
                 level_limit: int | None = None, tags: Sequence[str] | None = None, count: bool = False,
                 files_with_matches: bool = False, max_columns: int | None = None,
                 no_index: bool = False, line_number: bool = False,
                 regexps: Sequence[str] | None = None, invert: bool = False,
                 max_count: int | None = None, smart_case: bool = False,
                 case_sensitive: bool = False, with_filename: bool = False,
                 no_filename: bool = False, null: bool = False, heading: bool | None = None,
                 files: bool = False,
                 sort: str | None = None, type_list: bool = False, follow: bool = False,
                 quiet: bool = False, timeout: float | None = None,
                 color: str = "auto",
                 output: str = "text", json_: bool = False) -> int:
    """`ov grep`: the parameters are the flags' (see ov/cli.py's grep_cmd); returns the
    exit status."""
    if regexps or files or type_list:  # the first argument is then a PATH (as rg reads it)
        paths = ([pattern] if pattern is not None else []) + list(paths or [])
        pattern = None

    def body(out: Out) -> int:
        t0 = time.perf_counter()
        if sort is not None and sort != "path":
            raise OvError("invalid_argument", f"--sort {sort}: only `path` (the order results "
                          "always come in)", field="sort")
        if type_list:
            from ov.kinds import TYPES  # noqa: PLC0415

            out.stdout.write("".join(f"{k}: {', '.join(v)}\n" for k, v in sorted(TYPES.items())))
            return EXIT_OK
        if files:
            return list_files(out, t0)
        pat, fx = _patterns(pattern, list(regexps or ()), fixed)
        icase = ignore_case or (smart_case and not any(c.isupper() for c in pat))
        if case_sensitive:
            icase = False
        if quiet:
            return _quiet(pat, fx, icase)
        return search(out, t0, pat, fx, icase)

    def _quiet(pat: str, fx: bool, icase: bool) -> int:
        from ov import api  # noqa: PLC0415

        recs, _ = api.grep(
            pat, paths or (), fixed=fx, ignore_case=icase, word=word, multiline=multiline,
            globs=globs or (), types=types or (), exclude=exclude_uri or (),
            hidden=hidden, no_ignore=no_ignore, max_depth=level_limit,
            node_limit=1, mode="files", use_index=not no_index,
            invert=invert, follow=follow, tags=tags or ())
        return EXIT_OK if next(recs, None) is not None else EXIT_NONE

    def list_files(out: Out, t0: float) -> int:
        from ov import api  # noqa: PLC0415
        from ov.search import scope  # noqa: PLC0415

        found, st = api.files(
            paths or (), globs=globs or (), types=types or (), exclude=exclude_uri or (),
            hidden=hidden, no_ignore=no_ignore, max_depth=level_limit,
            node_limit=node_limit, follow=follow, use_index=not no_index)
        end = "\0" if null else "\n"
        n = 0
        if out.fmt == "json":
            res = scope.result_of(st)
            res.paths = list(found)
            res.count = n = len(res.paths)
            _finish_warnings(out, st)
            out.envelope(res, elapsed_ms(t0))
        else:
            for p in found:
                if out.fmt == "jsonl":
                    out.line({"path": p})
                else:
                    out.stdout.write(p + end)
                n += 1
            _finish_warnings(out, st)
            if out.fmt == "jsonl" and (st.truncated or st.level_cut):
                out.line(cut_summary(st, elapsed_ms(t0), count=n))
            for note in scope.cut_notes(st, st.node_limit, "files"):  # text and JSON Lines
                out.warn(note)
        return EXIT_OK if n else EXIT_NONE

    def search(out: Out, t0: float, pattern: str, fixed: bool, ignore_case: bool) -> int:
        from ov import api, config  # noqa: PLC0415

        if count and files_with_matches:
            raise OvError("invalid_argument", "-c/--count and -l/--files-with-matches exclude each other",
                          field="count")
        if max_columns is not None and max_columns < 1:
            raise OvError("invalid_argument", "--max-columns must be at least 1", field="max_columns")
        b = before if before is not None else (context or 0)
        a = after if after is not None else (context or 0)
        mode = "count" if count else "files" if files_with_matches else "matches"
        records, st = api.grep(
            pattern, paths or (), fixed=fixed, ignore_case=ignore_case, word=word,
            multiline=multiline, before=b, after=a, globs=globs or (), types=types or (),
            exclude=exclude_uri or (), hidden=hidden, no_ignore=no_ignore,
            max_depth=level_limit, node_limit=node_limit, mode=mode, tags=tags or (),
            use_index=not no_index, invert=invert, max_count=max_count, follow=follow,
            deadline_s=config.GREP_TIMEOUT_S if timeout is None else timeout)
        from ov.search.matcher import gc_paused  # noqa: PLC0415

        try:
            # the records hold no cycles, and a run may build millions (see gc_paused);
            # the pause is held here, where they are read to the end, not across the
            # generator's yields
            with gc_paused():
                return emit(out, records, st, mode, a, b, t0)
        except BrokenPipeError:
            return closed_pipe(out)

    def emit(out: Out, records, st, mode: str, a: int, b: int, t0: float) -> int:
        from ov import api  # noqa: PLC0415
        from ov.search import scope  # noqa: PLC0415
        from ov.render import GrepPrinter, grep_envelope, match_json  # noqa: PLC0415

        n = 0
        if out.fmt == "json":
            recs = list(records)
            res = api.grep_result(recs, st, mode)
            n = len(recs)
            _finish_warnings(out, st)
            out.stdout.write(grep_envelope(res, elapsed_ms(t0)))
        elif out.fmt == "jsonl":
            line = (lambda r: out.raw(match_json(r))) if mode == "matches" else out.line
            for r in records:
                line(r)
                n += 1
            _finish_warnings(out, st)
            if st.truncated or st.level_cut:
                out.line(cut_summary(st, elapsed_ms(t0)))
        else:
            # rg's habit: grouped under a heading on a terminal, path:line:text in a pipe
            grouped = heading if heading is not None else _isatty(out.stdout)
            printer = GrepPrinter(out.stdout, color=out.color, context=bool(a or b),
                                  max_columns=max_columns, null=null,
                                  filename=with_filename or not no_filename,
                                  heading=grouped and mode == "matches")
            write = printer.match if mode == "matches" else printer.file_count
            for r in records:
                write(r)
                n += 1
            for path, offset in st.binary_matches:  # rg's words, on stdout as rg puts them
                out.stdout.write(scope.binary_note(path, offset) + "\n")
            out.stdout.flush()
            _finish_warnings(out, st)
        if out.fmt != "json":  # JSON carries the cut in its result
            for note in scope.cut_notes(st, st.node_limit, "matches" if mode == "matches" else "files"):
                out.warn(note)
        if out.fmt == "jsonl":  # JSON has them among its warnings
            for path, offset in st.binary_matches:
                out.warn(scope.binary_note(path, offset))
        return EXIT_OK if n or st.binary_matches else EXIT_NONE

    return run_body((output, json_, color), body)


def _patterns(pattern: str | None, regexps: list[str], fixed: bool) -> tuple[str, bool]:
    """(the one pattern to search, fixed) from PATTERN or the -e patterns: several become
    one alternation (each a group, or each escaped with -F)."""
    pats = regexps or ([pattern] if pattern is not None else [])
    if not pats:
        raise OvError("invalid_argument", "a PATTERN is needed (or -e PATTERN, --files, "
                      "--type-list)", field="pattern")
    if len(pats) == 1:
        return pats[0], fixed
    if fixed:
        import re  # noqa: PLC0415

        return "|".join(re.escape(p) for p in pats), False
    return "|".join(f"(?:{p})" for p in pats), False


def glob_command(*, pattern: str, path: str | None = None, ignore_case: bool = False,
                 hidden: bool | None = None, no_ignore: bool = False, node_limit: int | None = None,
                 level_limit: int | None = None, fields: str | None = None, simple: bool = False,
                 exclude_uri: Sequence[str] | None = None, tags: Sequence[str] | None = None,
                 no_index: bool = False, color: str = "auto", output: str = "text",
                 json_: bool = False) -> int:
    """`ov glob`: the parameters are the flags' (see ov/cli.py's glob_cmd); returns the
    exit status."""

    def body(out: Out) -> int:
        from ov import api  # noqa: PLC0415
        from ov.search import scope  # noqa: PLC0415
        from ov.search.glob import parse_fields  # noqa: PLC0415
        from ov.render import glob_text  # noqa: PLC0415

        t0 = time.perf_counter()
        flds = parse_fields(fields)
        st = scope.GrepStats()
        res = api.glob(pattern, path, ignore_case=ignore_case, hidden=hidden, no_ignore=no_ignore,
                       max_depth=level_limit, node_limit=node_limit, stats=st,
                       fields=() if simple else flds, exclude=exclude_uri or (), tags=tags or (),
                       use_index=not no_index)
        limit = st.node_limit
        _finish_warnings(out, st)
        if simple or out.fmt == "text":
            out.text(glob_text(res, flds, simple))
        elif out.fmt == "json":
            out.envelope(res, elapsed_ms(t0))
        else:
            for m in res.matches:
                out.line(m if not isinstance(m, str) else {"path": m})
            if res.truncated:
                out.line(cut_summary(st, elapsed_ms(t0), count=res.count))
        out.stdout.flush()
        if reader_gone(out):
            return closed_pipe(out)
        if simple or out.fmt != "json":
            for note in scope.cut_notes(st, limit, "paths"):
                out.warn(note)
        return EXIT_OK if res.matches else EXIT_NONE

    return run_body((output, json_, color), body)


# ---- index building, opening the index, find / search ---------------------------------


class Progress:
    """Progress on stderr: a rich bar on a terminal; off a terminal (`--progress` with
    stderr a file or a pipe) one plain line per phase step, at most every LINE_EVERY_S
    seconds and at each phase's end, so a log shows it as it happens."""

    LINE_EVERY_S = 1.0
    LABELS = {"scan": "scanning", "trigram": "grep rows", "embed": "embedding"}

    def __init__(self, enabled: bool, color: bool = True, stream=None) -> None:
        self.enabled = enabled
        self.color = color
        self.stream = stream if stream is not None else sys.stderr
        self.lines = enabled and not _isatty(self.stream)
        self.bar = None
        self.tasks: dict[str, object] = {}
        self.last: dict[str, float] = {}
        self.t0: dict[str, float] = {}

    def __enter__(self):
        if self.enabled and not self.lines:
            from rich.console import Console  # noqa: PLC0415
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,  # noqa: PLC0415
                                       TimeElapsedColumn)

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=True,
                                console=Console(stderr=True, no_color=not self.color))
            self.bar.__enter__()
        return self

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if self.lines:
            self._line(phase, done, total)
            return
        if self.bar is None:
            return
        if phase not in self.tasks:
            self.tasks[phase] = self.bar.add_task(self.LABELS.get(phase, phase), total=total)
        if phase == "scan" and done % 50:
            return
        self.bar.update(self.tasks[phase], completed=done, total=total)

    def _line(self, phase: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        self.t0.setdefault(phase, now)
        if now - self.last.get(phase, 0.0) < self.LINE_EVERY_S and done != total:
            return
        self.last[phase] = now
        label = self.LABELS.get(phase, phase)
        if total:
            elapsed = now - self.t0[phase]
            rate = done / elapsed if elapsed > 0 else 0.0
            eta = f", eta {(total - done) / rate:.0f}s" if rate and done < total else ""
            msg = f"ov: {label} {done}/{total} ({done / total:.0%}){eta}"
        else:
            msg = f"ov: {label} {done}"
        try:
            self.stream.write(msg + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.lines = False

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def build_index(out: Out, root: Path, db: Path | None, *, embed: bool = True, full: bool = False,
                walk_opts=None, progress: bool | None = None):
    """`api.index` with a progress bar on stderr (a TTY, or --progress)."""
    from ov import api  # noqa: PLC0415

    show = out.stderr.isatty() if progress is None else progress
    return api.index(root, db=db, embed=embed, full=full, walk=walk_opts,
                     progress=Progress(show, color=out.stderr_color, stream=out.stderr), warn=out.warn)


def stop_background(out: Out, path: Path, db: Path | None) -> int:
    """`ov index --stop`: stop the background worker of the index of `path`."""
    from ov.paths import db_path_for  # noqa: PLC0415
    from ov.worker import stop  # noqa: PLC0415

    t0 = time.perf_counter()
    pid = stop(Path(db) if db else db_path_for(Path(path).resolve()))
    result = {"stopped": pid is not None, "pid": pid}
    show(out, result, t0, lambda: out.notice(
        f"stopped the background worker (pid {pid}); `ov index` completes the index"
        if pid is not None else "no background worker runs for this index"))
    return EXIT_OK


def open_index(db: Path | None, *, auto_index: bool = False, out: Out | None = None,
               readonly: bool = False):
    """`api.Index.open` for the current folder, with the CLI's notices and progress bar."""
    from ov import api  # noqa: PLC0415

    if out is None:
        return api.Index.open(db=db, auto_index=auto_index, readonly=readonly)
    return api.Index.open(db=db, auto_index=auto_index, readonly=readonly,
                          progress=Progress(out.stderr.isatty(), color=out.stderr_color, stream=out.stderr),
                          notice=out.notice, warn=out.warn)


def search_command(*, query: str, search_type: str | None = None, limit: int | None = None,
                   threshold: float | None = None, after: str | None = None,
                   before: str | None = None, time_field: str = "updated_at",
                   tags: Sequence[str] | None = None, type_: Sequence[str] | None = None,
                   level: str | None = None, cursor: str | None = None, explain: bool = False,
                   read_content: bool = False, uri: Sequence[str] | None = None,
                   exclude_uri: Sequence[str] | None = None, all_chunks: bool = False,
                   no_auto_index: bool = False, output: str = "text", json_: bool = False,
                   db: Path | None = None, color: str = "auto") -> int:
    """`ov find` (search_type "semantic") and `ov search` in list mode: the parameters are
    the flags' (see ov/cli.py's find_cmd and search_cmd); returns the exit status."""
    types = type_

    def body(out: Out) -> int:
        from ov import api  # noqa: PLC0415

        t0 = time.perf_counter()
        filters = api.search_filters(query, search_type=search_type, limit=limit, time_field=time_field,
                                     after=after, before=before, tags=tags, level=level, types=types)
        with open_index(db, auto_index=not no_auto_index, out=out) as ix:
            res = ix.search(query, search_type=search_type, limit=limit, threshold=threshold,
                            cursor=cursor, explain=explain, all_chunks=all_chunks,
                            read_content=read_content, uri=uri, exclude_uri=exclude_uri,
                            filters=filters, cwd=Path.cwd())
        for w in res.warnings:
            out.warn(w)
        if out.fmt == "json":
            out.envelope(res, elapsed_ms(t0))
        elif out.fmt == "jsonl":
            for h in res.hits:
                out.line(h)
        else:
            from ov.render import hits_text  # noqa: PLC0415

            out.text(hits_text(res, query, out.color), colored=out.color)
            out.stdout.flush()  # a closed pipe stops here, before the notice
            if reader_gone(out):
                return closed_pipe(out)
            if res.next_cursor:
                out.notice(f"more hits: add --cursor {res.next_cursor}")
        return EXIT_OK if res.hits else EXIT_NONE

    return run_body((output, json_, color), body)


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
    """(command, its parameters) for a command line of a command in `ov.flags` (grep, glob,
    find, search), parsed as click parses it: options anywhere among the arguments, `--`
    ends them, `--opt=value`, short flags clustered (`-iw`, `-A3`), an option's value taken
    from the next argument whatever it looks like, the last of a repeated option kept (all
    of a repeatable one). None for anything else: help, another command, an unknown
    option, a missing or non-numeric value, a wrong number of arguments, an environment
    variable click would read; Typer then answers as usual."""
    if not argv:
        return None
    from ov.flags import COMMANDS  # noqa: PLC0415

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
# than list, the command line goes to Typer (ov/cli.py's search_cmd and _context_search).
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


def settle(code: int) -> int:
    """Flush stdout after a command. A reader that went away (`| head`) is not a failure:
    the status becomes 0 and stdout /dev/null, so the interpreter's own flush stays quiet."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        if code == EXIT_NONE:
            code = EXIT_OK
        _to_devnull(sys.stdout)
    except ValueError:  # stdout was closed under us: nothing left to flush
        pass
    return code


def exit_now(code: object) -> None:
    """End the process with `code` once stdout and stderr are flushed, skipping the
    interpreter's teardown.

    Tearing the interpreter down costs ~27 ms once numpy and onnxruntime are loaded (an
    `ov find` took 347 ms with it and 320 ms without, medians of 12 alternated runs).
    Nothing is left to do by then: every store is closed by its `with`, nothing registers
    `atexit`. Tests call `ov.cli.main`, whose `SystemExit` they catch.
    """
    if code is None:
        code = EXIT_OK
    elif not isinstance(code, int):  # sys.exit("message") semantics
        sys.stderr.write(f"{code}\n")
        code = EXIT_ERROR
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
    os._exit(code)
