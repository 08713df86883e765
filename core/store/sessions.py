"""Session scope: which session memories a read shows.

A memory of scope `session` belongs to the session that wrote it (an agent's session, one dashboard run, a CLI user's
`--session ID` or `CORTEX_SESSION`). A read in a session shows memories of every other scope, that session's own
session memories, and session memories written before sessions had ids; it hides other sessions' session memories.
A read in no session hides every session's; `all` shows them all.
"""

from __future__ import annotations

from ..errors import CortexError
from .sql import quote

ALL_SESSIONS = "all"
"""The session a read names to see every session's memories."""

MAX_SESSION_CHARS = 200


def check_session(session: str) -> str:
    """A session id as written with a memory: not empty, one line, not `all` (which names every session)."""
    if not session.strip() or session == ALL_SESSIONS or len(session) > MAX_SESSION_CHARS or not session.isprintable():
        raise CortexError(f"a session id is 1-{MAX_SESSION_CHARS} printable characters, not {ALL_SESSIONS!r} "
                          f"(got {session[:40]!r})")
    return session


def visible_where(session: str | None) -> str | None:
    """The filter a read of memories adds for `session` (None: the read is in no session); None for `all`."""
    if session == ALL_SESSIONS:
        return None
    own = f" OR session = {quote(session)}" if session else ""
    return f"(scope <> 'session' OR session IS NULL OR session = ''{own})"


def narrowed(where: str | None, session: str | None) -> str | None:
    """`where` AND the session rule (either may be None)."""
    rule = visible_where(session)
    if where and rule:
        return f"({where}) AND {rule}"
    return where or rule
