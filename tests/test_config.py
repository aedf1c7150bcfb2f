"""Config files: .ov/config.toml and [tool.ov] of pyproject.toml at the index root.

Key by key: a flag beats .ov/config.toml, which beats pyproject.toml, which beats the
built-in default; `ov status` says where each value came from; an unknown key or a
value of the wrong type is `invalid_argument` naming the file and the key.
"""

from __future__ import annotations

import json

from pathlib import Path

import pytest

from conftest import make_tree
from ov.config import DEFAULT_EMBED_SKIP, DEFAULT_MAX_FILESIZE, SETTINGS, load_config
from ov.errors import OvError

FILES = {
    "a.py": "def alpha():\n    return 'needle'\n",
    "b.py": "def beta():\n    return 'needle'\n",
    "c.md": "# Gamma\n\nneedle in a document\n",
    ".hidden.py": "needle = 'hidden'\n",
    "build/out.py": "needle = 'built'\n",
    "big.txt": "needle " * 400,  # 2800 bytes
}


def _ov_toml(root: Path, text: str) -> None:
    (root / ".ov").mkdir(exist_ok=True)
    (root / ".ov" / "config.toml").write_text(text)


# ---- load_config ----------------------------------------------------------------------


def test_defaults_without_files(tmp_path):
    cfg = load_config(tmp_path)
    assert cfg.values == {"ignore": (), "max-filesize": DEFAULT_MAX_FILESIZE, "hidden": False,
                          "search-type": "hybrid", "limit": 10, "node-limit": 256,
                          "embed-skip": DEFAULT_EMBED_SKIP, "embed-long-lines": True}
    assert set(cfg.sources.values()) == {"default"}
    assert set(cfg.values) == set(SETTINGS)


def test_ov_config_toml(tmp_path):
    _ov_toml(tmp_path, 'hidden = true\nignore = ["build/", "*.md"]\nlimit = 3\n')
    cfg = load_config(tmp_path)
    assert cfg.values["hidden"] is True
    assert cfg.values["ignore"] == ("build/", "*.md")
    assert cfg.values["limit"] == 3
    assert cfg.sources == {"ignore": ".ov/config.toml", "max-filesize": "default",
                           "hidden": ".ov/config.toml", "search-type": "default",
                           "limit": ".ov/config.toml", "node-limit": "default",
                           "embed-skip": "default", "embed-long-lines": "default"}


def test_pyproject_tool_ov_and_precedence(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.ov]\nlimit = 4\nsearch-type = "keywords"\nnode-limit = 9\n'
        '\n[tool.other]\nwhatever = 1\n')
    cfg = load_config(tmp_path)
    assert (cfg.values["limit"], cfg.sources["limit"]) == (4, "pyproject.toml [tool.ov]")
    assert cfg.values["search-type"] == "keywords"
    _ov_toml(tmp_path, "limit = 2\n")  # .ov/config.toml wins key by key
    cfg = load_config(tmp_path)
    assert (cfg.values["limit"], cfg.sources["limit"]) == (2, ".ov/config.toml")
    assert (cfg.values["node-limit"], cfg.sources["node-limit"]) == (9, "pyproject.toml [tool.ov]")
    assert cfg.get("limit", 7) == 7  # a flag beats both
    assert cfg.get("limit", None) == 2
    shown = cfg.settings({"limit": 7})
    assert shown["limit"] == {"value": 7, "source": "flag"}
    assert shown["node-limit"] == {"value": 9, "source": "pyproject.toml [tool.ov]"}


def test_pyproject_without_tool_ov_is_ignored(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nline-length = 99\n')
    assert set(load_config(tmp_path).sources.values()) == {"default"}


@pytest.mark.parametrize("text, key, words", [
    ("limt = 3\n", "limt", "did you mean 'limit'"),
    ("search_type = 'keywords'\n", "search_type", "did you mean 'search-type'"),
    ("colour = 'never'\n", "colour", "unknown key"),
    ("hidden = 'yes'\n", "hidden", "true or false"),
    ("limit = 0\n", "limit", "from 1 to 50"),
    ("limit = 51\n", "limit", "from 1 to 50"),
    ("limit = 2.5\n", "limit", "from 1 to 50"),
    ("node-limit = -1\n", "node-limit", "positive integer"),
    ("max-filesize = true\n", "max-filesize", "positive number of bytes"),
    ("max-filesize = '2X'\n", "max-filesize", "such as \"2M\""),
    ("max-filesize = '1.5M'\n", "max-filesize", "such as \"2M\""),
    ("max-filesize = 0\n", "max-filesize", "positive number of bytes"),
    ("search-type = 'fuzzy'\n", "search-type", "hybrid, keywords, lexical, semantic"),
    ("ignore = 'build/'\n", "ignore", "list of gitignore lines"),
    ("ignore = [1, 2]\n", "ignore", "list of gitignore lines"),
    ("[ignore]\nx = 1\n", "ignore", "list of gitignore lines"),
])
def test_bad_key_or_type_names_file_and_key(tmp_path, text, key, words):
    _ov_toml(tmp_path, text)
    with pytest.raises(OvError) as ei:
        load_config(tmp_path)
    e = ei.value
    assert e.code == "invalid_argument"
    assert e.field == key
    assert str(tmp_path / ".ov" / "config.toml") in e.message
    assert repr(key) in e.message or f"{key} must be" in e.message
    assert words in e.message


def test_bad_key_in_pyproject_names_the_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ov]\nmax_filesize = 10\n")
    with pytest.raises(OvError) as ei:
        load_config(tmp_path)
    assert ei.value.code == "invalid_argument"
    assert f"{tmp_path / 'pyproject.toml'} [tool.ov]: unknown key 'max_filesize'" in ei.value.message
    assert "did you mean 'max-filesize'" in ei.value.message


def test_tool_ov_not_a_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool]\nov = "hybrid"\n')
    with pytest.raises(OvError) as ei:
        load_config(tmp_path)
    assert ei.value.code == "invalid_argument" and "must be a table" in ei.value.message


def test_invalid_toml(tmp_path):
    _ov_toml(tmp_path, "limit = \n")
    with pytest.raises(OvError) as ei:
        load_config(tmp_path)
    assert ei.value.code == "invalid_argument" and "not valid TOML" in ei.value.message
    assert ei.value.field == "config"


# ---- index ----------------------------------------------------------------------------


def _indexed(ov, root: Path, *flags) -> set[str]:
    r = ov("index", ".", "--json", *flags, cwd=root)
    assert r.code == 0, r.out + r.err
    from ov.store import Store  # noqa: PLC0415

    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        return set(st.file_states())


def test_index_uses_config_walk_options(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    _ov_toml(root, 'ignore = ["build/"]\nhidden = true\nmax-filesize = 1000\n')
    assert _indexed(ov, root) == {"a.py", "b.py", "c.md", ".hidden.py"}
    # flags beat the config
    assert _indexed(ov, root, "--no-hidden", "--max-filesize", "5000") == {"a.py", "b.py", "c.md",
                                                                           "big.txt"}


def test_index_without_config_uses_defaults(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    assert _indexed(ov, root) == {"a.py", "b.py", "c.md", "big.txt", "build/out.py"}


def test_index_refuses_bad_config_before_writing(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    (root / "pyproject.toml").write_text("[tool.ov]\nhiden = true\n")
    r = ov("index", ".", "--json", cwd=root)
    assert r.code == 2
    err = r.json["error"]
    assert err["code"] == "invalid_argument" and err["field"] == "hiden"
    assert "pyproject.toml [tool.ov]: unknown key 'hiden'" in err["message"]
    assert not (root / ".ov" / "index.db").exists()
    r = ov("index", ".", cwd=root)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("ov: error[invalid_argument]: ") and "'hiden'" in r.err


# ---- search / find --------------------------------------------------------------------


def test_search_type_and_limit_from_config(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    assert ov("index", ".", cwd=root).code == 0
    r = ov("search", "needle", "--json", cwd=root)
    assert r.json["result"]["search_type"] == "hybrid"
    assert len(r.json["result"]["hits"]) >= 3
    (root / "pyproject.toml").write_text('[tool.ov]\nsearch-type = "lexical"\nlimit = 2\n')
    r = ov("search", "needle", "--json", cwd=root)
    assert r.code == 0, r.out
    assert r.json["result"]["search_type"] == "keywords"
    assert len(r.json["result"]["hits"]) == 2
    r = ov("search", "needle", "--json", "--search-type", "hybrid", "-n", "3", cwd=root)
    assert r.json["result"]["search_type"] == "hybrid"
    assert len(r.json["result"]["hits"]) == 3
    r = ov("find", "needle", "--json", cwd=root)  # find is always semantic; limit applies
    assert r.json["result"]["search_type"] == "semantic"
    assert len(r.json["result"]["hits"]) == 2
    r = ov("search", "needle", "--mode", "context", "--json", cwd=root)
    assert r.code == 0, r.out
    assert r.json["result"]["stats"]["candidates"] <= 2


def test_bad_flag_fails_before_config_or_index(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    r = ov("search", "needle", "--search-type", "fuzzy", "--json", cwd=root)
    assert r.code == 2 and r.json["error"]["field"] == "search_type"
    r = ov("search", "needle", "-n", "0", "--json", cwd=root)
    assert r.code == 2 and r.json["error"]["field"] == "limit"
    assert not (root / ".ov").exists()  # nothing was built for a refused call


def test_search_with_bad_config(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    assert ov("index", ".", cwd=root).code == 0
    _ov_toml(root, "limit = 100\n")
    r = ov("search", "needle", "--json", cwd=root)
    assert r.code == 2
    assert r.json["error"]["field"] == "limit"
    assert ".ov/config.toml: limit must be an integer from 1 to 50, not 100" in r.json["error"]["message"]


def test_a_first_search_with_a_bad_config_says_only_the_error(ov, tmp_path):
    """It said "no index found; building one" and then stopped on the config."""
    root = make_tree(tmp_path / "t", FILES)
    _ov_toml(root, "limit = 99\n")
    r = ov("search", "needle", cwd=root)
    assert r.code == 2 and "limit must be an integer from 1 to 50, not 99" in r.err, r.err
    assert "building one" not in r.err and not (root / ".ov" / "index.db").exists(), r.err


# ---- grep / glob ----------------------------------------------------------------------


def test_grep_glob_node_limit_hidden_ignore_from_config(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    r = ov("glob", "**/*.py", "--json", cwd=root)
    assert r.json["result"]["matches"] == ["a.py", "b.py", "build/out.py"]
    _ov_toml(root, 'ignore = ["build/"]\nhidden = true\nnode-limit = 2\n')
    r = ov("glob", "**/*.py", "--json", cwd=root)
    assert r.json["result"]["matches"] == [".hidden.py", "a.py"]
    assert r.json["result"]["truncated"] is True
    r = ov("glob", "**/*.py", "--json", "--node-limit", "10", "--no-hidden", cwd=root)
    assert r.json["result"]["matches"] == ["a.py", "b.py"]
    assert r.json["result"]["truncated"] is False
    r = ov("grep", "needle", "-l", "--json", "--node-limit", "10", cwd=root)
    assert r.json["result"]["paths"] == [".hidden.py", "a.py", "b.py", "big.txt", "c.md"]
    r = ov("grep", "needle", "-l", "--json", cwd=root)
    assert r.json["result"]["paths"] == [".hidden.py", "a.py"]
    assert r.json["result"]["truncated"] is True
    r = ov("grep", "needle", "-l", cwd=root)
    assert "stopped at --node-limit 2" in r.err


# ---- status ---------------------------------------------------------------------------


def test_status_shows_where_each_setting_came_from(ov, tmp_path):
    root = make_tree(tmp_path / "t", FILES)
    (root / "pyproject.toml").write_text("[tool.ov]\nlimit = 5\nhidden = true\n")
    _ov_toml(root, 'hidden = false\nignore = ["build/"]\n')
    assert ov("index", ".", cwd=root).code == 0
    r = ov("status", "--json", cwd=root)
    assert r.code == 0
    assert r.json["result"]["settings"] == {
        "ignore": {"value": ["build/"], "source": ".ov/config.toml"},
        "max-filesize": {"value": DEFAULT_MAX_FILESIZE, "source": "default"},
        "hidden": {"value": False, "source": ".ov/config.toml"},
        "search-type": {"value": "hybrid", "source": "default"},
        "limit": {"value": 5, "source": "pyproject.toml [tool.ov]"},
        "node-limit": {"value": 256, "source": "default"},
        "embed-skip": {"value": list(DEFAULT_EMBED_SKIP), "source": "default"},
        "embed-long-lines": {"value": True, "source": "default"},
    }
    r = ov("status", cwd=root)
    assert r.code == 0
    text = r.out.splitlines()
    i = text.index("settings:")
    assert text[i + 1:] == [
        '  ignore        = ["build/"]  (.ov/config.toml)',
        f"  max-filesize  = {DEFAULT_MAX_FILESIZE}  (default)",
        "  hidden        = false  (.ov/config.toml)",
        '  search-type   = "hybrid"  (default)',
        "  limit         = 5  (pyproject.toml [tool.ov])",
        "  node-limit    = 256  (default)",
        f"  embed-skip    = {json.dumps(list(DEFAULT_EMBED_SKIP))}  (default)",
        "  embed-long-lines = true  (default)",
    ]


@pytest.mark.parametrize(("given", "size"), [(4096, 4096), ("4096", 4096), ("2K", 2048), ("2k", 2048),
                                             ("3M", 3 << 20), (" 64M ", 64 << 20)])
def test_max_filesize_takes_sizes_as_rg(tmp_path, given, size):
    # rg's --max-filesize takes K, M and G suffixes; the config and the flag take them too
    from ov.config import parse_size

    assert parse_size(given) == size
    _ov_toml(tmp_path, f"max-filesize = {given!r}\n" if isinstance(given, str) else f"max-filesize = {given}\n")
    cfg = load_config(tmp_path)
    assert cfg.values["max-filesize"] == size and cfg.walk_options().max_filesize == size


def test_a_trees_config_raises_max_filesize_to_64m_at_most(tmp_path, capsys):
    """A cloned tree's config of `max-filesize = "4G"` ran `ov index` out of memory on
    one committed 300 MB file: a config holds it at 64M, with a warning; `--max-filesize`
    (the user's own word) is not held."""
    from ov.config import CONFIG_MAX_FILESIZE, parse_size

    assert parse_size(" 1G ") == 1 << 30
    _ov_toml(tmp_path, 'max-filesize = "4G"\n')
    cfg = load_config(tmp_path)
    assert cfg.walk_options(max_filesize=1 << 30).max_filesize == 1 << 30
    assert "held" not in capsys.readouterr().err  # the flag's value: nothing held, nothing said
    assert cfg.walk_options().max_filesize == CONFIG_MAX_FILESIZE == 64 << 20
    assert cfg.walk_options().max_filesize == CONFIG_MAX_FILESIZE
    assert capsys.readouterr().err.count("max-filesize is held at 64M") == 1  # said once
    # `ov status` shows the value in use (it had shown 4G), and what the config said
    assert cfg.settings()["max-filesize"] == {"value": 64 << 20, "source": ".ov/config.toml", "configured": 4 << 30}
    assert cfg.settings({"max-filesize": 1 << 30})["max-filesize"] == {"value": 1 << 30, "source": "flag"}


def test_env_number_reads_a_number_or_keeps_the_default(monkeypatch):
    """A number read from the environment when a module loads: one that is not a number
    had made every search an internal error (`OV_WORKER_DELAY=abc`)."""
    from ov.config import env_number

    for value, expected in (("2.5", 2.5), ("0", 0.0), ("abc", 6.0), ("-1", 6.0), ("nan", 6.0), ("", 6.0)):
        monkeypatch.setenv("OV_TEST_SECONDS", value)
        assert env_number("OV_TEST_SECONDS", 6.0) == expected
    monkeypatch.delenv("OV_TEST_SECONDS")
    assert env_number("OV_TEST_SECONDS", 3.0) == 3.0
