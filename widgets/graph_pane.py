"""Pane 3: the memory graph around the selected node, as a navigable tree; Enter re-centres on a neighbour."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Tree

from ..core.answers import Neighbour
from .format import clip, styled
from .pane import Pane, Target

_ICONS = {"mem": "◆", "file": "▤", "sym": "ƒ", "commit": "●"}


class GraphPane(Pane):
    """Neighbours grouped by edge type under the centre node."""

    DEFAULT_CSS = """
    GraphPane Tree { height: 1fr; background: $surface; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    PANE_TITLE = "3 Memory graph"
    LIST = "graph-tree"

    @dataclass
    class Recentered(Message):
        """A neighbour was chosen as the new centre."""

        pane: "GraphPane"
        node: str

        @property
        def control(self) -> "GraphPane":
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.labels: dict[str, str] = {}
        """Each node shown, by name: its label."""

    def compose(self) -> ComposeResult:
        yield Tree("graph", id="graph-tree")

    def target(self) -> Target | None:
        node = self.query_one(Tree).cursor_node
        if node is None or not isinstance(node.data, str):
            return None  # a group heading (an edge type)
        return Target(node.data, self.labels.get(node.data, node.data))

    @on(Tree.NodeHighlighted, "#graph-tree")
    def _highlighted(self) -> None:
        self.targets_changed()

    def show(self, centre: str, label: str, found: list[Neighbour]) -> None:
        tree = self.query_one(Tree)
        tree.clear()
        tree.root.set_label(styled(f"{_ICONS.get(centre.split(':', 1)[0], '')} ", clip(label, 200)))
        tree.root.data = centre
        self.labels = {centre: label} | {n.node: n.label for n in found}
        groups: dict[str, list[Neighbour]] = {}
        for n in found:
            groups.setdefault(n.via, []).append(n)
        for via, members in groups.items():
            branch = tree.root.add(styled((clip(via, 60), "dim"), f" ({len(members)})"), expand=len(groups) <= 4)
            for n in members:
                branch.add_leaf(styled(f"{_ICONS.get(n.node.split(':', 1)[0], '')} ", clip(n.label, 200)), data=n.node)
        tree.root.expand()

    @on(Tree.NodeSelected, "#graph-tree")
    def _chosen(self, event: Tree.NodeSelected) -> None:
        node = event.node.data
        if isinstance(node, str) and event.node is not self.query_one(Tree).root:
            self.post_message(self.Recentered(self, node))
