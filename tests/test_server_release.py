"""A quiet resident server lets go of what its engines rebuild on demand after a long quiet spell, not a short one.

In-process: the server object's own quiet-time logic and a real engine over a real indexed repository; the time
that passed is set on the server's clock rather than waited for.
"""

from __future__ import annotations

import io
import time

from cortex_tui.app.link import protocol
from cortex_tui.app.server import serve
from cortex_tui.core.config import load_settings
from cortex_tui.core.requests import MapRequest, SelectRequest


def _work(server: serve.Server, engine) -> None:
    """A map and a selection, run as the server runs commands (its worker, its idle clock)."""
    server._submit(engine.repo_map, MapRequest(focus=("cart",))).result()
    server._submit(engine.select_context, SelectRequest("add a fuel surcharge to the cart total")).result()


def _quiet_for(server: serve.Server, seconds: float) -> None:
    server._last_activity = time.monotonic() - seconds
    server._trim_when_quiet()


def test_a_quiet_server_releases_its_engines_caches_after_a_long_quiet_spell(shop):
    server = serve.Server(str(shop), "", protocol.server_paths(str(shop), ""), None, io.StringIO())
    engine = server._engines(shop, None, load_settings())
    _work(server, engine)
    built = (engine._symbol_graph.builds, engine._import_graph.builds)

    _quiet_for(server, serve.TRIM_AFTER_SECONDS + 1)  # trimmed, but a person working keeps the graphs
    _work(server, engine)
    assert (engine._symbol_graph.builds, engine._import_graph.builds) == built

    _quiet_for(server, serve.RELEASE_AFTER_SECONDS + 1)
    assert engine._symbol_graph._cached is None and engine._import_graph._cached is None
    assert engine._defined_names._cached is None
    shown = server._submit(engine.repo_map, MapRequest(focus=("cart",))).result()
    assert "Cart" in shown.text, "the next map builds its graph again and shows the same"
    assert engine._symbol_graph.builds == built[0] + 1
    server._worker.shutdown()
    server._engines.close()
