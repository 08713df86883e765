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


_HASH = frozenset(".py .pyi .pyx .rb .sh .bash .zsh .pl .pm .r .jl .ex .exs .nim .cr .tcl .ps1".split())
_SLASHES = frozenset((".go .rs .js .jsx .mjs .cjs .ts .tsx .mts .cts .java .c .h .cc .cpp .cxx .hpp .hh .cs .kt .kts "
                      ".swift .scala .sc .php .dart .zig .sol .groovy .gradle .m .mm .proto .v .fs .fsx").split())
_DASHES = frozenset(".lua .hs .sql .elm .ada .adb .ads".split())


def signature_lines(text: str, start_line: int, symbols: list[str], path: str = "") -> dict[str, tuple[int, str]]:
    """Where each symbol of a chunk is defined (its line in the file) and its signature: the definition's first line,
    continued while its brackets are open, blanks collapsed, and each line's trailing comment left out (the lines
    are joined into one, where a comment would run to the end and hide the rest: `# type: ignore[override]` on the
    first line of a Python signature commented out its parameters). Comments are known by the file's language
    (`path`); in a language it does not know the lines are kept as they are."""
    marker, quotes = _comments(path)
    lines = [_uncommented(line, marker, quotes) for line in text.splitlines()]
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


def _comments(path: str) -> tuple[str, str]:
    """The line comment of the file's language, by its extension ("" when not known), and the characters that open
    a string in it (in Rust a single quote marks a lifetime, `&'a str`, and opens nothing)."""
    name = path.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    marker = "#" if suffix in _HASH else "//" if suffix in _SLASHES else "--" if suffix in _DASHES else ""
    return marker, '"`' if suffix == ".rs" else "\"'`"


def _uncommented(line: str, marker: str, quotes: str) -> str:
    """The line without its trailing comment: the first `marker` outside a string literal and what follows."""
    if not marker or marker not in line:
        return line
    quote = ""
    i = 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in quotes:
            quote = char
        elif line.startswith(marker, i):
            return line[:i].rstrip()
        i += 1
    return line
