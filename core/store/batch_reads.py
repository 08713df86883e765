"""Several LanceDB queries run together: one hand-off to LanceDB's event loop for all of them.

LanceDB's synchronous API runs each query on a background event loop and hands back to the caller once for every
step of it (the table's schema, three times; the plan; each batch of results): about seven hand-offs a query.
A search made four to six such queries side by side from a thread pool, and on two busy cores each hand-off
waited for its thread to be scheduled and for the interpreter lock: reads that took 14.5 ms alone took over
100 ms each inside a search. Here the queries are built as usual, then executed by the loop together, their
results collected there, and handed back once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def read_together(queries: Sequence[Any]) -> list[list[dict]]:
    """The rows of each LanceDB query builder (as its `to_list()` would give them), in order. Only for plain
    queries (no reranker, no blob columns) and takes by row id (`table.take_row_ids(...)`): what the search
    makes."""
    if not queries:
        return []
    try:
        from lancedb.background_loop import LOOP
        from lancedb.query import LanceTakeQueryBuilder

        # A take's builder wraps its asynchronous query itself; other builders are planned on their table.
        plans = [(None, query._inner) if isinstance(query, LanceTakeQueryBuilder)
                 else (query._table._table, query.to_query_object()) for query in queries]
        together = all(hasattr(table, "_execute_query") if table is not None else hasattr(plan, "to_arrow")
                       for table, plan in plans)
    except (AttributeError, ImportError):
        together = False
    if not together:
        # Another LanceDB than the one this was written against: each query on its own, as before.
        return [query.to_list() for query in queries]

    async def run() -> list[pa.Table]:
        return list(await asyncio.gather(*(_collected(table, plan) for table, plan in plans)))

    return [table.to_pylist() for table in LOOP.run(run())]


async def _collected(table, plan) -> pa.Table:
    if table is None:
        return await plan.to_arrow()
    results = await table._execute_query(plan)
    return pa.Table.from_batches([batch async for batch in results], schema=results.schema)
