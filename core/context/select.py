"""Context selection under a token budget: the objective is that the code a task will change is visible.

Three stages, split where the data changes shape:

1. Files: every candidate file gets a value from weighted signals (`SelectWeights`): lexical (BM25 rank of its best
   chunk), semantic (cosine of its best chunk), identifiers of the task it defines, being named in the task,
   import-graph proximity (personalised PageRank), git recency (for files already relevant), linked memories, the
   working change; times its role (tests, docs and translations, changelogs and release notes, CI files and
   licences, examples and fixtures count only when the task is about them).
2. Regions: the chunks (parse-tree spans) of the best files are scored for how likely the task changes them
   (`regions.py`). A file's chance of being the one to change, times a chunk's share of that chance, is the
   expected gain of showing the chunk.
3. Budget: the three best files always get in (whole if small, else their best region); then chunks go in by
   expected gain per token, so budget goes to fewer, complete, relevant regions. The document is rendered in the
   requested format and counted exactly; chunks are taken out or added until it fits, so the total reported is
   the count of what is copied.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from ..config import SelectWeights
from ..errors import CortexError
from ..requests import SelectRequest
from ..search.query import code_names
from ..search.roles import asked_topics, role_weight
from ..store.near import texts_say_the_same
from ..store.sql import in_filter, scan
from .assemble import Layout, check_format, document, item_overhead, text_cost
from .items import Item, Selection
from .purposes import DEFAULT, check_purpose
from .redundancy import redundancy, vocabulary
from .regions import Chunk, chunk_relevance, edit_shares, reduced_text, whole_text, words
from .select_files import FileReads, named_files

__all__ = ["Item", "Selection", "SelectInputs", "check_request", "choose", "load_chunks", "named_files"]

REGION_FILES = 12
"""Files whose chunks are scored and may enter: the ranking's head, where almost every edit lies."""
GUARANTEED = 3
"""The best files that always get in (whole when small, else at least their best region)."""
SMALL_FILE_SHARE = 0.15
"""A guaranteed file goes in whole when it takes at most this share of the budget."""
FILE_SHARPNESS = 2.0
"""Chance that a file is the one to change, from its value relative to the best: (value / best) ** this."""
MIN_FILE_CHANCE = 0.02
PRESENCE = 1.0
"""Extra gain for a file's first (most relevant) chunk: seeing that a file matters is worth as much again as
seeing its edited lines, so a likely file gets one region before a likelier file gets its fifth."""
"""Files less likely than this are not worth any budget."""


@dataclass
class _FileCandidate:
    path: str
    is_test: bool
    tokens: int
    last_commit: datetime | None
    symbols: set[str]
    lexical: float = 0.0
    semantic: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)
    value: float = 0.0


@dataclass(frozen=True)
class _Unit:
    """Something the budget can buy: a chunk of a file (with the expected gain of showing it), or a memory."""

    key: str
    path: str
    gain: float
    cost: int
    header: int = 0
    """Tokens of the file's header, paid by the first of its chunks to go in."""
    chunk: Chunk | None = None
    item: Item | None = None


@dataclass(frozen=True)
class SelectInputs:
    """Everything selection reads from the repository, gathered once: the feature itself never calls back into the
    engine (and a benchmark can replay these inputs)."""

    task: str
    files: FileReads
    """The indexed files' rows, read for the candidates only, and the import graph's proximity."""
    code_hits: list
    """Search hits over code (`search.SearchHit`), best first."""
    memory_hits: list
    changed: list[str]
    commit: str
    encoding: str
    chunks: Callable[[list[str]], dict[str, list[Chunk]]]
    """Loads the chunks (with vectors when embedded) of some files."""
    query_vector: Callable[[], np.ndarray | None]
    """The task's embedding, asked for only when chunks carry vectors."""


def check_request(task: str, budget: int, include_tests: str, fmt: str, purpose: str = DEFAULT) -> None:
    """Refuse a request selection cannot answer before anything is read or indexed for it."""
    if budget <= 0:
        raise CortexError(f"budget must be a positive number of tokens (got {budget})")
    if not task.strip():
        raise CortexError("the task is empty: say what you want to do")
    if include_tests not in ("yes", "no", "auto"):
        raise CortexError("--include-tests takes yes, no or auto")
    check_format(fmt)
    check_purpose(purpose)


@dataclass(frozen=True)
class _Render:
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


def choose(inputs: SelectInputs, request: SelectRequest, weights: SelectWeights) -> Selection:
    """Files, then regions, then the budget (see the module's docstring)."""
    task, encoding, commit = inputs.task, inputs.encoding, inputs.commit
    budget, pins, excluded, include_tests = request.budget, request.pins, request.excluded, request.include_tests
    render = _Render(task, commit, encoding, Layout(request.fmt, request.purpose))
    # A task asks for tests in its words or by naming a test file; in `auto` tests enter only then.
    topics = asked_topics(task)
    topics["tests"] = include_tests == "yes" or (include_tests == "auto" and topics["tests"])
    ranked, named_syms = _rank_files(weights, inputs, pins, topics)
    if not topics["tests"]:
        ranked = [c for c in ranked if not c.is_test or c.path in pins]
    ranked = [c for c in ranked if c.path not in excluded and c.value > 0]

    notes: list[str] = []
    head = [c for c in ranked if c.value >= request.min_score][:REGION_FILES]
    if ranked and not head and not _memories_clear(weights.memory_item, inputs.memory_hits, request):
        # Nothing clears the floor: an empty context helps no one, so the best files go in, with a warning.
        head = ranked[:GUARANTEED]
        notes.append(f"nothing reaches the minimum score {request.min_score:g} (the best file scores "
                     f"{ranked[0].value:.3f}): the top {len(head)} file(s) instead")
    head += [c for c in ranked if c.path in pins and c not in head]
    chunks = inputs.chunks([c.path for c in head])
    has_vectors = any(c.vector is not None for cs in chunks.values() for c in cs)
    relevance = chunk_relevance([c for cs in chunks.values() for c in cs], _task_terms(task), named_syms,
                                {h.id: h.score.total for h in inputs.code_hits},
                                inputs.query_vector() if has_vectors else None)

    headers = {c.path: render.overhead(Item("", "reduced", c.path, "", 0, 0.0, {}, ranges=((1, 1),))) for c in head}
    units, mandatory = _units(head, chunks, relevance, headers, request, render)
    memories = _memory_units(weights.memory_item, inputs.memory_hits, request, render)
    units += memories
    mandatory = [u for u in memories if u.key in pins] + mandatory
    chosen_units = _plan(units, mandatory, budget, _Limits(request.max_items, request.max_files))

    def build(picked: list[_Unit]) -> list[Item]:
        return _items(picked, head, chunks, relevance, headers, render)

    chosen_units, doc = _fit(chosen_units, _Pool(units, mandatory), request, build, render)
    chosen = build(chosen_units)
    chosen_paths = {i.path for i in chosen if i.kind != "memory"}
    left_out = [Item(f"file:{c.path}", "file", c.path, "", c.tokens, round(c.value, 4), _rounded(c.signals),
                     is_test=c.is_test) for c in ranked if c.path not in chosen_paths][:50]
    if not chosen and units:
        smallest = min(u.cost for u in units)
        notes.append(f"nothing fits: the smallest candidate needs {smallest} tokens, the budget is {budget}")
    if not units:
        notes.append("no candidates: nothing indexed matches the task")
    return Selection(task, budget, encoding, chosen, left_out, [c.path for c in ranked], notes, commit, request.fmt,
                     doc.tokens if chosen else 0, min_score=request.min_score, purpose=request.purpose)


# --- stage 1: files ------------------------------------------------------------------------------------------------


def _rank_files(weights, inputs: SelectInputs, pins: frozenset[str],
                topics: dict[str, bool]) -> tuple[list[_FileCandidate], set[str]]:
    """The ranked candidates, and the short names of symbols the repository defines that the task names (`topics`:
    the task's, with "tests" as the include-tests choice settled it)."""
    task, files, code_hits, memory_hits, changed = (inputs.task, inputs.files, inputs.code_hits, inputs.memory_hits,
                                                    inputs.changed)
    candidates: dict[str, _FileCandidate] = {}
    named = files.named(task)
    task_idents = _task_identifiers(task)
    # Files that define a symbol the task names are candidates even when full-text search ranked them low.
    definers = files.defining(task_idents)
    named_syms = {s.rsplit(".", 1)[-1].lower() for row in definers.values() for s in row["symbols"] or []} & task_idents
    rows = files.rows([*(h.path for h in code_hits), *named, *changed, *pins]) | definers

    def candidate(path: str) -> _FileCandidate | None:
        row = rows.get(path)
        if row is None:
            return None
        if path not in candidates:
            candidates[path] = _FileCandidate(
                path, bool(row["is_test"]), int(row["tokens"] or 0), row["last_commit_time"], set(row["symbols"] or [])
            )
        return candidates[path]

    for hit in code_hits:
        c = candidate(hit.path)
        if c is None:
            continue
        text_rank = hit.score.ranks.get("text")
        c.lexical = max(c.lexical, 1.0 / math.sqrt(text_rank) if text_rank else 0.0)
        c.semantic = max(c.semantic, max(hit.score.similarity or 0.0, 0.0))
    for path in [*named, *changed, *pins, *definers]:
        candidate(path)
    # Import-graph neighbours of what the task names and of the best lexical hits: the file a fix also touches is
    # often one they import or are imported by (on the dev set this lifted edit recall 0.78 -> 0.81).
    seeds = [*named, *changed] + [p for p, _ in sorted(candidates.items(), key=lambda kv: -kv[1].lexical)[:5]]
    proximity = files.proximity(seeds)
    near = [path for path, score in sorted(proximity.items(), key=lambda kv: -kv[1])[:30] if score > 0.05]
    rows |= files.rows([p for p in near if p not in rows])
    for path in near:
        candidate(path)
    mentions = _memory_mentions(memory_hits)
    now = datetime.now(UTC)
    for c in candidates.values():
        short = {s.rsplit(".", 1)[-1].lower() for s in c.symbols} | {s.lower() for s in c.symbols}
        overlap = len(task_idents & short)
        recency = 0.0
        if c.last_commit is not None and (c.lexical > 0 or c.path in named):
            last = c.last_commit if c.last_commit.tzinfo else c.last_commit.replace(tzinfo=UTC)
            recency = math.exp(-max((now - last).days, 0) / 90)
        c.signals = {
            "lexical": c.lexical,
            "semantic": c.semantic,
            "identifiers": min(overlap / 2.0, 1.0),
            "named": 1.0 if c.path in named else 0.0,
            "recency": recency,
            "memories": mentions.get(c.path, 0.0),
            "changed": 1.0 if c.path in changed else 0.0,
            "graph": proximity.get(c.path, 0.0),
        }
        role = role_weight(c.path, c.is_test, topics)
        c.signals["role"] = role
        c.value = role * sum(getattr(weights, name) * value for name, value in c.signals.items() if name != "role")
        if c.path in pins:
            c.value = max(c.value, 1e-6)
    return sorted(candidates.values(), key=lambda c: (-c.value, c.path)), named_syms


def _task_identifiers(task: str) -> set[str]:
    return {name.lower() for name in code_names(task)}


def _task_terms(task: str) -> dict[str, float]:
    """The task's words for chunk BM25; words that are code-shaped count double."""
    idents = _task_identifiers(task)
    terms: dict[str, float] = {}
    for w in words(task[:20000]):
        terms[w] = 2.0 if w in idents else max(terms.get(w, 0.0), 1.0)
    return terms


def _memory_mentions(hits) -> dict[str, float]:
    out: dict[str, float] = {}
    best = max((h.score.total for h in hits), default=0.0) or 1.0
    for h in hits:
        for path in h.memory.files:
            out[path] = max(out.get(path, 0.0), h.score.total / best)
    return out


def _rounded(signals: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in signals.items()}


# --- stage 2: regions ----------------------------------------------------------------------------------------------


def load_chunks(chunks_table, paths: list[str], with_vectors: bool) -> dict[str, list[Chunk]]:
    if not paths:
        return {}
    columns = ["id", "path", "start_line", "end_line", "text", "symbols", "refs", "tokens"]
    if with_vectors:
        columns += ["embedded", "vector"]
    rows = scan(chunks_table, in_filter("path", paths), columns)
    out: dict[str, list[Chunk]] = {p: [] for p in paths}
    for r in rows:
        vector = np.asarray(r["vector"], dtype=np.float32) if with_vectors and r["embedded"] else None
        out[r["path"]].append(Chunk(r["id"], r["path"], r["start_line"], r["end_line"], r["text"], tuple(r["symbols"] or ()),
                                    tuple(r["refs"] or ()), int(r["tokens"] or 0), vector))
    for cs in out.values():
        cs.sort(key=lambda c: c.start_line)
    return out


def _units(head, chunks, relevance, headers, request: SelectRequest, render: _Render) -> tuple[list[_Unit], list[_Unit]]:
    """Every chunk of the head files as a unit with its expected gain; and the units that must go in first
    (pinned files whole, the guaranteed files whole when small or else their best chunk)."""
    pins, budget = request.pins, request.budget
    best = max((c.value for c in head), default=0.0) or 1.0
    units: list[_Unit] = []
    mandatory: list[_Unit] = []
    for rank, c in enumerate(head):
        file_chunks = chunks.get(c.path) or []
        if not file_chunks:
            continue
        chance = 1.0 if c.path in pins else (c.value / best) ** FILE_SHARPNESS
        if chance < MIN_FILE_CHANCE and rank >= GUARANTEED:
            continue
        shares = edit_shares(file_chunks, relevance)
        lead = max(file_chunks, key=lambda ch: (relevance[ch.id].score, -ch.tokens)).id
        file_units = [_Unit(f"chunk:{ch.id}", c.path, chance * (shares[ch.id] + (PRESENCE if ch.id == lead else 0.0)),
                            render.cost(ch.text), headers[c.path], chunk=ch) for ch in file_chunks]
        units.extend(file_units)
        if c.path in pins:
            mandatory.extend(file_units)
        elif rank < GUARANTEED:
            whole = sum(u.cost for u in file_units) + headers[c.path]
            if whole <= SMALL_FILE_SHARE * budget:
                mandatory.extend(file_units)
            else:
                # A unit without a chunk (a whole file) would raise here; it ranks last instead.
                mandatory.append(max(file_units, key=lambda u: (relevance[u.chunk.id].score if u.chunk else 0.0, u.cost)))
    return units, mandatory


def _memories_clear(weight: float, hits, request: SelectRequest) -> bool:
    """Whether any memory's value reaches the floor (`_memory_units` scales the best memory to `weight`)."""
    return bool(hits) and weight >= request.min_score


def _memory_units(weight: float, hits, request: SelectRequest, render: _Render) -> list[_Unit]:
    out = []
    best = max((h.score.total for h in hits), default=0.0) or 1.0
    kept: list[str] = []
    for hit in hits:
        m = hit.memory
        value = weight * hit.score.total / best
        if f"memory:{m.id}" in request.excluded or value < request.min_score:
            continue
        # Two memories that say the same thing cost twice and tell once: the better ranked one is kept.
        if any(texts_say_the_same(m.text, other) for other in kept):
            continue
        kept.append(m.text)
        item = Item(f"memory:{m.id}", "memory", "", m.text, 0, round(value, 4), {"relevance": round(hit.score.relevance, 3)},
                    memory=m)
        cost = render.cost(m.text) + render.overhead(item)
        out.append(_Unit(item.key, "", value, cost, item=replace(item, tokens=cost)))
    return out


# --- stage 3: budget -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Limits:
    """How many items (files and memories) and how many files a context may hold; None: as many as fit."""

    items: int | None = None
    files: int | None = None

    def room(self, u: _Unit, groups: set[str]) -> bool:
        """Whether `u` fits beside the chosen `groups` (a file's path, or a memory's key)."""
        group = u.path or u.key
        if group in groups:
            return True
        if self.items is not None and len(groups) >= self.items:
            return False
        files = sum(1 for g in groups if not g.startswith("memory:"))
        return not (u.path and self.files is not None and files >= self.files)


def _plan(units: list[_Unit], mandatory: list[_Unit], budget: int, limits: _Limits) -> list[_Unit]:
    """Mandatory units first (while they fit), then the best expected gain per token, each unit's gain discounted
    by what the chosen units already say (`redundancy.py`). The discount only grows as units go in, so a unit's
    last computed gain bounds its next: lazy greedy re-checks only the head of the queue."""
    chosen: list[_Unit] = []
    keys: set[str] = set()
    used = 0
    groups: set[str] = set()
    said = _Said()

    def take(u: _Unit) -> bool:
        nonlocal used
        group = u.path or u.key
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
        take(u)
    queue = [(-u.gain / max(u.cost, 1), u.key, u) for u in units if u.gain > 0 and u.key not in keys]
    heapq.heapify(queue)
    while queue:
        _, key, u = heapq.heappop(queue)
        fresh = replace(u, gain=said.marginal(u))
        if fresh.gain <= 0:
            continue
        priority = -fresh.gain / max(fresh.cost, 1)
        if queue and priority > queue[0][0]:
            heapq.heappush(queue, (priority, key, u))  # the original gain: the discount is recomputed whole
            continue
        take(fresh)
    return chosen


class _Said:
    """The vocabularies of the chosen units, to discount a candidate by what they already say."""

    def __init__(self) -> None:
        self._chosen: list[frozenset[str]] = []
        self._vocab: dict[str, frozenset[str]] = {}

    def vocabulary(self, u: _Unit) -> frozenset[str]:
        if u.key not in self._vocab:
            text = u.chunk.text if u.chunk is not None else u.item.text if u.item is not None else ""
            self._vocab[u.key] = vocabulary(text)
        return self._vocab[u.key]

    def add(self, u: _Unit) -> None:
        self._chosen.append(self.vocabulary(u))

    def marginal(self, u: _Unit) -> float:
        return u.gain * (1.0 - redundancy(self.vocabulary(u), self._chosen))


@dataclass(frozen=True)
class _Pool:
    """Every unit that may go in, and those that must."""

    units: list[_Unit]
    mandatory: list[_Unit]


def _fit(chosen: list[_Unit], pool: _Pool, request: SelectRequest, build: Callable[[list[_Unit]], list[Item]],
         render: _Render):
    """Render in the requested format and count exactly: take out the weakest chunks while over the budget, then
    add the next best ones while they still fit."""
    budget, limits = request.budget, _Limits(request.max_items, request.max_files)
    protected = {u.key for u in pool.mandatory}
    chosen = list(chosen)
    doc = render.document(build(chosen))
    while doc.tokens > budget and chosen:
        weakest = min(chosen, key=lambda u: (u.key in protected, u.gain / max(u.cost, 1)))
        chosen.remove(weakest)
        doc = render.document(build(chosen))
    keys = {u.key for u in chosen}
    groups = {u.path or u.key for u in chosen}
    said = _Said()
    for u in chosen:
        said.add(u)
    tries = 0
    for u in sorted(pool.units, key=lambda u: (-u.gain / max(u.cost, 1), u.key)):
        slack = budget - doc.tokens
        if tries >= 8 or slack <= 0:
            break
        group = u.path or u.key
        if u.key in keys or u.cost > slack:
            continue
        u = replace(u, gain=said.marginal(u))
        if u.gain <= 0:
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


def _items(picked, head, chunks, relevance, headers, render: _Render) -> list[Item]:
    """One item per file (whole when every chunk is in, else its regions) and one per memory."""
    by_path: dict[str, set[str]] = {}
    items: list[Item] = []
    for u in picked:
        if u.item is not None:
            items.append(u.item)
        else:
            by_path.setdefault(u.path, set()).add(u.chunk.id)
    for c in head:
        keep = by_path.get(c.path)
        if not keep:
            continue
        file_chunks = chunks[c.path]
        symbols = frozenset(s for ch in file_chunks for s in ch.symbols)
        signals = _rounded(c.signals)
        if len(keep) == len(file_chunks):
            text = whole_text(file_chunks)
            kind = "file"
            ranges: tuple[tuple[int, int], ...] = ((1, max(ch.end_line for ch in file_chunks)),)
        else:
            text, ranges = reduced_text(file_chunks, keep)
            kind = "reduced"
            signals["regions"] = round(max(relevance[cid].score for cid in keep), 3)
        items.append(Item(f"{kind}:{c.path}", kind, c.path, text, render.cost(text) + headers[c.path],
                          round(c.value, 4), signals, ranges=ranges, symbols=symbols, is_test=c.is_test))
    return items
