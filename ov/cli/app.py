"""The command line: parse flags, call the engine, render the report.

This is the one place where an `OvError` becomes an exit status (0 results, 1 none,
2 error) and a message; everything below it raises or returns. Each command is an
`Annotated` signature that forwards to a plain function in `ov.engine` / `ov.indexer`.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from ov.errors import EXIT_ERROR, EXIT_NONE, EXIT_OK, OvError
from ov.cli.commands import (build_index, context_command, glob_command, grep_command, interrupted_note, open_index,
                             read_from_here, search_command, stop_background, tagged_from_here)
from ov.cli.fast import fast
from ov.cli.run import report, run_body, settle
from ov.paths import check_nul
from ov.render import FORMATS, Out, emit, emit_update

_APP_SETTINGS = dict(
    name="ov",
    help="Search a directory tree: exact (grep), paths (glob), keywords, semantic and hybrid.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app = typer.Typer(**_APP_SETTINGS)


def _version(value: bool) -> None:
    if value:
        import ov  # noqa: PLC0415

        sys.stdout.write(f"ov {ov.__version__}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print ov's version and exit.")] = False,
) -> None:
    """Search a directory tree: exact (grep), paths (glob), keywords, semantic and hybrid."""

# ---- options shared by every command ---------------------------------------------------


def _values(*choices: str):
    """An option's fixed values, for shell completion; scripts/gen_docs.py reads them into
    the static bash, zsh and fish completions, so the flag and its values stay one table."""

    def complete(incomplete: str) -> list[str]:
        return [c for c in choices if c.startswith(incomplete)]

    return complete


OutputOpt = Annotated[
    str, typer.Option("-o", "--output", help="Output format: text, json or jsonl.", metavar="FORMAT",
                      autocompletion=_values(*FORMATS))
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as -o json.")]
DbOpt = Annotated[
    Optional[Path],
    typer.Option("--db", envvar="OV_DB", help="Index database file (default: nearest .ov/index.db).",
                 metavar="FILE"),
]
UriOpt = Annotated[
    Optional[list[str]],
    typer.Option("-u", "--uri", help="Limit to this file or folder (repeatable).", metavar="PATH"),
]
ColorOpt = Annotated[
    str, typer.Option("--color", help="Colour: auto (on a terminal), always or never; NO_COLOR turns auto off.",
                      metavar="WHEN", autocompletion=_values("auto", "always", "never"))
]


def run(out_args: tuple[str, bool, str], body: Callable[[Out], int]) -> None:
    """Run one command body with the shared error handling (`ov.cli.run.run_body`) and
    exit with its status."""
    raise typer.Exit(run_body(out_args, body))


def fail(out_args: tuple[str, bool, str], err: OvError) -> None:
    """Report an error found while reading flags, with the command's output format."""

    def body(out: Out) -> int:
        raise err

    run(out_args, body)


# ======================================================================================
# Commands. Each section forwards to the engine; keep the sections apart.
# ======================================================================================


# ---- index / status (ov.indexer) ------------------------------------------------------


@app.command("index")
def index_cmd(
    path: Annotated[Path, typer.Argument(help="Folder to index (default: the current folder).")] = Path("."),
    no_embed: Annotated[bool, typer.Option("--no-embed", help="Build the keyword index only (no vectors).")] = False,
    full: Annotated[bool, typer.Option("--full", help="Rebuild from scratch.")] = False,
    hidden: Annotated[Optional[bool], typer.Option("--hidden/--no-hidden", help="Include hidden files and folders (default: the config's hidden, else no).", show_default=False)] = None,
    no_ignore: Annotated[bool, typer.Option("--no-ignore", help="Do not read .gitignore/.ignore/.rgignore/.ovignore files.")] = False,
    follow: Annotated[bool, typer.Option("-L", "--follow", help="Follow symlinks (never outside the root).")] = False,
    max_filesize: Annotated[Optional[str], typer.Option("--max-filesize", help="Skip files larger than this: bytes, or a size such as 2M (K, M, G as in rg; default: the config's max-filesize, else 1 MiB).", metavar="SIZE")] = None,
    progress: Annotated[Optional[bool], typer.Option("--progress/--no-progress", help="Show progress on stderr: a bar on a terminal, else a line as work advances, at most one a second (default: on a terminal; off one, a single line when an embedding of 2,000 rows or more starts, which --no-progress turns off).", show_default=False)] = None,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the background worker adding vectors to the index of PATH and keep it stopped (no search starts another until `ov index` runs), and exit (a foreground indexer holding the index is named, with how to stop it).")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Write the keyword rows, then keep watching: re-index each saved, added or deleted file until interrupted, and add the vectors between batches.")] = False,
    background: Annotated[bool, typer.Option("--background", help="Write the keyword rows of every file now and leave the vectors to a background worker, as a first search does (a running one is started again), instead of computing them here.")] = False,
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Build or refresh the index of PATH (incremental), in the foreground: a background
    worker started by a first search is stopped and its work done here."""

    def body(out: Out) -> int:
        t0 = time.perf_counter()
        check_nul(str(path))
        if not path.exists():
            raise OvError("not_found", f"{path}: no such folder", field="path")
        if not path.is_dir():
            raise OvError("invalid_path", f"{path} is not a folder", field="path")
        if background and (no_embed or watch or full):
            other = ", ".join(f for f, on in (("--no-embed", no_embed), ("--watch", watch), ("--full", full)) if on)
            raise OvError("invalid_argument", f"--background leaves the vectors to a worker; it takes no "
                          f"{other}", field="background")
        if stop:
            given = [f for f, on in (("--full", full), ("--no-embed", no_embed), ("--watch", watch),
                                     ("--no-ignore", no_ignore), ("--follow", follow),
                                     ("--max-filesize", max_filesize is not None),
                                     ("--background", background)) if on]
            if given:  # said and ignored would leave the user thinking they ran
                raise OvError("invalid_argument", f"--stop only stops the background worker; it "
                              f"takes no {', '.join(given)}", field="stop")
            return stop_background(out, path, db)
        from ov import api  # noqa: PLC0415

        _term_as_interrupt()
        try:
            rep = build_index(out, path, db, embed=not no_embed, full=full,
                              walk_opts=api.walk_options(path, hidden, no_ignore, follow, max_filesize),
                              progress=progress, background=background,
                              # a watch adds the vectors between its batches: it watches at once
                              vectors_later=watch)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(interrupted_note(path, db, embed=not no_embed, full=full)) from None
        emit(out, rep, t0, lambda: out.notice(api.summary(rep)))
        if watch:
            _watch(out, path, db, not no_embed, dict(hidden=hidden, no_ignore=no_ignore, follow=follow,
                                                     max_filesize=max_filesize))
        return EXIT_OK

    run((output, json_, color), body)


def _term_as_interrupt() -> None:
    """SIGTERM (a service manager's stop, `timeout`, an editor ending its task) ends `ov
    index` as Ctrl-C does: a `--full` removes its half-built file, a watch the change
    journal's socket, and the batch being written is rolled back."""
    import signal  # noqa: PLC0415

    def stop(_sig, _frame) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def _watch(out: Out, path: Path, db: Optional[Path], embed: bool, flags: dict) -> None:
    """`ov index --watch`: re-index changes until Ctrl-C, a line per batch (a JSON Lines
    record with -o jsonl). The walk's `flags` are given, not the options they make: each
    catch-up reads the tree's config again (a change of `.ov/config.toml` asks for one)."""
    from ov import api  # noqa: PLC0415

    first = [True]

    def updated(rep) -> None:
        if first[0]:  # the catch-up, once the watch is set up: nothing saved since is missed
            first[0] = False
            out.notice(f"watching {path.resolve()} (Ctrl-C to stop)")
        if rep.added or rep.updated or rep.removed:
            emit_update(out, rep, api.summary(rep))

    # the catch-up pass (a stat per file) covers what was saved between the build and the
    # moment the OS watch was set up
    api.watcher(path, db=db, embed=embed, on_update=updated, warn=out.warn, **flags).run()


@app.command("status")
def status_cmd(
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Show what is indexed: files, chunks, embedding coverage, stale files (changed, missing,
    and new files the index lacks), the background worker and the change journal, sizes,
    versions, and each setting with where it came from (default, .ov/config.toml or
    pyproject.toml)."""

    def body(out: Out) -> int:
        t0 = time.perf_counter()
        with open_index(db) as ix:
            rep = ix.status()

        def text() -> None:
            from ov.render import settings_text, status_text  # noqa: PLC0415

            out.text(status_text(rep) + "\n" + settings_text(rep.settings))
            for w in rep.warnings:  # (JSON: `warnings`)
                out.warn(w)

        emit(out, rep, t0, text)
        return EXIT_OK

    run((output, json_, color), body)


# ---- grep / glob (ov.search) ----------------------------------------------------------
# PATHs may lie anywhere, as for rg (see ov.search.scope.plan_roots). The walk has no size
# cap, as ripgrep.

_ROOT_NOTE = ("A PATH may lie anywhere, as for rg. One under the search root (the nearest "
              "folder at or above the current one holding an index (.ov/), else the git work "
              "tree, else the current folder) is searched with that root's ignore files and "
              "index; one elsewhere from the index root above it, else from itself. Output paths are relative to the "
              "current folder (../x for a file outside it); under a PATH given absolute, absolute, as rg and fd.")


@app.command("grep", help=(
    "Search file contents for a regex (ripgrep syntax and habits). Matches are per line: "
    "^, $, \\s and [^x] never cross a newline unless -U; $ does not match before \\r. "
    "\\b, \\d, \\w and -i are Unicode-aware (-i uses simple case folding, as ripgrep). "
    "Binary files (a NUL byte) are skipped, or searched up to the NUL as ripgrep does. "
    "--tags needs an index (else the error is `unsupported`). " + _ROOT_NOTE))
def grep_cmd(
    pattern: Annotated[Optional[str], typer.Argument(
        help="A regex (or, with -F, a fixed string); with -e, --files or --type-list, a PATH.",
        show_default=False)] = None,
    paths: Annotated[Optional[list[str]], typer.Argument(
        help="Files or folders to search (default: the current folder).", show_default=False)] = None,
    fixed: Annotated[bool, typer.Option("-F", "--fixed-strings", help="PATTERN is a plain string.")] = False,
    ignore_case: Annotated[bool, typer.Option("-i", "--ignore-case", help="Fold case (Unicode simple folding).")] = False,
    word: Annotated[bool, typer.Option("-w", "--word-regexp", help="Only matches with no word character on either side.")] = False,
    line_regexp: Annotated[bool, typer.Option("-x", "--line-regexp", help="Only matches that are a whole line (wins over -w).")] = False,
    multiline: Annotated[bool, typer.Option("-U", "--multiline", help="Let matches span lines.")] = False,
    after: Annotated[Optional[int], typer.Option("-A", "--after-context", help="Lines after each match.", metavar="N")] = None,
    before: Annotated[Optional[int], typer.Option("-B", "--before-context", help="Lines before each match.", metavar="N")] = None,
    context: Annotated[Optional[int], typer.Option("-C", "--context", help="Lines before and after each match.", metavar="N")] = None,
    globs: Annotated[Optional[list[str]], typer.Option("-g", "--glob", help="Only paths matching this glob; !GLOB excludes (repeatable; gitignore syntax, last match wins). A file or folder a GLOB names is searched even where ignore files or the hidden-name rule leave it out, as rg.", metavar="GLOB")] = None,
    types: Annotated[Optional[list[str]], typer.Option("-t", "--type", help="Only files of this type (ripgrep names: py, rust, md...; repeatable).", metavar="TYPE")] = None,
    types_not: Annotated[Optional[list[str]], typer.Option("-T", "--type-not", help="Leave out files of this type, as rg -T (repeatable; wins over -t).", metavar="TYPE")] = None,
    exclude_uri: ExcludeUriOpt = None,
    hidden: Annotated[Optional[bool], typer.Option("--hidden/--no-hidden", help="Search dotfiles and dot-folders too (default: the config's hidden, else no).", show_default=False)] = None,
    no_ignore: Annotated[bool, typer.Option("--no-ignore", help="Disregard .gitignore, .ignore, .rgignore and .ovignore.")] = False,
    node_limit: Annotated[Optional[int], typer.Option("--node-limit", help="Most matches (or files, with -c/-l) returned; the result says when it cut (default: the config's node-limit, else 256).", metavar="N")] = None,
    level_limit: Annotated[Optional[int], typer.Option("--level-limit", "--max-depth", help="Folder depth below each PATH (1: only its own files, as rg --max-depth 1); no cut by default, and a cut is reported.", metavar="N")] = None,
    tags: Annotated[Optional[list[str]], typer.Option("--tags", help="Only indexed files with this tag k=v (repeatable; AND).", metavar="K=V")] = None,
    count: Annotated[bool, typer.Option("-c", "--count", help="Print each file's number of matching lines.")] = False,
    files_with_matches: Annotated[bool, typer.Option("-l", "--files-with-matches", help="Print only the paths of files with a match.")] = False,
    max_columns: Annotated[Optional[int], typer.Option("--max-columns", help="Omit lines longer than N characters (text output).", metavar="N")] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="Do not use the index to skip files.")] = False,
    line_number: Annotated[bool, typer.Option("-n", "--line-number", help="Accepted for ripgrep habits; line numbers are always shown.")] = False,
    regexps: Annotated[Optional[list[str]], typer.Option("-e", "--regexp", help="A pattern (repeatable: lines matching any); the first argument is then a PATH.", metavar="PATTERN")] = None,
    invert: Annotated[bool, typer.Option("-v", "--invert-match", help="Lines that do not match.")] = False,
    max_count: Annotated[Optional[int], typer.Option("-m", "--max-count", help="At most N matching lines a file.", metavar="N")] = None,
    smart_case: Annotated[bool, typer.Option("-S", "--smart-case", help="Fold case unless the pattern holds an upper-case letter.")] = False,
    case_sensitive: Annotated[bool, typer.Option("-s", "--case-sensitive", help="Match case exactly (beats -i and -S).")] = False,
    with_filename: Annotated[bool, typer.Option("-H", "--with-filename", help="Print the path with each line (the default).")] = False,
    no_filename: Annotated[bool, typer.Option("--no-filename", help="Print lines without their path (text output).")] = False,
    null: Annotated[bool, typer.Option("-0", "--null", help="Follow each printed path with a NUL byte (for xargs -0).")] = False,
    heading: Annotated[Optional[bool], typer.Option("--heading/--no-heading", help="Print each file's path once above its lines, a blank line between files (the default on a terminal, as rg); --no-heading: path:line:text on every line (the default when piped).", show_default=False)] = None,
    column: Annotated[bool, typer.Option("--column", help="Print the column of each line's first match after its line number, counted in bytes from 1 as rg counts it (text output).")] = False,
    vimgrep: Annotated[bool, typer.Option("--vimgrep", help="Every match on its own line as path:line:column:text, never under a heading (a line with two matches printed twice), for an editor's quickfix list as rg's (text output).")] = False,
    files: Annotated[bool, typer.Option("--files", help="List the files that would be searched; no PATTERN.")] = False,
    sort: Annotated[Optional[str], typer.Option("--sort", help="Only `path`: the order results always come in.", metavar="path", autocompletion=_values("path"))] = None,
    type_list: Annotated[bool, typer.Option("--type-list", help="List the file types -t knows, with their globs.")] = False,
    follow: Annotated[bool, typer.Option("-L", "--follow", help="Follow symbolic links (never out of the root, never in a loop).")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Print nothing; the exit status says whether anything matched.")] = False,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop after this many seconds of wall time with deadline_exceeded, saying how far it got (default 60).", metavar="SECONDS")] = None,
    color: ColorOpt = "auto",
    output: OutputOpt = "text",
    json_: JsonOpt = False,
) -> None:
    # the parameters are grep_command's, by name (ov.cli.fast runs it on the fast path too)
    raise typer.Exit(grep_command(**locals()))


@app.command("glob", help=(
    "List files and symlinks whose path relative to PATH (default: the current folder) "
    "matches a glob: * and ? never cross /, ** spans folders, [...] and {a,b}; "
    "case-sensitive unless -i. Ignore rules and hidden files as for grep. " + _ROOT_NOTE))
def glob_cmd(
    pattern: Annotated[str, typer.Argument(help="A glob such as '**/*.py' or 'src/*.{c,h}'.",
                                           show_default=False)],
    path: Annotated[Optional[str], typer.Argument(help="Folder to list (default: the current folder).",
                                                  show_default=False)] = None,
    ignore_case: Annotated[bool, typer.Option("-i", "--ignore-case", help="Fold case.")] = False,
    hidden: Annotated[Optional[bool], typer.Option("--hidden/--no-hidden", help="Include dotfiles and dot-folders; * then matches a leading dot (default: the config's hidden, else no).", show_default=False)] = None,
    no_ignore: Annotated[bool, typer.Option("--no-ignore", help="Disregard .gitignore, .ignore, .rgignore and .ovignore.")] = False,
    node_limit: Annotated[Optional[int], typer.Option("--node-limit", help="Most paths returned; the result says when it cut (default: the config's node-limit, else 256).", metavar="N")] = None,
    level_limit: Annotated[Optional[int], typer.Option("--level-limit", "--max-depth", help="Folder depth below PATH (1: only its own files); no cut by default, and a cut is reported.", metavar="N")] = None,
    fields: Annotated[Optional[str], typer.Option("-f", "--fields", help="Fields per path: name,path,type,size,mode,mtime,tags (mode is octal, mtime ISO 8601 UTC).", metavar="LIST")] = None,
    simple: Annotated[bool, typer.Option("--simple", help="Bare paths, one a line (whatever the format).")] = False,
    print0: Annotated[bool, typer.Option("-0", "--print0", help="Bare paths, each followed by a NUL byte and written as it is (for xargs -0; text output).")] = False,
    exclude_uri: ExcludeUriOpt = None,
    tags: Annotated[Optional[list[str]], typer.Option("--tags", help="Only indexed files with this tag k=v (repeatable; AND).", metavar="K=V")] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="Walk the tree, not the listing kept beside the index.")] = False,
    color: ColorOpt = "auto",
    output: OutputOpt = "text",
    json_: JsonOpt = False,
) -> None:
    # the parameters are glob_command's, by name (ov.cli.fast runs it on the fast path too)
    raise typer.Exit(glob_command(**locals()))


# ---- find / search (ov.engine) --------------------------------------------------------


QueryArg = Annotated[str, typer.Argument(help="What to look for, in plain words.", show_default=False)]
LimitOpt = Annotated[Optional[int], typer.Option("-n", "--limit", "--node-limit", help="Hits per page, 1-50 (default: the config's limit, else 10).", metavar="N")]
ThresholdOpt = Annotated[Optional[float], typer.Option("--threshold", help="Drop hits scoring below this (0-1).", metavar="SCORE")]
AfterOpt = Annotated[Optional[str], typer.Option("--after", help="Only files changed at or after (2h, 7d, 2024-05-01, ISO 8601; UTC).", metavar="TIME")]
BeforeOpt = Annotated[Optional[str], typer.Option("--before", help="Only files changed before this time.", metavar="TIME")]
TimeFieldOpt = Annotated[str, typer.Option("--time-field", help="Time used by --after/--before: updated_at or created_at.", metavar="FIELD", autocompletion=_values("updated_at", "created_at"))]
TagsOpt = Annotated[Optional[list[str]], typer.Option("--tags", help="Only files with this tag k=v (repeatable; AND).", metavar="K=V")]
TypeOpt = Annotated[Optional[list[str]], typer.Option("-t", "--type", help="Only this file type or extension (repeatable).", metavar="TYPE")]
LevelOpt = Annotated[Optional[str], typer.Option("-L", "--level", help="Tiers to search: 0 abstract, 1 overview, 2 full text (e.g. 0,1,2; default 2).", metavar="LEVELS")]
CursorOpt = Annotated[Optional[str], typer.Option("--cursor", help="Continue from a previous result's next_cursor.", metavar="CURSOR")]
ExplainOpt = Annotated[bool, typer.Option("--explain", help="Show each branch's raw score and rank.")]
ReadContentOpt = Annotated[bool, typer.Option("--read-content", help="Inline each hit's whole file (JSON).")]
ExcludeUriOpt = Annotated[Optional[list[str]], typer.Option("--exclude-uri", help="Leave out this file or folder, or the paths a glob holding *, ? or [ matches, read as -g reads it (repeatable).", metavar="PATH")]
GlobOpt = Annotated[Optional[list[str]], typer.Option("-g", "--glob", help="Only paths matching this glob; !GLOB excludes (repeatable; gitignore syntax, last match wins; as ov grep -g, before the limit).", metavar="GLOB")]
AllChunksOpt = Annotated[bool, typer.Option("--all-chunks", help="List every matching chunk, not one hit per file.")]
NoAutoIndexOpt = Annotated[bool, typer.Option("--no-auto-index", help="Fail with not_found instead of building a missing index.")]


@app.command("find")
def find_cmd(
    query: QueryArg,
    limit: LimitOpt = None,
    threshold: ThresholdOpt = None,
    after: AfterOpt = None,
    before: BeforeOpt = None,
    time_field: TimeFieldOpt = "updated_at",
    tags: TagsOpt = None,
    type_: TypeOpt = None,
    level: LevelOpt = None,
    cursor: CursorOpt = None,
    explain: ExplainOpt = False,
    read_content: ReadContentOpt = False,
    uri: UriOpt = None,
    exclude_uri: ExcludeUriOpt = None,
    globs: GlobOpt = None,
    all_chunks: AllChunksOpt = False,
    no_auto_index: NoAutoIndexOpt = False,
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Semantic search: rank files by meaning (vectors only)."""
    # the parameters are search_command's, by name (ov.cli.fast runs it on the fast path too)
    raise typer.Exit(search_command(search_type="semantic", **locals()))


@app.command("search")
def search_cmd(
    query: QueryArg,
    search_type: Annotated[Optional[str], typer.Option("--search-type", help="hybrid, keywords (alias lexical) or semantic (default: the config's search-type, else hybrid).", metavar="TYPE", autocompletion=_values("hybrid", "keywords", "lexical", "semantic"))] = None,
    mode: Annotated[str, typer.Option("--mode", help="list (ranked hits) or context (packed for an LLM).", metavar="MODE", autocompletion=_values("list", "context"))] = "list",
    limit: LimitOpt = None,
    threshold: ThresholdOpt = None,
    after: AfterOpt = None,
    before: BeforeOpt = None,
    time_field: TimeFieldOpt = "updated_at",
    tags: TagsOpt = None,
    type_: TypeOpt = None,
    level: LevelOpt = None,
    cursor: CursorOpt = None,
    explain: ExplainOpt = False,
    read_content: ReadContentOpt = False,
    uri: UriOpt = None,
    exclude_uri: ExcludeUriOpt = None,
    globs: GlobOpt = None,
    all_chunks: AllChunksOpt = False,
    no_auto_index: NoAutoIndexOpt = False,
    max_tokens: MaxTokensOpt = None,
    detail: DetailOpt = None,
    session_id: SessionOpt = None,
    dedup_turns: DedupTurnsOpt = None,
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Ranked search: hybrid (keywords + meaning) by default."""
    if mode not in ("list", "context"):
        kind = (f"; the kind of search is --search-type {mode}" if mode in ("hybrid", "keywords", "semantic")
                else "")  # `--mode keywords`: the two flags are easily confused
        fail((output, json_, color), OvError("invalid_argument", f"unknown mode {mode!r} (use list or context{kind})",
                                            field="mode"))
    if mode == "context":
        raise typer.Exit(context_command(
            query=query, search_type=search_type, limit=limit, threshold=threshold, after=after,
            before=before, time_field=time_field, tags=tags, type_=type_, level=level, uri=uri,
            exclude_uri=exclude_uri, globs=globs, no_auto_index=no_auto_index, max_tokens=max_tokens,
            detail=detail, session_id=session_id, dedup_turns=dedup_turns,
            list_only={"--cursor": cursor, "--explain": explain, "--read-content": read_content,
                       "--all-chunks": all_chunks}, output=output, json_=json_, db=db, color=color))
    _no_context_options(max_tokens, detail, session_id, dedup_turns, (output, json_, color))
    raise typer.Exit(search_command(
        query=query, search_type=search_type, limit=limit, threshold=threshold, after=after,
        before=before, time_field=time_field, tags=tags, type_=type_, level=level, cursor=cursor,
        explain=explain, read_content=read_content, uri=uri, exclude_uri=exclude_uri, globs=globs,
        all_chunks=all_chunks, no_auto_index=no_auto_index, output=output, json_=json_, db=db,
        color=color))


# ---- read / tag / manifest ------------------------------------------------------------

# Context mode's options (`search --mode context`, run by commands.context_command) are read by
# search_cmd (annotations resolve when the app runs, so order does not matter).

MaxTokensOpt = Annotated[Optional[int], typer.Option("--max-tokens", help="Context mode: token budget of the block (default 1600; chars/4).", metavar="N")]
DetailOpt = Annotated[Optional[str], typer.Option("--detail", help='Context mode: default tier (passage: the part that matched, the default), abstract, overview or full, or JSON per category ({"code":"full"}).', metavar="TIER", autocompletion=_values("abstract", "overview", "passage", "full"))]
SessionOpt = Annotated[Optional[str], typer.Option("--session-id", help="Context mode: record what is served under this session id.", metavar="ID")]
DedupTurnsOpt = Annotated[Optional[int], typer.Option("--dedup-turns", help="Context mode: skip entries served to the session in its last K turns (default 1).", metavar="K")]


def _no_context_options(max_tokens, detail, session_id, dedup_turns, out_args) -> None:
    given = [name for name, v in (("--max-tokens", max_tokens), ("--detail", detail),
                                  ("--session-id", session_id), ("--dedup-turns", dedup_turns))
             if v is not None]
    if given:
        fail(out_args, OvError("invalid_argument", f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'} with --mode context",
                               field=given[0].lstrip("-").replace("-", "_")))


@app.command("read")
def read_cmd(
    path: Annotated[str, typer.Argument(help="An indexed file or folder; FILE:LINE (as grep and search print a hit) prints the indexed passage that holds the line, FILE:START-END those lines, each after its number (N: a line asked for, N- the rest of its passage), from the file as it is now.", show_default=False)],
    level: Annotated[Optional[int], typer.Option("-L", "--level", help="0 abstract, 1 overview, 2 full text (default: 2 for a file, 1 for a folder; a folder's 2 lists its files; FILE:LINE takes only 2).", metavar="N", autocompletion=_values("0", "1", "2"))] = None,
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Print one tier of an indexed file or folder, or lines of a file (FILE:LINE, FILE:START-END)."""

    def body(out: Out) -> int:
        t0 = time.perf_counter()
        check_nul(path)  # before the index is opened
        with open_index(db) as ix:
            res = read_from_here(_read_named(ix, path, level), ix.root)

        def text() -> None:
            from ov.render import read_text  # noqa: PLC0415

            out.text(read_text(res))
            for w in res.warnings:
                out.warn(w)

        emit(out, res, t0, text)
        return EXIT_OK

    run((output, json_, color), body)


def _read_named(ix, path: str, level: int | None):
    """`ix.read`, and for a name text output printed with its control characters as `\\xNN`
    (`ov.render.clean_name`: `new\\x0aline.txt:1:` from grep), the file that name stands
    for, when no file has the name as typed: a path copied from grep's or glob's text then
    reads back."""
    try:
        return ix.read(path, level, cwd=Path.cwd())
    except OvError as e:
        from ov.render import unclean_name  # noqa: PLC0415

        if e.code != "not_found" or (named := unclean_name(path)) == path:
            raise
        try:
            return ix.read(named, level, cwd=Path.cwd())
        except OvError as other:  # the file it stands for, and what is wrong with it
            raise (e if other.code == "not_found" else other) from None


@app.command("tag")
def tag_cmd(
    path: Annotated[str, typer.Argument(help="An indexed file, or a folder with --recursive.", show_default=False)],
    tags: Annotated[Optional[list[str]], typer.Argument(help="Tags as key=value.", show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", help="set (replace all tags), append (add or overwrite keys; default) or remove (k= drops a key, k=v only with that value).", metavar="MODE", autocompletion=_values("set", "append", "remove"))] = "append",
    recursive: Annotated[bool, typer.Option("-r", "--recursive", help="Tag every indexed file under a folder.")] = False,
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Set, add or remove k=v tags on indexed files (kept across re-indexing, and by a file renamed or moved with its content unchanged)."""

    def body(out: Out) -> int:
        from ov.query import parse_tags  # noqa: PLC0415

        t0 = time.perf_counter()
        pairs = parse_tags(tags)
        check_nul(path)  # before the index is opened
        with open_index(db) as ix:
            res = tagged_from_here(ix.tag(path, pairs, mode, recursive, cwd=Path.cwd()), ix.root)

        def text() -> None:
            from ov.render import tags_text  # noqa: PLC0415

            out.text(tags_text(res))

        emit(out, res, t0, text, res.files)
        return EXIT_OK

    run((output, json_, color), body)


def _grep_flags() -> list[str]:
    """grep's long and short flags, from the command table (ov/cli/flags.py, generated from
    the command itself)."""
    from ov.cli.flags import COMMANDS  # noqa: PLC0415

    return sorted(COMMANDS["grep"]["opts"], key=lambda f: (f.lstrip("-").lower(), f))


@app.command("manifest")
def manifest_cmd(
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    """Describe what this build and the nearest index can serve (modes, tiers, model, limits)."""

    def body(out: Out) -> int:
        from ov import api  # noqa: PLC0415
        from ov.engine import manifest  # noqa: PLC0415

        t0 = time.perf_counter()
        if api.locate(None, db) is None:
            from ov.paths import search_root  # noqa: PLC0415

            res = manifest(None, None, _grep_flags(), config_root=search_root(Path.cwd()))
        else:
            with api.Index.open(db=db, readonly=True) as ix:
                res = ix.manifest(_grep_flags())

        def text() -> None:
            from ov.render import manifest_text  # noqa: PLC0415

            out.text(manifest_text(res))

        emit(out, res, t0, text)
        return EXIT_OK

    run((output, json_, color), body)


# ---- doctor (ov.doctor) ---------------------------------------------------------------


@app.command("doctor", help=(
    "Check that ov can run here and say how to fix what cannot: Python, SQLite and FTS5, "
    "extension loading and sqlite-vec, the model files and their sha256, the tokenizer "
    "settings, onnxruntime and one embedding, the packages `ov mcp` imports (mcp, anyio, "
    "watchfiles), and the nearest index's schema and integrity. "
    "Exit 0 when every check passes, 1 when any fails (the report says which and the fix), "
    "2 when doctor itself cannot run."))
def doctor_cmd(
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    db: DbOpt = None,
    color: ColorOpt = "auto",
) -> None:
    def body(out: Out) -> int:
        from ov.doctor import run_checks  # noqa: PLC0415

        t0 = time.perf_counter()
        res = run_checks(Path.cwd(), db)

        def text() -> None:
            from ov.render import doctor_text  # noqa: PLC0415

            out.text(doctor_text(res, out.color), colored=out.color)
            failed = sum(not c.ok for c in res.checks)
            out.notice(f"{len(res.checks) - failed} of {len(res.checks)} checks passed" if failed
                       else f"all {len(res.checks)} checks passed")

        emit(out, res, t0, text, res.checks)
        # A failing doctor should fail a CI step, yet it is a finding, not an error: the
        # report is still the data on stdout, so 1 ("ran, the answer is no") rather than 2.
        return EXIT_OK if res.ok else EXIT_NONE

    run((output, json_, color), body)


# ---- mcp (ov.mcp) ---------------------------------------------------------------------


@app.command("mcp", help=(
    "Serve the tree at PATH (default: the current folder's index root) to an agent over "
    "stdio: a Model Context Protocol server with the tools search, find, grep, glob, read "
    "and status. The index is built first if there is none, stays open with the model "
    "loaded, and follows saved files while the server runs."))
def mcp_cmd(
    path: Annotated[Optional[Path], typer.Argument(help="The tree to serve (default: the current folder).", show_default=False)] = None,
    db: DbOpt = None,
    no_watch: Annotated[bool, typer.Option("--no-watch", help="Do not re-index files as they change.")] = False,
    output: OutputOpt = "text",
    json_: JsonOpt = False,
    color: ColorOpt = "auto",
) -> None:
    # stdout is the protocol's; the output format only shapes an error met before serving
    def body(out: Out) -> int:
        if sys.stdin is None:  # the protocol's requests come on stdin: nothing to serve
            raise OvError("invalid_argument", "standard input is closed; `ov mcp` reads its "
                          "client's requests there")
        from ov.mcp import serve  # noqa: PLC0415 - the MCP SDK loads for this command only

        return serve(path, db, watch=not no_watch)

    run((output, json_, color), body)


# ======================================================================================


def _wants_json(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a == "--json" or a in ("-ojson", "-ojsonl", "--output=json", "--output=jsonl"):
            return True
        if a in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] in ("json", "jsonl"):
            return True
    return False


# typer 0.28 vendors its own click (`typer._click`) and raises typer's Exit/Abort and the
# vendored UsageError; older typers raise click's. Importing click beside the vendored copy
# would cost ~12 ms a run, so click is imported only for an older typer.
try:
    from typer._click.exceptions import UsageError as _UsageError
    _EXIT: tuple[type[BaseException], ...] = (typer.Exit,)
    _ABORT: tuple[type[BaseException], ...] = (typer.Abort,)
except ImportError:  # an older typer, on click itself
    import click

    _UsageError = click.UsageError
    _EXIT = (typer.Exit, click.exceptions.Exit)
    _ABORT = (typer.Abort, click.Abort)


def _app_for(argv: list[str]) -> typer.Typer:
    """The app to run for these arguments: the whole app, or one holding only the command
    the arguments name. Typer turns every registered command into a click command on each
    run (~30 ms for all ten, a fifth of a glob's wall time), and a run needs only the one it
    names first; the flag table stays the one set of signatures below. `ov`, `ov --help`
    and an unknown name get the whole app: its command list and its "no such command"."""
    if not argv or argv[0].startswith("-"):
        return app
    infos = [c for c in app.registered_commands if c.name == argv[0]]
    if not infos:
        return app
    one = typer.Typer(**_APP_SETTINGS)
    one.registered_commands = infos
    # A callback keeps it a group (`ov NAME ...`); a lone command would take NAME as its
    # first argument.
    one.callback()(_group)
    return one


def _group() -> None:
    """Search a directory tree: exact (grep), paths (glob), keywords, semantic and hybrid."""


def main(argv: list[str] | None = None) -> None:
    """The command line in process (tests and scripts call this): grep, glob, find and
    search through `ov.cli.fast.fast`, everything else (and their help and usage errors)
    through the Typer app; ends with `sys.exit(status)`. The `ov` command itself is
    `ov/__main__.py`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    code = fast(argv)
    if code is None:
        code = typer_main(argv)
    sys.exit(settle(code))


def _usage_field(e: BaseException, argv: list[str]) -> str | None:
    """The argument a usage error is about (`-n abc`: limit; `-g` with no value: globs), as
    every other error names it; None for one about no argument (an unknown option, a
    missing command)."""
    name = getattr(getattr(e, "param", None), "name", None) or _known_option(e, argv)
    return name.rstrip("_") if isinstance(name, str) and name else None  # (`json_`)


def _known_option(e: BaseException, argv: list[str]) -> str | None:
    """The parameter a known option's misuse is about (`-g` given no value), from the
    command's flag table; None for an unknown option."""
    if type(e).__name__ != "BadOptionUsage":  # (NoSuchOption: an option the command lacks)
        return None
    opt = getattr(e, "option_name", None) or ""
    from ov.cli.flags import COMMANDS  # noqa: PLC0415

    known = COMMANDS.get(argv[0] if argv else "", {}).get("opts", {}).get(opt)
    if known:
        return known[0]
    return opt.lstrip("-").replace("-", "_") if opt.startswith("--") else None


def _unknown_option(e: BaseException) -> str | None:
    """An unknown option's message, suggesting only close spellings: click's own cutoff
    offered `--tags` for `--bogus`, and `--help` beside `--threshold` for `--thresold`."""
    if type(e).__name__ != "NoSuchOption":
        return None
    import difflib  # noqa: PLC0415

    name = getattr(e, "option_name", "") or ""
    near = difflib.get_close_matches(name, sorted(getattr(e, "possibilities", None) or ()), n=3, cutoff=0.75)
    return f"No such option: {name}" + (f" (did you mean {' or '.join(near)}?)" if near else "")


# rg's options that `ov grep` does not offer, and what to do instead (README: "grep and
# glob for ripgrep and fd users"): the generic hint left a user of -P or -r guessing
RG_ONLY = {
    "-P": "ov grep's regex takes look-around and back-references without -P",
    "--pcre2": "ov grep's regex takes look-around and back-references without --pcre2",
    # (grep's -r and -E mean recursive and extended, rg's replace and encoding)
    "-r": "ov grep searches folders as they are given, as grep -r does; it does not rewrite "
          "matches as rg -r does (pipe its output to sed)",
    "--replace": "ov grep does not rewrite matches; pipe its output to sed",
    "-E": "ov grep's regex is extended already, as grep -E reads one; it reads UTF-8, and UTF-16 "
          "by its byte order mark, and takes no encoding as rg -E does",
    "--encoding": "ov grep reads UTF-8, and UTF-16 by its byte order mark; it takes no encoding",
    "-z": "ov grep does not search inside compressed files",
    "--search-zip": "ov grep does not search inside compressed files",
    "-u": "--no-ignore searches ignored files, --hidden hidden ones (rg's -uu)",
}


def _dash_hint(e: BaseException, argv: list[str]) -> str:
    """For an unknown option, how to pass a query or pattern that starts with `-`, or for
    an rg option `ov grep` lacks, what to do instead (RG_ONLY)."""
    name = getattr(e, "option_name", None)
    if not name or not argv or argv[0] not in ("search", "find", "grep", "glob") or _known_option(e, argv):
        return ""  # (a known option missing its value is not a query that starts with '-')
    if argv[0] == "grep" and name in RG_ONLY:
        return f" ({RG_ONLY[name]}; a pattern that starts with '-' goes after '--': ov grep -- {name})"
    return (f" (`ov {argv[0]} --help` lists its options; a query or pattern that starts with "
            f"'-' goes after '--': ov {argv[0]} -- {name})")


_EXTRA = re.compile(r"Got unexpected extra argument(?:\(s\)|s)? \((.*)\)", re.S)
GLOB_FLAGS = ("-g", "--glob", "--exclude-uri")  # (--exclude-uri takes a glob too)
PATH_FLAGS = ("-u", "--uri")


def _glob_of(names: list[str]) -> str:
    """A glob that gives `names` back, for the hint: their common folder's `*`, else their
    common extension's, else a placeholder."""
    folders = {n.rsplit("/", 1)[0] if "/" in n.rstrip("/") else "" for n in names}
    if len(folders) == 1 and "" not in folders:
        return f"{folders.pop()}/*"
    exts = {os.path.splitext(n)[1] for n in names}
    if len(exts) == 1 and "" not in exts:
        return f"*{exts.pop()}"
    return "PATTERN"


def _extra_args(msg: str, argv: list[str]) -> str | None:
    """Extra arguments, named (the first few) with what most likely put them there: a glob
    the shell expanded before ov saw it (`-g *.py` in a folder holding .py files: click
    listed all 140 of the kernel's drivers/), or a query of several words without quotes."""
    m = _EXTRA.fullmatch(msg.strip())
    if not m or not argv:
        return None
    extra = m.group(1).split()
    shown = " ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
    out = f"unexpected extra argument(s): {shown}"
    for i, a in enumerate(argv[:-2]):
        if argv[i + 2] != extra[0]:
            continue
        if a in GLOB_FLAGS:
            return (out + f" (the shell expanded the glob after {a} into file names before ov saw "
                    f"it: quote it, as {a} '{_glob_of([argv[i + 1], *extra])}')")
        if a in PATH_FLAGS:
            return out + f" ({a} takes one file or folder; repeat it for more: {a} PATH {a} PATH)"
    if argv[0] == "glob":  # `ov glob *.py` in a folder holding .py files
        return (out + f" (the shell expanded the pattern into file names before ov saw it: quote "
                f"it, as ov glob '{_glob_of(extra)}')")
    if argv[0] in ("search", "find"):
        return (out + f" (ov {argv[0]} takes one query: quote a query of several words, "
                f"as ov {argv[0]} \"how are files split\"; -u PATH scopes it to a folder)")
    return out


def typer_main(argv: list[str]) -> int:
    """Run the Typer app on `argv`: usage errors become `invalid_argument`, a closed pipe
    is quiet. Returns the exit status."""
    try:
        # With standalone_mode=False, typer's click returns a command's exit code.
        rv = _app_for(argv)(args=argv, prog_name="ov", standalone_mode=False)
        return rv if isinstance(rv, int) else EXIT_OK
    except _EXIT as e:
        return e.exit_code
    except _UsageError as e:
        if not argv:
            # bare `ov`: the help, as written, on stderr; still a usage error (exit 2, as
            # click and ripgrep answer a command line that names nothing to do)
            sys.stderr.write(e.format_message().rstrip("\n") + "\n")
            return EXIT_ERROR
        msg = (_unknown_option(e) or _extra_args(e.format_message(), argv)
               or e.format_message().replace("\n", " ").strip())
        msg += _dash_hint(e, argv)
        report(Out("json" if _wants_json(argv) else "text"), OvError("invalid_argument", msg,
                                                                     field=_usage_field(e, argv)))
        return EXIT_ERROR
    except _ABORT:
        sys.stderr.write("ov: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
