"""The repository map: the most important definitions, ranked over the definition -> reference graph and fitted
exactly to a token budget.

The graph is the index's own: every chunk lists the symbols it defines and the identifiers it uses. A file that
uses a name points at each file defining it, weighted as Aider's repo map weighs its tree-sitter tags (square root of
the uses; names the focus mentions x10, long compound names x10, private names and names defined in more than five
files x0.1), except that a file's uses of its own names are no edge: Aider's self-edges (and its 0.1 self-edge for an
unused name) make a file that only uses itself keep all its rank, and rank first. Personalised PageRank over that
graph, restarting at the focus files, ranks the files; each file's rank flows along its edges to the (file, name) definitions it uses,
and a file's own rank is shared among its definitions by how much they are used, so the focus files show their
own definitions too.

The graph is built once per version of the chunks table (reading three list columns, never the text); only the
signature lines of the definitions a map shows are read, per file, and kept per version.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..answers import MapEntry, RepoMap
from ..store.sql import in_filter, scan
from ..tokens import count_tokens
from .pagerank import Edges, personalised_pagerank, row_normalised
from .signatures import signature_lines

MENTIONED = 10.0
LONG_NAME = 10.0
PRIVATE = 0.1
COMMON = 0.1
"""Aider's edge multipliers (see the module docstring); COMMON applies to names defined in more than five files."""
OWN_SHARE = 1.0
"""How much of a file's own rank its definitions get, beside what flows to them from the files using them."""


def _is_long_compound(name: str) -> bool:
    compound = ("_" in name or "-" in name or (any(c.isupper() for c in name) and any(c.islower() for c in name)))
    return compound and len(name) >= 8


RANKS_KEPT = 8


@dataclass(frozen=True)
class Ranked:
    """Every definition of a graph, best first: its score, file and short name (indexes into the graph)."""

    score: np.ndarray
    file: np.ndarray
    name: np.ndarray


@dataclass(frozen=True)
class SymbolGraph:
    """The definition -> reference graph of one version of the chunks table, prepared for ranking: the file graph
    as a sparse matrix, and the definitions' incoming edges as a sparse matrix, both before the focus's mentions."""

    paths: list[str]
    position: dict[str, int]
    is_test: np.ndarray
    names: list[str]
    name_position: dict[str, int]
    definitions: np.ndarray
    """Every (file, short name) defined, as `file * len(names) + name`, sorted."""
    alphabetical: np.ndarray
    """Each definition's place in (path, name) order: ties are broken by it, never by the table's row order."""
    incoming: Edges
    """definitions x files: the weight of each file's edges to each definition."""
    files: Edges
    """files x files: the summed weights of the edges from each file to each file."""
    qualified: dict[tuple[int, int], list[str]]
    """(file, short name) -> the qualified symbols of that name the file defines, in file order."""
    definers: dict[str, tuple[int, ...]]
    """short name -> the files defining it."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _ranked: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, table) -> SymbolGraph:
        """From the `path`, `symbols`, `refs` and `is_test` columns (a pyarrow table of chunks), vectorised: a large
        repository's chunks use millions of identifiers."""
        import pyarrow as pa
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(table["path"]).combine_chunks()
        paths = encoded.dictionary.to_pylist()
        chunk_file = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        is_test = np.zeros(len(paths), dtype=bool)
        is_test[chunk_file] = table["is_test"].to_numpy(zero_copy_only=False).astype(bool)
        qualified_by_name: dict[tuple[str, int], list[str]] = {}
        symbols = table["symbols"].combine_chunks()
        for chunk, symbol in zip(pc.list_parent_indices(symbols).to_numpy(), pc.list_flatten(symbols).to_pylist()):
            qualified_by_name.setdefault((symbol.rsplit(".", 1)[-1], int(chunk_file[chunk])), []).append(symbol)
        names = sorted({short for short, _ in qualified_by_name})
        name_position = {n: i for i, n in enumerate(names)}
        width = max(len(names), 1)
        qualified = {(file, name_position[short]): found for (short, file), found in qualified_by_name.items()}
        definitions = np.array(sorted(f * width + n for f, n in qualified), dtype=np.int64)
        def_name, def_file = definitions % width, definitions // width

        # Uses: (file, name, how many chunks of the file use it), for the names some file defines.
        refs = table["refs"].combine_chunks()
        name_of = pc.index_in(pc.list_flatten(refs), value_set=pa.array(names, pa.string()))
        used = name_of.is_valid().to_numpy(zero_copy_only=False)
        use_name = name_of.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)[used]
        use_file = chunk_file[pc.list_parent_indices(refs).to_numpy()[used]]
        use_key, use_count = np.unique(use_file * width + use_name, return_counts=True)
        use_file, use_name = use_key // width, use_key % width

        # Each use points at every file defining the name (definitions are sorted by file, so group them by name).
        by_name = np.argsort(def_name, kind="stable")
        per_name = np.bincount(def_name, minlength=width)
        first = np.concatenate(([0], np.cumsum(per_name)[:-1]))
        repeats = per_name[use_name]
        total = int(repeats.sum())
        offset = np.arange(total) - np.repeat(np.cumsum(repeats) - repeats, repeats)
        src = np.repeat(use_file, repeats)
        name = np.repeat(use_name, repeats)
        dst = def_file[by_name[np.repeat(first[use_name], repeats) + offset]]
        multiplier = np.array([(LONG_NAME if _is_long_compound(n) else 1.0) * (PRIVATE if n.startswith("_") else 1.0)
                               * (COMMON if per_name[i] > 5 else 1.0) for i, n in enumerate(names)] or [1.0])
        weight = multiplier[name] * np.sqrt(np.repeat(use_count, repeats))
        keep = src != dst
        src, dst, name, weight = src[keep], dst[keep], name[keep], weight[keep]
        n = len(paths)
        target = np.searchsorted(definitions, dst * width + name)
        incoming = Edges.of(target, src, weight, (len(definitions), n))
        files = Edges.of(src, dst, weight, (n, n))
        alphabetical = np.empty(len(definitions), dtype=np.int64)
        alphabetical[sorted(range(len(definitions)), key=lambda i: (paths[def_file[i]], names[def_name[i]]))] = \
            np.arange(len(definitions))
        definers: dict[str, list[int]] = {}
        for key in definitions:
            definers.setdefault(names[key % width], []).append(int(key // width))
        return cls(paths, {p: i for i, p in enumerate(paths)}, is_test, names, name_position, definitions,
                   alphabetical, incoming, files, qualified, {k: tuple(v) for k, v in definers.items()})

    def rank(self, seeds: dict[str, float], mentioned: Iterable[str]) -> Ranked:
        """Every definition, best first: PageRank restarting at the seeds (uniform without any), names in `mentioned`
        weighing ten times more. The last few answers are kept: a snapshot and a map of one state ask alike."""
        key = (tuple(sorted(seeds.items())), tuple(sorted(set(mentioned))))
        with self._lock:
            if key in self._ranked:
                return self._ranked[key]
        found = self._rank(seeds, key[1])
        with self._lock:
            self._ranked[key] = found
            while len(self._ranked) > RANKS_KEPT:
                self._ranked.pop(next(iter(self._ranked)))
        return found

    def _rank(self, seeds: dict[str, float], mentioned: Iterable[str]) -> Ranked:
        n, width = len(self.paths), max(len(self.names), 1)
        nothing = Ranked(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        if n == 0 or not self.qualified:
            return nothing
        def_file, def_name = self.definitions // width, self.definitions % width
        boosted = np.flatnonzero(np.isin(def_name, [self.name_position[m] for m in mentioned if m in self.name_position]))
        adjacency = self.files
        if boosted.size:
            # The mentioned names' edges (rows of `incoming`, by definition) again, nine times: x10 in all.
            # Each edge into a mentioned definition, from the using file to the defining file.
            mentioned_definition = np.zeros(len(self.definitions), dtype=bool)
            mentioned_definition[boosted] = True
            into = mentioned_definition[self.incoming.rows]
            extra = Edges(self.incoming.cols[into], def_file[self.incoming.rows[into]], self.incoming.weights[into],
                          (n, n))
            adjacency = adjacency.plus(extra, MENTIONED - 1)
        matrix, dangling = row_normalised(adjacency)
        personal = np.zeros(n)
        for path, value in seeds.items():
            if path in self.position:
                personal[self.position[path]] += value
        if personal.sum() <= 0:
            personal[:] = 1.0
        ranks = personalised_pagerank(matrix, dangling, personal)
        if ranks is None:
            ranks = personalised_pagerank(matrix, dangling, np.ones(n), max_iter=300)
            if ranks is None:
                return nothing
        out_weight = adjacency.row_sums()
        per_weight = np.divide(ranks, out_weight, out=np.zeros_like(ranks), where=out_weight > 0)
        received = self.incoming.times(per_weight)
        received[boosted] *= MENTIONED
        # A file's own rank is shared among its definitions, half by how much the other files use each, half evenly
        # (so a focus file's new or unused definitions still show).
        per_file = np.bincount(def_file, weights=received, minlength=n)
        count = np.bincount(def_file, minlength=n)
        used = np.divide(received, per_file[def_file], out=np.zeros_like(received), where=per_file[def_file] > 0)
        share = np.where(per_file[def_file] > 0, 0.5 * used + 0.5 / count[def_file], 1.0 / count[def_file])
        score = received + OWN_SHARE * ranks[def_file] * share
        # Scores compared to 12 digits: the sums' rounding follows the table's row order, which a compaction changes.
        order = np.lexsort((self.alphabetical, -np.round(score / max(score.max(), 1e-300), 12)))
        return Ranked(score[order], def_file[order], def_name[order])


class SymbolGraphCache:
    """One symbol graph per version of a chunks table (the version is read before the table, as for the import
    graph), with the signature lines read for it; threads wait for one build."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: MapState | None = None
        self.builds = 0

    def get(self, table) -> MapState:
        version = table.version
        with self._lock:
            if self._cached is None or self._cached.version != version:
                columns = table.search().select(["path", "symbols", "refs", "is_test"]).limit(None).to_arrow()
                self._cached = MapState(version, SymbolGraph.build(columns), table)
                self.builds += 1
            return self._cached

    def forget(self) -> None:
        """Let go of the cached graph and signature lines (a long-lived process after a quiet spell); the next call builds it again."""
        with self._lock:
            self._cached = None


class MapState:
    """One version's graph and the signature lines read for it so far."""

    def __init__(self, version: int, graph: SymbolGraph, table) -> None:
        self.version = version
        self.graph = graph
        self._table = table
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, tuple[int, str]]] = {}

    def signatures(self, paths: list[str]) -> dict[str, dict[str, tuple[int, str]]]:
        """path -> qualified symbol -> (line, signature) for these paths, each file read once per version (a file
        rewritten since is read as it is now, and the next call's new version builds everything again)."""
        with self._lock:
            missing = [p for p in paths if p not in self._known]
        if missing:
            found: dict[str, dict[str, tuple[int, str]]] = {p: {} for p in missing}
            for row in scan(self._table, in_filter("path", missing), ["path", "start_line", "symbols", "text"]):
                found[row["path"]].update(signature_lines(row["text"], row["start_line"], row["symbols"] or [],
                                                              row["path"]))
            with self._lock:
                self._known.update(found)
        with self._lock:
            return {p: self._known.get(p, {}) for p in paths}


@dataclass(frozen=True)
class MapInputs:
    """What the engine gathered for one map: the graph, where to restart (seed files and their weights), the names
    the focus mentions, the files it names outright, and how to read signatures."""

    graph: SymbolGraph
    seeds: dict[str, float]
    mentioned: frozenset[str]
    focus_files: frozenset[str]
    """Files the focus names as paths: shown even when they are tests."""
    signatures: Callable[[list[str]], dict[str, dict[str, tuple[int, str]]]]
    encoding: str
    leads: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The focus's best search hits (path, the symbols the hit defines), best first: the map opens with them."""


_WORD = re.compile(r"[A-Za-z_$][\w$]*")
SEARCH_HITS = 40
"""Code hits of a focus text that seed the ranking (weighted by their score relative to the best)."""
LEADS = 3
"""Search's best hits for a focus text whose definitions open the map: what search ranks first leads the map, the
ranking orders the rest (a map that does not show what `cortex ss` answers first disagrees with it)."""


@dataclass(frozen=True)
class Focus:
    """A focus resolved to where the ranking restarts."""

    seeds: dict[str, float]
    mentioned: frozenset[str]
    files: frozenset[str]
    leads: tuple[tuple[str, tuple[str, ...]], ...] = ()


def resolve_focus(focus: tuple[str, ...], graph: SymbolGraph, changed: list[str],
                  search: Callable[[str], list], named: Callable[[str], set[str]]) -> Focus:
    """Each focus item is an indexed path, a directory (its indexed files), or words: the files code search finds for
    them (`search`: hits, best first), the files they name (`named`) and the files defining the names they use;
    their words are the mentioned names, as Aider takes them. No focus: the working change."""
    seeds: dict[str, float] = {}
    files: set[str] = set()
    mentioned: set[str] = set()

    def seed(path: str, value: float) -> None:
        if path in graph.position:
            seeds[path] = max(seeds.get(path, 0.0), value)

    texts = []
    leads: list[tuple[str, tuple[str, ...]]] = []
    for item in focus:
        clean = item.strip().strip("/")
        if clean in graph.position:
            seed(clean, 1.0)
            files.add(clean)
            continue
        under = [p for p in graph.paths if p.startswith(clean + "/")] if clean else []
        if under:
            for path in under:
                seed(path, 1.0 / len(under))
            continue
        if item.strip():
            texts.append(item)
    if texts:
        text = " ".join(texts)
        words = set(_WORD.findall(text[:20000]))
        mentioned = {w for w in words if w in graph.name_position}
        hits = search(text)
        leads = [(h.path, tuple(h.symbols)) for h in hits if h.path in graph.position
                 and not graph.is_test[graph.position[h.path]]][:LEADS]
        best: dict[str, float] = {}
        for hit in hits:
            best[hit.path] = max(best.get(hit.path, 0.0), hit.score.total)
        top = max(best.values(), default=0.0)
        for path, score in best.items():
            if top > 0:
                seed(path, (score / top) ** 2)
        for path in named(text):
            seed(path, 1.0)
            files.add(path)
        for name in mentioned:
            definers = graph.definers[name]
            if len(definers) <= 5:
                for file in definers:
                    seed(graph.paths[file], 0.5)
    if not focus:
        for path in changed:
            seed(path, 1.0)
    return Focus(seeds, frozenset(mentioned), frozenset(files), tuple(leads))


TYPE_LINE = re.compile(r"\s*(?:(?:export|default|abstract|final|public|private|protected|internal|static|sealed|data|"
                       r"unsafe|pub(?:\([\w:]+\))?)\s+)*(?:class|struct|interface|trait|impl|enum|module|object|"
                       r"namespace|record|type\s+\w+\s+(?:struct|interface))\b")
"""The line of a type, a class or an `impl` block: its members are shown under it. A function's inner functions
(closures, a property's callback) are not members worth the line."""


def build_map(inputs: MapInputs, budget: int, focus: tuple[str, ...]) -> RepoMap:
    """The ranked definitions, as many as fit the budget exactly (the count of the rendered text, header included)."""
    graph = inputs.graph
    found = graph.rank(inputs.seeds, inputs.mentioned)
    allowed = ~graph.is_test[found.file]
    for path in inputs.focus_files:
        if path in graph.position:
            allowed |= found.file == graph.position[path]
    # Signatures are read for generously more definitions than fit (a shown line costs at least ~4 tokens).
    keep = _led(graph, found, inputs.leads, np.flatnonzero(allowed)[:max(20, budget // 4)])
    ranked = [(float(found.score[i]), int(found.file[i]), int(found.name[i])) for i in keep]
    entries: list[MapEntry] = []
    paths = list(dict.fromkeys(graph.paths[file] for _, file, _ in ranked))
    signatures = inputs.signatures(paths)
    for score, file, name in ranked:
        path = graph.paths[file]
        in_file = signatures.get(path, {})
        for symbol in graph.qualified.get((file, name), []):
            line, signature = in_file.get(symbol, (0, symbol))
            owner = in_file.get(symbol.rpartition(".")[0]) if "." in symbol else None
            within = owner if owner is not None and TYPE_LINE.match(owner[1]) else None
            entries.append(MapEntry(path, line, symbol, signature, round(score, 6), within))
    count = lambda n: count_tokens(render(entries[:n]), inputs.encoding)  # noqa: E731
    lo, hi = 0, len(entries)
    while lo < hi:  # the most entries whose rendering fits: rendering more entries never costs fewer tokens
        mid = (lo + hi + 1) // 2
        if count(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    shown = entries[:lo]
    text = render(shown)
    notes = [] if shown or not entries else [f"nothing fits: the first definition alone needs {count(1)} tokens"]
    if not ranked:
        notes.append("no definitions indexed: run `cortex index`")
    return RepoMap(budget, count_tokens(text, inputs.encoding) if shown else 0, inputs.encoding, focus,
                   tuple(sorted(inputs.seeds, key=lambda p: (-inputs.seeds[p], p))[:20]), tuple(shown), text,
                   tuple(notes))


def _led(graph: SymbolGraph, found: Ranked, leads: tuple[tuple[str, tuple[str, ...]], ...],
         keep: np.ndarray) -> list[int]:
    """The definitions to show, those of the focus's best search hits first (each hit's own definitions, else its
    file's best ranked one), then the rest in rank order."""
    first: list[int] = []
    for path, symbols in leads:
        file = graph.position[path]
        names = {graph.name_position[n] for n in (s.rsplit(".", 1)[-1] for s in symbols) if n in graph.name_position}
        in_file = np.flatnonzero(found.file == file)
        picked = [int(i) for i in in_file if int(found.name[i]) in names] or [int(i) for i in in_file[:1]]
        first += [i for i in picked if i not in first]
    return first + [int(i) for i in keep if int(i) not in first]


def render(entries: list[MapEntry]) -> str:
    """Files in the order of their best definition, each with its shown definitions by line: `path` then
    `  line: signature` (lines as in the file). A member is shown under the definition it belongs to, indented, and
    that definition's line is shown for it when it is not itself among the entries (`def text(self)` alone does
    not say whose it is)."""
    by_file: dict[str, list[MapEntry]] = {}
    for entry in entries:
        by_file.setdefault(entry.path, []).append(entry)
    out = []
    for path, found in by_file.items():
        out.append(f"{path}:")
        seen = set()
        for entry in sorted(found, key=lambda e: (e.within[0] if e.within else e.line, e.line, e.name)):
            if (entry.line, entry.signature) in seen:
                continue
            indent = "  "
            if entry.within is not None:
                if entry.within not in seen:
                    seen.add(entry.within)
                    out.append(f"  {entry.within[0]}: {entry.within[1]}")
                indent = "    "
            seen.add((entry.line, entry.signature))
            out.append(f"{indent}{entry.line}: {entry.signature}")
    return "\n".join(out) + ("\n" if out else "")
