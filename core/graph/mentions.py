"""Code mentions in free text: the file paths and symbols a memory names, found in one linear, bounded pass.

A memory can be a megabyte of anything (a pasted log, `xxxx…`), and every graph neighbourhood extracts from the
memories it reads, so extraction must never cost more than a small constant per character. Text is cut to a prefix, tokenised by
patterns that cannot backtrack (each match is one maximal run of one character class), and tokens are
classified in Python.

Only code-shaped words count as symbol mentions: `a.b`, `` `name` ``, `name(`, CamelCase, snake_case. A plain
word ("first", "read", "output") names a symbol only when that symbol is rare in the repository (defined once)
and the word is not common English.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..embedding import MINILM_FILES
from ..text import stem_words

MAX_SCAN_CHARS = 100_000
"""Mentions are looked for in a memory's first 100k characters: more than any note a person writes, and a bound
on what a pasted megabyte costs."""
MAX_TOKEN_CHARS = 200
"""Longer runs (base64, minified code, a line of `x`) name nothing."""
MAX_TARGETS = 3
"""A short name defined in more places than this is too ambiguous to link."""

_RUN = re.compile(r"[\w./-]+")
"""One maximal run of name characters: the engine never backtracks into it, so a scan is linear."""
_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
"""Bounded: at most 200 characters are tried after each backtick."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_VOCABULARY = MINILM_FILES / "tokenizer.json"
PROSE_OF_CODE = frozenset("""
    api args async auth await backend bool callback cfg changelog cli config conf const ctx debug decode dict diff
    dir docstring encode enum env eval exec fixme formatter frontend getter helper html http https impl init int
    json kwargs len lib lint linter logger login logout lookup metadata middleware multiline mutex namespace param
    params parse parser plugin printf println readme rebase regex repo runtime schema setter sql src stash stderr
    stdin stdout str struct subprocess teardown temp timestamp tmp todo toml traceback tuple tui uri url username
    util utils var venv webhook wrapper yaml
""".split())
"""Words of programming prose that the English vocabulary lacks ("parse the config"): ordinary in a note, so
never a mention on their own."""


@dataclass(frozen=True)
class Mentions:
    """What one text names: repository paths and qualified symbol names."""

    files: frozenset[str]
    symbols: frozenset[str]


@lru_cache(maxsize=1)
def _english_stems() -> frozenset[str]:
    """Stems of common English words: the whole-word entries of the embedding model's WordPiece vocabulary (shipped
    with this package, about 22,000), so `tokens` and `validate` count as English through `token` and `valid`."""
    try:
        vocab = json.loads(_VOCABULARY.read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, ValueError, KeyError):
        return frozenset()
    return frozenset(stem_words([w for w in vocab if w.isalpha() and w.islower()]))


def is_ordinary_word(word: str) -> bool:
    """Common English or the everyday words of programming prose: too ordinary to name a symbol on its own."""
    lower = word.lower()
    return lower in PROSE_OF_CODE or stem_words([lower])[0] in _english_stems()


def extract_mentions(
    text: str,
    paths: Collection[str],
    defined: Mapping[str, Sequence[str]],
    qualified: Collection[str],
) -> Mentions:
    """`paths`: the repository's files; `defined`: short symbol name -> qualified names; `qualified`: every
    qualified symbol name."""
    text = text[:MAX_SCAN_CHARS]
    files: set[str] = set()
    symbols: set[str] = set()
    for match in _BACKTICKED.finditer(text):
        for token in _RUN.findall(match.group(1)):
            _classify(token, True, paths, defined, qualified, files, symbols)
    for match in _RUN.finditer(text):
        token = match.group(0)
        called = text[match.end():match.end() + 1] == "("
        _classify(token, called, paths, defined, qualified, files, symbols)
    return Mentions(frozenset(files), frozenset(symbols))


def candidate_tokens(text: str) -> set[str]:
    """Every token `extract_mentions` classifies in this text, cut as it cuts them: what a caller looks up (paths
    among them, symbols by their last part) to extract against part of the vocabulary with the same result.
    Backticked tokens are among them: a backtick ends a run."""
    found: set[str] = set()
    for token in _RUN.findall(text[:MAX_SCAN_CHARS]):
        token = _normalise(token)
        if token:
            found.add(token)
    return found


def _normalise(token: str) -> str:
    if len(token) > MAX_TOKEN_CHARS:
        return ""
    token = token.rstrip(".-/")
    return token[2:] if token.startswith("./") else token


def _classify(
    token: str,
    code_shaped: bool,
    paths: Collection[str],
    defined: Mapping[str, Sequence[str]],
    qualified: Collection[str],
    files: set[str],
    symbols: set[str],
) -> None:
    token = _normalise(token)
    if not token:
        return
    if token in paths:
        files.add(token)
        return
    if "/" in token:
        return
    parts = token.split(".")
    if len(parts) > 1 and token in qualified:
        symbols.add(token)
        return
    name = parts[-1]
    if not _IDENTIFIER.fullmatch(name):
        return
    targets = defined.get(name, ())
    if not 0 < len(targets) <= MAX_TARGETS:
        return
    dotted = len(parts) > 1 and all(_IDENTIFIER.fullmatch(p) for p in parts)
    if code_shaped or dotted or _looks_like_code(name) or _rare_word(name, targets):
        symbols.update(targets)


def _looks_like_code(name: str) -> bool:
    """snake_case, _private, CONSTANT_CASE, camelCase, CamelCase with an inner capital, HTTPServer."""
    return "_" in name or _CAMEL.search(name) is not None


def _rare_word(name: str, targets: Sequence[str]) -> bool:
    return len(targets) == 1 and len(name) >= 4 and not is_ordinary_word(name)
