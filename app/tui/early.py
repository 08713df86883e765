"""An attached dashboard's first calls, sent to the resident server before the dashboard is imported.

Importing Textual and the dashboard takes this process about a third of a second of CPU before it can ask anything;
the server, on another core, answers the first panes meanwhile. `EarlyBridge` is the attached bridge with those
answers on their way: git's timeline first (alone, so that nothing holds up the first results), then what, the
timeline with memories, the graph and the search at once, as the dashboard asks them once the timeline is in. Each
is answered once, to the first call that asks exactly it; any other call, a call asked again, and every call after a
write through this bridge, goes to the server as before.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..bridge.remote import RemoteBridge
from .session import pane_search

if TYPE_CHECKING:
    from ...core.answers import Neighbour, SearchResults, Timeline, WhatToKnow
    from ...core.keys import Key
    from ...core.requests import SearchRequest
    from ..link.messages import Reply
    from ..link.remote import Remote


class _Pending:
    """One call asked ahead: its reply once it came (or the error that stopped it), taken once."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: Reply | None = None
        self.error: BaseException | None = None


class EarlyBridge(RemoteBridge):
    """A `RemoteBridge` that asks the start-up's calls at once, for the dashboard session `session`."""

    def __init__(self, remote: Remote, session: str) -> None:
        super().__init__(remote)
        self.session = session  # the dashboard's (see Bridge.session)
        self._lock = threading.Lock()
        calls: dict[tuple[str, tuple], _Pending] = {("timeline", (False,)): _Pending()}
        for then in (("what", (session,)), ("timeline", (True,)), ("graph", (None, session)),
                     ("search", (pane_search("", session),))):
            calls[then] = _Pending()
        self._pending = calls
        """Asked and not taken yet (a taken one leaves; its thread keeps its own `_Pending`)."""
        threading.Thread(target=self._ask_ahead, args=(list(calls.items()),), name="cortex-early", daemon=True).start()

    def _ask_ahead(self, calls: list[tuple[tuple[str, tuple], _Pending]]) -> None:
        (first, pending), *then = calls
        self._ask(first, pending)
        # Each of the others on its own connection, as the dashboard's workers ask them: the server runs them side
        # by side.
        for key, each in then:
            threading.Thread(target=self._ask, args=(key, each), name="cortex-early", daemon=True).start()

    def _ask(self, key: tuple[str, tuple], pending: _Pending) -> None:
        try:
            pending.reply = self.remote.reply_in("", "bridge", key[0], key[1], {})
        except BaseException as exc:  # noqa: BLE001 - raised again in the call that takes it, as a call would raise
            pending.error = exc
        pending.done.set()

    def _early(self, name: str, *args: object) -> tuple[bool, Any]:
        """(True, the answer) for a call asked ahead and not taken yet; (False, None) otherwise."""
        with self._lock:
            pending = self._pending.pop((name, args), None)
        if pending is None:
            return False, None
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return True, self.remote.outcome(pending.reply)

    def _write(self, name: str, write_id: str, *args: object) -> Any:
        # An answer asked before this dashboard's own write would not show it.
        with self._lock:
            self._pending.clear()
        return super()._write(name, write_id, *args)

    def timeline(self, with_memories: bool = True) -> Timeline:
        found, answer = self._early("timeline", with_memories)
        return answer if found else super().timeline(with_memories)

    def what(self, session: str | None = None) -> WhatToKnow:
        found, answer = self._early("what", session)
        return answer if found else super().what(session)

    def graph(self, node: Key | None, session: str | None = None) -> tuple[Key, str, list[Neighbour]]:
        found, answer = self._early("graph", node, session)
        return answer if found else super().graph(node, session)

    def search(self, request: SearchRequest) -> SearchResults:
        found, answer = self._early("search", request)
        return answer if found else super().search(request)
