"""The words code says for what a question names in everyday words: a request's *body* is its `data` or `stream`,
a *folder* is a `dir`, *settings* are a `config` or `cfg`.

Full-text search matches words, and the embedding model (a small general one) does not bridge these either: on
werkzeug "how is the request body read" found neither `Request.get_data` nor `Request.stream` in the top 10, their
text saying "data" and "stream", never "body". A short question's plain words (`query.said_words`) are therefore
also looked for as the words below. Full text reads them as words of the query like any other (BM25 sums them,
so a chunk saying "data", "content" and "stream" ranks high in that list); what a hit's rank there is worth, the
share of the question it covers, counts each for part of the word it stands for (`ALTERNATE_SHARE`) and never for
more: a hit holding "data" covers half of "body", one holding "body" all of it, one holding "data" and "stream"
still half. A definition named by one of them (`Request.stream`) joins the question's named definitions.

Hand-written, not learned: the everyday or long form a person asks with, mapped to the forms and abbreviations
code is written with (one way: "data" does not stand for "body", a question about data is not about a payload).
Kept to words whose alternatives name the same thing in code; a word with many meanings (`run`, `get`, `read`)
has none, nor does any alternative whose stem is also an ordinary token of code (`settings` is stemmed to `set`,
`exception` to Python's `except`; `var`, `str`, `len`, `init`, `src`, `lib` are everywhere).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..text import stem_words

_TABLE = """
argument: arg args param params parameter
attribute: attr attrs
authentication: auth login credentials
body: payload data content stream
callback: handler hook
command: cmd
configuration: config cfg conf
database: db
delete: remove unlink
destination: dest dst
directory: dir folder
environment: env environ
error: err
exception: error err
execute: exec invoke
folder: dir directory
initialise: setup
initialize: setup
launch: start spawn
length: size
message: msg
number: num count
package: pkg
parameter: param params arg
password: passwd pwd
payload: body data
reference: ref
remove: delete unlink
repository: repo
settings: config cfg conf configuration
shutdown: stop terminate
temporary: temp tmp
terminate: stop kill shutdown
utility: util utils helper
verify: check
"""

ALTERNATE_SHARE = 0.5
"""How much of a word a hit covers by holding a word code says for it instead: less than the word, which says it
for certain. (The case list answered the same at 1.0; the lower share is the safer reading of weaker evidence.)"""

SYNONYMS: dict[str, tuple[str, ...]] = {
    word.strip(): tuple(others.split()) for word, others in (line.split(":") for line in _TABLE.strip().splitlines())
}
_BY_STEM = {stem: tuple(zip(others, stem_words(list(others))))
            for stem, others in zip(stem_words(list(SYNONYMS)), SYNONYMS.values())}
"""The table by its words' stems, so "errors", "deleted" and "directories" are looked up as their words are; each
alternative with its own stem, stemmed once here rather than on every search."""


def alternatives(words: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each said word (lower case) that code may say otherwise, with the words it may say instead; none that is
    itself a said word ("body data" asks for both, and a hit holding "data" covers "data", not "body" again)."""
    words = list(words)
    stems = stem_words(words)
    said = set(stems)
    out = {}
    for word, stem in zip(words, stems):
        others = tuple(other for other, other_stem in _BY_STEM.get(stem, ()) if other_stem not in said)
        if others:
            out[word] = others
    return out


def covered(word: str, alternates: frozenset[str], held: frozenset[str]) -> float:
    """How much of a query word a text holding the words `held` covers: all of it with the word itself,
    `ALTERNATE_SHARE` with only words code says for it (however many), else nothing. Words and alternates are
    stemmed alike by the caller (full text's stemmer for candidates, the reranker's for its coverage)."""
    if word in held:
        return 1.0
    return ALTERNATE_SHARE if not held.isdisjoint(alternates) else 0.0
