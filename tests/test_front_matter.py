"""Markdown front matter in ranked search: a note's hit is shown at the passage that holds
its text, not at its `---` block, and its title is its heading (or front-matter `title`),
not `---`."""

from __future__ import annotations

import pytest

from ov.indexer import file_title
from ov.chunk import chunk_text

NOTES = {
    "starter.md": "---\ndate: 2024-01-05\ntags: [kitchen]\n---\n# Sourdough starter\n\n"
                  "Feed the sourdough starter daily with equal weights of flour and water.\n",
    "bike.md": "---\ndate: 2024-02-01\n---\n# Bicycle chain\n\nClean and oil the bicycle chain every month.\n",
    "garden.md": "# Tomatoes\n\nWater tomato plants deeply twice a week in summer.\n",
    "plain.md": "---\ntitle: Named in front matter\n---\nBody text without a heading.\n",
}


def _top(r):
    assert r.code == 0, (r.out, r.err)
    return r.json["result"]["hits"][0]


@pytest.mark.parametrize("args", [["find"], ["search"], ["search", "--search-type", "keywords"]])
def test_a_note_is_shown_at_its_text_not_its_front_matter(tree, ov, args):
    root = tree(NOTES)
    assert ov("index", ".", cwd=root).code == 0
    hit = _top(ov(*args, "feed the sourdough starter with flour", "-o", "json", "--explain", cwd=root))
    assert hit["path"] == "starter.md"
    assert hit["start_line"] >= 5, hit  # lines 1-4 are the front matter


@pytest.mark.model
def test_a_note_is_shown_at_its_text_with_the_real_model(tree, ov):
    root = tree(NOTES)
    assert ov("index", ".", cwd=root).code == 0
    for query in ("how often should I feed a sourdough starter", "bicycle chain maintenance"):
        for cmd in ("find", "search"):
            hit = _top(ov(cmd, query, "-o", "json", cwd=root))
            assert hit["start_line"] >= 4 and not hit["excerpt"]["text"].startswith("---"), \
                (cmd, query, hit)


def test_the_title_is_past_the_front_matter(tree, ov):
    import sqlite3

    root = tree(NOTES)
    assert ov("index", ".", cwd=root).code == 0
    con = sqlite3.connect(root / ".ov" / "index.db")
    titles = dict(con.execute("SELECT path, title FROM files"))
    con.close()
    assert titles == {"starter.md": "# Sourdough starter", "bike.md": "# Bicycle chain",
                      "garden.md": "# Tomatoes", "plain.md": "Named in front matter"}
    for path, want in (("starter.md", "# Sourdough starter"), ("bike.md", "# Bicycle chain"),
                       ("garden.md", "# Tomatoes"), ("plain.md", "Named in front matter")):
        text = NOTES[path]
        assert file_title(text, path, chunk_text(text, path)) == want, path
    # only markdown has front matter: a YAML document's first line is its title
    text = "---\nkey: value\n---\nmore: 1\n"
    assert file_title(text, "a.yaml", chunk_text(text, "a.yaml")) == "---"
    assert file_title("", "a.md", []) == ""


def test_overviews_are_searched_by_keywords_and_say_so(tree, ov):
    """-L 1 rows (overviews) have no vectors: the hybrid runs on keywords and says so;
    `find` cannot serve them and says why (`unsupported`), never an empty success."""
    root = tree(NOTES)
    assert ov("index", ".", cwd=root).code == 0
    r = ov("search", "sourdough starter", "-L", "1", "-o", "json", cwd=root)
    assert r.code == 0, r.out
    res = r.json["result"]
    assert res["hits"] and res["hits"][0]["path"] == "starter.md" and res["hits"][0]["level"] == 1
    assert res["branches"] == ["keywords"] and res["search_type"] == "keywords"
    assert any("keywords alone" in w and "-L 1" in w for w in res["warnings"]), res["warnings"]
    r = ov("find", "sourdough starter", "-L", "1", "-o", "json", cwd=root)
    assert r.code == 2 and r.json["error"]["code"] == "unsupported", r.out
    r = ov("find", "sourdough starter", "-L", "0,1", "-o", "json", cwd=root)  # abstracts have vectors
    assert r.code == 0 and r.json["result"]["hits"], r.out


def test_ranked_paths_are_relative_to_the_current_folder(tree, ov):
    """find and search print paths as grep does: relative to the current folder (`../x`
    above it), their JSON naming the root once; a cursor from a subfolder still pages."""
    root = tree({**NOTES, "sub/inner.md": "# Inner\n\nsourdough notes kept in a subfolder.\n"})
    assert ov("index", ".", cwd=root).code == 0
    here = root / "sub"
    for cmd in ("find", "search"):
        r = ov(cmd, "sourdough starter", "-o", "json", "-n", "1", cwd=here)
        assert r.code == 0, r.out
        res = r.json["result"]
        assert res["root"] == str(root)
        paths = [h["path"] for h in res["hits"]]
        assert paths and all(p == "inner.md" or p.startswith("../") for p in paths), paths
        assert all((here / p).is_file() for p in paths), paths
        page2 = ov(cmd, "sourdough starter", "-o", "json", "-n", "1", "--cursor", res["next_cursor"], cwd=here)
        assert page2.code == 0 and all((here / h["path"]).is_file() for h in page2.json["result"]["hits"])
        text = ov(cmd, "sourdough starter", "-n", "3", cwd=here).out
        assert "../starter.md:" in text and "\ninner.md:" in "\n" + text, text
    grep = ov("grep", "-l", "sourdough", "..", cwd=here).out.split()
    assert "../starter.md" in grep


SHAPES = {  # path -> (text, the first line of the passage the abstract speaks for)
    "blank.md": ("---\ntags: [birds]\n---\n\nHerons stalk fish in shallow wetlands at dawn.\n\n## Bread\n\n"
                 "Bake the sourdough loaf at 220 degrees for forty minutes.\n", 5),
    "rule.md": ("---\n\nZebras graze on the open plain.\n\n## Part 0\n\nOther text on pottery.\n", 1),
    "long.md": ("---\n" + "".join(f"field{i}: value number {i} of a long header\n" for i in range(40))
                + "---\n# Kyoto\n\nShrines and temples of Kyoto.\n", 43),
    "space.md": ("--- \ntitle: Walrus notes\n---\nWalruses rest on ice floes.\n", 4),
    "dots.md": ("---\ntitle: x\n...\n\nText after a YAML end marker.\n", 5),
    "only.md": ("---\ntitle: nothing else\n---\n", 1),
    "data.yaml": ("---\nkey: value\n---\nmore: 1\n", 1),
}


def test_the_lead_passage_is_the_first_after_the_front_matter(tree, ov):
    from ov.store import Store

    root = tree({p: t for p, (t, _) in SHAPES.items()})
    assert ov("index", ".", cwd=root).code == 0
    with Store.open(root / ".ov" / "index.db") as store:
        fids = dict(store.rows("SELECT path, id FROM files"))
        lead = store.lead_passages(list(fids.values()))
        got = {p: store.q1("SELECT start_line FROM chunks WHERE id = ?", (lead[fids[p]],)) for p in SHAPES}
        titles = dict(store.rows("SELECT path, title FROM files"))
    assert got == {p: line for p, (_, line) in SHAPES.items()}
    assert titles["blank.md"] == "Herons stalk fish in shallow wetlands at dawn."
    assert titles["long.md"] == "# Kyoto" and titles["space.md"] == "Walrus notes"
    assert titles["rule.md"] == "---" and titles["only.md"] == "nothing else"


def test_front_matter_is_a_chunk_of_its_own_when_a_blank_line_follows():
    text = SHAPES["blank.md"][0]
    chunks = chunk_text(text, "blank.md")
    assert chunks[0].text == "---\ntags: [birds]\n---"
    assert chunks[1].text.startswith("Herons")


DUNE = ("---\ntitle: Dune\ntags:\n  - books\n  - scifi\n---\n\n# Dune, Frank Herbert\n\n"
        "Paul Atreides on the desert planet Arrakis; the spice melange; the Fremen.\n")


def test_the_front_matter_block_is_never_the_hit_nor_the_context(tree, ov):
    """In a notes vault the YAML block (title, tags) was the closest passage to most
    queries: hits showed `---` and context mode spent its budget on it."""
    from ov.store import Store

    root = tree({"Dune.md": DUNE, "only.md": "---\ntitle: a note of front matter alone\n---\n",
                 "plain.md": "# Tomatoes\n\nWater them.\n"})
    assert ov("index", ".", cwd=root).code == 0
    with Store.open(root / ".ov" / "index.db") as store:
        rows = dict(store.rows("SELECT f.path || ':' || c.start_line, c.embedded FROM chunks c "
                               "JOIN files f ON f.id = c.file_id WHERE c.level = 2"))
    assert rows["Dune.md:1"] != 1 and rows["Dune.md:8"] == 1  # the block has no vector
    assert rows["only.md:1"] == 1  # a note of front matter alone keeps its one passage
    # a keyword hit on the block (its tags) is shown at the note's text
    hit = _top(ov("search", "scifi books", "--search-type", "keywords", "-o", "json", cwd=root))
    assert hit["path"] == "Dune.md" and hit["start_line"] == 8, hit
    for args in (["search", "scifi books"], ["find", "science fiction"]):  # no hit is the block
        for h in ov(*args, "-o", "json", "-n", "10", cwd=root).json["result"]["hits"]:
            assert not h["excerpt"]["text"].startswith("---\ntitle: Dune"), (args, h)
    # a budget too small for whole files: the passage served is the note's text
    r = ov("search", "scifi books", "--mode", "context", "--max-tokens", "30", cwd=root)
    assert r.code == 0 and "Dune.md" in r.out and "tags:" not in r.out, r.out


def test_the_default_ranking_hears_the_words_of_a_notes_front_matter(tree, ov):
    """A name, a tag or a title that only a note's front matter holds is keyword evidence
    in the default (hybrid) ranking too: the block was left out with the files that are
    never embedded (its own row has no vector), so `Priya` scored 0.92 in keyword search
    and 0.003 in the default one, with no keyword evidence. The block's file decides
    (`left_out_sql`): the block of a file never embedded (an `embed-skip` name) stays out."""
    notes = {"sync.md": "---\nattendees: [Priya, Tom]\ntags: [weekly]\n---\n# Weekly sync\n\n"
                        "We move the billing service to the new cluster.\n",
             "garden.md": "# Garden\n\nPlant tomatoes in May after the last frost.\n",
             "budget.md": "# Budget\n\nWe cut travel and keep hiring.\n",
             "api.min.md": "---\nowner: Priya\n---\n# API\n\nThe billing endpoints.\n"}
    root = tree(notes)
    assert ov("index", ".", cwd=root).code == 0
    for args in (["search"], ["search", "-L", "1,2"], ["search", "--search-type", "keywords"]):
        hits = ov(*args, "Priya", "-o", "json", "--explain", cwd=root).json["result"]["hits"]
        sync = [h for h in hits if h["path"] == "sync.md"]
        assert sync and sync[0]["scores"]["keywords"]["score"] > 0.5, (args, hits)
        assert sync[0]["start_line"] == 5, sync  # shown at the note's text
        if args[-1] != "keywords":  # the default ranking leaves the skipped file out, block and all
            assert [h["path"] for h in hits][0] == "sync.md" and "api.min.md" not in [h["path"] for h in hits], hits
