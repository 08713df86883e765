"""Exact token counts with OpenAI's BPE encodings, from data shipped inside the bpe-openai wheel (no download)."""

from __future__ import annotations

import re
from functools import lru_cache

from .errors import CortexError

ENCODINGS = ("cl100k_base", "o200k_base")
# bpe-openai refuses one call over 200,000 tokens; a character is at most 4 tokens (one per UTF-8 byte).
_MAX_PIECE_CHARS = 50_000
_PIECE_BOUNDARY = re.compile(r"\n(?=\S)")


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
        cut = _PIECE_BOUNDARY.search(text, start + _MAX_PIECE_CHARS)
        end = cut.end() if cut else len(text)
        total += len(enc.encode_ordinary(text[start:end]))
        start = end
    return total


def count_many(texts: list[str], encoding: str = "cl100k_base") -> list[int]:
    return [count_tokens(t, encoding) for t in texts]
