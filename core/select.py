"""Context selection under a token budget: which files, code chunks and memories give a model the best chance at a
task, as a constrained optimisation rather than a top-k list.

Signals per candidate (each in 0..1, weighted by `SelectWeights`): lexical (BM25 rank of its best chunk), semantic
(cosine of its best chunk), identifier overlap with the task, being named in the task, import-graph proximity
(personalised PageRank from named files, the working change and the top hits), git recency (only for files that
are already structurally relevant), linked memories, and the file's role (tests and docs count for less unless the
task is about them). Selection is greedy with diminishing returns: the strongest items first, then supporting
items by value per token, every pick lowering the value of what repeats it (same file, same symbols, same text).
A file too large for what is left is reduced to its relevant chunks plus the signatures of the rest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import networkx as nx

from .config import SelectWeights
from .errors import CortexError
from .query import Filters, parse_query
from .records import Memory
from .tokens import count_tokens

if TYPE_CHECKING:
    from .engine import Engine

_PATHISH = re.compile(r"[\w.\-/]+\.[A-Za-z0-9]{1,6}\b|[\w]+(?:\.[\w]+){1,6}")
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
_CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".lock")
_TEST_WORDS = {"test", "tests", "testing", "pytest", "unittest", "spec", "fixture", "fixtures"}
_DOC_WORDS = {"doc", "docs", "documentation", "readme", "changelog", "example", "examples", "docstring", "typo"}
_CONFIG_WORDS = {"config", "configuration", "settings", "pyproject", "package", "dependency", "dependencies", "ci"}


@dataclass(frozen=True)
class Item:
    """Something that can go into the context: a whole file, part of one, or a memory."""

    key: str
    kind: str
    """`file` (whole), `reduced` (relevant chunks and the signatures of the rest), `chunk`, or `memory`."""
    path: str
    text: str
    tokens: int
    value: float
    signals: dict[str, float]
    ranges: tuple[tuple[int, int], ...] = ()
    """Line ranges included, for provenance (`path:start-end`)."""
    symbols: frozenset[str] = frozenset()
    memory: Memory | None = None
    is_test: bool = False

    @property
    def provenance(self) -> str:
        if self.kind == "memory" and self.memory is not None:
            return f"memory {self.memory.id} ({self.memory.kind}, {self.memory.created_at:%Y-%m-%d})"
        spans = ",".join(f"{a}-{b}" for a, b in self.ranges)
        return f"{self.path}:{spans}" if spans else self.path


@dataclass(frozen=True)
class Selection:
    """What was chosen for a task, what was left out, and how many tokens it all takes."""

    task: str
    budget: int
    encoding: str
    chosen: list[Item]
    left_out: list[Item]
    ranked_files: list[str]
    """Every candidate file, best first (for recall@k and for the dashboard)."""
    notes: list[str] = field(default_factory=list)
    commit: str = ""

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.chosen)

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(i.path for i in self.chosen if i.kind != "memory"))


@dataclass
class _FileCandidate:
    path: str
    is_test: bool
    tokens: int
    last_commit: datetime | None
    symbols: set[str]
    lexical: float = 0.0
    semantic: float = 0.0
    hit_chunks: dict[str, float] = field(default_factory=dict)
    signals: dict[str, float] = field(default_factory=dict)
    value: float = 0.0


def task_mentions(task: str, words: set[str]) -> bool:
    return bool(set(re.findall(r"[a-z]+", task.lower())) & words)


def named_files(task: str, paths: list[str]) -> set[str]:
    """Files the task names: by path, by a unique file name, or as a dotted module (`flask.json.tag`)."""
    by_name: dict[str, list[str]] = {}
    by_module: dict[str, str] = {}
    for p in paths:
        by_name.setdefault(p.rsplit("/", 1)[-1], []).append(p)
        stem = p.rsplit(".", 1)[0]
        by_module[stem.replace("/", ".")] = p
        if stem.endswith("/__init__"):
            by_module[stem[: -len("/__init__")].replace("/", ".")] = p
    found: set[str] = set()
    path_set = set(paths)
    for token in _PATHISH.findall(task):
        token = token.strip("./")
        if token in path_set:
            found.add(token)
        elif "/" in token:
            found.update(p for p in paths if p.endswith("/" + token))
        elif len(by_name.get(token, [])) == 1:
            found.add(by_name[token][0])
        else:
            for module, path in by_module.items():
                if module == token or module.endswith("." + token):
                    if token.count(".") >= 1:
                        found.add(path)
    return found


def select(
    engine: "Engine",
    task: str,
    budget: int,
    max_items: int | None = None,
    include_tests: str = "auto",
    min_score: float = 0.0,
    pins: frozenset[str] = frozenset(),
    excluded: frozenset[str] = frozenset(),
) -> Selection:
    """`pins` and `excluded` hold file paths or `memory:<id>` keys the person forced in or out."""
    if budget <= 0:
        raise CortexError(f"budget must be a positive number of tokens (got {budget})")
    if not task.strip():
        raise CortexError("the task is empty: say what you want to do")
    if include_tests not in ("yes", "no", "auto"):
        raise CortexError("--include-tests takes yes, no or auto")
    weights = engine.settings.select
    encoding = engine.settings.encoding
    notes: list[str] = []
    if not engine.has_index():
        report = engine.code_index(create=True).update(embed=False)
        notes.append(f"nothing was indexed yet: indexed {report.changed} files lexically first")
    index = engine.code_index()
    git = engine.git(20)
    files = {f["path"]: f for f in engine.index_files()}
    tests_wanted = include_tests == "yes" or (include_tests == "auto" and task_mentions(task, _TEST_WORDS))
    searcher = engine.searcher()
    query = task if len(task) <= 4000 else task[:4000]
    code_hits = searcher.search(query, Filters(code_only=True), limit=120, git=git).hits
    memory_hits = searcher.search(query, Filters(memories_only=True), limit=20, git=git).hits if searcher.stores else []

    candidates: dict[str, _FileCandidate] = {}

    def candidate(path: str) -> _FileCandidate | None:
        row = files.get(path)
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
        lexical = 1.0 / math.sqrt(text_rank) if text_rank else 0.0
        semantic = max(hit.score.similarity or 0.0, 0.0)
        c.lexical = max(c.lexical, lexical)
        c.semantic = max(c.semantic, semantic)
        c.hit_chunks[hit.id] = max(c.hit_chunks.get(hit.id, 0.0), hit.score.total)

    named = named_files(task, list(files))
    for path in named:
        candidate(path)
    for path in git.changed_files:
        candidate(path)
    for path in pins:
        candidate(path)

    task_idents = _task_identifiers(task)
    seeds = list(named) + list(git.changed_files) + [p for p, _ in sorted(candidates.items(), key=lambda kv: -kv[1].lexical)[:5]]
    proximity = _import_proximity(files, seeds)
    for path, score in sorted(proximity.items(), key=lambda kv: -kv[1])[:30]:
        if score > 0.05:
            candidate(path)
    mentions = _memory_mentions(memory_hits)
    now = datetime.now(timezone.utc)
    for c in candidates.values():
        short = {s.rsplit(".", 1)[-1].lower() for s in c.symbols} | {s.lower() for s in c.symbols}
        overlap = len(task_idents & short)
        structural = proximity.get(c.path, 0.0)
        recency = 0.0
        if c.last_commit is not None and (structural > 0.2 or c.lexical > 0 or c.path in named):
            last = c.last_commit if c.last_commit.tzinfo else c.last_commit.replace(tzinfo=timezone.utc)
            recency = math.exp(-max((now - last).days, 0) / 90)
        c.signals = {
            "lexical": c.lexical,
            "semantic": c.semantic,
            "identifiers": min(overlap / 2.0, 1.0),
            "named": 1.0 if c.path in named else 0.0,
            "graph": structural,
            "recency": recency,
            "memories": mentions.get(c.path, 0.0),
            "changed": 1.0 if c.path in git.changed_files else 0.0,
        }
        role = _role_factor(c, task, tests_wanted)
        c.signals["role"] = role
        c.value = role * sum(getattr(weights, name) * value for name, value in c.signals.items() if name != "role")
    if include_tests == "no":
        candidates = {p: c for p, c in candidates.items() if not c.is_test or p in pins}
    candidates = {p: c for p, c in candidates.items() if p not in excluded}
    ranked = sorted(candidates.values(), key=lambda c: (-c.value, c.path))
    items: list[Item] = []
    for c in ranked:
        items.extend(_file_items(engine, index, c, encoding))
    for hit in memory_hits:
        m = hit.memory
        value = weights.memory_item * hit.score.total / max(memory_hits[0].score.total, 1e-9)
        text = m.text
        items.append(Item(f"memory:{m.id}", "memory", "", text, count_tokens(text, encoding) + 12, value,
                          {"relevance": round(hit.score.relevance, 3)}, memory=m))
    items = [i for i in items if i.key not in excluded]
    chosen, left = _greedy(items, budget, max_items, min_score, pins)
    if not chosen and items:
        smallest = min(i.tokens for i in items)
        notes.append(f"nothing fits: the smallest candidate needs {smallest} tokens, the budget is {budget}")
    if not items:
        notes.append("no candidates: nothing indexed matches the task")
    return Selection(task, budget, encoding, chosen, left, [c.path for c in ranked], notes, git.head)


def _task_identifiers(task: str) -> set[str]:
    parsed = parse_query(task[:20000])
    out = {t.lower() for t in parsed.identifiers}
    out |= {t.rsplit(".", 1)[-1].lower() for t in parsed.identifiers}
    out |= {w.lower() for w in re.findall(r"\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+_\w+\b", task)}
    out |= {w.lower() for w in re.findall(r"`([^`\s]+)`", task)}
    return {w.strip("()") for w in out if len(w) > 2}


def _role_factor(c: _FileCandidate, task: str, tests_wanted: bool) -> float:
    if c.is_test:
        return 1.0 if tests_wanted else 0.35
    if c.path.endswith(_DOC_SUFFIXES):
        return 1.0 if task_mentions(task, _DOC_WORDS) else 0.5
    if c.path.endswith(_CONFIG_SUFFIXES):
        return 1.0 if task_mentions(task, _CONFIG_WORDS) else 0.5
    return 1.0


def _import_proximity(files: dict[str, dict], seeds: list[str]) -> dict[str, float]:
    graph = nx.Graph()
    for path, row in files.items():
        graph.add_node(path)
        for target in row["imports"] or []:
            if target in files:
                graph.add_edge(path, target)
    present = [s for s in dict.fromkeys(seeds) if s in graph]
    if not present or graph.number_of_edges() == 0:
        return {}
    try:
        ranks = nx.pagerank(graph, personalization={s: 1.0 for s in present}, max_iter=100, tol=1e-6)
    except nx.PowerIterationFailedConvergence:
        return {}
    for s in present:
        ranks.pop(s, None)
    top = max(ranks.values(), default=0.0)
    return {p: r / top for p, r in ranks.items()} if top > 0 else {}


def _memory_mentions(hits) -> dict[str, float]:
    out: dict[str, float] = {}
    best = max((h.score.total for h in hits), default=0.0) or 1.0
    for h in hits:
        for path in h.memory.files:
            out[path] = max(out.get(path, 0.0), h.score.total / best)
    return out


def _file_items(engine: "Engine", index, c: _FileCandidate, encoding: str) -> list[Item]:
    """The ways a file can enter the context: whole, reduced to relevant chunks plus signatures, or its best chunk."""
    rows = index.chunks.search().where(f"path = '{c.path.replace(chr(39), chr(39) * 2)}'").select(
        ["id", "start_line", "end_line", "text", "symbols", "tokens"]
    ).limit(10_000).to_list()
    if not rows:
        return []
    rows.sort(key=lambda r: r["start_line"])
    symbols = frozenset(s for r in rows for s in r["symbols"])
    whole = _join_chunks(rows)
    base = dict(path=c.path, signals={k: round(v, 3) for k, v in c.signals.items()}, symbols=symbols, is_test=c.is_test)
    items = [Item(f"file:{c.path}", "file", text=whole, tokens=count_tokens(whole, encoding) + 20, value=c.value,
                  ranges=((1, rows[-1]["end_line"]),), **base)]
    best_hit = max(c.hit_chunks.values(), default=0.0)
    relevant = [r for r in rows if c.hit_chunks.get(r["id"], 0.0) >= 0.5 * best_hit > 0]
    if relevant and len(relevant) < len(rows):
        reduced, ranges = _reduce(rows, {r["id"] for r in relevant})
        items.append(Item(f"reduced:{c.path}", "reduced", text=reduced, tokens=count_tokens(reduced, encoding) + 20,
                          value=c.value * 0.9, ranges=ranges, **base))
    if relevant:
        best = max(relevant, key=lambda r: c.hit_chunks[r["id"]])
        items.append(Item(f"chunk:{c.path}:{best['start_line']}", "chunk", text=best["text"],
                          tokens=count_tokens(best["text"], encoding) + 20, value=c.value * 0.7,
                          ranges=((best["start_line"], best["end_line"]),), **base))
    return items


def _join_chunks(rows: list[dict]) -> str:
    """Chunks overlap only for line windows; rebuild the file's lines once each."""
    lines: dict[int, str] = {}
    for r in rows:
        for offset, line in enumerate(r["text"].splitlines(keepends=True)):
            lines.setdefault(r["start_line"] + offset, line)
    return "".join(lines[n] for n in sorted(lines))


def _reduce(rows: list[dict], keep: set[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Relevant chunks verbatim; of every other chunk only its definition lines, then an elision marker."""
    parts: list[str] = []
    ranges: list[tuple[int, int]] = []
    for r in rows:
        if r["id"] in keep:
            parts.append(r["text"] if r["text"].endswith("\n") else r["text"] + "\n")
            ranges.append((r["start_line"], r["end_line"]))
        elif r["symbols"]:
            signatures = _signatures(r["text"])
            if signatures:
                parts.append(signatures + f"    ... (lines {r['start_line']}-{r['end_line']} omitted)\n")
    return "".join(parts), tuple(ranges)


_DEFINITION = re.compile(
    r"^\s*(?:@\w|(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function|func|fn|pub|impl|trait|struct|enum|"
    r"interface|type|module|namespace|template|public|private|protected|static|abstract|const\s+\w+\s*=\s*(?:async\s*)?\())"
)


def _signatures(text: str) -> str:
    """The lines of a chunk that open a definition (decorators included), so the reader knows what exists."""
    lines = [line for line in text.splitlines() if _DEFINITION.match(line)]
    return "\n".join(lines) + "\n" if lines else ""


def _pinned(item: Item, pins: frozenset[str]) -> bool:
    return bool(pins) and (item.key in pins or (item.kind != "memory" and item.path in pins))


def _greedy(items: list[Item], budget: int, max_items: int | None, min_score: float,
            pins: frozenset[str] = frozenset()) -> tuple[list[Item], list[Item]]:
    """Pinned items first (their cheapest version that fits), then the strongest items while they are clearly
    ahead, then value per token; each pick discounts what repeats it."""
    pool = [i for i in items if (i.value >= min_score and i.value > 0) or _pinned(i, pins)]
    chosen: list[Item] = []
    used_paths: set[str] = set()
    used_symbols: set[str] = set()
    used_texts: set[int] = set()
    remaining = budget

    def gain(item: Item) -> float:
        if _pinned(item, pins) and item.path not in used_paths and hash(item.text) not in used_texts:
            return max(item.value, 1e-6)
        if item.kind != "memory" and item.path in used_paths:
            return 0.0
        if hash(item.text) in used_texts:
            return 0.0
        overlap = len(item.symbols & used_symbols) / max(len(item.symbols), 1)
        return item.value * (1.0 - 0.5 * overlap)

    top_value = max((i.value for i in pool), default=0.0)
    while pool and (max_items is None or len(chosen) < max_items):
        fitting = [i for i in pool if i.tokens <= remaining and gain(i) > 0]
        if not fitting:
            break
        pinned = [i for i in fitting if _pinned(i, pins)]
        primary = [i for i in fitting if gain(i) >= 0.5 * top_value]
        if pinned:
            whole = [i for i in pinned if i.kind in ("file", "memory")]
            pick = whole[0] if whole else min(pinned, key=lambda i: i.tokens)
        elif primary:
            best_value = max(gain(i) for i in primary)
            # Among options of about the best value, prefer the whole file while it costs under 40% of what is
            # left; otherwise the cheapest way in.
            near = [i for i in primary if gain(i) >= 0.85 * best_value]
            whole = [i for i in near if i.kind == "file" and i.tokens <= 0.4 * remaining]
            pick = max(whole, key=gain) if whole else max(near, key=lambda i: gain(i) / math.sqrt(i.tokens))
        else:
            pick = max(fitting, key=lambda i: gain(i) / i.tokens)
        chosen.append(replace(pick, value=round(gain(pick), 4)))
        remaining -= pick.tokens
        if pick.kind != "memory":
            used_paths.add(pick.path)
        used_symbols |= pick.symbols
        used_texts.add(hash(pick.text))
        pool = [i for i in pool if i is not pick and gain(i) > 0]
    chosen_paths = {i.path for i in chosen if i.kind != "memory"}
    chosen_keys = {i.key for i in chosen}
    left = [i for i in items if i.key not in chosen_keys and i.kind in ("file", "memory") and i.path not in chosen_paths]
    return chosen, left[:50]
