"""What the MCP tools and the plain HTTP endpoints share: how a tool is run, and bad arguments as one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

Runner = Callable[[str, tuple, dict, str], Any]
"""Runs a tool by name with its arguments, in an MCP client's session (empty: none), on this process's engine or in
the resident server's."""


def one_line(error: ValidationError) -> str:
    """A pydantic validation error as one line naming each field, without echoing the rejected values."""
    parts = []
    for e in error.errors():
        where = ".".join(str(part) for part in e["loc"]) or "arguments"
        parts.append(f"{where}: {' '.join(e['msg'].split())}")
    return "; ".join(parts)
