"""The reads behind the memory graph: each asks LanceDB for what one node touches, filtered and limited there.

The graph is never built whole. A neighbourhood is read on demand: memories by id or by a filter on the column
that could name the node (`files`, `symbols`, `commit`, the full-text words or the text holding the name, then
checked in Python),
files by path, importers through the `imports` column, definers through the `symbols` column. No read returns
more than its limit, so a neighbourhood costs the same in a store of a hundred memories or a million.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from ..git.gitctx import CommitInfo
from ..records import Memory
from ..store.memory_rows import FIELDS, row_to_memory, without_repeats
from ..store.sql import in_filter, quote, scan, sql_list, symbols_filter
from ..store.store import MemoryStore
from .mentions import MAX_SCAN_CHARS, Mentions, candidate_tokens, extract_mentions

_MEMORY_ID = re.compile(r"\b[0-9a-f]{12}\b")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class FileRow:
    path: str
    imports: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()


@dataclass
class Vocabulary:
    """The part of the repository's vocabulary some texts could name: extraction against it finds exactly what it
    would find against every indexed path and symbol."""

    paths: set[str] = field(default_factory=set)
    defined: dict[str, list[str]] = field(default_factory=dict)
    """Short symbol name -> qualified names, once per file that defines it (ambiguity counts files)."""
    qualified: set[str] = field(default_factory=set)


class GraphReads:
    """Bounded reads over the stores, the code index's `files` table (None without an index) and a window of
    commits; `limit` caps every read."""

    def __init__(self, stores: Sequence[MemoryStore], files, commits: Sequence[CommitInfo], limit: int = 200,
                 checked: Callable[[Sequence[Memory]], list[Memory]] = list, active: str = "status = 'active'") -> None:
        """`checked`: marks the memories read whose anchored code changed since (the engine's check). `active`: the
        filter of the memories the graph shows (active ones the reader may see: its session's, see
        core/store/sessions.py)."""
        self.stores = list(stores)
        self.active = active
        self.checked = checked
        self.files_table = files
        self.commits = {c.sha: c for c in commits}
        self.limit = limit

    def widened(self, limit: int) -> GraphReads:
        """These reads with a cap of at least `limit` (a caller asking for 500 neighbours reads up to 500 of a kind)."""
        if limit <= self.limit:
            return self
        return GraphReads(self.stores, self.files_table, list(self.commits.values()), limit, self.checked, self.active)

    # --- memories ------------------------------------------------------------------------------------------------

    def memories_where(self, where: str, limit: int | None = None) -> list[Memory]:
        """Active memories matching a filter, at most `limit` from each store."""
        found: list[Memory] = []
        for store in self.stores:
            rows = (store.table.search().where(f"{self.active} AND ({where})").select(FIELDS)
                    .limit(limit or self.limit).to_list())
            found += [row_to_memory(r) for r in rows]
        return self.checked(without_repeats(found))

    def memories_with_words(self, words: str) -> list[Memory]:
        """Active memories whose full-text words hold every word of `words` (a memory id that others link to, a
        path or symbol a text may name), found by the full-text index: a `LIKE '%...%'` filter read every title
        and text (a million memories: 120-160 ms, against under 10 ms). The caller checks the text really names it
        (the words also hold identifier parts and the neighbours' context)."""
        from lancedb.query import FullTextOperator, MatchQuery

        found: list[Memory] = []
        for store in self.stores:
            # The ignore: lancedb gives MatchQuery's defaults positionally (`pydantic.Field(1.0, kw_only=True)`),
            # which type checkers do not read as defaults, so they take the keyword-only fields for required ones.
            query = store.table.search(MatchQuery(words, "words", operator=FullTextOperator.AND),  # type: ignore[call-arg]
                                       query_type="fts")
            # `_score` asked for: LanceDB warns on stderr (the dashboard's terminal) when a full-text query omits it.
            query = query.where(self.active, prefilter=True).select([*FIELDS, "_score"])
            found += [row_to_memory(r) for r in query.limit(self.limit).to_list()]
        return self.checked(without_repeats(found))

    def memories(self, ids: Collection[str]) -> list[Memory]:
        if not ids:
            return []
        where = in_filter("id", sorted(ids))
        assert where is not None  # ids is not empty
        return self.memories_where(where, len(ids))

    def newest_memories(self, limit: int) -> list[Memory]:
        found = [m for store in self.stores for m in store.newest(self.active, limit)]
        found.sort(key=lambda m: m.updated_at, reverse=True)
        return self.checked(found[:limit])

    def memories_naming(self, column: str, value: str, word: str | None) -> list[Memory]:
        """Memories listing `value` in a list column, or whose words hold `word` (the caller checks that the text
        really mentions it)."""
        listing = self.memories_where(f"array_has_any({column}, [{quote(value)}])")
        return without_repeats(listing + self.memories_with_words(word)) if word else listing

    # --- files ---------------------------------------------------------------------------------------------------

    def files(self, paths: Iterable[str]) -> dict[str, FileRow]:
        wanted = sorted(set(paths))
        if self.files_table is None or not wanted:
            return {}
        rows = scan(self.files_table, in_filter("path", wanted), ["path", "imports", "symbols"])
        return {r["path"]: FileRow(r["path"], tuple(r["imports"] or ()), tuple(r["symbols"] or ())) for r in rows}

    def _files_where(self, where: str, limit: int) -> list[FileRow]:
        if self.files_table is None:
            return []
        rows = self.files_table.search().where(where).select(["path", "imports", "symbols"]).limit(limit).to_list()
        return [FileRow(r["path"], tuple(r["imports"] or ()), tuple(r["symbols"] or ())) for r in rows]

    def importers(self, path: str) -> list[str]:
        return [f.path for f in self._files_where(f"array_has_any(imports, {sql_list([path])})", self.limit)]

    def definers(self, symbol: str) -> list[str]:
        return [f.path for f in self._files_where(f"array_has_any(symbols, {sql_list([symbol])})", self.limit)]

    def symbols_named(self, names: Collection[str]) -> Vocabulary:
        """The indexed symbols whose last part is one of `names` (a regular expression over each file's symbols,
        evaluated inside LanceDB), from at most about `limit` files per name: a short name such as `get` can be
        defined in thousands of files of a large tree, and past a few (`mentions.MAX_TARGETS`) it is too ambiguous
        to link anyway. One read of `limit` rows per name serves them all; when it comes back full, the names it
        found in `limit` files or more keep those, and the others, which they may have crowded out, are read again."""
        vocab = Vocabulary()
        left = sorted(n for n in names if _IDENTIFIER.fullmatch(n))
        if self.files_table is None:
            return vocab
        while left:
            cap = self.limit * len(left)
            rows = self.files_table.search().where(symbols_filter(left)).select(["symbols"]).limit(cap).to_list()
            found: dict[str, list[str]] = {}
            for row in rows:
                for sym in row["symbols"] or ():
                    short = sym.rsplit(".", 1)[-1]
                    if short in left:
                        found.setdefault(short, []).append(sym)
            full = len(rows) >= cap
            # A full read holds at least `limit` files of some name (each row lists at least one of the names).
            done = [n for n in left if not full or len(found.get(n, ())) >= self.limit] or left
            for name in done:
                if name in found:
                    vocab.defined[name] = found[name]
                    vocab.qualified.update(found[name])
            left = [n for n in left if n not in done]
        return vocab

    def vocabulary(self, texts: Iterable[str]) -> Vocabulary:
        """The indexed paths and symbols these texts could name: their tokens looked up, never the whole index."""
        tokens: set[str] = set()
        for text in texts:
            tokens |= candidate_tokens(text)
        vocab = self.symbols_named({t.rsplit(".", 1)[-1] for t in tokens})
        vocab.paths = set(self.files(tokens))
        return vocab

    def mentions(self, memories: Sequence[Memory]) -> dict[str, Mentions]:
        """What each memory names (its own `files` and `symbols` lists, and what its title and text mention)."""
        texts = {m.id: f"{m.title}\n{m.text}" for m in memories}
        vocab = self.vocabulary(texts.values())
        out = {}
        for m in memories:
            found = extract_mentions(texts[m.id], vocab.paths, vocab.defined, vocab.qualified)
            out[m.id] = Mentions(frozenset(m.files) | found.files, frozenset(m.symbols) | found.symbols)
        return out

    # --- existence -----------------------------------------------------------------------------------------------

    def memory_exists(self, memory_id: str) -> bool:
        return bool(self.memories([memory_id]))

    def file_exists(self, path: str) -> bool:
        """Indexed, or listed by a memory (a memory may name a file the index does not hold)."""
        return bool(self.files([path])) or bool(self.memories_where(f"array_has_any(files, {sql_list([path])})", 1))

    def symbol_exists(self, symbol: str) -> bool:
        return (bool(self._files_where(f"array_has_any(symbols, {sql_list([symbol])})", 1))
                or bool(self.memories_where(f"array_has_any(symbols, {sql_list([symbol])})", 1)))

    def is_empty(self) -> bool:
        has_files = self.files_table is not None and self.files_table.count_rows() > 0
        return not (self.commits or has_files or self.memories_where("true", 1))

    def any_file(self) -> str:
        return self._files_where("path IS NOT NULL", 1)[0].path

    @staticmethod
    def linked_ids(text: str) -> set[str]:
        """Memory ids a text names (memories link to each other by id)."""
        return set(_MEMORY_ID.findall(text[:MAX_SCAN_CHARS]))
