"""Which commands write, and so carry a write id (core/write_ids.py). Standard library only: the thin client
imports it to decide whether to name the command's write before sending it."""

from __future__ import annotations

WRITE_COMMANDS = frozenset({"remember", "forget", "done", "confirm"})
AGENT_WRITES = frozenset({"init", "log", "commit", "roadmap", "branch", "merge", "abandon"})
"""`cortex agent OP` that add to the agent context or change a branch. `context`, `branches` and `export` only read
it; `switch` only sets the current branch and `import` adds only what is missing, so running either again after a
lost answer cannot store anything twice: they carry no id."""


def is_write(args) -> bool:
    handler = getattr(args, "handler", None)
    return handler in WRITE_COMMANDS or (handler == "agent" and getattr(args, "op", None) in AGENT_WRITES)
