"""Context selection under a token budget: the objective is that the code a task will change is visible.

Three stages, split where the data changes shape:

1. Files: every candidate file gets a value from weighted signals (`SelectWeights`): lexical (BM25 ranks of its
   chunks, best first, each worth half the one before), semantic (cosine of its best chunk), identifiers of the
   task it defines, being named in the task, import-graph proximity (personalised PageRank), git recency (for
   files already relevant), linked memories, the working change; times its role (tests, docs and translations,
   changelogs and release notes, CI files and licences, examples and fixtures count only when the task is about
   them, and the project's records, changelogs, AUTHORS and CI files, and docs even then at 0.3, docs at 1 for a
   draft). Credit trailers and e-mail addresses are not read as the task, nor a link's words as its topics
   (`task_words.py`).
2. Regions: the chunks (parse-tree spans) of the best files are scored for how likely the task changes them
   (`regions.py`). A file's chance of being the one to change, times a chunk's share of that chance, is the
   expected gain of showing the chunk.
3. Budget: the best file always gets in (whole if small, else its best region) and is read in depth the more
   clearly it leads; then chunks go in by expected gain per token while they are worth their tokens, so budget
   goes to fewer, complete, relevant regions and a context stops when nothing relevant is left. The document is
   rendered in the requested format and counted exactly; chunks are taken out or added until it fits, so the
   total reported is the count of what is copied.

Stage 1 is `file_ranking.py`, stage 3 `fitting.py`; this module holds stage 2 and puts the three together.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..config import SelectWeights
from ..errors import CortexError
from ..keys import Key
from ..requests import INCLUDE_TESTS, SelectRequest
from ..search.roles import asked_topics
from ..store.near import texts_say_the_same
from ..store.schema import LEXICAL_ONLY
from ..store.sql import in_filter, scan
from .assemble import Layout, check_format
from .file_ranking import ASKED_DOCS, rank_files, task_identifiers
from .fitting import Limits, Pool, Render, Said, Unit, fit, groups_of, plan
from .inputs import SelectInputs
from .items import BELOW_FLOOR, OVER_BUDGET, Item, ItemKind, Selection
from .purpose_names import DEFAULT
from .purposes import check_purpose
from .redundancy import is_copy, vocabulary
from .regions import Chunk, chunk_relevance, edit_shares, reduced_text, whole_text, words
from .select_files import named_files
from .task_words import without_credits, without_links

__all__ = ["Item", "Selection", "SelectInputs", "check_request", "choose", "load_chunks", "named_files"]

FALLBACK = 3
"""The best files that go in, with a warning, when nothing reaches the request's minimum score."""
REGION_FILES = 12
"""Files whose chunks are scored and may enter: the ranking's head, where almost every edit lies."""
PAST_HEAD = f"past the first {REGION_FILES} relevant files"
"""Why a file over the evidence floor is out: only the head's regions are weighed (it was said "below the floor")."""
GUARANTEED = 1
"""The best files that always get in (whole when small, else at least their best region). One: the others go in
by what they are worth (on every 3rd dev task, three guaranteed files gave the same edit recall at 4,000 and
12,000 tokens with 10% less of the context in the edited files)."""
SMALL_FILE_SHARE = 0.15
"""A guaranteed file goes in whole when it takes at most this share of the budget."""
FILE_SHARPNESS = 3.0
"""Chance that a file is the one to change, from its value relative to the best: (value / best) ** this."""
MIN_FILE_CHANCE = 0.02
"""Files less likely than this are not worth any budget."""
FILE_FLOOR = 0.15
"""A file enters only when the task's own evidence for it (words, meaning, names) is at least this share of the
best file's."""
LEAD_FLOOR = 0.7
"""How far below a leading file the others may trail, times the lead (see `_within_lead`)."""
PROSE = ("drafting",)
"""The purposes whose reader wants prose: asked-for docs weigh as code for them (`file_ranking.ASKED_DOCS`)."""
MEMORY_FLOOR = 0.35
"""A memory enters only when its search score is at least this share of the task's best hit's."""
LEAD_DEPTH = 8.0
"""The leading file's regions are worth up to this much more than their share of its chance, in proportion to how
far the second file is behind it: a context a task clearly points at reads that file in depth rather than glimpsing
weaker files (on every 3rd dev task the share of a context's tokens in edited files rose 0.04-0.07 at every budget,
edit recall within 0.01)."""
LATER_DEPTH = 0.5
"""A file after the leading one is worth half its share beyond its lead region: it is in to be seen, and read in
depth only when its further regions are clearly relevant."""
STOP_GAIN_PER_TOKEN = 3e-5
"""Expected gain per token under which a region or memory is not worth reading: the context stops there."""
PRESENCE = 1.0
"""Extra gain for a file's first (most relevant) chunk: seeing that a file matters is worth as much again as
seeing its edited lines, so a likely file gets one region before a likelier file gets its fifth."""


def check_request(task: str, budget: int, include_tests: str, fmt: str, purpose: str = DEFAULT) -> None:
    """Refuse a request selection cannot answer before anything is read or indexed for it."""
    if budget <= 0:
        raise CortexError(f"budget must be a positive number of tokens (got {budget})")
    if not task.strip():
        raise CortexError("the task is empty: say what you want to do")
    if include_tests not in INCLUDE_TESTS:
        raise CortexError("--include-tests takes yes, no or auto")
    check_format(fmt)
    check_purpose(purpose)


def choose(inputs: SelectInputs, request: SelectRequest, weights: SelectWeights) -> Selection:
    """Files, then regions, then the budget (see the module's docstring)."""
    task, encoding, commit = inputs.task, inputs.encoding, inputs.commit
    budget, include_tests = request.budget, request.include_tests
    pins, excluded = request.pinned("file"), request.left_out("file")
    render = Render(task, commit, encoding, Layout(request.fmt, request.purpose))
    # Files are weighed by what the task says about the change, not by whom it credits (`task_words`).
    inputs = replace(inputs, task=without_credits(task))
    # A task asks for tests in its words or by naming a test file; in `auto` tests enter only then.
    # A link's words are an address (`github.com/.../issues/12`, `docs.rs/...`), not a topic the task asks for.
    topics = asked_topics(without_links(inputs.task))
    topics["tests"] = include_tests == "yes" or (include_tests == "auto" and topics["tests"])
    ranked, named_syms = rank_files(weights, inputs, pins, topics, 1.0 if request.purpose in PROSE else ASKED_DOCS)
    if not topics["tests"]:
        ranked = [c for c in ranked if not c.is_test or c.path in pins]
    ranked = [c for c in ranked if c.path not in excluded and c.value > 0]
    # The floor is set against the task's best candidate: a file the task's own words, meaning or names do not
    # point to enters for no other reason (being changed, recent, or named by a memory only reorders).
    floor = FILE_FLOOR * max((c.evidence for c in ranked), default=0.0)
    relevant = [c for c in ranked if c.path in pins or (c.evidence > 0 and c.evidence >= floor)]
    relevant = _within_lead(relevant, pins)

    notes: list[str] = []
    head = [c for c in relevant if c.value >= request.min_score][:REGION_FILES]
    if relevant and not head and not _memories_clear(weights.memory_item, inputs, request):
        # Nothing clears the floor: an empty context helps no one, so the best files go in, with a warning.
        head = relevant[:FALLBACK]
        notes.append(f"nothing reaches the minimum score {request.min_score:g} (the best file scores "
                     f"{relevant[0].value:.3f}): the top {len(head)} file(s) instead")
    head += [c for c in ranked if c.path in pins and c not in head]
    chunks = inputs.chunks([c.path for c in head])
    head, copies = _without_copies(head, chunks, set(inputs.changed), pins)
    has_vectors = any(c.vector is not None for cs in chunks.values() for c in cs)
    relevance = chunk_relevance([c for cs in chunks.values() for c in cs], _task_terms(inputs.task), named_syms,
                                {h.id: h.score.total for h in inputs.code_hits},
                                inputs.query_vector() if has_vectors else None)

    headers = {c.path: render.overhead(Item(Key.file(c.path), "reduced", c.path, "", 0, 0.0, {}, ranges=((1, 1),)))
               for c in head}
    units, mandatory = _units(head, chunks, relevance, headers, request, render)
    memories, memories_out = _memory_units(weights.memory_item, inputs, request, render)
    units += memories
    mandatory = [u for u in memories if u.key in request.pins] + mandatory
    limits = Limits(request.max_items, request.max_files, STOP_GAIN_PER_TOKEN)
    chosen_units = plan(units, mandatory, budget, limits)

    def build(picked: list[Unit]) -> list[Item]:
        return _items(picked, head, chunks, relevance, headers, render)

    chosen_units, doc = fit(chosen_units, Pool(units, mandatory, limits), request, build, render)
    chosen = build(chosen_units)
    used = doc.tokens if chosen else 0
    # What a further item would have had: the budget less the document so far (its frame alone when empty).
    free = budget - (used if chosen else render.base())
    left_out = sorted(_left_out(ranked, head, units, chosen_units, limits, free, copies,
                                {c.path for c in relevant if c.value >= request.min_score})
                      + _memories_left_out(memories, chosen_units, limits, free) + memories_out,
                      key=lambda i: (-i.value, i.key))
    # A pin goes in first, but never past the budget: one that cannot fit is said, not left out in silence.
    # A pinned file's parts go in one by one while they fit: `tokens` is its smallest part's need, said as such.
    notes += [f"pinned but too large: {_named(i.key)}{' (its smallest part)' if i.kind == 'file' else ''} needs "
              f"{i.tokens:,} tokens, {max(free, 0):,} of {budget:,} are free; raise the budget or unpin it"
              for i in left_out if i.key in request.pins]
    if not chosen and units:
        smallest = min(u.cost for u in units)
        notes.append(f"nothing fits: the smallest candidate needs {smallest} tokens, the budget is {budget}")
    elif chosen and all(_stopped(i.reason) for i in left_out) and used < budget * FULL:
        notes.append(f"{used:,} of {budget:,} tokens: nothing else reaches the floor")
    if not units:
        notes.append("no candidates: nothing indexed matches the task")
    return Selection(task, budget, encoding, chosen, left_out[:50], [c.path for c in ranked], notes, commit,
                     request.fmt, used, min_score=request.min_score, purpose=request.purpose)


def _within_lead(relevant: list, pins: frozenset[str]) -> list:
    """The relevant files less those far below a best file that leads by far: a file after the first needs
    LEAD_FLOOR x (1 - second / best) of the best file's value, so a clear lead leaves out what trails it and a
    close race keeps every contender (`relevant`: best first)."""
    values = [c.value for c in relevant if c.path not in pins]
    if len(values) < 2 or values[0] <= 0:
        return relevant
    floor = LEAD_FLOOR * (values[0] - values[1])
    return [c for c in relevant if c.path in pins or c.value >= floor or _pointed_at(c)]


def _pointed_at(c) -> bool:
    """Whether the task names the file or a symbol it defines: then it is a contender however far it trails."""
    return c.signals.get("named", 0.0) > 0 or c.signals.get("identifiers", 0.0) > 0


FULL = 0.9
"""A selection using less than this share of its budget says why it stopped."""
LIMITED = "over the file or item limit"
FITTED = "left out when the document was fitted (its gaps' lines took the room)"
STOPPED_REASONS = (BELOW_FLOOR, "says what a memory already in says")


def _stopped(reason: str) -> bool:
    """Whether an item is out because nothing else was worth its tokens (not for the budget or a limit)."""
    return reason in STOPPED_REASONS or reason.startswith("a copy of ")


def _why_not(u: Unit, need: int, free: int, limits: Limits, groups: set[Key]) -> str:
    """Why a unit worth its tokens is out: it needs more than was free, a limit, or the fitting of the document."""
    if need > free:
        return OVER_BUDGET
    return LIMITED if not limits.room(u, groups) else FITTED


def _memories_left_out(memories: list[Unit], chosen: list[Unit], limits: Limits, free: int) -> list[Item]:
    """The memories that reached the floor and are not in: for the budget, a limit, or the fitting."""
    keys = {u.key for u in chosen}
    groups = groups_of(chosen)
    return [replace(u.item, text="", reason=_why_not(u, u.cost, free, limits, groups)) for u in memories
            if u.key not in keys and u.item is not None]


def _without_copies(head, chunks: dict[str, list[Chunk]], changed: set[str],
                    pins: frozenset[str]) -> tuple[list, dict[str, str]]:
    """The head without files that copy another head file nearly word for word (a scratch copy, a vendored
    module), and which file each copies. Of two copies the original stays: the one the task's own evidence ranks
    higher, else the one that is not a new change in the working tree (a copy made beside the original gains the
    working change's lift, which says nothing about which one the task is about)."""
    order = sorted(head, key=lambda c: (-round(c.evidence, 6), c.path in changed, -c.value, c.path))
    kept: list[tuple[str, frozenset[str]]] = []
    copies: dict[str, str] = {}
    for c in order:
        words = vocabulary(whole_text(chunks.get(c.path) or []))
        original = next((path for path, other in kept if is_copy(words, other)), None)
        if original is not None and c.path not in pins:
            copies[c.path] = original
        else:
            kept.append((c.path, words))
    return [c for c in head if c.path not in copies], copies


def _left_out(ranked, head, units: list[Unit], chosen: list[Unit], limits: Limits, free: int,
              copies: dict[str, str], eligible: set[str]) -> list[Item]:
    """Every candidate file that is not in, each with why: over the budget (a region worth having needs more than
    was left: `tokens` is what it needs), a limit, the fitting of the document, a copy of another candidate, past
    the first REGION_FILES relevant files (whose regions alone are weighed), or below the floor (under the
    evidence floor, or no region worth its tokens)."""
    in_paths = {u.path for u in chosen if u.path}
    said = Said.of(chosen)
    by_path: dict[str, list[Unit]] = {}
    for u in units:
        if u.path:
            by_path.setdefault(u.path, []).append(u)
    in_head = {c.path for c in head}
    groups = groups_of(chosen)
    out = []
    for c in ranked:
        if c.path in in_paths:
            continue
        reason, tokens = BELOW_FLOOR, c.tokens
        if c.path in eligible and c.path not in in_head and c.path not in copies:
            reason = PAST_HEAD
        elif c.path in copies:
            reason = f"a copy of {copies[c.path]}"
        elif c.path in in_head:
            file_units = by_path.get(c.path, [])
            said_by = [said.copy_of(u) for u in file_units]
            worth = [u for u in file_units if limits.worth(replace(u, gain=said.marginal(u)))]
            first = said_by[0] if said_by else None
            if first is not None and all(said_by):
                reason = f"a copy of {_named(first)}"
            elif worth:
                tokens = min(u.cost + u.header for u in worth)
                reason = _why_not(worth[0], tokens, free, limits, groups)
        out.append(Item(Key.file(c.path), "file", c.path, "", tokens, round(c.value, 4), _rounded(c.signals),
                        is_test=c.is_test, reason=reason))
    return out


def _named(key: Key) -> str:
    """A chosen file or memory as a left-out item's reason names it: the file's path, `memory <id>`."""
    return key.id if key.kind == "file" else f"memory {key.id}"


def _task_terms(task: str) -> dict[str, float]:
    """The task's words for chunk BM25; words that are code-shaped count double."""
    idents = task_identifiers(task)
    terms: dict[str, float] = {}
    for w in words(task[:20000]):
        terms[w] = 2.0 if w in idents else max(terms.get(w, 0.0), 1.0)
    return terms


def _rounded(signals: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in signals.items()}


# --- stage 2: regions ----------------------------------------------------------------------------------------------


def load_chunks(chunks_table, paths: list[str], with_vectors: bool) -> dict[str, list[Chunk]]:
    if not paths:
        return {}
    columns = ["id", "path", "start_line", "end_line", "text", "symbols", "refs", "tokens"]
    if with_vectors:
        columns += ["embedded", "vector", "vector_model"]
    rows = scan(chunks_table, in_filter("path", paths), columns)
    out: dict[str, list[Chunk]] = {p: [] for p in paths}
    for r in rows:
        # A lexical-only chunk (a test, a page of docs) is stored `embedded` with a zero vector: it has none.
        has = with_vectors and r["embedded"] and r["vector_model"] != LEXICAL_ONLY
        vector = np.asarray(r["vector"], dtype=np.float32) if has else None
        out[r["path"]].append(Chunk(r["id"], r["path"], r["start_line"], r["end_line"], r["text"], tuple(r["symbols"] or ()),
                                    tuple(r["refs"] or ()), int(r["tokens"] or 0), vector))
    for cs in out.values():
        cs.sort(key=lambda c: c.start_line)
    return out


def _units(head, chunks, relevance, headers, request: SelectRequest, render: Render) -> tuple[list[Unit], list[Unit]]:
    """Every chunk of the head files as a unit with its expected gain; and the units that must go in first
    (pinned files whole, the guaranteed files whole when small or else their best chunk)."""
    pins, budget = request.pinned("file"), request.budget
    values = sorted((c.value for c in head), reverse=True)
    best = (values[0] if values else 0.0) or 1.0
    lead_depth = _lead_depth(values)
    units: list[Unit] = []
    mandatory: list[Unit] = []
    for rank, c in enumerate(head):
        file_chunks = chunks.get(c.path) or []
        if not file_chunks:
            continue
        chance = 1.0 if c.path in pins else (c.value / best) ** FILE_SHARPNESS
        if chance < MIN_FILE_CHANCE and rank >= GUARANTEED:
            continue
        shares = edit_shares(file_chunks, relevance)
        lead = max(file_chunks, key=lambda ch: (relevance[ch.id].score, -ch.tokens)).id
        # The leading file is read in depth, the others mostly by their lead region (LEAD_DEPTH, LATER_DEPTH).
        leading = rank < GUARANTEED
        depth = lead_depth if leading else 1.0 if c.path in pins else LATER_DEPTH

        def gain(ch: Chunk) -> float:
            if ch.id == lead:
                return chance * (shares[ch.id] * (depth if leading else 1.0) + PRESENCE)
            return chance * shares[ch.id] * depth

        file_units = [Unit(Key("chunk", ch.id), c.path, gain(ch), render.cost(ch.text), headers[c.path], chunk=ch,
                           pinned=c.path in pins) for ch in file_chunks]
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


def _lead_depth(values: list[float]) -> float:
    """How much more the leading file's regions are worth than their share of its chance: 1 when the second file is
    as likely, up to 1 + LEAD_DEPTH when it is far behind (`values`: the head's, best first)."""
    if not values or values[0] <= 0:
        return 1.0
    second = values[1] / values[0] if len(values) > 1 else 0.0
    return 1.0 + LEAD_DEPTH * (1.0 - second)


def _memories_clear(weight: float, inputs: SelectInputs, request: SelectRequest) -> bool:
    """Whether any memory reaches both floors `_memory_units` holds memories to (the request's minimum score, and
    a share of the task's best hit)."""
    best, strongest = _memory_scale(inputs)
    return any(weight * h.score.total / best >= request.min_score and h.score.total >= MEMORY_FLOOR * strongest
               for h in inputs.memory_hits)


def _memory_scale(inputs: SelectInputs) -> tuple[float, float]:
    """The best memory hit's score (a memory's value is scaled by it) and the task's best hit's, code or memory."""
    best = max((h.score.total for h in inputs.memory_hits), default=0.0) or 1.0
    return best, max([h.score.total for h in inputs.code_hits[:1]] + [best])


def _memory_units(weight: float, inputs: SelectInputs, request: SelectRequest,
                  render: Render) -> tuple[list[Unit], list[Item]]:
    """The memories that may go in, and those left out with why. A memory's floor is set against the task's best
    search hit, code or memory: the best of a handful of weak memories is still weak."""
    hits = inputs.memory_hits
    out: list[Unit] = []
    left: list[Item] = []
    best, strongest = _memory_scale(inputs)
    kept: list[str] = []
    for hit in hits:
        m = hit.memory
        value = weight * hit.score.total / best
        key = Key.memory(m.id)
        if key in request.excluded:
            continue
        item = Item(key, "memory", "", m.text, 0, round(value, 4), {"relevance": round(hit.score.relevance, 3)},
                    memory=m)
        pinned = key in request.pins
        if not pinned and (value < request.min_score or hit.score.total < MEMORY_FLOOR * strongest):
            left.append(replace(item, text="", reason=BELOW_FLOOR))
            continue
        # Two memories that say the same thing cost twice and tell once: the better ranked one is kept.
        if not pinned and any(texts_say_the_same(m.text, other) for other in kept):
            left.append(replace(item, text="", reason="says what a memory already in says"))
            continue
        kept.append(m.text)
        out.append(_memory_unit(item, render, pinned))
    found = {u.key for u in out}
    for m in inputs.pinned_memories:
        key = Key.memory(m.id)
        if key not in found and key not in request.excluded:
            out.append(_memory_unit(Item(key, "memory", "", m.text, 0, round(weight, 4), {"pinned": 1.0}, memory=m),
                                    render, pinned=True))
    return out, left


def _memory_unit(item: Item, render: Render, pinned: bool = False) -> Unit:
    cost = render.cost(item.text) + render.overhead(item)
    return Unit(item.key, "", item.value, cost, item=replace(item, tokens=cost), pinned=pinned)


def _items(picked, head, chunks, relevance, headers, render: Render) -> list[Item]:
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
            kind: ItemKind = "file"
            ranges: tuple[tuple[int, int], ...] = ((1, max(ch.end_line for ch in file_chunks)),)
        else:
            text, ranges = reduced_text(file_chunks, keep)
            kind = "reduced"
            signals["regions"] = round(max(relevance[cid].score for cid in keep), 3)
        items.append(Item(Key.file(c.path), kind, c.path, text, render.cost(text) + headers[c.path],
                          round(c.value, 4), signals, ranges=ranges, symbols=symbols, is_test=c.is_test))
    return items
