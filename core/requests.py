"""What a front end asks the engine for, as the person or the agent typed it: plain data, built once per front end.

The CLI (argparse), the dashboard (the search box) and the MCP server (tool arguments) each fill one of these, and the
engine turns it into its own types in one place (`SearchRequest.parsed`). Everything here is standard-library data,
so a request crosses the resident server's socket as it is, and a process that only builds requests (an attached
dashboard) imports none of the engine. The MCP SDK reads these dataclasses for its tool schemas: `description` in a
field's metadata is the schema's description, and `__pydantic_config__` refuses unknown fields there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from .keys import Key, KeyKind
from .records import KINDS

IncludeTests = Literal["yes", "no", "auto"]
INCLUDE_TESTS: tuple[IncludeTests, ...] = get_args(IncludeTests)

_STRICT = {"extra": "forbid"}
"""A misspelt filter is an error, not a silently wider search (read by pydantic only, for MCP arguments)."""


def _about(text: str, default=None):
    return field(default=default, metadata={"description": text})


@dataclass(frozen=True)
class SearchFilters:
    """Narrow a search; every field is optional."""

    __pydantic_config__ = _STRICT

    kinds: tuple[str, ...] = _about(f"memory kinds to keep: {', '.join(KINDS)}", ())
    tags: tuple[str, ...] = _about("keep memories with any of these tags", ())
    files: tuple[str, ...] = _about("repository paths the results must concern", ())
    branch: str | None = _about("keep memories made on this git branch")
    since: str | None = _about("only newer than this: 30m, 12h, 7d, 2w or an ISO date")
    memories_only: bool = _about("memories only, no code", False)
    code_only: bool = _about("code only, no memories", False)
    history: bool = _about("include superseded and deleted memory versions", False)
    session: str | None = _about("whose session-scoped memories to show: a session id, or 'all' for every "
                                 "session's (default: the reader's own session)")
    keys: tuple[str, ...] = _about("keep memories stored under these keys; one ending in * keeps every key it "
                                   "begins", ())
    past_sessions: str = _about("imported past agent sessions (`cortex import --claude-sessions`): 'mixed' in with "
                                "the rest (default), 'without' them, 'only' them, or 'beside' the rest, as a second "
                                "list of hits", "mixed")


@dataclass(frozen=True)
class SearchRequest:
    """One smart search: the text (which may hold inline filters, `kind:decision since:7d retry`), the filters given
    beside it, and how many hits. Inline and given filters add up; a given `since` or `branch` wins."""

    query: str = ""
    filters: SearchFilters = SearchFilters()
    limit: int = 10
    expand: bool = False
    """Add the graph neighbours of the top hits."""
    llm_filter: bool = False
    """Let the configured LLM select among the top candidates (only those it points at are returned)."""

    def parsed(self):
        """(the words to search for, the engine's `Filters`): the one place a search's filters are built."""
        from .ages import parse_since
        from .search.query import Filters, split_inline_filters

        text, inline = split_inline_filters(self.query)
        given = self.filters
        since = given.since or (inline.get("since") or [None])[-1]
        return text, Filters(
            kinds=tuple(given.kinds) + tuple(inline.get("kind", [])),
            tags=tuple(given.tags) + tuple(inline.get("tag", [])),
            files=tuple(given.files) + tuple(inline.get("file", [])),
            branch=given.branch or (inline.get("branch") or [None])[-1],
            since=parse_since(since) if since else None,
            memories_only=given.memories_only,
            code_only=given.code_only,
            history=given.history,
            session=given.session,
            keys=tuple(given.keys) + tuple(inline.get("key", [])),
        ).past_sessions(given.past_sessions)


@dataclass(frozen=True)
class SelectRequest:
    """One context selection: the task, the token budget, and how the person shaped it."""

    task: str
    budget: int = 12000
    max_items: int | None = None
    include_tests: IncludeTests = "auto"
    """yes, no or auto (tests only when the task is about tests)."""
    min_score: float = 0.0
    pins: frozenset[Key] = frozenset()
    """Files and memories kept whatever their value (the dashboard's `p`)."""
    excluded: frozenset[Key] = frozenset()
    """Files and memories left out whatever their value (the dashboard's `x`)."""
    fmt: str = "markdown"
    """The format the context is rendered in: the budget holds for that rendering exactly."""
    max_files: int | None = None
    """At most this many files (memories not counted); `max_items` counts both."""
    purpose: str = "general"
    """Who the context is for: general, assistant, planner, research or drafting (its sections and their order)."""
    session: str | None = None
    """The reader's session: its session-scoped memories may be chosen, other sessions' may not (`all`: any)."""

    def pinned(self, kind: KeyKind) -> frozenset[str]:
        """The ids of the pinned files (their paths) or memories."""
        return frozenset(k.id for k in self.pins if k.kind == kind)

    def left_out(self, kind: KeyKind) -> frozenset[str]:
        """The ids of the excluded files (their paths) or memories."""
        return frozenset(k.id for k in self.excluded if k.kind == kind)


@dataclass(frozen=True)
class MapRequest:
    """One repository map: its token budget and what it is about (paths, directories or words; the working change
    when empty)."""

    budget: int = 1000
    focus: tuple[str, ...] = ()
