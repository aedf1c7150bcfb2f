"""`ov mcp` benchmarks (issue 16): warm latency, freshness, memory.

    python3 scripts/bench_mcp.py --keywords-tree /work/stdlib-mcp --model-tree /work/stdlib-mcp-embed

Both trees must be indexed already (`ov index --no-embed` for the keywords tree, `ov index`
for the model tree: its vectors come from the real model, so its semantic and hybrid
queries run the real model too).

- inside: the server's own tool calls (`ov.mcp.Tools.call`, what a tools/call runs after
  the JSON-RPC layer) in this process, on an index opened once with the model loaded once,
  median of `--runs` timed calls per query after one warm-up call;
- client: the same queries as tools/call round trips through the MCP SDK's client to an
  `ov mcp` subprocess (JSON-RPC over pipes, pydantic on both sides);
- freshness: 20 edits, each appending a new word to a file of the tree while the server
  runs; the time from the write to the first keywords search through the server that
  finds the word in that file (polled every 20 ms); the files are restored afterwards;
- memory: the server's RSS once idle (model loaded, catch-up done) and after 1,000 calls
  (keywords, semantic, hybrid and grep, in turn);
- synthetic: the library calls a ranked tools/call makes (`ov.Index.search`, the warm
  store of `ov.api`) on scripts/bench_query.py's index of 100,000 chunks (random unit
  vectors), the query embedded by the real model as in the server (its vector is then
  replaced by a fixed random one of the synthetic index's kind; `--syn-root`);
- checkout: a git repository of `--checkout-files` stdlib modules under `ov mcp`; a
  `git checkout` of a branch that edits 490 of them, adds 5 and deletes 5; the time until
  the server's search finds the last edited file's new word and its watcher has applied
  all 500 changes, and what its batches read (the server's stderr lines), there and back.

`--fill-vectors TREE` gives every row of TREE's index that has no vector a random unit
vector (the model id is kept): embedding the whole stdlib with the real model takes hours
on this shared machine, and a KNN's cost does not depend on what the vectors hold. The
hits of such an index mean nothing; its times are those of an index of that size.

- firstuse: a fresh copy of `--firstuse-src` (no index) under `ov mcp`, the real model,
  driven by a raw JSON-RPC client over the pipes (no SDK between, so each reply is timed
  as the client sees it): the time to the `initialize` reply, to the first `grep` reply,
  and to the first keywords `search` that answers hits instead of `index_busy`; then, while
  the server is still adding the tree's vectors, `--edits` new files, each timed from its
  write to the first keywords search that finds it, with the semantic coverage at that
  moment (below 1.0: the vectors were still being added). `--ov-path DIR` runs the server
  from another checkout of ov (PYTHONPATH), to compare two commits on one machine;
- beside: the same, but an `ov index` in the foreground is embedding the fresh copy when
  the server starts (it holds the index lock for its whole run): the new files are timed
  as above, with whether that `ov index` was still running when each was found
  (`OV_BENCH_STDERR=FILE` keeps the server's stderr: each batch's time, lock wait included).

The load average is printed beside every part: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_query import QUERIES as CLI_QUERIES  # noqa: E402

# the CLI benchmark's queries, and three more
QUERIES = [
    *CLI_QUERIES,
    "copy a directory tree recursively",
    "log records to a rotating file",
    "decode a JSON document",
]


def load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


def med(xs: list[float]) -> float:
    return round(statistics.median(xs), 2)


# ---- inside the server ----------------------------------------------------------------------


def _timed(tools, name: str, args: dict, runs: int, wall: list, cpu: list, first: list | None = None) -> None:
    t0 = time.perf_counter()
    env = tools.call(name, args)  # warm-up (and a check)
    if first is not None:
        first.append((time.perf_counter() - t0) * 1000)
    assert env["status"] == "ok", env
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        tools.call(name, args)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - t0) * 1000)


def inside(tree: Path, types: list[str], runs: int) -> dict[str, str]:
    """Median wall and CPU ms per call: on a machine shared by a dozen busy processes the
    wall time is mostly waiting for a core; the CPU time is the call's own work."""
    from ov.mcp import open_tree

    tools = open_tree(tree, watch=False, notice=lambda m: None)
    out = {}
    try:
        for st in types:
            wall: list[float] = []
            cpu: list[float] = []
            first: list[float] = []  # each query's first call: its words not read yet
            for q in QUERIES:
                _timed(tools, "search", {"query": q, "search_type": st}, runs, wall, cpu, first)
            out[st] = f"wall {med(wall)} ms, cpu {med(cpu)} ms, first call {med(first)} ms"
        for name, args in (("grep", {"pattern": "def main", "fixed": True}), ("glob", {"pattern": "**/*.py"})):
            wall, cpu = [], []
            _timed(tools, name, args, max(3, runs // 2), wall, cpu)
            out[name] = f"wall {med(wall)} ms, cpu {med(cpu)} ms"
    finally:
        tools.ix.close()
    return out


# ---- through the client ---------------------------------------------------------------------


def _server_pid() -> int | None:
    """The `ov mcp` child of this process (stdio_client does not expose it)."""
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == me and b"mcp" in (d / "cmdline").read_bytes():
                return int(d.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def rss_mb(pid: int) -> dict[str, float]:
    """VmRSS, and its anonymous part (heap: a leak shows here) and file part (the index's
    pages mapped by SQLite's mmap: they grow as queries touch more of the file, up to its
    size, and the kernel may drop them)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


async def _session(tree: Path, body, errlog_path: Path | None = None):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: os.environ[k] for k in ("PYTHONPATH", "OV_EMBEDDER") if k in os.environ}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ov", "mcp", str(tree)],
                                   cwd=str(tree), env=env)
    with open(errlog_path or os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w):
            async with ClientSession(r, w, read_timeout_seconds=600) as s:
                await s.initialize()
                return await body(s)


async def _wait_catch_up(s) -> None:
    import json

    while True:
        res = await s.call_tool("status", {})
        if json.loads(res.content[0].text)["result"]["watch"]["updates"] >= 1:
            return
        await _sleep(0.2)


async def _sleep(t: float) -> None:
    import anyio

    await anyio.sleep(t)


def client(tree: Path, types: list[str], runs: int, n_calls: int) -> dict:
    import json

    async def body(s):
        await _wait_catch_up(s)
        pid = _server_pid()
        out: dict = {"load_start": load()}
        await _sleep(2)
        out["rss_idle_mb"] = rss_mb(pid) if pid else None
        for st in types:
            times = []
            for q in QUERIES:
                args = {"query": q, "search_type": st}
                await s.call_tool("search", args)
                for _ in range(runs):
                    t0 = time.perf_counter()
                    res = await s.call_tool("search", args)
                    times.append((time.perf_counter() - t0) * 1000)
                    assert not res.is_error, res.content[0].text
            out[st] = med(times)
        calls = [("search", {"query": q, "search_type": st}) for q in QUERIES for st in types]
        calls.append(("grep", {"pattern": "import os", "fixed": True, "node_limit": 50}))
        t0 = time.perf_counter()
        for i in range(n_calls):
            name, args = calls[i % len(calls)]
            res = await s.call_tool(name, args)
            assert not res.is_error, res.content[0].text
            if i + 1 == n_calls // 2 and pid:
                out["rss_half_mb"] = rss_mb(pid)
        out["calls"] = n_calls
        out["calls_s"] = round(time.perf_counter() - t0, 1)
        out["rss_after_mb"] = rss_mb(pid) if pid else None
        out["load_end"] = load()
        json.dumps(out)
        return out

    import anyio

    return anyio.run(_session, tree, body)


def freshness(tree: Path, n_edits: int) -> dict:
    import json

    rng = random.Random(0)
    files = sorted(p for p in tree.rglob("*.py") if ".ov" not in p.parts and p.stat().st_size < 200_000)
    picked = rng.sample(files, min(n_edits, len(files)))

    async def body(s):
        await _wait_catch_up(s)
        out = {"load_start": load()}
        times = []
        originals = {}
        try:
            for i, p in enumerate(picked):
                word = f"freshword{i}x{rng.randrange(10**9)}"
                originals[p] = p.read_bytes()
                rel = p.relative_to(tree).as_posix()
                t0 = time.perf_counter()
                with open(p, "a", encoding="utf-8") as f:
                    f.write(f"\n# {word}\n")
                while True:
                    res = await s.call_tool("search", {"query": word, "search_type": "keywords"})
                    hits = json.loads(res.content[0].text)["result"]["hits"]
                    if any(h["path"] == rel for h in hits):
                        break
                    if time.perf_counter() - t0 > 60:
                        raise RuntimeError(f"{rel} not fresh after 60 s")
                    await _sleep(0.02)
                times.append(time.perf_counter() - t0)
                await _sleep(0.3)
        finally:
            for p, data in originals.items():
                p.write_bytes(data)
        out["median_s"] = round(statistics.median(times), 3)
        out["max_s"] = round(max(times), 3)
        out["edits"] = len(times)
        out["load_end"] = load()
        await _sleep(3)  # let the server re-index the restored files before it closes
        return out

    import anyio

    return anyio.run(_session, tree, body)


# ---- first use: the server on a tree without an index -----------------------------------------


class RawClient:
    """JSON-RPC over an `ov mcp` subprocess's pipes, one request at a time."""

    def __init__(self, tree: Path, ov_path: Path | None) -> None:
        import subprocess

        env = {k: v for k, v in os.environ.items() if k != "OV_EMBEDDER"}  # the real model
        if ov_path is not None:
            env["PYTHONPATH"] = str(ov_path)
        log = os.environ.get("OV_BENCH_STDERR")  # a file for the server's stderr (its batches' times)
        self.p = subprocess.Popen([sys.executable, "-m", "ov", "mcp", str(tree)], cwd=tree, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(log, "a") if log else subprocess.DEVNULL, text=True)
        self.next_id = 0

    def ask(self, method: str, params: dict | None = None) -> dict:
        import json

        self.next_id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                       "params": params or {}}) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                return msg

    def tell(self, method: str) -> None:
        import json

        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.p.stdin.flush()

    def tool(self, name: str, args: dict) -> dict:
        return self.ask("tools/call", {"name": name, "arguments": args})["result"]["structuredContent"]

    def close(self) -> None:
        self.p.stdin.close()
        try:
            self.p.wait(120)
        except Exception:
            self.p.kill()


FIRSTUSE_WAIT_S = 300.0  # a new file not found by then is reported as such


def firstuse(src: Path, workdir: Path, n_edits: int, ov_path: Path | None, beside: bool = False) -> dict:
    import shutil
    import subprocess

    tree = workdir / "firstuse"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(src, tree, ignore=shutil.ignore_patterns(".ov", "__pycache__"))
    out: dict = {"files": sum(1 for p in tree.rglob("*") if p.is_file()), "load_start": load()}
    indexer = None
    if beside:  # an `ov index` embedding in the foreground, past its keyword phase
        env = {k: v for k, v in os.environ.items() if k != "OV_EMBEDDER"}
        if ov_path is not None:
            env["PYTHONPATH"] = str(ov_path)
        indexer = subprocess.Popen([sys.executable, "-m", "ov", "index", str(tree)], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(20)
    t0 = time.perf_counter()
    c = RawClient(tree, ov_path)
    try:
        c.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "bench", "version": "1"}})
        out["initialize_s"] = round(time.perf_counter() - t0, 2)
        c.tell("notifications/initialized")
        c.tool("grep", {"pattern": "import", "files_with_matches": True})
        out["first_grep_s"] = round(time.perf_counter() - t0, 2)
        while True:
            env = c.tool("search", {"query": "parse a header", "search_type": "keywords"})
            if env["status"] == "ok":
                break
            if env["error"]["code"] != "index_busy" or time.perf_counter() - t0 > 600:
                raise RuntimeError(f"search failed: {env['error']}")
            time.sleep(0.2)
        out["first_search_s"] = round(time.perf_counter() - t0, 2)
        times, coverage = [], []
        for i in range(n_edits):
            word = f"firstuseword{i}x{random.Random(i).randrange(10**9)}"
            rel = f"zz_new_{i}.md"
            t1 = time.perf_counter()
            (tree / rel).write_text(f"# New note {i}\n\n{word}\n")
            found = False
            while not found and time.perf_counter() - t1 < FIRSTUSE_WAIT_S:
                env = c.tool("search", {"query": word, "search_type": "keywords"})
                found = env["status"] == "ok" and any(h["path"] == rel for h in env["result"]["hits"])
                if not found:
                    time.sleep(0.05)
            if not found:
                out["not_found"] = f"{rel} was not found within {FIRSTUSE_WAIT_S:.0f} s; the edits stopped"
                break
            times.append(time.perf_counter() - t1)
            cov = c.tool("status", {})["result"]["coverage"]
            coverage.append(cov["ratio"])
            if indexer is not None:
                out.setdefault("ov_index_running", []).append(indexer.poll() is None)
            time.sleep(0.5)
        out["new_file_found_s"] = [round(x, 2) for x in times]
        out["new_file_median_s"] = round(statistics.median(times), 2) if times else None
        out["coverage_then"] = coverage
        out["load_end"] = load()
    finally:
        c.close()
        if indexer is not None:
            indexer.kill()
            indexer.wait()
        shutil.rmtree(tree, ignore_errors=True)
    return out


# ---- an index of the stdlib's size with vectors --------------------------------------------


def fill_vectors(tree: Path) -> int:
    """Random unit vectors for the rows of `tree`'s index that have none; returns how many."""
    import numpy as np

    from ov.store import Store

    rng = np.random.default_rng(0)
    n = 0
    with Store.open(tree / ".ov" / "index.db") as store:
        pending = [cid for cid, _ in store.pending_embeddings()]
        for i in range(0, len(pending), 2000):
            ids = pending[i:i + 2000]
            vecs = rng.standard_normal((len(ids), 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            with store.tx():
                # random vectors: a hash of their own each, so none is taken for another's
                store.store_vectors(ids, [v.tobytes() for v in vecs], [f"random-{cid}" for cid in ids])
            n += len(ids)
        with store.tx():
            store.set_meta("bench_random_vectors", str(n))
    return n


# ---- the synthetic 100,000-chunk index ---------------------------------------------------------


class _RealCostEmbedder:
    """The server's query embedder (the real model, one thread) whose output is swapped for
    the synthetic index's fixed random vector: the query pays the model, and the model id
    matches the index's."""

    def __init__(self, real, fixed) -> None:
        self.real, self.fixed = real, fixed
        self.model_id = fixed.model_id

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def embed(self, texts, *args, **kwargs):
        self.real.embed(texts, *args, **kwargs)
        return self.fixed.embed(texts)


def synthetic(syn_root: Path, runs: int) -> dict[str, str]:
    import bench_query as bq

    from ov import api
    from ov.embed import load_embedder
    from ov.mcp import QUERY_THREADS, SharedEmbedder

    db = bq.build_synthetic(syn_root, 100_000)
    real = SharedEmbedder(load_embedder("index", threads=QUERY_THREADS))
    real.embed(["warm up"])
    out = {}
    with api.Index.open(syn_root, db=db, embedder=_RealCostEmbedder(real, bq.FixedEmbedder(bq.SYN_MODEL))) as ix:
        # as `ov mcp` does (an older ov has no such calls)
        for keep in ("keep_keywords", "keep_vectors"):
            if hasattr(ix, keep):
                getattr(ix, keep)()
        for st in ("keywords", "semantic", "hybrid"):
            wall: list[float] = []
            cpu: list[float] = []
            for q in QUERIES:
                ix.search(q, search_type=st)  # warm-up
                for _ in range(runs):
                    t0, c0 = time.perf_counter(), time.process_time()
                    ix.search(q, search_type=st)
                    cpu.append((time.process_time() - c0) * 1000)
                    wall.append((time.perf_counter() - t0) * 1000)
            out[st] = f"wall {med(wall)} ms, cpu {med(cpu)} ms (n={len(wall)})"
            print(f"  synthetic {st}: {out[st]}  ({load()})", file=sys.stderr, flush=True)
    return out


# ---- a branch switch under the server --------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=ov", "-c", "user.email=ov@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def checkout_repo(src: Path, dest: Path, n_files: int, embed: bool) -> Path:
    """`n_files` .py files of `src` (under 100 kB) in a git repository at `dest`, indexed;
    branch `other` edits 490 of them, deletes 5 and adds 5. `main` is checked out."""
    import shutil
    import subprocess

    if (dest / ".ov" / "index.db").is_file():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    files = sorted(p for p in src.rglob("*.py") if ".ov" not in p.parts and p.stat().st_size < 100_000)
    for p in files[:n_files]:
        out = dest / p.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, out)
    rels = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.py"))
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "main")
    _git(dest, "checkout", "-q", "-b", "other")
    for i, rel in enumerate(rels[:490]):
        with open(dest / rel, "a", encoding="utf-8") as f:
            f.write(f"\n\ndef switched_{i}():\n    return 'switchword{i}x'\n")
    for rel in rels[490:495]:
        (dest / rel).unlink()
    for i in range(5):
        (dest / f"switched_new_{i}.md").write_text(f"# New {i}\n\nswitchword{490 + i}x\n")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "other")
    _git(dest, "checkout", "-q", "main")
    subprocess.run([sys.executable, "-m", "ov", "index", *([] if embed else ["--no-embed"]), str(dest)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return dest


def checkout(src: Path, workdir: Path, n_files: int, embed: bool) -> dict:
    """A branch switch there and back under `ov mcp`; each: seconds to fresh, batches, and
    the files they read (added + updated + unchanged, from the server's stderr)."""
    import json
    import re

    repo = checkout_repo(src, workdir / f"checkout-{n_files}{'-embed' if embed else ''}", n_files, embed)
    errlog = workdir / "checkout-server.err"
    rels = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.py") if ".ov" not in p.parts)
    last = rels[489]  # the 490th edited file of `other`, in the same order as checkout_repo
    line = re.compile(r"re-indexed: (\d+) added, (\d+) updated, (\d+) removed, (\d+) unchanged in ([\d.]+)s")

    def batches_since(mark: int) -> list[tuple[float, ...]]:
        with open(errlog, encoding="utf-8") as f:
            f.seek(mark)
            return [tuple(float(x) for x in m.groups()) for m in line.finditer(f.read())]

    async def body(s):
        await _wait_catch_up(s)
        out: dict = {"files": len(rels), "load_start": load()}
        for branch, word, path in (("other", "switchword489x", last), ("main", None, None)):
            mark = errlog.stat().st_size
            t0 = time.perf_counter()
            _git(repo, "checkout", "-q", branch)
            # the server's own notices say when its batches are in: polling a tool meanwhile
            # would take the interpreter's lock from the watcher thread doing the work
            while sum(sum(b[:3]) for b in batches_since(mark)) < 500:
                if time.perf_counter() - t0 > 600:
                    raise RuntimeError(f"checkout of {branch} not indexed after 600 s")
                await _sleep(0.02)
            took = time.perf_counter() - t0
            if word is not None:
                res = await s.call_tool("search", {"query": word, "search_type": "keywords"})
                hits = json.loads(res.content[0].text)["result"]["hits"]
                assert any(h["path"] == path for h in hits), (word, hits)
            await _sleep(2)  # stragglers
            batches = batches_since(mark)
            out[f"to {branch}"] = {"fresh_s": round(took, 2), "batches": len(batches),
                                   "added_updated_removed_unchanged": [int(sum(b[i] for b in batches))
                                                                       for i in range(4)],
                                   "batch_s": [b[4] for b in batches]}
        out["load_end"] = load()
        return out

    import anyio

    return anyio.run(_session, repo, body, errlog)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keywords-tree", type=Path)
    ap.add_argument("--model-tree", type=Path)
    ap.add_argument("--fill-vectors", type=Path, help="give TREE's rows without a vector random ones, then stop")
    ap.add_argument("--syn-root", type=Path, default=Path("/tmp/ov-bench/synthetic"))
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/ov-bench"))
    ap.add_argument("--checkout-src", type=Path, help="files for the checkout part (default: the keywords tree)")
    ap.add_argument("--checkout-files", type=int, default=800)
    ap.add_argument("--checkout-embed", action="store_true", help="index the checkout repository with vectors")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--parts", default="inside,client,fresh")
    ap.add_argument("--firstuse-src", type=Path, help="a tree to copy (no index) for the firstuse part")
    ap.add_argument("--ov-path", type=Path, help="run the firstuse server from this checkout of ov")
    a = ap.parse_args()
    parts = a.parts.split(",")
    # the synthetic part opens its index without ov.mcp.open_tree, which sets this for the
    # server: numpy must load with it, so it is set before anything imports numpy
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if a.fill_vectors:
        print(f"{a.fill_vectors}: {fill_vectors(a.fill_vectors)} rows given random vectors")
        return
    for tree in (a.keywords_tree, a.model_tree):
        if tree is not None and not (tree / ".ov" / "index.db").is_file():
            sys.exit(f"{tree} has no index; build it first (see the docstring)")
    if "inside" in parts:
        if a.keywords_tree:
            print(f"inside, keywords tree: {inside(a.keywords_tree, ['keywords'], a.runs)}  ({load()})",
                  flush=True)
        if a.model_tree:
            print(f"inside, model tree: {inside(a.model_tree, ['keywords', 'semantic', 'hybrid'], a.runs)}"
                  f"  ({load()})", flush=True)
    if "client" in parts and a.keywords_tree:
        print(f"client, keywords tree: {client(a.keywords_tree, ['keywords'], a.runs, a.calls)}", flush=True)
        if a.model_tree:
            print(f"client, model tree: {client(a.model_tree, ['keywords', 'semantic', 'hybrid'], a.runs, a.calls)}",
                  flush=True)
    if "synthetic" in parts:
        print(f"synthetic 100k, Index.search: {synthetic(a.syn_root, a.runs)}  ({load()})", flush=True)
    if "checkout" in parts:
        src = a.checkout_src or a.keywords_tree
        print(f"checkout: {checkout(src, a.workdir, a.checkout_files, a.checkout_embed)}", flush=True)
    if "firstuse" in parts and a.firstuse_src:
        print(f"first use: {firstuse(a.firstuse_src, a.workdir, a.edits, a.ov_path)}", flush=True)
    if "beside" in parts and a.firstuse_src:
        print(f"beside an ov index: {firstuse(a.firstuse_src, a.workdir, a.edits, a.ov_path, beside=True)}",
              flush=True)
    if "fresh" in parts and a.keywords_tree:
        print(f"freshness, keywords tree: {freshness(a.keywords_tree, a.edits)}", flush=True)
        if a.model_tree:
            print(f"freshness, model tree: {freshness(a.model_tree, a.edits)}", flush=True)


if __name__ == "__main__":
    main()
