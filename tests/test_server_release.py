"""A quiet resident server lets go of what its engines rebuild on demand after a long quiet spell, not a short one.

In-process: the server object's own quiet-time logic and a real engine over a real indexed repository; the time
that passed is set on the server's clock rather than waited for.
"""

from __future__ import annotations

import io
import time

import pytest
from cortex_tui.app.link import protocol
from cortex_tui.app.server import serve
from cortex_tui.core.config import load_settings
from cortex_tui.core.requests import MapRequest, SearchRequest, SelectRequest


def _work(server: serve.Server, engine) -> None:
    """A map, a selection and a search for a name typed with a slip (`prise_of`: search then reads the defined
    names), run as the server runs commands (its worker, its idle clock)."""
    server._submit(engine.repo_map, MapRequest(focus=("cart",))).result()
    server._submit(engine.select_context, SelectRequest("add a fuel surcharge to the cart total")).result()
    server._submit(engine.smart_search, SearchRequest("prise_of")).result()


def _built(engine) -> tuple[int, int, int]:
    caches = engine.workspace.caches
    return caches.symbol_graph.builds, caches.import_graph.builds, caches.defined_names.reads


def _quiet_for(server: serve.Server, seconds: float) -> None:
    server._last_activity = server._last_work = time.monotonic() - seconds
    server._trim_when_quiet()


@pytest.fixture
def server(shop):
    server = serve.Server(str(shop), "", protocol.server_paths(str(shop), ""), None, io.StringIO())
    try:
        yield server
    finally:
        server._worker.shutdown()
        server._engines.close()


def test_a_quiet_server_releases_its_engines_caches_and_model_after_a_long_quiet_spell(server, shop):
    engine = server._engines(shop, None, load_settings())
    _work(server, engine)
    built = _built(engine)
    assert built[2] >= 1, "the slip made search read the defined names"

    _quiet_for(server, serve.TRIM_AFTER_SECONDS + 1)  # trimmed, but a person working keeps what was built
    _work(server, engine)
    assert _built(engine) == built

    question = SearchRequest("where is the price of a cart computed")
    other = "which function adds up the cart"
    vector = engine.embedder.embed_uncached([other])
    before = [(h.id, round(h.score.total, 6)) for h in server._submit(engine.smart_search, question).result().hits]
    assert engine.embedder._model is not None

    _quiet_for(server, serve.RELEASE_AFTER_SECONDS + 1)
    assert engine.embedder._model is None, "the model let go too"
    after = [(h.id, round(h.score.total, 6)) for h in server._submit(engine.smart_search, question).result().hits]
    assert after == before, "the same answer (the question's vector was kept)"
    server._submit(engine.smart_search, SearchRequest(other)).result()
    assert engine.embedder._model is not None, "a new question loads the model again"
    assert (engine.embedder.embed_uncached([other]) == vector).all(), "which computes as before"
    _work(server, engine)
    assert _built(engine) == (built[0] + 1, built[1] + 1, built[2] + 1), "each built again once"
    shown = server._submit(engine.repo_map, MapRequest(focus=("cart",))).result()
    assert "Cart" in shown.text, "the map after the release shows the same"


def test_an_index_pass_after_the_release_is_followed_by_another(server, shop):
    """A watcher's pass after a save embeds its chunks (loading the model again) with no command run: two quiet
    minutes after it, the model goes again."""
    engine = server._engines(shop, None, load_settings())
    server._submit(engine.smart_search, SearchRequest("where is the price of a cart computed")).result()
    _quiet_for(server, serve.RELEASE_AFTER_SECONDS + 1)
    assert engine.embedder._model is None
    engine.embedder.embed_uncached(["def surcharge(cart): ..."])  # what the pass embeds, off the server's worker
    server._hosted._publish("update", None)  # the pass's event, as the watcher publishes it
    server._trim_when_quiet()
    assert engine.embedder._model is not None, "just after the pass: kept"
    _quiet_for(server, serve.RELEASE_AFTER_SECONDS + 1)
    assert engine.embedder._model is None, "two quiet minutes after it: let go again"
