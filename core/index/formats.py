"""What an index written by an earlier version lacks, brought up to date when it is opened.

Each format is recorded in the database's meta table; a database without the current one is migrated once: a
column computed again from the rows (`words`, `names`), files cut again by the next pass (`cut`), chunks the
embedding rule keeps lexical only marked so (`scope`), chunks another embedding model embedded queued again.
"""

from __future__ import annotations

from ..store.database import Database
from ..store.sql import in_filter, quote, scan
from ..text import WORDS_FORMAT, chunk_words
from .chunk_rows import defined_names
from .embed_scope import EMBEDDED_WHERE, LEXICAL_ONLY

NAMES_FORMAT = "1"
"""The `names` column's format (`defined_names`); a database written before it is filled once on open."""
CUT_FORMAT = "5"
"""How files are cut into chunks (`chunker.py`). 2: a typing overload defines nothing; 3: a large definition's
small header opens its first member's chunk; 4: a Go method is named with its receiver's type, a Rust impl's type
without its generic arguments, a JavaScript function assigned to a name (`res.send = function`) defines it; 5: the
comments and attributes right above a definition open its chunk, and a large run of top-level code that defines
nothing is cut into windows. A database cut before is fixed on open: the files
the change could cut otherwise (`RECUT_WHERE`) are read and cut again by the next pass."""
_ASSIGNING = "language IN ('javascript', 'typescript', 'tsx')"
"""Files whose functions may be defined by assignment only (`exports.x = function`): cut before format 4, such a
file held no definition, so its chunks are not code."""
RECUT_WHERE = f"kind = 'code' OR {_ASSIGNING}"
"""Any file with code chunks: any definition may have a comment above it or be a large class (format 3), and
format 2's overloads are code too. The cost is one lexical pass over them, and embedding the chunks the new cut
changed (their text or symbols)."""
SCOPE_FORMAT = "3"
"""Which chunks are embedded (`embed_scope`). 1: tests, documentation, data and vendored code lexical only; 2: the
same but documentation (Markdown, reStructuredText) embedded; 3: a `typeshed/` copy counts as vendored. A database that embedded or queued chunks the rule
keeps lexical only has them marked so on open (their vectors stay in the vector cache), and one marked by an
earlier rule has the chunks this one embeds queued."""


def bring_up_to_date(db: Database, chunks, files, model_id: str) -> None:
    """One read of the formats and, where one is behind, its migration; the new formats are recorded in one commit
    (a new database records them all: each commit is one more step a killed first run can stop at). Killed before
    that commit, the next open migrates again, which changes nothing the second time."""
    stored, done = db.metas(), {}
    if stored.get("chunks_words") != WORDS_FORMAT:
        db.rewrite_column(chunks, "words", ["path", "text"], lambda r: chunk_words(r["path"], r["text"]))
        done["chunks_words"] = WORDS_FORMAT
    if stored.get("chunks_names") != NAMES_FORMAT:
        db.rewrite_column(chunks, "names", ["symbols"], lambda r: defined_names(r["symbols"] or []),
                          replaces_text_index=False)
        done["chunks_names"] = NAMES_FORMAT
    if stored.get("chunks_cut") != CUT_FORMAT:
        _read_again(db, chunks, files, RECUT_WHERE)
        done["chunks_cut"] = CUT_FORMAT
    if stored.get("chunks_scope") != SCOPE_FORMAT:
        _keep_lexical(db, chunks)
        done["chunks_scope"] = SCOPE_FORMAT
    if done:
        db.set_metas(done)
    _requeue_other_models(db, chunks, model_id)
    db.finish_migration()


def _read_again(db: Database, chunks, files, where: str) -> None:
    """Mark the files holding a chunk that matches `where` stale (their file rows keep the path, lose the stat and
    blob that say the file is indexed as it is), so the next pass reads and cuts them again. Until it has, they stay
    indexed and searchable as they were cut (their rows deleted instead, an index whose every file holds code read
    as no index at all). Vectors of chunks whose text and symbols are the same come back from the cache."""
    paths = in_filter("path", sorted({r["path"] for r in scan(chunks, where, ["path"])}))
    if paths is not None:
        db.write(lambda: db.update(files, paths, {"mtime_ns": -1, "blob": ""}))


def _keep_lexical(db: Database, chunks) -> None:
    """Chunks outside the embedding rule, embedded or waiting, become lexical only; chunks inside it marked lexical
    only wait for their vector: one update of each, then a compaction. An update rewrites its rows outside the
    full-text index, where their words score apart from the indexed rows' until a compaction folds them in: left
    so, a kept cobra index lost a selection at 2,000 tokens that the same rows indexed afresh keep."""
    outside = f"NOT ({EMBEDDED_WHERE}) AND (vector_model IS NULL OR vector_model != {quote(LEXICAL_ONLY)})"
    inside = f"({EMBEDDED_WHERE}) AND vector_model = {quote(LEXICAL_ONLY)}"
    changes = [(where, values) for where, values in ((outside, {"embedded": True, "vector_model": LEXICAL_ONLY}),
                                                     (inside, {"embedded": False, "vector_model": ""}))
               if chunks.count_rows(where)]
    for where, values in changes:
        db.write(lambda: db.update(chunks, where, values))  # noqa: B023 (called at once, in this iteration)
    if changes:
        db.write(lambda: db.compact_now(chunks))


def _requeue_other_models(db: Database, chunks, model_id: str) -> None:
    """After a change of embedding model, chunks another model embedded wait for embedding again (working change
    first, like new chunks); they stay found by full text, and vector search never compares across models."""
    stale = f"embedded = true AND (vector_model IS NULL OR vector_model NOT IN ({quote(model_id)}, {quote(LEXICAL_ONLY)}))"
    if chunks.count_rows(stale):
        db.write(lambda: db.update(chunks, stale, {"embedded": False}))
