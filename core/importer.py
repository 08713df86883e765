"""Turning files into memories (`cortex import`) and memories into JSONL (`cortex export`)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pathspec

from .errors import CortexError
from .records import KINDS, Memory, MemoryDraft
from .secrets import find_secrets, is_secret_path

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".rst"}
RECORD_SUFFIXES = {".jsonl", ".json"}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass
class ImportPlan:
    """What an import will store, and every file it passed over with the reason."""

    drafts: list[MemoryDraft] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0


def plan_import(path: Path, default_kind: str = "note", scope: str = "repo") -> ImportPlan:
    """Read everything first and fail before any write, so a bad file never leaves a half-done import."""
    if not path.exists():
        raise CortexError(f"{path} does not exist")
    plan = ImportPlan()
    files = [path] if path.is_file() else list(_walk(path, plan))
    for file in files:
        name = str(file)
        if is_secret_path(name):
            plan.skipped.append((name, "secret file"))
            continue
        suffix = file.suffix.lower()
        if suffix not in TEXT_SUFFIXES | RECORD_SUFFIXES:
            plan.skipped.append((name, "not a markdown, text, json or jsonl file"))
            continue
        try:
            raw = file.read_bytes()
        except OSError as exc:
            plan.skipped.append((name, exc.strerror or "unreadable"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CortexError(f"{name} is not valid UTF-8 (byte {exc.start}); nothing was imported") from exc
        plan.files += 1
        if suffix in RECORD_SUFFIXES:
            plan.drafts.extend(_records(name, text, suffix, default_kind, scope))
        else:
            plan.drafts.extend(_sections(file, text, default_kind, scope))
    kept = []
    for draft in plan.drafts:
        hits = find_secrets(draft.text)
        if hits:
            plan.skipped.append((draft.title or draft.source_key or "record", f"contains a secret ({hits[0].kind})"))
        else:
            kept.append(draft)
    plan.drafts = kept
    return plan


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


def _sections(file: Path, text: str, kind: str, scope: str) -> list[MemoryDraft]:
    """Markdown split on headings: each heading with its body is one note; text before any heading is one too."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            sections.append((match.group(2), [line]))
        else:
            sections[-1][1].append(line)
    drafts = []
    for index, (title, lines) in enumerate(sections):
        body = "\n".join(lines).strip()
        if not body:
            continue
        drafts.append(
            MemoryDraft(
                text=body,
                kind=kind,
                title=title or file.stem,
                source_key=f"import:{file.as_posix()}#{index}:{title}",
                scope=scope,
                tags=("imported",),
            )
        )
    return drafts


def _records(name: str, text: str, suffix: str, kind: str, scope: str) -> list[MemoryDraft]:
    try:
        if suffix == ".jsonl":
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError as exc:
        raise CortexError(f"{name}: invalid JSON at line {exc.lineno}: {exc.msg}; nothing was imported") from exc
    drafts = []
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise CortexError(f"{name}: record {number} has no text field; nothing was imported")
        item_kind = item.get("kind") or kind
        if item_kind not in KINDS:
            raise CortexError(f"{name}: record {number} has unknown kind {item_kind!r}; nothing was imported")
        created = item.get("created_at")
        drafts.append(
            MemoryDraft(
                text=item["text"],
                kind=item_kind,
                title=item.get("title") or "",
                tags=tuple(item.get("tags") or ()),
                files=tuple(item.get("files") or ()),
                symbols=tuple(item.get("symbols") or ()),
                source_key=item.get("key") or item.get("source_key") or "",
                scope=item.get("scope") or scope,
                created_at=_parse_time(created, name, number) if created else None,
                task_state=item.get("task_state") or "",
                context=item.get("context") or "",
            )
        )
    return drafts


def _parse_time(value: str, name: str, number: int) -> datetime:
    try:
        stamp = datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise CortexError(f"{name}: record {number} has a bad created_at {value!r}; nothing was imported") from exc
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def export_record(memory: Memory) -> dict:
    """One JSONL line of `cortex export`; `cortex import` reads it back into the same memory."""
    return {
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
    }
