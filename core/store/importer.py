"""Turning files into memories (`cortex import`) and memories into JSONL (`cortex export`)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pathspec

from ..errors import CortexError
from ..nesting import load_json
from ..records import KINDS, SCOPES, STATUSES, TASK_STATES, Anchors, Memory, MemoryDraft
from ..secrets.secret_fields import draft_secret, secret_line
from ..secrets.secrets import find_secrets, is_secret_path, redact_json, redacted
from ..text import text_hash
from .extract import Section, html_sections, xml_sections
from .memory_rows import validate_draft

T = TypeVar("T")

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".rst"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
XML_SUFFIXES = {".xml"}
LINE_RECORD_SUFFIXES = {".jsonl", ".ndjson"}
RECORD_SUFFIXES = {*LINE_RECORD_SUFFIXES, ".json"}
READ_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | XML_SUFFIXES | RECORD_SUFFIXES
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class BadRecord:
    """A record (or a whole file) that cannot be imported, with where it is and why."""

    where: str
    """`notes.jsonl line 3`, `data.json record 2`, `docs/a.md line 12`."""
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


IMPORT_BATCH = 1000
"""Drafts embedded and written together: one commit each. A whole 20,000-line file as one batch held 1.2 GB."""


@dataclass(frozen=True)
class Tally:
    """What a plan will store, counted as it was read: its drafts, its exact records, and the keys that more than
    one draft carries (with how many), which are all `rounds` needs to put each key's versions in order."""

    drafts: int
    exact: int
    repeated: dict[str, int]


def _tally(entries: Iterable[tuple[str, MemoryDraft | Memory]]) -> Tally:
    keys: Counter[str] = Counter()
    drafts = exact = 0
    for _, entry in entries:
        if isinstance(entry, MemoryDraft):
            drafts += 1
            if entry.source_key:
                keys[entry.source_key] += 1
        else:
            exact += 1
    return Tally(drafts, exact, {key: n for key, n in keys.items() if n > 1})


@dataclass
class ImportPlan:
    """What an import will store, every file it passed over, and every record it cannot store."""

    entries: list[tuple[str, MemoryDraft | Memory]] = field(default_factory=list)
    """Everything to store, in file order, with where it was read (`notes.jsonl line 3`, `page.html line 12`), for a
    plan made in memory. A plan of files (`plan_import`) keeps none: it reads its files again (`again`), so an import
    holds one batch's records at a time, not the file's (100,000 records held took 300 MB before the first write)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bad: list[BadRecord] = field(default_factory=list)
    files: int = 0
    ids: set[str] = field(default_factory=set)
    """The ids of the exact records read so far: one id twice is a bad record."""
    again: Callable[[], Iterator[tuple[str, MemoryDraft | Memory]]] | None = None
    counted: Tally | None = None
    """Set with `again`: the tally of the first read."""

    def each(self) -> Iterator[tuple[str, MemoryDraft | Memory]]:
        """Everything to store, in file order, with where it was read."""
        return self.again() if self.again is not None else iter(self.entries)

    @property
    def tally(self) -> Tally:
        return self.counted if self.counted is not None else _tally(self.entries)

    @property
    def drafts(self) -> list[MemoryDraft]:
        """Plain records and document sections: new ids, keyed upserts, identical text stored once."""
        return [entry for _, entry in self.each() if isinstance(entry, MemoryDraft)]

    @property
    def exact(self) -> list[Memory]:
        """Records that carry an `id` (what `cortex export` writes): stored as they are."""
        return [entry for _, entry in self.each() if isinstance(entry, Memory)]

    def refuse_bad(self) -> None:
        """Abort before anything is written when a record is bad: the first one, by file and line, in one line."""
        if not self.bad:
            return
        more = len(self.bad) - 1
        rest = f" ({more} more bad record{'s' if more != 1 else ''}; --skip-bad imports the rest)" if more else \
            " (--skip-bad imports the rest)"
        raise CortexError(f"{self.bad[0]}; nothing was imported{rest}")

    def exact_batches(self, most: int | None = None) -> Iterator[list[Memory]]:
        """The exact records in file order, at most `most` (`IMPORT_BATCH`) at a time."""
        yield from _batches((entry for _, entry in self.each() if isinstance(entry, Memory)), most or IMPORT_BATCH)

    def rounds(self, most: int | None = None) -> Iterator[list[MemoryDraft]]:
        """The drafts in batches of at most `most` (`IMPORT_BATCH`) where no key appears twice, in file order: a round stores each
        key's next version, so two records with one key become versions 1 and 2 (the later one active), never two
        active memories. Each batch is embedded and written on its own, and each round reads the records again, so
        an import holds one batch's records, vectors and rows at a time, not the file's."""
        repeated = self.tally.repeated
        for n in range(max(repeated.values(), default=1)):
            yield from _batches(self._round(n, repeated), most or IMPORT_BATCH)

    def _round(self, n: int, repeated: dict[str, int]) -> Iterator[MemoryDraft]:
        """The drafts that are the `n`th of their key (every draft without a repeated key is the 0th)."""
        seen: dict[str, int] = {}
        """Only the keys more than one draft carries: how many of their drafts went by in this round."""
        for _, draft in self.each():
            if not isinstance(draft, MemoryDraft):
                continue
            nth = 0
            if draft.source_key in repeated:
                nth = seen.get(draft.source_key, 0)
                seen[draft.source_key] = nth + 1
            if nth == n:
                yield draft


def _batches(items: Iterable[T], most: int) -> Iterator[list[T]]:
    """`items` in lists of at most `most`, in order."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == most:
            yield batch
            batch = []
    if batch:
        yield batch


def plan_import(path: Path, default_kind: str = "note", scope: str = "repo", max_bytes: int = 1_000_000,
                progress: Callable[[int, int], None] | None = None) -> ImportPlan:
    """Read and check everything before any write, so a bad record never leaves a half-done import. The records
    are counted, not kept: the import reads them again, a batch at a time. `progress(bytes read, bytes in all)`
    while it reads (all 0 for a directory, whose size is not known before its walk): checking 100,000 records
    takes a minute or two."""
    if not path.exists():
        raise CortexError(f"{path} does not exist")
    plan = ImportPlan()
    size = path.stat().st_size if path.is_file() else 0
    told = (lambda done: progress(done, size)) if progress is not None else None
    plan.counted = _tally(_read(path, plan, default_kind, scope, max_bytes, told))
    # The second read reports nothing: what it would say, the first one said.
    plan.again = lambda: _read(path, ImportPlan(), default_kind, scope, max_bytes)
    return plan


def _read(path: Path, plan: ImportPlan, default_kind: str, scope: str, max_bytes: int,
          read: Callable[[int], None] | None = None) -> Iterator[tuple[str, MemoryDraft | Memory]]:
    """The good records under `path`, in file order, with where each was read; the files passed over and the bad
    records go to `plan` on the way. `read(bytes)`: how much of the files was read, every `IMPORT_BATCH` records
    of a record file and after each file."""
    files = [path] if path.is_file() else _walk(path, plan)
    done = 0
    for file in files:
        name = str(file)
        if is_secret_path(name):
            plan.skipped.append((redacted(name), "secret file"))
            continue
        suffix = file.suffix.lower()
        if suffix not in READ_SUFFIXES:
            plan.skipped.append((name, "not a markdown, text, html, xml, json, jsonl or ndjson file"))
            continue
        entries: Iterable[tuple[str, object]]
        try:
            if suffix in LINE_RECORD_SUFFIXES:
                # Line by line: a record file is read one line at a time, never whole.
                handle = file.open("rb")
            else:
                raw = file.read_bytes()
        except OSError as exc:
            plan.skipped.append((name, exc.strerror or "unreadable"))
            continue
        plan.files += 1
        if suffix in LINE_RECORD_SUFFIXES:
            with handle:
                for n, entry in enumerate(_checked(plan, _jsonl(name, handle), default_kind, scope, max_bytes), 1):
                    yield entry
                    if read is not None and n % IMPORT_BATCH == 0:
                        read(done + handle.tell())
                done += handle.tell()
            if read is not None:
                read(done)
            continue
        done += len(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            plan.bad.append(BadRecord(f"{name} line {line}", f"not valid UTF-8 (byte {exc.start})"))
            continue
        entries = _json(name, text) if suffix == ".json" else _document(file, suffix, text, default_kind, scope)
        yield from _checked(plan, entries, default_kind, scope, max_bytes,
                            lines=suffix not in HTML_SUFFIXES | XML_SUFFIXES | {".json"})
        if read is not None:
            read(done)


def _checked(plan: ImportPlan, entries: Iterable[tuple[str, object]], default_kind: str, scope: str, max_bytes: int,
             lines: bool = False) -> Iterator[tuple[str, MemoryDraft | Memory]]:
    """Each entry checked, the bad ones to `plan`. With `lines`, an entry's text is the file's lines from the line
    its `where` names (a markdown or text section), and a secret in that text is named by its own line."""
    for where, entry in entries:
        try:
            if isinstance(entry, BadRecord):
                plan.bad.append(entry)
            elif isinstance(entry, MemoryDraft):
                validate_draft(entry, max_bytes)
                yield where, check_draft(entry)
            else:
                yield where, _record(plan, entry, default_kind, scope, max_bytes)
        except CortexError as exc:
            secret = lines and str(exc).startswith("text contains a secret")  # check_draft's refusal
            plan.bad.append(BadRecord(_secret_at(where, entry) if secret else where, str(exc)))


def _secret_at(where: str, entry: object) -> str:
    """`notes.md line 3` for a section from line 1 whose text holds a secret on its third line; else `where`."""
    at = _LINE_AT_END.search(where)
    below = secret_line(entry.text) if at is not None and isinstance(entry, MemoryDraft) else None
    return where if at is None or below is None else f"{where[:at.start()]} line {int(at.group(1)) + below}"


_LINE_AT_END = re.compile(r" line (\d+)$")


def _walk(root: Path, plan: ImportPlan):
    """Files below root, honouring every .gitignore on the way down; symlinked directories are not followed."""
    specs: list[tuple[Path, pathspec.PathSpec]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        ignore = here / ".gitignore"
        if ignore.is_file():
            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
            specs.append((here, pathspec.GitIgnoreSpec.from_lines(lines)))

        def ignored(p: Path, is_dir: bool) -> bool:
            for base, spec in specs:
                if base == p or base in p.parents:
                    rel = p.relative_to(base).as_posix() + ("/" if is_dir else "")
                    if spec.match_file(rel):
                        return True
            return False

        dirnames[:] = sorted(d for d in dirnames if d not in {".git", ".cortex"} and not ignored(here / d, True))
        for name in sorted(filenames):
            file = here / name
            if file.is_symlink():
                plan.skipped.append((str(file), "symbolic link"))
            elif not ignored(file, False):
                yield file


def _document(file: Path, suffix: str, text: str, kind: str, scope: str) -> list[tuple[str, object]]:
    """A markdown, text, HTML or XML file as its sections, each one note keyed by the file and its place in it."""
    title = ""
    if suffix in HTML_SUFFIXES:
        title, sections = html_sections(text)
    elif suffix in XML_SUFFIXES:
        try:
            sections = xml_sections(text)
        except CortexError as exc:
            return [(str(file), BadRecord(str(file), str(exc)))]
    else:
        sections = _markdown_sections(text)
    entries: list[tuple[str, object]] = []
    for index, section in enumerate(sections):
        if not section.text:
            continue
        draft = MemoryDraft(text=section.text, kind=kind, title=section.title or title or file.stem, scope=scope,
                            tags=("imported",), source_key=f"import:{file.as_posix()}#{index}:{section.title}")
        entries.append((f"{file} {section.where}", draft))
    return entries


def _markdown_sections(text: str) -> list[Section]:
    """Markdown split on headings (outside code fences): each heading with its body, and the text before any."""
    sections: list[tuple[str, int, list[str]]] = [("", 1, [])]
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            sections.append((match.group(2), number, [line]))
        else:
            sections[-1][2].append(line)
    out = []
    for title, first_line, lines in sections:
        whole = "\n".join(lines)
        text = whole.strip()
        # Named by the line its text begins on (blank lines before the first heading are dropped with the strip).
        out.append(Section(title, f"line {first_line + whole[:len(whole) - len(whole.lstrip())].count(chr(10))}", text))
    return out


def _jsonl(name: str, lines: Iterable[bytes]) -> Iterator[tuple[str, object]]:
    """One record per line, numbered as an editor numbers them; a line that is not JSON becomes a BadRecord in its
    place, so bad records are reported in line order whatever made them bad."""
    for number, line in enumerate(lines, 1):
        where = f"{name} line {number}"
        try:
            text = line.rstrip(b"\n").decode("utf-8")
        except UnicodeDecodeError as exc:
            yield where, BadRecord(where, f"not valid UTF-8 (byte {exc.start} of the line)")
            continue
        if not text.strip():
            continue
        try:
            yield where, load_json(text)
        except json.JSONDecodeError as exc:
            yield where, BadRecord(where, f"invalid JSON: {exc.msg} at column {exc.colno}")
        except CortexError as exc:
            yield where, BadRecord(where, str(exc))


def _json(name: str, text: str) -> list[tuple[str, object]]:
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        where = f"{name} line {exc.lineno}"
        return [(where, BadRecord(where, f"invalid JSON: {exc.msg} at column {exc.colno}"))]
    except CortexError as exc:
        return [(name, BadRecord(name, str(exc)))]
    items = data if isinstance(data, list) else [data]
    return [(f"{name} record {number}" if isinstance(data, list) else name, item) for number, item in enumerate(items, 1)]


_STRINGS = ("kind", "title", "key", "source_key", "scope", "task_state", "context", "branch", "commit", "status", "id",
            "created_at", "updated_at", "session")
_LISTS = ("tags", "files", "symbols")
_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def _record(plan: ImportPlan, item: object, default_kind: str, scope: str, max_bytes: int) -> MemoryDraft | Memory:
    """Check one JSON record field by field; a record with an `id` is an exact one (an export's line)."""
    if not isinstance(item, dict):
        raise CortexError(f"a record must be a JSON object, not {type(item).__name__}")
    if not isinstance(item.get("text"), str):
        raise CortexError("no text field (a string)")
    for name in _STRINGS:
        if item.get(name) is not None and not isinstance(item[name], str):
            raise CortexError(f"{name} must be a string, not {type(item[name]).__name__}")
    for name in _LISTS:
        value = item.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise CortexError(f"{name} must be a list of strings")
    for name, allowed, fallback in (("kind", KINDS, default_kind), ("scope", SCOPES, scope), ("task_state", TASK_STATES, "")):
        value = item.get(name) or fallback
        if value and value not in allowed:
            raise CortexError(f"unknown {name.replace('_', ' ')} {_brief(value)}; choose one of {', '.join(allowed)}")
    draft = MemoryDraft(
        text=item["text"],
        kind=item.get("kind") or default_kind,
        title=item.get("title") or "",
        tags=tuple(item.get("tags") or ()),
        files=tuple(item.get("files") or ()),
        symbols=tuple(item.get("symbols") or ()),
        source_key=item.get("key") or item.get("source_key") or "",
        scope=item.get("scope") or scope,
        created_at=parse_time(item.get("created_at"), "created_at"),
        task_state=item.get("task_state") or "",
        context=item.get("context") or "",
        session=(item.get("session") or "") if (item.get("scope") or scope) == "session" else "",
    )
    validate_draft(draft, max_bytes)
    draft = check_draft(draft)
    return draft if item.get("id") is None else _exact(item, draft, plan)


def _exact(item: dict, draft: MemoryDraft, plan: ImportPlan) -> Memory:
    memory_id = item.get("id") or ""
    if not _ID.match(memory_id):
        raise CortexError(f"id {_brief(memory_id)} is not a memory id (1-128 letters, digits, '.', '_', ':' or '-')")
    if memory_id in plan.ids:
        raise CortexError(f"id {memory_id} appears twice in this import")
    version = item.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CortexError(f"version must be a whole number of at least 1, not {_brief(version)}")
    status = item.get("status") or "active"
    if status not in STATUSES:
        raise CortexError(f"unknown status {_brief(status)}; choose one of {', '.join(STATUSES)}")
    created = draft.created_at or datetime.now(UTC)
    updated = parse_time(item.get("updated_at"), "updated_at") or created
    plan.ids.add(memory_id)
    return Memory(
        id=memory_id, kind=draft.kind, title=draft.title, text=draft.text, tags=list(draft.tags),
        files=list(draft.files), symbols=list(draft.symbols), branch=item.get("branch") or "",
        commit=item.get("commit") or "", scope=draft.scope, source_key=draft.source_key, version=version,
        status=status, task_state=(draft.task_state or "open") if draft.kind == "task" else draft.task_state,
        created_at=created, updated_at=updated, accessed_at=updated, text_hash=text_hash(draft.text),
        context=draft.context, anchors=_anchors(item.get("anchors")), session=draft.session,
    )


def _anchors(value) -> Anchors | None:
    """An exported memory's anchors; ones that do not read as anchors are dropped (the memory is kept)."""
    if not isinstance(value, dict):
        return None
    try:
        return Anchors.from_json(json.dumps(value))
    except (KeyError, TypeError, ValueError):
        return None


def check_draft(draft: MemoryDraft) -> MemoryDraft:
    """Text that cannot be stored, or must not be: found before anything is written. As with `cortex remember`, a
    secret in a free-text field refuses the record (named by its kind, never shown) and one in a path or symbol is
    redacted, since those name real things."""
    fields = {"title": draft.title, "text": draft.text, "context": draft.context, "key": draft.source_key or "",
              "tags": " ".join(draft.tags), "files": " ".join(draft.files), "symbols": " ".join(draft.symbols)}
    for name, value in fields.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CortexError(f"{name} is not valid Unicode (a lone surrogate at character {exc.start})") from None
    reason = draft_secret(draft)
    if reason:
        name, kind = reason.split(": ", 1)
        raise CortexError(f"{name} contains a secret ({kind})")
    return replace(draft, files=tuple(redacted(f) for f in draft.files), symbols=tuple(redacted(s) for s in draft.symbols))


def parse_time(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise CortexError(f"{name} {_brief(value)} is not an ISO date and time") from None
    return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _brief(value: object, limit: int = 60) -> str:
    """A value quoted in an error message, shortened at a word boundary so a message never ends mid-word."""
    shown = repr(value)
    if find_secrets(shown):
        return "(a value that looks like a secret)"
    if len(shown) <= limit:
        return shown
    cut = shown[:limit].rsplit(" ", 1)[0] if " " in shown[:limit] else shown[:limit]
    return f"{cut}… ({len(shown):,} characters)"


def export_record(memory: Memory) -> dict:
    """One JSONL line of `cortex export`: everything `cortex import` needs to restore the same stored version
    (id, version, status, times, git position). `accessed_at` is left out: it is usage, and changes on every read.
    Rows stored before secrets were checked in every field are redacted on the way out. The anchors (the code the
    memory describes, as it was) are kept when there are any, and so is a session memory's session."""
    anchors = {"anchors": json.loads(memory.anchors.to_json())} if memory.anchors is not None else {}
    session = {"session": memory.session} if memory.session else {}
    return redact_json({
        "id": memory.id,
        "kind": memory.kind,
        "title": memory.title,
        "text": memory.text,
        "tags": memory.tags,
        "files": memory.files,
        "symbols": memory.symbols,
        "key": memory.source_key,
        "scope": memory.scope,
        "task_state": memory.task_state,
        "context": memory.context,
        "branch": memory.branch,
        "commit": memory.commit,
        "version": memory.version,
        "status": memory.status,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        **session,
        **anchors,
    })


def export_order(memories: list[Memory]) -> list[Memory]:
    """Oldest first, versions in order; the id breaks ties so the same database always exports the same bytes."""
    return sorted(memories, key=lambda m: (m.created_at, m.version, m.id))
