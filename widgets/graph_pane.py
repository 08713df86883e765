"""Pane 3: the memory graph around the selected node, as a navigable tree; Enter re-centres on a neighbour."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Label, Tree

from ..core.answers import Neighbour
from ..core.keys import Key, KeyKind
from .format import clip, shorten_path, styled
from .pane import Pane, Target

_ICONS: dict[KeyKind, str] = {"memory": "◆", "file": "▤", "symbol": "ƒ", "commit": "●"}
NO_NEIGHBOURS: dict[KeyKind, str] = {
    "memory": "give it files or symbols (e), or name its id in another memory",
    "file": "index it, commit it, or name it in a memory",
    "symbol": "index the file that defines it, or name it in a memory",
    "commit": "index the files it touched, or remember something on it",
}
"""What would give a centre neighbours, by its kind: said in one sentence when it has none (the pane showed only the
centre, as if still loading)."""
LEAF_INDENT = 12
"""Cells before a neighbour's label: two tree guides, its icon, the scrollbar."""


def _label(node: Key | None, label: str, width: int) -> str:
    """A file's path gives way in the middle (two files of one folder stay apart); other labels end in `…`."""
    width = max(width, 12)
    return shorten_path(label, width) if node is not None and node.kind == "file" else clip(label, width)


class GraphPane(Pane):
    """Neighbours grouped by edge type under the centre node."""

    DEFAULT_CSS = """
    GraphPane Tree { height: 1fr; background: $surface; text-wrap: nowrap; text-overflow: ellipsis; }
    GraphPane .hint { color: $text-muted; padding: 0 1; width: 100%; display: none; }
    """
    PANE_TITLE = "3 Memory graph"
    LIST = "graph-tree"

    @dataclass
    class Recentered(Message):
        """A neighbour was chosen as the new centre."""

        pane: GraphPane
        key: Key

        @property
        def control(self) -> GraphPane:
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.labels: dict[Key, str] = {}
        """Each node shown: its label."""
        self.shown: tuple[Key | None, str, list[Neighbour]] | None = None
        self._width = 0

    def compose(self) -> ComposeResult:
        yield Tree[Key]("graph", id="graph-tree")
        yield Label("", id="graph-hint", classes="hint", markup=False)

    def target(self) -> Target | None:
        node = self._tree().cursor_node
        if node is None or node.data is None:
            return None  # a group heading (an edge type)
        return Target(node.data, self.labels.get(node.data, str(node.data)))

    def _tree(self) -> Tree[Key]:
        # The tree's nodes hold the graph's keys (group headings hold none).
        return self.query_one("#graph-tree", Tree)

    @on(Tree.NodeHighlighted, "#graph-tree")
    def _highlighted(self) -> None:
        self.targets_changed()

    def on_resize(self, event: events.Resize) -> None:
        """Labels fit the new width; the cursor stays on its line."""
        if event.size.width != self._width and self.shown is not None:
            cursor = self._tree().cursor_line
            self.show(*self.shown)
            self.call_after_refresh(self._tree().move_cursor_to_line, cursor)

    def show(self, centre: Key | None, label: str, found: list[Neighbour]) -> None:
        """`centre` None: the graph could not be read, `label` says why."""
        self.shown = (centre, label, found)
        self._width = self.size.width
        width = self.content_size.width
        tree = self._tree()
        tree.clear()
        icon = _ICONS[centre.kind] if centre is not None else ""
        tree.root.set_label(styled(f"{icon} ", _label(centre, label, width - 4)))
        tree.root.data = centre
        self.labels = ({centre: label} if centre is not None else {}) | {n.node: n.label for n in found}
        groups: dict[str, list[Neighbour]] = {}
        for n in found:
            groups.setdefault(n.via, []).append(n)
        for n_group, (via, members) in enumerate(groups.items()):
            # A few groups open; of many, the first (it opened with every group closed: nothing to see, and Space,
            # which opens one, was in no help).
            branch = tree.root.add(styled((clip(via, 60), "dim"), f" ({len(members)})"),
                                   expand=len(groups) <= 4 or n_group == 0)
            for n in members:
                branch.add_leaf(styled(f"{_ICONS.get(n.node.kind, '')} ",
                                       _label(n.node, n.label, width - LEAF_INDENT)), data=n.node)
        tree.root.expand()
        # A sentence under the tree, wrapped: a line in it was cut to the pane's 30-40 cells, before what it says.
        hint = self.query_one("#graph-hint", Label)
        hint.update(f"No neighbours yet: {NO_NEIGHBOURS[centre.kind]}." if centre is not None and not found else "")
        hint.display = centre is not None and not found

    @on(Tree.NodeSelected, "#graph-tree")
    def _chosen(self, event: Tree.NodeSelected) -> None:
        node = event.node.data
        if node is not None and event.node is not self._tree().root:
            self.post_message(self.Recentered(self, node))
