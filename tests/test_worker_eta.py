"""The background worker's ETA (`ov status`, a search's warning) against the time the
work really takes. On a 119 MB Go tree successive readings said `128/s, eta 1131s` ...
`27/s, eta 4839s`: the rate was rows a second since the phase began, the embed phase takes
the shortest rows first, and a row's cost to the model grows with its tokens. The embed phase
counts the work in estimated model tokens (ov.indexer.TokenCost)."""

from __future__ import annotations

import random

import pytest

from ov import indexer
from ov.indexer import IndexOptions, complete_index, index_tree

WORDS = "harbour lighthouse keeper lamp tide boat dawn anchor rope sail".split()


def _mixed(n_short: int, n_long: int) -> dict[str, str]:
    """Many one-line notes (rows of a few tokens) and fewer long files (rows of up to ~200
    tokens): a tree whose first rows are far cheaper than its last."""
    files = {f"notes/n{i:03d}.txt": f"tide tables for harbour {i}\n" for i in range(n_short)}
    for i in range(n_long):
        rng = random.Random(i)
        files[f"logs/l{i:03d}.txt"] = " ".join(rng.choice(WORDS) for _ in range(300)) + "\n"
    return files


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
