"""Plain HTTP recall endpoints served beside MCP by `cortex mcp --http PORT`, for scripts and tools that do not speak
MCP: `GET /health` (with the counts of memories by kind, chunks, embeddings pending and table versions), `GET
/snapshot` (what to load first), `POST /recall` (a zero-LLM search of the memories, optionally through the pointer
filter, optionally with the snapshot), `POST /query` (a question answered with pointers to the memories that answer
it: ids, kinds, titles and scores) and `POST /store` (remember; an `Idempotency-Key` header makes sending it again
safe).

They answer through the same runner as the MCP tools (the resident server's engine, or this process's), so a recall
is a `smart_search` and a store a `remember`, with the same limits and the same secret gate. They sit behind the
same bearer token (the middleware wraps the whole app) and the same Host and Origin checks as the MCP endpoint
(`http.loopback_security`). Every refusal is one line of JSON, `{"error": "..."}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.errors import CortexError
from ...core.requests import SearchFilters
from .arguments import Runner, one_line

MAX_BODY_BYTES = 4 * 1024 * 1024
"""Above the store's 1 MB text limit, so an oversized memory is refused by the store with its own message."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RecallBody(_Body):
    query: Annotated[str, Field(min_length=1, description="what to recall")]
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    filter: bool = False
    """Let the configured LLM select the candidates that answer (pointer-only); the answer's `ranked_by` says
    whether it did."""
    filters: SearchFilters | None = None
    """As the MCP tool's; without it, memories only."""
    snapshot: bool = False
    """Return the session snapshot beside the hits (`snapshot`), as a session's first recall wants it."""


class QueryBody(_Body):
    question: Annotated[str, Field(min_length=1, description="the question to answer")]
    limit: Annotated[int, Field(ge=1, le=100)] = 5
    filter: bool = False
    """Through the configured LLM filter (pointer-only); zero-LLM without one, as `ranked_by` says."""


class StoreBody(_Body):
    text: Annotated[str, Field(min_length=1)]
    kind: str = "note"
    title: str = ""
    tags: list[str] = []
    files: list[str] = []
    key: str = ""


class BadRequest(Exception):
    """A request refused before it reaches the engine: its status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _json_body(request) -> str:
    """The request's body, a JSON object, read up to MAX_BODY_BYTES."""
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
    try:
        text = bytes(body).decode("utf-8")
        value = json.loads(text)
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"the body is not UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    if not isinstance(value, dict):
        raise BadRequest(400, "the body must be a JSON object")
    return text


def _parse(model: type[_Body], body: str) -> Any:
    # Validated as JSON, where strict mode still takes an array for a tuple (`filters.kinds`).
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise BadRequest(400, f"bad arguments: {one_line(exc)}") from exc


def add_recall_routes(server, run: Runner, repository: str) -> None:
    """Register the endpoints on the MCP server's HTTP app (before it is built)."""
    import anyio
    from mcp.server.transport_security import TransportSecurityMiddleware
    from starlette.responses import JSONResponse

    from ..link.remote import RemoteError
    from .http import loopback_security

    guard = TransportSecurityMiddleware(loopback_security())

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": " ".join(message.split()) or "error"}, status_code=status)

    def endpoint(answer, post: bool):
        async def handle(request):
            refused = await guard.validate_request(request, is_post=post)
            if refused is not None:
                return error(refused.status_code, bytes(refused.body).decode("utf-8", "replace"))
            try:
                body = await _json_body(request) if post else ""
                return JSONResponse(await answer(body, request.headers))
            except BadRequest as exc:
                return error(exc.status, str(exc))
            except (CortexError, RemoteError) as exc:
                return error(400, str(exc).partition("\n")[0])

        return handle

    async def tool(name: str, **kwargs) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(lambda: run(name, (), kwargs, ""))

    async def health(_body: str, _headers: Mapping[str, str]) -> dict[str, Any]:
        counts = await tool("stats")
        stores = counts["stores"]
        by_kind: dict[str, int] = {}
        for store in stores:
            for kind, n in store["by_kind"].items():
                by_kind[kind] = by_kind.get(kind, 0) + n
        index = counts["index"] or {}
        return {"ok": True, "repository": repository, "memories": sum(s["active"] for s in stores),
                "memories_by_kind": by_kind, "open_tasks": sum(s["open_tasks"] for s in stores),
                "chunks": index.get("chunks", 0), "embeddings_pending": index.get("embeddings_pending", 0),
                "index_fresh": index.get("fresh"), "versions": {s["uri"]: s["table_versions"] for s in stores}}

    async def snapshot(_body: str, _headers: Mapping[str, str]) -> dict[str, Any]:
        return await tool("snapshot")

    async def recall(text: str, _headers: Mapping[str, str]) -> dict[str, Any]:
        body = _parse(RecallBody, text)
        filters = body.filters if body.filters is not None else SearchFilters(memories_only=True)
        found = await tool("smart_search", query=body.query, filters=filters, limit=body.limit, filter=body.filter)
        return {**found, "snapshot": await tool("snapshot")} if body.snapshot else found

    async def query(text: str, _headers: Mapping[str, str]) -> dict[str, Any]:
        body = _parse(QueryBody, text)
        found = await tool("smart_search", query=body.question, filters=SearchFilters(memories_only=True),
                           limit=body.limit, filter=body.filter)
        pointers = [{"id": h["id"], "kind": h["kind"], "title": h["title"], "score": h["score"]}
                    for h in found["hits"] if h["source"] == "memory"]
        return {"question": body.question, "pointers": pointers,
                **{k: found[k] for k in ("ranked_by", "notes") if k in found}}

    async def store(text: str, headers: Mapping[str, str]) -> dict[str, Any]:
        """A `remember`; an `Idempotency-Key` header names the write, so a client that lost the answer and sends
        the same request again gets the first answer (`repeated`: true) and nothing is stored twice."""
        body = _parse(StoreBody, text)
        return await tool("remember", text=body.text, kind=body.kind, title=body.title, tags=body.tags,
                          files=body.files, key=body.key, idempotency_key=headers.get("idempotency-key", ""))

    server.custom_route("/health", methods=["GET"])(endpoint(health, post=False))
    server.custom_route("/snapshot", methods=["GET"])(endpoint(snapshot, post=False))
    server.custom_route("/recall", methods=["POST"])(endpoint(recall, post=True))
    server.custom_route("/query", methods=["POST"])(endpoint(query, post=True))
    server.custom_route("/store", methods=["POST"])(endpoint(store, post=True))
