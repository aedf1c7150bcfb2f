"""The background worker's ETA (`ov status`, a search's warning) against the time the
work really takes. On a 119 MB Go tree successive readings said `128/s, eta 1131s` ...
`27/s, eta 4839s`: the rate was rows a second since the phase began, the embed phase takes
the shortest rows first, and a row's cost to the model grows with its tokens. The ETA now
counts the work in estimated model tokens (ov.indexer.TokenCost) at a recent rate
(ov.worker.Throughput)."""

from __future__ import annotations

import os
import random
import time
from types import SimpleNamespace

import pytest

from conftest import run_subprocess
from ov import indexer, worker
from ov.embed import HashEmbedder
from ov.indexer import IndexOptions, complete_index, index_tree, worker_state

WORDS = "harbour lighthouse keeper lamp tide boat dawn anchor rope sail".split()


def _mixed(n_short: int, n_long: int) -> dict[str, str]:
    """Many one-line notes (rows of a few tokens) and fewer long files (rows of up to ~200
    tokens): a tree whose first rows are far cheaper than its last."""
    files = {f"notes/n{i:03d}.txt": f"tide tables for harbour {i}\n" for i in range(n_short)}
    for i in range(n_long):
        rng = random.Random(i)
        files[f"logs/l{i:03d}.txt"] = " ".join(rng.choice(WORDS) for _ in range(300)) + "\n"
    return files


class _Clock:
    """Time that moves only when the fake model runs."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class _TimedEmbedder(HashEmbedder):
    """The test embedder, taking `per_token` seconds of the clock a token, as the model
    takes time in proportion to a text's tokens."""

    def __init__(self, clock: _Clock, per_token: float = 0.01) -> None:
        self.clock, self.per_token = clock, per_token

    def embed(self, texts, batch_size: int = 4):
        self.clock.t += self.per_token * sum(self.count_tokens(t) for t in texts)
        return super().embed(texts)


def test_the_eta_holds_on_rows_of_different_lengths(tree, monkeypatch):
    """The worker's state, driven by a real embed phase over short rows first and long
    ones last with a model whose time is its tokens: each ETA said in the first half of
    the rows is within a third of the time that was left. Rows a second since the start
    said a fifth of it."""
    root = tree(_mixed(240, 30))
    db = root / ".ov" / "index.db"
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    clock = _Clock()
    monkeypatch.setattr(worker, "time", SimpleNamespace(monotonic=clock, time=time.time))
    monkeypatch.setattr(indexer, "EMBED_STEP", 8)  # more reports, on a small tree
    seen: list[tuple[float, int, int, float | None]] = []

    class Watched(worker._State):
        def __call__(self, phase, done, total):
            super().__call__(phase, done, total)
            if phase == "embed":
                seen.append((clock.t, done, total, self.data["eta_s"]))

    complete_index(db, progress=Watched(db), embedder=_TimedEmbedder(clock))
    end = clock.t
    t0 = seen[0][0]
    early = [(t, done, total, eta) for t, done, total, eta in seen if 0 < done < total / 2 and t > t0]
    assert len(early) >= 5, seen
    for t, done, total, eta in early:
        assert eta is not None and 0.67 <= eta / (end - t) <= 1.5, (t - t0, done, total, eta, end - t)
    t, done, total, _ = early[0]
    by_rows = (total - done) / (done / (t - t0))  # what rows a second since the start say
    assert by_rows / (end - t) < 0.4, by_rows / (end - t)  # the case under test: rows alone are far off


def test_progress_lines_count_the_embed_phase_in_tokens(monkeypatch):
    """`ov index --progress` off a terminal prints an ETA too: 50 rows of 10 tokens, then
    50 of 190, at 100 tokens a second. 30 rows in, 97 s are left; rows a second since the
    start said 7 s."""
    from io import StringIO

    from ov.cli import run

    clock = _Clock()
    monkeypatch.setattr(run, "time", SimpleNamespace(monotonic=clock))
    out = StringIO()
    lines = run.Progress(True, color=False, stream=out)
    tell = getattr(lines, "work", None) or (lambda done, total: None)
    tell(0, 10_000)
    lines("embed", 0, 100)
    for done in range(5, 35, 5):  # a report every 5 rows of 10 tokens: 0.5 s each
        clock.t += 0.5
        tell(done * 10, 10_000)
        lines("embed", done, 100)
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("ov: embedding 30/100 rows (30%), eta "), last
    assert 90 <= float(last.rsplit("eta ", 1)[1].rstrip("s")) <= 105, last


def test_the_rate_forgets_a_faster_past_within_a_minute():
    """Two minutes at 100 tokens a second, then the machine gets busy (25 a second): a
    minute later the rate says about 25, where one since the start said 75."""
    from ov.worker import Throughput

    rate = Throughput(0.0, 0.0)
    t = done = 0.0
    for speed, seconds in ((100.0, 120), (25.0, 60)):
        for _ in range(seconds // 4):  # a report every 4 s
            t, done = t + 4, done + 4 * speed
            rate.update(t, done)
    assert rate.rate is not None and 25 <= rate.rate <= 30
    assert done / t == 75


def test_the_rate_is_none_until_work_is_done():
    from ov.worker import Throughput

    rate = Throughput(10.0, 5.0)
    assert rate.rate is None
    rate.update(12.0, 5.0)  # time passed, nothing done
    assert rate.rate is None
    rate.update(14.0, 9.0)
    assert 1.0 < rate.rate < 1.1  # 4 tokens in 4 s, the idle seconds weighing less (older)


def test_token_cost_prices_a_row_by_its_tokens_not_its_characters():
    """Long chunks hold more blanks and long words: the tokens per character fall with
    the length, and the estimate follows the sample, not the characters."""
    from ov.indexer import TokenCost

    samples = [(40, 20)] * 16 + [(400, 120)] * 16  # 0.5 tokens a character, then 0.3
    cost = TokenCost(samples)
    assert cost(40) == pytest.approx(20 + indexer.ROW_TOKENS)
    assert cost(400) == pytest.approx(120 + indexer.ROW_TOKENS)
    assert cost(400) / cost(40) < 7  # characters say 10
    assert cost(100_000) == cost.cap + indexer.ROW_TOKENS  # the model cuts a text at its window
    assert cost.total([(1, 40), (2, 400)]) == pytest.approx(cost(40) + cost(400))
    assert TokenCost([])(300) == indexer.ROW_TOKENS


def test_the_embed_phase_tells_its_tokens_to_a_hook_that_asks(tree):
    """Told before each report, ending with all of them done; a copy of a text embedded
    before costs next to nothing, and the total drops by what it saved."""
    root = tree({**_mixed(40, 6), "dup/a.txt": "tide tables for harbour 3\n"})
    db = root / ".ov" / "index.db"
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    calls: list[tuple] = []

    class Hook:
        def __call__(self, phase, done, total):
            calls.append(("rows", phase, done, total))

        def work(self, done, total):
            calls.append(("tokens", done, total))

    complete_index(db, progress=Hook())
    embed = [c for c in calls if c[0] == "tokens" or c[1] == "embed"]
    assert embed[0][0] == "tokens" and all(a[0] == "tokens" and b[0] == "rows" for a, b in zip(embed[::2], embed[1::2]))
    first, last = embed[0], embed[-2]
    assert first[1] == 0 and last[1] == last[2] > 0
    assert last[2] < first[2]  # the copies' tokens came off the total
    assert embed[-1][2] == embed[-1][3]  # every row done


_SLOW_SITE = '''
import os, time
if os.environ.get("OV_TEST_TOKEN_S"):
    from ov import embed

    class _Slow(embed.HashEmbedder):
        """A model whose time is its tokens (sleeping: the machine's load leaves it be)."""

        def embed(self, texts, batch_size=4):
            time.sleep(float(os.environ["OV_TEST_TOKEN_S"]) * sum(self.count_tokens(t) for t in texts))
            return super().embed(texts)

    embed.HashEmbedder = _Slow
'''


def test_status_during_a_worker_run_gives_a_finite_and_honest_eta(tree, tmp_path, monkeypatch):
    """`ov status -o json` while a real worker embeds the short rows of a tree whose long
    rows come last: a finite `eta_s` within a factor of two of the time that was left
    (rows a second said a third of it), and the tokens it counts."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SLOW_SITE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OV_TEST_TOKEN_S", "0.002")
    root = tree(_mixed(100, 20))
    db = root / ".ov" / "index.db"
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    assert worker.spawn(db) is not None
    deadline = time.monotonic() + 60
    st: dict = {}
    while not (st.get("phase") == "embed" and st.get("eta_s") is not None):  # a rate, early on
        assert time.monotonic() < deadline, f"the worker reported no embedding rate: {st}"
        time.sleep(0.05)
        st = worker_state(db) or {}
    before = time.monotonic()
    r = run_subprocess(["status", "-o", "json"], cwd=root)
    after = time.monotonic()
    bg = r.json["result"]["background"]
    while worker_state(db) is not None:
        assert time.monotonic() < deadline + 60, "the worker did not finish"
        time.sleep(0.05)
    end = time.monotonic()
    assert bg["phase"] == "embed" and bg["done"] < bg["total"] / 2, bg
    assert isinstance(bg["eta_s"], float) and bg["eta_s"] < float("inf")
    # the state `ov status` read was written between `before` (or a little earlier) and `after`
    assert bg["eta_s"] / (end - after) >= 0.5 and bg["eta_s"] / (end - before) <= 2.0, (bg, end - before, end - after)
    assert 0 < bg["tokens_done"] < bg["tokens_total"] and bg["tokens_rate"] > 0
