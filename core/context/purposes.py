"""Who the context is for, and the sections it is laid out in for them.

The same selection reads differently for different readers: an assistant about to edit wants the code first, a
planner the decisions and constraints that bound the plan, a researcher every source with where it came from, a
writer the prose (notes, decisions, docs) before the code. `general` (memories, then files, each most relevant
first) is the default.
Only the order and the section headings change: every item is still verbatim, and selection counts the headings in
the budget (the document is rendered per purpose).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CortexError
from ..records import Memory
from ..search.roles import path_role
from .items import Item
from .purpose_names import PURPOSES


@dataclass(frozen=True)
class Section:
    """A heading (empty: none is rendered) and its items in reading order."""

    name: str
    items: list[Item]


def check_purpose(purpose: str) -> None:
    if purpose not in PURPOSES:
        raise CortexError(f"unknown purpose {purpose!r}; choose one of {', '.join(PURPOSES)}")


def sections(items: list[Item], purpose: str) -> list[Section]:
    """The items laid out for `purpose`; empty sections are left out."""
    check_purpose(purpose)
    # Most relevant first: a reader (or an agent that truncates) meets what matters most before the rest.
    memories = sorted((i for i in items if i.kind == "memory"), key=lambda i: (-i.value, i.key))
    code = sorted((i for i in items if i.kind != "memory"), key=lambda i: (-i.value, i.path))
    layout = _LAYOUTS[purpose](memories, code)
    return [Section(name, found) for name, found in layout if found]


def memory_of(item: Item) -> Memory:
    assert item.memory is not None, "an item of kind memory carries its memory"
    return item.memory


def _of_kinds(memories: list[Item], *kinds: str) -> list[Item]:
    return [i for i in memories if memory_of(i).kind in kinds]


def _general(memories, code):
    return [("", memories + code)]


def _assistant(memories, code):
    return [("Code", code), ("Notes and decisions", memories)]


def _planner(memories, code):
    return [("Decisions", _of_kinds(memories, "decision")),
            ("Constraints and facts", _of_kinds(memories, "fact")),
            ("Open tasks", _of_kinds(memories, "task")),
            ("Notes", _of_kinds(memories, "note", "observation", "link", "agent")),
            ("Code", code)]


def _research(memories, code):
    # Links first: they are the sources outside the repository. The document lists every item's provenance under
    # "Sources" and numbers the items so the list and the material cite each other.
    return [("Material", _of_kinds(memories, "link") + [i for i in memories if memory_of(i).kind != "link"] + code)]


def _drafting(memories, code):
    # Prose first, newest memory first: what was decided and noted last is what a draft must say.
    docs = [i for i in code if path_role(i.path, i.is_test) == "docs"]
    newest = sorted(memories, key=lambda i: (-memory_of(i).created_at.timestamp(), i.key))
    return [("Notes and decisions", newest), ("Documentation", docs),
            ("Code", [i for i in code if i not in docs])]


_LAYOUTS: dict[str, Callable[[list[Item], list[Item]], list[tuple[str, list[Item]]]]] = {
    "general": _general, "assistant": _assistant, "planner": _planner, "research": _research, "drafting": _drafting,
}
