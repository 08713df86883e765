"""The one vocabulary of ids: a key's string form is the graph's node name, read back in one place."""

import json

import pytest
from cortex_tui.app.output import plain
from cortex_tui.core.answers import Neighbour
from cortex_tui.core.graph.graph import Neighbourhood
from cortex_tui.core.keys import KINDS, Key


@pytest.mark.parametrize(("key", "text"), [
    (Key.memory("0123456789ab"), "mem:0123456789ab"),
    (Key("chunk", "c1"), "chunk:c1"),
    (Key.file("src/a:b.py"), "file:src/a:b.py"),
    (Key("symbol", "Router.match"), "sym:Router.match"),
    (Key("commit", "a" * 40), "commit:" + "a" * 40),
])
def test_every_kind_writes_the_graphs_node_name_and_reads_it_back(key, text):
    assert str(key) == text
    assert Key.parse(text) == key


def test_every_kind_has_a_string_form():
    assert {Key.parse(str(Key(kind, "x"))) for kind in KINDS} == {Key(kind, "x") for kind in KINDS}


@pytest.mark.parametrize("text", ["src/app.py", "0123456789ab", "memory:0123456789ab", "symbol:helper", "mem", ""])
def test_a_name_of_no_kind_is_not_a_key(text):
    """A bare path, id or sha is the graph's to resolve; `memory:` was selection's own prefix, never a node name."""
    assert Key.parse(text) is None


def test_keys_compare_by_kind_and_id_and_order_by_kind_then_id():
    assert Key.file("a.py") == Key("file", "a.py") and hash(Key.file("a.py")) == hash(Key("file", "a.py"))
    assert Key.file("a.py") != Key("symbol", "a.py")
    assert sorted([Key.memory("b"), Key.file("z"), Key.memory("a"), Key("chunk", "c")]) == [
        Key("chunk", "c"), Key.file("z"), Key.memory("a"), Key.memory("b")]


def test_json_answers_print_keys_in_their_string_form():
    """What `cortex graph --json` and the MCP tool print: node names as they always were."""
    n = Neighbour(Key.file("src/b.py"), "src/b.py", 1, "imports", Key.file("src/a.py"))
    found = Neighbourhood(Key.file("src/a.py"), "src/a.py", [n])
    shown = plain(found)
    assert shown == {"node": "file:src/a.py", "label": "src/a.py", "neighbours": [
        {"node": "file:src/b.py", "label": "src/b.py", "depth": 1, "via": "imports", "parent": "file:src/a.py"}]}
    assert json.loads(json.dumps(plain({"pinned": [Key.memory("m1")]}))) == {"pinned": ["mem:m1"]}

