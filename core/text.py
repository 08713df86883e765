"""Text helpers shared by indexing, search and display: identifier splitting for full-text search, control
characters made visible."""

from __future__ import annotations

import re
from functools import lru_cache

# C0 controls (but newline and tab) and DEL become their Unicode control pictures (␛, ␡); C1 controls and the
# bidirectional embeddings, overrides and isolates (U+202A-202E, U+2066-2069) become the replacement character: an
# override reorders everything after it on the line, borders and other columns included, and clipping a title can
# cut off the character that would have ended it.
_VISIBLE = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}
_VISIBLE[0x7F] = 0x2421
_VISIBLE.update({c: 0xFFFD for c in [*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]})


def visible(text: str) -> str:
    """The text with control characters replaced by visible symbols (newlines and tabs kept), for a screen: an
    escape sequence in a memory or a commit subject cannot drive the terminal."""
    return text.translate(_VISIBLE)


_LINE_BREAKS = {c: f"\\x{c:02x}" for c in (0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85)}
_LINE_BREAKS.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def one_line(text: str) -> str:
    """The text with every character that ends a line (and tab, the piped tables' separator) written as an escape
    (`\\n`, `\\r`, `\\t`, `\\u2028`), for a field printed within a line: a file named `new\\nline.py` printed raw
    made a line of its own, so a file name could forge lines of any answer."""
    return text.translate(_LINE_BREAKS)


_ESCAPED = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
_ESCAPED.update({c: f"\\u{c:04x}" for c in [0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]})


def escaped(text: str) -> str:
    """The text with control characters (but newline and tab) written as escapes (`\\x1b`, `\\u202e`), for output
    read by a program or a pager: an escape sequence, a carriage return that overwrites the line or a bidirectional
    override passes a pipe as text, never as what it does."""
    return text.translate(_ESCAPED)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def counted(n: int, noun: str) -> str:
    """`1 file`, `2,247 files`: a count with its noun (nouns here take a plain `s`)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def split_identifier(name: str) -> list[str]:
    """`getUserByID` -> [get, user, by, id]; `parse_config` -> [parse, config]."""
    return list(_identifier_parts(name))


@lru_cache(maxsize=1 << 16)
def _identifier_parts(name: str) -> tuple[str, ...]:
    # Kept: a selection splits every word of every candidate chunk several times over (189,000 splits for five
    # selections at 5,000 files, 40% of their time), and a code base's names are few beside their uses.
    parts: list[str] = []
    for piece in name.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return tuple(p for p in parts if p)


def identifier_words(text: str) -> str:
    """Extra words for the FTS column: the parts of every compound identifier (LanceDB's tokenizer does not split
    camelCase), so `getUser` finds `getUserById`."""
    out: list[str] = []
    seen: set[str] = set()
    for token in _IDENT.findall(text):
        if token in seen:  # each name split once: a chunk repeats most of its names (a first index split 159,000)
            continue
        seen.add(token)
        parts = split_identifier(token)
        if len(parts) > 1:
            out.extend(parts)
    return " ".join(out)


WORDS_FORMAT = "2"
"""Version of what the `words` column holds (v2: the text itself plus identifier parts and path words). Tables
written in an older format have their `words` rebuilt when opened."""


def path_words(path: str) -> str:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return " ".join(p for p in stem.replace("/", " ").replace("-", " ").replace("_", " ").replace(".", " ").split() if p)


def chunk_words(path: str, text: str) -> str:
    """The one full-text column of a code chunk: its text, the parts of its identifiers, its path's words."""
    return f"{text}\n{identifier_words(path + ' ' + text)} {path_words(path)}"


@lru_cache(maxsize=1)
def _stemmer():
    # The same Snowball English stemmer (rust-stemmers) that LanceDB's full-text index applies with `stem=True`,
    # so a word counts as matched here exactly when the index would match it.
    from py_rust_stemmers import SnowballStemmer

    return SnowballStemmer("english")


def stem_words(words: list[str]) -> list[str]:
    """Snowball English stems of lower-case words."""
    return _stemmer().stem_words(words)


_WORD = re.compile(r"[a-z0-9]+")
MATCH_SCAN_CHARS = 200_000
"""Which query words a text contains is read from its first 200k characters: a bound on a megabyte memory."""


CACHED_TEXT_CHARS = 16_000
"""Texts up to this size keep their stems in a bounded cache: a search stems each candidate's words and each line
of its snippets, and a repeated or overlapping search (the resident server, the dashboard's refreshes) would
stem the same texts again (a tenth of a warm search). Longer texts are rare and would crowd the cache."""
STEMS_KEPT = 2048
"""A search stems about 270 texts (candidates and snippet lines), so this holds the last seven or so searches: a
repeated search still finds its own. 8,192 held 10 MiB more in a resident server and were no faster."""


def word_stems(text: str) -> frozenset[str]:
    """The stems of a text's words, split as the full-text index splits them (on anything not a letter or digit)."""
    return _cached_stems(text) if len(text) <= CACHED_TEXT_CHARS else _stems(text)


def _stems(text: str) -> frozenset[str]:
    return frozenset(stem_words(list(set(_WORD.findall(text[:MATCH_SCAN_CHARS].lower())))))


_cached_stems = lru_cache(maxsize=STEMS_KEPT)(_stems)


def query_stems(terms: tuple[str, ...]) -> frozenset[str]:
    """The distinct words a query asks the full-text index for (`parse_config` is `parse` and `config` there)."""
    return word_stems(" ".join(terms))


def text_hash(text: str) -> str:
    """The content hash that keys stored vectors. It lives here, not beside the embedder, because modules an
    attached dashboard imports (secret redaction) need it, and importing the embedder loads numpy."""
    import hashlib  # here: it loads OpenSSL, which an attached dashboard, importing this module, never needs

    # surrogatepass: text read from non-UTF-8 files keeps lone surrogates, and must hash, not crash.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
