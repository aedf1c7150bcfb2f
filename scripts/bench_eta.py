"""The background worker's ETA against the time its embedding really took.

    python3 scripts/bench_eta.py TREE --out samples.jsonl [--every 30] [--max 2700]
    python3 scripts/bench_eta.py --table samples.jsonl

TREE is a folder without an index (a copy: the run writes TREE/.ov). A first
`ov search` leaves the vectors to a background worker, which runs the real model; then
`ov status -o json` is read every `--every` seconds (at a lower CPU priority) until the
worker ends or `--max` seconds pass (then it is stopped, and the end is extrapolated from
its last token rate, which the table says). Each reading is a line of `--out`.

`--table` prints, for each reading in the embed phase: its time in the phase, rows done,
`rate`, the ETA that rows a second since the phase began give (what the worker said
before its ETA counted tokens), the worker's `eta_s`, the time that was left, and both
ETAs over it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ov.indexer import worker_state  # noqa: E402


def _ov(args: list[str], tree: Path, nice: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OV_EMBEDDER"}  # the real model
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "ov", *args]
    return subprocess.run((["nice"] if nice else []) + cmd, cwd=tree, env=env, capture_output=True, text=True)


def measure(tree: Path, out: Path, every: float, max_s: float) -> None:
    db = tree / ".ov" / "index.db"
    t0 = time.monotonic()
    r = _ov(["search", "read a line from a buffered reader", "-n", "1"], tree)
    with out.open("w") as f:
        f.write(json.dumps({"event": "search", "t": time.monotonic() - t0, "code": r.returncode}) + "\n")
        due, seen = time.monotonic(), False
        while time.monotonic() - t0 < max_s:
            st = worker_state(db)
            if st is None and (seen or time.monotonic() - t0 > 60):  # (none: a small tree needs none)
                f.write(json.dumps({"event": "end" if seen else "no worker", "wall": time.time()}) + "\n")
                return
            seen = seen or st is not None
            if time.monotonic() >= due:
                try:
                    bg = json.loads(_ov(["status", "-o", "json"], tree, nice=True).stdout)["result"]["background"]
                except (ValueError, KeyError, TypeError):
                    bg = None
                f.write(json.dumps({"event": "sample", "wall": time.time(), "bg": bg,
                                    "load": os.getloadavg()[0]}) + "\n")
                f.flush()
                due += every
            time.sleep(1)
        f.write(json.dumps({"event": "cap", "wall": time.time()}) + "\n")
    _ov(["index", "--stop"], tree)


def table(path: Path) -> None:
    events = [json.loads(line) for line in path.open()]
    samples = [e for e in events if e["event"] == "sample" and e["bg"] and e["bg"]["phase"] == "embed"
               and e["bg"]["done"] and e["bg"]["eta_s"] is not None]
    end = next((e["wall"] for e in events if e["event"] == "end"), None)
    if end is None:
        last = samples[-1]
        end = last["wall"] + (last["bg"]["tokens_total"] - last["bg"]["tokens_done"]) / last["bg"]["tokens_rate"]
        print("The worker did not finish: its end is extrapolated from the last reading's token rate.")
    print(f"embed phase: {end - samples[0]['bg']['phase_started']:.0f} s, {samples[0]['bg']['total']} rows\n")
    print("| s in phase | rows done | rate (rows/s) | rows/s ETA | `eta_s` | time left | rows/s ETA / left "
          "| `eta_s` / left | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for e in samples:
        b = e["bg"]
        t = e["wall"] - b["phase_started"]
        old = (b["total"] - b["done"]) / (b["done"] / t)
        left = end - e["wall"]
        print(f"| {t:.0f} | {b['done']}/{b['total']} | {b['rate']} | {old:.0f} | {b['eta_s']:.0f} | {left:.0f} "
              f"| {old / left:.2f} | {b['eta_s'] / left:.2f} | {e['load']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tree", nargs="?", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--every", type=float, default=30.0)
    ap.add_argument("--max", type=float, default=2700.0)
    ap.add_argument("--table", type=Path)
    a = ap.parse_args()
    if a.table:
        table(a.table)
    elif a.tree and a.out:
        measure(a.tree.resolve(), a.out, a.every, a.max)
    else:
        ap.error("give TREE and --out, or --table FILE")


if __name__ == "__main__":
    main()
