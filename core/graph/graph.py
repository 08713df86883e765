"""The memory graph: memories, files, symbols and commits as nodes, typed edges between them, read on demand.

Nodes are `Key`s (`core/keys.py`), whose string form carries their type: `mem:<id>`, `file:<path>`, `sym:<name>`,
`commit:<sha>`. Edges: memory `mentions`
file/symbol, memory `links` memory, memory `made_on` commit, file `imports` file, file `defines` symbol,
commit `touched` file.

Nothing builds the whole graph: a node's edges, both ways, are read when a walk reaches it (`graph_reads.py`),
each read filtered and limited inside LanceDB. So a neighbourhood costs a few bounded reads per node it expands,
whatever the size of the store, and a save changes nothing to rebuild. Past `limit` edges of one kind a node's
list is cut where the read stopped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..answers import Neighbour
from ..errors import CortexError
from ..keys import Key, KeyKind
from ..records import Memory
from ..store.sql import quote
from .graph_reads import GraphReads
from .mentions import extract_mentions

if TYPE_CHECKING:
    from ..search.search import SearchResults

_TYPE_ORDER: dict[KeyKind, int] = {"memory": 0, "file": 1, "commit": 2, "symbol": 3}
DEFAULT_CANDIDATES = 10
"""Newest memories the dashboard's graph pane weighs for its first centre (the best connected of them)."""


@dataclass(frozen=True)
class _Step:
    node: Key
    via: str
    label: str


def _memory_label(m: Memory) -> str:
    changed = f" [code changed since: {m.code_change.summary}]" if m.code_change is not None else ""
    return f"{m.kind}: {m.title}{changed}"


def _commit_label(reads: GraphReads, sha: str) -> str:
    return f"{sha[:8]} {reads.commits[sha].subject}"


def node_label(reads: GraphReads, node: Key) -> str:
    if node.kind == "memory":
        found = reads.memories([node.id])
        return _memory_label(found[0]) if found else str(node)
    if node.kind == "commit" and node.id in reads.commits:
        return _commit_label(reads, node.id)
    return node.id if node.kind in ("file", "symbol") else str(node)


def edges(reads: GraphReads, node: Key) -> list[_Step]:
    """A node's edges both ways (incoming ones' `via` starts with `<-`), in the order a walk takes them."""
    read = _EDGES.get(node.kind)
    out, into = read(reads, node.id) if read is not None else ([], [])
    # Sorted together (stable, outgoing first on a tie): the order a walk meets them in, whatever the read order.
    return sorted(out + into, key=lambda s: (_TYPE_ORDER.get(s.node.kind, 9), s.node.id))


def _memory_edges(reads: GraphReads, memory_id: str) -> tuple[list[_Step], list[_Step]]:
    found = reads.memories([memory_id])
    if not found:
        return [], []
    m = found[0]
    named = reads.mentions([m])[m.id]
    out = [_Step(Key.file(p), "mentions", p) for p in named.files]
    out += [_Step(Key("symbol", s), "mentions", s) for s in named.symbols]
    out += [_Step(Key.memory(o.id), "links", _memory_label(o)) for o in reads.memories(reads.linked_ids(m.text) - {m.id})]
    if m.commit in reads.commits:
        out.append(_Step(Key("commit", m.commit), "made_on", _commit_label(reads, m.commit)))
    into = [_Step(Key.memory(o.id), "<-links", _memory_label(o)) for o in reads.memories_with_words(memory_id)
            if o.id != m.id and m.id in reads.linked_ids(o.text)] if re.fullmatch(r"[0-9a-f]{12}", m.id) else []
    return out, into


def _file_edges(reads: GraphReads, path: str) -> tuple[list[_Step], list[_Step]]:
    row = reads.files([path]).get(path)
    out: list[_Step] = []
    into: list[_Step] = []
    if row is not None:
        out += [_Step(Key.file(t), "imports", t) for t in reads.files(row.imports)]
        out += [_Step(Key("symbol", s), "defines", s) for s in row.symbols]
        into += [_Step(Key.file(p), "<-imports", p) for p in reads.importers(path)]
        into += [_Step(Key("commit", c.sha), "<-touched", _commit_label(reads, c.sha))
                 for c in reads.commits.values() if path in c.files]
    # Text names a file only when the index holds it; a memory's own `files` list names any path.
    for m in reads.memories_naming("files", path, path if row is not None else None):
        if path in m.files or extract_mentions(f"{m.title}\n{m.text}", {path}, {}, ()).files:
            into.append(_Step(Key.memory(m.id), "<-mentions", _memory_label(m)))
    return out, into


def _symbol_edges(reads: GraphReads, symbol: str) -> tuple[list[_Step], list[_Step]]:
    into = [_Step(Key.file(p), "<-defines", p) for p in reads.definers(symbol)]
    short = symbol.rsplit(".", 1)[-1]
    vocab = reads.symbols_named({short})
    # Extraction against the symbols sharing this short name decides as it would against the whole index (a
    # token that is also an indexed path, and so not a symbol, would need a file named like a symbol).
    for m in reads.memories_naming("symbols", symbol, short if symbol in vocab.qualified else None):
        if symbol in m.symbols or symbol in extract_mentions(f"{m.title}\n{m.text}", (), vocab.defined, vocab.qualified).symbols:
            into.append(_Step(Key.memory(m.id), "<-mentions", _memory_label(m)))
    return [], into


def _commit_edges(reads: GraphReads, sha: str) -> tuple[list[_Step], list[_Step]]:
    commit = reads.commits.get(sha)
    if commit is None:
        return [], []
    out = [_Step(Key.file(p), "touched", p) for p in reads.files(commit.files)]
    into = [_Step(Key.memory(m.id), "<-made_on", _memory_label(m)) for m in reads.memories_where(f"commit = {quote(sha)}")]
    return out, into


_EDGES = {"memory": _memory_edges, "file": _file_edges, "symbol": _symbol_edges, "commit": _commit_edges}


def _exists(reads: GraphReads, node: Key) -> bool:
    if node.kind == "memory":
        return reads.memory_exists(node.id)
    if node.kind == "file":
        return reads.file_exists(node.id)
    if node.kind == "symbol":
        return reads.symbol_exists(node.id)
    return node.kind == "commit" and node.id in reads.commits


def resolve_node(reads: GraphReads, name: str | Key) -> Key:
    """Accept a key (the panes'), or a name someone typed: a typed id, a memory id, a file path, a symbol (qualified
    or short) or a commit sha prefix."""
    if isinstance(name, Key):
        if _exists(reads, name):
            return name
        raise CortexError(f"no node {str(name)!r} in the graph (try a memory id, a file path, a symbol or a commit sha)")
    typed = Key.parse(name)
    if typed is not None and typed.kind in _TYPE_ORDER and _exists(reads, typed):
        return typed
    untyped: tuple[KeyKind, ...] = ("memory", "file", "symbol")
    for kind in untyped:
        if _exists(reads, node := Key(kind, name)):
            return node
    shorts = sorted({Key("symbol", s) for s in reads.symbols_named({name}).defined.get(name, ())})
    if len(shorts) == 1:
        return shorts[0]
    if len(name) >= 4 and re.fullmatch(r"[0-9a-f]+", name):
        commits = [Key("commit", sha) for sha in reads.commits if sha.startswith(name)]
        if len(commits) == 1:
            return commits[0]
    if len(shorts) > 1:
        raise CortexError(f"{name!r} names {len(shorts)} symbols; use one of: {', '.join(s.id for s in shorts[:5])}")
    raise CortexError(f"no node {name!r} in the graph (try a memory id, a file path, a symbol or a commit sha)")


def neighbours(reads: GraphReads, centre: Key, depth: int = 1, limit: int = 200) -> list[Neighbour]:
    """Breadth-first over edges in both directions, nearest first."""
    if depth < 1:
        raise CortexError("depth must be at least 1")
    reads = reads.widened(limit)
    seen = {centre}
    frontier = [centre]
    out: list[Neighbour] = []
    for level in range(1, depth + 1):
        nxt = []
        for node in frontier:
            for step in edges(reads, node):
                if step.node in seen:
                    continue
                seen.add(step.node)
                nxt.append(step.node)
                out.append(Neighbour(step.node, step.label, level, step.via, node))
                if len(out) >= limit:
                    return out
        frontier = nxt
    return out


@dataclass(frozen=True)
class Neighbourhood:
    """A node someone named, resolved, with its label and its neighbours."""

    node: Key
    label: str
    neighbours: list[Neighbour]

    def to_json(self) -> dict:
        return {"node": str(self.node), "label": self.label, "neighbours": [n.to_json() for n in self.neighbours]}


def neighbourhood(reads: GraphReads, name: str, depth: int = 1, limit: int = 200) -> Neighbourhood:
    centre = resolve_node(reads, name)
    return Neighbourhood(centre, node_label(reads, centre), neighbours(reads, centre, depth, limit))


def default_centre(reads: GraphReads, changed: tuple[str, ...]) -> Key:
    """Where the graph pane starts: the first changed file the index holds, else the best connected of the newest
    memories, else the newest commit, else an indexed file."""
    if reads.is_empty():
        raise CortexError("the graph is empty: remember something or index the code first")
    indexed = reads.files(changed)
    for path in changed:
        if path in indexed:
            return Key.file(path)
    newest = reads.newest_memories(DEFAULT_CANDIDATES)
    if newest:
        named = reads.mentions(newest)
        return Key.memory(max(newest, key=lambda m: len(named[m.id].files) + len(named[m.id].symbols)).id)
    if reads.commits:
        return Key("commit", next(iter(reads.commits)))
    return Key.file(reads.any_file())


def expand_results(reads: GraphReads, results: SearchResults, top: int = 5) -> SearchResults:
    """Add the graph neighbours of the top hits (`cortex search --expand`)."""
    extra: list[Neighbour] = []
    seen: set[Key] = set()
    for hit in results.hits[:top]:
        for n in neighbours(reads, hit.subject, 1, limit=8):
            if n.node not in seen:
                seen.add(n.node)
                extra.append(n)
    return replace(results, neighbours=tuple(extra))
