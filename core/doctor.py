"""`cortex doctor`: check every table of a database and repair what is damaged, keeping every row that reads.

Each table is opened, counted and read in full (a truncated data file fails only when its rows are read); its
indexes are queried, its vectors checked, its manifests compared with its transactions. What can be rebuilt is
rebuilt: the code index (files, chunks, edges, skipped) from the work tree, the vector cache from nothing, meta
from the data. What cannot (memories, the agent log) goes back to its newest version that reads whole, with the
readable rows of its newest version merged on top (core/store/salvage.py); what is lost is counted, and named by
key where its key reads. Nothing is deleted that might hold memories: what cannot be read is moved under
`.doctor/`. A database its owner made read-only is checked and not written.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Literal

from .embedding.embed import Embedder
from .errors import CortexError, NoDatabase
from .secrets.secret_rules import rules_version
from .store.database import Database, read_only_note
from .store.lost_writes import (
    acknowledge_lost,
    find_lost_writes,
    manifest_version,
    orphan_writes,
    orphans_problem,
    set_orphans_aside,
    size,
)
from .store.salvage import KEYS, lance_failure
from .store.schema import META_SCHEMA, SCHEMA_VERSION
from .versions import ComponentVersion, cortex_version, distribution_version

INDEX_TABLES = ("files", "chunks", "edges", "skipped")
CACHE_TABLES = ("vector_cache",)
ASIDE = ".doctor"


@dataclass(frozen=True)
class TableHealth:
    name: str
    rows: int | None
    problem: str
    """The first line of what failed ("" when the table opened and read back whole)."""
    lost: bool = False
    """The table reads whole, but a write it took is in no version it reads (`core.store.lost_writes`)."""

    @property
    def state(self) -> Literal["ok", "damaged", "lost"]:
        return "ok" if not self.problem else "lost" if self.lost else "damaged"


@dataclass(frozen=True)
class DoctorReport:
    tables: tuple[TableHealth, ...]
    actions: tuple[str, ...]
    """What was repaired, one line each; empty when every table was healthy."""
    versions: tuple[ComponentVersion, ...]
    """What reads and writes the database: a report on damage says which versions met it."""
    unrepaired: bool = False
    """Damage was found and left as it is (the database is read-only): the command fails."""

    def to_json(self) -> dict:
        return {"tables": [{**t.__dict__, "state": t.state} for t in self.tables], "actions": list(self.actions), "unrepaired": self.unrepaired,
                "versions": {v.component: v.version for v in self.versions}}


def component_versions(embedder: Embedder) -> tuple[ComponentVersion, ...]:
    return (ComponentVersion("cortex-tui", cortex_version()),
            ComponentVersion("LanceDB", distribution_version("lancedb") or "(not installed)"),
            ComponentVersion("embedding model", embedder.provenance()),
            ComponentVersion("secret rules", rules_version()))


def check_table(conn, name: str) -> TableHealth:
    try:
        table = conn.open_table(name)
        rows = table.count_rows()
        table.to_arrow()
    except BaseException as exc:  # any failure to read a table, a Lance panic included, is reported and repaired
        if not lance_failure(exc):
            raise
        return TableHealth(name, None, _first_line(exc))
    return TableHealth(name, rows, "")


def run_doctor(uri: str, root: Path, is_repo: bool, embedder: Embedder, max_file_bytes: int, encoding: str,
               lock_timeout: float = 30.0) -> DoctorReport:
    from .store.rust_panics import panics_kept_quiet

    with panics_kept_quiet():  # a panic is reported as the table's damage, in one line
        return _run_doctor(uri, root, is_repo, embedder, max_file_bytes, encoding, lock_timeout)


def _run_doctor(uri: str, root: Path, is_repo: bool, embedder: Embedder, max_file_bytes: int, encoding: str,
                lock_timeout: float) -> DoctorReport:
    if not Path(uri).is_dir():
        raise NoDatabase(f"no cortex database at {uri}")
    db = Database(uri, create=False, lock_timeout=lock_timeout, check=False)
    names = sorted(db.table_names())
    if "meta" not in names and not any(db._holds_data(name) for name in names):
        raise CortexError(f"{uri} is not a cortex database (no meta table)")
    health = tuple(check_table(db.conn, name) for name in names)
    lost = {t.name: found for t in health if not t.problem and (found := find_lost_writes(Path(uri), t.name))}
    orphans = {t.name: writes for t in health if not t.problem and t.name not in lost
               and (writes := orphan_writes(Path(uri) / f"{t.name}.lance"))}
    health = tuple(TableHealth(t.name, t.rows, lost[t.name].problem, lost=True) if t.name in lost else
                   TableHealth(t.name, t.rows, orphans_problem(orphans[t.name]), lost=True) if t.name in orphans else t
                   for t in health)
    readable = [t.name for t in health if not t.problem or t.name in lost or t.name in orphans]
    if db.read_only:
        return _check_only(db, health, readable, embedder)
    actions: list[str] = []
    rebuild_index = False
    with db.write_lock():
        for table in health:
            if table.name in lost:
                actions.append(acknowledge_lost(Path(uri), Path(uri) / ASIDE, lost[table.name], table.rows))
                continue
            if table.name in orphans:
                actions.append(set_orphans_aside(Path(uri) / ASIDE, table.name, orphans[table.name],
                                               KEYS.get(table.name, ())))
                continue
            if not table.problem:
                continue
            if table.name in INDEX_TABLES:
                rebuild_index = True
            elif table.name in CACHE_TABLES:
                db.conn.drop_table(table.name)
                actions.append(f"{table.name}: unreadable; dropped (a cache, refilled as embeddings are made)")
            else:
                actions.append(_restore(db, table.name))
        if rebuild_index:
            for name in INDEX_TABLES:
                if name in names:
                    db.conn.drop_table(name)
    if "meta" not in db.table_names():
        actions += [said for said in [_rebuild_meta(db, embedder, rebuild=bool(names))] if said]
    if rebuild_index:
        actions.append(_rebuild_index(uri, root, is_repo, embedder, max_file_bytes, encoding, lock_timeout))
    actions += _rebuild_broken_indexes(db, readable)
    actions += _repair_vectors(db, readable, embedder)
    actions += [said for said in (_scrub_memories(db), _scrub_agent_log(db)) if said]
    return DoctorReport(health, tuple(actions), component_versions(embedder))


def _check_only(db: Database, health: tuple[TableHealth, ...], readable: list[str], embedder: Embedder
                ) -> DoctorReport:
    """A database its owner made read-only: what a repair would do, said and not done (nothing is written)."""
    found = [f"{t.name}: {'a write is lost' if t.lost else 'damaged'}" for t in health
             if t.problem]
    if "meta" not in db.table_names():
        found.append("meta: gone")
    found += _rebuild_broken_indexes(db, readable, repair=False)
    found += _repair_vectors(db, readable, embedder, repair=False)
    said = tuple(f"{line}; not repaired: {read_only_note(db.uri)}" for line in found)
    return DoctorReport(health, said, component_versions(embedder), unrepaired=bool(said))


def _repair_vectors(db: Database, names: list[str], embedder: Embedder, repair: bool = True) -> list[str]:
    """Vectors that are not finite or not the model's length: embedded again, or dropped from the cache (see
    core/store/vector_health.py)."""
    from .store import vector_health

    actions = []
    for name in (n for n in vector_health.VECTOR_TABLES if n in names):
        table = db.conn.open_table(name)
        found = vector_health.bad_vectors(table, embedder.dim, embedder.model_id)
        if found is None:
            continue
        if not repair:
            actions.append(f"{found.table}: {found.why}")
            continue
        with db.write_lock():
            actions.append(vector_health.repair(db, table, found))
    return actions


def _rebuild_broken_indexes(db: Database, names: list[str], repair: bool = True) -> list[str]:
    """Every search index of the readable tables exercised; one whose files are gone is built again (see
    core/store/index_health.py)."""
    from .store.index_health import broken_indexes, rebuild

    actions = []
    for name in names:
        table = db.conn.open_table(name)
        for broken in broken_indexes(table):
            if repair:
                with db.write_lock():
                    db.commit(partial(rebuild, table, broken))
            why = "its files are gone" if broken.files_gone else broken.problem
            actions.append(f"{name}: index {broken.name} ({broken.index_type} on {broken.column}) could not be read "
                           f"({why})" + ("; rebuilt" if repair else ""))
    return actions


def _scrub_memories(db: Database) -> str:
    """Redact secrets in memories stored before a rule caught them (new writes refuse them), every version
    included: a superseded version is still shown by `history` and exported by `export --all-versions`. The doctor
    reads every table whole anyway; this is one more pass over the memories and one commit."""
    from .secrets.secret_fields import scrub_memory
    from .store.memory_rows import memory_to_row, row_to_memory
    from .store.store import MEMORIES
    from .write_ids import COLUMN

    if MEMORIES not in db.table_names():
        return ""
    table = db.conn.open_table(MEMORIES)
    changed, secrets = [], 0
    for row in table.to_arrow().to_pylist():
        memory, found = scrub_memory(row_to_memory(row))
        if found:
            # The row keeps the id of the write that stored it (the doctor's rewrite is no write of a command's).
            changed.append({**memory_to_row(memory), COLUMN: row.get(COLUMN)})
            secrets += found
    if not changed:
        return ""
    with db.write_lock():
        db.upsert(table, "id", changed, insert=False)
    return (f"memories: {secrets} secret(s) redacted in {len(changed)} memories stored before a rule caught them; "
            "`cortex index` embeds them again")


_AGENT_TEXT = {
    # table: (key columns, free-text columns an agent wrote)
    "agent_roadmap": (["seq"], ("text",)),
    "agent_branches": (["name"], ("purpose",)),
    "agent_steps": (["branch", "n"], ("observation", "thought", "action")),
    "agent_commits": (["id"], ("purpose", "summary", "contribution")),
}


def _scrub_agent_log(db: Database) -> str:
    """Redact secrets in agent-log rows written before a rule caught them: new writes refuse them, but the log's
    own tables (not only its mirror memories) are exported and shown by `cortex agent context`."""
    import pyarrow as pa

    from .secrets.secrets import redact

    secrets, rows_changed = 0, 0
    present = set(db.table_names())
    for name, (keys, columns) in _AGENT_TEXT.items():
        if name not in present:
            continue
        table = db.conn.open_table(name)
        changed = []
        for row in table.to_arrow().to_pylist():
            found = 0
            for column in columns:
                row[column], n = redact(row[column] or "")
                found += n
            if found:
                changed.append(row)
                secrets += found
        if changed:
            rows_changed += len(changed)
            with db.write_lock():
                db.upsert(table, keys, pa.Table.from_pylist(changed, schema=table.schema), insert=False)
    if not secrets:
        return ""
    return f"agent log: {secrets} secret(s) redacted in {rows_changed} rows stored before a rule caught them"


def _restore(db: Database, name: str) -> str:
    """Bring a table back to its newest version that reads whole, setting damaged newest manifests aside, and keep
    the readable rows of its newest version on top of it (core/store/salvage.py)."""
    from .store.key_index import uuid_from_manifest
    from .store.salvage import lost_said, readable_rows, salvage

    set_aside = 0
    while True:
        try:
            table = db.conn.open_table(name)
            versions = sorted((v["version"] for v in table.list_versions()), reverse=True)
            break
        except Exception:
            if not _set_aside_newest_manifest(Path(db.uri), name):
                return _from_data_files(db, name)
            set_aside += 1
    note = f" after setting {set_aside} damaged manifest(s) aside" if set_aside else ""
    keys = KEYS.get(name) or tuple(table.schema.names)
    folder = Path(db.uri) / f"{name}.lance"
    index = uuid_from_manifest(table, keys[0]) if len(keys) == 1 else None
    named = partial(_named_by_index, folder, keys, index)
    for version in versions:
        try:
            table.checkout(version)
            rows = table.to_arrow().num_rows
        except BaseException as exc:  # noqa: BLE001 - a Lance panic included
            if not lance_failure(exc):
                raise
            continue
        table.checkout_latest()
        if version == versions[0]:
            return f"{name}: restored version {version} ({rows} rows){note}"
        return salvage(table, name, version, versions[0], db.commit, named).said(name) + note
    # No version reads whole: keep what reads of the newest, beside the files set aside.
    table.checkout(versions[0])
    found = readable_rows(table, table.count_rows(), keys)
    table.checkout_latest()
    unnamed = found.lost - len(found.lost_keys)
    indexed = named(found.rows, unnamed) if unnamed else ()
    moved = _move_aside(db, name)
    if found.rows.num_rows:
        db.commit(lambda: db.conn.create_table(name, data=found.rows))
    lost = f"; {lost_said(found.lost, found.lost_keys, indexed, keys)}" if found.lost else ""
    return (f"{name}: none of its {len(versions)} versions reads whole; {moved} and it starts with the "
            f"{found.rows.num_rows} row(s) that read{lost}")


def _from_data_files(db: Database, name: str) -> str:
    """No manifest is left (`_versions/` deleted): the rows are read from the data files themselves
    (core/store/file_salvage.py), the table made again from them, and its files kept under `.doctor/`."""
    from .store.file_salvage import rows_from_files
    from .store.key_index import uuid_by_values, uuid_from_transactions
    from .store.salvage import lost_said

    folder = Path(db.uri) / f"{name}.lance"
    keys = KEYS.get(name, ())
    found = rows_from_files(folder, keys)
    kept = found.rows.num_rows if found.rows is not None else 0
    lost = ""
    if found.unreadable:
        index = None
        if len(keys) == 1:
            kept_keys = set() if found.rows is None else {str(k) for k in found.rows[keys[0]].to_pylist()}
            index = uuid_from_transactions(folder, keys[0]) or uuid_by_values(folder, kept_keys)
        indexed = _named_by_index(folder, keys, index, found.rows, None)
        lost = (f"; {len(found.unreadable)} data file(s) did not read "
                f"({size(sum(p.stat().st_size for p in found.unreadable))}); {lost_said(None, (), indexed, keys)}")
    left = f"; {found.partial} file(s) holding only columns added later left out" if found.partial else ""
    moved = _move_aside(db, name)
    if kept:
        db.commit(lambda: db.conn.create_table(name, data=found.rows))
    return (f"{name}: no manifest names its data files; read from them directly, it starts with {kept} row(s) "
            f"(the newest copy of each; rows purged for good may be back){lost}{left}; {moved}")


def _named_by_index(folder: Path, keys: tuple[str, ...], index: str | None, kept, unnamed: int | None
                    ) -> tuple[str, ...]:
    """Keys the key's index holds that no kept row has: lost rows named though their own key column did not read.
    More of them than rows lost without a key (`unnamed`, None when unknown) would name rows deleted on purpose
    too, so then none is named."""
    from .store.key_index import indexed_keys

    held = indexed_keys(folder, index) if index else None
    if not held:
        return ()
    have = set() if kept is None else {str(k) for k in kept[keys[0]].to_pylist()}
    missing = tuple(sorted(held - have))
    return missing if unnamed is None or len(missing) <= unnamed else ()


def _set_aside_newest_manifest(uri: Path, name: str) -> bool:
    versions = uri / f"{name}.lance" / "_versions"
    manifests = [p for p in versions.glob("*.manifest") if p.stem.isdigit()]
    if not manifests:
        return False
    newest = max(manifests, key=lambda p: manifest_version(p.stem))
    aside = uri / ASIDE / name / "_versions"
    aside.mkdir(parents=True, exist_ok=True)
    shutil.move(str(newest), aside / newest.name)
    # The hint names the newest version; without it Lance lists the manifests that are left.
    (versions / "latest_version_hint.json").unlink(missing_ok=True)
    return True


def _move_aside(db: Database, name: str) -> str:
    """The table's files kept for a manual look (the table is made again beside them); says where they went."""
    stamp = re.sub(r"\D", "", datetime.now().isoformat(timespec="seconds"))
    source = Path(db.uri) / f"{name}.lance"
    files = [p.stat().st_size for p in (source / "data").glob("*.lance")]
    target = Path(db.uri) / ASIDE / f"{name}-{stamp}.lance"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), target)
    held = f" ({len(files)} data file(s), {size(sum(files))})" if files else ""
    return f"its files{held} were moved to {target}"


def _rebuild_meta(db: Database, embedder: Embedder, rebuild: bool) -> str:
    """The meta table again, from the data: the schema version and each format that a column computed from the
    rows records (`words`, `names`: computed again as the tables are opened, so they hold what the format says).
    How files were cut cannot be read from the chunks; taken as this version's, so the files stay fresh."""
    from .index.formats import CUT_FORMAT, bring_up_to_date
    from .store.store import MemoryStore

    db.open_table("meta", META_SCHEMA)
    values = {"schema_version": str(SCHEMA_VERSION)}
    if "chunks" in db.table_names():
        values["chunks_cut"] = CUT_FORMAT
    db.set_metas(values)
    if not rebuild:
        return ""
    db.migrated_from = None
    MemoryStore(db, embedder)  # records the memories' words format, computing the column again
    if {"chunks", "files"} <= db.table_names():  # the chunks' words and names formats, likewise
        bring_up_to_date(db, db.conn.open_table("chunks"), db.conn.open_table("files"), embedder.model_id)
    return f"meta: gone; rebuilt from the data ({', '.join(sorted(db.metas()))})"


def _rebuild_index(uri: str, root: Path, is_repo: bool, embedder: Embedder, max_file_bytes: int, encoding: str,
                   lock_timeout: float) -> str:
    from .index.index import CodeIndex
    from .store.store import MemoryStore

    db = Database(uri, create=False, lock_timeout=lock_timeout)
    MemoryStore(db, embedder)  # creates tables a restore moved aside, and the vector cache the index reads
    report = CodeIndex(db, embedder, root, is_repo, max_file_bytes, encoding).update(embed=False)
    return (f"code index: unreadable; rebuilt from the work tree ({report.changed} files, {report.chunks} chunks; "
            f"{report.embeddings_pending} embeddings pending, `cortex index` fills them)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
