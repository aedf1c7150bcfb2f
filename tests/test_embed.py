"""The embedder: fidelity of the real model to sentence-transformers' reference vectors,
token counting, session profiles, the test fake, file location errors, lazy imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from ov.embed import (DIM, MAX_TOKENS, MODEL_ID, HashEmbedder, OnnxEmbedder,
                      load_embedder, locate_model_files)
from ov.errors import OvError

FIXTURE = REPO / "tests" / "fixtures" / "minilm_reference.jsonl"  # see its README.md


@pytest.fixture(scope="module")
def reference():
    if not FIXTURE.is_file():
        pytest.fail(f"fixture missing: {FIXTURE}")
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 64
    texts = [r["text"] for r in rows]
    vecs = np.array([r["embedding"] for r in rows], dtype=np.float32)
    return texts, vecs


@pytest.fixture(scope="module")
def index_embedder():
    return OnnxEmbedder("index")


@pytest.fixture(scope="module")
def index_vectors(index_embedder, reference):
    return index_embedder.embed(reference[0], batch_size=16)


@pytest.mark.model
def test_every_text_matches_reference(index_vectors, reference):
    _, ref = reference
    assert index_vectors.shape == (64, DIM) and index_vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(index_vectors, axis=1), 1.0, atol=1e-5)
    cos = (index_vectors * ref).sum(axis=1)
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.99, f"text {worst} at cosine {cos[worst]:.5f}"
    assert cos.mean() >= 0.998


@pytest.mark.model
def test_batch_size_and_order_do_not_change_vectors(index_embedder, index_vectors, reference):
    texts, _ = reference
    one = index_embedder.embed(texts, batch_size=1)
    np.testing.assert_allclose(one, index_vectors, atol=1e-5)
    # A reversed input comes back reversed: the length grouping restores input order.
    rev = index_embedder.embed(texts[::-1], batch_size=16)
    np.testing.assert_allclose(rev[::-1], index_vectors, atol=1e-5)


@pytest.mark.model
def test_query_neighbours_match_reference(index_vectors, reference):
    _, ref = reference
    overlap = top1 = 0
    for q in range(10):
        ours = np.argsort(-(index_vectors[10:] @ index_vectors[q]), kind="stable")[:5]
        theirs = np.argsort(-(ref[10:] @ ref[q]), kind="stable")[:5]
        overlap += len(set(ours.tolist()) & set(theirs.tolist()))
        top1 += int(ours[0] == theirs[0])
    assert overlap >= 45, overlap
    assert top1 >= 9, top1


@pytest.mark.model
def test_count_tokens_is_exact_and_never_truncated(index_embedder, reference):
    texts, _ = reference
    assert index_embedder.count_tokens(texts[36]) == 793  # fixture README: 793 tokens
    assert index_embedder.count_tokens(texts[36]) > MAX_TOKENS
    assert index_embedder.count_tokens(texts[37]) == 185
    assert index_embedder.count_tokens(" ") == 2  # [CLS] [SEP]
    assert index_embedder.count_tokens("\n\t  \n") == 2
    # Whitespace-only strings are both [CLS] [SEP], so their vectors are identical.
    v = index_embedder.embed([" ", "\n\t  \n"])
    np.testing.assert_allclose(v[0], v[1], atol=1e-6)


@pytest.mark.model
def test_long_text_is_truncated_at_the_window(index_embedder, reference):
    texts, _ = reference
    ids, mask = index_embedder.tokenize([texts[36], "short"])
    assert ids.shape == (2, MAX_TOKENS)
    assert mask.sum(axis=1).tolist() == [MAX_TOKENS, 3]


@pytest.mark.model
def test_query_profile_gives_the_same_vectors(index_vectors, reference):
    texts, _ = reference
    q = OnnxEmbedder("query")
    assert q.profile == "query" and q.model_id == MODEL_ID
    v = q.embed(texts)
    cos = (v * index_vectors).sum(axis=1)
    assert cos.min() > 0.9999


@pytest.mark.model
def test_load_embedder_without_hook_is_onnx(monkeypatch):
    e = load_embedder("query")
    assert isinstance(e, OnnxEmbedder) and e.dim == DIM
    assert e.embed([]).shape == (0, DIM)


def test_locate_model_files_finds_packaged_files(monkeypatch):
    monkeypatch.delenv("OV_MODEL", raising=False)
    monkeypatch.delenv("OV_TOKENIZER", raising=False)
    model, tok = locate_model_files()
    assert model.name == "model.onnx" and model.is_file() and model.stat().st_size > 10**7
    assert tok.name == "tokenizer.json" and tok.parent.name == "all-MiniLM-L6-v2-onnx-int8"
    assert json.loads(tok.read_text(encoding="utf-8"))["model"]["type"] == "WordPiece"


def test_missing_model_file_is_not_found(monkeypatch, tmp_path):
    missing = tmp_path / "nonexistent.onnx"
    monkeypatch.setenv("OV_MODEL", str(missing))
    with pytest.raises(OvError) as ei:
        OnnxEmbedder("query")
    assert ei.value.code == "not_found"
    assert str(missing) in ei.value.message and "OV_MODEL" in ei.value.message
    monkeypatch.delenv("OV_EMBEDDER")
    with pytest.raises(OvError) as ei:
        load_embedder("query")
    assert ei.value.code == "not_found"


def test_missing_tokenizer_file_is_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("OV_TOKENIZER", str(tmp_path / "nope.json"))
    with pytest.raises(OvError) as ei:
        locate_model_files()
    assert ei.value.code == "not_found" and "OV_TOKENIZER" in ei.value.message


def test_unloadable_model_file_is_the_users_value(monkeypatch, tmp_path):
    """A file OV_MODEL names that does not load is the user's value (`invalid_argument`,
    field OV_MODEL), not `internal`, which says "a bug"."""
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"this is not an onnx graph")
    monkeypatch.setenv("OV_MODEL", str(bad))
    with pytest.raises(OvError) as ei:
        OnnxEmbedder("query")
    assert ei.value.code == "invalid_argument" and str(bad) in ei.value.message
    assert ei.value.field == "OV_MODEL"


def test_unloadable_tokenizer_file_is_the_users_value(monkeypatch, tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("OV_TOKENIZER", str(bad))
    with pytest.raises(OvError) as ei:
        OnnxEmbedder("query")
    assert ei.value.code == "invalid_argument" and str(bad) in ei.value.message
    assert ei.value.field == "OV_TOKENIZER"


def test_unknown_profile_is_refused():
    with pytest.raises(OvError) as ei:
        OnnxEmbedder("turbo")
    assert ei.value.code == "invalid_argument"


def test_hash_embedder_is_the_test_hook():
    # conftest sets OV_EMBEDDER=hash for tests not marked `model`
    e = load_embedder()
    assert isinstance(e, HashEmbedder) and e.model_id == "hash-384" and e.dim == DIM


def test_hash_embedder_deterministic_normalised_and_word_sensitive():
    texts = ["Reverse a list in Python", "reverse a LIST in python!", "cheap trains in Europe",
             "", "   ", "ünïcödé 日本語"]
    a = HashEmbedder().embed(texts)
    b = HashEmbedder().embed(texts)
    assert a.shape == (len(texts), DIM) and a.dtype == np.float32
    assert np.array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    assert a[0] @ a[1] == pytest.approx(1.0, abs=1e-6)  # case and punctuation ignored
    assert a[0] @ a[2] < 0.6
    assert HashEmbedder().embed([]).shape == (0, DIM)
    # Stable across processes (no salted hash()): a fresh interpreter gives the same bytes.
    code = ("import sys; from ov.embed import HashEmbedder; "
            "sys.stdout.write(HashEmbedder().embed(['Reverse a list in Python'])[0].tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout
    assert out == a[0].tobytes().hex()


def test_hash_embedder_count_tokens():
    e = HashEmbedder()
    assert e.count_tokens("") == 2
    assert e.count_tokens("reverse a list, please") == 7


def test_import_is_cheap():
    code = ("import sys, ov.embed; "
            "bad = [m for m in ('onnxruntime', 'numpy', 'tokenizers') if m in sys.modules]; "
            "print(','.join(bad))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""


@pytest.mark.model
@pytest.mark.parametrize("telemetry", [None, "0"], ids=["unset", "asked-for"])
def test_loading_the_model_sends_and_keeps_nothing_about_the_machine(tmp_path, monkeypatch, telemetry):
    """onnxruntime's builds write a device id and machine details under
    ~/.cache/Microsoft when they load, and look up a Microsoft host seconds later; every
    ov process that embeds (index, find, search, mcp, the worker, doctor) loaded it so.
    ov turns that off before the import: a real-model index, find and doctor leave nothing
    in the user's home, and the library loads with the switch set. A user who asks for it
    (ORT_DISABLE_TELEMETRY=0) keeps the choice (on this machine's onnxruntime 1.32 that run
    writes the files: the check above sees what it looks for)."""
    from conftest import make_tree, run_subprocess

    home = tmp_path / "home"
    home.mkdir()
    root = make_tree(tmp_path / "tree", {"a.md": "# Retry\n\nRetry with backoff.\n"})
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    if telemetry is not None:
        env["ORT_DISABLE_TELEMETRY"] = telemetry
    r = run_subprocess(["index", "."], cwd=root, env=env)
    assert r.code == 0, r.err
    assert run_subprocess(["find", "retry", "-o", "json"], cwd=root, env=env).code == 0
    assert run_subprocess(["doctor"], cwd=root, env=env).code in (0, 1)
    left = [str(p.relative_to(home)) for p in home.rglob("*")]
    kept = [p for p in left if "Microsoft" in p or "onnxruntime" in p]
    if telemetry is None:
        assert not kept, left
    # what the library was loaded with, on any build: off unless the user chose otherwise
    code = ("import os\nfrom ov.embed import import_onnxruntime\nimport_onnxruntime()\n"
            "print(os.environ['ORT_DISABLE_TELEMETRY'])\n")
    p = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == ("1" if telemetry is None else telemetry), p.stderr
