"""Retention for every scope and kind: a cap per scope and kind, an age past which an unread memory goes, the
least recently used out first, `pinned` exempt, and `stats` saying what was forgotten and when. Through the
resident server by default (each command's CORTEX_RETENTION__* settings are its own)."""

from __future__ import annotations

import time

OBSERVATIONS = ("the retry loop gives up after five attempts", "the cache expires entries after an hour",
                "the parser rejects tabs in indentation")
DECISIONS = ("use exponential backoff for the uploader", "keep the schema version in the meta table",
             "ship the model files inside the wheel")


def _remember(cli, text: str, *flags: str) -> str:
    return cli.json("remember", text, *flags)["memory"]["id"]


def _active(cli, *flags: str) -> set[str]:
    return {m["id"] for m in cli.json("list", *flags)}


def test_a_cap_for_one_kind_of_a_scope_leaves_the_other_kinds_alone(cli, monkeypatch):
    decisions = [_remember(cli, text, "--kind", "decision") for text in DECISIONS]
    monkeypatch.setenv("CORTEX_RETENTION__KINDS", '{"repo": {"observation": 2}}')
    first, second = (_remember(cli, text, "--kind", "observation") for text in OBSERVATIONS[:2])
    cli.json("show", first)  # read: the more recently used of the two
    assert cli.json("stats")["stores"][0]["pruned"] == 0
    third = _remember(cli, OBSERVATIONS[2], "--kind", "observation")
    # The remember itself applied the cap: the least recently used observation went, every decision stayed.
    assert _active(cli) == {*decisions, first, third}
    assert {m["id"]: m["status"] for m in cli.json("list", "--status", "deleted")} == {second: "deleted"}
    stats = cli.json("stats")["stores"][0]
    assert stats["pruned"] == 1 and stats["last_pruned"]["count"] == 1
    assert "retention: 1 forgotten in all; last 1 at" in cli("stats")[1]


def test_a_global_cap_prunes_the_users_store(cli, monkeypatch):
    monkeypatch.setenv("CORTEX_RETENTION__GLOBAL", "1")
    older = _remember(cli, "prefer ripgrep over grep in scripts", "--scope", "global", "--kind", "note")
    newer = _remember(cli, "the laptop's clock drifts a minute a week", "--scope", "global", "--kind", "note")
    kept_here = _remember(cli, "this repository's notes are never capped by default", "--kind", "note")
    assert _active(cli, "--scope", "global") == {newer}
    assert older not in _active(cli) and kept_here in _active(cli)


def test_memories_unread_past_the_age_go_and_a_read_one_stays(cli, monkeypatch):
    read, unread = (_remember(cli, text, "--kind", "observation") for text in OBSERVATIONS[:2])
    pinned = _remember(cli, OBSERVATIONS[2], "--kind", "observation", "--tags", "pinned")
    time.sleep(2.5)
    cli.json("show", read)
    monkeypatch.setenv("CORTEX_RETENTION__MAX_AGE_DAYS", '{"repo": 0.00002}')  # 1.7 seconds
    assert {m["id"] for m in cli.json("gc", "--dry-run")["would_drop"]} == {unread}
    assert {m["id"] for m in cli.json("gc")["dropped"]} == {unread}
    assert _active(cli) == {read, pinned}


def test_a_policy_for_the_team_store_or_an_unknown_kind_is_one_line(cli, monkeypatch):
    for name, value, said in (("CORTEX_RETENTION__KINDS", '{"team": {"note": 5}}', "not 'team'"),
                              ("CORTEX_RETENTION__KINDS", '{"repo": {"notes": 5}}', "no kind 'notes'"),
                              ("CORTEX_RETENTION__MAX_AGE_DAYS", '{"session": -1}', "0 or more")):
        monkeypatch.setenv(name, value)
        code, _, err = cli("list")
        assert code != 0 and said in err and len(err.strip().splitlines()) == 1, err
        monkeypatch.delenv(name)
