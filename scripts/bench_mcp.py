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
  (keywords, semantic, hybrid and grep, in turn).

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

QUERIES = [
    "parse command line arguments",
    "read a file inside a zip archive",
    "thread pool shutdown and wait for pending futures",
    "format a date as an ISO 8601 string",
    "compare two sequences and show the differences",
    "copy a directory tree recursively",
    "log records to a rotating file",
    "decode a JSON document",
]


def load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


def med(xs: list[float]) -> float:
    return round(statistics.median(xs), 2)


# ---- inside the server ----------------------------------------------------------------------


def _timed(tools, name: str, args: dict, runs: int, wall: list, cpu: list) -> None:
    env = tools.call(name, args)  # warm-up (and a check)
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
            for q in QUERIES:
                _timed(tools, "search", {"query": q, "search_type": st}, runs, wall, cpu)
            out[st] = f"wall {med(wall)} ms, cpu {med(cpu)} ms"
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


async def _session(tree: Path, body):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: os.environ[k] for k in ("PYTHONPATH", "OV_EMBEDDER") if k in os.environ}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ov", "mcp", str(tree)],
                                   cwd=str(tree), env=env)
    with open(os.devnull, "w") as errlog:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keywords-tree", type=Path, required=True)
    ap.add_argument("--model-tree", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--parts", default="inside,client,fresh")
    a = ap.parse_args()
    parts = a.parts.split(",")
    for tree in (a.keywords_tree, a.model_tree):
        if tree is not None and not (tree / ".ov" / "index.db").is_file():
            sys.exit(f"{tree} has no index; build it first (see the docstring)")
    if "inside" in parts:
        print(f"inside, keywords tree: {inside(a.keywords_tree, ['keywords'], a.runs)}  ({load()})", flush=True)
        if a.model_tree:
            print(f"inside, model tree: {inside(a.model_tree, ['keywords', 'semantic', 'hybrid'], a.runs)}"
                  f"  ({load()})", flush=True)
    if "client" in parts:
        print(f"client, keywords tree: {client(a.keywords_tree, ['keywords'], a.runs, a.calls)}", flush=True)
        if a.model_tree:
            print(f"client, model tree: {client(a.model_tree, ['keywords', 'semantic', 'hybrid'], a.runs, a.calls)}",
                  flush=True)
    if "fresh" in parts:
        print(f"freshness, keywords tree: {freshness(a.keywords_tree, a.edits)}", flush=True)
        if a.model_tree:
            print(f"freshness, model tree: {freshness(a.model_tree, a.edits)}", flush=True)


if __name__ == "__main__":
    main()
