"""The team store: memories of scope `team` written to a shared object-storage database, a local queue for the
writes made while it is unreachable, and a vector cache that machines of the team share.

Several machines write to one store with no lock between them. Each write is one LanceDB merge on the memory id
(ids are minted before the write, so repeating a merge after a lost commit race changes nothing); LanceDB's commit
protocol puts concurrent merges on distinct ids one after the other without loss.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..embedding.embed import VectorCache
from ..errors import CortexError
from ..records import Memory, MemoryDraft, RememberResult
from ..secrets.secret_fields import secure_draft
from ..write_ids import current, writing_as
from .commits import COMMITS
from .failures import is_unreachable
from .memory_rows import FIELDS, now, row_to_memory, validate_draft
from .sql import in_filter, scan
from .store import GitPosition, MemoryStore
from .vector_cache import LanceVectorCache


@dataclass(frozen=True)
class QueuedWrite:
    """A team memory typed while the team store was unreachable, as it will be sent."""

    id: str
    draft: MemoryDraft
    branch: str
    commit: str
    write_id: str = ""
    """The stamp of the command that queued it (core/write_ids.py): the rows `cortex sync` stores carry it, and
    until then the queue itself answers that the write is queued (core/usecases/memories.py `receipt`)."""

    def to_json(self) -> dict:
        draft = asdict(self.draft)
        draft["created_at"] = self.draft.created_at.isoformat() if self.draft.created_at else None
        return {"id": self.id, "draft": draft, "branch": self.branch, "commit": self.commit,
                "write_id": self.write_id}

    @staticmethod
    def from_json(data: dict) -> QueuedWrite:
        fields = dict(data["draft"])
        for name in ("tags", "files", "symbols"):
            fields[name] = tuple(fields.get(name) or ())
        if fields.get("created_at"):
            fields["created_at"] = datetime.fromisoformat(fields["created_at"])
        return QueuedWrite(data["id"], MemoryDraft(**fields), data.get("branch", ""), data.get("commit", ""),
                           data.get("write_id") or "")


class TeamQueue:
    """A JSONL file of queued team writes. Every change rewrites it whole through a temporary file and an atomic
    rename, under a lock beside it, so a crash or a second process never leaves a half-written line."""

    def __init__(self, path: Path, lock_timeout: float = 30.0) -> None:
        self.path = path
        self.lock_timeout = lock_timeout

    def _lock(self):
        import filelock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        return filelock.FileLock(str(self.path) + ".lock", timeout=self.lock_timeout, thread_local=False)

    def read(self) -> list[QueuedWrite]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        found = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                found.append(QueuedWrite.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise CortexError(f"{self.path} line {n} is not a queued team write ({exc}); fix or remove that line") from None
        return found

    def _write(self, items: Sequence[QueuedWrite]) -> None:
        if not items:
            self.path.unlink(missing_ok=True)
            return
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".team-queue-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for item in items:
                out.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        COMMITS.committed()  # a durable write, as a commit is (and where a crash test can stop)

    def append(self, items: Sequence[QueuedWrite]) -> None:
        with self._lock():
            self._write(self.read() + list(items))

    def remove(self, ids: set[str]) -> None:
        with self._lock():
            self._write([q for q in self.read() if q.id not in ids])


@dataclass(frozen=True)
class SyncResult:
    """What `cortex sync` did: queued writes sent, and those still waiting."""

    sent: int
    waiting: int
    error: str = ""


class TeamMemory:
    """Writes of scope `team`: straight to the team store when it answers, else into the local queue."""

    def __init__(self, open_store: Callable[[], MemoryStore], queue: TeamQueue, max_text_bytes: int) -> None:
        self.open_store = open_store
        self.queue = queue
        self.max_text_bytes = max_text_bytes

    def remember_many(self, drafts: Sequence[MemoryDraft], position: GitPosition) -> list[RememberResult]:
        for draft in drafts:  # sizes before the secret scan, which takes time in proportion to them
            validate_draft(draft, self.max_text_bytes)
        drafts = [secure_draft(d) for d in drafts]
        # The time is fixed now, so a memory sent later by `cortex sync` keeps the time it was typed.
        stamp = datetime.now(UTC)
        items = [QueuedWrite(uuid.uuid4().hex[:12], d if d.created_at else _with_time(d, stamp), position.branch,
                             position.commit, current()) for d in drafts]
        try:
            self.sync()
            store = self.open_store()
            return settle(store, store.remember_many([q.draft for q in items], position, ids=[q.id for q in items]))
        except Exception as exc:
            if not is_unreachable(exc):
                raise
        self.queue.append(items)
        return [RememberResult(_queued_memory(q), "queued") for q in items]

    def sync(self) -> SyncResult:
        """Send the queued writes, oldest first, one batch per git position; a batch leaves the queue only after
        its commit. Sending one again after a lost answer finds it a duplicate and stores nothing new."""
        waiting = self.queue.read()
        if not waiting:
            return SyncResult(0, 0)
        sent = 0
        try:
            store = self.open_store()
            for branch, commit, write_id in dict.fromkeys((q.branch, q.commit, q.write_id) for q in waiting):
                batch = [q for q in waiting if (q.branch, q.commit, q.write_id) == (branch, commit, write_id)]
                # Stored under the ids they were queued with: the id printed then is the memory's id; and with the
                # write id of the command that queued them, not the one that happens to send them.
                with writing_as(write_id):
                    settle(store, store.remember_many([q.draft for q in batch], GitPosition(branch, commit),
                                                      ids=[q.id for q in batch]))
                self.queue.remove({q.id for q in batch})
                sent += len(batch)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            return SyncResult(sent, len(waiting) - sent, str(exc) if isinstance(exc, CortexError) else "team store is unreachable")
        return SyncResult(sent, 0)


def settle(store: MemoryStore, results: list[RememberResult]) -> list[RememberResult]:
    """After a team write's commit: one active memory per text, and one active version per key."""
    return settle_versions(store, settle_repeats(store, results))


def settle_repeats(store: MemoryStore, results: list[RememberResult]) -> list[RememberResult]:
    """Two machines remembering the same text at once both find it absent and both insert it (their merges touch
    different ids, so neither commit conflicts). After its own commit each writer reads the latest version, where
    the later of the two commits sees both rows, and keeps the one with the smallest id active. Both writers pick
    the same row, and marking the others superseded is an update by filter, so doing it twice changes nothing."""
    # Duplicates count too: a write sent again from the queue after its first settle failed (timed out, or the
    # process was killed between commit and settle) finds its rows as duplicates, and settles them now.
    created = {r.memory.text_hash for r in results
               if r.outcome in ("created", "duplicate") and not r.memory.source_key}
    if not created:
        return results
    # A table opened now reads the newest version; the store's own handle may serve one up to the consistency
    # interval old, which would miss the other writer's commit.
    latest = store.db.conn.open_table(store.table.name)
    where = (f"status = 'active' AND source_key = '' AND "
             f"({in_filter('text_hash', sorted(created))})")
    rows = latest.search().where(where).select(["id", "scope", "text_hash"]).limit(max(latest.count_rows(where), 1)).to_list()
    by_hash: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        by_hash.setdefault((row["scope"], row["text_hash"]), []).append(row["id"])
    winner_ids = {key: min(ids) for key, ids in by_hash.items()}
    losers = [i for key, ids in by_hash.items() for i in ids if i != winner_ids[key]]
    if not losers:
        return results
    chosen = in_filter("id", [i for key, i in winner_ids.items() if len(by_hash[key]) > 1])
    assert chosen is not None  # a loser means some text has two rows, so it has a winner
    winners = {(m.scope, m.text_hash): m for m in map(row_to_memory, latest.search().where(chosen)
                                                      .select(FIELDS).limit(len(winner_ids)).to_list())}
    where_losers = in_filter("id", losers)
    assert where_losers is not None  # losers is not empty
    store.db.write(lambda: store.db.update(latest, where_losers, {"status": "superseded", "updated_at": now()}))
    settled = []
    for r in results:
        winner = winners.get((r.memory.scope, r.memory.text_hash))
        lost = r.outcome == "created" and winner is not None and winner.id != r.memory.id
        settled.append(RememberResult(winner, "duplicate") if lost and winner is not None else r)
    return settled


def settle_versions(store: MemoryStore, results: list[RememberResult]) -> list[RememberResult]:
    """Two machines writing a new version of one key at once both read the same active version, and each commits
    that version superseded and its own new one active (their merges update the same row, so the later commit is
    retried, but the retry applies the same rows again). After its own commit each writer reads the latest version
    and keeps the highest version of each key it wrote active, the smallest id among equal versions, marking the
    others superseded. Every writer picks the same row, and an update by filter done twice changes nothing."""
    # Duplicates count too: a keyed write sent again from the queue finds itself stored, and settles its key now.
    keys = sorted({r.memory.source_key for r in results if r.memory.source_key and r.outcome != "queued"})
    if not keys:
        return results
    latest = store.db.conn.open_table(store.table.name)
    where = f"status = 'active' AND ({in_filter('source_key', keys)})"
    by_key: dict[str, list[dict]] = {}
    for row in scan(latest, where, ["id", "source_key", "version"]):
        by_key.setdefault(row["source_key"], []).append(row)
    losers = {row["id"] for rows in by_key.values()
              for row in sorted(rows, key=lambda r: (-r["version"], r["id"]))[1:]}
    if not losers:
        return results
    where_losers = in_filter("id", sorted(losers))
    assert where_losers is not None  # losers is not empty
    store.db.write(lambda: store.db.update(latest, where_losers, {"status": "superseded", "updated_at": now()}))
    return [RememberResult(replace(r.memory, status="superseded"), r.outcome) if r.memory.id in losers else r
            for r in results]


class SharedVectorCache:
    """The local vector cache first, then the team's: vectors another machine computed are reused (and kept
    locally), and vectors computed here are offered to the team. The team's cache is a help, never a need: when
    it does not answer, embedding goes on with the local cache alone."""

    def __init__(self, local: VectorCache, team: Callable[[], LanceVectorCache | None]) -> None:
        self.local = local
        self.team = team

    def _team(self) -> LanceVectorCache | None:
        try:
            return self.team()
        except CortexError:
            return None

    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found = self.local.get_vectors(model, hashes)
        missing = [h for h in hashes if h not in found]
        team = self._team() if missing else None
        if team is not None:
            try:
                shared = team.get_vectors(model, missing)
            except Exception as exc:
                if not is_unreachable(exc):
                    raise
                shared = {}
            if shared:
                self.local.put_vectors(model, shared)
                found.update(shared)
        return found

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        self.local.put_vectors(model, vectors)
        team = self._team()
        if team is not None and vectors:
            try:
                team.put_vectors(model, vectors)
            except Exception as exc:
                if not is_unreachable(exc):
                    raise


def _with_time(draft: MemoryDraft, stamp: datetime) -> MemoryDraft:
    return replace(draft, created_at=stamp)


def _queued_memory(item: QueuedWrite) -> Memory:
    """How a queued write shows in results until it is sent (its id is the queue entry's)."""
    from ..text import text_hash
    from .memory_rows import default_title

    d = item.draft
    stamp = d.created_at or datetime.now(UTC)
    return Memory(id=item.id, kind=d.kind, title=d.title or default_title(d.text), text=d.text, tags=list(d.tags),
                  files=list(d.files), symbols=list(d.symbols), branch=item.branch, commit=item.commit, scope=d.scope,
                  source_key=d.source_key, version=0, status="active",
                  task_state=(d.task_state or "open") if d.kind == "task" else "", created_at=stamp, updated_at=stamp,
                  accessed_at=stamp, text_hash=text_hash(d.text), context=d.context)
