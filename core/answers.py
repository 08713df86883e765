"""The engine's answers that cross to an attached process: what, search, graph, timeline and index results.

Every memory an answer carries has been checked against the working tree: `Memory.code_change` (a `CodeChange`
from core/records.py, None when nothing changed; `Memory.code_changed` for short) says how the code it is anchored
to changed since it was written or confirmed, in one line (`summary`) and by field (symbol, path, commit, +/- lines).

Plain dataclasses over light modules only. The resident server pickles them to the dashboard and `cortex mcp`;
unpickling imports the module that defines a class, so keeping them here (not beside the code that computes them,
which imports LanceDB and numpy) keeps an attached process free of the engine's imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .git.gitctx import CommitInfo, GitContext
from .keys import Key
from .records import STEP_TAG, Memory


@dataclass(frozen=True)
class Snippet:
    """A window of a hit's text; lines are numbered as in the file (code) or from 1 (memories)."""

    text: str
    start_line: int
    end_line: int

    def to_json(self) -> dict:
        return {"text": self.text, "start_line": self.start_line, "end_line": self.end_line}


@dataclass(frozen=True)
class RankedFile:
    """A file of the working change and how many indexed files import it."""

    path: str
    state: str
    """`staged`, `modified` or `untracked`."""
    imported_by: int


@dataclass(frozen=True)
class WhatToKnow:
    """The sections of `cortex what`, each capped and ordered; `hints` explain empty sections."""

    git: GitContext
    branch_memories: list[Memory] = field(default_factory=list)
    file_memories: list[Memory] = field(default_factory=list)
    open_tasks: list[Memory] = field(default_factory=list)
    recent_memories: list[Memory] = field(default_factory=list)
    recent_commits: list[CommitInfo] = field(default_factory=list)
    changed_files: list[RankedFile] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "branch": self.git.branch,
            "head": self.git.head,
            "branch_memories": [m.to_json() for m in self.branch_memories],
            "file_memories": [m.to_json() for m in self.file_memories],
            "open_tasks": [m.to_json() for m in self.open_tasks],
            "recent_memories": [m.to_json() for m in self.recent_memories],
            "recent_commits": [
                {"sha": c.sha, "subject": c.subject, "author": c.author, "time": c.time.isoformat(), "files": list(c.files)}
                for c in self.recent_commits
            ],
            "changed_files": [f.__dict__ for f in self.changed_files],
            "hints": self.hints,
        }


@dataclass(frozen=True)
class ScoreBreakdown:
    """Why a hit ranks where it does."""

    ranks: dict[str, int]
    """1-based rank in each candidate list it came from, memories and code together: `vector`, `text` (git-context
    words folded in at a low boost), `change` (searches with no query: the working change's own items)."""
    relevance: float
    """Fused RRF score as a share of the best possible (1.0 = first in every signal searched, every word matched)."""
    similarity: float | None
    """Cosine similarity of the query and the hit's embedding, when it came from vector search."""
    boosts: dict[str, float]
    total: float
    coverage: float | None = None
    """Share of the query's words the hit contains, when full-text search found it; its text rank counts that much."""

    def explain(self) -> str:
        ranks = " ".join(f"{k}#{v}" for k, v in sorted(self.ranks.items()))
        boosts = " ".join(f"+{k} {v:.2f}" for k, v in self.boosts.items())
        words = f" words {self.coverage:.0%}" if self.coverage is not None else ""
        sim = f" cos {self.similarity:.2f}" if self.similarity is not None else ""
        return f"{self.total:.3f} = rel {self.relevance:.3f} ({ranks}{words}{sim})" + (f" x (1 {boosts})" if boosts else "")


@dataclass(frozen=True)
class SearchHit:
    """A memory or a code chunk found by a search."""

    source: Literal["memory", "code"]
    id: str
    kind: str
    title: str
    text: str
    score: ScoreBreakdown
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    symbols: tuple[str, ...] = ()
    tokens: int = 0
    is_test: bool = False
    memory: Memory | None = None
    snippet: Snippet | None = None
    """The lines that match the query best (a few lines, numbered as in the file for code)."""

    @property
    def subject(self) -> Key:
        """What the hit is about, as the graph and the panes name it: its memory, or the file of its chunk."""
        return Key.memory(self.id) if self.source == "memory" else Key.file(self.path)

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}" if self.source == "code" else self.id

    def to_json(self) -> dict:
        out = {
            "source": self.source, "id": self.id, "kind": self.kind, "title": self.title, "text": self.text,
            "score": self.score.total, "breakdown": {
                "ranks": self.score.ranks, "relevance": self.score.relevance, "similarity": self.score.similarity,
                "coverage": self.score.coverage, "boosts": self.score.boosts,
            },
            "snippet": self.snippet.to_json() if self.snippet is not None else None,
        }
        if self.source == "code":
            out.update(path=self.path, start_line=self.start_line, end_line=self.end_line, symbols=list(self.symbols))
        if self.memory is not None:
            out["memory"] = self.memory.to_json()
        return out


ZERO_LLM = "zero-LLM"


@dataclass(frozen=True)
class SearchResults:
    """Hits, best first, and what the caller should know about how they were found."""

    query: str
    implicit: bool
    """True when the query was built from the git context because none was given."""
    terms: tuple[str, ...]
    hits: list[SearchHit]
    index_fresh: bool | None
    """Whether the code index matched the work tree when the search ran (None: no code index)."""
    embeddings_pending: int
    """Code chunks waiting for their first embedding, and memories waiting for the current model's."""
    elapsed_ms: float
    notes: tuple[str, ...] = field(default=())
    neighbours: tuple[Neighbour, ...] = ()
    """With `--expand`: graph neighbours (`Neighbour`, below) of the top hits."""
    ranked_by: str = ZERO_LLM
    """Which method produced the hits: the zero-LLM ranking, or `llm-filter` when a model selected them."""
    past_sessions: tuple[SearchHit, ...] | None = None
    """With past sessions `beside`: the imported sessions' hits, best first, searched on their own beside the others
    (which leave them out); None otherwise."""

    def to_json(self) -> dict:
        return {
            "query": self.query, "implicit": self.implicit, "terms": list(self.terms), "ranked_by": self.ranked_by,
            "index_fresh": self.index_fresh, "embeddings_pending": self.embeddings_pending,
            "elapsed_ms": round(self.elapsed_ms, 1), "notes": list(self.notes),
            "hits": [h.to_json() for h in self.hits],
            "neighbours": [n.to_json() for n in self.neighbours],
            **({"past_sessions": [h.to_json() for h in self.past_sessions]} if self.past_sessions is not None else {}),
        }


@dataclass(frozen=True)
class Neighbour:
    """A node reached from the centre, how far away, and the edge that led there."""

    node: Key
    label: str
    depth: int
    via: str
    """Edge type, prefixed with `<-` when the edge points at the node we came from."""
    parent: Key

    def to_json(self) -> dict:
        return {"node": str(self.node), "label": self.label, "depth": self.depth, "via": self.via,
                "parent": str(self.parent)}


@dataclass(frozen=True)
class TimelineEntry:
    """One commit and what was remembered on it (agent-context commits are memories of kind `agent`)."""

    commit: CommitInfo
    memories: tuple[Memory, ...] = ()

    @property
    def agent_commits(self) -> tuple[Memory, ...]:
        # Agent steps are memories of kind `agent` too; only their milestones mark the timeline.
        return tuple(m for m in self.memories if m.kind == "agent" and STEP_TAG not in m.tags)


@dataclass(frozen=True)
class Timeline:
    """The branch's history as the timeline pane shows it."""

    branch: str
    entries: list[TimelineEntry] = field(default_factory=list)
    uncommitted: tuple[Memory, ...] = ()
    """Memories made since the newest commit shown (or before any commit)."""
    branches: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexProgress:
    """One progress event: a phase (`listing`, `reading`, `writing`, `embedding`, `done`) and how far it is."""

    phase: str
    done: int
    total: int


@dataclass
class IndexReport:
    """What one update did."""

    listed: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    embeddings_pending: int = 0
    embedded: int = 0
    lexical_seconds: float = 0.0
    embed_seconds: float = 0.0

    @property
    def skip_counts(self) -> dict[str, int]:
        return count_reasons(self.skipped)


def count_reasons(skipped: list[tuple[str, str]]) -> dict[str, int]:
    """How many paths were skipped for each reason (details in parentheses folded together)."""
    out: dict[str, int] = {}
    for _, reason in skipped:
        key = reason.split(" (")[0]
        out[key] = out.get(key, 0) + 1
    return out


@dataclass(frozen=True)
class IndexStatus:
    """Whether the index matches the work tree, without reading file contents."""

    indexed_files: int
    chunks: int
    stale: int
    new: int
    removed: int
    embeddings_pending: int
    embedding: bool = False
    """Some process (a resident server, a `cortex index --wait`, a watcher) is embedding the pending chunks now."""
    lexical_only: int = 0
    """Chunks kept out of the embeddings by design (tests, data files, vendored code: `index.embed_scope`),
    found by their words and names; counted in `chunks`, never pending."""

    @property
    def fresh(self) -> bool:
        """The lexical index matches the work tree: every file's text and structure is in, searchable by words."""
        return self.stale == 0 and self.new == 0 and self.removed == 0

    def embeddings_line(self) -> str:
        """How far the embeddings are, apart from lexical freshness: `all 616 embedded (300 lexical only: tests,
        data, vendored code)`, `embeddings 96 of 2,247, continuing`, or, when nothing embeds them now (stopped, interrupted), `paused` and how to finish."""
        wanted = self.chunks - self.lexical_only
        lexical = f" ({self.lexical_only:,} lexical only: tests, data, vendored code)" if self.lexical_only else ""
        if not self.embeddings_pending:
            return f"all {wanted:,} embedded{lexical}" if wanted else ("nothing to embed" + lexical)
        done = f"embeddings {wanted - self.embeddings_pending:,} of {wanted:,}{lexical}"
        return f"{done}, continuing" if self.embedding else f"{done}; paused — run `cortex index` to finish"


@dataclass(frozen=True)
class WatchUpdate:
    """One update the watcher made: which paths set it off, what it did, how long it took from the event."""

    paths: tuple[str, ...]
    git_state_changed: bool
    report: IndexReport
    seconds: float
    """0 for the catch-up pass after start-up, which no event set off."""

    def summary(self) -> str:
        """One line for a status bar: what set it off (or what the catch-up pass found) and how long it took."""
        r = self.report
        if self.git_state_changed:
            what = "branch or HEAD moved"
        elif self.paths:
            what = ", ".join(self.paths[:2]) + (f" and {len(self.paths) - 2} more" if len(self.paths) > 2 else "")
        else:
            counts = [f"{r.changed} changed" if r.changed else "", f"{r.removed} removed" if r.removed else ""]
            what = " and ".join(filter(None, counts)) + " file(s) found since start-up" if any(counts) else "nothing"
        took = f" in {self.seconds * 1000:.0f} ms" if self.seconds > 0 else ""
        return f"index updated: {what}{took}"


@dataclass(frozen=True)
class MapEntry:
    """One definition of the repository map: where it is, what it is called and its signature line(s)."""

    path: str
    line: int
    name: str
    """The qualified symbol (`Engine.search`)."""
    signature: str
    score: float
    within: tuple[int, str] | None = None
    """The line and signature of the definition it is a member of (`class Engine:`), when it is one."""

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "name": self.name, "signature": self.signature,
                "score": self.score, "within": list(self.within) if self.within else None}


@dataclass(frozen=True)
class RepoMap:
    """The repository's most important definitions for a focus, rendered (`text`) within `budget` exactly."""

    budget: int
    tokens: int
    """The exact token count of `text` in `encoding`."""
    encoding: str
    focus: tuple[str, ...]
    seeds: tuple[str, ...]
    """The files the ranking restarted at (the focus resolved to files), heaviest first, at most 20."""
    entries: tuple[MapEntry, ...]
    text: str
    notes: tuple[str, ...] = ()

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(e.path for e in self.entries))

    def to_json(self) -> dict:
        return {"budget": self.budget, "tokens": self.tokens, "encoding": self.encoding, "focus": list(self.focus),
                "seeds": list(self.seeds), "files": self.files, "entries": [e.to_json() for e in self.entries],
                "text": self.text, "notes": list(self.notes)}


@dataclass(frozen=True)
class Snapshot:
    """What an agent loads first, rendered (`text`) within `budget` tokens exactly; the same state gives the same text."""

    text: str
    tokens: int
    budget: int
    branch: str
    head: str
    changed: tuple[str, ...]
    tasks: tuple[str, ...]
    """Ids of the open tasks shown."""
    decisions: tuple[str, ...]
    """Ids of the decisions about the changed code shown."""
    agent_commit: str
    """Id of the last agent commit's memory ("" when none)."""
    map_files: tuple[str, ...]

    def to_json(self) -> dict:
        return {"text": self.text, "tokens": self.tokens, "budget": self.budget, "branch": self.branch,
                "head": self.head, "changed": list(self.changed), "tasks": list(self.tasks),
                "decisions": list(self.decisions), "agent_commit": self.agent_commit, "map_files": list(self.map_files)}
