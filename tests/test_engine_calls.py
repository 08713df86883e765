"""The dashboard's engine calls (`app/bridge/calls.py`) through a real resident server: every call of the protocol,
every request field set, answered as the same plain data an engine in this process gives."""

from __future__ import annotations

import inspect
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from cortex_tui.app.bridge.calls import CALLS, EngineCalls
from cortex_tui.app.bridge.local import EngineBridge
from cortex_tui.app.bridge.remote import RemoteBridge
from cortex_tui.app.link.remote import Remote
from cortex_tui.app.mcp.tools import TOOL_CALLS
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.keys import Key
from cortex_tui.core.records import Memory, MemoryDraft
from cortex_tui.core.requests import MapRequest, SearchFilters, SearchRequest, SelectRequest

from .conftest import commit_file


@pytest.fixture
def shop(repo):
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "shop/cart.py", "from .pricing import price_of\n\nclass Cart:\n    def total(self, items):\n"
                "        return sum(price_of(i) for i in items)\n", "Add cart")
    commit_file(repo, "tests/test_cart.py", "def test_total():\n    assert True\n", "Test the cart")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=True)
    engine.remember(MemoryDraft(text="Prices include tax; never add it twice.", kind="decision", tags=("money",),
                                files=("shop/pricing.py",), source_key="tax-rule"))
    (repo / "shop" / "cart.py").write_text("# a change in the work tree\n", encoding="utf-8")
    return repo


def _same(answer):
    """An answer without what differs from one run to the next: how long a search took, and when the memories in it
    were last read (reads record it, so the first of the two calls moves it for the second)."""
    from dataclasses import fields, is_dataclass

    def clean(value):
        if isinstance(value, Memory):
            return replace(value, accessed_at=value.created_at)
        if is_dataclass(value) and not isinstance(value, type):
            return replace(value, **{f.name: clean(getattr(value, f.name)) for f in fields(value) if f.init})
        if isinstance(value, (list, tuple)):
            return type(value)(clean(v) for v in value)
        return value

    answer = replace(answer, elapsed_ms=0.0) if hasattr(answer, "elapsed_ms") else answer
    return clean(answer)


def test_both_bridges_implement_the_one_protocol():
    assert CALLS == {name for name, member in vars(EngineCalls).items() if getattr(member, "__isabstractmethod__", 0)}
    for name in CALLS:  # the remote side forwards each call with the protocol's own signature, nothing left abstract
        assert inspect.signature(RemoteBridge.__dict__[name]) == inspect.signature(EngineCalls.__dict__[name]), name
    assert not RemoteBridge.__abstractmethods__ and not EngineBridge.__abstractmethods__


def test_every_call_and_request_crosses_the_server_as_plain_data(shop):
    remote = RemoteBridge(Remote.attach(shop, None, start=True))
    local = EngineBridge(Engine(shop))
    every_filter = SearchFilters(kinds=("decision",), tags=("money",), files=("shop/pricing.py",), branch="main",
                                 since="7d", memories_only=False, code_only=False, history=True)
    reads = {
        "open": [()],
        "warm_model": [()],
        "what": [()],
        "search": [(SearchRequest("tax twice", every_filter, limit=5, expand=True, llm_filter=True),),
                   (SearchRequest("kind:decision since:1d tax", SearchFilters(memories_only=True), limit=3),),
                   (SearchRequest("price of sku", SearchFilters(code_only=True)),)],
        "graph": [(Key.file("shop/pricing.py"),), (None,)],
        "timeline": [(False,), (True,)],
        "select": [(SelectRequest("change how tax is applied to prices", budget=3000, max_items=3,
                                  include_tests="yes", min_score=0.01, pins=frozenset({Key.file("shop/cart.py")}),
                                  excluded=frozenset({Key.file("tests/test_cart.py")}), fmt="xml", max_files=2,
                                  purpose="planner"),)],
        "changed_files": [()],
        "repo_map": [(MapRequest(400, ("shop/pricing.py",)),), (MapRequest(300),)],
    }
    for name, calls in reads.items():
        for args in calls:
            there, here = getattr(remote, name)(*args), getattr(local, name)(*args)
            assert _same(there) == _same(here), (name, args)
    found = remote.search(SearchRequest("tax twice", every_filter, limit=5))
    assert [h.memory.source_key for h in found.hits] == ["tax-rule"]
    selection = remote.select(reads["select"][0][0])
    assert selection.fmt == "xml" and any(i.path == "shop/cart.py" for i in selection.chosen)
    assert all(i.path != "tests/test_cart.py" for i in selection.chosen + selection.left_out)

    draft = MemoryDraft(text="Round prices half up.", kind="task", title="Rounding", tags=("money", "rounding"),
                        files=("shop/pricing.py",), symbols=("price_of",), source_key="rounding", scope="repo",
                        created_at=datetime(2024, 5, 1, tzinfo=UTC), task_state="open",
                        context="seen in review")
    made = remote.remember(draft)
    assert made.outcome == "created"
    assert (made.memory.title, made.memory.tags, made.memory.symbols, made.memory.context) == \
        ("Rounding", ["money", "rounding"], ["price_of"], "seen in review")
    revised = remote.revise(made.memory.id, replace(draft, text="Round prices half even."))
    assert revised.outcome == "new_version" and revised.memory.version == 2
    remote.set_task_state(revised.memory.id, "done")
    assert Engine(shop).get(revised.memory.id).task_state == "done"
    assert _same(remote.memory(revised.memory.id)) == _same(local.memory(revised.memory.id))
    remote.forget(revised.memory.id)
    restored = remote.restore(revised.memory)
    assert (restored.id, restored.status, restored.version) == (revised.memory.id, "active", 2)
    assert restored.text == "Round prices half even." and Engine(shop).get(revised.memory.id).status == "active"
    with pytest.raises(CortexError, match="is not forgotten"):
        remote.restore(revised.memory)
    decision = next(m for m in Engine(shop).list_memories() if m.kind == "decision")
    (shop / "shop/pricing.py").write_text("TAX = 0.25\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", encoding="utf-8")
    assert "shop/pricing.py changed" in remote.memory(decision.id).code_change.summary
    assert remote.confirm(decision.id).code_change is None and remote.memory(decision.id).code_change is None
    writes = {"remember", "revise", "set_task_state", "forget", "restore", "memory", "confirm"}
    assert set(reads) | writes == CALLS, "every call of the protocol is exercised here"


def test_the_server_runs_no_call_outside_the_protocols(shop):
    remote = Remote.attach(shop, None, start=True)
    for facade, method in (("bridge", "index"), ("bridge", "start_watcher"), ("bridge", "__init__"),
                           ("tools", "_path"), ("engine", "what")):
        with pytest.raises(CortexError, match="has no call"):
            remote.call(facade, method)
    assert "smart_search" in TOOL_CALLS and "_path" not in TOOL_CALLS
