"""Rendering: text for people, one JSON envelope or JSON Lines for scripts.

Renderers only format (STYLE habit 2): filtering, limits and ordering happen before them.
stdout carries only data; notices and warnings go to stderr.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from json.encoder import encode_basestring  # type: ignore[attr-defined]
TYPE_CHECKING = False  # `typing` costs ~2.5 ms of a grep's start: annotations only
if TYPE_CHECKING:
    from typing import Any, TextIO

from ov.errors import OvError

FORMATS = ("text", "json", "jsonl")


def to_data(obj: Any) -> Any:
    """Dataclasses to plain JSON data; optional fields that are None are left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if v is None and f.default is None:
                continue
            out[f.name] = to_data(v)
        return out
    if isinstance(obj, dict):
        return {k: to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    return obj


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


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

    def text(self, s: str) -> None:
        self.stdout.write(s if s.endswith("\n") or not s else s + "\n")

    # -- stderr -----------------------------------------------------------------------
    def warn(self, msg: str) -> None:
        self.stderr.write(f"ov: warning: {msg}\n")

    def notice(self, msg: str) -> None:
        self.stderr.write(f"ov: {msg}\n")

    def error(self, err: OvError) -> None:
        if self.fmt in ("json", "jsonl"):
            self.stdout.write(dumps({"status": "error", "error": err.to_dict()}) + "\n")
        else:
            self.stderr.write(f"ov: error[{err.code}]: {err.message}\n")


# ---- index / status / ranked search -------------------------------------------------------


def status_text(rep) -> str:
    mb = rep.db_bytes / 1e6
    lines = [
        f"root:            {rep.root}",
        f"index:           {rep.db} ({mb:.1f} MB)",
        f"files:           {rep.files}",
        f"chunks:          {rep.chunks}",
        f"embedded:        {rep.embedded_chunks} ({rep.embedded_coverage:.0%})",
        f"vector rows:     {_coverage_text(rep)}",
        f"background:      {_worker_text(rep.background)}",
        f"stale files:     {rep.stale_files} changed, {rep.missing_files} missing on disk",
        f"model:           {rep.model or '-'}",
        f"schema version:  {rep.schema_version}",
        f"sqlite:          {rep.sqlite_version}, sqlite-vec {rep.vec_version}",
    ]
    return "\n".join(lines)


def _coverage_text(rep) -> str:
    cov = rep.coverage or {}
    text = f"{cov.get('embedded', 0)} of {cov.get('embeddable', 0)} ({cov.get('ratio', 0):.0%})"
    if rep.not_embedded_rows:
        text += f"; {rep.not_embedded_rows} rows of minified/generated/data files not embedded"
    if rep.trigram_pending:
        text += f"; {rep.trigram_pending} chunks without grep rows yet"
    return text


def _worker_text(w: dict | None) -> str:
    if not w:
        return "-"
    text = f"pid {w['pid']}, {w.get('phase')}"
    if w.get("total"):
        text += f" {w.get('done', 0)}/{w['total']}"
    if w.get("rate"):
        text += f", {w['rate']:.0f}/s"
    if w.get("eta_s") is not None:
        text += f", eta {w['eta_s']:.0f}s"
    return text + " (`ov index --stop` stops it)"


def settings_text(settings: dict) -> str:
    """`key = value  (source)` a setting, in TOML spelling, under a `settings:` heading."""
    lines = ["settings:"]
    for key, v in settings.items():
        shown = json.dumps(v["value"], ensure_ascii=False)
        lines.append(f"  {key:<13} = {shown}  ({v['source']})")
    return "\n".join(lines)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def hits_text(res, query: str, color: bool) -> str:
    """`path:line: excerpt` a hit, best first; the matched words in bold on a terminal."""
    import re  # noqa: PLC0415

    words = [w for w in re.findall(r"[^\W_]+", query.lower()) if len(w) > 1]
    pat = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)),
                     re.IGNORECASE) if words and color else None
    lines = []
    for h in res.hits:
        text = _first_line(h.excerpt.text) or _first_line(h.abstract or "")
        if pat is not None:
            text = pat.sub(lambda m: f"\x1b[1;31m{m.group(0)}\x1b[0m", text)
            lines.append(f"\x1b[35m{h.path}\x1b[0m:\x1b[32m{h.start_line}\x1b[0m: {text}")
        else:
            lines.append(f"{h.path}:{h.start_line}: {text}")
    return "\n".join(lines)


# ---- grep / glob --------------------------------------------------------------------------
_PATH_C, _LINE_C, _MATCH_C, _RESET = "\x1b[35m", "\x1b[32m", "\x1b[1;31m", "\x1b[0m"


class GrepPrinter:
    """ripgrep's standard output, one record at a time (so a pipe sees lines at once).

    `path:line:content` for a match, `path-line-content` for a context line, `--`
    between groups of lines that are not adjacent; `path:count` with -c, `path` with -l.
    With `max_columns`, a longer line (in code points) is replaced by
    `[Omitted long line with N matches]` (context: `[Omitted long context line]`).
    Colour: path magenta, line number green, matches bold red (ripgrep's defaults).
    """

    def __init__(self, stream: TextIO, color: bool = False, context: bool = False,
                 max_columns: int | None = None) -> None:
        self.w = stream.write
        self.color = color
        self.context = context
        self.max_columns = max_columns
        self._last: tuple[str, int] | None = None  # (path, last line printed)

    def _prefix(self, path: str, line: int, sep: str) -> str:
        if self.color:
            return f"{_PATH_C}{path}{_RESET}{sep}{_LINE_C}{line}{_RESET}{sep}"
        return f"{path}{sep}{line}{sep}"

    def _line(self, path: str, line: int, content: str, sep: str, subs=()) -> None:
        if self.context and self._last is not None and self._last != (path, line - 1):
            self.w("--\n")
        self._last = (path, line)
        if self.max_columns is not None and len(content) > self.max_columns:
            body = (f"[Omitted long line with {len(subs)} matches]" if sep == ":"
                    else "[Omitted long context line]")
        elif self.color and subs:
            parts, pos = [], 0
            for s in subs:
                if s.end <= pos:
                    continue
                parts.append(content[pos:s.start])
                parts.append(f"{_MATCH_C}{content[max(s.start, pos):s.end]}{_RESET}")
                pos = s.end
            parts.append(content[pos:])
            body = "".join(parts)
        else:
            body = content
        self.w(self._prefix(path, line, sep) + body + "\n")

    def match(self, m) -> None:
        for c in m.before_context:
            self._line(m.path, c.line, c.content, "-")
        # a multi-line match spans several lines: they are one record
        self._line(m.path, m.line, m.content, ":", m.submatches)
        extra = m.content.count("\n")
        if extra:
            self._last = (m.path, m.line + extra)
        for c in m.after_context:
            self._line(m.path, c.line, c.content, "-")

    def file_count(self, fc) -> None:
        p = f"{_PATH_C}{fc.path}{_RESET}" if self.color else fc.path
        self.w(p + ("\n" if fc.count is None else f":{fc.count}\n"))


def glob_text(res, fields: tuple[str, ...] = (), simple: bool = False) -> str:
    """Paths one a line; with fields, the asked fields tab-separated in the asked order."""
    if simple or not fields:
        return "".join((m if isinstance(m, str) else m.path) + "\n" for m in res.matches)
    rows = []
    for m in res.matches:
        cells = []
        for f in fields:
            v = getattr(m, f)
            if f == "tags":
                v = ",".join(f"{k}={x}" for k, x in sorted((v or {}).items()))
            cells.append("" if v is None else str(v))
        rows.append("\t".join(cells) + "\n")
    return "".join(rows)


# ---- context / read / tag / manifest ---------------------------------------------------------


def context_text(res) -> str:
    """The rendered block, as pasted into a prompt."""
    return res.rendered


def tags_text(res) -> str:
    """`path<TAB>k=v,k=v` a file, in path order."""
    return "".join(f"{f.path}\t{','.join(f'{k}={v}' for k, v in sorted(f.tags.items()))}\n"
                   for f in res.files)


def manifest_text(m) -> str:
    idx = m.index
    where = (f"{idx['root']} ({idx['files']} files, {'with' if idx['vectors'] else 'without'} vectors)"
             if idx else "none found (find/search would build one here)")
    lim = m.limits
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
        f"{lim['level_limit']}, context {lim['default_max_tokens']} tokens",
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
        lines.append(f"{mark} {c.name}: {c.detail}" + ("" if c.ok else f"; fix: {c.fix}"))
    return "\n".join(lines)


def _ctx_json(lines) -> str:
    q = encode_basestring
    return "[" + ",".join(f'{{"line":{c.line},"content":{q(c.content)}}}' for c in lines) + "]"


def match_json(m) -> str:
    """A grep Match as JSON text, equal to `dumps(to_data(m))` (a test holds it so),
    written straight away: there may be 100k+ of them, and the generic walk over
    dataclass fields costs more than the search itself."""
    return _match_records((m,))[0]


def _match_records(matches) -> list[str]:
    q = encode_basestring
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
            "warnings": list(res.warnings)}
    if res.counts is not None:
        rest["counts"] = dict(res.counts)
    if res.paths is not None:
        rest["paths"] = list(res.paths)
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
