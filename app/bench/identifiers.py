"""Identifier questions mined from an indexed tree for `cortex bench search`: what a person types when they know
(roughly) the name of what they want.

From the chunks' own symbols (the index records what each chunk defines): names defined once in the source
(`parse_cookie` -> its definition), qualified methods (`MapAdapter.match`, preferring methods whose short name is
defined more than once, so the qualifier matters), a few names with two neighbouring letters swapped, and a few
typed only in part (the first 70 % of a name that no other name starts with). The answer is the chunk that defines
the name; tests, docs and examples never provide one.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from ...core.index.languages import is_test_path
from ...core.search.roles import path_role

MIN_NAME = 6
"""Shorter names (`run`, `get`, `main`) are not what anyone searches by name alone."""


@dataclass(frozen=True)
class Identifier:
    """One mined question: the text typed and where the defining chunk lies."""

    text: str
    form: str
    """`name`, `qualified`, `misspelled` or `partial`."""
    spans: tuple[tuple[str, int, int], ...]
    """Every chunk defining the name (path, first line, last line): overloads and re-declarations all count."""


def _short(symbol: str) -> str:
    return symbol.rsplit(".", 1)[-1]


def _swap(name: str, rng: random.Random) -> str | None:
    """The name with two different neighbouring letters inside it swapped (never the first or last letter)."""
    spots = [i for i in range(1, len(name) - 2) if name[i] != name[i + 1] and name[i].isalpha() and name[i + 1].isalpha()]
    if not spots:
        return None
    i = rng.choice(spots)
    return name[:i] + name[i + 1] + name[i] + name[i + 2:]


def mine(chunks: list[dict], seed: str, names: int = 6, qualified: int = 3, misspelled: int = 2,
         partial: int = 1) -> list[Identifier]:
    """Questions from chunk rows (`path`, `start_line`, `end_line`, `symbols`), the same for the same rows and
    seed."""
    rng = random.Random(seed)
    counts: Counter = Counter()
    where: dict[str, dict] = {}
    spans: dict[str, list[tuple[str, int, int]]] = {}
    for row in chunks:
        for symbol in row["symbols"] or []:
            counts[_short(symbol).lower()] += 1
            where.setdefault(symbol, row)
            spans.setdefault(symbol, []).append((row["path"], row["start_line"], row["end_line"]))
    source = {s: row for s, row in where.items()
              if path_role(row["path"], is_test_path(row["path"])) == "code" and not _short(s).startswith("_")
              and len(_short(s)) >= MIN_NAME and _short(s).isidentifier()}
    unique = sorted(s for s in source if "." not in s and counts[s.lower()] == 1)
    methods = sorted(s for s in source if s.count(".") == 1 and s.split(".")[0].isidentifier())
    shared = [s for s in methods if counts[_short(s).lower()] > 1]
    out: list[Identifier] = []

    def add(text: str, form: str, symbol: str) -> None:
        out.append(Identifier(text, form, tuple(spans[symbol])))

    picked = rng.sample(unique, min(names, len(unique)))
    for s in picked:
        add(s, "name", s)
    qualified_pool = shared if len(shared) >= qualified else methods
    for s in rng.sample(qualified_pool, min(qualified, len(qualified_pool))):
        add(s, "qualified", s)
    rest = [s for s in unique if s not in picked and len(s) >= 8]
    rng.shuffle(rest)
    known = {s.lower() for s in counts}
    made = 0
    for s in rest:
        if made >= misspelled:
            break
        typo = _swap(s, rng)
        if typo and typo.lower() not in known:
            add(typo, "misspelled", s)
            made += 1
    shorts = sorted(counts)
    made = 0
    for s in rest[misspelled:]:
        if made >= partial:
            break
        prefix = s[: max(MIN_NAME - 1, int(len(s) * 0.7))].lower()
        if prefix != s.lower() and sum(n.startswith(prefix) for n in shorts) == 1:
            add(s[: len(prefix)], "partial", s)
            made += 1
    return out
