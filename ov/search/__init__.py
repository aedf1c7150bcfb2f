"""Searching the files themselves, with or without an index: `ov grep` and `ov glob`.

- `matcher`: a pattern and the lines of a text it matches (regex with a time limit,
  literals for the prefilter, binary cut-offs as ripgrep makes them);
- `scope`: what a run searches (roots from PATH arguments, exclusions, walk options) and
  what it reports besides its records (`GrepStats`);
- `prefilter`: what an index tells grep (files that cannot hold the literals; tags);
- `helper`: grep's forked second process and its protocol;
- `files`: grep's driver (`iter_grep`, `iter_files`, `grep`);
- `glob`: `ov glob`.

Nothing is imported here: `ov glob` must not pay for grep's matcher, nor grep for glob's.
"""
