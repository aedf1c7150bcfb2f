"""The command bodies the fast path (`ov.cli.fast`) and the Typer app (`ov.cli.app`) both
call: `ov grep`, `ov glob`, `ov find` / `ov search` in list mode, and the index helpers
the Typer commands share.

Each takes the flags as its parameters (the names of `ov.cli.flags`, which both front
ends hand over as they are), calls the library (`ov.api`: it merges the flags with the
tree's config, validates and finds the index) and hands the result to `ov.render`, which
decides the output. `ov.cli.run.run_body` turns what they raise into an exit status.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from ov.cli.run import Progress, run_body
from ov.errors import EXIT_ERROR, EXIT_NONE, EXIT_OK, OvError
from ov.render import Out


def grep_command(*, pattern: str | None = None, paths: Sequence[str] | None = None, fixed: bool = False,
                 ignore_case: bool = False, word: bool = False, line_regexp: bool = False,
                 multiline: bool = False,
                 after: int | None = None, before: int | None = None, context: int | None = None,
                 globs: Sequence[str] | None = None, types: Sequence[str] | None = None,
                 types_not: Sequence[str] | None = None, exclude_uri: Sequence[str] | None = None,
                 hidden: bool | None = None,
                 no_ignore: bool = False, node_limit: int | None = None,
                 level_limit: int | None = None, tags: Sequence[str] | None = None, count: bool = False,
                 files_with_matches: bool = False, max_columns: int | None = None,
                 no_index: bool = False, line_number: bool = False,
                 regexps: Sequence[str] | None = None, invert: bool = False,
                 max_count: int | None = None, smart_case: bool = False,
                 case_sensitive: bool = False, with_filename: bool = False,
                 no_filename: bool = False, null: bool = False, heading: bool | None = None,
                 column: bool = False, vimgrep: bool = False, files: bool = False,
                 sort: str | None = None, type_list: bool = False, follow: bool = False,
                 quiet: bool = False, timeout: float | None = None,
                 color: str = "auto",
                 output: str = "text", json_: bool = False) -> int:
    """`ov grep`: the parameters are the flags' (see ov/cli/app.py's grep_cmd); returns the
    exit status."""
    if regexps or files or type_list:  # the first argument is then a PATH (as rg reads it)
        paths = ([pattern] if pattern is not None else []) + list(paths or [])
        pattern = None
    where = dict(globs=globs or (), types=types or (), types_not=types_not or (), exclude=exclude_uri or (),
                 hidden=hidden, no_ignore=no_ignore, max_depth=level_limit, follow=follow, use_index=not no_index)

    def body(out: Out) -> int:
        from ov import api, config  # noqa: PLC0415
        from ov import render  # noqa: PLC0415

        t0 = time.perf_counter()
        if sort is not None and sort != "path":
            raise OvError("invalid_argument", f"--sort {sort}: only `path` (the order results "
                          "always come in)", field="sort")
        if type_list:
            return _type_list(out, t0)
        # a missing PATH: said, the others searched, then exit 2, as rg (JSON: a warning,
        # status ok; -q with a match: 0), as for a part of the tree that could not be read
        partial = dict(missing_ok=True)
        if files:
            found, st = api.files(paths or (), node_limit=node_limit, tags=tags or (), **where, **partial)
            n = render.emit_files(out, found, st, t0, null)
            return EXIT_ERROR if st.missing or st.read_errors else EXIT_OK if n else EXIT_NONE
        pat, fx = _patterns(pattern, list(regexps or ()), fixed, multiline)
        icase = (ignore_case or (smart_case and not any(c.isupper() for c in pat))) and not case_sensitive
        how = dict(fixed=fx, ignore_case=icase, word=word, line=line_regexp, multiline=multiline, invert=invert,
                   tags=tags or (), **where)
        mode = _grep_mode(count, files_with_matches, max_columns)  # checked with -q too (rg)
        cols = max_columns or None  # 0: no limit, as rg reads it
        if context is not None and context < 0:
            raise OvError("invalid_argument", "-C/--context must be 0 or more lines", field="context")
        b = before if before is not None else (context or 0)
        a = after if after is not None else (context or 0)
        if quiet:
            return _quiet(out, pat, paths or (), dict(max_count=max_count, before=b, after=a, **how),
                          dict(node_limit=1, tags=tags or (), **where))
        records, st = api.grep(pat, paths or (), before=b, after=a, node_limit=node_limit, mode=mode,
                               max_count=max_count, binary_lines=out.fmt != "text", **how, **partial,
                               deadline_s=config.GREP_TIMEOUT_S if timeout is None else timeout)
        from ov.search.matcher import gc_paused  # noqa: PLC0415

        records = _unless_nothing_searched(records, st, paths or (), dict(node_limit=1, tags=tags or (), **where))
        # the records hold no cycles, and a run may build millions (see gc_paused); the
        # pause is held here, where they are read to the end, not across the generator's yields
        with gc_paused():
            n = render.emit_grep(out, records, st, mode, t0, context=bool(a or b),
                                 max_columns=cols, null=null,
                                 filename=with_filename or not no_filename, heading=heading,
                                 column=column, vimgrep=vimgrep)
        # (a PATH missing, or a part of the tree unread: an answer of "no match" would not
        # be true, so the results are printed and the run exits 2, as rg's)
        return EXIT_ERROR if st.missing or st.read_errors else EXIT_OK if n or st.binary_matches else EXIT_NONE

    return run_body((output, json_, color), body)


def _quiet(out: Out, pat: str, paths: Sequence[str], how: dict, where: dict) -> int:
    """`ov grep -q`: 0 on the first match, whatever was unread or missing (as rg's -q);
    else 2 when part of what was asked was not searched (said on stderr), else 1."""
    from ov import api  # noqa: PLC0415

    recs, st = api.grep(pat, paths, node_limit=1, mode="files", missing_ok=True, **how)
    found = next(_unless_nothing_searched(recs, st, paths, where), None) is not None
    for w in st.warnings:  # no result is printed, but what could not be searched is said (rg
        out.warn(w)        # says a missing PATH with a match too: a typo in a script's list)
    if found:
        return EXIT_OK
    return EXIT_ERROR if st.read_errors or st.missing else EXIT_NONE


def _type_list(out: Out, t0: float) -> int:
    """`ov grep --type-list` (JSON: {"types": {name: [globs]}}; JSON Lines: a record a type)."""
    from ov import render  # noqa: PLC0415
    from ov.kinds import TYPES  # noqa: PLC0415

    if out.fmt == "json":
        out.envelope({"types": {k: list(v) for k, v in sorted(TYPES.items())}}, render.elapsed_ms(t0))
    elif out.fmt == "jsonl":
        for k, v in sorted(TYPES.items()):
            out.line({"type": k, "globs": list(v)})
    else:
        out.stdout.write(render.types_text())
    return EXIT_OK


def _unless_nothing_searched(records, st, paths: Sequence[str], where: dict):
    """`records`, or the error ripgrep exits 2 with when no file at all was searched ("No
    files were searched"): the filters given (-t, -T, -g, --exclude-uri) left out every file
    under the PATHs (`ov grep -t rust` in a Python tree had exited 1 as a search that found
    nothing), or the tree's ignore files or hidden names did (a cloned tree's `.ignore` of
    `*` made `ov grep -q SECRET` exit 1: a CI check passed on nothing read), or there is
    no file. A grep the index answered without reading a file (nothing could match) is
    asked again for one file of its walk (`ov grep --files`).
    Not this error: a run whose walk said why it did not read what it was named (a link
    leading out of the tree, an unreadable folder, a FIFO: its warning says it), or one
    `--tags` narrowed (ov's own filter, which answers as search's does: nothing tagged so
    is no result)."""
    from itertools import chain  # noqa: PLC0415

    from ov import api  # noqa: PLC0415
    from ov.config import load_config  # noqa: PLC0415

    first = next(records, None)
    if first is not None:
        return chain([first], records)
    if st.searched or st.unreadable or st.binary_matches or st.truncated or st.level_cut \
            or st.warnings or where.get("tags"):
        return iter(())
    found, _ = api.files(paths, **where)
    if next(found, None) is not None:
        return iter(())
    if where.get("types") or where.get("types_not") or where.get("globs") or where.get("exclude"):
        why = "the filters (-t, -T, -g, --exclude-uri) left out every file"
    elif next(api.files(paths, **{**where, "hidden": True, "no_ignore": True})[0], None) is not None:
        why = ("ignore files (.gitignore, .ignore, .ovignore) or hidden names left out every file "
               "(--no-ignore and --hidden take them in)")
    elif st.root and load_config(Path(st.root)).get("ignore"):  # the searched tree's, not the current folder's
        why = "the config's `ignore` setting left out every file (`ov status` says where it is set)"
    else:
        raise OvError("not_found", "no files were searched: there is none here (a link is followed "
                      "with -L)")
    raise OvError("not_found", f"no files were searched: {why}; `ov grep --files` with the same "
                  "flags lists the files searched")


def _patterns(pattern: str | None, regexps: list[str], fixed: bool, multiline: bool = False) -> tuple[str, bool]:
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
    from ov.search.matcher import compile_pattern  # noqa: PLC0415

    for p in pats:  # a bad one is named, at its own position (not the alternation's)
        try:
            compile_pattern(p, multiline=multiline)
        except OvError as e:
            raise OvError(e.code, f"-e {p!r}: {e.message}", field="pattern") from None
    return "|".join(f"(?:{p})" for p in pats), False


def _grep_mode(count: bool, files_with_matches: bool, max_columns: int | None) -> str:
    """"count" (-c), "files" (-l) or "matches"; the flags that exclude each other refused."""
    if count and files_with_matches:
        raise OvError("invalid_argument", "-c/--count and -l/--files-with-matches exclude each other",
                      field="count")
    if max_columns is not None and max_columns < 0:
        raise OvError("invalid_argument", "--max-columns must be 0 (no limit, as in rg) or more",
                      field="max_columns")
    return "count" if count else "files" if files_with_matches else "matches"


def glob_command(*, pattern: str, path: str | None = None, ignore_case: bool = False,
                 hidden: bool | None = None, no_ignore: bool = False, node_limit: int | None = None,
                 level_limit: int | None = None, fields: str | None = None, simple: bool = False,
                 print0: bool = False, exclude_uri: Sequence[str] | None = None,
                 tags: Sequence[str] | None = None, no_index: bool = False, color: str = "auto",
                 output: str = "text", json_: bool = False) -> int:
    """`ov glob`: the parameters are the flags' (see ov/cli/app.py's glob_cmd); returns the
    exit status."""

    def body(out: Out) -> int:
        from ov import api  # noqa: PLC0415
        from ov.render import emit_glob  # noqa: PLC0415
        from ov.search.glob import parse_fields  # noqa: PLC0415
        from ov.search.scope import GrepStats  # noqa: PLC0415

        t0 = time.perf_counter()
        flds = parse_fields(fields)
        st = GrepStats()
        res = api.glob(pattern, path, ignore_case=ignore_case, hidden=hidden, no_ignore=no_ignore,
                       max_depth=level_limit, node_limit=node_limit, stats=st,
                       fields=() if simple or (print0 and out.fmt == "text") else flds, exclude=exclude_uri or (),
                       tags=tags or (), use_index=not no_index)
        emit_glob(out, res, st, t0, flds, simple, print0)
        # a part of what was asked unread (a folder, a PATH that is a link out of the tree):
        # the paths are printed and the run exits 2, as `ov grep` and rg do
        return EXIT_ERROR if st.read_errors else EXIT_OK if res.matches else EXIT_NONE

    return run_body((output, json_, color), body)


def search_command(*, query: str, search_type: str | None = None, limit: int | None = None,
                   threshold: float | None = None, after: str | None = None,
                   before: str | None = None, time_field: str = "updated_at",
                   tags: Sequence[str] | None = None, type_: Sequence[str] | None = None,
                   level: str | None = None, cursor: str | None = None, explain: bool = False,
                   read_content: bool = False, uri: Sequence[str] | None = None,
                   exclude_uri: Sequence[str] | None = None, globs: Sequence[str] | None = None,
                   all_chunks: bool = False, no_auto_index: bool = False, output: str = "text",
                   json_: bool = False, db: Path | None = None, color: str = "auto") -> int:
    """`ov find` (search_type "semantic") and `ov search` in list mode: the parameters are
    the flags' (see ov/cli/app.py's find_cmd and search_cmd); returns the exit status."""

    def body(out: Out) -> int:
        from ov import api  # noqa: PLC0415
        from ov.render import emit_hits  # noqa: PLC0415

        t0 = time.perf_counter()
        filters = api.search_filters(query, search_type=search_type, limit=limit, time_field=time_field,
                                     after=after, before=before, tags=tags, level=level, types=type_,
                                     globs=globs, exclude_uri=exclude_uri, cwd=Path.cwd())
        scope = _scope_of(uri, db)
        with open_index(db, auto_index=not no_auto_index and scope is None, out=out, path=scope,
                        first_query=query) as ix:
            res = ix.search(query, search_type=search_type, limit=limit, threshold=threshold,
                            cursor=cursor, explain=explain, all_chunks=all_chunks,
                            read_content=read_content, uri=uri, exclude_uri=exclude_uri,
                            filters=filters, cwd=Path.cwd())
            shown_from_here(res, ix.root)
        emit_hits(out, res, query, t0, first_page=cursor is None)
        return EXIT_OK if res.hits else EXIT_NONE

    return run_body((output, json_, color), body)


def context_command(*, query: str, search_type: str | None = None, limit: int | None = None,
                    threshold: float | None = None, after: str | None = None,
                    before: str | None = None, time_field: str = "updated_at",
                    tags: Sequence[str] | None = None, type_: Sequence[str] | None = None,
                    level: str | None = None, uri: Sequence[str] | None = None,
                    exclude_uri: Sequence[str] | None = None, globs: Sequence[str] | None = None,
                    no_auto_index: bool = False, max_tokens: int | None = None, detail: str | None = None,
                    session_id: str | None = None, dedup_turns: int | None = None,
                    list_only: dict | None = None, output: str = "text", json_: bool = False,
                    db: Path | None = None, color: str = "auto") -> int:
    """`ov search --mode context`: the flags as search_command's, with context mode's own;
    `list_only`: list mode's flags as given (each one set is a warning)."""

    def body(out: Out) -> int:
        from ov import api  # noqa: PLC0415
        from ov.render import emit_context  # noqa: PLC0415

        t0 = time.perf_counter()
        det = api.context_options(detail, max_tokens)  # before the index is opened
        filters = api.search_filters(query, search_type=search_type, limit=limit, time_field=time_field,
                                     after=after, before=before, tags=tags, level=level, types=type_,
                                     globs=globs, exclude_uri=exclude_uri, cwd=Path.cwd())
        ignored = [name for name, v in (list_only or {}).items() if v]
        scope = _scope_of(uri, db)  # the index is found as list mode finds it
        with open_index(db, auto_index=not no_auto_index and scope is None, out=out, path=scope,
                        first_query=query) as ix:
            res = ix.context(query, max_tokens=max_tokens, detail=det, session_id=session_id,
                             dedup_turns=dedup_turns, ignored=ignored, search_type=search_type,
                             limit=limit, threshold=threshold, uri=uri, exclude_uri=exclude_uri,
                             filters=filters, cwd=Path.cwd())
        emit_context(out, res, t0, [f"{name} has no effect with --mode context" for name in ignored])
        return EXIT_OK if res.entries else EXIT_NONE

    return run_body((output, json_, color), body)


def shown_from_here(res, root: Path) -> None:
    """A ranked result as the command line prints it: each hit's path relative to the
    current folder, as grep and glob print theirs (`../x` for a file outside it); the
    result names the index root (`root`)."""
    import dataclasses  # noqa: PLC0415

    from ov.search.scope import displayer  # noqa: PLC0415

    show = displayer(root, Path.cwd())
    res.hits = [dataclasses.replace(h, path=show(h.path), duplicates=[dataclasses.replace(d, path=show(d.path))
                                                                      for d in h.duplicates] if h.duplicates else None)
                for h in res.hits]


def read_from_here(res, root: Path):
    """`ov read`'s result as the command line prints it: its path, and a folder's list of
    files, relative to the current folder (DESIGN: every printed path is)."""
    import dataclasses  # noqa: PLC0415

    from ov.search.scope import displayer  # noqa: PLC0415

    show = displayer(root, Path.cwd())
    text = res.text
    if res.kind == "folder" and res.level == 2:
        text = "".join(show(line) + "\n" for line in text.splitlines())
    # a folder is named from here as cd would reach it (`ov read .` in docs/ is ".", not ../docs)
    shown = (os.path.relpath(os.path.join(root, res.path), Path.cwd()).replace(os.sep, "/")
             if res.kind == "folder" else show(res.path))
    return dataclasses.replace(res, path=shown, text=text)


def tagged_from_here(res, root: Path):
    """`ov tag`'s result with each file's path relative to the current folder."""
    import dataclasses  # noqa: PLC0415

    from ov.search.scope import displayer  # noqa: PLC0415

    show = displayer(root, Path.cwd())
    return dataclasses.replace(res, files=[dataclasses.replace(f, path=show(f.path)) for f in res.files])


# ---- the index, for the Typer commands ----------------------------------------------------


def build_index(out: Out, root: Path, db: Path | None, *, embed: bool = True, full: bool = False,
                walk_opts=None, progress: bool | None = None, background: bool = False,
                vectors_later: bool = False):
    """`api.index` with a progress bar on stderr (a TTY, or --progress); off a terminal
    without either flag, one line when a long embedding starts (`Progress` hint)."""
    from ov import api  # noqa: PLC0415

    shown = out.stderr.isatty() if progress is None else progress
    bar = Progress(shown, color=out.stderr_color, stream=out.stderr, hint=progress is None)
    return api.index(root, db=db, embed=embed, full=full, walk=walk_opts, progress=bar, warn=out.warn,
                     notice=bar.notice, background=background, vectors_later=vectors_later)

def interrupted_note(path: Path, db: Path | None, *, embed: bool, full: bool) -> str:
    """What an `ov index` stopped by Ctrl-C or SIGTERM kept, for the line that says it was
    interrupted: the counts committed by then (a run of hours said only `interrupted`)."""
    import shlex  # noqa: PLC0415

    from ov import api  # noqa: PLC0415

    held = api.committed(path, db=db)
    again = "ov index" + ("" if str(path) == "." else f" {shlex.quote(str(path))}")
    again += "" if embed else " --no-embed"
    if held is None or not held.files:
        return f"the index holds no file yet (`{again}` starts again)"
    files = f"the first {held.files} files read" if held.partial else f"{held.files} files"
    what = f"{files} and {held.vectors} vectors of {held.rows}" if embed else files
    if full:  # the rebuild's own file is removed: the index is the one it would have replaced
        return f"the rebuild was dropped; the index keeps its {what} (`{again} --full` starts it again)"
    # a worker this run stopped runs no more: said, so that a Ctrl-C is not read as the end
    # of the vectors (a review of a docs tree); this run took away any `--stop` pause
    later = "; or the next search adds the rest in the background" if embed and held.vectors < held.rows else ""
    return f"the index keeps {what} (`{again}` continues from there{later})"


def stop_background(out: Out, path: Path, db: Path | None) -> int:
    """`ov index --stop`: stop the background worker of the index of `path`."""
    from ov.paths import db_path_for  # noqa: PLC0415
    from ov.render import emit  # noqa: PLC0415
    from ov.worker import stop  # noqa: PLC0415

    t0 = time.perf_counter()
    db_path = Path(db) if db else db_path_for(Path(path).resolve())
    from ov.indexer import pause_worker  # noqa: PLC0415

    from ov.config import passed_over  # noqa: PLC0415

    foreign = not db and passed_over(db_path)  # another user's `.ov/`: nothing of this user's written there
    if not foreign:  # a `.ov` or a sidecar that links out: refused, as every command refuses it (a
        from ov.store.db import check_index_files  # noqa: PLC0415 - cloned tree's `.ov` had led

        check_index_files(db_path)  # --stop's pause mark into a folder outside it)
    pid = None if foreign else stop(db_path)
    if db_path.parent.is_dir() and not foreign:
        pause_worker(db_path)  # searches start no other until `ov index` runs
    result = {"stopped": pid is not None, "pid": pid}
    emit(out, result, t0, lambda: out.notice(
        f"stopped the background worker (pid {pid}); searches start no other until `ov index` runs, "
        "which completes the index"
        if pid is not None else "no background worker runs for this index" + _other_writer(db_path)))
    return EXIT_OK


def _other_writer(db_path: Path) -> str:
    """What holds the index when no worker does (as `ov status` tells it: the index lock is
    held), and how to stop it; "" when nothing does. `--stop` stops only a worker: a
    foreground run is its user's, in a terminal."""
    from ov.indexer import lock_held, lock_holder  # noqa: PLC0415

    if not lock_held(db_path):
        return ""
    pid = lock_holder(db_path)
    return (f"; a foreground indexer{f' (pid {pid})' if pid else ''} is writing it (an `ov index`, "
            f"or a watcher: `ov index --watch`, `ov mcp`): Ctrl-C in its terminal"
            f"{f' or `kill {pid}`' if pid else ''} stops it")


def _scope_of(uri: Sequence[str] | None, db: Path | None) -> Path | None:
    """Where a ranked search finds its index (None: from the current folder). DESIGN: by
    walking up from the scope, as git finds `.git`: from the folder every `-u PATH` shares,
    when an index is found from there (`ov search X -u proj` from an unindexed parent used
    `proj`'s index no more: it indexed the whole current folder). Else from the current
    folder: its index decides (a `-u` outside its root is invalid_path), or, with none,
    a first use builds one there when the paths lie inside it. Paths outside an unindexed
    current folder are searched from their own folder with no index built (`ov search X
    -u ~/other/repo` from an unindexed home folder used to index the home folder)."""
    from ov.paths import locate  # noqa: PLC0415

    if not uri or db is not None:
        return None
    here = Path.cwd().resolve()
    paths = [Path(os.path.abspath(u)) for u in uri]
    common = Path(os.path.commonpath([str(p) for p in paths]))
    scope = common if common.is_dir() else common.parent
    found, from_here = locate(scope, None), locate(here, None)
    if found is not None and found != from_here:
        return scope
    if from_here is not None or all(p == here or here in p.parents for p in paths):
        return None
    return scope


def open_index(db: Path | None, *, auto_index: bool = False, out: Out | None = None,
               readonly: bool = False, path: Path | None = None, first_query: str = ""):
    """`api.Index.open` for the current folder (or `path`), with the CLI's notices and
    progress bar; `first_query`, the query a first build answers."""
    from ov import api  # noqa: PLC0415

    if out is None:
        return api.Index.open(path, db=db, auto_index=auto_index, readonly=readonly, first_query=first_query)
    return api.Index.open(path, db=db, auto_index=auto_index, readonly=readonly, first_query=first_query,
                          progress=Progress(out.stderr.isatty(), color=out.stderr_color, stream=out.stderr),
                          notice=out.notice, warn=out.warn)
