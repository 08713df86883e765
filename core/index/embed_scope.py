"""Which chunks the model embeds and which keep only their lexical signal (full text, names, the change).

Embedded: code (definitions and a module's top-level code) and prose documentation (Markdown, reStructuredText)
outside tests and vendored code. Lexical only: tests, vendored code, and text no grammar cuts into definitions
that is not prose (configuration, data files, plain text: mypy's test data). Search weighs these down unless asked
for them and finds them by their words and names; their vectors cost a large share of a first index and moved
none of the search, selection or LoCoMo figures on dev. Documentation's did: a fix to cobra's zsh completion is
selected at 2,000 tokens only while `zsh_completions.md` has its vector (docs/benchmarks.md, "First index").

A lexical-only chunk is stored with `embedded = true` (nothing waits for it) and `vector_model = LEXICAL_ONLY`, so
vector search, which reads only the chunks of the current model, never compares with its (zero) vector.
"""

from __future__ import annotations

import re

from ..store.schema import LEXICAL_ONLY

_VENDORED = re.compile(r"(^|/)(vendor|vendored|third[-_]party|typeshed)/", re.IGNORECASE)
"""Directories of code copied in from elsewhere; `typeshed` is python/typeshed's stubs of the standard library and
third-party packages, which mypy, pyright, jedi and pytype each carry a copy of (3,327 of mypy's 11,176 chunks to
embed otherwise)."""
PROSE = ("markdown", "rst")
"""Languages of documentation: embedded, although no grammar cuts them into definitions."""
EMBEDDED_WHERE = ("is_test = false AND (kind != 'window' OR language IN ('markdown', 'rst')) AND "
                  "NOT regexp_like(path, '(^|/)(vendor|vendored|third[-_]party|typeshed)/', 'i')")
"""`is_embedded` as a filter on the chunks table."""
LEXICAL_ONLY_WHERE = f"vector_model = '{LEXICAL_ONLY}'"
VECTORS_WHERE = f"embedded = true AND vector_model != '{LEXICAL_ONLY}'"
"""The chunks whose vector is the model's: the rest hold zeros (waiting, or lexical only). The vector index counts
only these toward its threshold (`ensure_search_indexes`'s `vectors`)."""


def is_embedded(path: str, language: str, kind: str, is_test: bool) -> bool:
    """Whether a chunk of this file, language and kind gets a vector (the module's rule; `EMBEDDED_WHERE` in SQL)."""
    return not is_test and (kind != "window" or language in PROSE) and not _VENDORED.search(path)
