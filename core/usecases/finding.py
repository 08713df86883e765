"""Finding: memories and code in one ranked list, for a query and its filters, as a front end asked for it."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import replace

from ..git.gitctx import GitContext
from ..pool import READS
from ..requests import SearchRequest
from ..search.query import Filters
from ..search.search import GitInputs, SearchResults
from .overview import graph
from .workspace import Workspace


def search(ws: Workspace, query: str, filters: Filters, limit: int, expand: bool = False,
           llm_filter: bool = False) -> SearchResults:
    """`llm_filter`: let the configured model reorder the top candidates by pointing at them (off by default);
    `expand`: add the hits' neighbours in the memory graph."""
    from ..search.llm_filter import LLMFilterConfig, filter_results

    llm = LLMFilterConfig.from_settings(ws.settings) if llm_filter else None
    shown = max(limit, llm.candidates) if llm is not None and llm.configured else limit
    searcher = ws.searcher()
    # Freshness (a listing of the tree unless a watcher keeps the index live) and the working change (a `git status`
    # of the tree) run beside the query embedding and the search instead of before them.
    status = READS.submit(searcher.index.status) if searcher.index is not None else None
    # One job opens the repository once: it hands over the history (all ranking needs) before `git status`.
    history: Future[GitContext] = Future()
    git = READS.submit(ws.git, history_out=history)
    results = searcher.search(query, filters, shown, GitInputs(git.result, history.result))
    fresh = status.result().fresh if status is not None else None
    results = replace(results, index_fresh=fresh)
    checker = ws.anchoring.checker()
    if checker is not None:
        from ..anchors.checker import flag_hits

        results = replace(results, hits=flag_hits(checker, results.hits))
    ws.stores.accessed([h.memory for h in results.hits if h.memory is not None])
    if llm is not None:
        results = filter_results(results, llm)
        results = replace(results, hits=results.hits[:limit])
    if expand:
        from ..graph.graph import expand_results

        results = expand_results(graph(ws, session=filters.session), results)
    return results


def smart_search(ws: Workspace, request: SearchRequest) -> SearchResults:
    """A search as a front end asked for it, inline filters and all (see `SearchRequest.parsed`)."""
    query, filters = request.parsed()
    results = search(ws, query, filters, request.limit, expand=request.expand, llm_filter=request.llm_filter)
    if request.filters.past_sessions != "beside":
        return results
    # The second list: the same search of the sessions alone (the first leaves them out).
    beside = replace(request, filters=replace(request.filters, past_sessions="only"), expand=False)
    words, narrowed_to_sessions = beside.parsed()
    sessions = search(ws, words, narrowed_to_sessions, request.limit, llm_filter=request.llm_filter)
    return replace(results, past_sessions=tuple(sessions.hits))
