"""Where each definition of a file is and a hash of its text: what an anchor records and what a check compares."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from ..index.chunker import body_children, definition_name
from ..index.languages import SPECS, has_grammar, language_of, parser_for

_CACHE_SIZE = 512
"""Parsed files kept, by blob id: a check parses a file once per version however many memories name it."""


@dataclass(frozen=True)
class Definition:
    """One definition's qualified name and its 1-based, inclusive lines."""

    name: str
    start: int
    end: int


def definition_hash(lines: list[str], start: int, end: int) -> str:
    """The hash of a definition's text (lines start..end, 1-based inclusive): any edit inside it changes the hash,
    lines added above or below it do not."""
    return hashlib.sha1("".join(lines[start - 1 : end]).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def find_definitions(text: str, path: str) -> dict[str, Definition]:
    """Every named definition in a file, nested ones qualified (`Class.method`); the first of a repeated name wins.
    Empty for languages without a grammar."""
    language = language_of(path)
    if not has_grammar(language):
        return {}
    parser = parser_for(language)
    if parser is None:
        return {}
    found: dict[str, Definition] = {}
    spec = SPECS[language]

    def walk(nodes, prefix: str, depth: int) -> None:
        for node in nodes:
            if node.type not in spec.definitions:
                continue
            name = definition_name(node, language)
            if not name:
                continue
            qualified = f"{prefix}{name}"
            found.setdefault(qualified, Definition(qualified, node.start_point[0] + 1, node.end_point[0] + 1))
            if depth < 3:
                walk(body_children(node), f"{qualified}.", depth + 1)

    walk(parser.parse(text.encode("utf-8", "surrogatepass")).root_node.children, "", 0)
    return found


def lookup(definitions: dict[str, Definition], symbol: str) -> Definition | None:
    """A symbol as a memory names it: its qualified name, or a unique last part (`retry` for `Client.retry`)."""
    if symbol in definitions:
        return definitions[symbol]
    short = symbol.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
    matches = [d for name, d in definitions.items() if name.rsplit(".", 1)[-1] == short]
    return matches[0] if len(matches) == 1 else None


class ParsedFiles:
    """Definitions per blob id, least recently used out first."""

    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self.size = size
        self._cache: OrderedDict[tuple[str, str], dict[str, Definition]] = OrderedDict()

    def get(self, blob: str, path: str, text: str) -> dict[str, Definition]:
        key = (blob, language_of(path))
        found = self._cache.get(key)
        if found is None:
            found = find_definitions(text, path)
            self._cache[key] = found
            if len(self._cache) > self.size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return found
