"""Rendering: text for people, one JSON envelope or JSON Lines for scripts.

Renderers only format (STYLE habit 2): filtering, limits and ordering happen before them.
stdout carries only data; notices and warnings go to stderr. What each command prints in
each format is decided once, by the `emit*` functions at the end (one per kind of
result; grep's records stream through `emit_grep`); the command bodies only hand them
their results.
"""

from __future__ import annotations

import dataclasses
import json
import re
import os
import sys
from json.encoder import encode_basestring  # type: ignore[attr-defined]
TYPE_CHECKING = False  # `typing` costs ~2.5 ms of a grep's start: annotations only
if TYPE_CHECKING:
    from typing import Any, TextIO

from ov.errors import OvError, shown_bytes
from ov.model import SKIP_REASONS, duration_text

FORMATS = ("text", "json", "jsonl")

# Control characters a file's text or name may carry, which a terminal would obey (issue
# 17): C0 but tab and newline, DEL, C1, and a CR that does not end a line (a CRLF file's
# lines keep theirs). JSON escapes them itself.
_CONTROL = None


def clean(s: str, ends_line: bool = True) -> str:
    """`s` with control characters shown as `\\xNN`, for text-mode output. Applied to
    data before colour codes are added (ours are the only escapes that reach a terminal).
    `ends_line` False: `s` is a piece of a line, so a CR at its end is escaped too."""
    global _CONTROL
    if _CONTROL is None:
        import re  # noqa: PLC0415

        _CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\udc80-\udc9f]|\r(?!\n|\\Z)")
    if s.isprintable() or not _CONTROL.search(s + ("" if ends_line else "x")):
        return s
    out = _CONTROL.sub(_shown_control, s + ("" if ends_line else "x"))
    return out if ends_line else out[:-1]


def _shown_control(m) -> str:
    """A control character as `\\xNN`; a C1 byte that is not UTF-8 (a name's or a line's
    raw 0x9B, which a terminal may read as CSI, held as Python's surrogate escape) as the
    byte it was."""
    c = ord(m.group())
    return f"\\x{c - 0xDC00 if c >= 0xDC00 else c:02x}"


def clean_name(path: str) -> str:
    """A file name for text output: `clean`, and newline, tab and CR shown as `\\xNN` too,
    since a name is one field of a line (JSON, and grep's `-0`, give names as they are)."""
    if path.isprintable():
        return path
    import re  # noqa: PLC0415

    return re.sub("[\x00-\x1f\x7f-\x9f\udc80-\udc9f]", _shown_control, path)


_NAME_ESCAPE = re.compile(r"\\x(0[1-9a-f]|1[0-9a-f]|7f|8[0-9a-f]|9[0-9a-f])", re.I)


def unclean_name(shown: str) -> str:
    """The name `clean_name` showed as `shown`: each `\\xNN` it writes (a control
    character, U+0001-U+001F and U+007F-U+009F; no name holds U+0000) back to its character."""
    return _NAME_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), shown) if "\\x" in shown else shown


def to_data(obj: Any) -> Any:
    """Dataclasses to plain JSON data; optional fields that are None are left out. A
    warning is a message: a name's bytes that are not UTF-8 are shown in it as `\\xNN`
    (`shown_texts`), as stderr and error messages show them; a path field keeps them."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if v is None and f.default is None:
                continue
            out[f.name] = shown_texts(v) if f.name == "warnings" else to_data(v)
        return out
    if isinstance(obj, dict):
        return {k: to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    return obj


def shown_texts(msgs: Any) -> list:
    """Messages (`warnings`), each with `shown_bytes`' escapes."""
    return [shown_bytes(m) if isinstance(m, str) else to_data(m) for m in msgs]


def dumps(data: Any) -> str:
    """One JSON document, valid UTF-8 whatever it holds: a file name's bytes that are not
    UTF-8 reach here as surrogate escapes (U+DC80-U+DCFF), which no UTF-8 stream can
    carry (the output failed, or held raw bytes no JSON reader takes); they are written as
    JSON's \\udcXX escapes, which Python's json reads back (os.fsencode then gives the
    name's bytes)."""
    return _escaped(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(s: str) -> str:
    if not s.isascii() and _SURROGATE.search(s):
        s = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    return s


def _q(s: str) -> str:
    """A JSON string literal (`dumps`' escapes for surrogates too)."""
    return _escaped(encode_basestring(s))


def use_color(choice: str = "auto", stream: TextIO | None = None) -> bool:
    """Colour only on a TTY, never with NO_COLOR set (unless forced with `always`)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


class Out:
    """Where one command's output goes, in one format."""

    def __init__(self, fmt: str = "text", color: str = "auto", stdout: TextIO | None = None,
                 stderr: TextIO | None = None) -> None:
        self.fmt = fmt
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.color = use_color(color, self.stdout)
        self.stderr_color = use_color(color, self.stderr)  # progress bars, doctor notes
        self.warned: set[str] = set()  # a warning said once a command (opening and result)

    # -- data -------------------------------------------------------------------------
    def envelope(self, result: Any, elapsed_ms: int) -> None:
        data = {"status": "ok", "result": to_data(result), "usage": {"elapsed_ms": elapsed_ms}}
        self.stdout.write(dumps(data) + "\n")

    def line(self, obj: Any) -> None:
        """One JSON Lines record (flushed, so a pipe sees it at once)."""
        self.raw(dumps(to_data(obj)))

    def raw(self, record: str) -> None:
        """One JSON Lines record already written as JSON text (`match_json`), flushed."""
        self.stdout.write(record + "\n")
        self.stdout.flush()

    def text(self, s: str, colored: bool = False) -> None:
        """Text-mode data; `colored` when the renderer cleaned its data itself."""
        s = s if colored else clean(s)
        self.stdout.write(s if s.endswith("\n") or not s else s + "\n")

    def isatty(self) -> bool:
        try:
            return self.stdout.isatty()
        except (AttributeError, ValueError):
            return False

    def reader_gone(self) -> bool:
        """True when stdout is a pipe its reader has closed. A large write into such a pipe
        can end as a silent partial write (Python keeps no error), so ask the pipe itself
        before printing a notice after the data; the notice would break the quiet of `| head`."""
        import select  # noqa: PLC0415

        if not hasattr(select, "poll"):
            return False
        try:
            fd = self.stdout.fileno()
            poller = select.poll()
            poller.register(fd, 0)  # POLLERR is always reported: the read end is closed
            return any(ev & select.POLLERR for _, ev in poller.poll(0))
        except (OSError, ValueError, AttributeError):
            return False

    # -- stderr -----------------------------------------------------------------------
    def warn(self, msg: str) -> None:
        if msg in self.warned:
            return
        self.warned.add(msg)
        # one line: a name's newline too; its bytes that are not UTF-8 as `\xNN`
        self.stderr.write(f"ov: warning: {clean_name(shown_bytes(msg))}\n")

    def notice(self, msg: str) -> None:
        self.stderr.write(f"ov: {clean(msg)}\n")

    def error(self, err: OvError) -> None:
        if self.fmt in ("json", "jsonl"):
            try:
                self.stdout.write(dumps({"status": "error", "error": err.to_dict()}) + "\n")
                self.stdout.flush()
                return
            except (OSError, ValueError, AttributeError):  # stdout itself failed: say it on stderr
                pass
        self.stderr.write(f"ov: error[{err.code}]: {clean(err.message)}\n")


# ---- index / status / ranked search -------------------------------------------------------


def status_text(rep) -> str:
    mb = rep.db_bytes / 1e6
    lines = [
        f"root:            {rep.root}",
        f"index:           {rep.db} ({mb:.1f} MB)",
        f"files:           {rep.files}" + ("" if (rep.coverage or {}).get("keywords_complete", True) else
                                               " so far: the first build is not finished (`ov index` "
                                               "finishes it; so does the background worker or the next "
                                               "search)"),
        # passages (level 2); the vector line counts every row that gets a vector (passages
        # and abstracts): "9 of 9 chunks" beside "11 of 11 rows" read as two different counts
        # ("48351 passages, 49 with a vector" beside "768 of the 39190 rows" read as a
        # contradiction while abstracts, shorter, were embedded first: the passages' own count)
        f"chunks:          {rep.chunks} passages, {rep.embedded_chunks} of them with a vector",
        f"vector rows:     {_coverage_text(rep)}",
        f"background:      {_worker_text(rep.background, rep.new_files, bool(rep.trigram_pending), _vectors_pending(rep), rep.worker_paused)}"
        + (f"; {_indexer_text(rep.indexer, rep.new_files)}" if rep.indexer and not rep.background else
           f"; {_holder_text(rep.holder, _vectors_pending(rep))}"
           if not rep.background and (rep.coverage or {}).get("indexing") else ""),
        f"change journal:  {_journal_text(rep.journal)}",
        f"stale files:     {rep.stale_files} changed, {rep.missing_files} missing on disk, "
        f"{rep.new_files} " + ("new (not indexed)" if (rep.coverage or {}).get("keywords_complete", True)
                               else "not read yet by the first build"
                               + (", which the background worker goes on with" if rep.background else ""))
        + (f", {rep.excluded_files} now left out (ignored or over the size cap)" if rep.excluded_files else ""),
        *([] if rep.gitignore_read else [
            "ignore files:    .gitignore not read: the tree is in no git work tree (as in rg and fd); "
            ".ovignore takes the same lines and counts everywhere"]),
        f"model:           {rep.model or '-'}",
        f"schema version:  {rep.schema_version}",
        f"sqlite:          {rep.sqlite_version}, sqlite-vec {rep.vec_version}",
    ]
    return "\n".join(lines + _skipped_lines(rep))


def _journal_text(j) -> str:
    if j is None:
        return "none (no watcher: grep stats each file the index rules out)"
    if not j["ready"]:
        return f"not vouching: {j['not_ready']} (grep stats each file)"
    return (f"ready: {j['changed']} path{'s' if j['changed'] != 1 else ''} changed since the "
            "watcher's catch-up (grep reads those, and trusts the index for the rest)")




def _skipped_lines(rep) -> list[str]:
    """`skipped: N files (k binary, ...)` then each file and why, in path order."""
    if not rep.skipped:
        return ["skipped:         0 files"]
    counts: dict[str, int] = {}
    for f in rep.skipped_files:
        counts[f.reason] = counts.get(f.reason, 0) + 1
    why = ", ".join(f"{n} {SKIP_REASONS.get(r, r)}" for r, n in sorted(counts.items()))
    lines = [f"skipped:         {rep.skipped} file{'' if rep.skipped == 1 else 's'} ({why})"]
    # the text is for a person: the first few, text files first (binary ones buried the
    # rest of status on the Python stdlib: 91 of 96 were lib-dynload/*.so)
    shown = sorted(rep.skipped_files, key=lambda f: f.reason == "binary")[:SKIPPED_SHOWN]
    lines += [f"  {clean_name(f.path)}  ({SKIP_REASONS.get(f.reason, f.reason)})"
              for f in sorted(shown, key=lambda f: f.path)]
    if rep.skipped > len(shown):
        lines.append(f"  ... and {rep.skipped - len(shown)} more (`ov status -o json` lists them)")
    return lines


SKIPPED_SHOWN = 10


def _vectors_pending(rep) -> bool:
    cov = rep.coverage or {}
    return cov.get("embedded", 0) < cov.get("embeddable", 0)


def _coverage_text(rep) -> str:
    cov = rep.coverage or {}
    text = (f"{cov.get('embedded', 0)} of the {cov.get('embeddable', 0)} rows that get one (passages and "
            f"abstracts) have it ({cov.get('ratio', 0):.0%})")
    if rep.not_embedded_rows:
        text += (f"; {rep.not_embedded_rows} rows that never get one (overviews; minified, "
                 "generated and data files; encoded data such as base64 images; passages of one word)")
    if cov.get("embedded", 0) < cov.get("embeddable", 0) and not cov.get("pending"):
        # "0 of the 4 rows that get one" read as a promise on an index no worker will embed
        text += "; none are coming: the index was built with --no-embed (`ov index` adds them)"
    if rep.trigram_pending:
        text += (f"; {rep.trigram_pending} chunks without grep rows yet (grep reads their files "
                 "until `ov index`, the background worker or the next search writes them)")
    return text


# the worker's phases in words (`ov status -o json` keeps the names), and the units of
# their rates: "scan 4000, grams 71/84, 44 rows/s, about 1 s left" said nothing of what
# it was doing, nor that hours of vectors came after the 49 s it named
_PHASES = {"start": ("starting", "rows"), "starting": ("starting", "rows"), "scan": ("reading files for keywords", "files"), "grams": ("grep bitmaps of big files", "files"),
           "trigram": ("grep rows", "rows"), "embed": ("vectors", "rows")}


def _worker_text(w: dict | None, unread: int = 0, trigrams_pending: bool = False,
                 vectors_pending: bool = False, paused: bool = False) -> str:
    """The worker's line: phase, progress, rate, the ETA of that phase, and what comes
    after it. Its scan of the tree has no total of its own; `unread`, the files status's
    walk found the index still lacks, is what is left of it (the scan said only "scan,
    1111/s" on the kernel). None running after `ov index --stop` (`paused`) with work left:
    says what holds the work back."""
    if not w:
        if paused and (vectors_pending or unread or trigrams_pending):
            return "stopped by `ov index --stop`: none starts again, and what is left waits, until `ov index` runs"
        return "-"
    text, after = _progress_text(w, unread, trigrams_pending, vectors_pending)
    if after:
        text += f"; then {' and '.join(after)}"
    return text + " (`ov index --stop` stops it)"


def _holder_text(h: dict | None, vectors_pending: bool) -> str:
    """Who holds the index when neither the worker nor a foreground `ov index` does."""
    if not h or not h.get("command"):
        return "an indexer holds the index now (an `ov index`, a watcher)" + (
            f": pid {h['pid']}" if h else "")
    if not any(w in h["command"].split() for w in ("mcp", "--watch")):
        return f"`{h['command']}` (pid {h['pid']}) holds the index"
    what = ("its watcher adds the missing vectors while it is idle, and keeps the index current"
            if vectors_pending else "its watcher keeps the index current")
    return f"`{h['command']}` (pid {h['pid']}) holds the index: {what}; ending it stops that"


def _indexer_text(w: dict, unread: int = 0) -> str:
    """A foreground indexer's progress (an `ov index` in another shell), as the worker's:
    before, status said only that "an indexer holds the index now"."""
    text, _ = _progress_text(w, unread)
    return (f"an indexer writes the index now ({text}; Ctrl-C in its terminal or "
            f"`kill {w['pid']}` stops it)")


def _progress_text(w: dict, unread: int = 0, trigrams_pending: bool = False,
                   vectors_pending: bool = False) -> tuple[str, list[str]]:
    """`pid N, phase done/total, rate, about T left`, and the phases still to come after it."""
    phase = w.get("phase")
    words, unit = _PHASES.get(phase, (phase, "rows"))
    text = f"pid {w['pid']}, {words}"
    if w.get("total"):
        # (a worker started again counts what was missing at its start: "vectors 0/89217"
        # read as progress lost, 8 % of the vectors being stored already: a review)
        text += f" {w.get('done', 0)}/{w['total']}" + (" this run" if phase == "embed" else "")
    elif phase == "scan" and unread:
        text += f", {unread} files to go"
    # the ETA counts the model's tokens (ov.worker), so their rate is shown beside it: a
    # rate of rows read with it gave another answer (103,845 rows at 40/s is 43 min, not the
    # 2.6 h the line said)
    if phase == "embed" and w.get("tokens_rate"):
        text += f", {w['tokens_rate']:.0f} tokens/s"
    elif w.get("rate"):
        text += f", {w['rate']:.0f} {unit}/s"
    left = ""
    if w.get("eta_s") is not None:
        left = duration_text(float(w["eta_s"]))
    elif phase == "scan" and unread and w.get("rate"):
        left = duration_text(unread / w["rate"])
    after = [what for what, pending in (("grep rows", trigrams_pending and phase in ("scan", "grams")),
                                        ("vectors", vectors_pending and phase != "embed")) if pending]
    if left:
        text += f", about {left} left" + (" in this phase" if after else "")
    return text, after


def settings_text(settings: dict) -> str:
    """`key = value  (source)` a setting, in TOML spelling, under a `settings:` heading."""
    lines = ["settings:"]
    for key, v in settings.items():
        shown = json.dumps(v["value"], ensure_ascii=False)
        lines.append(f"  {key:<13} = {shown}  ({v['source']})")
    return "\n".join(lines)


# ---- ranked hits in text: the evidence ------------------------------------------------------
# A hit is shown as its line (`path:line: text`, ov.query.shown_line), then the lines of its
# excerpt around it, numbered as grep's context lines (`N:` the line, `N-` the others).


EXCERPT_AROUND = 2  # excerpt lines shown before and after the best line
LINE_CHARS = 200  # a longer line (minified code) is cut, with "…", around its first match


def _mark(text: str, pats, color: bool) -> str:
    """`text` with the query's words in bold red on a terminal; as is otherwise."""
    if not color or not pats:
        return text
    import re  # noqa: PLC0415

    joined = re.compile("|".join(f"(?:{p.pattern})" for p in pats), re.IGNORECASE)
    return joined.sub(lambda m: f"{_MATCH_C}{m.group(0)}{_RESET}", text)


def _cut(line: str, pats) -> str:
    """A line of at most LINE_CHARS code points: a longer one is cut around its first
    query word, each cut end shown as "…"."""
    if len(line) <= LINE_CHARS:
        return line
    at = min((m.start() for p in pats for m in [p.search(line)] if m), default=0)
    lo = max(0, min(at - LINE_CHARS // 4, len(line) - LINE_CHARS))
    return ("…" if lo else "") + line[lo:lo + LINE_CHARS] + ("…" if lo + LINE_CHARS < len(line) else "")


def _scores_line(h) -> str:
    """--explain: the hit's score and each branch's numbers, `name key=value ...`."""
    parts = []
    for name, vals in (h.scores or {}).items():
        shown = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in (vals.items() if isinstance(vals, dict) else [("value", vals)]))
        parts.append(f"{name} {shown}")
    return f"score {h.score:.4g}" + ("; " + "; ".join(parts) if parts else "")


COPIES_SHOWN = 5  # a hit's word-for-word copies named in text output


def hit_text(h, pats, color: bool, name: str | None = None) -> list[str]:
    """One hit's lines: the best line as `path:line: text`, then its excerpt around it (or
    the whole file with --read-content), then the scores with --explain. With `name` (the
    identifier a query is), the best line is the one defining it, or the first holding it
    (`name_line`)."""
    if h.content is not None:  # --read-content: the whole file is the excerpt
        lines, first = h.content.split("\n"), 1
        if lines and lines[-1] == "":
            lines.pop()
    elif h.excerpt.text:
        lines, first = h.excerpt.text.split("\n"), h.start_line
    else:  # an abstract or overview hit (-L 0/1): its tier text has no line numbers
        tier = (h.overview if h.level == 1 else h.abstract) or h.abstract or h.overview or ""
        lines, first = [ln for ln in tier.split("\n") if ln.strip()] or [""], 1
    # CRLF files; control characters escaped before any colour is added
    lines = [clean(ln[:-1] if ln.endswith("\r") else ln) for ln in lines]
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    lo, hi = ((h.start_line - 1, h.end_line) if h.excerpt.text and h.content is not None
              and 0 <= h.start_line - 1 < len(lines) else (0, len(lines)))
    # with --read-content, the hit's own lines of the file are searched
    from ov.query import shown_line  # noqa: PLC0415 (ranked hits only: grep need not load it)

    if h.line is not None and 0 <= h.line - first < len(lines):
        i = h.line - first  # the engine's pick (ov.query.shown_line), which JSON carries
    else:
        i = lo + shown_line(lines[lo:hi], h.path, pats, name if h.excerpt.text else None)
    best = _mark(_cut(lines[i].strip(), pats), pats, color)
    path = clean_name(h.path)
    if not h.excerpt.text and h.content is None:
        # a tier's text has no line of its own: `path: [abstract] text`, never `path:1:`,
        # which said the file's first line held it
        tier = "[abstract]" if h.level == 0 else "[overview]"
        out = [f"{_PATH_C}{path}{_RESET}: {tier} {best}" if color else f"{path}: {tier} {best}"]
    elif color:
        out = [f"{_PATH_C}{path}{_RESET}:{_LINE_C}{first + i}{_RESET}: {best}"]
    else:
        out = [f"{path}:{first + i}: {best}"]
    if h.excerpt.text or h.content is not None:
        lo, hi = ((0, len(lines)) if h.content is not None
                  else (max(0, i - EXCERPT_AROUND), min(len(lines), i + EXCERPT_AROUND + 1)))
        width = len(str(first + hi - 1))
        for j in range(lo, hi):
            num = f"{first + j:>{width}}"
            sep = ":" if j == i else "-"
            num = f"{_LINE_C}{num}{_RESET}" if color else num
            out.append(f"    {num}{sep} {_mark(_cut(lines[j], pats), pats, color)}".rstrip())
        if hi - lo < len(lines):
            out.append(f"    [excerpt: lines {first}-{first + len(lines) - 1}, {hi - lo} shown]")
    if h.duplicates:  # (2,000 copies of a licence: five named, the count of the rest; JSON lists all)
        more = len(h.duplicates) - COPIES_SHOWN
        out.append("    [the same passage, word for word, in: " + ", ".join(
            f"{clean_name(d.path)}:{d.start_line}" for d in h.duplicates[:COPIES_SHOWN])
            + (f" and {more} more (-o json lists them)" if more > 0 else "") + "]")
    if h.scores is not None:
        out.append("    " + _scores_line(h))
    return out


def hits_text(res, query: str, color: bool) -> str:
    """Each hit, best first, as `hit_text` shows it; a blank line between hits."""
    from ov.query import shown_line_terms  # noqa: PLC0415

    pats, name = shown_line_terms(query)
    blocks = ["\n".join(hit_text(h, pats, color, name)) for h in res.hits]
    text = "\n\n".join(blocks)
    if res.plan:
        text += "\n\nplan: " + dumps(res.plan)
    return text


# ---- grep / glob --------------------------------------------------------------------------
_PATH_C, _LINE_C, _MATCH_C, _RESET = "\x1b[35m", "\x1b[32m", "\x1b[1;31m", "\x1b[0m"


def _byte_column(line: str, start: int) -> int:
    """rg's --column: 1 + the UTF-8 bytes of `line` before code point `start` (a UTF-16
    file's too: rg counts the bytes of the text it transcodes)."""
    return len(line[:start].encode("utf-8", "surrogatepass")) + 1


def _raw_column(raw: bytes, start: int) -> int:
    """1 + the bytes of a line as the file holds them before code point `start` of its
    text as ov.read.decode gives it (each run of bytes that is not UTF-8, as one error of
    the decoder names it, read as one U+FFFD): the column rg gives a Latin-1 line."""
    n = b = 0  # code points and bytes read so far
    while True:
        try:
            good = raw[b:].decode("utf-8")
            bad = None
        except UnicodeDecodeError as e:
            good, bad = raw[b:b + e.start].decode("utf-8"), e
        if start <= n + len(good) or bad is None:
            return b + len(good[:start - n].encode("utf-8", "surrogatepass")) + 1
        n, b = n + len(good) + 1, b + bad.end  # past the U+FFFD


class GrepPrinter:
    """ripgrep's standard output, one record at a time (so a pipe sees lines at once).

    `path:line:content` for a match, `path-line-content` for a context line, `--`
    between groups of lines that are not adjacent; `path:count` with -c, `path` with -l.
    With `heading` (rg's default on a terminal): each file's path alone on a line above
    its `line:content` lines, a blank line between files (in place of `--`).
    With `max_columns`, a longer line (in code points) is replaced by
    `[Omitted long line with N matches]` (context: `[Omitted long context line]`).
    Colour: path magenta, line number green, matches bold red (ripgrep's defaults).
    With `column` (rg's --column): `path:line:column:content`, the column of the line's
    first match counted in bytes from 1, as rg and vim's quickfix read it (a multi-line
    match's lines all show its first line's column, as rg prints them; no column with -v,
    nor on context lines). With `vimgrep` (rg's --vimgrep): that, once for every match, a
    line with two printed twice and a multi-line match by its first line.
    """

    def __init__(self, stream: TextIO, color: bool = False, context: bool = False,
                 max_columns: int | None = None, null: bool = False,
                 filename: bool = True, heading: bool = False, column: bool = False,
                 vimgrep: bool = False) -> None:
        self.w = stream.write
        self.color = color
        self.context = context
        self.max_columns = max_columns
        self.null = null  # -0: a NUL byte after each path, in place of its separator
        self.filename = filename  # --no-filename: lines without their path
        self.heading = heading and not vimgrep  # the path above its file's lines, not on each line
        self.column = column or vimgrep  # each match line's first match's byte column
        self.vimgrep = vimgrep  # a line for every match
        self._raw: tuple[str, list[bytes] | None] = ("", None)  # a file's lines as bytes (`_col`)
        self._last: tuple[str, int] | None = None  # (path, last line printed)

    def _head(self, path: str) -> None:
        """A new file's heading: a blank line after the previous file, then its path
        (with --no-filename, the blank line alone, as rg)."""
        if self._last is not None:
            self.w("\n")
        if not self.filename:
            return
        shown = path if self.null else clean_name(path)
        if self.color:
            shown = f"{_PATH_C}{shown}{_RESET}"
        self.w(shown + ("\0" if self.null else "\n"))  # rg: `path\0` then the first line

    def _prefix(self, path: str, line: int, sep: str, col: int | None = None) -> str:
        num = f"{_LINE_C}{line}{_RESET}{sep}" if self.color else f"{line}{sep}"
        if col is not None:
            num += f"{col}{sep}"
        if not self.filename or self.heading:
            return num
        # -0 output is for `xargs -0`, not a terminal: names go out as they are
        path = path if self.null else clean_name(path)
        psep = "\0" if self.null else sep
        if self.color:
            return f"{_PATH_C}{path}{_RESET}{psep}{num}"
        return f"{path}{psep}{num}"

    def _line(self, path: str, line: int, content: str, sep: str, subs=(), col: int | None = None,
              count: int | None = None) -> None:
        if self.heading and (self._last is None or self._last[0] != path):
            self._head(path)
        elif self.context and self._last is not None and self._last[0] == path and line - 1 <= self._last[1] <= line:
            pass  # the next line, or the same line again (--vimgrep: one a match)
        elif self.context and self._last is not None:
            self.w("--\n")
        self._last = (path, line)
        if self.max_columns is not None and len(content) > self.max_columns:
            body = (f"[Omitted long line with {len(subs) if count is None else count} matches]" if sep == ":"
                    else "[Omitted long context line]")
        elif self.color and subs:
            parts, pos = [], 0
            for s in subs:
                if s.end <= pos:
                    continue
                parts.append(clean(content[pos:s.start], False))
                parts.append(f"{_MATCH_C}{clean(content[max(s.start, pos):s.end], False)}{_RESET}")
                pos = s.end
            parts.append(clean(content[pos:]))
            body = "".join(parts)
        else:
            body = clean(content)
        self.w(self._prefix(path, line, sep, col) + body + "\n")

    def match(self, m) -> None:
        for c in m.before_context:
            self._line(m.path, c.line, c.content, "-")
        if self.vimgrep and m.submatches:
            for i, piece, subs, starting in self._pieces(m):
                for s in starting:  # each copy of the line highlights its own match, as rg
                    self._line(m.path, m.line + i, piece, ":", [s], self._col(m.path, m.line + i, piece, s.start),
                               len(subs))
            if self._last is not None:  # the lines of a multi-line match after its first
                self._last = (m.path, m.line + m.content.count("\n"))
        else:
            # a multi-line match's lines (-U) all show its first line's column, as rg
            col = self._col(m.path, m.line, m.content.split("\n", 1)[0], m.submatches[0].start) \
                if self.column and m.submatches else None
            if "\n" in m.content:  # each of its lines with its own prefix, as rg prints them
                for i, piece, subs, _ in self._pieces(m):
                    self._line(m.path, m.line + i, piece, ":", subs, col)
            else:
                self._line(m.path, m.line, m.content, ":", m.submatches, col)
        for c in m.after_context:
            self._line(m.path, c.line, c.content, "-")

    def _col(self, path: str, line: int, text: str, start: int) -> int:
        """The byte column of code point `start` of line `line`, whose text is `text`. A
        line holding U+FFFD may have held bytes that are not UTF-8: counted from the
        file's own bytes (read once a file), as rg counts them."""
        if "\ufffd" in text[:start]:
            if self._raw[0] != path:
                from ov.read import UTF16_BOMS  # noqa: PLC0415

                try:
                    with open(path, "rb") as f:
                        data = f.read()
                    lines = None if data[:2] in UTF16_BOMS else data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
                except OSError:  # gone since it was searched: the text's count
                    lines = None
                self._raw = (path, lines)
            lines = self._raw[1]
            if lines is not None and line <= len(lines):
                raw = lines[line - 1]
                if raw.decode("utf-8", "replace").rstrip("\r") == text.rstrip("\r"):
                    return _raw_column(raw, start)
        return _byte_column(text, start)

    @staticmethod
    def _pieces(m):
        """(index, text, submatches, submatches starting there) of each line of a match
        record: a multi-line match (-U) is one record; each line's share of its
        submatches is highlighted, and a match is placed (--vimgrep) on the line it
        starts on."""
        from ov.model import Submatch  # noqa: PLC0415

        start = 0
        for i, piece in enumerate(m.content.split("\n")):
            end = start + len(piece)
            subs, starting = [], []
            for sm in m.submatches:
                lo, hi = max(sm.start, start), min(sm.end, end)
                if lo < hi or (sm.start == sm.end and start <= sm.start <= end):
                    subs.append(Submatch(lo - start, max(lo, hi) - start, sm.text))
                if start <= sm.start <= end:  # (at `end`: its newline, or an empty match)
                    starting.append(Submatch(sm.start - start, sm.end - start, sm.text))
            yield i, piece, subs, starting
            start = end + 1

    def file_count(self, fc) -> None:
        path = fc.path if self.null else clean_name(fc.path)
        p = f"{_PATH_C}{path}{_RESET}" if self.color else path
        if fc.count is None:
            self.w(p + ("\0" if self.null else "\n"))
        elif not self.filename:
            self.w(f"{fc.count}\n")
        else:
            self.w(p + ("\0" if self.null else ":") + f"{fc.count}\n")


def glob_text(res, fields: tuple[str, ...] = (), simple: bool = False) -> str:
    """Paths one a line; with fields, the asked fields tab-separated in the asked order."""
    if simple or not fields:
        return "".join(clean_name(m if isinstance(m, str) else m.path) + "\n" for m in res.matches)
    rows = []
    for m in res.matches:
        cells = []
        for f in fields:
            v = getattr(m, f)
            if f == "tags":
                v = ",".join(f"{k}={x}" for k, x in sorted((v or {}).items()))
            cells.append("" if v is None else clean_name(str(v)))  # a cell is one field
        rows.append("\t".join(cells) + "\n")
    return "".join(rows)


# ---- context / read / tag / manifest ---------------------------------------------------------


def context_text(res) -> str:
    """The rendered block, as pasted into a prompt."""
    return res.rendered


def read_text(res) -> str:
    """`ov read`'s text: the tier; for `PATH:LINE` and `PATH:START-END` each line after its
    number, as `grep -n` and rg print lines: `N:` for a line asked for (the one of `:LINE`,
    every one of a range), `N-` for the rest of the passage, as rg marks context lines. A
    CRLF line's "\r" is not printed."""
    if res.start_line is None:
        return res.text
    rows = res.text.split("\n")
    if res.text.endswith("\n"):
        rows.pop()
    return "".join(f"{n}{'-' if res.line not in (None, n) else ':'}{row.removesuffix(chr(13))}\n"
                   for n, row in enumerate(rows, res.start_line))


def tags_text(res) -> str:
    """`path<TAB>k=v,k=v` a file, in path order."""
    def cell(tags: dict) -> str:
        return clean_name(",".join(f"{k}={v}" for k, v in sorted(tags.items())))

    return "".join(f"{clean_name(f.path)}\t{cell(f.tags)}\n" for f in res.files)


def _vectors_said(idx: dict) -> str:
    """A manifest's index line on its vectors: "with vectors" said of 16 % of them on a
    tree whose worker was hours from done (a review of the Go tree)."""
    done, of = idx.get("embedded", 0), idx.get("embeddable", 0)
    if not idx["vectors"]:
        return "without vectors"
    if done < of:
        return f"vectors for {done} of {of} rows ({100 * done // max(1, of)}%)"
    return "with vectors"


def manifest_text(m) -> str:
    idx = m.index
    where = (f"{idx['root']} ({idx['files']} files, {_vectors_said(idx)})"
             if idx else "none found (find/search would build one here)")
    lim = m.limits
    depth = "none" if lim["level_limit"] is None else lim["level_limit"]
    lines = [
        f"ov {m.ov_version}, index schema {m.schema_version}",
        f"index:         {where}",
        f"commands:      {' '.join(m.commands)}",
        f"search types:  {' '.join(m.search_types)}",
        f"modes:         {' '.join(m.modes)}",
        f"tiers:         {' '.join(f'L{x}' for x in m.levels)} (0 abstract, 1 overview, 2 full text)",
        f"model:         {m.model['id']}, {m.model['dims']} dims, max {m.model['max_tokens']} tokens",
        f"limits:        --limit {lim['default_limit']} (max {lim['max_limit']}), query "
        f"{lim['max_query_chars']} chars, node limit {lim['node_limit']}, level limit "
        f"{depth}, context {lim['default_max_tokens']} tokens",
        f"grep flags:    {' '.join(m.grep_flags)}",
    ]
    return "\n".join(lines)


def doctor_text(res, color: bool = False) -> str:
    """`ok   name: detail` a check; a failure as `FAIL name: detail; fix: ...`."""
    lines = []
    for c in res.checks:
        mark = "ok  " if c.ok else "FAIL"
        if color:
            mark = f"\x1b[32m{mark}\x1b[0m" if c.ok else f"\x1b[1;31m{mark}\x1b[0m"
        lines.append(clean(f"{mark} {c.name}: {c.detail}" + ("" if c.ok else f"; fix: {c.fix}"))
                     if not color else f"{mark} {clean(c.name)}: {clean(c.detail)}"
                     + ("" if c.ok else f"; fix: {clean(c.fix)}"))
    return "\n".join(lines)


def _ctx_json(lines) -> str:
    q = _q
    return "[" + ",".join(f'{{"line":{c.line},"content":{q(c.content)}}}' for c in lines) + "]"


def match_json(m) -> str:
    """A grep Match as JSON text, equal to `dumps(to_data(m))` (a test holds it so),
    written straight away: there may be 100k+ of them, and the generic walk over
    dataclass fields costs more than the search itself."""
    return _match_records((m,))[0]


def _match_records(matches) -> list[str]:
    q = _q
    parts = []
    add = parts.append
    last_path = None
    qpath = ""
    for m in matches:
        if m.path is not last_path:
            last_path = m.path
            qpath = q(m.path)
        subs = m.submatches
        if len(subs) == 1:
            s = subs[0]
            sj = f'{{"start":{s.start},"end":{s.end},"text":{q(s.text)}}}'
        else:
            sj = ",".join(f'{{"start":{s.start},"end":{s.end},"text":{q(s.text)}}}' for s in subs)
        bc = _ctx_json(m.before_context) if m.before_context else "[]"
        ac = _ctx_json(m.after_context) if m.after_context else "[]"
        add(f'{{"path":{qpath},"line":{m.line},"content":{q(m.content)},"submatches":[{sj}],'
            f'"before_context":{bc},"after_context":{ac}}}')
    return parts


def grep_envelope(res, elapsed_ms: int) -> str:
    """`dumps` of the `-o json` envelope of a GrepResult, its matches written as
    `match_json` does (no dict per match, each path encoded once per file)."""
    rest = {"count": res.count, "files": res.files, "truncated": res.truncated,
            "warnings": shown_texts(res.warnings)}
    if res.counts is not None:
        rest["counts"] = dict(res.counts)
    if res.paths is not None:
        rest["paths"] = list(res.paths)
    if res.truncated_reason is not None:
        rest["truncated_reason"] = res.truncated_reason
    if res.root is not None:
        rest["root"] = res.root
    head = '{"status":"ok","result":{"matches":['
    tail = f'],{dumps(rest)[1:]},"usage":{dumps({"elapsed_ms": elapsed_ms})}}}\n'
    parts = _match_records(res.matches)
    if not parts:
        return head + tail
    # One join builds the whole text: with 100k+ records (and one non-ASCII line making
    # every character 2-4 bytes wide) each further copy of it costs tens of ms.
    parts[0] = head + parts[0]
    parts[-1] += tail
    return ",".join(parts)


# ---- emit: each result in the format asked -----------------------------------------------
# Every command's output is decided here: the command bodies (ov.cli.commands) compute a
# result and hand it over, and the format checks live in these functions only. A reader
# that went away (`| head`) is a BrokenPipeError, which the command line turns into a
# quiet exit 0 (ov.cli.run).


def elapsed_ms(t0: float) -> int:
    import time  # noqa: PLC0415

    return int((time.perf_counter() - t0) * 1000)


def emit(out: Out, result: Any, t0: float, text: Any = None, records: Any = None) -> None:
    """A finished result: the envelope (json), one line per record or the result itself
    (jsonl), or `text()` for people."""
    if out.fmt == "json":
        out.envelope(result, elapsed_ms(t0))
    elif out.fmt == "jsonl":
        for r in (result,) if records is None else records:
            out.line(r)
    else:
        text()


def types_text() -> str:
    """`ov grep --type-list`: each type name and its globs, one a line."""
    from ov.kinds import TYPES  # noqa: PLC0415

    return "".join(f"{k}: {', '.join(v)}\n" for k, v in sorted(TYPES.items()))


def emit_run_warnings(out: Out, st: Any) -> None:
    """A grep or glob run's warnings on stderr, and how many files could not be read."""
    from ov.search.scope import unreadable_warning  # noqa: PLC0415

    for w in st.warnings:
        out.warn(w)
    if st.unreadable:
        out.warn(unreadable_warning(st.unreadable))


def cut_summary(st: Any, elapsed: int, count: int | None = None, files: bool = True) -> dict:
    """The last JSON Lines record of a run a limit cut, or that has warnings (DESIGN.md: no
    silent limits; a binary file's match or an unreadable file reached stderr alone).
    `files`: the files searched, which a grep counts and a glob (`files=False`) does not:
    its record said `"files":0` after three paths."""
    from ov.search.scope import binary_notes, unreadable_warning  # noqa: PLC0415

    warnings = list(st.warnings) + binary_notes(st)
    if st.unreadable:
        warnings.append(unreadable_warning(st.unreadable))
    cut = bool(st.truncated or st.level_cut)
    rec = {"type": "summary", "count": st.count if count is None else count,
           "files": st.files, "truncated": cut, "truncated_reason": st.truncated_reason if cut else None,
           "warnings": shown_texts(warnings), "root": st.root or None, "elapsed_ms": elapsed}
    if not files:
        del rec["files"]
    return rec


def _summary_due(st: Any) -> bool:
    return bool(st.truncated or st.level_cut or st.warnings or st.binary_matches or st.binary_stopped
                or st.unreadable)


def emit_update(out: Out, rep: Any, summary: str) -> None:
    """One batch `ov index --watch` re-indexed: a JSON Lines record, else its summary line
    on stderr (the watch's stdout stays data only)."""
    if out.fmt == "jsonl":
        out.line(rep)
        out.stdout.flush()
    else:
        out.notice(summary)


def _text_then_notice(out: Out, body: str, *notices: str | None, colored: bool = False) -> None:
    """Text for people, then notices on stderr, which a closed pipe stops before them."""
    out.text(body, colored=colored)
    out.stdout.flush()
    if out.reader_gone():
        raise BrokenPipeError
    for notice in notices:
        if notice:
            out.notice(notice)


def result_summary(res: Any, records: str, elapsed: int) -> dict:
    """The last JSON Lines record of a ranked search or a context pack: what its JSON
    result holds besides the `records` list (the cursor of the next page, counts, coverage,
    warnings...), so a pipe learns what the envelope would have told it (DESIGN.md: no
    silent limits). Named as grep's `cut_summary` names its record."""
    data = to_data(res)
    data.pop(records)
    data.pop("rendered", None)  # context mode's block: the entries' texts again, joined
    return {"type": "summary", **data, "elapsed_ms": elapsed}


def emit_hits(out: Out, res: Any, query: str, t0: float, first_page: bool = True) -> None:
    """A ranked search's hits; in text, a notice of the next page after them, and on a
    first page whose best hit scores under WEAK_SCORE, that score (`weak_notice`); in JSON
    Lines, a summary record after them (with `next_cursor` where more exist)."""
    for w in res.warnings:
        out.warn(w)
    more = f"more hits: add --cursor {res.next_cursor}" if res.next_cursor else None
    weak = weak_notice(res.hits) if first_page else None
    emit(out, res, t0, lambda: _text_then_notice(out, hits_text(res, query, out.color), weak, more,
                                                 colored=out.color),
         _with_summary(res.hits, lambda: result_summary(res, "hits", elapsed_ms(t0))))


# A first page whose best hit scores under this (the estimated chance that it is what the
# query asks for: ov.rank) is told so in text, which shows no scores: a query of words no
# file holds still lists the nearest files, and they look like answers. The notice states
# the estimate, not that nothing is relevant: of the tuning sets' real queries, 2.0 %
# (CoSQA dev) and 6.4 % (SciFact train) of hybrid first pages fall under it, and the first
# hit was relevant in 2 of those 10 and 12 of those 52; 20 nonsense queries top out at
# 0.002, or 0.008 in a folder of two files (docs/BENCHMARKS.md, "Low scores said in text").
WEAK_SCORE = 0.01


def weak_notice(hits: Any) -> str | None:
    """The notice of a first page whose best hit scores under WEAK_SCORE, or None."""
    best = max((h.score for h in hits), default=None)
    if best is None or best >= WEAK_SCORE:
        return None
    said = f"{best:.3f}" if best >= 0.001 else "under 0.001"
    return (f"low scores: the best hit scores {said}, the estimated chance that it is what "
            f"the query asks for (--json shows each hit's score)")


def _with_summary(records: Any, summary: Any):
    """`records`, then the record `summary()` makes once they are written."""
    yield from records
    yield summary()


def emit_context(out: Out, res: Any, t0: float, notes: Any = ()) -> None:
    """Context mode's entries; in text, the packed block, then a line of its counts; in
    JSON Lines, a summary record after the entries (stats, search_type, warnings...).
    `notes`: warnings of the command line's own, after the result's."""
    for w in (*res.warnings, *notes):
        out.warn(w)
    s = res.stats
    counts = (f"{s.returned} entries, {s.used_tokens}/{s.max_tokens} tokens "
              f"({s.candidates} candidates, {s.dropped} dropped, {s.deduped} deduped)")
    emit(out, res, t0, lambda: _text_then_notice(out, context_text(res), counts),
         _with_summary(res.entries, lambda: result_summary(res, "entries", elapsed_ms(t0))))


def emit_grep(out: Out, records: Any, st: Any, mode: str, t0: float, *, context: bool = False,
              max_columns: int | None = None, null: bool = False, filename: bool = True,
              heading: bool | None = None, column: bool = False, vimgrep: bool = False) -> int:
    """A grep's records as they stream (text, JSON Lines), or its envelope once all are
    read (JSON), then its warnings and cuts; returns how many records there were."""
    from ov.search.scope import binary_notes, cut_notes, grep_result  # noqa: PLC0415

    n = 0
    if out.fmt == "json":
        recs = list(records)
        n = len(recs)
        res = grep_result(recs, st, mode)
        emit_run_warnings(out, st)
        out.stdout.write(grep_envelope(res, elapsed_ms(t0)))
        return n
    if out.fmt == "jsonl":
        line = (lambda r: out.raw(match_json(r))) if mode == "matches" else out.line
        for r in records:
            line(r)
            n += 1
        emit_run_warnings(out, st)
        if _summary_due(st):
            out.line(cut_summary(st, elapsed_ms(t0)))
    else:
        # rg's habit: grouped under a heading on a terminal, path:line:text in a pipe
        grouped = heading if heading is not None else out.isatty()
        printer = GrepPrinter(out.stdout, color=out.color, context=context, max_columns=max_columns,
                              null=null, filename=filename, heading=grouped and mode == "matches",
                              column=column, vimgrep=vimgrep)
        write = printer.match if mode == "matches" else printer.file_count
        for r in records:
            write(r)
            n += 1
        for note in binary_notes(st):  # rg's words, on stdout as rg puts them
            out.stdout.write(note + "\n")
        out.stdout.flush()
        emit_run_warnings(out, st)
    for note in cut_notes(st, st.node_limit, "matches" if mode == "matches" else "files"):
        out.warn(note)  # JSON carries the cut in its result
    if out.fmt == "jsonl":  # JSON has them among its warnings
        for note in binary_notes(st):
            out.warn(note)
    return n


def emit_files(out: Out, found: Any, st: Any, t0: float, null: bool = False) -> int:
    """`ov grep --files`: the paths as they come, one a line with control characters
    escaped (NUL-ended and as they are with -0), or their envelope; returns how many."""
    from ov.search.scope import cut_notes, result_of  # noqa: PLC0415

    if out.fmt == "json":
        paths = list(found)  # first: the walk fills `st` (files, root) as it runs
        res = result_of(st)
        res.paths = paths
        res.count = len(paths)
        emit_run_warnings(out, st)
        out.envelope(res, elapsed_ms(t0))
        return res.count
    end = "\0" if null else "\n"
    n = 0
    for p in found:
        if out.fmt == "jsonl":
            out.line({"path": p})
        else:  # -0 output is for `xargs -0`: names go out as they are
            out.stdout.write((p if null else clean_name(p)) + end)
        n += 1
    emit_run_warnings(out, st)
    if out.fmt == "jsonl" and _summary_due(st):
        out.line(cut_summary(st, elapsed_ms(t0), count=n))
    for note in cut_notes(st, st.node_limit, "files"):  # text and JSON Lines
        out.warn(note)
    return n


def emit_glob(out: Out, res: Any, st: Any, t0: float, fields: tuple[str, ...] = (),
              simple: bool = False, null: bool = False) -> None:
    """`ov glob`'s paths (`--simple`: one a line in any format; -0: each NUL-ended and as it
    is, for `xargs -0`, as fd's -0 and `ov grep --files -0`: in text output, as grep's -0),
    then its cuts."""
    from ov.search.scope import cut_notes  # noqa: PLC0415

    emit_run_warnings(out, st)
    if null and (simple or out.fmt == "text"):
        simple = True
        out.stdout.write("".join((m if isinstance(m, str) else m.path) + "\0" for m in res.matches))
    elif simple or out.fmt == "text":
        out.text(glob_text(res, fields, simple))
    elif out.fmt == "json":
        out.envelope(res, elapsed_ms(t0))
    else:
        for m in res.matches:
            out.line(m if not isinstance(m, str) else {"path": m})
        if res.truncated or _summary_due(st):
            out.line(cut_summary(st, elapsed_ms(t0), count=res.count, files=False))
    out.stdout.flush()
    if out.reader_gone():
        raise BrokenPipeError
    if simple or out.fmt != "json":
        for note in cut_notes(st, st.node_limit, "paths"):
            out.warn(note)
