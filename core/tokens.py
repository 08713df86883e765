"""Exact token counts with OpenAI's BPE encodings, from data shipped inside the bpe-openai wheel (no download)."""

from __future__ import annotations

import re
from functools import lru_cache

from .errors import CortexError

ENCODINGS = ("cl100k_base", "o200k_base")
# bpe-openai refuses one call over 200,000 tokens; a character is at most 4 tokens (one per UTF-8 byte).
_MAX_PIECE_CHARS = 50_000
_PIECE_BOUNDARY = re.compile(r"\n(?=\S)")
# Where a long line has no such newline: before a lone space that follows a non-space and precedes a letter, which
# both encodings' pre-tokenizers also always split at (the space starts the next word's token).
_WORD_BOUNDARY = re.compile(r"(?<=\S) (?=[^\W\d_])")


@lru_cache(maxsize=4)
def _encoding(name: str):
    if name not in ENCODINGS:
        raise CortexError(f"unknown token encoding {name!r}; choose one of {', '.join(ENCODINGS)}")
    import bpe_openai

    return bpe_openai.get_encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Exact token count. Long texts are counted in pieces cut just after a newline that is followed by a
    non-space character: the encodings' pre-tokenizer always splits there, so the sum equals one whole count."""
    enc = _encoding(encoding)
    if len(text) <= _MAX_PIECE_CHARS:
        return len(enc.encode_ordinary(text))
    total, start = 0, 0
    while start < len(text):
        end = _cut(text, start)
        total += len(enc.encode_ordinary(text[start:end]))
        start = end
    return total


def _cut(text: str, start: int) -> int:
    """The end of the next piece: a pre-tokenizer boundary past `_MAX_PIECE_CHARS`, so the count stays exact, within
    twice that. Text with no boundary at all (a megabyte of one character) is cut hard, which can add one token a cut."""
    if len(text) - start <= _MAX_PIECE_CHARS:
        return len(text)
    limit = start + 2 * _MAX_PIECE_CHARS
    for boundary in (_PIECE_BOUNDARY, _WORD_BOUNDARY):
        cut = boundary.search(text, start + _MAX_PIECE_CHARS, limit)
        if cut:
            return cut.end() if boundary is _PIECE_BOUNDARY else cut.start()
    return min(limit, len(text))
