"""Running one command: its errors become exit statuses here (0 results, 1 none, 2 error)
and one message, a closed pipe is a quiet 0, progress goes to stderr, and the process
ends without the interpreter's teardown.

This is the one place an `OvError` (or a bug, as `internal`) becomes an exit status; the
command bodies (`ov.cli.commands`) and everything below them raise or return.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable

from ov.errors import EXIT_ERROR, EXIT_NONE, EXIT_OK, OvError, debug_enabled, shown_bytes
from ov.render import FORMATS, Out, clean

# A user's glob or regex class may hold `[[` or `--` (`-g '[+--]*'`): Python's `re` warns of
# a meaning it may give them one day, on stderr with its own source line. Today's meaning is
# the one ov documents; the command's output is not the place for that note.
warnings.filterwarnings("ignore", message=r"Possible (nested set|set difference|set intersection|"
                        r"set symmetric difference)", category=FutureWarning)


def make_out(output: str, json_flag: bool, color: str = "auto") -> Out:
    if output not in FORMATS:
        raise OvError("invalid_argument", f"unknown output format {output!r} (use text, json or jsonl; "
                      "-o is --output here: rg's -o, --only-matching, has no ov equivalent)", field="output")
    fmt = "json" if json_flag else output
    if color not in ("auto", "always", "never"):
        raise OvError("invalid_argument", f"unknown colour choice {color!r} (use auto, always or never)",
                      field="color")
    return Out(fmt, color)


# Control characters in a message (a file name with a newline) would split the one line
# an error gets in text mode; tabs are harmless. They are shown as text output shows them
# in a name (`new\x0aline.txt`, ov.render), the form `ov read` takes back.
_CONTROL = {i: f"\\x{i:02x}" for i in (*range(32), *range(127, 160)) if i != 9}


def report(out: Out, err: OvError) -> None:
    """Show an error as one line on stderr (text) or one valid UTF-8 JSON object, whatever
    its message quotes: argv bytes that are not UTF-8 arrive as surrogate escapes and
    would make the JSON invalid, a newline would split the line."""
    msg = shown_bytes(err.message)
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
    from ov.config import new_run  # noqa: PLC0415

    new_run()  # a run's warnings are said once each, and again by the next run
    try:
        code = body(out)
    except OvError as e:
        report(out, e)
        code = EXIT_ERROR
    except KeyboardInterrupt as e:
        # a body may say what the interrupted run kept (`ov index`: KeyboardInterrupt(note))
        out.stderr.write(f"ov: interrupted{f'; {e.args[0]}' if e.args and e.args[0] else ''}\n")
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
    except (OSError, ValueError, AttributeError) as e:
        code = output_failed(out.stderr, out.stdout, e)
    return code


def output_failed(stderr, stdout, e: BaseException) -> int:
    """Standard output could not be written (a full disk, a closed descriptor): an error
    (exit 2) on stderr, never exit 0 or 1, which a script would read as an answer."""
    why = getattr(e, "strerror", None) or type(e).__name__
    try:
        stderr.write(f"ov: error[internal]: cannot write the output ({why})\n")
        stderr.flush()
    except (OSError, ValueError):
        pass
    _to_devnull(stdout)
    return EXIT_ERROR


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


# ---- index building, opening the index, find / search ---------------------------------


class Progress:
    """Progress on stderr: a rich bar on a terminal; off a terminal (`--progress` with
    stderr a file or a pipe) one plain line per phase step, at most every LINE_EVERY_S
    seconds and at each phase's end, so a log shows it as it happens.

    Off with `hint` (`ov index` off a terminal, neither --progress nor --no-progress
    given), it prints one line when an embedding of HINT_ROWS rows or more starts: quiet
    as rg and fd are off a terminal, but not silent through minutes of work (a review's
    CI log showed nothing for 23 minutes of the Go stdlib's vectors)."""

    LINE_EVERY_S = 1.0
    HINT_ROWS = 2000  # ~40 s at the model's speed on two idle cores (~50 rows/s), hours loaded
    LABELS = {"scan": "scanning", "trigram": "grep rows", "grams": "big files' grep bitmaps",
              "embed": "embedding"}
    UNITS = {"scan": "files", "trigram": "rows", "embed": "rows"}  # what a line counts
    ENDED = {"scan": "scanned"}  # a count without a total, said once it is done

    def __init__(self, enabled: bool, color: bool = True, stream=None, hint: bool = False) -> None:
        self.enabled = enabled
        self.hint = hint and not enabled
        self.color = color
        self.stream = stream if stream is not None else sys.stderr
        self.lines = enabled and not _isatty(self.stream)
        self.bar = None
        self.tasks: dict[str, object] = {}
        self.last: dict[str, float] = {}
        self.rates: dict[str, object] = {}  # phase -> its recent rate (ov.worker.Throughput)
        self.told: tuple[float, float] | None = None
        self.untold: tuple[str, int] | None = None  # (phase, count) not said yet (`_untold`)
        # the embed phase's estimated model tokens (ov.indexer.TokenCost), which the lines'
        # ETA counts in; a bar shows no ETA, so it does not ask for them (a sample is tokenised)
        self.work = self._work if self.lines else None

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
        if self.hint and phase == "embed" and total and total >= self.HINT_ROWS:
            self.hint = False  # once
            self.notice(f"embedding {total} rows; --progress prints progress lines")
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

    def notice(self, msg: str) -> None:
        """A line for the user while the run goes on, as `Out.notice` prints it: above a
        live bar through its console (a plain write would be drawn over), else on the
        stream."""
        line = f"ov: {clean(msg)}"
        try:
            if self.bar is not None:
                self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()
        except (OSError, ValueError):
            pass

    def _work(self, done: float, total: float) -> None:
        self.told = (done, total)

    def _line(self, phase: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        told, self.told = self.told, None
        rate = self._rate(phase, now, told[0] if told else done)
        if total is None:
            # a count without a total (the scan) has no last step of its own: its last count
            # is said when the next phase starts or the run ends ("scanning 1 files" was
            # all a log of a 63-file tree showed), and its first line after LINE_EVERY_S
            self.last.setdefault(phase, now)
            self.untold = (phase, done)
        elif self.untold is not None and self.untold[0] != phase:
            self._untold()
        if now - self.last.get(phase, 0.0) < self.LINE_EVERY_S and done != total:
            return
        if total is None:
            self.untold = None
        self.last[phase] = now
        label = self.LABELS.get(phase, phase)
        if total:
            left = told[1] - told[0] if told else total - done
            eta = f", eta {left / rate:.0f}s" if rate and done < total else ""
            unit = self.UNITS.get(phase, "")
            msg = f"ov: {label} {done}/{total}{' ' + unit if unit else ''} ({done / total:.0%}){eta}"
        else:
            msg = f"ov: {label} {done} {self.UNITS.get(phase, 'done')}"
        self._write(msg)

    def _untold(self) -> None:
        """The last count of a phase without a total, when it was not said yet."""
        if self.untold is not None and self.lines:
            phase, done = self.untold
            self._write(f"ov: {self.ENDED.get(phase, self.LABELS.get(phase, phase))} {done} "
                        f"{self.UNITS.get(phase, 'done')}")
        self.untold = None

    def _write(self, msg: str) -> None:
        try:
            self.stream.write(msg + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.lines = False

    def _rate(self, phase: str, now: float, done: float) -> float | None:
        """The phase's recent rate, of tokens where it tells them (embedding), else of rows or
        files: rows a second since the start kept the speed of the shortest rows, which the
        embed phase takes first, as the worker's did (ov.worker)."""
        from ov.worker import Throughput  # noqa: PLC0415 - the indexer is loaded by now

        if phase not in self.rates:
            self.rates[phase] = Throughput(now, done)
            return None
        self.rates[phase].update(now, done)
        return self.rates[phase].rate

    def __exit__(self, *exc) -> None:
        self._untold()
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def settle(code: int) -> int:
    """Flush stdout after a command. A reader that went away (`| head`) is not a failure:
    the status becomes 0 and stdout /dev/null, so the interpreter's own flush stays quiet."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        if code == EXIT_NONE:
            code = EXIT_OK
        _to_devnull(sys.stdout)
    except (ValueError, AttributeError):  # stdout closed under us, or never open: nothing to flush
        pass
    except OSError as e:  # a full disk: the answer was not written
        code = output_failed(sys.stderr, sys.stdout, e)
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
        except (BrokenPipeError, ValueError, OSError, AttributeError):  # (None: never open)
            pass
    os._exit(code)
