"""The walker on real trees: each ignore rule, hidden files, symlinks, size cap, order."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from ov.config import WalkOptions
from ov.errors import OvError
from ov.walk import is_ignored, walk
from tests.conftest import make_tree


def paths(root: Path, opts: WalkOptions = WalkOptions(), **kw) -> list[str]:
    return [e.path for e in walk(root, opts, **kw)]


# ---- ignore rules ----------------------------------------------------------------------

def test_gitignore_pattern_without_slash_matches_at_any_depth(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "*.log\n", "a.log": "", "sub/b.log": "",
                                "c.txt": "", "sub/d.txt": ""})
    assert paths(root) == ["c.txt", "sub/d.txt"]


@pytest.mark.parametrize("name", [".gitignore", ".ignore", ".rgignore", ".ovignore"])
def test_a_byte_order_mark_is_not_the_first_patterns(tmp_path, name):
    """A Windows editor's UTF-8 BOM before an ignore file's first line had made that line
    `\ufeffsecret.txt`, which matched nothing; git skips the mark (so does rg since 14)."""
    root = make_tree(tmp_path, {name: b"\xef\xbb\xbfsecret.txt\r\n*.log\r\n", "secret.txt": "",
                                "sub/secret.txt": "", "a.log": "", "kept.txt": ""})
    assert paths(root) == ["kept.txt"]


def test_a_byte_order_mark_through_grep_glob_and_index(ov, tree):
    root = tree({".gitignore": b"\xef\xbb\xbfsecret.txt\n", ".ovignore": b"\xef\xbb\xbfsecret2.txt\n",
                 "secret.txt": "needle\n", "secret2.txt": "needle\n", "kept.txt": "needle\n"})
    assert ov("grep", "-l", "needle", cwd=root).out == "kept.txt\n"
    assert ov("glob", "*.txt", "--simple", cwd=root).out == "kept.txt\n"
    assert ov("index", ".", "--no-embed", cwd=root).code == 0
    r = ov("search", "needle", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["kept.txt"], r.out


def test_nested_gitignore_rules_are_relative_to_their_folder(tmp_path):
    root = make_tree(tmp_path, {"sub/.gitignore": "/x.txt\ndeep/y.txt\n", "x.txt": "",
                                "sub/x.txt": "", "sub/deep/x.txt": "", "sub/deep/y.txt": "",
                                "deep/y.txt": ""})
    assert paths(root) == ["deep/y.txt", "sub/deep/x.txt", "x.txt"]


def test_deeper_gitignore_overrides_shallower(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "*.log\n", "sub/.gitignore": "!keep.log\n",
                                "keep.log": "", "sub/keep.log": "", "sub/other.log": ""})
    assert paths(root) == ["sub/keep.log"]


def test_negation_last_matching_line_wins(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "*.txt\n!a.txt\n!b.txt\nb.txt\n",
                                "a.txt": "", "b.txt": "", "c.txt": "", "d.md": ""})
    assert paths(root) == ["a.txt", "d.md"]


def test_anchored_pattern_matches_only_in_its_folder(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "/build\n", "build/out.o": "",
                                "src/build/keep.c": "", "src/main.c": ""})
    assert paths(root) == ["src/build/keep.c", "src/main.c"]


def test_directory_only_pattern_spares_files_of_that_name(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "out/\n", "out/a.txt": "", "sub/out": "file",
                                "sub/out2/b.txt": ""})
    assert paths(root) == ["sub/out", "sub/out2/b.txt"]


def test_double_star_patterns(tmp_path):
    root = make_tree(tmp_path, {
        ".gitignore": "a/**/z.txt\n**/gen\nlogs/**\n",
        "a/z.txt": "", "a/b/z.txt": "", "a/b/c/z.txt": "", "x/a/z.txt": "",
        "gen/g.py": "", "p/q/gen/g.py": "", "p/q/keep.py": "",
        "logs/1.txt": "", "logs/old/2.txt": "",
    })
    assert paths(root) == ["p/q/keep.py", "x/a/z.txt"]


def test_contents_matched_by_double_star_can_be_reincluded(tmp_path):
    # `logs/**` excludes what is inside logs, not logs itself, so a `!` line works (git).
    root = make_tree(tmp_path, {".gitignore": "logs/**\n!logs/keep.txt\n",
                                "logs/keep.txt": "", "logs/drop.txt": ""})
    assert paths(root) == ["logs/keep.txt"]


def test_file_in_excluded_folder_cannot_be_reincluded(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "build/\n!build/keep.txt\n",
                                "build/keep.txt": "", "build/drop.txt": "", "src.txt": ""})
    assert paths(root) == ["src.txt"]
    # whereas excluding the folder's contents (not the folder) leaves the `!` its effect
    make_tree(root, {".gitignore": "build/*\n!build/keep.txt\n"})
    assert paths(root) == ["build/keep.txt", "src.txt"]


def test_ignore_file_outranks_gitignore_at_any_depth(tmp_path):
    root = make_tree(tmp_path, {".ignore": "!README.md\n!keep.md\n", ".gitignore": "*.md\n",
                                "sub/.gitignore": "*.md\n", "README.md": "", "other.md": "",
                                "sub/keep.md": "", "sub/drop.md": ""})
    assert paths(root) == ["README.md", "sub/keep.md"]


def test_ovignore_excludes_and_outranks_ignore(tmp_path):
    root = make_tree(tmp_path, {".ovignore": "secret/\n!notes.txt\n", ".ignore": "notes.txt\n",
                                "secret/key.txt": "", "notes.txt": "", "main.py": ""})
    assert paths(root) == ["main.py", "notes.txt"]


def test_git_info_exclude_applies_at_the_root(tmp_path):
    root = make_tree(tmp_path, {".git/info/exclude": "*.tmp\n/local/\n", "a.tmp": "",
                                "sub/b.tmp": "", "local/x.txt": "", "sub/local/y.txt": "",
                                "c.txt": ""})
    assert paths(root) == ["c.txt", "sub/local/y.txt"]


# ---- git's global excludes file (core.excludesFile) ---------------------------------------
GLOBAL_TREE = {"a.secret": "", "b.txt": "", "sub/c.secret": "", "sub/d.swp": "",
               "inner/e.secret": "", "inner/f.txt": ""}


@pytest.fixture
def git_home(tmp_path, monkeypatch):
    """A home whose git config is the test's: HOME, no XDG_CONFIG_HOME, no GIT_CONFIG_GLOBAL."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    return home


def test_the_global_excludes_file_applies_in_a_git_work_tree_as_git(git_home, tmp_path):
    """`~/.config/git/ignore` (git's default core.excludesFile) ranks below every ignore file
    of the tree, and counts only in a git work tree, as in git and rg."""
    (git_home / ".config" / "git" / "ignore").write_text("*.secret\n*.swp\n")
    root = make_tree(tmp_path / "t", {**GLOBAL_TREE, ".ignore": "!a.secret\n"})
    assert paths(root) == sorted(GLOBAL_TREE)
    (root / ".git").mkdir()
    assert paths(root) == ["a.secret", "b.txt", "inner/f.txt"]  # the tree's `!a.secret` wins
    assert is_ignored(root, "sub/c.secret") and not is_ignored(root, "a.secret")
    assert paths(root, WalkOptions(no_ignore=True)) == sorted(GLOBAL_TREE)
    # a subfolder of the work tree, walked as a root of its own, reads it too
    assert paths(root / "sub") == []


def test_the_global_excludes_file_in_a_repository_inside_a_plain_tree(git_home, tmp_path):
    (git_home / ".config" / "git" / "ignore").write_text("*.secret\n")
    root = make_tree(tmp_path / "t", GLOBAL_TREE)
    (root / "inner" / ".git").mkdir()
    assert paths(root) == ["a.secret", "b.txt", "inner/f.txt", "sub/c.secret", "sub/d.swp"]


def test_core_excludesfile_names_the_global_excludes_file(git_home, tmp_path, monkeypatch):
    """Set in ~/.gitconfig (quoted, `~/`, a comment after it), it replaces the default; the
    XDG config is read when ~/.gitconfig says nothing; GIT_CONFIG_GLOBAL replaces both."""
    (git_home / ".config" / "git" / "ignore").write_text("*.secret\n")
    (git_home / "my ignore").write_text("*.txt\n")
    root = make_tree(tmp_path / "t", {**GLOBAL_TREE, ".git/HEAD": ""})
    (git_home / ".gitconfig").write_text('[user]\n\tname = x\n[core]\n\texcludesFile = "~/my ignore" ; mine\n')
    assert paths(root) == ["a.secret", "inner/e.secret", "sub/c.secret", "sub/d.swp"]
    (git_home / ".gitconfig").write_text('[core "x"]\n\texcludesfile = ~/my ignore\n')
    (git_home / ".config" / "git" / "config").write_text("[Core]\nExcludesFile=~/my ignore\n")
    assert paths(root) == ["a.secret", "inner/e.secret", "sub/c.secret", "sub/d.swp"]
    other = tmp_path / "other.gitconfig"
    other.write_text("[core]\n\texcludesfile = " + str(git_home / ".config" / "git" / "ignore") + "\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(other))
    assert paths(root) == ["b.txt", "inner/f.txt", "sub/d.swp"]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing"))
    other.write_text("")  # no setting: the default under XDG_CONFIG_HOME, here none
    assert paths(root) == sorted(GLOBAL_TREE)
    # an [include] section's file is read where it stands, a relative path beside its includer
    (tmp_path / "local.gitconfig").write_text("[core]\n  excludesFile = ~/my ignore\n")
    other.write_text("[core]\nexcludesFile = /nowhere\n[include]\n\tpath = local.gitconfig\n")
    assert paths(root) == ["a.secret", "inner/e.secret", "sub/c.secret", "sub/d.swp"]
    other.write_text("[include]\n\tpath = local.gitconfig\n[core]\nexcludesFile = /nowhere\n")
    assert paths(root) == sorted(GLOBAL_TREE)
    # `excludesFile = /dev/null`, a common way to have none: no rules and nothing to warn of
    other.write_text("[core]\nexcludesFile = /dev/null\n")
    warned: list[str] = []
    assert paths(root, on_warning=warned.append) == sorted(GLOBAL_TREE) and warned == []


def test_a_changed_global_excludes_file_reaches_the_listing_and_the_index(git_home, tmp_path, ov):
    """The listing kept beside an index watches the global excludes file and the git
    config naming it: a line added there leaves the file out of the next glob and index."""
    ignore = git_home / ".config" / "git" / "ignore"
    root = make_tree(tmp_path / "t", {**GLOBAL_TREE, ".git/HEAD": ""})
    assert ov("index", "--no-embed", cwd=root).code == 0
    assert "a.secret" in ov("glob", "**/*.secret", cwd=root).out
    ignore.write_text("*.secret\n")
    assert ov("glob", "**/*.secret", cwd=root).code == 1
    r = ov("index", "--no-embed", "--json", cwd=root)
    assert r.json["result"]["removed"] == 3
    (git_home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/none\n")
    assert ov("glob", "**/*.secret", cwd=root).out == "a.secret\ninner/e.secret\nsub/c.secret\n"


def test_a_listing_is_kept_per_global_excludes_file(git_home, tmp_path, ov, monkeypatch):
    """Two processes with another HOME or GIT_CONFIG_GLOBAL (an editor's `ov mcp` beside a
    shell) read one listing made under the other's rules (a review)."""
    (git_home / "a.gitconfig").write_text("[core]\nexcludesFile = ~/a.ignore\n")
    (git_home / "a.ignore").write_text("*.log\n")
    (git_home / "b.gitconfig").write_text("")
    root = make_tree(tmp_path / "t", {"a.txt": "", "b.log": "", ".git/HEAD": ""})
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(git_home / "b.gitconfig"))
    assert ov("index", "--no-embed", cwd=root).code == 0
    time.sleep(2.1)  # past the moment a listing reads its folders again (walk.RACY_NS)
    assert ov("glob", "*", cwd=root).out == "a.txt\nb.log\n"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(git_home / "a.gitconfig"))
    assert ov("glob", "*", cwd=root).out == "a.txt\n"
    assert ov("grep", "--files", cwd=root).out == "a.txt\n"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(git_home / "b.gitconfig"))
    assert ov("glob", "*", cwd=root).out == "a.txt\nb.log\n"


def test_info_exclude_of_a_worktree_a_submodule_and_a_separate_git_dir(tmp_path):
    """Where `.git` is a file (`gitdir: ...`), `info/exclude` is in the git folder it names
    (a worktree's: its repository's common folder), as git reads it: in a worktree ov
    listed and indexed what `.git/info/exclude` of its repository hid."""
    main = make_tree(tmp_path / "main", {".git/info/exclude": "secret*\n", "m.py": "",
                                         ".git/worktrees/wt/commondir": "../..\n",
                                         ".git/modules/sub/info/exclude": "local*\n",
                                         "sub/.git": "gitdir: ../.git/modules/sub\n",
                                         "sub/lib.py": "", "sub/local.txt": "", "sub/secret.txt": ""})
    wt = make_tree(tmp_path / "wt", {".git": f"gitdir: {main}/.git/worktrees/wt\n", "w.py": "",
                                     "secret.txt": "", "sub/secret.txt": ""})
    assert paths(wt) == ["w.py"]
    assert paths(main) == ["m.py", "sub/lib.py", "sub/secret.txt"]  # the submodule's own rules
    assert paths(main / "sub") == ["lib.py", "secret.txt"]
    assert is_ignored(wt, "sub/secret.txt") and not is_ignored(wt, "w.py")
    # a repository inside the tree whose `.git` file leads out of it: its rules are not read
    make_tree(tmp_path / "out", {"info/exclude": "*.py\n"})
    inner = make_tree(tmp_path / "t", {"a.py": "", "in/.git": f"gitdir: {tmp_path}/out\n", "in/b.py": ""})
    warned: list[str] = []
    assert paths(inner, on_warning=warned.append) == ["a.py", "in/b.py"] and warned == []
    # ... but its own, at the walk's root, is (a worktree of a repository elsewhere)
    assert paths(inner / "in") == []


def test_a_worktrees_exclude_file_reaches_the_listing(tmp_path, ov):
    main = make_tree(tmp_path / "main", {".git/info/exclude": "", ".git/worktrees/wt/commondir": "../..\n"})
    wt = make_tree(tmp_path / "wt", {".git": f"gitdir: {main}/.git/worktrees/wt\n", "w.py": "x\n",
                                     "secret.txt": "x\n"})
    assert ov("index", "--no-embed", cwd=wt).code == 0
    assert ov("glob", "*", cwd=wt).out == "secret.txt\nw.py\n"
    time.sleep(0.01)
    (main / ".git" / "info" / "exclude").write_text("secret*\n")
    assert ov("glob", "*", cwd=wt).out == "w.py\n"


def test_no_ignore_disregards_every_ignore_file_but_keeps_extra_rules(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "a.txt\n", ".ignore": "b.txt\n",
                                ".ovignore": "c.txt\n", ".git/info/exclude": "d.txt\n",
                                "a.txt": "", "b.txt": "", "c.txt": "", "d.txt": "", "e.txt": "",
                                ".hidden": ""})
    assert paths(root, WalkOptions(no_ignore=True)) == ["a.txt", "b.txt", "c.txt", "d.txt",
                                                       "e.txt"]
    opts = WalkOptions(no_ignore=True, extra_ignores=("e.txt",))
    assert paths(root, opts) == ["a.txt", "b.txt", "c.txt", "d.txt"]


def test_extra_ignores_are_rooted_at_the_walk_root_and_outrank_ignore_files(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "!vendor/\n", "vendor/lib.js": "",
                                "sub/vendor/x.js": "", "app.js": ""})
    assert paths(root, WalkOptions(extra_ignores=("/vendor/",))) == ["app.js", "sub/vendor/x.js"]


def test_is_ignored_agrees_with_the_walk(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "build/\n*.log\n!keep.log\n", "build/a.txt": "",
                                "x.log": "", "keep.log": "", "src/m.py": "", ".env": "",
                                "src/.gitignore": "gen/\n", "src/gen/g.py": ""})
    walked = set(paths(root))
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert walked == {"keep.log", "src/m.py"}
    for rel in on_disk:
        assert is_ignored(root, rel, WalkOptions()) == (rel not in walked), rel
    assert is_ignored(root, "build", WalkOptions())
    assert is_ignored(root, "src/gen", WalkOptions())
    assert not is_ignored(root, "src", WalkOptions())
    assert not is_ignored(root, ".env", WalkOptions(hidden=True))
    assert not is_ignored(root, "x.log", WalkOptions(no_ignore=True))


# ---- hidden and always-skipped ---------------------------------------------------------

def test_hidden_files_and_folders_skipped_unless_asked(tmp_path):
    root = make_tree(tmp_path, {".env": "", ".cfg/a.toml": "", "sub/.x": "", "a.txt": ""})
    assert paths(root) == ["a.txt"]
    assert paths(root, WalkOptions(hidden=True)) == [".cfg/a.toml", ".env", "a.txt", "sub/.x"]


def test_hidden_folder_reincluded_by_name_in_an_ignore_file(tmp_path):
    root = make_tree(tmp_path, {".ignore": "!.github/\n", ".github/ci.yml": "", ".env": "",
                                "a.txt": ""})
    assert paths(root) == [".github/ci.yml", "a.txt"]


def test_git_and_ov_folders_always_skipped(tmp_path):
    root = make_tree(tmp_path, {".git/config": "", ".ov/index.db": "", "sub/.git/HEAD": "",
                                "sub/.ov/x": "", "a.txt": "", ".gitignore": "!.git/\n"})
    opts = WalkOptions(hidden=True)
    assert paths(root, opts) == [".gitignore", "a.txt"]
    assert paths(root, WalkOptions(hidden=True, no_ignore=True)) == [".gitignore", "a.txt"]


# ---- size cap --------------------------------------------------------------------------

def test_size_cap_skips_larger_files_and_reports_them(tmp_path):
    root = make_tree(tmp_path, {"small.txt": b"x" * 100, "exact.txt": b"x" * 1000,
                                "big.txt": b"x" * 1001})
    skipped: list[tuple[str, str]] = []
    got = paths(root, WalkOptions(max_filesize=1000), on_skip=lambda p, r: skipped.append((p, r)))
    assert got == ["exact.txt", "small.txt"]
    assert skipped == [("big.txt", "size")]
    assert paths(root, WalkOptions(max_filesize=None)) == ["big.txt", "exact.txt", "small.txt"]


def test_file_entries_carry_real_stat_values(tmp_path):
    root = make_tree(tmp_path, {"sub/a.txt": b"hello"})
    os.utime(root / "sub/a.txt", ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    (e,) = walk(root)
    assert (e.path, e.size, e.mtime_ns, e.is_symlink) == ("sub/a.txt", 5, 1_600_000_000_123_456_789,
                                                          False)
    assert e.abspath == str(root / "sub" / "a.txt")


# ---- symlinks --------------------------------------------------------------------------

@pytest.fixture
def linked(tmp_path):
    root = make_tree(tmp_path / "root", {"data/f.txt": "x", "z.txt": "z"})
    os.symlink("data/f.txt", root / "flink.txt")
    os.symlink("data", root / "dlink")
    return root


def test_symlinks_not_followed_by_default(linked):
    assert paths(linked) == ["data/f.txt", "z.txt"]


def test_symlinks_listed_as_links_when_asked(linked):
    got = [(e.path, e.is_symlink) for e in walk(linked, yield_symlinks=True)]
    assert got == [("data/f.txt", False), ("dlink", True), ("flink.txt", True), ("z.txt", False)]


def test_symlinks_followed_with_follow(linked):
    got = [(e.path, e.is_symlink, e.size) for e in walk(linked, WalkOptions(follow=True))]
    assert got == [("data/f.txt", False, 1), ("dlink/f.txt", False, 1),
                   ("flink.txt", True, 1), ("z.txt", False, 1)]


def test_symlink_loop_with_follow_terminates_without_duplicates(tmp_path):
    root = make_tree(tmp_path / "root", {"a/f.txt": "", "b/g.txt": "", "top.txt": ""})
    os.symlink("..", root / "a" / "up")  # back to the root
    os.symlink("../b", root / "a" / "tob")
    os.symlink("../a", root / "b" / "toa")  # a -> b -> a
    warnings: list[str] = []
    got = paths(root, WalkOptions(follow=True), on_warning=warnings.append)
    assert got == ["a/f.txt", "a/tob/g.txt", "b/g.txt", "b/toa/f.txt", "top.txt"]
    assert len(got) == len(set(got))
    assert sorted(w.split(":")[0] for w in warnings) == ["a/tob/toa", "a/up", "b/toa/tob",
                                                            "b/toa/up"]


def test_symlinks_leading_outside_the_root_are_never_followed(tmp_path):
    outside = make_tree(tmp_path / "outside", {"secret.txt": "s", "d/x.txt": "x"})
    root = make_tree(tmp_path / "root", {"in.txt": ""})
    os.symlink(outside / "secret.txt", root / "abs_file")
    os.symlink("../outside/d", root / "rel_dir")
    os.symlink("../root/in.txt", root / "inside_via_parent")  # leaves and comes back: fine
    skipped: list[tuple[str, str]] = []
    got = paths(root, WalkOptions(follow=True), on_skip=lambda p, r: skipped.append((p, r)))
    assert got == ["in.txt", "inside_via_parent"]
    assert skipped == [("abs_file", "outside_root"), ("rel_dir", "outside_root")]
    # a start path that is itself a link out of the root yields nothing
    assert paths(root, WalkOptions(follow=True), start=root / "rel_dir") == []


def test_broken_symlink_with_follow_is_a_warning(tmp_path):
    root = make_tree(tmp_path, {"a.txt": ""})
    os.symlink("missing", root / "broken")
    warnings: list[str] = []
    assert paths(root, WalkOptions(follow=True), on_warning=warnings.append) == ["a.txt"]
    assert warnings == ["broken: broken symbolic link"]


# ---- errors ----------------------------------------------------------------------------

def test_unreadable_folder_is_a_warning_and_the_walk_goes_on(tmp_path, monkeypatch):
    root = make_tree(tmp_path, {"a.txt": "", "locked/secret.txt": "", "z/after.txt": ""})
    if os.geteuid() != 0:
        os.chmod(root / "locked", 0)
    else:
        # root reads everything: refuse at the walker's one scandir seam, as the kernel
        # would for another user
        import ov.walk

        real_scan = ov.walk._scan

        def scan(path: str):
            if os.path.basename(path) == "locked":
                raise PermissionError(13, "Permission denied", path)
            return real_scan(path)

        monkeypatch.setattr(ov.walk, "_scan", scan)
    warnings: list[str] = []
    try:
        got = paths(root, on_warning=warnings.append)
    finally:
        os.chmod(root / "locked", 0o755)
    assert got == ["a.txt", "z/after.txt"]
    assert warnings == ["locked: Permission denied"]


def test_start_outside_the_root_is_invalid_path(tmp_path):
    root = make_tree(tmp_path / "root", {"a.txt": ""})
    make_tree(tmp_path / "other", {"b.txt": ""})
    with pytest.raises(OvError) as ei:
        list(walk(root, start=tmp_path / "other"))
    assert ei.value.code == "invalid_path"


# ---- start, depth, order ---------------------------------------------------------------

def test_start_in_a_subfolder_keeps_the_rules_above_it(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "*.log\n", "a/.gitignore": "skip/\n",
                                "a/b/x.log": "", "a/b/x.txt": "", "a/b/skip/y.txt": "",
                                "a/b/c/z.txt": "", "other.txt": ""})
    assert paths(root, start=root / "a" / "b") == ["a/b/c/z.txt", "a/b/x.txt"]


def test_start_file_named_explicitly_is_yielded_even_if_ignored(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "*.log\n", "sub/x.log": "abc"})
    (e,) = walk(root, start=root / "sub" / "x.log")
    assert (e.path, e.size) == ("sub/x.log", 3)


def test_start_folder_named_explicitly_is_walked_even_if_ignored(tmp_path):
    # as ripgrep searches `rg x build/`; the rules still judge what is inside it
    root = make_tree(tmp_path, {".gitignore": "build/\n*.log\n", "build/a.txt": "",
                                "build/b.log": "", "src.txt": ""})
    assert paths(root) == ["src.txt"]
    assert paths(root, start=root / "build") == ["build/a.txt"]


def test_max_depth(tmp_path):
    root = make_tree(tmp_path, {"a.txt": "", "d1/b.txt": "", "d1/d2/c.txt": ""})
    assert paths(root, WalkOptions(max_depth=1)) == ["a.txt"]
    assert paths(root, WalkOptions(max_depth=2)) == ["a.txt", "d1/b.txt"]
    assert paths(root, WalkOptions(max_depth=None)) == ["a.txt", "d1/b.txt", "d1/d2/c.txt"]
    # depth counts from the start folder
    assert paths(root, WalkOptions(max_depth=1), start=root / "d1") == ["d1/b.txt"]


def test_sorted_order_is_by_path_components(tmp_path):
    names = ["a-b", "a/b", "a.b", "B", "é", "a/a-b/c", "a/a/c", "Z"]
    root = make_tree(tmp_path, {n: "" for n in names})
    got = paths(root)
    # a plain string sort would put "a-b" and "a.b" before "a/b" ('/' is 0x2f)
    assert got == ["B", "Z", "a/a/c", "a/a-b/c", "a/b", "a-b", "a.b", "é"]
    assert got == sorted(names, key=lambda p: p.split("/"))


def test_walking_the_standard_library_is_fast(tmp_path):
    stdlib = Path(os.__file__).parent
    opts = WalkOptions(extra_ignores=("/site-packages/",))
    t = time.perf_counter()
    n = sum(1 for _ in walk(stdlib, opts))
    elapsed = time.perf_counter() - t
    assert n > 1000
    # measured about 0.05 s for ~7,700 files here; a generous bound for a busy CI box
    assert elapsed < 1.5, f"{n} files in {elapsed:.2f}s ({sys.version})"


# ---- agreement with git itself ---------------------------------------------------------

_NAMES = ["a", "b", "build", "x.log", "keep.log", "foo", "doc", ".h"]
_PATTERNS = ["build/", "/build", "*.log", "!keep.log", "foo", "foo/", "!foo", "a/**/b", "**/b",
             "doc/*", "!doc/a", "/a", "a/", "!a/b", "*", "!*.log", "foo/**", "!foo/a", "b",
             "!build/", "**/foo/", "x.log/", "/doc/", "a/b", "!b", ".h", "!.h", "[ab]", "?",
             "!/a/b", "**", "*/b", "a/*"]


def test_same_files_as_git_on_random_trees(tmp_path):
    """Differential check against `git ls-files -o --exclude-standard` (nested .gitignore
    files and info/exclude; hidden files included, as git has no such notion)."""
    import random
    import subprocess

    def grow(rng: random.Random, d: Path, depth: int) -> None:
        for n in rng.sample(_NAMES, rng.randint(1, 4)):
            p = d / n
            if depth < 3 and rng.random() < 0.5:
                p.mkdir(exist_ok=True)
                grow(rng, p, depth + 1)
            elif not p.exists():
                p.write_text("x")

    for seed in range(60):
        rng = random.Random(seed)
        root = tmp_path / f"t{seed}"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        grow(rng, root, 0)
        for d, _, _ in os.walk(root):
            if "/.git" not in d + "/" and rng.random() < 0.5:
                lines = rng.sample(_PATTERNS, rng.randint(1, 4))
                Path(d, ".gitignore").write_text("\n".join(lines) + "\n")
        if rng.random() < 0.3:
            (root / ".git/info").mkdir(exist_ok=True)
            (root / ".git/info/exclude").write_text(rng.choice(_PATTERNS) + "\n")
        out = subprocess.run(["git", "ls-files", "-o", "--exclude-standard", "-z"], cwd=root,
                             capture_output=True, check=True).stdout.decode()
        want = sorted((p for p in out.split("\0") if p), key=lambda p: p.split("/"))
        assert paths(root, WalkOptions(hidden=True)) == want, seed


def test_anchored_literal_lines_match_as_pathspec_reads_them():
    """Lines naming one path ("/a/b", as --exclude-uri writes them) skip pathspec; the
    rule must decide exactly as pathspec's regex does."""
    import re

    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    from ov.walk import _compile_line

    lines = ["/site-packages", "/a\\ b/c", "/x\\*y", "/Lib/test", "/a.b", "/ä\\#x", "/a\\!b",
             "/a\\\\b", "/a\\[1\\]",
             # a '/' inside anchors a line too, and one at the end asks for a folder
             "Lib/test", "Lib/test/", "/Lib/", "/site-packages/", "a\\ b/c/", "src/gen/x.c"]
    tested = ["site-packages", "site-packages/", "a b/c", "a b/c/", "x*y", "xzy", "Lib/test/",
              "Lib/test", "Lib/test/x", "Lib", "Lib/", "a.b", "axb", "ä#x", "a!b", "a\\b", "a[1]", "a1",
              "x/site-packages", "site-packages/x", "src/gen/x.c", "src/gen/x.c/", "y/src/gen/x.c"]
    for line in lines:
        search, ignores, slash = _compile_line(line)
        assert getattr(search, "exact", None) is not None, line
        pat = GitIgnoreSpecPattern(line)
        assert (ignores, slash) == (pat.include, "ps_d" in pat.regex.groupindex)
        rx = re.compile(f"(?:{pat.regex.pattern})\\Z")
        assert [t for t in tested if search(t)] == [t for t in tested if rx.search(t)], line
    for line in ["/a b", "build/", "/*.py", "/a/../b", "/a/./b", "!/a", "/a//b", "!a/b", "a/*/b/"]:
        r = _compile_line(line)
        assert r is None or not getattr(r[0], "__qualname__", "").startswith("_exact"), line


def test_files_need_no_stat_when_the_caller_only_reads_them(tmp_path):
    make_tree(tmp_path, {"a.txt": "x", "d/b.txt": "yy"})
    lazy = list(walk(tmp_path, WalkOptions(max_filesize=None), stat_files=False))
    assert [(e.path, e.size, e.mtime_ns) for e in lazy] == [("a.txt", -1, -1), ("d/b.txt", -1, -1)]
    full = list(walk(tmp_path, WalkOptions(max_filesize=None)))
    assert [(e.path, e.size) for e in full] == [("a.txt", 1), ("d/b.txt", 2)]
    # a size cap needs the size: the files are stat'ed whatever was asked
    capped = list(walk(tmp_path, WalkOptions(max_filesize=1), stat_files=False))
    assert [(e.path, e.size) for e in capped] == [("a.txt", 1)]


def test_exact_path_rules_apply_only_in_their_folder(tmp_path):
    make_tree(tmp_path, {"a": "", "x/a": "", "d/e/f.txt": "", "d/e2": "", "x/d/e/g.txt": "",
                         "d/e.txt": ""})
    opts = WalkOptions(max_filesize=None, extra_ignores=("/a", "/d/e"))
    assert [e.path for e in walk(tmp_path, opts)] == ["d/e.txt", "d/e2", "x/a", "x/d/e/g.txt"]
    # the same from a start folder below the root: rules stay rooted at the root
    assert [e.path for e in walk(tmp_path, opts, start=tmp_path / "d")] == ["d/e.txt", "d/e2"]
    assert is_ignored(tmp_path, "d/e/f.txt", opts) and not is_ignored(tmp_path, "x/d/e/g.txt", opts)


def test_walk_paths_names_the_files_walk_yields(tmp_path):
    make_tree(tmp_path, {"a.txt": "x", "d/b.txt": "y", ".h": "", "d/.gitignore": "c.txt\n",
                         "d/c.txt": "", "e/f/g.txt": ""})
    os.symlink("a.txt", tmp_path / "link.txt")
    from ov.walk import walk_paths

    for opts in (WalkOptions(max_filesize=None), WalkOptions(max_filesize=None, hidden=True),
                 WalkOptions(max_filesize=None, follow=True, max_depth=2)):
        for start in (None, tmp_path / "d", tmp_path / "a.txt"):
            want = [(e.path, e.abspath) for e in walk(tmp_path, opts, start=start)]
            assert list(walk_paths(tmp_path, opts, start=start)) == want


# ---- the combined matcher and the listing cache (issue 18) ------------------------------
RULE_LINES = ["*.o", "*.mod.c", "*~", "\\#*#", ".*", "!.gitignore", "/build", "out/", "Makefile.bak",
              "a/**/z", "logs/**", "!logs/keep", "*.tab.[ch]", "sphinx_*/", "**/gen", "doc/*.html",
              "x\\ y", "/all.config", "*.c.[012]*.*", "foo/bar/", "!important.o", "*", "!*.c",
              "[Bb]uild/", "*.py[cod]", "dir/", "!dir/"]
NAMES = ["x.o", "x.mod.c", "y~", "#t#", ".hid", ".gitignore", "build", "out", "Makefile.bak",
         "z", "keep", "p.tab.c", "sphinx_x", "gen", "i.html", "x y", "all.config", "q.c.1x.y",
         "bar", "important.o", "m.c", "Build", "a.pyc", "dir", "plain.txt"]


@pytest.mark.parametrize("start", range(0, len(RULE_LINES), 3))
def test_combined_matcher_decides_as_rule_by_rule(start):
    from ov.walk import _checks, _compile, _decide

    rules = _compile("\n".join(RULE_LINES[start:start + 9]))
    levels = ((3, 0, "", rules),)
    for rel in ("", "a/b", "logs", "doc", "foo"):
        checks = _checks(levels, rel)
        slow = tuple((p, [m if not isinstance(m, tuple) else rules]) for p, m in checks)
        for name in NAMES:
            for is_dir in (False, True):
                assert _decide(checks, name, is_dir) == _decide(slow, name, is_dir), (rel, name)


def _listing(root, **kw):
    from ov.walk import cached_walk

    cache = root / ".ov"
    cache.mkdir(exist_ok=True)
    got = cached_walk(root, WalkOptions(max_filesize=None, **kw), cache)
    return None if got is None else [p for p, _, link in got if not link]


def _walked(root, **kw):
    return paths(root, WalkOptions(max_filesize=None, **kw))


def test_listing_cache_answers_as_the_walk_after_each_change(tmp_path):
    root = make_tree(tmp_path, {".gitignore": "*.log\n", "a.txt": "", "b.log": "",
                                "sub/c.txt": "", "sub/.gitignore": "gen/\n", "sub/gen/x.txt": "",
                                "sub/deep/d.txt": "", ".hidden/e.txt": ""})
    old = time.time() - 60  # folders older than the racy window: their listing is trusted
    for d in ("", "sub", "sub/gen", "sub/deep", ".hidden"):
        os.utime(root / d, (old, old))
    assert _listing(root) == _walked(root) == ["a.txt", "sub/c.txt", "sub/deep/d.txt"]
    assert list((root / ".ov").glob("walk-*.cache"))
    (root / "sub" / "deep" / "new.txt").write_text("")  # the folder's mtime moves
    assert _listing(root) == _walked(root)
    assert "sub/deep/new.txt" in _listing(root)
    (root / "sub" / "c.txt").unlink()
    assert _listing(root) == _walked(root)
    (root / "sub" / ".gitignore").write_text("deep/\n")  # an ignore file's text changes
    os.utime(root / "sub", (old, old))
    assert _listing(root) == _walked(root) == ["a.txt", "sub/gen/x.txt"]
    (root / "sub" / "newdir" / "x").mkdir(parents=True)
    (root / "sub" / "newdir" / "x" / "f.txt").write_text("")
    assert _listing(root) == _walked(root)
    assert _listing(root, hidden=True) == _walked(root, hidden=True)  # its own listing


def test_listing_cache_answers_under_g_overrides_unless_they_keep_a_left_out_name(tmp_path):
    """grep's `-g` include globs keep what the ignore files and the hidden rule leave out
    (rg's overrides). The listing records the names each folder left out: an override
    that keeps none of them is answered from the listing (the globs then filter it as
    they filter a walk); one that keeps one of them is walked afresh."""
    from ov.globs import PathFilter

    root = make_tree(tmp_path, {".gitignore": "*.log\nbuild/\n", "a.c": "", "b.log": "", "x.txt": "",
                                "sub/c.c": "", "sub/.gitignore": "gen.c\n", "sub/gen.c": "",
                                "build/o.c": "", ".hidden/e.c": "", ".cfg": ""})
    old = time.time() - 60
    for d in ("", "sub", "build", ".hidden"):
        os.utime(root / d, (old, old))

    def both(*globs):
        pf = PathFilter(globs)
        over = pf.overrides if pf.has_include else None
        return (_listing(root, override=over), [p for p in _walked(root, override=over) if pf(p)])

    listed, walked = both("*.txt")  # no left-out name ends in .txt: the listing answers
    assert listed is not None and [p for p in listed if PathFilter(["*.txt"])(p)] == walked == ["x.txt"]
    assert both("*.c") == (None, ["a.c", "sub/c.c", "sub/gen.c"])  # gen.c is ignored: walked
    assert both("*.log")[0] is None and both("*.log")[1] == ["b.log"]
    assert both(".hidden") == (None, [".hidden/e.c"])  # a hidden folder named by a glob is entered
    assert both("build") == (None, ["build/o.c"])  # and an ignored one
    (root / "sub" / "more.log").write_text("")  # a new left-out name is recorded too
    assert both("sub/*.log")[0] is None and both("sub/*.log")[1] == ["sub/more.log"]


def test_listing_cache_is_not_fooled_by_a_change_in_the_same_tick(tmp_path):
    root = make_tree(tmp_path, {"a.txt": ""})
    assert _listing(root) == ["a.txt"]
    # a fresh folder's mtime is within the racy window: never trusted, always rescanned
    (root / "b.txt").write_text("")
    st = os.stat(root)
    os.utime(root, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _listing(root) == ["a.txt", "b.txt"]


def test_listing_cache_declines_what_it_cannot_answer(tmp_path):
    from ov.walk import cached_walk

    root = make_tree(tmp_path, {"a.txt": "", ".gitignore": "skip/\n", "skip/x.txt": ""})
    (root / ".ov").mkdir()
    assert cached_walk(root, WalkOptions(follow=True, max_filesize=None), root / ".ov") is None
    assert cached_walk(root, WalkOptions(), root / ".ov") is None  # a size cap needs stat
    # a folder the walk leaves out, named explicitly: the caller walks it
    assert cached_walk(root, WalkOptions(max_filesize=None), root / ".ov", start=root / "skip") is None


def test_an_anchored_rule_of_one_name_is_asked_in_its_own_folder_only(tmp_path):
    """`/*.spec` (no '/' can match its star) decides in the folder of its .gitignore, and
    is not asked below it (the kernel's root has such a line: one regex call a file)."""
    from ov import walk as w

    root = make_tree(tmp_path, {".gitignore": "/*.spec\n/[ab]*.txt/\n*.o\n",
                                "x.spec": "", "a1.txt/f": "", "sub/x.spec": "", "sub/a1.txt/f": "",
                                "sub/deep/y.spec": "", "k.o": "", "sub/k.o": ""})
    assert paths(root) == ["sub/a1.txt/f", "sub/deep/y.spec", "sub/x.spec"]
    levels = w._add_folder(w._root_levels(str(root), w.WalkOptions(), lambda m: None), str(root), "", 0,
                           None, lambda m: None)
    top, sub = w._checks(levels, ""), w._checks(levels, "sub")
    assert top[0][1][0][6] is not None and top[0][1][1][6] is not None  # path rules asked
    assert sub[0][1][0][6] is None and sub[0][1][1][6] is None  # not below
    assert w._literal_head(r"(?:^[^/]*/x(?:/))\Z") == ""  # a rule that can cross a '/'


def test_listing_cache_sees_changes_whose_mtime_was_put_back(tmp_path, monkeypatch):
    """`rsync -a`, `cp -a` and `touch -r` put a folder's (or an ignore file's) mtime back:
    the listing, which read the mtime alone, kept a new file out of grep and glob, listed
    a deleted one and kept old ignore rules, even after `ov index --full`. A folder put
    back as a link to outside the tree was listed through, and grep printed a file from
    outside. The ctime, which no such restore can put back, is read too (as git does),
    and a link in a folder's place makes the listing stale."""
    import ov.walk as walk

    monkeypatch.setattr(walk, "RACY_NS", 0)  # trust folders at once (the window is 2 s)
    outside = make_tree(tmp_path / "outside", {"secret.txt": ""})
    root = make_tree(tmp_path / "t", {".gitignore": "*.log\n", "docs/a.md": "", "docs/b.md": "",
                                      "app.log": "", "top.md": ""})

    def restored(path: Path, change) -> None:
        st = os.stat(path, follow_symlinks=False)
        time.sleep(0.02)  # past the clock's tick: the ctime moves
        change()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)

    assert _listing(root) == _walked(root) == ["docs/a.md", "docs/b.md", "top.md"]
    restored(root / "docs", lambda: (root / "docs" / "draft.md").write_text(""))
    assert "docs/draft.md" in _listing(root) and _listing(root) == _walked(root)
    restored(root / "docs", lambda: (root / "docs" / "b.md").unlink())
    assert "docs/b.md" not in _listing(root) and _listing(root) == _walked(root)
    restored(root / ".gitignore", lambda: (root / ".gitignore").write_text("*.md\n"))  # same size
    assert _listing(root) == _walked(root) == ["app.log"]
    (root / ".gitignore").write_text("*.log\n")
    assert _listing(root) == _walked(root)

    def swap():
        shutil.rmtree(root / "docs")
        (root / "docs").symlink_to(outside)

    restored(root, swap)
    assert _listing(root) == _walked(root) == ["top.md"]


def test_listing_cache_sees_a_work_tree_made_above_the_root(tmp_path, monkeypatch):
    """A `.git` made above the root (git init ..) brings that tree's ignore files in: the
    listing, which kept no word of the folders above, went on listing what they ignore."""
    import ov.walk as walk

    monkeypatch.setattr(walk, "RACY_NS", 0)
    make_tree(tmp_path / "t", {".gitignore": "a.txt\n", "sub/a.txt": "", "sub/b.txt": ""})
    (tmp_path / "t" / ".git").rmdir()  # not yet a work tree
    root = tmp_path / "t" / "sub"
    assert _listing(root) == _walked(root) == ["a.txt", "b.txt"]
    (tmp_path / "t" / ".git").mkdir(exist_ok=True)
    assert _listing(root) == _walked(root) == ["b.txt"]
    (tmp_path / "t" / ".git").rmdir()
    assert _listing(root) == _walked(root) == ["a.txt", "b.txt"]


def test_ignore_lines_with_many_stars_match_as_before_in_linear_time():
    """`_defuse` rewrites a run of three `*` or more in one part of a path (atomic, lazy),
    which a committed `.gitignore` used to hang every walk with (`*a*a*...*b` and a name of
    40 `a`s): the same answers as pathspec's regex on generated lines and names, and a
    name of thousands of letters in well under a second."""
    import random
    import re

    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    from ov.walk import _compile_line, _defuse

    rnd = random.Random(3)
    checked = 0
    for _ in range(6000):
        line = "".join(rnd.choice(["*", "*", "*", "a", "b", "?", "[ab]", "ab", "/", "\\*"])
                       for _ in range(rnd.randint(4, 8)))
        src = GitIgnoreSpecPattern.pattern_to_regex(line)[0]
        if src is None or _defuse(src) == src:
            continue
        before, after = re.compile(src), re.compile(_defuse(src))
        for _ in range(100):
            name = "".join(rnd.choice("ab/*c") for _ in range(rnd.randint(0, 10)))
            m, n = before.search(name), after.search(name)
            assert (m is None) == (n is None) and (m is None or m.groupdict() == n.groupdict()), (line, name)
            checked += 1
    assert checked > 20_000
    rule = _compile_line("*a*a*a*a*a*a*a*a*a*a*a*a*b")
    assert rule is not None and rule[0]("a" * 5000) is None and rule[0]("a" * 20 + "b")
    assert _compile_line("*[!a]*[!a]*[!a]*[!a]*b") is None  # not made linear: skipped, as git skips a bad line


def test_an_unreadable_folder_is_said_once_and_keeps_the_listing(tmp_path, monkeypatch):
    """A folder the user cannot read: the listing's refresh tried it, said so, found it
    unlistable and rebuilt the whole listing, which said so again, on every run after the
    first (two identical greps gave different JSON `warnings`). Now it is left out as the
    walk leaves it, said once, and the listing is kept."""
    from ov import walk as walk_mod
    from ov.walk import cached_walk

    root = make_tree(tmp_path / "t", {"ok.txt": "x\n", "closed/s.txt": "x\n", "sub/b.txt": "x\n"})
    cache = root / ".ov"
    cache.mkdir()
    real_scan = walk_mod._scan

    def scan(path):
        if os.path.basename(path) == "closed":
            raise PermissionError(13, "Permission denied", path)
        return real_scan(path)

    monkeypatch.setattr(walk_mod, "_scan", scan)
    built = []
    real_build = walk_mod._build_listing
    monkeypatch.setattr(walk_mod, "_build_listing", lambda *a: built.append(1) or real_build(*a))
    walked = sorted(e.path for e in walk(root, WalkOptions(max_filesize=None)))
    for run in range(3):
        said: list[str] = []
        got = cached_walk(root, WalkOptions(max_filesize=None), cache, on_warning=said.append)
        assert sorted(r for r, _, _ in got) == walked == ["ok.txt", "sub/b.txt"]
        assert said == ["closed: Permission denied"], (run, said)
    assert len(built) == 1  # built once, then refreshed


def _not_git(root: Path) -> Path:
    """`root` as make_tree wrote it, with no `.git`: a tarball's or a copied folder's tree."""
    (root / ".git").rmdir()
    return root


def test_gitignore_counts_only_inside_a_git_work_tree(tmp_path):
    """As rg and fd do (`--no-require-git` off): Debian's linux-source ends its `.gitignore`
    with its packagers' `/*`, which left ov nothing of the tree, while rg searched it whole.
    `.ignore`, `.rgignore` and `.ovignore` count everywhere."""
    files = {".gitignore": "/*\n!/debian/\n", ".ignore": "*.tmp\n", "kernel/fork.c": "",
             "kernel/x.tmp": "", "README": ""}
    root = _not_git(make_tree(tmp_path / "tarball", files))
    assert paths(root) == ["README", "kernel/fork.c"]
    assert not is_ignored(root, "kernel/fork.c") and is_ignored(root, "kernel/x.tmp")
    repo = make_tree(tmp_path / "repo", files)  # the same files in a git work tree
    assert paths(repo) == []
    assert is_ignored(repo, "kernel/fork.c")


def test_a_repository_inside_a_tree_outside_git_has_its_gitignore(tmp_path):
    root = _not_git(make_tree(tmp_path, {".gitignore": "*.log\n", "a.log": "", "vendor/lib/.gitignore": "*.o\n",
                                          "vendor/lib/x.o": "", "vendor/lib/y.log": "", "vendor/z.o": ""}))
    (root / "vendor" / "lib" / ".git").mkdir(exist_ok=True)
    # the root's .gitignore is not read (no work tree there); vendor/lib's is, for vendor/lib
    assert paths(root) == ["a.log", "vendor/lib/y.log", "vendor/z.o"]


def test_listing_cache_sees_a_work_tree_made_at_the_root(tmp_path, monkeypatch):
    """`git init` in a tree makes its `.gitignore` count: the listing must not go on
    answering as before."""
    import ov.walk as walk

    monkeypatch.setattr(walk, "RACY_NS", 0)
    root = _not_git(make_tree(tmp_path / "t", {".gitignore": "a.txt\n", "a.txt": "", "b.txt": ""}))
    assert _listing(root) == _walked(root) == ["a.txt", "b.txt"]
    (root / ".git").mkdir(exist_ok=True)
    assert _listing(root) == _walked(root) == ["b.txt"]
    (root / ".git").rmdir()
    assert _listing(root) == _walked(root) == ["a.txt", "b.txt"]


def test_an_ignore_line_with_a_bracket_class_prints_no_python_warning(tmp_path):
    """`[[]br].txt` in `.ignore` (a class holding `[`) printed Python's FutureWarning
    "Possible nested set" and its source line on stderr; the rule itself is kept."""
    import subprocess  # noqa: PLC0415

    (tmp_path / "b.txt").write_text("needle\n")
    (tmp_path / "[br].txt").write_text("needle\n")
    (tmp_path / ".ignore").write_text("[[]br].txt\n")
    r = subprocess.run([sys.executable, "-m", "ov", "grep", "needle"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60, env={**os.environ, "PYTHONWARNINGS": "default"})
    assert (r.returncode, r.stdout, r.stderr) == (0, "b.txt:1:needle\n", "")


@pytest.mark.parametrize("args", [["glob", "[+--]*"], ["grep", "--files", "-g", "[[]*"], ["grep", "x", "-g", "[+--]*"]])
def test_a_glob_class_of_brackets_or_dashes_prints_no_python_warning(tmp_path, args):
    """The same Python FutureWarning came from `-g` and `ov glob` patterns (a review)."""
    import subprocess  # noqa: PLC0415

    (tmp_path / "b.txt").write_text("x\n")
    r = subprocess.run([sys.executable, "-m", "ov", *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONWARNINGS": "default"})
    assert "Warning" not in r.stderr and r.returncode in (0, 1, 2), r.stderr


def test_a_worktree_the_outer_tree_ignores_is_a_tree_of_its_own(tmp_path, ov):
    """An index above a git work tree it leaves out does not answer there: a worktree in
    the outer tree's ignored `trees/` got the outer index's answers (another branch's
    copies, none of its own files). A repository the outer tree holds keeps its index."""
    outer = make_tree(tmp_path / "o", {".gitignore": "/trees/\n", "m.py": "alpha main\n",
                                       "trees/feat/.git": "gitdir: /nowhere\n",
                                       "trees/feat/new.py": "alpha new\n",
                                       "vendor/lib/.git/HEAD": "", "vendor/lib/v.py": "alpha vendored\n"})
    assert ov("index", "--no-embed", cwd=outer).code == 0
    r = ov("search", "alpha", "--search-type", "keywords", "--json", cwd=outer / "trees" / "feat")
    assert r.code == 0 and r.json["result"]["root"] == str(outer / "trees" / "feat"), r.out
    assert [h["path"] for h in r.json["result"]["hits"]] == ["new.py"]
    r = ov("search", "alpha", "--search-type", "keywords", "--json", cwd=outer / "vendor" / "lib")
    assert r.json["result"]["root"] == str(outer)
    assert "v.py" in {h["path"] for h in r.json["result"]["hits"]}


def test_an_index_that_holds_an_ignored_repository_answers_there(tmp_path, ov):
    """Built with --hidden, the outer index holds a hidden repository the rules alone leave
    out: a search there answers from it, as before (not a new index inside)."""
    outer = make_tree(tmp_path / "o", {".git/HEAD": "", "m.txt": "needle main\n",
                                       ".dots/.git/HEAD": "", ".dots/d.txt": "needle dots\n"})
    assert ov("index", "--hidden", "--no-embed", cwd=outer).code == 0
    r = ov("search", "needle", "--search-type", "keywords", "--json", cwd=outer / ".dots")
    assert r.code == 0 and r.json["result"]["root"] == str(outer), r.err
    assert not (outer / ".dots" / ".ov").exists()
