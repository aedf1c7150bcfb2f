"""The long crash-safety run (issue 7): kill `ov index` with SIGKILL many times over a
changing tree and report kills survived, searches answered and errors by code.

The loop is `crash_loop` in tests/test_crash.py (CI runs it with 20 kills); see that
module for what is checked after each kill.

    python3 scripts/crash_run.py --kills 100 --files 200 --seed 1 [--full-every 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_crash import crash_loop  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--files", type=int, default=200, help="files in the starting tree")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--full-every", type=int, default=0,
                    help="make every Nth killed run `ov index --full` (0: never)")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--quiet", action="store_true", help="no per-kill progress on stderr")
    args = ap.parse_args()

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ov-crash-") as work:
        stats = crash_loop(Path(work), args.kills, files=args.files, seed=args.seed,
                           full_every=args.full_every, log=log)
    failed_kills = len({f.split(":", 1)[0] for f in stats.failures})
    if args.json:
        print(json.dumps({"kills": stats.kills, "kills_survived": stats.kills - failed_kills,
                          "runs_finished_before_kill": stats.completed,
                          "searches_answered": stats.searches, "recoveries": stats.recoveries,
                          "errors_by_code": dict(sorted(stats.errors.items())),
                          "seconds": round(time.monotonic() - t0, 1)}, indent=2))
    else:
        print(stats.summary())
        print(f"{time.monotonic() - t0:.0f}s; files {args.files}, seed {args.seed}, "
              f"--full every {args.full_every or 'never'}")
    for f in stats.failures[:50]:
        print("  " + f)
    return 0 if not stats.failures else 1


if __name__ == "__main__":
    sys.exit(main())
