"""Writing and reading memories: remember (one, many, an export restored), revise, confirm, forget, mark a task,
list, and the retention policy that prunes them. Each function takes the `Workspace` it works in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

from ..config import RETAINED_SCOPES
from ..errors import CortexError
from ..records import Memory, MemoryDraft, RememberResult
from ..secrets.secret_fields import secure_draft
from ..store import receipts
from ..store.exact_import import import_exact
from ..store.memory_rows import validate_draft
from ..store.receipts import Receipt
from ..store.sessions import narrowed
from ..store.store import MemoryStore
from .workspace import Workspace

SCOPE_ORDER = ("repo", "global", "team")
"""The stores a batch of writes goes to, in this order."""


def store_name(scope: str) -> str:
    """The store a scope's memories are written to (session memories stay in the repository's)."""
    return scope if scope in ("global", "team") else "repo"


def remember(ws: Workspace, draft: MemoryDraft, check_near: bool = False) -> RememberResult:
    """`check_near`: when an active memory of the scope says the same in other words, store nothing and answer it
    (outcome `near_duplicate`), so the caller can make this a new version of it or keep both. A draft with a key
    names its versions itself (the same key is a new version, another key is kept apart): it is not checked."""
    if draft.scope == "session" and not draft.session:
        raise CortexError("a session memory needs its session: give --session ID or set CORTEX_SESSION")
    # Refused before anything is opened or embedded: a near-duplicate check would otherwise embed the secret and
    # keep its vector in the cache (the store checks again, for its other callers). The size first: the scan of a
    # 20 MB text took minutes.
    validate_draft(draft, ws.settings.max_text_bytes)
    draft = secure_draft(draft)
    pos = ws.position()
    draft = ws.anchoring.anchored([draft], pos.commit)[0]
    if check_near and draft.scope != "team" and not draft.source_key:
        store = ws.store_for(draft.scope)
        match = store.near(draft, store.embed_draft(draft))
        if match is not None:
            return RememberResult(ws.checked([match])[0], "near_duplicate")
    if draft.scope == "team":
        return ws.team().remember_many([draft], pos)[0]
    result = ws.store_for(draft.scope).remember(draft, pos)
    if ws.settings.retention.prunes(draft.scope):
        retention(ws, dry_run=False, scopes=(draft.scope,))  # a count per kind while within the caps
    return result


def remember_many(ws: Workspace, drafts: Sequence[MemoryDraft],
                  progress: Callable[[int, int], None] | None = None) -> list[RememberResult]:
    pos = ws.position()
    drafts = ws.anchoring.anchored(drafts, pos.commit)
    results: list[RememberResult | None] = [None] * len(drafts)
    for scope in SCOPE_ORDER:
        picked = [i for i, d in enumerate(drafts) if store_name(d.scope) == scope]
        if picked:
            chosen = [drafts[i] for i in picked]
            done = (ws.team().remember_many(chosen, pos) if scope == "team"
                    else ws.store_for(scope).remember_many(chosen, pos, progress))
            for i, result in zip(picked, done):
                results[i] = result
    pruned = tuple({d.scope for d in drafts if ws.settings.retention.prunes(d.scope)})
    if pruned:
        retention(ws, dry_run=False, scopes=pruned)  # as after one `remember`: imports and syncs are held too
    return [r for r in results if r is not None]


def restore_exported(ws: Workspace, memories: Sequence[Memory],
                     progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Exported memories restored as they were, each in the store its scope belongs to; returns the ids added."""
    added: list[str] = []
    for scope in SCOPE_ORDER:
        picked = [m for m in memories if store_name(m.scope) == scope]
        if picked:
            added += import_exact(ws.store_for(scope), picked, progress)
    return added


def revise(ws: Workspace, memory_id: str, draft: MemoryDraft) -> RememberResult:
    """Edit a memory by storing a new version; a memory without a key gets one so its history is kept."""
    validate_draft(draft, ws.settings.max_text_bytes)  # before reading the memory or scanning the draft
    store = ws.stores.owner(memory_id)
    old = store.get(memory_id)
    key = old.source_key or f"memory:{old.id}"
    if not old.source_key:
        store.set_source_key(old.id, key)
    pos = ws.position()
    draft = ws.anchoring.anchored([replace(draft, source_key=key, scope=old.scope, session=old.session)], pos.commit)[0]
    return store.remember(draft, pos)


def confirm(ws: Workspace, memory_id: str) -> Memory:
    """Say a memory still holds for its code as it is now: its anchors are recorded again, here and now."""
    store = ws.stores.owner(memory_id)
    anchors = ws.anchoring.renewed(store.get(memory_id), ws.position().commit)
    return ws.checked([store.set_anchors(memory_id, anchors)])[0]


def get(ws: Workspace, memory_id: str) -> Memory:
    memory = ws.stores.owner(memory_id).get(memory_id)
    ws.stores.accessed([memory])
    return ws.checked([memory])[0]


def list_memories(ws: Workspace, session: str | None, kind: str | None, tag: str | None, status: str | None,
                  scope: str | None, limit: int | None, where: str | None) -> list[Memory]:
    """Memories of every store read, newest first. `session`: the reader's (see core/store/sessions.py)."""
    visible = narrowed(where, session)
    # Each store returns at most `limit` (pushed into its read), then the union is cut to `limit` again.
    found = [m for store in ws.reading()
             for m in ws.stores.read(store, store.list, kind=kind, tag=tag, status=status, scope=scope, limit=limit,
                                     where=visible)]
    found.sort(key=lambda m: (m.created_at, m.version), reverse=True)
    return ws.checked(found[:limit] if limit else found)


def forget(ws: Workspace, memory_id: str | None, key: str | None, purge: bool) -> list[Memory]:
    if memory_id:
        return ws.stores.owner(memory_id).forget(memory_id, purge=purge)
    if not key:
        raise CortexError("give the id or the key of the memory to forget")
    return ws.stores.forget_key(key, purge)


def unforget(ws: Workspace, memory_id: str) -> Memory:
    """A soft-forgotten memory active again, under the same id."""
    return ws.checked([ws.stores.owner(memory_id).unforget(memory_id)])[0]


def receipt(ws: Workspace, write_id: str, mark: str = "") -> Receipt | None:
    """The receipt of the write with this id in any store read (the one its scope went to), or None when none
    committed it; of several, one made by the command whose fingerprint is `mark` (core/write_ids.py)."""
    found = [r for store in ws.stores_if_any() if (r := receipts.find(store.db, write_id, mark)) is not None]
    found += _queued(ws, write_id)
    found.sort(key=lambda r: r.fingerprint not in ("", mark))
    if not found:
        return None
    # A queued team write says so, with the output its command printed when that was kept.
    queued = [r for r in found if r.queued]
    return replace(queued[0], output=found[0].output) if queued else found[0]


def _queued(ws: Workspace, write_id: str) -> list[Receipt]:
    """The team writes with this id waiting in the repository's queue (written when the team store answers)."""
    from ..locations import team_queue_file
    from ..store.team import TeamQueue
    from ..write_ids import parts

    path = team_queue_file(ws.root)
    if not path.is_file():
        return []
    waiting = TeamQueue(path, ws.settings.lock_timeout).read()
    return [Receipt(write_id, None, parts(q.write_id)[1], queued=True) for q in waiting
            if q.write_id and parts(q.write_id)[0] == write_id][:1]


def retention(ws: Workspace, dry_run: bool = True, scopes: Sequence[str] = RETAINED_SCOPES) -> list[Memory]:
    """The memories the retention policy drops (settings `retention`: a cap per scope and kind, per session for
    scope `session`, least recently accessed out first; an age past which an unread memory goes; `pinned` exempt) in
    `scopes`; unless `dry_run`, forgets them (kept in history as deleted) and counts them in the store's stats. The
    team store is never pruned: it is shared, and no one teammate's settings decide for it."""
    ws.stores.flush_access()
    policy = ws.settings.retention
    dropped: list[Memory] = []
    for store, held in _retained_stores(ws, scopes):
        found: dict[str, Memory] = {}
        for scope in held:
            found |= {m.id: m for m in store.over_cap(scope, policy.caps(scope))}
            if (days := policy.max_age(scope)) > 0:
                cutoff = ws.clock() - timedelta(days=days)
                found |= {m.id: m for m in store.unread_since(scope, cutoff)}
        if not dry_run:
            store.prune(list(found.values()))
        dropped += found.values()
    return dropped


def _retained_stores(ws: Workspace, scopes: Sequence[str]) -> list[tuple[MemoryStore, tuple[str, ...]]]:
    """Each existing store that may hold one of `scopes` the policy prunes, with those scopes. Global memories live
    in the user's global store when there is one, else in the repository's."""
    policy = ws.settings.retention
    pruned = [scope for scope in RETAINED_SCOPES if scope in scopes and policy.prunes(scope)]
    stores: list[tuple[MemoryStore, tuple[str, ...]]] = []
    if "global" in pruned and (found := ws.stores.global_store(create=False)) is not None:
        stores.append((found, ("global",)))
        pruned.remove("global")
    if pruned and ws.has_store():
        stores.append((ws.store(), tuple(pruned)))
    return stores
