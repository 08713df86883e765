"""Size limits on text a caller hands in, checked before anything else looks at it.

Every other check on such text costs time in proportion to its size (the secret scan, parsing, embedding): a 20 MB
memory took two minutes and 1.6 GB of memory to be told it was over a 1 MB limit, and through the resident server
it starved every other client. So the size is checked first, at every entrance (a memory, an import record, an
agent-log field, an MCP call), and costs nothing for text that is clearly under or over the limit.
"""

from __future__ import annotations

from .errors import CortexError

MAX_TEXT_BYTES = 1_000_000
"""The default size limit of a memory's text (the `max_text_bytes` setting)."""


def utf8_size(text: str) -> int:
    """Bytes the text takes as UTF-8 (lone surrogates from undecodable input count as the 3 bytes they would take)."""
    return len(text.encode("utf-8", "surrogatepass"))


def over_limit(text: str, max_bytes: int) -> int | None:
    """The text's size in bytes when it is over `max_bytes`, else None. A character takes at most 4 bytes, so a
    short text is passed without encoding it (encoding 20 MB takes about 20 ms)."""
    if len(text) * 4 <= max_bytes:
        return None
    size = utf8_size(text)
    return size if size > max_bytes else None


def check_sizes(max_bytes: int, what: str = "", **named: str | None) -> None:
    """Raise a one-line error naming the first field over `max_bytes`: `check_sizes(limit, "the step's",
    observation=text)` says "the step's observation is 20,971,520 bytes; the limit is 1,000,000"."""
    for name, value in named.items():
        size = over_limit(value or "", max_bytes)
        if size is not None:
            label = f"{what} {name.replace('_', ' ')}".strip()
            raise CortexError(f"{label} is {size:,} bytes; the limit is {max_bytes:,}")
