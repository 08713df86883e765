"""What the default model reads of a code chunk: its first DOCUMENT_TOKENS word pieces.

A chunk's text opens with its path and the names it defines, then the comments above the definition, its
signature, its docstring and its first lines (`chunk_rows.embed_text`); the rest of a large body says less about
what the chunk is and costs the most, as the model's work grows with the text's length. all-MiniLM-L6-v2 was
trained on texts cut at 128 word pieces, and at 256 (the most it reads) half of a repository's chunks were cut
anyway: at 128 a chunk is embedded in half the time. Search, selection and memory retrieval were measured with
and without the cut (docs/benchmarks.md).

A cut chunk's vector is cached under a key that names the cut (`Embedder.document_key`), so it is never taken for
the vector of the whole text, and the key costs the lexical pass no tokenizing. Memories are embedded whole (up to
the model's 256 word pieces), as before.
"""

from __future__ import annotations

from functools import lru_cache

from . import MINILM_FILES

DOCUMENT_TOKENS = 128
"""Word pieces of a code chunk the default model reads, its [CLS] and [SEP] markers included."""


@lru_cache(maxsize=1)
def _tokenizer():
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(MINILM_FILES / "tokenizer.json"))
    tokenizer.no_truncation()  # the shipped file cuts at 128 and pads: here every piece's place is wanted
    tokenizer.no_padding()
    return tokenizer


def first_tokens(text: str, tokens: int = DOCUMENT_TOKENS) -> str:
    """`text` up to the end of its word piece that the model reads last (of `tokens`, markers included); the text
    itself when the model reads all of it."""
    room = tokens - 2
    if len(text) <= room:  # a word piece is at least one character: nothing to cut
        return text
    pieces = _tokenizer().encode(text, add_special_tokens=False)
    if len(pieces.ids) <= room:
        return text
    return text[: pieces.offsets[room - 1][1]]
