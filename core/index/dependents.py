"""Files whose imports change although they did not: imports resolve against the set of indexed paths, so when a
path appears, disappears or moves, a file may gain or lose an edge (`from pkg import b` once `pkg/b.py` exists)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.sql import in_filter, quote, scan
from .chunk_rows import module_stem
from .imports import RepoFacts, resolve_imports
from .languages import language_of
from .walk import Listed, read_source


@dataclass(frozen=True)
class ImportScope:
    """Where to look: the work tree, the index's files and chunks tables, and the indexed paths' module maps."""

    root: Path
    files: Any
    chunks: Any
    facts: RepoFacts


def changed_imports(scope: ImportScope, appeared: list[str], removed: list[str], done: set[str]) -> dict[str, list[str]]:
    """The new imports of each file they changed for.

    Candidates: files importing a removed path, and files whose code names an appeared module's stem. Each is
    re-resolved from disk if its stat still matches its row (otherwise its own update is due anyway)."""
    if not appeared and not removed:
        return {}
    candidates: set[str] = set()
    if removed:
        targets = ", ".join(quote(p) for p in sorted(set(removed)))
        candidates |= {r["path"] for r in scan(scope.files, f"array_has_any(imports, [{targets}])", ["path"])}
    stems = sorted({module_stem(p) for p in appeared} - {""})
    if stems:
        pattern = quote(r"\b(" + "|".join(re.escape(s) for s in stems) + r")\b")
        candidates |= {r["path"] for r in scan(scope.chunks, f"regexp_like(text, {pattern})", ["path"])}
    candidates -= done | set(removed)
    if not candidates:
        return {}
    where = in_filter("path", sorted(candidates))
    rows = scan(scope.files, where, ["path", "mtime_ns", "size", "imports"])
    changed: dict[str, list[str]] = {}
    for row in rows:
        listed = Listed(row["path"], row["size"], row["mtime_ns"])
        try:
            st = (scope.root / listed.path).lstat()
        except OSError:
            continue
        if (st.st_size, st.st_mtime_ns) != (listed.size, listed.mtime_ns):
            continue
        source, _ = read_source(scope.root, listed)
        if source is None:
            continue
        imports = resolve_imports(source.path, source.text, language_of(source.path), scope.facts)
        if imports != list(row["imports"] or []):
            changed[source.path] = imports
    return changed

