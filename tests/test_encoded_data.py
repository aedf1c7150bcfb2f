"""Encoded data gets no vector (ov.indexer.encoded_blob): a notebook's plotted image, a
`data:` URI, a certificate or a hex dump is cut into passages the model would read for
nothing. The rest of the file is embedded as before, and the data stays searchable by
keywords and grep."""

from __future__ import annotations

import base64
import json
import random

import pytest

from ov import indexer, tiers
from ov.store import Store


def _b64(n: int, seed: int = 7) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n)).decode()


def notebook(image_bytes: int = 30_000) -> str:
    """A notebook as Jupyter writes it (indent 1): a markdown cell, a code cell, and a code
    cell whose output is a PNG."""
    cells = [
        {"cell_type": "markdown", "metadata": {},
         "source": ["# Churn analysis\n", "We estimate customer churn from the billing table.\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
         "source": ["import pandas as pd\n", "df = pd.read_csv('billing.csv')\n"]},
        {"cell_type": "code", "execution_count": 2, "metadata": {},
         "outputs": [{"data": {"image/png": _b64(image_bytes), "text/plain": ["<Figure size 640x480>"]},
                      "metadata": {}, "output_type": "display_data"}],
         "source": ["df.plot.hist(column='tenure')\n", "plt.show()"]},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


PEM = "-----BEGIN CERTIFICATE-----\n" + "\n".join(
    _b64(900)[i:i + 64] for i in range(0, 1200, 64)) + "\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize("text", [
    _b64(3000),  # one long base64 line
    f'"image/png": "{_b64(2000)}",',  # a JSON string holding it
    f"![plot](data:image/png;base64,{_b64(1500)})",  # a data: URI in markdown
    PEM,  # base64 wrapped at 64 characters
    "\n".join(random.Random(3).randbytes(40).hex() for _ in range(20)),  # a hex dump
])
def test_encoded_data_is_a_blob(text):
    assert indexer.encoded_blob(text)


@pytest.mark.parametrize("text", [
    "def parse(args):\n    return [a.strip() for a in args if a]\n" * 5,
    "# " + "=" * 100 + "\n# section\n# " + "-" * 100 + "\n",  # rules of = and -
    "result = a_very_long_identifier_name_that_keeps_going_and_going_without_any_end_x\n",
    # the kernel's register names and long functions, a link to a commit (each was taken for
    # data by a first rule that let `_` into a run and asked only for letters and digits)
    "#define DCORE0_HMMU0_MMU_ACCESS_PAGE_ERROR_VALID_PAGE_ERR_VALID_ENTRY_SHIFT 0\n" * 3,
    "dml20v2_DISPCLKDPPCLKDCFCLKDeepSleepPrefetchParametersWatermarksAndPerformanceCalculation(mode_lib);\n",
    "[0] https://github.com/u-boot/u-boot/commit/ec80b4735a593961fe701cc3a5d717d4739b0fd0\n",
    "See https://example.com/a/long/path/to/some/resource/that/goes/on/for/a/while/index.html\n",
    "Lanterns glow violet in glacier caves. " * 20,
    # one sha256 among words: data, but not most of the passage
    "checksum of the release tarball, pinned so a rebuilt archive is noticed by the build:\n"
    "sha256 = 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
    "it is updated by the release script and never by hand; see RELEASING.md for the steps\n",
])
def test_words_and_code_are_not_blobs(text):
    assert not indexer.encoded_blob(text)


def _rows(root):
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        return st.rows("SELECT f.path, c.level, c.embedded, c.text FROM chunks c JOIN files f ON f.id = c.file_id")


def test_a_notebooks_image_gets_no_vector_and_its_cells_do(tree, ov):
    root = tree({"churn.ipynb": notebook(), "notes.md": "# Meeting\n\nWe talked about pricing tiers.\n"})
    r = ov("index", root, "-o", "json")
    assert r.code == 0, r.err
    rows = [r for r in _rows(root) if r[0] == "churn.ipynb" and r[1] == 2]
    blobs = [r for r in rows if indexer.encoded_blob(r[3])]
    # the image's 40,000 characters are two passages, its key with the first (cut at the
    # model's window they had been 100 and more, rows no model reads); never embedded
    assert len(blobs) == 2 and all(e == -1 for _, _, e, _ in blobs)
    assert blobs[0][3].lstrip().startswith('"image/png": "' + _b64(30_000)[:100])
    # each cell's source is a passage of its own, and those alone get vectors
    embedded = sorted(t for _, _, e, t in rows if e == 1)
    assert len(embedded) == 3 and all(t.lstrip().startswith('"source": [') for t in embedded)
    assert "Churn analysis" in embedded[0] + embedded[1] + embedded[2]
    assert not any('"outputs"' in t or '"cell_type"' in t for t in embedded)
    # the image and the JSON around the cells are still there for keywords and grep
    needle = _b64(30_000)[5000:5024]
    assert ov("grep", "-F", needle, cwd=root).code == 0
    hits = ov("search", "--search-type", "keywords", "Figure size", "-o", "json", cwd=root).json["result"]["hits"]
    assert hits and hits[0]["path"] == "churn.ipynb"
    status = ov("status", "-o", "json", cwd=root).json["result"]
    assert status["embedded_coverage"] == 1.0


def test_a_notebook_on_one_line_is_cut_and_embedded_as_text(tree, ov):
    one_line = json.dumps(json.loads(notebook(0)))  # no newlines: no cell can be told apart
    assert "\n" not in one_line
    root = tree({"n.ipynb": one_line})
    assert ov("index", root).code == 0
    rows = [e for _, lv, e, _ in _rows(root) if lv == 2]
    assert rows and all(e == 1 for e in rows)


DATA_URI_NOTE = ("# Architecture\n\nThe diagram below shows the request path.\n\n"
                 f"![diagram](data:image/png;base64,{_b64(6_000)})\n")


def test_the_check_follows_embed_long_lines(tree, ov):
    on = tree({"arch.md": DATA_URI_NOTE}, name="on")
    off = tree({"arch.md": DATA_URI_NOTE, ".ov/config.toml": "embed-long-lines = false\n"}, name="off")
    for root in (on, off):
        assert ov("index", root).code == 0
    on_rows = [(e, indexer.encoded_blob(t)) for _, lv, e, t in _rows(on) if lv == 2]
    assert (-1, True) in on_rows and (1, False) in on_rows  # the text has a vector, the image not
    off_rows = [e for _, lv, e, _ in _rows(off) if lv == 2]
    assert off_rows and all(e == 1 for e in off_rows)


@pytest.mark.model
def test_a_notebook_through_the_cli_with_the_real_model(tree, ov_proc):
    root = tree({"churn.ipynb": notebook(), "notes.md": "# Meeting\n\nWe talked about pricing tiers.\n"})
    r = ov_proc(["index", str(root), "-o", "json"], timeout=600)
    assert r.code == 0, r.err
    res = r.json["result"]
    # 172 passages and an abstract before, 169 of them the image; now the abstract and the
    # three cells' sources
    assert res["embedded"] == 4 + 2, res  # and notes.md's passage and abstract
    hits = ov_proc(["find", "how customers churn", "-o", "json", "-n", "20"], cwd=root).json["result"]["hits"]
    assert hits[0]["path"] == "churn.ipynb" and "Churn analysis" in hits[0]["excerpt"]["text"]
    # the image's passages have no vector, so no semantic hit is one of them
    assert not any(indexer.encoded_blob(h["excerpt"]["text"]) for h in hits)


# --- a notebook's tiers and title come from its cells, not its JSON ----------------------
def test_a_notebooks_abstract_and_outline_are_its_cells():
    nb = notebook(2_000)
    assert tiers.abstract(nb, "a/churn.ipynb") == (
        "Churn analysis — We estimate customer churn from the billing table.")
    assert tiers.overview(nb, "a/churn.ipynb").startswith("# Churn analysis")
    cells = tiers.notebook_text(nb)
    assert "pd.read_csv" in cells and "image/png" not in cells and "execution_count" not in cells
    # a notebook of code cells alone opens with its first lines of code
    code_only = json.dumps({"cells": [{"cell_type": "code", "source": "import numpy as np\nx = 1\n"}]})
    assert tiers.abstract(code_only, "n.ipynb").startswith("import numpy as np")


@pytest.mark.parametrize("text", ["not json at all\n", "[1, 2]\n", '{"cells": 3}\n', '{"cells": []}\n'])
def test_a_file_named_ipynb_that_is_not_a_notebook_keeps_the_plain_tiers(text):
    assert tiers.abstract(text, "x.ipynb") == tiers.abstract(text, "x.txt")


def test_a_notebooks_title_and_level_0_through_the_cli(tree, ov):
    root = tree({"churn.ipynb": notebook(2_000)})
    assert ov("index", root).code == 0
    assert indexer.file_title(notebook(2_000), "churn.ipynb", indexer.passages(notebook(2_000), "churn.ipynb")) \
        == "# Churn analysis"
    r = ov("read", "--level", "0", "churn.ipynb", cwd=root)
    assert r.code == 0 and r.out.strip() == "Churn analysis — We estimate customer churn from the billing table."


def test_a_lead_is_not_joined_to_encoded_data():
    """A short heading and paragraph above an over-long line share its first piece (a title
    for the paragraph it opens), but not a piece of encoded data: that passage gets no
    vector, and the lead would lose its own."""
    from ov.chunk import chunk_text  # noqa: PLC0415

    first = chunk_text(DATA_URI_NOTE, "arch.md")[0]
    assert first.text.startswith("# Architecture") and "request path" in first.text
    assert not indexer.encoded_blob(first.text) and "base64" not in first.text
    prose = "# Notes\n\nA short lead.\n\n" + "word " * 400 + "\n"
    assert chunk_text(prose, "n.md")[0].text.startswith("# Notes\n\nA short lead.\n\nword")


# --- where a notebook's sources are --------------------------------------------------------
def test_notebook_sources_are_the_cells_source_lists():
    from ov.chunk import notebook_sources  # noqa: PLC0415

    lines = notebook(100).split("\n")
    got = [(lines[a].strip(), lines[b].strip()) for a, b in notebook_sources(lines)]
    assert got == [('"source": [', "]")] * 3
    # a source written as one string, an empty list on one line (with a comma where the
    # keys are not sorted: the list is closed, not open until the outputs' `]`)
    cells = ['  {', '   "cell_type": "code",', '   "source": "x = 1"', '  },', '  {', '   "cell_type": "code",',
             '   "source": [],', '   "outputs": [', '    {', '     "text": ["out"]', '    }', '   ]', '  }']
    assert notebook_sources(cells) == [(2, 2), (6, 6)]
    assert notebook_sources([json.dumps(json.loads(notebook(10)))]) == []
    # a "source" key inside an output's JSON is not a cell's source
    nested = ['  {', '   "cell_type": "code",', '   "outputs": [', '    {', '     "data": {',
              '      "application/json": {', '       "source": [', '        "not a cell"', '       ]',
              '      }', '     }', '    }', '   ],', '   "source": [', '    "real = 1"', '   ]', '  }']
    assert notebook_sources(nested) == [(13, 15)]


def test_odd_notebooks_neither_crash_nor_lose_their_cells(tree, ov):
    """What a review of the first version found: a notebook nested 1,500 deep made `ov
    index` fail (RecursionError); a code-first notebook's title and outline were its fence
    lines; a null source read "None"."""
    deep = '{"cells": ' + "[" * 1500 + "]" * 1500 + "}"
    assert tiers.notebook_text(deep) is None
    code_first = json.dumps({"cells": [{"cell_type": "code", "source": ["import os\n", "print(1)\n"]},
                                       {"cell_type": "code", "source": None}]}, indent=1)
    assert tiers.notebook_text(code_first).count("None") == 0
    assert tiers.overview(code_first, "c.ipynb") == "import os"
    body = indexer.passages(code_first, "c.ipynb")
    assert indexer.file_title(code_first, "c.ipynb", body) == "import os"
    root = tree({"deep.ipynb": deep, "c.ipynb": code_first, "churn.ipynb": notebook(2_000)})
    r = ov("index", root, "-o", "json")
    assert r.code == 0 and r.json["result"]["added"] == 3, r.err


def test_a_notebooks_lead_passage_is_its_first_source(tree, ov):
    """The abstract (the first cell's text) and a hit on the file's name are shown at the
    first cell's source, not at the JSON before it (`{ "cells": [ { "cell_type": ...`)."""
    root = tree({"churn.ipynb": notebook(2_000)})
    assert ov("index", root).code == 0
    with Store.open(root / ".ov" / "index.db", readonly=True) as st:
        fid = st.q1("SELECT id FROM files")
        lead = st.lead_passages([fid])[fid]
        text = st.q1("SELECT text FROM chunks WHERE id = ?", (lead,))
        first = st.q1("SELECT text FROM chunks WHERE file_id = ? AND level = 2 ORDER BY seq LIMIT 1", (fid,))
    assert '"cell_type"' in first  # the JSON before the first cell is a passage of its own
    assert text.lstrip().startswith('"source"') and "Churn analysis" in text


def test_a_notebook_is_held_to_the_size_cap_by_what_it_says(tree, ov):
    """A notebook of a few plots passes 1 MiB (one of 1.7 MB held 11 KB of cell sources):
    it was left out of every ranked answer, and since its base64 may hold any word, every
    search warned of it. A notebook weighs its text less its outputs' encoded data; one
    whose cells alone are over the cap is still left out, and so is any file over 16 times
    the cap. The plot is cut in pieces of DATA_PIECE_CHARS, not one for each 256 tokens."""
    from ov.walk import NOTEBOOK_CAP_FACTOR

    plots = notebook(60_000)  # 80 KB of base64 in a notebook whose cells are short
    wordy = notebook(0).replace("Churn analysis", "Churn analysis " + "words " * 6_000)
    huge = notebook(20_000 * NOTEBOOK_CAP_FACTOR)
    root = tree({".ov/config.toml": 'max-filesize = "20K"\n', "plots.ipynb": plots, "wordy.ipynb": wordy,
                 "huge.ipynb": huge, "big.txt": "churn " * 5_000})
    assert len(plots) > 20_000 and len(wordy) > 20_000 and len(huge) > 20_000 * NOTEBOOK_CAP_FACTOR
    r = ov("index", root, "-o", "json")
    assert r.code == 0, r.err
    st = ov("status", "-o", "json", cwd=root).json["result"]
    assert sorted((f["path"], f["reason"]) for f in st["skipped_files"]) == [
        ("big.txt", "size"), ("huge.ipynb", "size"), ("wordy.ipynb", "size")]
    assert ov("read", "plots.ipynb", "-L", "0", cwd=root).out.startswith("Churn analysis")
    hits = ov("search", "churn", "--search-type", "keywords", "-o", "json", cwd=root).json["result"]
    assert [h["path"] for h in hits["hits"]] == ["plots.ipynb"]
    assert any("wordy.ipynb" in w or "big.txt" in w for w in hits["warnings"])  # still said of those left out
    rows = [r for r in _rows(root) if r[0] == "plots.ipynb" and r[1] == 2]
    assert sum(1 for r in rows if indexer.encoded_blob(r[3])) == 3  # 80,000 characters
    # grep reads every one of them, as rg
    assert ov("grep", "-l", "Churn", cwd=root).out.split() == ["huge.ipynb", "plots.ipynb", "wordy.ipynb"]


def test_prose_on_a_line_of_data_keeps_its_vector_and_data_is_cut_in_bounded_pieces(tree, ov):
    """A paragraph written on one line before its `![chart](data:...)` was judged with the
    data as one passage with no vector (a review of this change: `ov find` lost the
    paragraph), and a line of data as one passage had no bound (a 16 MB notebook line in
    one excerpt). The text between data runs is cut as any line is; the data in pieces of
    DATA_PIECE_CHARS."""
    from ov.chunk import DATA_PIECE_CHARS

    para = "The peregrine falcon has a high wing loading and stoops at great speed. " * 6
    note = f"# Birds\n\nShort note.\n\n{para}![chart](data:image/png;base64,{_b64(90_000)})\n\nSparrows.\n"
    root = tree({"birds.md": note})
    assert ov("index", root).code == 0
    rows = [r for r in _rows(root) if r[1] == 2]
    prose = [r for r in rows if "peregrine" in r[3]]
    assert len(prose) == 1 and prose[0][2] == 1 and not indexer.encoded_blob(prose[0][3])  # a vector
    data = [r for r in rows if indexer.encoded_blob(r[3])]
    assert len(data) == 4 and all(len(r[3]) <= DATA_PIECE_CHARS + 1 and r[2] == -1 for r in data)
    assert data[-1][3].endswith(")")  # the `)` closing the link goes with the data, not alone
    hits = ov("search", "peregrine falcon wing loading", "-o", "json", cwd=root).json["result"]["hits"]
    assert hits and "peregrine" in hits[0]["excerpt"]["text"] and len(hits[0]["excerpt"]["text"]) < 2000


def test_an_indexed_notebook_whose_plot_grows_is_still_read_by_search_and_read(tree, ov):
    """Search's recheck and `ov read FILE:LINE` held a changed file to the plain size cap:
    a notebook over it (indexed by its weight) whose plot was drawn again, a little
    bigger, had its hits dropped as stale and `ov read` said it had grown past the cap."""
    root = tree({".ov/config.toml": 'max-filesize = "20K"\n', "plots.ipynb": notebook(60_000)})
    assert ov("index", root).code == 0
    (root / "plots.ipynb").write_text(notebook(70_000))
    r = ov("search", "churn", "--search-type", "keywords", "-o", "json", cwd=root)
    assert [h["path"] for h in r.json["result"]["hits"]] == ["plots.ipynb"], r.out + r.err
    line = r.json["result"]["hits"][0]["line"]
    got = ov("read", f"plots.ipynb:{line}", cwd=root)
    assert got.code == 0 and "Churn" in got.out, got.out + got.err


def test_the_watchers_batch_lists_what_it_skipped(tree, ov):
    """Only `ov index` wrote the skipped list: a notebook over the cap by its cells, or a
    file with a NUL past its first 8 KiB, that a watcher's batch skipped stayed "new" in
    every `ov status` and search until someone ran `ov index`."""
    from ov.config import load_config
    from ov.indexer import IndexOptions, index_paths

    root = tree({".ov/config.toml": 'max-filesize = "20K"\n', "a.md": "# A\n\nalpha\n"})
    opts = IndexOptions(embed=False, walk=load_config(root).walk_options())  # as the watcher's
    assert ov("index", root, "--no-embed").code == 0
    (root / "heavy.ipynb").write_text(notebook(0).replace("Churn analysis", "Churn analysis " + "words " * 6_000))
    (root / "latenul.txt").write_bytes(b"alpha\n" + b"x" * 9000 + b"\n\x00\n")
    index_paths(root, ["heavy.ipynb", "latenul.txt"], opts=opts)
    st = ov("status", "-o", "json", cwd=root).json["result"]
    assert st["new_files"] == 0, st
    assert sorted((f["path"], f["reason"]) for f in st["skipped_files"]) == [("heavy.ipynb", "size"), ("latenul.txt", "binary")]
    (root / "latenul.txt").unlink()
    index_paths(root, ["latenul.txt"], opts=opts)
    st = ov("status", "-o", "json", cwd=root).json["result"]
    assert [f["path"] for f in st["skipped_files"]] == ["heavy.ipynb"] and st["new_files"] == 0
