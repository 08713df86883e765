"""Stage 3 of selection: what the budget buys. Units (a chunk of a file with its expected gain, or a memory) go in
by gain per token, discounted by what the chosen ones already say; then the document is rendered in its format and
counted exactly, and units are taken out or added until it fits."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..keys import Key
from ..requests import SelectRequest
from .assemble import Layout, base_cost, document, item_overhead, text_cost
from .items import Item
from .redundancy import is_copy, redundancy, vocabulary
from .regions import Chunk


@dataclass(frozen=True)
class Unit:
    """Something the budget can buy: a chunk of a file (with the expected gain of showing it), or a memory."""

    key: Key
    """A chunk of a file, or a memory."""
    path: str
    gain: float
    cost: int
    header: int = 0
    """Tokens of the file's header, paid by the first of its chunks to go in."""
    chunk: Chunk | None = None
    item: Item | None = None
    pinned: bool = False
    """The person pinned it: it goes in even when it repeats what is already in."""

    @property
    def group(self) -> Key:
        """What it belongs to, as `Limits` counts it: its file, or the memory itself."""
        return Key.file(self.path) if self.path else self.key


def groups_of(units: list[Unit]) -> set[Key]:
    """What the units hold, as `Limits` counts it: files and memories."""
    return {u.group for u in units}


@dataclass(frozen=True)
class Render:
    """How the document is rendered and counted: the same for every trial of one selection."""

    task: str
    commit: str
    encoding: str
    layout: Layout

    def document(self, items: list[Item]):
        return document(self.task, self.commit, self.encoding, items, self.layout)

    def overhead(self, item: Item) -> int:
        return item_overhead(self.task, self.commit, self.encoding, item, self.layout)

    def cost(self, text: str) -> int:
        return text_cost(text, self.encoding, self.layout.fmt)

    def base(self) -> int:
        return base_cost(self.task, self.commit, self.encoding, self.layout)


@dataclass(frozen=True)
class Limits:
    """How many items (files and memories) and how many files a context may hold (None: as many as fit), and what a
    unit must be worth to go in at all."""

    items: int | None = None
    files: int | None = None
    gain_per_token: float = 0.0
    """Units whose expected gain per token is below this stay out however much budget is left: a context stops when
    nothing relevant is left rather than filling its budget (mandatory units are exempt)."""

    def worth(self, u: Unit) -> bool:
        return u.gain > 0 and u.gain / max(u.cost, 1) >= self.gain_per_token

    def room(self, u: Unit, groups: set[Key]) -> bool:
        """Whether `u` fits beside the chosen `groups` (files and memories)."""
        if u.group in groups:
            return True
        if self.items is not None and len(groups) >= self.items:
            return False
        files = sum(1 for g in groups if g.kind == "file")
        return not (u.path and self.files is not None and files >= self.files)


def plan(units: list[Unit], mandatory: list[Unit], budget: int, limits: Limits) -> list[Unit]:
    """Mandatory units first (while they fit), then the best expected gain per token, each unit's gain discounted
    by what the chosen units already say (`redundancy.py`). The discount only grows as units go in, so a unit's
    last computed gain bounds its next: lazy greedy re-checks only the head of the queue."""
    chosen: list[Unit] = []
    keys: set[Key] = set()
    used = 0
    groups: set[Key] = set()
    said = Said()

    def take(u: Unit) -> bool:
        nonlocal used
        group = u.group
        cost = u.cost + (u.header if group not in groups else 0)
        if u.key in keys or used + cost > budget:
            return False
        if not limits.room(u, groups):
            return False
        chosen.append(u)
        keys.add(u.key)
        groups.add(group)
        said.add(u)
        used += cost
        return True

    for u in mandatory:
        if u.pinned or not said.copy_of(u):
            take(u)
    queue = [(-u.gain / max(u.cost, 1), u.key, u) for u in units if limits.worth(u) and u.key not in keys]
    heapq.heapify(queue)
    while queue:
        _, key, u = heapq.heappop(queue)
        if said.copy_of(u):
            continue
        fresh = replace(u, gain=said.marginal(u))
        if not limits.worth(fresh):
            continue
        priority = -fresh.gain / max(fresh.cost, 1)
        if queue and priority > queue[0][0]:
            heapq.heappush(queue, (priority, key, u))  # the original gain: the discount is recomputed whole
            continue
        take(fresh)
    return chosen


class Said:
    """The vocabularies of the chosen units, to discount a candidate by what they already say."""

    def __init__(self) -> None:
        self._chosen: list[frozenset[str]] = []
        self._groups: list[Key] = []
        self._vocab: dict[Key, frozenset[str]] = {}

    @classmethod
    def of(cls, chosen: list[Unit]) -> Said:
        said = cls()
        for u in chosen:
            said.add(u)
        return said

    def vocabulary(self, u: Unit) -> frozenset[str]:
        if u.key not in self._vocab:
            text = u.chunk.text if u.chunk is not None else u.item.text if u.item is not None else ""
            self._vocab[u.key] = vocabulary(text)
        return self._vocab[u.key]

    def add(self, u: Unit) -> None:
        self._chosen.append(self.vocabulary(u))
        self._groups.append(u.group)

    def marginal(self, u: Unit) -> float:
        return u.gain * (1.0 - redundancy(self.vocabulary(u), self._chosen))

    def copy_of(self, u: Unit) -> Key | None:
        """The file or memory of a chosen unit that `u` copies nearly word for word, else None."""
        words = self.vocabulary(u)
        for chosen, group in zip(self._chosen, self._groups):
            if group != u.group and is_copy(words, chosen):
                return group
        return None


@dataclass(frozen=True)
class Pool:
    """Every unit that may go in, those that must, and the limits the choice keeps to."""

    units: list[Unit]
    mandatory: list[Unit]
    limits: Limits


def fit(chosen: list[Unit], pool: Pool, request: SelectRequest, build: Callable[[list[Unit]], list[Item]],
         render: Render):
    """Render in the requested format and count exactly: take out the weakest chunks while over the budget, then
    add the next best ones while they still fit."""
    budget, limits = request.budget, pool.limits
    protected = {u.key for u in pool.mandatory}
    chosen = list(chosen)
    doc = render.document(build(chosen))
    while doc.tokens > budget and chosen:
        weakest = min(chosen, key=lambda u: (u.key in protected, u.gain / max(u.cost, 1)))
        chosen.remove(weakest)
        doc = render.document(build(chosen))
    keys = {u.key for u in chosen}
    groups = groups_of(chosen)
    said = Said.of(chosen)
    tries = 0
    for u in sorted(pool.units, key=lambda u: (-u.gain / max(u.cost, 1), u.key)):
        slack = budget - doc.tokens
        if tries >= 8 or slack <= 0:
            break
        group = u.group
        if u.key in keys or u.cost > slack or said.copy_of(u):
            continue
        u = replace(u, gain=said.marginal(u))
        if not limits.worth(u):
            continue
        if not limits.room(u, groups):
            continue
        tries += 1
        trial = render.document(build(chosen + [u]))
        if trial.tokens <= budget:
            chosen.append(u)
            keys.add(u.key)
            groups.add(group)
            said.add(u)
            doc = trial
    return chosen, doc
