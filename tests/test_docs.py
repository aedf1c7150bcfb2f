"""Completions and man page: generated from the Typer app, committed, current, loadable.

The committed files must equal what scripts/gen_docs.py writes now, so a flag changed
without regenerating fails here. Every command, argument and option needs help text.
bash loads the completion script for real; zsh and fish scripts are structure-checked
always and loaded by their shells in tests that skip, saying why, where the shell is not
installed; `man` renders the page without a warning (skipped likewise without man-db).
`.ci/run` installs all three, so CI skips none.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, require_tool


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = mod  # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gen():
    return _gen()


@pytest.fixture(scope="module")
def tree(gen):
    return gen.command_tree()


@pytest.fixture(scope="module")
def outputs(gen):
    return gen.outputs()


def test_committed_files_are_current(outputs):
    stale = [rel for rel, text in outputs.items()
             if not (REPO / rel).is_file() or (REPO / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"{', '.join(stale)} out of date: run scripts/gen_docs.py and commit the result"


def test_check_mode_reports_stale_file(gen, tmp_path, monkeypatch):
    # --check must fail (and name the file) when one differs; point the script at a copy.
    for rel in gen.outputs():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(gen, "REPO", tmp_path)
    assert gen.main(["--check"]) == 0
    (tmp_path / "man" / "ov.1").write_text(".TH OLD 1\n", encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert (tmp_path / "man" / "ov.1").read_text() == ".TH OLD 1\n"  # --check never writes
    assert gen.main([]) == 0
    assert (tmp_path / "man" / "ov.1").read_text() == (REPO / "man" / "ov.1").read_text()


def test_every_command_and_option_has_help(tree):
    app_help, cmds = tree
    assert app_help.strip()
    names = [c.name for c in cmds]
    for expected in ("index", "status", "grep", "glob", "find", "search", "read", "tag",
                     "manifest", "doctor"):
        assert expected in names
    missing = []
    for c in cmds:
        if not c.help.strip():
            missing.append(c.name)
        for a in c.args:
            if not a.help.strip():
                missing.append(f"{c.name} {a.name}")
        for o in c.opts:
            if not o.help.strip():
                missing.append(f"{c.name} {'/'.join(o.names)}")
    assert not missing, f"no help text: {missing}"


def test_every_command_takes_output_and_color(tree):
    _, cmds = tree
    for c in cmds:
        flags = {n for o in c.opts for n in o.names}
        assert {"-o", "--output", "--json", "--color"} <= flags, c.name


def test_choice_values_come_from_the_app(tree):
    _, cmds = tree
    by = {c.name: {n: o for o in c.opts for n in o.names} for c in cmds}
    assert by["search"]["--search-type"].values == ["hybrid", "keywords", "lexical", "semantic"]
    assert by["grep"]["-o"].values == ["text", "json", "jsonl"]
    assert by["glob"]["--color"].values == ["auto", "always", "never"]
    assert by["tag"]["--mode"].values == ["set", "append", "remove"]
    assert by["search"]["--mode"].values == ["list", "context"]


def test_every_flag_appears_in_every_output(tree, outputs):
    _, cmds = tree
    for c in cmds:
        for o in c.opts:
            for n in o.names + o.negations:
                assert n in outputs["completions/ov.bash"], n
                assert re.search(rf"[)*']{re.escape(n)}\[", outputs["completions/_ov"]), n
                fish_flag = f"-s {n[1:]}" if len(n) == 2 else f"-l {n[2:]}"
                assert fish_flag in outputs["completions/ov.fish"], n
                assert n.replace("-", "\\-") in outputs["man/ov.1"], n


# ---- bash -----------------------------------------------------------------------------


def _bash_complete(words: list[str]) -> list[str]:
    """Run the completion function as bash would for `words` (the last is being typed)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    script = (f"source completions/ov.bash; COMP_WORDS=({quoted}); "
              f"COMP_CWORD={len(words) - 1}; _ov; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    p = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return [w for w in p.stdout.splitlines() if w]


def test_bash_completion_loads():
    p = subprocess.run(["bash", "-c", "source completions/ov.bash; complete -p ov"], cwd=REPO,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert p.stdout.strip() == "complete -o filenames -F _ov ov"


def test_bash_completes_commands_options_and_values():
    assert _bash_complete(["ov", ""])[:10] == ["index", "status", "grep", "glob", "find", "search",
                                               "read", "tag", "manifest", "doctor"]
    assert _bash_complete(["ov", "se"]) == ["search"]
    assert _bash_complete(["ov", "search", "--search-type", ""]) == ["hybrid", "keywords", "lexical",
                                                                     "semantic"]
    assert _bash_complete(["ov", "grep", "-o", "js"]) == ["json", "jsonl"]
    assert _bash_complete(["ov", "glob", "--color", "n"]) == ["never"]
    assert _bash_complete(["ov", "grep", "--fixed"]) == ["--fixed-strings"]
    assert _bash_complete(["ov", "search", "-n", ""]) == []  # a number: nothing to offer
    assert "scripts" in _bash_complete(["ov", "index", "scr"])


# ---- zsh and fish ---------------------------------------------------------------------


def test_zsh_completion(outputs):
    text = outputs["completions/_ov"]
    assert text.startswith("#compdef ov\n")
    _, cmds = _gen().command_tree()
    for c in cmds:
        assert re.search(rf"^_ov_{c.name}\(\) {{$", text, re.M), c.name
        assert f"        {c.name}) _ov_{c.name} ;;" in text
    assert ":FORMAT:(text json jsonl)" in text
    assert "--search-type[" in text and ":TYPE:(hybrid keywords lexical semantic)" in text
    # every single-quoted spec closes on its own line
    for line in text.splitlines():
        if line.startswith("    '"):
            assert line.rstrip(" \\").endswith("'"), line


def test_zsh_loads_completion(tmp_path):
    require_tool("zsh", "zsh")
    p = subprocess.run(["zsh", "-n", str(REPO / "completions" / "_ov")], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    # and it loads under compinit, registering the function for `ov`
    script = (f"fpath=({REPO / 'completions'} $fpath); autoload -Uz compinit; "
              f"compinit -u -d {tmp_path / 'zcompdump'}; print -r -- $_comps[ov]")
    p = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "HOME": str(tmp_path)})
    assert p.returncode == 0 and p.stdout.strip() == "_ov", (p.stdout, p.stderr)


def test_fish_completion(outputs):
    text = outputs["completions/ov.fish"]
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert all(line.startswith("complete -c ov ") for line in lines)
    assert "complete -c ov -n '__fish_seen_subcommand_from search' -l search-type -x -a " \
           "'hybrid keywords lexical semantic'" in text
    for line in lines:  # quotes balance on every line (\' is an escaped quote)
        assert line.replace("\\\\", "").replace("\\'", "").count("'") % 2 == 0, line


def test_fish_loads_completion(tmp_path):
    require_tool("fish", "fish")
    p = subprocess.run(["fish", "--no-execute", str(REPO / "completions" / "ov.fish")],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    p = subprocess.run(["fish", "--no-config", "-c",
                        f"source {REPO / 'completions' / 'ov.fish'}; complete -C 'ov search --search-type '"],
                       capture_output=True, text=True, timeout=30,
                       env={**os.environ, "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert sorted(line.split("\t")[0] for line in p.stdout.splitlines()) == [
        "hybrid", "keywords", "lexical", "semantic"]


# ---- man page -------------------------------------------------------------------------


def test_man_page_renders_without_warnings():
    require_tool("man", "man-db")
    for width in ("60", "80"):  # the content checks below read the 80-column page
        p = subprocess.run(["man", "--warnings", "-l", str(REPO / "man" / "ov.1")],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "MANWIDTH": width, "MANPAGER": "cat", "PAGER": "cat"})
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", p.stderr
    out = p.stdout
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ERRORS",
                    "ENVIRONMENT", "FILES", "EXAMPLES"):
        assert re.search(rf"^{section}$", out, re.M), section
    for code in ("invalid_argument", "invalid_pattern", "invalid_path", "not_found", "unsupported",
                 "query_too_long", "index_busy", "deadline_exceeded", "internal"):
        assert code in out
    for env in ("OV_DB", "OV_MODEL", "OV_TOKENIZER", "OV_EMBEDDER", "OV_DEBUG", "NO_COLOR",
                "OV_LOCK_WAIT"):
        assert env in out
    flat = " ".join(out.split())
    assert "--search-type TYPE" in flat and "Values: hybrid, keywords, lexical, semantic." in flat
    assert "ov doctor [OPTIONS]" in flat
