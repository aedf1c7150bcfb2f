"""The command line, a thin layer over `ov.api` that decides nothing the library should.

- `run`: one command run — errors become exit statuses (the one place), a closed pipe is
  a quiet 0, progress on stderr, the quick exit;
- `commands`: the command bodies both front ends call (grep, glob, find/search);
- `flags`: the fast path's flag table, generated from the Typer app by
  scripts/gen_docs.py (tests/test_docs.py holds it current);
- `fast`: grep, glob, find and search parsed without Typer (start-up bound);
- `app`: the Typer app — every command's flags, help and the rest of the commands.

Nothing is imported here: the fast path must not pay for Typer.
"""
