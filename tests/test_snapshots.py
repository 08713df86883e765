"""Snapshots of the real dashboard (pytest-textual-snapshot) in both cortex themes, on a repository whose commits,
clock and memories are fixed so every run paints the same screen. Update with `pytest --snapshot-update`."""

import pytest
from cortex_tui.app.bridge.local import EngineBridge
from cortex_tui.app.tui.app import CortexApp
from cortex_tui.app.tui.showcase import settle
from cortex_tui.core.engine import Engine

from .conftest import commit_file


@pytest.fixture
def still_repo(empty_repo, monkeypatch):
    """Commits with fixed dates (so fixed ids and ages) and a working change; no memories, whose ids are random."""
    for day, (path, text, message) in enumerate([
        ("shop/pricing.py", "TAX = 0.2\n\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing with tax"),
        ("shop/cart.py", "from .pricing import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
                         "        return sum(price_of(i) for i in items)\n", "Add a cart that totals prices"),
        ("tests/test_cart.py", "from shop.cart import Cart\n\n\ndef test_empty():\n    assert Cart().total([]) == 0\n",
         "Test the empty cart"),
    ], 1):
        stamp = f"2026-03-0{day}T12:00:00+00:00"
        monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
        monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)
        commit_file(empty_repo, path, text, message)
    (empty_repo / "shop" / "cart.py").write_text(
        "from .pricing import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
        "        return round(sum(price_of(i) for i in items), 2)\n")
    monkeypatch.setenv("CORTEX_FIXED_NOW", "2026-03-05T12:00:00+00:00")
    return empty_repo


SIZES = {100: 40, 140: 45, 180: 50, 240: 60}


@pytest.mark.parametrize("width", sorted(SIZES))
def test_main_screen(still_repo, snap_compare, width):
    """Below 110 columns one pane at a time (tabs); from 140 on all five, the timeline and the context budget
    sharing the bottom row so subjects, paths with line ranges and the "why" column fit."""
    app = CortexApp(EngineBridge(Engine(still_repo)), task="cart total rounds prices", theme="cortex-dark",
                    remember_theme=False)

    async def loaded(pilot):
        await settle(pilot)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(width, SIZES[width]), run_before=loaded)


def test_main_screen_light(still_repo, snap_compare):
    app = CortexApp(EngineBridge(Engine(still_repo)), task="cart total rounds prices", theme="cortex-light",
                    remember_theme=False)

    async def loaded(pilot):
        await settle(pilot)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(180, 50), run_before=loaded)
