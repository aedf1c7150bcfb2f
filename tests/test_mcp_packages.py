"""`ov mcp` where a package it needs does not import: a clear `not_found` naming the
install, before anything is built or started (no `.ov` folder, no background worker),
and `ov doctor` reporting the same. The missing package is simulated: a folder first on
PYTHONPATH holds an `mcp` package whose import fails as a missing one does (for the
subprocess), or `sys.modules` blocks it (in-process)."""

from __future__ import annotations

import json
import os
import sys

from conftest import make_tree, run_subprocess


def _no_mcp_env(tmp_path) -> dict:
    shim = make_tree(tmp_path / "shim", {
        "mcp/__init__.py": "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n"})
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "OV_EMBEDDER": "hash"}


def test_mcp_without_the_sdk_fails_before_any_side_effect(tmp_path):
    root = make_tree(tmp_path / "t", {"todo.txt": "buy milk\n"})
    env = _no_mcp_env(tmp_path)
    r = run_subprocess(["mcp"], cwd=root, env=env, input="")
    assert r.code == 2, r.err
    assert r.err.startswith("ov: error[not_found]: ov mcp cannot start: "), r.err
    assert "mcp (No module named 'mcp')" in r.err and "pip install 'mcp>=2.3,<3'" in r.err
    assert not (root / ".ov").exists()  # no index built, no worker started
    assert r.out == ""  # stdout is the protocol's
    r = run_subprocess(["mcp", "--json"], cwd=root, env=env, input="")
    assert r.code == 2 and not (root / ".ov").exists()
    err = json.loads(r.out)["error"]
    assert err["code"] == "not_found" and sys.executable in err["message"]


def test_doctor_checks_the_server_packages(ov, tmp_path, monkeypatch):
    r = ov("doctor", "--json", cwd=tmp_path)
    by = {c["name"]: c for c in r.json["result"]["checks"]}
    assert by["mcp-server"]["ok"] is True and "mcp 2." in by["mcp-server"]["detail"]
    # every module of the SDK blocked, as if it were not installed
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] + ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)
    r = ov("doctor", "--json", cwd=tmp_path)
    assert r.code == 1
    by = {c["name"]: c for c in r.json["result"]["checks"]}
    assert by["mcp-server"]["ok"] is False
    assert by["mcp-server"]["detail"].startswith("`ov mcp` cannot start: mcp: ")
    assert "pip install 'mcp>=2.3,<3'" in by["mcp-server"]["fix"]
    assert all(c["ok"] for n, c in by.items() if n != "mcp-server")
