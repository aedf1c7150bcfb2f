"""The result model: frozen dataclasses every stage passes along and every renderer reads.

One model for every command (STYLE habit 1): JSON output is `dataclasses.asdict` of these,
with optional fields that are None left out, never a hand-built dict. Paths are relative
to the index (or search) root with `/` separators; offsets are Unicode code points into
the file's decoded text; line numbers are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass, field
TYPE_CHECKING = False  # `typing` costs ~2.5 ms of a grep's start: annotations only
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class FileEntry:
    """One file found by the walker."""

    path: str  # relative to the walk root, '/' separators
    abspath: str
    size: int
    mtime_ns: int
    mode: int
    is_symlink: bool = False
    ctime_ns: int = 0  # 0: not known (the walk did not stat it for these)
    inode: int = 0


@dataclass(frozen=True)
class Chunk:
    """A span of a file's decoded text: `text == file_text[start:end]`."""

    start: int
    end: int
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    level: int = 2  # 0 abstract, 1 overview, 2 full text


@dataclass(frozen=True)
class Excerpt:
    """A hit's text: exactly the file's decoded text sliced [start, end) in code points."""

    text: str  # exactly file_text[start:end]
    start: int
    end: int


@dataclass(frozen=True)
class Copy:
    """A file whose passage is word for word the one a hit shows (`Hit.duplicates`)."""

    path: str
    start_line: int
    end_line: int


@dataclass
class Hit:
    """A ranked search hit."""

    rank: int
    path: str
    start_line: int
    end_line: int
    score: float  # in [0, 1], higher is better
    level: int
    excerpt: Excerpt
    abstract: str | None = None
    overview: str | None = None
    content: str | None = None
    scores: dict[str, Any] | None = None  # per-branch, with --explain
    tags: dict[str, str] | None = None
    # the files ranked after this one on its page whose passage shown is word for word
    # this one's (vendored and bundled copies): folded into it (ov.engine `_fold`)
    duplicates: list[Copy] | None = None
    # the line the hit is shown at, in its passage: the one defining the name the query
    # asks for, else the best match of its words (ov.query.shown_line); None for an
    # abstract or an overview (-L 0/1), which have no line
    line: int | None = None


@dataclass
class SearchResult:
    """One page of `ov find` / `ov search`: the hits, and the cursor to the next page."""

    search_type: str  # what ran: "keywords" when a hybrid had no vectors to read
    profile: dict[str, Any]
    hits: list[Hit]
    total: int
    next_cursor: str | None = None
    branches: list[str] = field(default_factory=list)  # the branches that ran
    coverage: dict[str, Any] | None = None  # ov.engine.coverage
    warnings: list[str] = field(default_factory=list)
    stale: int = 0
    plan: dict[str, Any] | None = None  # with --explain
    refused: int | None = None  # index rows leading outside the root, left out (issue 17)
    # the index root, named once: the library's and `ov mcp`'s hit paths are relative to
    # it, the command line's to the current folder
    root: str | None = None


@dataclass(frozen=True)
class ContextLine:
    """A line shown around a grep match (-A/-B/-C)."""

    line: int
    content: str


@dataclass(frozen=True)
class Submatch:
    """One match inside a grep line: its text and [start, end) in the line."""

    start: int  # code-point column in the line, 0-based
    end: int
    text: str


@dataclass
class Match:
    """A grep match: one line (or, with --multiline, the first line of a span)."""

    path: str
    line: int
    content: str
    submatches: list[Submatch]
    before_context: list[ContextLine] = field(default_factory=list)
    after_context: list[ContextLine] = field(default_factory=list)


@dataclass
class GrepResult:
    """What `ov grep -o json` reports: matches (or counts, or paths), and whether the
    node limit cut them."""

    matches: list[Match]
    count: int
    files: int  # files with at least one match
    truncated: bool = False  # a limit cut the result (`truncated_reason` says which)
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] | None = None  # with -c
    paths: list[str] | None = None  # with -l
    truncated_reason: str | None = None  # "node_limit", "level_limit" or both, comma-joined
    root: str | None = None  # the search root; paths are relative to the current folder


@dataclass
class GlobEntry:
    """One path `ov glob` found, with the fields asked for."""

    path: str
    name: str | None = None
    type: str | None = None
    size: int | None = None
    mode: str | None = None
    mtime: str | None = None
    tags: dict[str, str] | None = None


@dataclass
class GlobResult:
    """What `ov glob -o json` reports."""

    matches: list[Any]  # paths (str) or GlobEntry with the asked fields
    count: int
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    truncated_reason: str | None = None  # "node_limit", "level_limit" or both, comma-joined
    root: str | None = None  # the search root; paths are relative to the current folder


@dataclass
class IndexReport:
    """What one `ov index` run did."""

    root: str
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks: int = 0  # chunks written in this run
    embedded: int = 0  # chunks embedded in this run
    reused: int = 0  # chunk vectors reused by content hash
    seconds: float = 0.0
    partial: bool = False  # a first answer's time budget ended the walk; ov.worker goes on
    warnings: list[str] = field(default_factory=list)
    # the background worker this run started for what it left (`ov index --background`, a
    # first search), which `ov status` follows; None when none was
    worker_pid: int | None = None


@dataclass(frozen=True)
class Committed:
    """What an index holds as committed (`api.committed`: what a stopped `ov index` kept)."""

    files: int
    vectors: int  # rows with a vector
    rows: int  # rows that will have one
    partial: bool  # its files are only the first a build read (a first build stopped, or a
    # first search's time budget): the tree's other files are not in it yet


# Why `ov index` left a file out, in words (`SkippedFile.reason` -> text)
SKIP_REASONS = {"binary": "binary", "size": "over --max-filesize", "unreadable": "unreadable",
                "outside_root": "link leading outside the root", "name_not_utf8": "name not valid UTF-8"}


@dataclass(frozen=True)
class SkippedFile:
    """A file the last `ov index` left out, and why: "binary", "size" (over
    --max-filesize), "unreadable", "outside_root" (a link leading out of the root),
    "name_not_utf8"."""

    path: str
    reason: str


@dataclass
class StatusReport:
    """What `ov status` reports about an index."""

    root: str
    db: str
    files: int
    chunks: int
    embedded_chunks: int
    embedded_coverage: float
    stale_files: int
    missing_files: int
    db_bytes: int
    model: str | None
    schema_version: int
    sqlite_version: str
    vec_version: str
    settings: dict[str, Any] = field(default_factory=dict)
    skipped: int = 0  # files the last `ov index` skipped
    skipped_files: list[SkippedFile] = field(default_factory=list)  # the first 1000, by path
    coverage: dict[str, Any] | None = None  # ov.engine.coverage: every level's rows
    not_embedded_rows: int = 0  # minified, generated, lock and data files' rows (never embedded)
    trigram_pending: int = 0  # chunks whose grep trigram rows are still to be written
    # the running worker: pid, phase, phase_started, done, total, rate (rows a second, recent),
    # eta_s, and while it embeds tokens_done, tokens_total, tokens_rate (ov.worker._fresh).
    # It and `journal` are null in JSON when absent, not left out as optional fields are:
    # the text shows both lines
    background: dict[str, Any] | None = field(default_factory=lambda: None)
    # a foreground indexer writing the index now (`ov index` in another shell): pid and the
    # same progress fields; null when none is (ov.indexer.indexer_state)
    indexer: dict[str, Any] | None = field(default_factory=lambda: None)
    # the process holding the index when neither of those does (`ov mcp`'s watcher):
    # {"pid", "command"}; null otherwise (ov.indexer.holder_state)
    holder: dict[str, Any] | None = field(default_factory=lambda: None)
    # a watcher's change journal (ov.journal.status): ready, not_ready (why), changed
    journal: dict[str, Any] | None = field(default_factory=lambda: None)
    # `ov index --stop` left its mark: no worker starts again until an `ov index` runs
    # (ov.indexer.worker_paused); status had said only `background: -` at 4 % coverage
    worker_paused: bool = False
    new_files: int = 0  # files on disk `ov index` would add (a rename: one missing, one new)
    # indexed files still on disk that `ov index` would now leave out (an ignore rule, the
    # size cap or a setting changed since): search ranks them until then
    excluded_files: int = 0
    # False when the root holds a `.gitignore` that no walk reads: the tree lies in no git
    # work tree (ov.walk.gitignore_unread, as rg and fd)
    gitignore_read: bool = True
    warnings: list[str] = field(default_factory=list)  # a read-only index says so here too


@dataclass
class FileCount:
    """A file in `grep -c` (with its matching-line count) or `grep -l` (count None)."""

    path: str
    count: int | None = None


# ---- context mode, read, tag, manifest (issue 5) ---------------------------------------------


@dataclass
class ContextEntry:
    """One entry of a context block: the tier served (`detail`) and its text, uncut."""

    uri: str
    category: str  # code, docs, config, data, other
    score: float
    detail: str  # abstract, overview, passage, full, or uri (no tier fitted: the uri alone)
    text: str
    start_line: int | None = None  # a passage's lines in the file
    end_line: int | None = None


@dataclass
class ContextStats:
    """How a context pack used its token budget."""

    candidates: int  # ranked files considered (after exclusions and the session ledger)
    returned: int
    dropped: int  # candidates that did not fit even as a bare uri
    deduped: int  # skipped: served to this session within the last K turns
    max_tokens: int
    used_tokens: int  # sum of each rendered entry's estimate; <= max_tokens
    tier_counts: dict[str, int]
    ignored_options: list[str] = field(default_factory=list)


@dataclass
class ContextResult:
    """What `ov search --mode context` returns: entries packed under the budget."""

    entries: list[ContextEntry]
    rendered: str
    stats: ContextStats
    search_type: str = "hybrid"
    branches: list[str] = field(default_factory=list)  # the branches that ran, as a list's
    coverage: dict[str, Any] | None = None  # ov.engine.coverage, as a list's
    session_id: str | None = None
    turn: int | None = None
    warnings: list[str] = field(default_factory=list)
    stale: int = 0  # candidates whose file changed or went since indexing (DESIGN: said)
    truncated: bool = False  # the budget left candidates out (`stats.dropped`)
    truncated_reason: str | None = None  # "max_tokens" when it did
    root: str | None = None  # the index root, named once (DESIGN); entries' uris are relative to it


@dataclass
class ReadResult:
    """One tier of a file or folder, as `ov read` prints it."""

    path: str  # relative to the index root ("" is the root itself)
    level: int
    kind: str  # file | folder
    text: str
    # `PATH:LINE` and `PATH:START-END`: the lines `text` holds (1-based, inclusive) and the
    # line asked for; left out of JSON otherwise
    start_line: int | None = None
    end_line: int | None = None
    line: int | None = None
    warnings: list[str] = field(default_factory=list)
    root: str | None = None  # the index root, named once (DESIGN)


@dataclass
class TaggedFile:
    """A file and its tags after `ov tag`."""

    path: str
    tags: dict[str, str]


@dataclass
class TagResult:
    """What `ov tag` changed."""

    mode: str  # set | append | remove
    files: list[TaggedFile]
    count: int
    root: str | None = None  # the index root, named once (DESIGN); the files' paths are relative to it


@dataclass
class Manifest:
    """What this build and this index can serve (`ov manifest`)."""

    ov_version: str
    schema_version: int
    index: dict[str, Any] | None  # root, db, files, vectors; None without an index
    commands: list[str]
    search_types: list[str]
    modes: list[str]
    levels: list[int]  # tiers present in the index (all three without an index)
    grep_flags: list[str]
    model: dict[str, Any]
    limits: dict[str, int]
    categories: list[str]
    detail_tiers: list[str]


def duration_text(seconds: float) -> str:
    """A time for a person: `45 s`, `12 min`, `1 h 15 min` (an ETA, a wait)."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"
