"""Anchors: what code a memory describes, recorded when it is written, and how that code changed since.

A memory that names files or symbols records each file's git blob id and, for each symbol, the lines and a hash
of its definition, at the commit it was written on. A check compares those against a code version (the working
tree, or a later commit): an unchanged blob means nothing changed (no parse); otherwise each anchored definition
is found again by name and its hash compared. Files git says were renamed are followed; a definition gone from
its file is reported deleted, or renamed when a definition of another name has nearly the same text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ..records import Anchors, CodeChange, FileAnchor, SymbolAnchor
from .definitions import Definition, ParsedFiles, definition_hash, lookup
from .versions import CodeVersion

RENAME_SIMILARITY = 0.8
"""How alike a definition's old text and a new definition's must be (difflib ratio, name line aside) to call it a
rename rather than a deletion."""


def make_anchors(version: CodeVersion, commit: str, files: Iterable[str], symbols: Iterable[str],
                 parsed: ParsedFiles) -> Anchors | None:
    """The anchors of a memory naming `files` and `symbols`, as `version` has them; None when none exists there.
    A symbol is anchored in each named file that defines it."""
    wanted = [s for s in dict.fromkeys(symbols) if s]
    anchored: list[FileAnchor] = []
    for path in dict.fromkeys(files):
        blob = version.blob(path)
        if blob is None:
            continue
        found: list[SymbolAnchor] = []
        if wanted:
            text = version.text(path) or ""
            definitions = parsed.get(blob, path, text)
            lines = text.splitlines(keepends=True)
            for symbol in wanted:
                d = lookup(definitions, symbol)
                if d is not None and all(s.name != d.name for s in found):
                    found.append(SymbolAnchor(d.name, d.start, d.end, definition_hash(lines, d.start, d.end)))
        anchored.append(FileAnchor(path, blob, tuple(found)))
    return Anchors(commit, tuple(anchored)) if anchored else None


def check_anchors(anchors: Anchors, version: CodeVersion, parsed: ParsedFiles) -> CodeChange | None:
    """How the anchored code differs in `version` (the first change, and how many more), or None when it does not."""
    changes = [c for f in anchors.files for c in _file_changes(anchors.commit, f, version, parsed)]
    if not changes:
        return None
    first = changes[0]
    if len(changes) > 1:
        more = f" (and {len(changes) - 1} more anchored change{'s' if len(changes) > 2 else ''})"
        first = CodeChange(first.summary + more, first.state, first.symbol, first.path, first.commit, first.added, first.removed)
    return first


def _file_changes(since: str, anchor: FileAnchor, version: CodeVersion, parsed: ParsedFiles) -> list[CodeChange]:
    path = anchor.path
    blob = version.blob(path)
    moved = ""
    if blob is None:
        moved = version.renamed(since, path) or ""
        blob = version.blob(moved) if moved else None
        if blob is None:
            commit = version.changed_by(since, path)
            return [CodeChange(f"{path} was deleted{_in(commit)}", "deleted", path=path, commit=commit)]
    where = moved or path
    if blob == anchor.blob:
        return []
    commit = version.changed_by(since, where) if version.committed_blob(where) == blob else ""
    new_text = version.text(where) or ""
    old_text = version.old_text(anchor.blob)
    renamed = f" (renamed to {moved})" if moved else ""
    if not anchor.symbols:
        added, removed = _line_counts(old_text, new_text)
        return [CodeChange(f"{path}{renamed} changed{_in(commit)}{_counts(added, removed, old_text)}", "changed",
                           path=where, commit=commit, added=added, removed=removed)]
    definitions = parsed.get(blob, where, new_text)
    new_lines = new_text.splitlines(keepends=True)
    old_lines = old_text.splitlines(keepends=True) if old_text is not None else None
    old_definitions = parsed.get(anchor.blob, path, old_text) if old_text is not None else {}
    old_names = set(old_definitions)
    out: list[CodeChange] = []
    for s in anchor.symbols:
        found = definitions.get(s.name) or _named_since(s, old_definitions, definitions)
        old_def = "".join(old_lines[s.start - 1 : s.end]) if old_lines is not None else None
        if found is None:
            other = _renamed_definition(old_def, definitions, new_lines, old_names | {a.name for a in anchor.symbols})
            if other is not None:
                out.append(CodeChange(f"{s.name} in {path}{renamed} was renamed to {other.name}{_in(commit)}", "renamed",
                                      symbol=s.name, path=where, commit=commit))
            else:
                out.append(CodeChange(f"{s.name} in {path}{renamed} was deleted or renamed{_in(commit)}", "deleted",
                                      symbol=s.name, path=where, commit=commit))
            continue
        if definition_hash(new_lines, found.start, found.end) == s.hash:
            continue
        new_def = "".join(new_lines[found.start - 1 : found.end])
        added, removed = _line_counts(old_def, new_def)
        counts = _counts(added, removed, old_def) or f" ({s.end - s.start + 1} -> {found.end - found.start + 1} lines)"
        out.append(CodeChange(f"{s.name} in {path}{renamed} changed{_in(commit)}{counts}", "changed",
                              symbol=s.name, path=where, commit=commit, added=added, removed=removed))
    return out


def _named_since(symbol, old_definitions: dict[str, Definition], definitions: dict[str, Definition]) -> Definition | None:
    """The definition an anchor names as an earlier version of the index named it (a Go method's bare `Next`, now
    `Context.Next`; `ReceiverBuffer<'a, W>.poll`, now `ReceiverBuffer.poll`): the one the anchored text, read as
    definitions are named now, defines at the anchored line under the same last name."""
    if symbol.name in old_definitions:
        return None  # the name is current: its definition is gone or renamed, not renamed by the indexer
    last = symbol.name.rsplit(".", 1)[-1]
    same = next((name for name, d in old_definitions.items()
                 if d.start == symbol.start and name.rsplit(".", 1)[-1] == last), None)
    return definitions.get(same) if same is not None else None


def _renamed_definition(old_def: str | None, definitions: dict[str, Definition], lines: list[str],
                        taken: set[str]) -> Definition | None:
    """A definition new to the file whose text (the name line aside) is nearly the old one's."""
    if old_def is None:
        return None
    old_body = old_def.splitlines()[1:]
    best, best_ratio = None, RENAME_SIMILARITY
    for d in definitions.values():
        if d.name in taken:
            continue
        body = [line.rstrip("\n") for line in lines[d.start : d.end]]
        ratio = difflib.SequenceMatcher(None, old_body, body, autojunk=False).ratio()
        if ratio >= best_ratio:
            best, best_ratio = d, ratio
    return best


def _line_counts(old: str | None, new: str) -> tuple[int, int]:
    if old is None:
        return 0, 0
    added = removed = 0
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _in(commit: str) -> str:
    return f" in commit {commit}" if commit else " in the working tree (uncommitted)"


def _counts(added: int, removed: int, old: str | None) -> str:
    return f" (+{added} -{removed} lines)" if old is not None else ""
