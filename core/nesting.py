"""Structured input (JSON, JSONL, YAML) with a depth limit: what `cortex import` and `cortex agent import` read.

Python's parsers recurse once per level of nesting, so a file of 100,000 `[` stopped an import with "RecursionError:
maximum recursion depth exceeded" (and a recursion error raised deep inside a parser can leave it in a state nobody
tested). Records cortex reads are a few levels deep (a record, its anchors, their entries), so a limit far above
that and far below the interpreter's is refused in plain words, both when the parser gives up and when it parses
something deeper than the limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import CortexError

MAX_NESTING = 64
"""Arrays and objects inside each other, at most: an export record is 4 deep."""

T = TypeVar("T")


def nesting_depth(value: object) -> int:
    """How many lists and dicts are inside each other in a parsed value (0 for a string or a number). A loop with its
    own stack: the value may be as deep as the parser allowed."""
    if not isinstance(value, list | dict):
        return 0
    deepest = 0
    reached: dict[int, int] = {}
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        # YAML aliases share one list among many parents (and can make a cycle): each is walked again only when
        # reached deeper than before, so a "billion laughs" document costs its size, not its expansion.
        if reached.get(id(item), 0) >= depth:
            continue
        reached[id(item)] = depth
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            break  # deeper than the limit is all the caller needs to know
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, list | dict))
    return deepest


def _too_deep() -> CortexError:
    return CortexError(f"arrays and objects nested more than {MAX_NESTING} deep (the limit)")


def parsed_within_limit(parse: Callable[[], T]) -> T:
    """What `parse` returns, or a one-line error when it is nested deeper than MAX_NESTING."""
    try:
        value = parse()
    except RecursionError:
        raise _too_deep() from None
    if nesting_depth(value) > MAX_NESTING:
        raise _too_deep()
    return value


def load_json(text: str | bytes) -> object:
    """`json.loads` with the depth limit; its JSONDecodeError passes through for the caller to place."""
    return parsed_within_limit(lambda: json.loads(text))


def read_yaml(path: Path, missing: str = "") -> object:
    """A YAML file's data, nested within the parsers' depth limit; any failure is one line naming the file
    (`missing`: what its absence means, said after "not found")."""
    import yaml

    try:
        return parsed_within_limit(lambda: yaml.safe_load(path.read_text(encoding="utf-8")))
    except CortexError as exc:
        raise CortexError(f"{path}: {exc}") from None
    except FileNotFoundError:
        raise CortexError(f"{path} not found" + (f": {missing}" if missing else "")) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CortexError(f"{path} is not readable YAML: {str(exc).splitlines()[0]}") from None
