"""Session scope through the resident server as users and agents run it: each session's session memories are its
own (search, what, list, context, MCP tools), `all` shows every session's, retention's cap holds per session."""

from __future__ import annotations

import json

import pytest

from .test_mcp import call, server

FLAKY = "scratch: the flaky checkout test fails when the cart total rounds half up"
SLOW = "scratch: the slow checkout test waits on the cart total recalculation"


def _note(cli, text: str, *flags: str) -> str:
    return cli.json("remember", text, "--scope", "session", *flags)["memory"]["id"]


def _what(answer: dict) -> set[str]:
    """Every memory a what-should-I-know answer shows, whichever section holds it."""
    sections = ("branch_memories", "file_memories", "open_tasks", "recent_memories")
    return {m["id"] for section in sections for m in answer[section]}


def _listed(cli, *flags: str) -> set[str]:
    return {m["id"] for m in cli.json("list", "--scope", "session", *flags)}


def test_each_cli_session_sees_its_own_session_memories_and_all_sees_both(cli, monkeypatch, tmp_path):
    mine = _note(cli, FLAKY, "--session", "alpha", "--files", "src/app.py")
    monkeypatch.setenv("CORTEX_SESSION", "beta")  # the environment names the session when no --session is given
    theirs = _note(cli, SLOW, "--files", "src/app.py")
    kept = cli.json("remember", "checkout totals are rounded half to even", "--kind", "decision")["memory"]["id"]
    assert cli.json("show", theirs)["session"] == "beta"
    monkeypatch.delenv("CORTEX_SESSION")
    assert _listed(cli, "--session", "alpha") == {mine}
    assert _listed(cli, "--session", "beta") == {theirs}
    assert _listed(cli, "--session", "all") == {mine, theirs}
    assert _listed(cli) == set()  # a read in no session shows no session's notes
    query = "checkout test cart total"
    hits = {h["id"] for h in cli.json("search", query, "--memories-only", "--session", "alpha")["hits"]}
    assert mine in hits and theirs not in hits and kept in hits
    hits = {h["id"] for h in cli.json("search", query, "--memories-only", "--session", "all")["hits"]}
    assert {mine, theirs, kept} <= hits
    recent = _what(cli.json("what", "--session", "beta"))
    assert theirs in recent and mine not in recent and kept in recent
    chosen = cli.json("select", "fix the flaky checkout test of the cart total", "--session", "beta")["chosen"]
    ids = {i["id"] for i in chosen if i["kind"] == "memory"}
    assert mine not in ids and theirs in ids
    graph = {n["node"] for n in cli.json("graph", "file:src/app.py", "--session", "alpha")["neighbours"]}
    assert f"mem:{mine}" in graph and f"mem:{theirs}" not in graph
    # Another session writing the same words keeps a note of its own (the first session's is not its to share).
    again = cli.json("remember", FLAKY, "--scope", "session", "--session", "beta")
    assert again["outcome"] == "created" and again["memory"]["id"] != mine
    # An export holds every session's notes, each with its session, and restores them as they were.
    exported = tmp_path / "all.jsonl"
    assert cli("export", "--output", str(exported))[0] == 0
    sessions = {r["id"]: r.get("session") for r in map(json.loads, exported.read_text().splitlines())}
    assert sessions[mine] == "alpha" and sessions[theirs] == "beta" and sessions[kept] is None
    assert cli("forget", mine, "--purge")[0] == 0
    assert cli("import", str(exported))[0] == 0
    assert cli.json("show", mine)["session"] == "alpha"
    code, _, err = cli("remember", "a note with no session", "--scope", "session")
    assert code == 1 and "needs its session" in err and len(err.strip().splitlines()) == 1


def test_retention_caps_each_session_on_its_own(cli, monkeypatch):
    alpha = [_note(cli, f"scratch note {n} of the first session about module {chr(97 + n)}", "--session", "alpha")
             for n in range(3)]
    beta = [_note(cli, f"scratch note {n} of the second session about parser {chr(97 + n)}", "--session", "beta")
            for n in range(2)]
    cli.json("show", alpha[0])
    assert cli.json("gc", "--dry-run")["would_drop"] == []  # within the default cap; writes the access times
    monkeypatch.setenv("CORTEX_RETENTION__SESSION", "2")
    plan = {m["id"] for m in cli.json("gc", "--dry-run")["would_drop"]}
    assert plan == {alpha[1]}  # alpha holds three (one over), beta two (within its own cap of two)
    assert {m["id"] for m in cli.json("gc")["dropped"]} == plan
    assert _listed(cli, "--session", "all") == {alpha[0], alpha[2], *beta}


@pytest.mark.parametrize("served", [True, False], ids=["served", "in-process"])
async def test_two_mcp_sessions_each_see_their_own_session_memories(repo, cli, served):
    async with server(repo, "--no-watch", served=served) as one, server(repo, "--no-watch", served=served) as two:
        first = (await call(one, "remember", text=FLAKY, scope="session"))["memory"]
        second = (await call(two, "remember", text=SLOW, scope="session"))["memory"]
        assert first["session"] and second["session"] and first["session"] != second["session"]
        for client, own, other in ((one, first, second), (two, second, first)):
            listed = {m["id"] for m in (await call(client, "memory_list", scope="session"))["memories"]}
            assert listed == {own["id"]}
            found = await call(client, "smart_search", query="checkout test cart total",
                               filters={"memories_only": True})
            assert {h["id"] for h in found["hits"]} == {own["id"]}
            recent = _what(await call(client, "what_should_i_know"))
            assert own["id"] in recent and other["id"] not in recent
            everyone = await call(client, "memory_list", scope="session", session="all")
            assert {m["id"] for m in everyone["memories"]} == {first["id"], second["id"]}
            found = await call(client, "smart_search", query="checkout test cart total",
                               filters={"memories_only": True, "session": "all"})
            assert {h["id"] for h in found["hits"]} == {first["id"], second["id"]}
    # The CLI names either session, or all of them.
    assert _listed(cli, "--session", first["session"]) == {first["id"]}
    assert _listed(cli, "--session", "all") == {first["id"], second["id"]}
