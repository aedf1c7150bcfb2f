"""Answer first, vectors after (issue 13): the background worker, coverage in results,
line progress off a terminal, and files that are never embedded."""

from __future__ import annotations

import json
import os
import subprocess
import random
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import make_tree, run_inprocess, run_subprocess
from ov.engine import VECTORS_NOW_ABSTRACTS, VECTORS_NOW_FILES
from ov.indexer import IndexOptions, embeddable, worker_state
from ov.store import NO_VECTOR, SCHEMA_VERSION, Store

PROSE = "# Notes {i}\n\nThe tide tables for harbour {i} list high water. Boats leave at dawn.\n\n" \
        "A second paragraph about lighthouse {i} and its keeper. The lamp turns all night.\n"


def _many(n: int) -> dict[str, str]:
    files = {f"docs/n{i:03d}.md": PROSE.format(i=i) for i in range(n)}
    files["src/parse.py"] = 'def parse_args(argv):\n    """Parse command line arguments."""\n    return argv\n'
    return files


def _wait_worker(db: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while worker_state(db) is not None:
        assert time.monotonic() < deadline, "the background worker did not finish"
        time.sleep(0.1)


def _db(root: Path) -> Path:
    return root / ".ov" / "index.db"


# ---- coverage and warnings ---------------------------------------------------------------


def test_no_embed_index_says_keywords_ran_and_find_is_unsupported(ov, tree):
    root = tree(_many(3))
    assert ov("index", root, "--no-embed").code == 0
    r = ov("search", "tide tables", "--json", cwd=root)
    assert r.code == 0, r.out + r.err
    res = r.json["result"]
    assert res["search_type"] == "keywords" and res["branches"] == ["keywords"]
    cov = res["coverage"]
    assert cov["embedded"] == 0 and cov["embeddable"] > 0 and cov["pending"] == 0
    assert any("keywords alone" in w and "--no-embed" in w for w in res["warnings"])
    assert "keywords alone" in r.err
    # context mode says the same, in the same fields (a review of a JS tree: its JSON had
    # only the warning's words)
    ctx = ov("search", "tide tables", "--mode", "context", "--json", cwd=root).json["result"]
    assert (ctx["search_type"], ctx["branches"], ctx["coverage"]) == (res["search_type"], res["branches"], cov)
    assert any("keywords alone" in w for w in ctx["warnings"])
    r = ov("find", "tide tables", "--json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "unsupported"
    # asked for keywords: nothing to warn about
    r = ov("search", "tide tables", "--search-type", "keywords", "--json", cwd=root)
    assert r.json["result"]["warnings"] == [] and r.json["result"]["branches"] == ["keywords"]


def test_full_and_partial_coverage(ov, tree):
    root = tree(_many(3))
    assert ov("index", root).code == 0
    r = ov("search", "tide tables", "--json", cwd=root)
    res = r.json["result"]
    assert res["search_type"] == "hybrid" and res["branches"] == ["keywords", "semantic"]
    assert res["coverage"]["embedded"] == res["coverage"]["embeddable"] > 0
    assert res["coverage"]["ratio"] == 1.0 and res["warnings"] == []
    ctx = ov("search", "tide tables", "--mode", "context", "--json", cwd=root).json["result"]
    assert ctx["branches"] == ["keywords", "semantic"] and ctx["coverage"] == res["coverage"]
    # new files indexed without vectors: the vectors present are a part of those to come
    for i in range(3, 9):
        (root / "docs" / f"n{i:03d}.md").write_text(PROSE.format(i=i))
    assert ov("index", root, "--no-embed").code == 0
    for cmd in ("search", "find"):
        res = ov(cmd, "tide tables", "--json", cwd=root).json["result"]
        cov = res["coverage"]
        assert 0 < cov["embedded"] < cov["embeddable"] and cov["pending"] == cov["embeddable"] - cov["embedded"]
        assert any("partial vectors" in w for w in res["warnings"]), res["warnings"]
    assert ov("index", root).code == 0  # the next full run completes them
    cov = ov("find", "tide tables", "--json", cwd=root).json["result"]["coverage"]
    assert cov["embedded"] == cov["embeddable"]


# ---- first use and the background worker -------------------------------------------------


def test_first_search_answers_from_both_branches_and_the_worker_completes(tree):
    """The first search answers before the worker has stored a vector: it computes the
    vectors of its best keyword hits' rows itself (`engine._VectorsNow`), says how many,
    and writes none of them (the worker does)."""
    root = tree(_many(40))
    # (the worker waits 5 s: on a loaded machine it had added vectors before the answer)
    r = run_subprocess(["search", "tide tables", "--json", "--explain"], cwd=root, env={"OV_WORKER_DELAY": "5"})
    assert r.code == 0, r.err
    res = r.json["result"]
    assert res["hits"] and res["branches"] == ["keywords", "semantic"] and res["search_type"] == "hybrid"
    cov = res["coverage"]
    assert cov["embedded"] == 0 and cov["pending"] > 0 and 0 < cov["computed"] <= VECTORS_NOW_FILES + VECTORS_NOW_ABSTRACTS
    assert any(f"on the vectors it computed for its best keyword hits ({cov['computed']} rows)" in w
               and "no vectors yet" in w for w in res["warnings"]), res["warnings"]
    assert any("semantic" in h["scores"] for h in res["hits"]), res["hits"][:3]
    assert "first use" in r.err and "background" in r.err
    _wait_worker(_db(root))
    with Store.open(_db(root)) as s:
        emb, total = s.coverage()
        assert emb == total > 0
        assert s.trigrams_complete()
    res = run_subprocess(["search", "tide tables", "--json"], cwd=root).json["result"]
    assert res["branches"] == ["keywords", "semantic"] and res["warnings"] == []


@pytest.mark.model
def test_index_background_writes_keywords_now_and_leaves_the_vectors_to_a_worker(tree):
    """A review of a JS tree: a file edited while the first vectors were computed (23
    minutes) was searchable only after a foreground `ov index`, which stopped the worker and
    embedded everything left (its ETA 1,905 s). `--background` writes the keyword rows of
    every file and starts the worker again for the vectors."""
    root = tree(_many(40))
    r = run_subprocess(["index", "--background"], cwd=root, env={"OV_WORKER_DELAY": "5"})
    assert r.code == 0, r.err
    assert "vectors are being added in the background (pid" in r.err and ", 0 embedded" in r.err, r.err
    (root / "docs" / "late.md").write_text("# Late\n\nThe quokka ferry timetable.\n")
    r = run_subprocess(["index", "--background", "-o", "json"], cwd=root, env={"OV_WORKER_DELAY": "3"})
    assert r.code == 0 and r.json["result"]["added"] == 1, r.out
    assert r.json["result"]["worker_pid"] == worker_state(_db(root))["pid"], r.out  # a script can follow it
    assert "stopping the background worker" in r.err and "starts it again" in r.err, r.err
    hits = run_subprocess(["search", "quokka ferry", "--search-type", "keywords", "--json"], cwd=root)
    assert [h["path"] for h in hits.json["result"]["hits"]] == ["docs/late.md"]
    _wait_worker(_db(root))
    with Store.open(_db(root)) as s:
        emb, total = s.coverage()
        assert emb == total > 0 and s.trigrams_complete()
    # the worker's vectors are the model's: a question in other words finds the late file
    res = run_subprocess(["find", "boat schedule for the quokka", "--json"], cwd=root).json["result"]
    assert res["hits"][0]["path"] == "docs/late.md" and res["warnings"] == [], res
    # a complete index: nothing for a worker, none is started
    r = run_subprocess(["index", "--background"], cwd=root)
    assert r.code == 0 and "in the background" not in r.err and worker_state(_db(root)) is None, r.err
    for other in ("--no-embed", "--watch", "--full"):
        r = run_subprocess(["index", "--background", other, "-o", "json"], cwd=root)
        assert r.code == 2 and r.json["error"]["code"] == "invalid_argument" and other in r.json["error"]["message"]
    r = run_subprocess(["index", "--background", "--no-embed", "--full", "-o", "json"], cwd=root)
    assert r.json["error"]["message"].endswith("it takes no --no-embed, --full"), r.out


def test_a_small_trees_first_search_embeds_it_and_answers_from_both_branches(tree):
    """A folder of a few notes needs no worker: its first search embeds the rows itself
    (`worker.FIRST_INLINE_ROWS`) and answers as from a complete index, with no warning."""
    root = tree(_many(3))
    # (a budget no loaded machine runs past: the rule tested is the row count's)
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root, env={"OV_FIRST_BUDGET": "60"})
    assert r.code == 0, r.err
    res = r.json["result"]
    assert res["branches"] == ["keywords", "semantic"] and res["warnings"] == [], res
    cov = res["coverage"]
    assert cov["embedded"] == cov["embeddable"] > 0 and cov["pending"] == 0 and cov["background"] is False
    assert "first use" in r.err and "in the background (pid" not in r.err, r.err
    assert worker_state(_db(root)) is None
    with Store.open(_db(root)) as s:
        assert s.trigrams_complete()
    assert "embedded in" in r.err and ", 0 embedded" not in r.err, r.err


def test_a_first_search_leaves_more_rows_than_it_embeds_itself_to_the_worker(tree):
    root = tree(_many(3))
    # (computing the best hits' vectors turned off: the hybrid runs on keywords alone)
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root,
                       env={"OV_FIRST_INLINE_ROWS": "2", "OV_WORKER_DELAY": "2", "OV_VECTORS_NOW_FILES": "0"})
    assert r.code == 0, r.err
    res = r.json["result"]
    assert res["branches"] == ["keywords"] and res["coverage"]["pending"] > 0
    assert res["coverage"]["computed"] == 0 and any("keywords alone" in w for w in res["warnings"])
    assert "in the background (pid" in r.err, r.err
    # one worker, named once: the search that built the index started no second one (whose
    # pid it gave, though that one found the first and exited)
    assert r.err.count("(pid ") == 1 and "started a background worker" not in r.err, r.err
    _wait_worker(_db(root))
    with Store.open(_db(root)) as s:
        emb, total = s.coverage()
        assert emb == total > 0


def test_the_worker_notice_comes_after_the_progress_bar_is_gone(tree, monkeypatch):
    """On a terminal the bar's live line took in the "vectors are being added in the
    background" notice; it is now given once the bar has closed."""
    from ov import api, worker

    root = tree(_many(3))
    monkeypatch.setattr(worker, "FIRST_INLINE_ROWS", 2)  # more rows than that: a worker starts
    events: list[str] = []

    class Bar:
        def __enter__(self):
            events.append("bar")
            return lambda *a: None

        def __exit__(self, *exc):
            events.append("bar closed")

    api.index(root, first_use=True, progress=Bar(), notice=events.append)
    assert events[:2] == ["bar", "bar closed"] and len(events) == 3, events
    assert events[2].startswith("vectors are being added in the background (pid")
    _wait_worker(_db(root))


def test_a_first_searchs_own_embedding_stops_at_its_deadline_and_the_worker_finishes(tree, monkeypatch):
    """The first search's own embedding stops at its budget's end (heard every EMBED_STEP
    texts) with what it did committed; the rest is the worker's."""
    from ov import worker
    from ov.indexer import EMBED_STEP, IndexLock, complete_index, index_tree
    from ov.model import IndexReport

    root = tree(_many(20))
    db = _db(root)
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    with Store.open(db) as s:
        emb, total = s.coverage()
    assert emb == 0 and EMBED_STEP < total <= worker.FIRST_INLINE_ROWS  # the case under test
    report = IndexReport(root=str(root))
    from ov import embed

    ran = []

    class Counting(embed.HashEmbedder):
        def embed(self, texts):
            ran.append(len(texts))
            return super().embed(texts)

    monkeypatch.setattr(embed, "load_embedder", lambda *a, **k: Counting())

    def stop() -> bool:  # the budget ends once the model has run
        return bool(ran)

    with IndexLock(db):
        assert worker._finish_small(db, report, None, stop) is False
    with Store.open(db) as s:
        assert s.coverage() == (EMBED_STEP, total)  # one step, then the deadline was heard
    assert report.embedded == EMBED_STEP
    complete_index(db)
    with Store.open(db) as s:
        assert s.coverage() == (total, total)


@pytest.mark.model  # the real model: its worker runs for minutes, so it is watched for sure
def test_status_shows_the_worker_and_index_stop_stops_it(tree):
    from ov.worker import stop

    root = tree(_many(600))
    # (the suite runs its workers at nice 0, tests/conftest.py; a user's run at 10)
    r = run_subprocess(["search", "tide tables", "-n", "1"], cwd=root, env={"OV_WORKER_NICE": "10"})
    assert r.code == 0, r.err
    state = worker_state(_db(root))
    deadline = time.monotonic() + 60
    while state is not None and state["phase"] == "starting" and time.monotonic() < deadline:
        time.sleep(0.1)  # the worker's own state comes once its priority is set (ov.worker.run)
        state = worker_state(_db(root))
    assert state is not None, "the worker finished before it could be watched"
    pid = int(state["pid"])
    os.kill(pid, signal.SIGSTOP)  # held still while it is looked at
    try:
        st = run_subprocess(["status", "--json"], cwd=root).json["result"]
        bg = st["background"]
        assert bg is not None and bg["pid"] == pid
        assert bg["phase"] in ("starting", "start", "trigram", "embed")
        text = run_subprocess(["status"], cwd=root).out
        assert "vector rows:" in text and f"pid {pid}" in text
        assert _autogroup_nice(pid) in (None, 10)  # lowered for every other session too
        assert int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16]) == 10  # its nice
    finally:
        os.kill(pid, signal.SIGCONT)
    assert stop(_db(root)) == pid  # SIGTERM, then it lets go of the index
    assert worker_state(_db(root)) is None
    # ... and its process is gone when "stopped" is said (`ps` showed it a second later)
    from ov.indexer import process_alive
    assert not process_alive(pid)
    r = run_subprocess(["index", ".", "--stop", "--json"], cwd=root)
    assert r.code == 0 and r.json["result"] == {"stopped": False, "pid": None}
    r = run_subprocess(["index", ".", "--stop"], cwd=root)
    assert r.code == 0 and "no background worker" in r.err
    # the index is usable, and `ov index` completes it in the foreground
    assert run_subprocess(["search", "lighthouse keeper", "--json", "--no-auto-index"], cwd=root).code == 0
    _wait_worker(_db(root))
    assert run_subprocess(["index", "."], cwd=root).code == 0
    with Store.open(_db(root)) as s:
        emb, total = s.coverage()
        assert emb == total and s.trigrams_complete() and s.integrity_ok()


def test_the_workers_group_nice_waits_out_the_kernels_rate_limit():
    """Without CAP_SYS_ADMIN the kernel takes one autogroup write per tenth of a second from
    the whole machine (EAGAIN for the rest): a worker started just after another one still
    lowers its group. Root drops the capability with setpriv, as a CI runner lacks it. On a
    kernel without autogroups the worker's own nice is lowered all the same, and nothing
    waits on a group that is not there."""
    grouped = _autogroup_nice(os.getpid()) is not None
    code = ("import os, time\n"
            "import ov.worker as w\n"
            "w.NICE = 10\n"
            "def group():\n"
            "    try:\n"
            "        return open('/proc/self/autogroup').read().split('nice')[1].strip()\n"
            "    except (OSError, IndexError):\n"
            "        return '-'\n"
            "try:\n"
            "    open('/proc/self/autogroup', 'w').write('3')\n"  # the machine's turn, taken
            "except OSError:\n"
            "    pass\n"
            "t0 = time.monotonic()\n"
            "w.lower_priority()\n"
            "print(group() if %r else '-', os.nice(0), round(time.monotonic() - t0, 1))\n" % grouped)
    cmd = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        from conftest import require_tool  # noqa: PLC0415

        require_tool("setpriv", "util-linux")
        cmd = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, start_new_session=True, timeout=60)
    assert r.returncode == 0, r.stderr
    group, nice, waited = r.stdout.split()
    assert (group, nice) == ("10" if grouped else "-", "10")
    assert float(waited) <= 2.5  # AUTOGROUP_PATIENCE at most, never a hang


def _autogroup_nice(pid: int) -> int | None:
    """The nice value of the scheduler group of `pid`'s session (None: no autogroups)."""
    try:
        if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1":
            return None
        return int(Path(f"/proc/{pid}/autogroup").read_text().split("nice")[1])
    except (OSError, IndexError, ValueError):
        return None


def _answers(root: Path) -> list:
    out = []
    for q in ("tide tables harbour 7", "lighthouse keeper lamp", "parse arguments"):
        res = run_subprocess(["search", q, "-n", "5", "--json"], cwd=root).json["result"]
        out.append([(h["path"], h["start_line"]) for h in res["hits"]])
    return out


def test_worker_killed_at_random_points_leaves_a_usable_index(tree, tmp_path):
    rnd = random.Random(13)
    files = _many(300)
    clean = make_tree(tmp_path / "clean", files)
    assert run_subprocess(["index", "."], cwd=clean).code == 0
    want = _answers(clean)
    kills = []
    for round_ in range(3):
        root = make_tree(tmp_path / f"k{round_}", files)
        # (keywords alone, so the answer comes as soon as it can: the worker's life is short)
        assert run_subprocess(["search", "tide", "-n", "1"], cwd=root, env={"OV_VECTORS_NOW_FILES": "0"}).code == 0
        # a random moment of the worker's short life: starting, walking, trigrams, vectors
        # (from when it is seen: on a loaded machine it took longer to start than the sleep)
        deadline = time.monotonic() + 10
        while worker_state(_db(root)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rnd.uniform(0.0, 0.15))
        state = worker_state(_db(root))
        if state is not None:
            os.kill(int(state["pid"]), signal.SIGKILL)
            kills.append(state["phase"])
            time.sleep(0.2)
        with Store.open(_db(root)) as s:
            assert s.integrity_ok()
            emb, total = s.coverage()
            assert emb <= total
        # usable as it is: grep and search answer; then the next run completes it
        assert run_subprocess(["grep", "-F", "lighthouse 7 ", "-c"], cwd=root).code == 0
        assert run_subprocess(["search", "tide tables", "--json"], cwd=root).code == 0
        _wait_worker(_db(root))  # the search above may have started a worker again
        assert run_subprocess(["index", "."], cwd=root).code == 0
        with Store.open(_db(root)) as s:
            emb, total = s.coverage()
            assert emb == total and s.trigrams_complete() and s.integrity_ok()
            # no vector lost or doubled: one per row that has one
            assert s.q1("SELECT count(*) FROM chunks_vec") == emb
        assert _answers(root) == want
    assert kills, "no round caught the worker running"


# ---- progress off a terminal ---------------------------------------------------------------


def test_progress_lines_when_stderr_is_a_file(tree, tmp_path):
    root = tree(_many(30))
    log = tmp_path / "progress.log"
    with open(log, "w") as err:
        import subprocess

        p = subprocess.run([sys.executable, "-m", "ov", "index", str(root), "--progress"],
                           stdout=subprocess.PIPE, stderr=err, env={**os.environ, "OV_EMBEDDER": "hash"},
                           timeout=300)
    assert p.returncode == 0
    lines = log.read_text().splitlines()
    # the scan's last count, said once: the first tick alone read "scanning 1 files"
    assert [ln for ln in lines if ln.startswith("ov: scanned ")] == ["ov: scanned 31 files"], lines
    assert lines.index("ov: scanned 31 files") < min(i for i, ln in enumerate(lines) if ln.startswith("ov: embedding"))
    assert not [ln for ln in lines if ln.startswith("ov: scanning 1 ")], lines
    embed = [ln for ln in lines if ln.startswith("ov: embedding ")]
    assert embed and embed[-1].split()[2].split("/")[0] == embed[-1].split()[2].split("/")[1]
    assert embed[-1].split()[3] == "rows", embed  # each line names what it counts
    assert not any("\x1b" in ln or "\r" in ln for ln in lines)  # plain lines, no bar


# ---- what is never embedded ----------------------------------------------------------------

MINIFIED = "var a=1;" * 400 + "\n"


def test_minified_lock_and_map_files_are_not_embedded(ov, tree):
    root = tree({
        "app.min.js": "function zebrafinch(){return 1}" + MINIFIED,
        "bundle.js": "function zebrafinch(){return 2}" + MINIFIED * 3,
        "package-lock.json": '{"name": "zebrafinch", "lockfileVersion": 3}\n',
        "app.js.map": '{"version":3,"sources":["zebrafinch.ts"]}\n',
        "gen.go": "// Code generated by protoc. DO NOT EDIT.\npackage zebrafinch\n",
        "dist/zebra.js": "function zebrafinch() {\n  return 3;\n}\n//# sourceMappingURL=zebra.js.map\n",
        "cs/messages.generated.json": '{"Zebrafinch_1001": "Zebrafinch"}\n',
        "notes.md": "# Zebrafinch\n\nThe zebrafinch sings at dawn.\n",
    })
    r = ov("index", root, "-o", "json")
    assert r.code == 0
    with Store.open(_db(root)) as s:
        rows = dict(s.rows("SELECT f.path, max(c.embedded) FROM chunks c JOIN files f ON f.id = c.file_id "
                           "GROUP BY f.path"))
        assert s.q1("SELECT count(*) FROM chunks WHERE embedded = 0") == 0
    assert rows.pop("notes.md") == 1
    assert set(rows.values()) == {NO_VECTOR}, rows
    # keyword search and grep still find them; the default ranking leaves them out
    kw = ov("search", "zebrafinch", "--search-type", "keywords", "--json", cwd=root).json["result"]
    assert {"app.min.js", "package-lock.json", "gen.go", "dist/zebra.js"} <= {h["path"] for h in kw["hits"]}
    hy = ov("search", "zebrafinch", "--json", cwd=root).json["result"]
    assert [h["path"] for h in hy["hits"]] == ["notes.md"]
    assert hy["coverage"]["embedded"] == hy["coverage"]["embeddable"]
    # ... and says so: on the Go tree the HTTP/2 code (h2_bundle.go, "Code generated") was
    # missing from the default ranking without a word
    left = [w for w in hy["warnings"] if "generated, minified or data file(s) hold the query's words" in w]
    assert len(left) == 1 and "--search-type keywords" in left[0], hy["warnings"]
    assert not any("generated, minified" in w for w in
                   ov("search", "sings at dawn", "--json", cwd=root).json["result"]["warnings"])
    # `ov find` scoped to them answered nothing, silent (a research tree's `-t csv`); it now
    # says so when its page is short, as the hybrid does
    fd = ov("find", "zebrafinch", "-t", "json", "--json", cwd=root)
    assert fd.code == 1 and fd.json["result"]["hits"] == []
    assert any("generated, minified or data file(s) hold the query's words" in w
               for w in fd.json["result"]["warnings"]), fd.json["result"]["warnings"]
    # a threshold none of them reaches by its keywords says nothing of them
    assert not any("generated, minified" in w for w in ov(
        "search", "zebrafinch", "--threshold", "0.999", "--json", cwd=root).json["result"]["warnings"])
    g = ov("grep", "-F", "zebrafinch", "-l", cwd=root)
    assert "app.min.js" in g.out and "package-lock.json" in g.out
    st = ov("status", "--json", cwd=root).json["result"]
    assert st["not_embedded_rows"] > 0


def test_hybrid_over_overviews_leaves_out_the_files_not_embedded_not_the_overviews(ov, tree):
    """`-L 1,2` in the default ranking: overview rows never have a vector, in any file, so
    they are not what marks a minified file; its passages are. Before, every overview row
    was left out with the minified files, and `-L 1,2` answered as `-L 2`."""
    root = tree({
        "notes.md": "# Zebrafinch care\n\n## Feeding the zebrafinch\n\nSeeds and water every day "
                    "for the birds in the aviary.\n\n## Housing\n\nA large cage with perches.\n",
        "app.min.js": "function zebrafinch(){return 1}" + MINIFIED,
    })
    assert ov("index", root).code == 0
    kw = ov("search", "zebrafinch", "-L", "1", "--search-type", "keywords", "--json", cwd=root)
    assert sorted((h["path"], h["level"]) for h in kw.json["result"]["hits"]) == [
        ("app.min.js", 1), ("notes.md", 1)]  # both files have an overview row that matches
    hy = ov("search", "zebrafinch", "-L", "1,2", "--all-chunks", "--json", cwd=root).json["result"]
    got = {(h["path"], h["level"]) for h in hy["hits"]}
    assert ("notes.md", 1) in got and ("notes.md", 2) in got, got
    assert not any(p == "app.min.js" for p, _ in got), got
    assert hy["warnings"] == []


def test_embed_skip_config_replaces_the_list(ov, tree):
    root = tree({"data.csv": "a,b\n1,2\n", "x.min.js": "var q=1;\n", "notes.md": "hello\n"})
    (root / ".ov").mkdir()
    (root / ".ov" / "config.toml").write_text('embed-skip = ["*.md"]\n')
    assert ov("index", root).code == 0
    with Store.open(_db(root)) as s:
        rows = dict(s.rows("SELECT f.path, max(c.embedded) FROM chunks c JOIN files f ON f.id = c.file_id "
                           "GROUP BY f.path"))
    assert rows == {"data.csv": 1, "x.min.js": 1, "notes.md": NO_VECTOR}


@pytest.mark.parametrize("path,text,want", [
    ("a.py", "def f():\n    return 1\n", True),
    ("a.min.css", "a{b:c}", False),
    ("Cargo.lock", "[[package]]\n", False),
    ("x.js", "x=1;" * 2000, False),  # one long line: minified
    ("doc.md", "word " * 2000, True),  # a long prose paragraph is prose
    ("abstract.txt", "word " * 2000, True),
    ("big.json", '{"k": "' + "v" * 5000 + '"}', False),
    ("x_pb2.py", "x = 1\n", False),
    # generated and translated files, and a build's output (it names its source map)
    ("lib/cs/diagnosticMessages.generated.json", '{"Unterminated_string_literal_1002": "x"}\n', False),
    ("loc/lcl/csy/diagnosticMessages.json.lcl", "<LCX>\n</LCX>\n", False),
    ("po/de.po", 'msgid "Open"\nmsgstr "Offnen"\n', False), ("npm-shrinkwrap.json", "{}\n", False),
    ("dist/axios.js", "function a() {}\n//# sourceMappingURL=axios.js.map\n", False),
    ("dist/app.css", "a { b: c }\n/*# sourceMappingURL=app.css.map */\n", False),
    ("lib/axios.js", "// see the sourceMappingURL docs\nfunction a() {}\n" + "x();\n" * 200, True),
    # ... not code that writes the comment, nor a declaration file (the package's API)
    ("lib/appendMap.js", "function f(code, file) {\n  return code + '\\n//# sourceMappingURL=' + file;\n}\n", True),
    ("types/index.d.ts", "/** Sends a request. */\nexport declare function get(): void;\n"
                         "//# sourceMappingURL=index.d.ts.map\n", True),
])
def test_embeddable(path, text, want):
    assert embeddable(path, text, IndexOptions()) is want


def test_identical_chunks_are_embedded_once(ov, tree):
    body = "# Same\n\nThis exact text appears in three files. It is embedded once.\n"
    root = tree({"a.md": body, "b.md": body, "c/d.md": body})
    r = ov("index", root, "-o", "json")
    rep = r.json["result"]
    with Store.open(_db(root)) as s:
        rows = s.q1("SELECT count(*) FROM chunks WHERE embedded = 1")
        distinct = s.q1("SELECT count(DISTINCT hash) FROM chunks WHERE embedded = 1")
    assert rows == 3 * distinct
    assert rep["embedded"] == distinct and rep["reused"] == rows - distinct


def test_worker_off_indexes_everything_first(tree):
    root = tree(_many(3))
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root, env={"OV_BACKGROUND": "0"})
    res = r.json["result"]
    assert res["branches"] == ["keywords", "semantic"] and res["warnings"] == []
    assert not (root / ".ov" / "index.db.worker").exists()
    assert worker_state(_db(root)) is None


def test_pool_and_inline_write_the_same_index(tree, monkeypatch):
    """Files read and chunked in pool processes give the rows reading them here gives, also
    when the pool is handed a few files at a time (`IN_FLIGHT`: the results waiting for the
    writer are bounded)."""
    import ov.indexer as ix

    files = _many(12)
    files["big.min.js"] = MINIFIED
    files["bin.dat"] = b"\x00\x01binary"
    rows = []
    bounded = ix._bounded_imap
    handed: list[int] = []

    def spy(pool, fn, jobs, window=None):  # the pool's files go through the window
        handed.append(ix.IN_FLIGHT)
        return bounded(pool, fn, jobs, window)

    monkeypatch.setattr(ix, "_bounded_imap", spy)
    for jobs, inline, window in (("1", 200, 512), ("2", 0, 512), ("2", 0, 3)):
        root = tree(files, name=f"t{jobs}-{window}")
        monkeypatch.setenv("OV_INDEX_JOBS", jobs)
        monkeypatch.setattr(ix, "INLINE_FILES", inline)
        monkeypatch.setattr(ix, "IN_FLIGHT", window)
        rep = ix.index_tree(root, None, IndexOptions(embed=False))
        assert (rep.added, rep.skipped) == (14, 1)
        with Store.open(_db(root)) as s:
            rows.append(s.rows("SELECT f.path, c.level, c.start, c.end, c.text, c.hash, c.embedded "
                               "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY 1, 2, 3, 4"))
            assert s.trigrams_complete()
    assert rows[0] == rows[1] == rows[2] and rows[0]
    assert handed == [512, 3]


def test_the_pool_is_handed_files_a_window_ahead_of_the_writer():
    """pool.imap alone takes every job at once and keeps every result until the writer
    takes it (1.5 GB on the kernel); `_bounded_imap` hands out at most a window ahead."""
    import ov.indexer as ix

    pulled = []

    def jobs():
        for i in range(100):
            pulled.append(i)
            yield i

    class Results:  # multiprocessing's IMapIterator: `next` waits at most `timeout`
        def __init__(self, items):
            self.items = iter(items)

        def next(self, timeout=None):
            return next(self.items)

    class Pool:  # imap as the real one gives it: the whole part taken at once, results in order
        def imap(self, fn, part, chunksize=1):
            return Results([fn(x) for x in list(part)])

    got = []
    for r in ix._bounded_imap(Pool(), lambda x: x * 2, jobs(), window=10):
        got.append(r)
        assert len(pulled) <= len(got) + 10
    assert got == [2 * i for i in range(100)]


def test_first_search_time_budget_answers_from_what_was_read(tree):
    """Past the time budget a first search answers from the files read so far, says so,
    and the worker reads the rest (here a budget of 0: no file is read before the answer)."""
    root = tree(_many(30))
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root, env={"OV_FIRST_BUDGET": "0"})
    assert r.code in (0, 1), r.err
    res = r.json["result"]
    assert res["coverage"]["keywords_complete"] is False and res["coverage"]["files"] == 0
    # the share read, not a bare count ("410 files read so far" were 5 % of the Go stdlib)
    total = res["coverage"]["files_total"]
    assert any(f"still being built: 0 of {total} files (0%) read so far" in w for w in res["warnings"]), res
    assert "time budget reached" in r.err
    _wait_worker(_db(root))
    res = run_subprocess(["search", "tide tables", "--json"], cwd=root).json["result"]
    assert res["coverage"]["keywords_complete"] is True and res["warnings"] == []
    assert res["coverage"]["files_total"] is None
    assert res["hits"] and res["branches"] == ["keywords", "semantic"]
    with Store.open(_db(root)) as s:
        assert s.q1("SELECT count(*) FROM files") == 31 == total
        emb, total = s.coverage()
        assert emb == total and s.trigrams_complete()


def test_a_cut_first_walk_gives_its_share_or_a_lower_bound():
    from ov.engine import coverage_warnings

    cov = {"keywords_complete": False, "files": 412, "files_total": 8127, "files_counted": None,
           "background": True, "embedded": 0, "embeddable": 0, "pending": 0}
    assert "412 of 8127 files (5%) read so far" in coverage_warnings("keywords", cov)[0]
    cov.update(files_total=None, files_counted=50_000)  # the count ran out of time
    assert "412 of more than 50000 files read so far" in coverage_warnings("keywords", cov)[0]
    cov.update(files_counted=None)
    assert "412 files read so far" in coverage_warnings("keywords", cov)[0]


def test_a_worker_whose_index_was_deleted_or_replaced_stops(tree, monkeypatch):
    """`rm -rf .ov` under a running worker: it stops at its next batch rather than embed
    into a deleted file beside the next search's own worker."""
    from ov import worker

    root = tree({"a.md": "# A\n\nsome text\n"})
    db = root / ".ov" / "index.db"
    assert run_subprocess(["index", "--no-embed", "."], cwd=root).code == 0
    seen = []

    def fake_complete(db_path, progress=None, stop=None, locked=False, pause=None):
        seen.append(stop())
        os.rename(db, db.with_suffix(".old"))  # deleted: the path names nothing
        seen.append(stop())
        db.write_bytes(b"")  # another file in its place
        seen.append(stop())
        return None

    monkeypatch.setattr(worker, "complete_index", fake_complete)
    assert worker.run(db) == 0
    assert seen == [False, True, True]


def test_a_first_find_waits_for_the_workers_first_vectors(tree):
    """`ov find` on a tree with no index: the keyword rows are built, a worker adds the
    vectors, and the semantic search waits for its first commit (a few seconds at most)
    rather than answering "no results" (exit 1) from an index with no vector yet."""
    root = tree({"cat.md": "# Cats\n\nThe cat sat on the mat.\n", "dog.md": "# Dogs\n\nA dog ran.\n"})
    r = run_subprocess(["find", "cat sat on the mat", "--json"], cwd=root, env={"OV_EMBEDDER": "hash"})
    assert r.code == 0, r.out + r.err
    res = r.json["result"]
    assert res["hits"] and res["coverage"]["embedded"] > 0 and res["branches"] == ["semantic"], res
    _wait_worker(_db(root))


def test_a_first_hybrid_search_no_keyword_matches_waits_for_the_first_vectors(tree):
    """A small notes folder's first `ov search "trip to Japan"` (its note is in Japanese)
    answered nothing (exit 1) in 0.9 s, its JSON naming both branches beside the warning
    that the keywords ran alone; the worker had every vector 2 s later. With no keyword hit
    and no vector, the search waits for the worker's first vectors, as `find` does."""
    root = tree({"メモ/東京旅行.md": "# 東京旅行の計画\n\n来年の春に東京へ行く予定です。\n",
                 **{f"n{i}.md": f"# Note {i}\n\nGroceries and errands, list {i}.\n" for i in range(40)}})
    r = run_subprocess(["search", "zeppelin voyage", "--json"], cwd=root,
                       env={"OV_EMBEDDER": "hash", "OV_FIRST_INLINE_ROWS": "2"})
    try:
        assert r.code == 0, r.out + r.err
        res = r.json["result"]
        assert res["hits"] and res["coverage"]["embedded"] > 0, res
        assert res["branches"] == ["keywords", "semantic"] and res["search_type"] == "hybrid", res
    finally:
        _wait_worker(_db(root))


def test_a_hybrid_search_no_keyword_matches_on_a_big_tree_does_not_wait(tree, monkeypatch):
    """... but not where many rows wait: a big tree's worker writes grep's rows for minutes
    before any vector, and every such query (an agent's too) waited 10 s for nothing."""
    from ov import engine

    monkeypatch.setattr(engine, "FIRST_VECTORS_WAIT_ROWS", 10)
    root = tree({f"n{i}.md": f"# Note {i}\n\nGroceries and errands, list {i}.\n" for i in range(40)})
    env = {"OV_EMBEDDER": "hash", "OV_FIRST_INLINE_ROWS": "2", "OV_WORKER_DELAY": "30"}
    try:
        assert run_subprocess(["index", "--background"], cwd=root, env=env).code == 0
        t0 = time.monotonic()
        r = run_inprocess("search", "zeppelin voyage", "--json", cwd=root, env={"OV_EMBEDDER": "hash"})
        assert time.monotonic() - t0 < engine.FIRST_VECTORS_WAIT_S / 2, r.err
        assert r.code == 1 and r.json["result"]["branches"] == ["keywords"], r.out
    finally:
        run_subprocess(["index", "--stop"], cwd=root, env={"OV_EMBEDDER": "hash"})


def test_a_hybrid_search_with_no_vector_to_read_names_the_keywords_alone(tree):
    """Vectors pending, no worker adding them, and no keyword hit whose vectors the search
    could compute: the keywords ranked alone, and `branches` and `search_type` say so, as the
    warning does (they named both branches)."""
    root = tree({f"n{i}.md": f"# Note {i}\n\nGroceries and errands, list {i}.\n" for i in range(40)})
    env = {"OV_EMBEDDER": "hash"}
    # the worker waits before it writes anything, and is stopped in that wait
    assert run_subprocess(["index", "--background"], cwd=root, env={**env, "OV_WORKER_DELAY": "30"}).code == 0
    assert run_subprocess(["index", "--stop"], cwd=root, env=env).code == 0
    r = run_subprocess(["search", "zeppelin voyage", "--json"], cwd=root, env=env)
    res = r.json["result"]
    assert res["coverage"]["embedded"] == 0 and res["coverage"]["pending"] > 0, res
    assert res["branches"] == ["keywords"] and res["search_type"] == "keywords", res
    assert any("keywords alone" in w for w in res["warnings"]), res["warnings"]


@pytest.mark.model
def test_a_first_find_on_a_fresh_tree_answers_with_the_real_model(tree):
    """`ov find` with no index, on a tree whose rows its first use leaves to a worker (which
    is held back here): it answered `index_busy` after 10 s; it now ranks the vectors it
    computes for its best keyword hits, at once, says so, and starts one worker."""
    files = _many(3)
    files["docs/boats.md"] = "# Sailing\n\nWhen the ferry departs in the early morning, passengers board at the pier.\n"
    root = tree(files)
    r = run_subprocess(["find", "what time do boats leave", "--json"], cwd=root,
                       env={"OV_FIRST_INLINE_ROWS": "2", "OV_WORKER_DELAY": "30"})
    try:
        assert r.code == 0, r.out + r.err
        res = r.json["result"]
        assert res["search_type"] == "semantic" and res["branches"] == ["semantic"], res
        cov = res["coverage"]
        assert cov["embedded"] == 0 and cov["computed"] > 0 and cov["pending"] > 0, cov
        assert any("vectors it computed for the best keyword hits" in w for w in res["warnings"]), res["warnings"]
        # the answer is the model's: its best hit is the passage about boats leaving at dawn
        assert res["hits"][0]["path"].startswith("docs/n") and "Boats leave at dawn" in res["hits"][0]["excerpt"]["text"]
        assert r.err.count("(pid ") == 1, r.err
    finally:
        subprocess.run([sys.executable, "-m", "ov", "index", "--stop"], cwd=root, capture_output=True, timeout=60)


def test_find_with_no_vector_yet_is_busy_not_empty(tree, monkeypatch):
    """With no vector stored yet, `find` ranks the vectors it computes for its best keyword
    hits' rows, and says so. A query no keyword matches has none: while a worker has
    committed no vector, past the wait, index_busy (retryable), so a script retries; an
    index whose vectors are pending with no worker: unsupported, with the command that adds
    them. Never exit 1, which reads as "nothing matched"."""
    from ov import api, engine

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    monkeypatch.setattr(engine, "FIRST_VECTORS_WAIT_S", 0.3)
    root = tree(_many(3))
    api.index(root, embed=False)
    with Store.open(_db(root)) as s, s.tx():
        s.set_meta("embed", "on")  # vectors pending, as a first search leaves them
    with api.Index.open(root) as ix:
        res = ix.find("tide tables")
        assert res.hits and res.branches == ["semantic"] and res.coverage["embedded"] == 0
        assert 0 < res.coverage["computed"] <= VECTORS_NOW_FILES + VECTORS_NOW_ABSTRACTS
        assert any("semantic search ran on the vectors it computed for the best keyword hits" in w
                   for w in res.warnings), res.warnings
        with Store.open(_db(root)) as s:  # nothing is written: the worker stores them
            assert s.coverage()[0] == 0
        with pytest.raises(api.OvError) as e:
            ix.find("qqxz vvbn")
        assert e.value.code == "unsupported" and "ov index" in e.value.message
        monkeypatch.setattr("ov.indexer.worker_state", lambda db: {"pid": 1, "phase": "embedding"})
        t0 = time.monotonic()
        with pytest.raises(api.OvError) as e:
            ix.find("qqxz vvbn")
        assert e.value.code == "index_busy" and e.value.retryable and time.monotonic() - t0 >= 0.3
        hits = ix.search("tide tables").hits  # hybrid: keywords and the computed vectors
        assert hits


def test_a_find_waiting_for_the_workers_first_vectors_lets_it_run(tree, monkeypatch):
    """A search holds its `Searching` mark while a worker embeds, and the worker waits while
    one is held (up to SEARCH_WAIT_S): a `find` that waited for the worker's first vectors
    held it, so the wait ran out every time (the first `ov find` on a fresh tree was
    index_busy after 10 s). The mark is let go before the wait."""
    from ov import api, engine
    from ov.indexer import SearchYield

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    root = tree(_many(3))
    api.index(root, embed=False)
    with Store.open(_db(root)) as s, s.tx():
        s.set_meta("embed", "on")
    monkeypatch.setattr("ov.indexer.worker_state", lambda db: {"pid": 1, "phase": "embed"})
    held: list[bool] = []

    def first_vectors(store, cov, claim=None):  # the wait, as the worker sees it
        held.append(SearchYield(_db(root), lambda: False).held())
        try:
            real(store, cov, claim)
        finally:
            held.append(SearchYield(_db(root), lambda: False).held())

    real = engine._first_vectors
    monkeypatch.setattr(engine, "_first_vectors", first_vectors)
    monkeypatch.setattr(engine, "FIRST_VECTORS_WAIT_S", 0.2)
    with api.Index.open(root) as ix:
        with pytest.raises(api.OvError) as e:
            ix.find("qqxz vvbn")
    assert e.value.code == "index_busy" and held == [True, False], held


def test_find_while_another_indexer_embeds_is_busy_not_unsupported(tree, monkeypatch):
    """An `ov index` in another terminal, or `ov mcp`'s watcher catching up, holds the index
    and is adding the vectors: `ov find` is `index_busy` (retryable), not `unsupported` with
    a command to run (an MCP client cannot run one), and a hybrid search's warning says an
    indexer is adding them."""
    from ov import api, engine
    from ov.indexer import IndexLock

    monkeypatch.setenv("OV_EMBEDDER", "hash")
    monkeypatch.setattr(engine, "FIRST_VECTORS_WAIT_S", 0.3)
    root = tree(_many(3))
    api.index(root, embed=False)
    with Store.open(_db(root)) as s, s.tx():
        s.set_meta("embed", "on")
    with api.Index.open(root) as ix, IndexLock(_db(root)):
        assert ix.status().coverage["indexing"] is True
        with pytest.raises(api.OvError) as e:
            ix.find("qqxz vvbn")  # no keyword hit to compute vectors for
        assert e.value.code == "index_busy" and e.value.retryable, e.value.message
        res = ix.search("tide tables")
        assert res.hits and any("indexer running now" in w for w in res.warnings), res.warnings
    with api.Index.open(root) as ix:
        assert ix.status().coverage["indexing"] is False


def _with_a_pool(cwd, code: str):
    """`code` run in a new interpreter with `p`, the pool `ov index` starts, and `os`; the
    pool is terminated after it. The run must succeed."""
    r = subprocess.run([sys.executable, "-c", "import os\nfrom ov.indexer import _pool\np = _pool()\n" + code
                        + "p.terminate()\n"], cwd=cwd, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "OV_INDEX_JOBS": "2"})
    assert r.returncode == 0, r.stderr
    return r


def test_the_pools_readers_run_below_the_writer(tmp_path):
    """The one writer bounds `ov index`: the pool's readers run at POOL_NICE above it, so on
    two cores they take what it leaves (the kernel's keyword index: 170.7 s -> 145.0 s)."""
    from ov.indexer import POOL_NICE

    r = _with_a_pool(tmp_path, "print(os.nice(0), *p.map(os.nice, [0, 0], chunksize=1))\n")
    mine, *theirs = map(int, r.stdout.split())
    assert theirs and all(n == min(mine + POOL_NICE, 19) for n in theirs), (mine, theirs)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
def test_the_pools_resource_tracker_does_not_write_to_the_users_terminal(tmp_path):
    """A first search whose time budget stopped the pool mid-run printed, after its answer,
    multiprocessing's "There appear to be 6 leaked semaphore objects to clean up at
    shutdown" (seen on a copy of the stdlib, each time): the resource tracker, which
    cleans such semaphores up when ov ends, wrote on the stderr it inherited. It starts
    with /dev/null as its stderr now."""
    r = _with_a_pool(tmp_path, "import multiprocessing.resource_tracker as rt\n"
                               "print(os.readlink(f'/proc/{rt._resource_tracker._pid}/fd/2'))\n")
    assert r.stdout.strip() == os.devnull and "leaked" not in r.stderr, (r.stdout, r.stderr)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc")
def test_the_pools_worker_handler_does_not_spin_while_a_result_waits(tmp_path):
    """multiprocessing's Pool wakes its worker-handler thread whenever a result waits unread
    in the result pipe, and it spun so, checking every worker's exit status, while the writer
    held the interpreter: ~8 % of a core through a keyword index of the kernel's fs/ net/
    kernel/ mm/. The pool `ov index` starts wakes it only when a worker exits. Here a result
    waits unread for most of a second: the thread's CPU time over it is read from /proc."""
    r = _with_a_pool(tmp_path, (
            "import time, threading\n"
            "tid = next(t.native_id for t in threading.enumerate() if '_handle_workers' in t.name)\n"
            "def ticks():\n"
            "    f = open(f'/proc/self/task/{tid}/stat').read().rsplit(')', 1)[1].split()\n"
            "    return int(f[11]) + int(f[12])\n"
            # a callback runs on the result thread: while it sleeps, the next result waits
            "first = p.apply_async(abs, (-1,), callback=lambda _: time.sleep(1.2))\n"
            "time.sleep(0.3)\n"
            "t0 = ticks()\n"
            "second = p.apply_async(abs, (-2,))\n"
            "time.sleep(0.8)\n"
            "print(ticks() - t0, os.sysconf('SC_CLK_TCK'))\n"
            "print(first.get(timeout=30), second.get(timeout=30))\n"))
    spent, hz = map(int, r.stdout.split("\n")[0].split())
    assert spent <= hz // 10, f"the worker-handler thread ran {spent} of {hz} ticks in a second"
    assert r.stdout.split("\n")[1] == "1 2"


def test_a_pool_process_that_dies_is_an_error_not_a_wait_for_ever(tmp_path):
    """A pool process killed while it held files (the out-of-memory killer, `kill -9`) took
    their results with it, and the stock iterator waited for them for ever."""
    r = _with_a_pool(tmp_path, (
            "import signal, time\n"
            "from ov.indexer import _bounded_imap\n"
            "from ov.errors import OvError\n"
            "t = time.monotonic()\n"
            "try:\n"
            "    list(_bounded_imap(p, signal.raise_signal, [signal.SIGKILL]))\n"
            "except OvError as e:\n"
            "    print(e.code, e.retryable, e.message, time.monotonic() - t < 20, sep='|')\n"))
    code, retryable, message, soon = r.stdout.strip().split("|")
    assert (code, retryable, soon) == ("internal", "True", "True")
    assert "was killed by SIGKILL (out of memory?)" in message and "run `ov index` again" in message


def test_an_interrupt_hidden_by_the_pools_lock_is_still_an_interrupt():
    """A SIGTERM that lands in the pool iterator's condition wait just after the wait let go
    of its lock ends the `with` around it with RuntimeError("release unlocked lock"), the
    interrupt as its context: `ov index` said `error[internal]` instead of `interrupted`
    (seen once in ~120 runs). The interrupt is raised again."""
    import ov.indexer as ix

    class Results:
        def next(self, timeout=None):
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt:
                raise RuntimeError("release unlocked lock")  # as threading.Condition leaves it

    with pytest.raises(KeyboardInterrupt):
        list(ix._awaited(None, Results()))

    class Broken:
        def next(self, timeout=None):
            raise RuntimeError("something else")

    with pytest.raises(RuntimeError, match="something else"):
        list(ix._awaited(None, Broken()))


def _children(pid: int) -> list[int]:
    kids = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return kids


def _cpu_ticks(pid: int) -> int:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(f[11]) + int(f[12])


def _indexing_a_thousand_files(tmp_path: Path) -> tuple[Path, subprocess.Popen]:
    """A tree of 1,000 Python files, and `ov index --no-embed` started on it with a pool of
    two processes (stdout and stderr piped)."""
    body = "".join(f"def function_{i}(value):\n    return value * {i}\n" for i in range(160))
    root = make_tree(tmp_path / "t", {f"f{i:04d}.py": f"# file needle{i}\n" + body for i in range(1000)})
    env = {**os.environ, "OV_INDEX_JOBS": "2"}
    env.pop("OV_DEBUG", None)
    return root, subprocess.Popen([sys.executable, "-m", "ov", "index", "--no-embed", "."], cwd=root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _busy_pool(p: subprocess.Popen) -> list[int]:
    """The two pool processes of the `ov index` run `p` (children of multiprocessing's fork
    server) once each is past its start; [] when not seen so within 60 s."""
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        for server in [k for k in _children(p.pid) if b"forkserver" in Path(f"/proc/{k}/cmdline").read_bytes()]:
            workers = _children(server)
            if len(workers) == 2 and all(_cpu_ticks(w) >= 5 for w in workers):
                return workers
        time.sleep(0.005)
    return []


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc")
def test_ov_index_whose_pool_processes_are_killed_ends_with_an_error_and_the_next_run_completes(tmp_path):
    """`kill -9` of the processes that read files for `ov index` (grandchildren: children
    of multiprocessing's fork server) once they are busy: the command ends with exit 2 and
    says what happened; what it committed is kept and the next run adds the rest."""
    root, p = _indexing_a_thousand_files(tmp_path)
    killed = _busy_pool(p)
    for w in killed:
        os.kill(w, signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert killed, "the pool's processes were not seen busy"
    assert p.returncode == 2, err
    assert "error[internal]: a process reading files for the index was killed by SIGKILL" in err
    with Store.open(_db(root)) as s:
        assert s.integrity_ok()
        kept = s.q1("SELECT count(*) FROM files")
    assert 0 < kept < 1000
    r = run_subprocess(["index", "--no-embed", "."], cwd=root, env={"OV_INDEX_JOBS": "2"})
    assert r.code == 0 and f"{1000 - kept} added" in r.err, r.err
    r = run_subprocess(["search", "needle999", "--search-type", "keywords", "--json"], cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["f0999.py"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc")
def test_ov_index_killed_while_its_pool_is_busy_leaves_no_traceback(tmp_path):
    """`kill -9` of `ov index` itself while its pool processes read files: each had printed
    two chained BrokenPipeError tracebacks into the terminal as it failed to send its
    result (a review of concurrent use). They now end without a word."""
    root, p = _indexing_a_thousand_files(tmp_path)
    workers = _busy_pool(p)
    p.kill()
    try:
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert workers, "the pool's processes were not seen busy"
    gone = time.monotonic() + 30
    while any(_running(w) for w in workers) and time.monotonic() < gone:
        time.sleep(0.05)
    assert not any(_running(w) for w in workers), "a pool process outlived its command"
    assert p.returncode == -signal.SIGKILL and "Traceback" not in err and "Error" not in err, err


def _running(pid: int) -> bool:
    from ov.indexer import process_alive

    return process_alive(pid)


def test_embedding_progress_is_told_within_a_commit(tree, tmp_path):
    """A line of `--progress` came once per 256-row commit: 12-31 s apart at the model's
    speed on a loaded machine, where the flag promises a line a second."""
    from ov.indexer import EMBED_COMMIT, EMBED_STEP, IndexOptions, index_tree

    root = tree(_many(60))
    told: list[tuple[int, int | None]] = []
    index_tree(root, None, IndexOptions(), progress=lambda phase, done, total: told.append((done, total))
               if phase == "embed" else None)
    steps = [d for d, _ in told]
    assert steps == sorted(steps) and steps[-1] == told[-1][1]
    assert told[-1][1] < EMBED_COMMIT  # one commit in all: what is told between is the steps
    assert len([d for d in steps if 0 < d < told[-1][1]]) >= told[-1][1] // EMBED_STEP - 1


@pytest.mark.model
def test_a_hit_without_its_vector_yet_scores_as_keywords_alone_in_the_hybrid(tree):
    """While a worker adds vectors (hours on a big tree), a file whose hit has no vector yet
    was fused with a cosine of 0: at 0.5 % of the kernel's vectors, files the worker had
    embedded first outranked `fair.c` for a question on the scheduler. Such a hit now scores
    its keywords-only probability (scores are probabilities: one scale for both kinds).
    With the real model: by default the search computes the file's waiting vectors, and its
    abstract (the comment on scheduling) keeps it first; its best passage alone, 60 helper
    lines under that comment, left it out of the first ten (docs/BENCHMARKS.md, "The rows
    a first answer computes")."""
    from ov.indexer import embed_phase, index_tree
    from ov.model import IndexReport

    files = {f"notes/n{i:02d}.md": f"# Note {i}\n\nThe harbour {i} has the next ferry at noon.\n" for i in range(40)}
    files["kernel/sched.c"] = ("/* The scheduler picks the next task from the run queues of every processor, "
                               "weighing each one's share of the time it has had so far. */\n"
                               + "".join(f"static int helper_{i}(int x) {{ return x + {i}; }}\n" for i in range(60)))
    root = tree(files)
    db = _db(root)
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    calls = []

    def stop() -> bool:  # one step of the embed phase: the shortest rows, not the scheduler's
        calls.append(1)
        return len(calls) > 1

    with Store.open(db) as s:
        embed_phase(s, IndexReport(root=str(root)), None, None, stop)
        emb, total = s.coverage()
        sched = s.q1("SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                     "WHERE f.path = 'kernel/sched.c' AND c.embedded = 1")
    assert 0 < emb < total and sched == 0  # the case under test: partial vectors, none of its
    q = "how does the scheduler pick the next task"
    kw = run_subprocess(["search", q, "--search-type", "keywords", "--json"], cwd=root,
                        env={"OV_BACKGROUND": "0"}).json["result"]["hits"]
    # (computing the best hits' waiting vectors turned off: the rule under test alone)
    r = run_subprocess(["search", q, "--json", "--explain"], cwd=root,
                       env={"OV_BACKGROUND": "0", "OV_VECTORS_NOW_FILES": "0"})
    res = r.json["result"]
    assert res["branches"] == ["keywords", "semantic"] and any("partial vectors" in w for w in res["warnings"])
    top = res["hits"][0]
    assert top["path"] == "kernel/sched.c" == kw[0]["path"], res["hits"][:3]
    assert top["score"] == kw[0]["score"] and "semantic" not in top["scores"], (top, kw[0])
    assert res["coverage"]["computed"] == 0
    # by default the search computes the vectors its best keyword hits wait for, for itself
    res = run_subprocess(["search", q, "--json", "--explain"], cwd=root,
                         env={"OV_BACKGROUND": "0"}).json["result"]
    top = res["hits"][0]
    assert top["path"] == "kernel/sched.c" and "semantic" in top["scores"], res["hits"][:3]
    assert any(f"partial vectors, and on the vectors it computed for its best keyword hits "
               f"({res['coverage']['computed']} rows)" in w for w in res["warnings"]), res["warnings"]
    with Store.open(db) as s:  # nothing written: the worker stores them
        assert s.coverage() == (emb, total)


def test_a_hit_past_the_files_a_search_weighs_now_is_fused_without_a_cosine(tree):
    """While the worker adds vectors, a search computes the waiting vectors of its best
    keyword files (`_VectorsNow`). A keyword hit past them had kept its keywords-only
    probability, so on the JDK at 8 % of its vectors the 65th keyword file outranked the
    best ones fused with their cosines (HashMap.java from 4th by keywords to past the
    50th). Past the files weighed now, a hit is fused as one with no cosine; with none
    weighed now (OV_VECTORS_NOW_FILES=0) it keeps its keywords-only probability."""
    from ov.indexer import index_tree

    files = {f"notes/n{i:02d}.md": f"# Note {i}\n\n" + "ferry timetable " * (1 + i % 5) + f"harbour {i}\n"
             for i in range(12)}
    root = tree(files)
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    q = "ferry timetable"
    kw = {h["path"]: h["score"] for h in run_subprocess(
        ["search", q, "--search-type", "keywords", "--json", "-n", "20"], cwd=root,
        env={"OV_BACKGROUND": "0"}).json["result"]["hits"]}
    assert len(kw) == 12
    for n, floored in (("2", False), ("0", True)):
        res = run_subprocess(["search", q, "--json", "--explain", "-n", "20"], cwd=root,
                             env={"OV_BACKGROUND": "0", "OV_VECTORS_NOW_FILES": n,
                                  "OV_VECTORS_NOW_ABSTRACTS": "0"}).json["result"]
        assert res["coverage"]["computed"] == int(n)
        past = [h for h in res["hits"] if "semantic" not in h["scores"]]
        assert len(past) == 12 - int(n), res["hits"]
        for h in past:
            assert (h["score"] == kw[h["path"]]) == floored, (n, h, kw[h["path"]])
            assert h["score"] <= kw[h["path"]]


def test_a_search_that_starts_the_worker_again_says_so(tree):
    """After `ov index --stop` (or a kill), the next search starts the worker again, as the
    README says; it did so without a word, so one stopped to free the CPU ran again for
    hours unseen (review of the kernel)."""
    from ov.indexer import index_tree

    root = tree(_many(40))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))  # vectors pending, no worker
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and "started a background worker (pid" in r.err and "ov index --stop" in r.err, r.err
    assert "the last background worker" not in r.err, r.err  # none was lost
    _wait_worker(_db(root))
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and "background worker" not in r.err, r.err  # nothing left to do: no word


def test_a_search_after_a_worker_was_killed_says_it_was_lost(tree):
    """A review of the Go tree: after a `kill -9` of the worker, the next search said
    "started a background worker" and nothing of the one lost. The state file it leaves
    names it."""
    from ov.indexer import index_tree, worker_file

    root = tree(_many(40))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))  # vectors pending, no worker
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid no process has now
    worker_file(_db(root)).write_text(json.dumps({"pid": dead.pid, "started": 0, "phase": "embed"}))
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and f"the last background worker (pid {dead.pid}) ended before it finished" in r.err, r.err
    assert "started a background worker (pid" in r.err
    _wait_worker(_db(root))


def test_the_worker_started_after_an_upgrade_says_it_writes_grep_rows(tree):
    """The upgrade to schema 8 empties grep's trigram tables of an index whose vectors are
    all there: the search that starts the worker to fill them says so, not "vectors"."""
    import sqlite3

    from ov.indexer import index_tree

    root = tree(_many(12))
    index_tree(root, None, IndexOptions(embed=False))
    c = sqlite3.connect(_db(root))
    c.execute("PRAGMA user_version = 7")  # the trigram rows of schema 7, made anew on open
    c.commit()
    c.close()
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and "to finish the index's grep rows;" in r.err, r.err
    _wait_worker(_db(root))
    with Store.open(_db(root), readonly=True) as s:
        assert s.trigrams_complete() and s.q1("PRAGMA user_version") == SCHEMA_VERSION


def test_a_stopped_worker_stays_stopped_until_ov_index_runs(tree):
    """`ov index --stop` to give the CPU back held only until the next search started the
    worker again (a review of a docs tree): searches now start none until `ov index` runs,
    and their warning still says the vectors are partial."""
    from ov.indexer import index_tree, paused_file

    root = tree(_many(40))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))  # vectors pending, no worker
    r = run_subprocess(["index", ".", "--stop"], cwd=root)
    assert r.code == 0 and paused_file(_db(root)).is_file()
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and "background worker" not in r.err, r.err
    assert worker_state(_db(root)) is None
    assert any("partial vectors" in w or "keywords alone" in w or "vectors it computed" in w
               for w in r.json["result"]["warnings"])
    # status had said `background: -` with the vectors partial and nothing of the stop
    st = run_subprocess(["status", "--json"], cwd=root)
    assert st.json["result"]["worker_paused"] is True and st.json["result"]["background"] is None
    st = run_subprocess(["status"], cwd=root)
    assert "background:      stopped by `ov index --stop`: none starts again, and what is left waits, " \
           "until `ov index` runs" in st.out, st.out
    assert run_subprocess(["index", "."], cwd=root).code == 0  # the vectors, in the foreground
    assert not paused_file(_db(root)).exists()
    st = run_subprocess(["status", "--json"], cwd=root)
    assert st.json["result"]["worker_paused"] is False
    assert "background:      -" in run_subprocess(["status"], cwd=root).out
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and r.json["result"]["coverage"]["ratio"] == 1.0


@pytest.mark.parametrize("state, said", [
    ({"phase": "scan"}, ", reading the tree's files first"),
    ({"phase": "trigram", "eta_s": 30}, ", writing grep's rows first"),
    ({"phase": "embed", "eta_s": 42.4}, ", about 42 s left"),
    ({"phase": "embed", "eta_s": 600}, ", about 10 min left"),
    ({"phase": "embed", "eta_s": 6362}, ", about 1 h 46 min left"),
    ({"phase": "embed", "eta_s": None}, ""),
    (None, ""),
])
def test_a_find_with_no_vector_yet_says_how_far_the_worker_is(monkeypatch, state, said):
    """The first `ov find` on the kernel said "try again" for 10 minutes, with no idea how
    long to wait (review of the kernel): the error now says what the worker is doing."""
    from ov import engine, indexer

    monkeypatch.setattr(indexer, "worker_state", lambda db: state)

    class S:
        path = Path("/nowhere/.ov/index.db")

    assert engine._worker_eta(S()) == said


def test_status_gives_the_workers_scan_what_is_left():
    """The worker's scan of the tree has no total of its own: `ov status` said only "scan,
    1111/s" on the kernel, where the README promises progress and an ETA. The files its
    own walk finds the index lacks are what is left of it."""
    from ov.render import _worker_text

    scan = {"pid": 7, "phase": "scan", "done": 4000, "total": 0, "rate": 600.0, "eta_s": None}
    assert _worker_text(scan, 38_639) == ("pid 7, reading files for keywords, 38639 files to go, 600 files/s, "
                                          "about 64 s left (`ov index --stop` stops it)")
    assert _worker_text(scan, 0) == "pid 7, reading files for keywords, 600 files/s (`ov index --stop` stops it)"
    # the ETA is the phase's: what comes after it is said (the kernel's line read "about 49 s
    # left" before 22 h of vectors)
    assert _worker_text(scan, 38_639, True, True) == (
        "pid 7, reading files for keywords, 38639 files to go, 600 files/s, about 64 s left in this "
        "phase; then grep rows and vectors (`ov index --stop` stops it)")
    grams = {"pid": 7, "phase": "grams", "done": 71, "total": 84, "rate": 44.0, "eta_s": 1}
    assert _worker_text(grams, 0, True, True) == (
        "pid 7, grep bitmaps of big files 71/84, 44 files/s, about 1 s left in this phase; then grep "
        "rows and vectors (`ov index --stop` stops it)")
    trigram = {"pid": 7, "phase": "trigram", "done": 10, "total": 100, "rate": 50.0, "eta_s": 2}
    assert _worker_text(trigram, 0, True, True) == (
        "pid 7, grep rows 10/100, 50 rows/s, about 2 s left in this phase; then vectors "
        "(`ov index --stop` stops it)")
    embed = {"pid": 7, "phase": "embed", "done": 10, "total": 100, "rate": 6.0, "eta_s": 15}
    assert _worker_text(embed, 5, False, True) == (
        "pid 7, vectors 10/100 this run, 6 rows/s, about 15 s left (`ov index --stop` stops it)")
    # the ETA counts tokens: their rate is the one shown with it (a docs review divided the
    # rows left by the rows' rate and got 43 min where the line said 9397s)
    embed.update(tokens_rate=1816.4, eta_s=4480)
    assert _worker_text(embed, 5) == ("pid 7, vectors 10/100 this run, 1816 tokens/s, about 75 min left "
                                      "(`ov index --stop` stops it)")
    # its first moments, before any phase (a Go tree's review read "pid 23333, start; then vectors")
    start = {"pid": 7, "phase": "start", "done": 0, "total": 0, "rate": 0.0, "eta_s": None}
    assert _worker_text(start, 0, False, True) == "pid 7, starting; then vectors (`ov index --stop` stops it)"


def test_durations_read_as_a_person_says_them():
    from ov.model import duration_text

    assert [duration_text(s) for s in (0.2, 45, 89, 90, 3599, 5339, 5400, 7200, 9397)] == [
        "1 s", "45 s", "89 s", "2 min", "60 min", "89 min", "1 h 30 min", "2 h", "2 h 37 min"]


def test_ctrl_c_during_a_first_build_prints_no_pool_traceback(tree):
    """The terminal sends SIGINT to the whole process group: each busy pool process that
    read files for the first build printed the head of its traceback (`Process
    ForkServerPoolWorker-2:`) above `ov: interrupted` (review of the kernel). The pool's
    processes leave Ctrl-C to the command, which ends them."""
    root = tree({f"d{i % 20}/f{i}.txt": f"line {i} of a file about harbours and boats\n" * 40 for i in range(8000)})
    env = {**os.environ, "OV_INDEX_JOBS": "2", "OV_EMBEDDER": "hash"}
    env.pop("OV_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-m", "ov", "search", "harbour boats"], cwd=root, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def group() -> list[str]:
        return subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()

    deadline = time.monotonic() + 30
    while len(group()) < 4 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the command, the forkserver and two pool processes
    time.sleep(0.5)  # the pool at work
    assert p.poll() is None, "the first build ended before it could be interrupted"
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert "ForkServerPoolWorker" not in err and "Traceback" not in err, err
    assert err.rstrip().endswith("ov: interrupted"), err
    deadline = time.monotonic() + 10
    while group() and time.monotonic() < deadline:  # the forkserver goes when the command has
        time.sleep(0.1)
    assert group() == []


def test_a_first_search_past_its_budget_loads_no_model_for_nothing(tree, monkeypatch):
    """`_finish_small` with its budget already spent loaded the model (a second or more) and
    embedded nothing; the worker then loaded it again (review of this change)."""
    from ov import embed, worker
    from ov.indexer import IndexLock, index_tree
    from ov.model import IndexReport

    root = tree(_many(3))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))

    def no_load(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(embed, "load_embedder", no_load)
    with IndexLock(_db(root)):
        assert worker._finish_small(_db(root), IndexReport(root=str(root)), None, lambda: True) is False


def test_a_search_that_restarts_a_failed_worker_says_why(tree):
    """A worker that cannot run (a model file that is not one) died at once, and each search
    then said only "started a background worker": now it gives the last one's error."""
    from ov.indexer import index_tree
    from ov.worker import failed_file

    root = tree(_many(40))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    failed_file(_db(root)).write_text('{"pid": 1, "at": 0, "message": "cannot load model x.onnx"}')
    r = run_subprocess(["search", "tide tables", "--json"], cwd=root)
    assert r.code == 0 and "ended on an error (cannot load model x.onnx" in r.err, r.err
    _wait_worker(_db(root))
    assert not failed_file(_db(root)).exists()  # a worker that ends well takes the reason away


def test_a_pool_that_will_not_terminate_is_killed_and_left(monkeypatch):
    """multiprocessing's `Pool.terminate()` once waited for ever under a Ctrl-C of a loaded
    first build (its task thread stuck on the queue's lock): `end_pool` gives it
    POOL_END_S, then kills the pool's processes and returns."""
    import threading

    from ov import indexer

    class Proc:
        killed = False

        def kill(self):
            self.killed = True

    freed = threading.Event()  # set at the end: the stuck thread must not outlive the test

    class Stuck:
        _pool = [Proc(), Proc()]

        def terminate(self):
            freed.wait()  # does not return while end_pool waits

    monkeypatch.setattr(indexer, "POOL_END_S", 0.2)
    pool = Stuck()
    t0 = time.monotonic()
    try:
        indexer.end_pool(pool)
        assert time.monotonic() - t0 < 5 and all(p.killed for p in pool._pool)
    finally:
        # a live thread stops this process's later greps from forking their helper
        freed.set()

    class Fine(Stuck):
        def terminate(self):
            pass

    fine = Fine()
    fine._pool = [Proc()]
    indexer.end_pool(fine)
    assert not fine._pool[0].killed


def test_a_search_that_builds_the_index_starts_one_worker(tree, monkeypatch):
    """The search that built the index spawned its worker in the build; it asked again
    right after, before that worker owned its state file (its command line was still the
    parent's), so a second one was started, named with its pid, and exited at once."""
    from ov import api, worker

    root = tree(_many(3))
    monkeypatch.setenv("OV_EMBEDDER", "hash")
    monkeypatch.setattr(worker, "FIRST_INLINE_ROWS", 2)  # more rows than that: a worker starts
    spawned: list[Path] = []
    monkeypatch.setattr(worker, "spawn", lambda db_path: spawned.append(db_path) or 4242)  # no state file
    notices: list[str] = []
    with api.Index.open(root, auto_index=True, notice=notices.append):
        pass
    assert len(spawned) == 1, (spawned, notices)
    assert [n for n in notices if "(pid" in n] == [
        "vectors are being added in the background (pid 4242); `ov status` shows progress, "
        "`ov index --stop` stops it"], notices
    with api.Index.open(root, auto_index=True, notice=notices.append):  # a later search resumes it
        pass
    assert len(spawned) == 2 and "started a background worker (pid 4242)" in notices[-1], notices


def test_status_names_the_model_that_will_write_the_coming_vectors(tree, ov):
    """`model` read null in `ov status` and the MCP status until the worker stored its
    first vector; a script took it for an index without vectors. Now it names the model
    that will write them, and stays null for an index built with --no-embed."""
    from ov import api

    root = tree(_many(3))
    api.index(root, embed=False)
    assert ov("status", "-o", "json", cwd=root).json["result"]["model"] is None
    with Store.open(_db(root)) as s, s.tx():
        s.set_meta("embed", "on")  # vectors pending, as a first search leaves them
    res = ov("status", "-o", "json", cwd=root).json["result"]
    assert res["model"] == "hash-384" and res["coverage"]["pending"] > 0 and res["embedded_chunks"] == 0


def test_a_worker_re_cutting_a_no_embed_index_promises_no_vectors():
    """A background worker re-cutting an older layout's passages of a --no-embed index
    adds no vector; results said "a background worker is adding them" while it ran."""
    from ov.engine import coverage_warnings

    cov = {"embedded": 0, "embeddable": 40, "pending": 0, "background": True, "indexing": True,
           "ratio": 0.0, "keywords_complete": True}
    said = coverage_warnings("hybrid", cov)
    assert len(said) == 1 and "--no-embed" in said[0] and "adding them" not in said[0], said
    said = coverage_warnings("hybrid", {**cov, "pending": 40})
    assert "a background worker is adding them" in said[0], said


def test_a_worker_started_while_the_lock_is_held_for_an_instant_still_runs(tree):
    """A search asks whether the index is held by taking its lock for an instant
    (`lock_held`); a worker starting just then had read that as another indexer at work
    and quit, so a first search found no worker and no vector and answered nothing (a
    fresh clone's run). It waits a moment for the lock."""
    import fcntl
    import threading

    from ov.indexer import index_tree, lock_path
    from ov.worker import spawn

    root = tree(_many(12))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))
    db = _db(root)
    assert spawn(db) is not None
    fd = os.open(lock_path(db), os.O_RDWR)
    # held as the worker starts (its interpreter takes longer to start than this), let go 0.3 s later
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    threading.Timer(0.3, lambda: os.close(fd)).start()
    time.sleep(0.35)
    _wait_worker(db)
    with Store.open(db) as s:
        emb, total = s.coverage()
    assert emb == total > 0


def test_status_names_the_process_that_holds_the_index(tmp_path):
    """After `ov mcp`, whose watcher adds the missing vectors while the server is idle,
    `ov status` said only that "an indexer holds the index now". It names the holder and
    its command (from its `ov` on), in text and as JSON `holder`."""
    root = make_tree(tmp_path / "t", {"a.py": "def f():\n    return 1\n"})
    assert run_subprocess(["index", root]).code == 0
    fake = tmp_path / "bin" / "ov"  # a process whose command line reads `.../ov mcp`
    fake.parent.mkdir()
    fake.write_text("import fcntl, os, sys, time\n"
                    "fd = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT, 0o600)\n"
                    "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n")
    lock = root / ".ov" / "index.db.lock"
    p = subprocess.Popen([sys.executable, str(fake), "mcp", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        r = run_subprocess(["status", "-o", "json"], cwd=root)
        assert json.loads(r.out)["result"]["holder"] == {"pid": p.pid, "command": "ov mcp " + str(lock)}
        r = run_subprocess(["status"], cwd=root)
        assert f"`ov mcp {lock}` (pid {p.pid}) holds the index" in r.out, r.out
    finally:
        p.kill()
        p.wait()
    r = run_subprocess(["status", "-o", "json"], cwd=root)
    assert json.loads(r.out)["result"]["holder"] is None
    from ov.render import _holder_text

    assert _holder_text({"pid": 7, "command": "ov index ."}, True) == "`ov index .` (pid 7) holds the index"
    assert "its watcher adds the missing vectors" in _holder_text({"pid": 7, "command": "ov index --watch"}, True)


def test_a_worker_spawned_a_moment_ago_is_seen_while_its_arguments_are_not_set(tree, monkeypatch):
    """`Popen` returns once the new program is loaded, and for a moment after, the kernel
    shows the process with an empty command line: a search that had just spawned its
    worker found none, and answered "no vectors yet" over an index its worker filled a
    second later (2 of 3 runs of the whole suite; 3 of 20 spawns beside it). A starting
    worker's empty command line is read again, a moment at most."""
    import pathlib

    from ov import indexer, worker
    from ov.indexer import index_tree

    root = tree(_many(5))
    index_tree(root, None, IndexOptions(embed=False, embed_later=True))  # vectors pending
    monkeypatch.setenv("OV_WORKER_DELAY", "2")
    pid = worker.spawn(_db(root))
    try:
        real, blank = pathlib.Path.read_bytes, [3]

        def read_bytes(self):
            if str(self) == f"/proc/{pid}/cmdline" and blank[0] > 0:
                blank[0] -= 1
                return b""  # as the kernel shows it before the arguments are set
            return real(self)

        monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)
        state = worker_state(_db(root))
        assert state is not None and state["pid"] == pid and blank[0] == 0, state
        monkeypatch.setattr(indexer, "SPAWN_ARGS_WAIT_S", 0.0)
        blank[0] = 1  # without the second read, the worker is not seen
        assert worker_state(_db(root)) is None
    finally:
        monkeypatch.undo()
        _wait_worker(_db(root))


# ---- an index upgraded while an older ov's worker writes to it -------------------------

# A worker of an older ov, as far as this one can tell: its command line names `ov.worker`
# and the index, it holds the index lock and its state file names it; it writes to the
# index until SIGTERM, which it obeys after its current write (as `ov.worker.run` does).
_OLD_WORKER = r"""
import json, os, signal, sqlite3, sys, time
from pathlib import Path
from ov.indexer import IndexLock, worker_file
db = Path(sys.argv[2])
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
lock = IndexLock(db)
lock.acquire(10)
worker_file(db).write_text(json.dumps({"pid": os.getpid(), "phase": "vectors", "started": time.time()}))
print("ready", flush=True)
n = 0
while not stopping:
    n += 1
    try:
        c = sqlite3.connect(db, timeout=5)
        c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('old-worker', ?)", (str(n),))
        c.commit()
        c.close()
    except sqlite3.Error:
        pass
    time.sleep(0.05)
lock.release()
"""


@pytest.mark.parametrize("where", ["in .ov", "named with --db"])
def test_a_search_that_upgrades_an_index_stops_the_older_workers_first(tree, tmp_path, where):
    """An older ov's worker went on writing its rows in their old form into the index a
    newer ov had just upgraded beside it (an upgrade review: grep's trigram rows of schema
    7, marked current, in a schema-9 index). The search that upgrades the index stops the
    worker first, and upgrades it holding the index lock; an index named with --db, outside
    `.ov/`, was upgraded while its root was read from it (a review of the fix)."""
    import sqlite3

    from ov.indexer import index_tree

    root = tree(_many(6))
    db = _db(root).resolve() if where == "in .ov" else (tmp_path / "elsewhere" / "tree.db")
    db.parent.mkdir(exist_ok=True)
    index_tree(root, db, IndexOptions(embed=False))
    c = sqlite3.connect(db)
    c.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    c.commit()
    c.close()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                      os.environ.get("PYTHONPATH", "")]))
    old = subprocess.Popen([sys.executable, "-c", _OLD_WORKER, "ov.worker", str(db)], env=env,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert old.stdout.readline().strip() == "ready"
        assert worker_state(db) is not None  # taken for the index's worker
        r = run_subprocess(["search", "tide tables", "--json", *(() if where == "in .ov" else ("--db", db))],
                           cwd=root)
        assert r.code == 0, r.err
        assert f"stopped the background worker (pid {old.pid}) to upgrade the index" in r.err
        assert old.wait(timeout=10) == 0  # gone once the search answered (before: still writing)
        with Store.open(db, readonly=True) as s:
            assert s.q1("PRAGMA user_version") == SCHEMA_VERSION
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()
    _wait_worker(db)  # the worker of this ov the search started finishes the index


def test_a_writer_writes_nothing_into_an_index_a_newer_ov_upgraded(tree):
    """A process of this ov that has the index open writes no more once a newer ov has
    upgraded it: its next write transaction, batched or not, is refused and rolled back."""
    import sqlite3

    from ov.errors import OvError
    from ov.indexer import index_tree

    root = tree(_many(2))
    index_tree(root, None, IndexOptions(embed=False))
    with Store.open(_db(root)) as s:
        c = sqlite3.connect(_db(root))
        c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        c.commit()
        c.close()
        with pytest.raises(OvError) as e:
            with s.tx():
                s.set_meta("after-upgrade", "1")
        assert e.value.code == "unsupported" and "upgraded by a newer ov" in e.value.message
        with pytest.raises(OvError) as e:
            with s.batches():
                s.set_meta("after-upgrade", "1")
        assert e.value.code == "unsupported"
        assert not s.in_transaction
    c = sqlite3.connect(_db(root))
    assert c.execute("SELECT count(*) FROM meta WHERE key = 'after-upgrade'").fetchone()[0] == 0
    c.close()
