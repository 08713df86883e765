"""Which chunks the model embeds and which keep only their lexical signal (full text, names, the change).

Embedded: definitions and a module's top-level code outside tests and vendored code. Lexical only: tests, text that
no grammar cuts into definitions (documentation, changelogs, configuration, data files: `window` chunks) and
vendored code. Search weighs these down unless asked for them (`search.roles`) and finds them by their words and
names; their vectors cost a third to a half of a first index (tests and docs are a large share of a repository's
chunks) and moved none of the search, selection or LoCoMo figures on dev (docs/benchmarks.md, "First index").

A lexical-only chunk is stored with `embedded = true` (nothing waits for it) and `vector_model = LEXICAL_ONLY`, so
vector search, which reads only the chunks of the current model, never compares with its (zero) vector.
"""

from __future__ import annotations

import re

LEXICAL_ONLY = "lexical only"
"""The `vector_model` of a chunk kept out of the embeddings by this rule."""
_VENDORED = re.compile(r"(^|/)(vendor|vendored|third[-_]party)/", re.IGNORECASE)
EMBEDDED_WHERE = ("is_test = false AND kind != 'window' AND "
                  "NOT regexp_like(path, '(^|/)(vendor|vendored|third[-_]party)/', 'i')")
"""`is_embedded` as a filter on the chunks table."""
LEXICAL_ONLY_WHERE = f"vector_model = '{LEXICAL_ONLY}'"


def is_embedded(path: str, kind: str, is_test: bool) -> bool:
    """Whether a chunk of this file and kind gets a vector (the module's rule; `EMBEDDED_WHERE` in SQL)."""
    return not is_test and kind != "window" and not _VENDORED.search(path)
