"""Stage 1 of selection: every candidate file gets a value from weighted signals (see `SelectWeights`), times its
role (tests, docs, changelogs, examples count only when the task is about them, and a project record or docs even
then after the code)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..config import SelectWeights
from ..search.query import code_names
from ..search.roles import path_role, role_weight
from .inputs import SelectInputs

ASKED_DOCS = 0.3
"""The weight of docs whose topic the task's words ask for ("docs: fix a typo", "a typo in the help text"): they
count, after the code, whose docstrings, comments and messages such fixes change as often (on every 3rd dev task
and three fresh held-out sets the edited file led for 1, 1, 1 and 2 fixes more, and none fewer, than with asked
docs weighed as code; at 0.5 for 0, 0, 1 and 0). A context drafted from prose (the `drafting` purpose) weighs them as
code."""


@dataclass
class FileCandidate:
    path: str
    is_test: bool
    tokens: int
    last_commit: datetime | None
    symbols: set[str]
    lexical: float = 0.0
    semantic: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)
    value: float = 0.0
    evidence: float = 0.0
    """The part of the value the task itself gives (its words, meaning, names): what the floor is set against.
    The working change, recency, memories and the import graph reorder files that have it; they add none."""


def rank_files(weights: SelectWeights, inputs: SelectInputs, pins: frozenset[str], topics: dict[str, bool],
               asked_docs: float = ASKED_DOCS) -> tuple[list[FileCandidate], set[str]]:
    """The ranked candidates, and the short names of symbols the repository defines that the task names (`topics`:
    the task's, with "tests" as the include-tests choice settled it; `asked_docs`: the weight of docs the task asks
    for)."""
    task, files, code_hits, memory_hits, changed = (inputs.task, inputs.files, inputs.code_hits, inputs.memory_hits,
                                                    inputs.changed)
    candidates: dict[str, FileCandidate] = {}
    named = files.named(task)
    task_idents = task_identifiers(task)
    types = type_words(task)
    # Files that define a symbol the task names are candidates even when full-text search ranked them low.
    definers = files.defining(task_idents)
    # A capitalised word of the prose ("Choice options") names the class the repository defines by that exact name.
    definers |= {path: row for path, row in files.defining(types).items()
                 if {s.rsplit(".", 1)[-1] for s in row["symbols"] or []} & types}
    named_syms = {s.rsplit(".", 1)[-1].lower() for row in definers.values() for s in row["symbols"] or []} & task_idents
    rows = files.rows([*(h.path for h in code_hits), *named, *changed, *pins]) | definers

    def candidate(path: str) -> FileCandidate | None:
        row = rows.get(path)
        if row is None:
            return None
        if path not in candidates:
            candidates[path] = FileCandidate(
                path, bool(row["is_test"]), int(row["tokens"] or 0), row["last_commit_time"], set(row["symbols"] or [])
            )
        return candidates[path]

    text_credits: dict[str, list[float]] = {}
    for hit in code_hits:
        c = candidate(hit.path)
        if c is None:
            continue
        text_rank = hit.score.ranks.get("text")
        if text_rank:
            text_credits.setdefault(hit.path, []).append(1.0 / math.sqrt(text_rank))
        c.semantic = max(c.semantic, max(hit.score.similarity or 0.0, 0.0))
    for path, lexical in file_lexical(text_credits).items():
        candidates[path].lexical = lexical
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
    score = _Scoring(weights, topics, task_idents, types, set(named), set(changed), pins, memory_mentions(memory_hits),
                     proximity, asked_docs)
    for c in candidates.values():
        score(c)
    return sorted(candidates.values(), key=lambda c: (-c.value, c.path)), named_syms


PROJECT_RECORDS = ("history", "meta")
"""The project's records (changelogs, release notes, news fragments; AUTHORS, licences, CI files) are written about
the code's changes, not in it, and repeat a task's words better than the code does. A fix whose description says
"add a changelog entry" asks for them beside the code, not before it. Docs are not records: a task that asks for
"its docs" wants them read (they were weighed so too, and gave the edited file first for one fix more on each set
below, at that cost)."""
ASKED_RECORDS = 0.3
"""The weight of a project record whose topic the task's words ask for (one they do not ask for keeps its role's,
lower). With the credits out of the task (`task_words`), the edited file led at 4,000 tokens for 23 of 33 fixes
of every 3rd dev task and 29 and 28 of 48 on two fresh held-out sets (the records at 1 before: 28 and 24 of 48
held out; docs among the records at 0.3: 24, 30, 29; at 0.5: 23, 29, 29; at 0.15: 23, 30, 30)."""


EVIDENCE = ("lexical", "semantic", "identifiers", "named")
"""The signals that come from the task's own text; the others (graph, recency, memories, changed) are context."""


@dataclass(frozen=True)
class _Scoring:
    """The signals and value of one candidate file (what `rank_files` gathered, shared by every candidate)."""

    weights: SelectWeights
    topics: dict[str, bool]
    task_idents: set[str]
    types: frozenset[str]
    named: set[str]
    changed: set[str]
    pins: frozenset[str]
    mentions: dict[str, float]
    proximity: dict[str, float]
    asked_docs: float
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __call__(self, c: FileCandidate) -> None:
        short = {s.rsplit(".", 1)[-1].lower() for s in c.symbols} | {s.lower() for s in c.symbols}
        overlap = len(self.task_idents & short) + len(self.types & {s.rsplit(".", 1)[-1] for s in c.symbols})
        recency = 0.0
        if c.last_commit is not None and (c.lexical > 0 or c.path in self.named):
            last = c.last_commit if c.last_commit.tzinfo else c.last_commit.replace(tzinfo=UTC)
            recency = math.exp(-max((self.now - last).days, 0) / 90)
        c.signals = {
            "lexical": c.lexical,
            "semantic": c.semantic,
            "identifiers": min(overlap / 2.0, 1.0),
            "named": 1.0 if c.path in self.named else 0.0,
            "recency": recency,
            "memories": self.mentions.get(c.path, 0.0),
            "changed": 1.0 if c.path in self.changed else 0.0,
            "graph": self.proximity.get(c.path, 0.0),
        }
        role = role_weight(c.path, c.is_test, self.topics)
        kind = path_role(c.path, c.is_test)
        if kind in PROJECT_RECORDS:
            role = min(role, ASKED_RECORDS)
        if kind == "docs":
            role = min(role, self.asked_docs)
        c.signals["role"] = role
        c.value = role * sum(getattr(self.weights, name) * value for name, value in c.signals.items() if name != "role")
        c.evidence = role * sum(getattr(self.weights, name) * c.signals[name] for name in EVIDENCE)
        if c.path in self.pins:
            c.value = max(c.value, 1e-6)


LEXICAL_DECAY = 0.5
"""A file's words evidence is its chunks' full-text credits (1/sqrt of each one's rank), best first, each worth this
share of the one before: a file whose many chunks match the task outranks one with a single lucky chunk a place
higher (on every 3rd dev task, the edited file first for 22 fixes of 33 instead of 19)."""


def file_lexical(credits: dict[str, list[float]]) -> dict[str, float]:
    """Each file's words evidence from its chunks' full-text credits, scaled so the best file's is 1."""
    raw = {path: sum(x * LEXICAL_DECAY ** k for k, x in enumerate(sorted(xs, reverse=True)))
           for path, xs in credits.items()}
    top = max(raw.values(), default=0.0) or 1.0
    return {path: value / top for path, value in raw.items()}


_TYPE_WORD = re.compile(r"(?<![\w.`'\"(])([A-Z][a-z]{2,})(?![\w`(])")
_SENTENCE_START = re.compile(r"(^|[.!?:]\s+|\n\s*)$")
_PROSE_LINE = re.compile(r"^(?! {4}|\t)(.*)$", re.M)


def type_words(task: str) -> frozenset[str]:
    """Capitalised words inside a sentence of the task's prose ("metavar for Choice options"): in prose a class is
    named so; the word opening a sentence is capitalised for grammar, not as a name, and indented lines (quoted
    output, code) are not prose. Matched to symbols case for case."""
    out = set()
    for line in _PROSE_LINE.findall(task[:20000]):
        out |= {m.group(1) for m in _TYPE_WORD.finditer(line) if not _SENTENCE_START.search(line[:m.start()])}
    return frozenset(out)


def task_identifiers(task: str) -> set[str]:
    return {name.lower() for name in code_names(task)}


def memory_mentions(hits) -> dict[str, float]:
    out: dict[str, float] = {}
    best = max((h.score.total for h in hits), default=0.0) or 1.0
    for h in hits:
        for path in h.memory.files:
            out[path] = max(out.get(path, 0.0), h.score.total / best)
    return out
