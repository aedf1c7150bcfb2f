"""The `ov` command (console script and `python -m ov`).

grep, glob, find and search start on the fast path (`ov.cli.fast`), without importing
typer or building the Typer app; everything else, and whatever that path declines (help,
a usage error, context mode), goes through the Typer app (`ov.cli.app`). The process
then ends with `ov.cli.run.exit_now` (no interpreter teardown).
"""

import sys


def entry() -> None:
    """The command; a Ctrl-C while it starts (its imports take ~0.3 s) ends as any other
    interrupt does, with `ov: interrupted` and status 130, not a traceback of the import."""
    try:
        _entry()
    except KeyboardInterrupt:
        try:
            sys.stderr.write("ov: interrupted\n")
            sys.stderr.flush()
        finally:
            __import__("os")._exit(130)


def _entry() -> None:
    from ov.cli import run
    from ov.cli.fast import fast

    argv = sys.argv[1:]
    if sys.stdout is None and argv and argv[0] not in ("-h", "--help"):
        # started with its standard output closed (`ov ... >&-`): no answer could be read,
        # so none is worked out (an exit of 0 or 1 would read as one)
        if sys.stderr is not None:
            sys.stderr.write("ov: error[invalid_argument]: standard output is closed; nothing "
                             "could be written\n")
        run.exit_now(2)
    try:  # a name's bytes that are not UTF-8 go out as they are, as rg prints them (a
        # UTF-8 locale's strict stdout refused them, and the whole answer with them)
        sys.stdout.reconfigure(errors="surrogateescape")
    except (AttributeError, ValueError):
        pass
    try:
        code = fast(argv)
        if code is None:
            from ov.cli.app import typer_main

            code = typer_main(argv)
        code = run.settle(code)
    except SystemExit as e:  # sys.exit() somewhere below: its status, still a quick exit
        code = e.code
    run.exit_now(code)


if __name__ == "__main__":
    # `python -m ov` puts the current folder first on sys.path, where a searched tree's
    # `json.py` or `subprocess.py` would be imported in place of the standard library's
    # (and run). The package is loaded by now and finds its own modules through
    # `ov.__path__`, so the folder goes, as `python -P` (3.11) would leave it out.
    try:
        here = __import__("os").getcwd()
    except OSError:  # run from a folder deleted since: the command says so itself
        here = None
    if not sys.flags.safe_path and sys.path and sys.path[0] in ("", here):
        del sys.path[0]
    entry()
