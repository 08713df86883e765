"""Signature lines of definitions: where in a chunk each symbol it defines starts, and its first line(s).

The index stores each chunk's symbols, not their lines: the line is found again in the chunk's text, preferring a
line that reads as a definition (`def`, `class`, `func`, `fn` ...) over one that merely names the symbol (a Go doc
comment starts with the function's name; a decorator `@name.setter` precedes the property it sets).
"""

from __future__ import annotations

import re

SIGNATURE_CHARS = 160
_DEF_WORDS = re.compile(
    r"^\s*(?:@|export\s|pub(?:\(\w+\))?\s|async\s|static\s|public\s|private\s|protected\s|abstract\s|default\s)*"
    r"(?:def|class|func|fn|function\*?|struct|type|interface|impl|const|let|var|enum|trait|mod|module|macro_rules!)\b")
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|\"\"\"|''')")


def signature_lines(text: str, start_line: int, symbols: list[str]) -> dict[str, tuple[int, str]]:
    """Where each symbol of a chunk is defined (its line in the file) and its signature: the definition's first line,
    continued while its brackets are open, blanks collapsed."""
    lines = text.splitlines()
    found: dict[str, tuple[int, str]] = {}
    cursor = 0
    for symbol in symbols:
        short = symbol.rsplit(".", 1)[-1]
        word = re.compile(rf"(?<![\w$]){re.escape(short)}(?![\w$])")
        at = _find(lines, word, cursor)
        if at is None:
            at = _find(lines, word, 0)
        if at is None:
            found[symbol] = (start_line, symbol)
            continue
        cursor = at + 1
        found[symbol] = (start_line + at, _signature(lines, at))
    return found


def _find(lines: list[str], word: re.Pattern, start: int) -> int | None:
    """The first line from `start` naming the word in a definition (`def`, `func`, `class` ...), else the first
    non-comment line naming it."""
    fallback = None
    for i in range(start, len(lines)):
        line = lines[i]
        if not word.search(line) or _COMMENT.match(line):
            continue
        if _DEF_WORDS.match(line) and not line.lstrip().startswith("@"):
            return i
        if fallback is None:
            fallback = i
    return fallback


def _signature(lines: list[str], at: int) -> str:
    parts, depth = [], 0
    for line in lines[at:at + 6]:
        parts.append(line.strip())
        depth += sum(line.count(c) for c in "([") - sum(line.count(c) for c in ")]")
        if depth <= 0:
            break
    text = _joined([" ".join(part.split()) for part in parts])
    return text if len(text) <= SIGNATURE_CHARS else text[:SIGNATURE_CHARS - 1] + "…"


def _joined(parts: list[str]) -> str:
    """A definition's lines as one: no space inside the brackets a line break opened or closed, and no trailing comma
    before a closing one (`def f(\n    self, x,\n) -> int:` reads `def f(self, x) -> int:`)."""
    text = ""
    for part in parts:
        if not part:
            continue
        if part[0] in ")]":
            text = text.rstrip().rstrip(",") + part
        elif not text or text[-1] in "([":
            text += part
        else:
            text += " " + part
    return text
