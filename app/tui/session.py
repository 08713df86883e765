"""What a dashboard's calls carry, made without Textual: its session, and the search its pane 2 asks. The early
calls (`early`) ask exactly what the dashboard will, before the dashboard's modules are imported."""

from __future__ import annotations

import uuid

from ...core.requests import SearchFilters, SearchRequest

SEARCH_LIMIT = 30
"""Hits the search pane lists."""


def new_session() -> str:
    """A dashboard run's session: its reads show this session's session memories, not other sessions'."""
    return f"tui-{uuid.uuid4().hex[:12]}"


def pane_search(text: str, session: str) -> SearchRequest:
    """The search pane's request for what its box holds."""
    return SearchRequest(text, SearchFilters(session=session), limit=SEARCH_LIMIT)
