"""The memory graph: memories, files, symbols and commits as nodes, typed edges between them (networkx).

Node ids carry their type: `mem:<id>`, `file:<path>`, `sym:<name>`, `commit:<sha>`. Edges: memory `mentions`
file/symbol, memory `links` memory, memory `made_on` commit, file `imports` file, file `defines` symbol,
commit `touched` file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import networkx as nx

from .answers import Neighbour
from .errors import CortexError
from .mentions import MAX_SCAN_CHARS, extract_mentions
from .records import Memory

if TYPE_CHECKING:
    from .search import SearchResults

_TYPE_ORDER = {"mem": 0, "file": 1, "commit": 2, "sym": 3}
_MEMORY_ID = re.compile(r"\b[0-9a-f]{12}\b")


def node_label(graph: nx.MultiDiGraph, node: str) -> str:
    return graph.nodes[node].get("label", node) if node in graph else node


def build_graph(memories: list[Memory], files: list[dict], commits, defined: dict[str, list[str]]) -> nx.MultiDiGraph:
    """`files` rows carry path, imports and symbols; `defined` maps a short symbol name to qualified names."""
    g = nx.MultiDiGraph()
    paths = {f["path"] for f in files}
    for f in files:
        g.add_node(f"file:{f['path']}", type="file", label=f["path"])
    for f in files:
        for target in f["imports"] or []:
            if target in paths:
                g.add_edge(f"file:{f['path']}", f"file:{target}", type="imports")
        for sym in f["symbols"] or []:
            g.add_node(f"sym:{sym}", type="symbol", label=sym)
            g.add_edge(f"file:{f['path']}", f"sym:{sym}", type="defines")
    for c in commits:
        node = f"commit:{c.sha}"
        g.add_node(node, type="commit", label=f"{c.sha[:8]} {c.subject}")
        for path in c.files:
            if path in paths:
                g.add_edge(node, f"file:{path}", type="touched")
    ids = {m.id for m in memories}
    qualified = {sym for targets in defined.values() for sym in targets}
    for m in memories:
        node = f"mem:{m.id}"
        g.add_node(node, type="memory", label=f"{m.kind}: {m.title}", kind=m.kind)
        found = extract_mentions(f"{m.title}\n{m.text}", paths, defined, qualified)
        for path in set(m.files) | found.files:
            g.add_node(f"file:{path}", type="file", label=path)
            g.add_edge(node, f"file:{path}", type="mentions")
        for sym in set(m.symbols) | found.symbols:
            g.add_node(f"sym:{sym}", type="symbol", label=sym)
            g.add_edge(node, f"sym:{sym}", type="mentions")
        for other in set(_MEMORY_ID.findall(m.text[:MAX_SCAN_CHARS])) & ids - {m.id}:
            g.add_edge(node, f"mem:{other}", type="links")
        if m.commit and f"commit:{m.commit}" in g:
            g.add_edge(node, f"commit:{m.commit}", type="made_on")
    return g


def resolve_node(graph: nx.MultiDiGraph, name: str) -> str:
    """Accept a typed id, a memory id, a file path, a symbol (qualified or short) or a commit sha prefix."""
    if name in graph:
        return name
    for prefix in ("mem:", "file:", "sym:"):
        if prefix + name in graph:
            return prefix + name
    shorts = [n for n in graph if n.startswith("sym:") and n.rsplit(".", 1)[-1] == name]
    if len(shorts) == 1:
        return shorts[0]
    if len(name) >= 4 and re.fullmatch(r"[0-9a-f]+", name):
        commits = [n for n in graph if n.startswith(f"commit:{name}")]
        if len(commits) == 1:
            return commits[0]
    if len(shorts) > 1:
        raise CortexError(f"{name!r} names {len(shorts)} symbols; use one of: {', '.join(s[4:] for s in shorts[:5])}")
    raise CortexError(f"no node {name!r} in the graph (try a memory id, a file path, a symbol or a commit sha)")


def neighbours(graph: nx.MultiDiGraph, centre: str, depth: int = 1, limit: int = 200) -> list[Neighbour]:
    """Breadth-first over edges in both directions, nearest first."""
    if depth < 1:
        raise CortexError("depth must be at least 1")
    seen = {centre}
    frontier = [centre]
    out: list[Neighbour] = []
    for level in range(1, depth + 1):
        nxt = []
        for node in frontier:
            steps = [(v, d["type"]) for _, v, d in graph.out_edges(node, data=True)]
            steps += [(u, "<-" + d["type"]) for u, _, d in graph.in_edges(node, data=True)]
            for other, via in sorted(steps, key=lambda s: (_TYPE_ORDER.get(s[0].split(":", 1)[0], 9), s[0])):
                if other in seen:
                    continue
                seen.add(other)
                nxt.append(other)
                out.append(Neighbour(other, node_label(graph, other), level, via, node))
                if len(out) >= limit:
                    return out
        frontier = nxt
    return out


@dataclass(frozen=True)
class Neighbourhood:
    """A node someone named, resolved, with its label and its neighbours."""

    node: str
    label: str
    neighbours: list[Neighbour]

    def to_json(self) -> dict:
        return {"node": self.node, "label": self.label, "neighbours": [n.__dict__ for n in self.neighbours]}


def neighbourhood(graph: nx.MultiDiGraph, name: str, depth: int = 1, limit: int = 200) -> Neighbourhood:
    centre = resolve_node(graph, name)
    return Neighbourhood(centre, node_label(graph, centre), neighbours(graph, centre, depth, limit))


def expand_results(graph: nx.MultiDiGraph, results: "SearchResults", top: int = 5) -> "SearchResults":
    """Add the graph neighbours of the top hits (`cortex search --expand`)."""
    from dataclasses import replace

    extra: list[Neighbour] = []
    seen: set[str] = set()
    for hit in results.hits[:top]:
        node = f"mem:{hit.id}" if hit.source == "memory" else f"file:{hit.path}"
        if node not in graph:
            continue
        for n in neighbours(graph, node, 1, limit=8):
            if n.node not in seen:
                seen.add(n.node)
                extra.append(n)
    return replace(results, neighbours=tuple(extra))
