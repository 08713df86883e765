"""The plain HTTP recall endpoints of `cortex mcp --http` as scripts use them: a real `cortex mcp` process (attached
to the repository's resident server, as by default), real HTTP requests with urllib, a real model endpoint (the
fake OpenAI-compatible server of test_llm_filter) for the pointer filter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from .test_llm_filter import FakeModel
from .test_mcp import _free_port, _wait_listening


def _request(port: int, path: str, body: bytes | dict | None = None, **headers: str) -> tuple[int, dict | str]:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    sent = {"Content-Type": "application/json", **headers} if data is not None else headers
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=sent,
                                     method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode()
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, text


@pytest.fixture
def served(repo):
    """`cortex mcp --http PORT` on `repo`, with a model endpoint configured; yields (port, token, model)."""
    from cortex_tui.app.mcp.http import token_path

    model = FakeModel()
    port = _free_port()
    env = dict(os.environ, CORTEX_LLM_FILTER_URL=model.url, CORTEX_LLM_FILTER_MODEL="tiny-test-model")
    proc = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "mcp", "-C", str(repo), "--no-watch",
                             "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        import asyncio

        asyncio.run(_wait_listening(port))
        yield port, token_path().read_text().strip(), model
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
        model.close()


def test_recall_endpoints_need_the_token_and_a_loopback_host(served):
    port, token, _ = served
    auth = {"Authorization": f"Bearer {token}"}
    for path, body in (("/health", None), ("/recall", {"query": "x"}), ("/store", {"text": "x"})):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {token[:-1]}"}):
            assert _request(port, path, body, **headers)[0] == 401, (path, headers)
        # A page that rebinds its own name to 127.0.0.1, or posts from another origin, is refused.
        status, answer = _request(port, path, body, Host=f"evil.example:{port}", **auth)
        assert status == 421 and answer == {"error": "Invalid Host header"}, (path, answer)
        status, answer = _request(port, path, body, Origin="http://evil.example", **auth)
        assert status == 403 and answer == {"error": "Invalid Origin header"}, (path, answer)
    status, answer = _request(port, "/health", **auth)
    assert status == 200 and answer["ok"] is True


def test_store_then_recall_verbatim_and_every_bad_body_is_one_line(served):
    port, token, _ = served
    auth = {"Authorization": f"Bearer {token}"}
    markup = "[bold]Backups[/] go to the north cluster [/] every night"
    status, stored = _request(port, "/store", {"text": markup, "kind": "decision", "tags": ["ops"]}, **auth)
    assert status == 200 and stored["outcome"] == "created" and stored["memory"]["text"] == markup
    status, found = _request(port, "/recall", {"query": "where do backups go"}, **auth)
    assert status == 200 and found["hits"][0]["text"] == markup and found["ranked_by"] == "zero-LLM"
    assert all(hit["source"] == "memory" for hit in found["hits"])  # recall is of memories unless filters say
    status, found = _request(port, "/recall", {"query": "backups", "filters": {"kinds": ["decision"]}}, **auth)
    assert status == 200 and [hit["text"] for hit in found["hits"]] == [markup]
    status, found = _request(port, "/recall", {"query": "backups", "filters": {"kinds": ["task"]}}, **auth)
    assert status == 200 and found["hits"] == []

    long = "big " * 300_000  # 1.2 MB: over the store's limit, refused by the store in one line
    status, refused = _request(port, "/store", {"text": long}, **auth)
    assert status == 400 and "\n" not in refused["error"] and len(refused["error"]) < 300, refused
    status, refused = _request(port, "/store", {"text": "x" * 5_000_000}, **auth)
    assert status == 413 and "\n" not in refused["error"], refused

    secret = "deploy key " + "ghp_" + "Zq8vR2mKx4LpT7wN0aYc3JdF6sHb9GeU5iQo"
    status, refused = _request(port, "/store", {"text": secret}, **auth)
    assert status == 400 and "secret" in refused["error"] and "ghp_" not in refused["error"]
    status, found = _request(port, "/recall", {"query": "deploy key"}, **auth)
    assert status == 200 and all("ghp_" not in hit["text"] for hit in found["hits"])

    bad = {b"{\"text\": \"caf\xe9\"}": "not UTF-8", b"{\"text\": ": "not JSON", b"[1, 2]": "JSON object",
           json.dumps({"text": "x", "colour": "red"}).encode(): "colour", json.dumps({"text": 5}).encode(): "text",
           json.dumps({"query": "x", "limit": 0}).encode(): "limit"}
    for body, says in bad.items():
        path = "/recall" if b"query" in body else "/store"
        status, answer = _request(port, path, body, **auth)
        assert status == 400 and says in answer["error"] and "\n" not in answer["error"], (body, answer)
    status, answer = _request(port, "/store", b"{}", **{**auth, "Content-Type": "text/plain"})
    assert status == 400 and answer == {"error": "Invalid Content-Type header"}


def test_recall_through_the_pointer_filter_returns_only_the_chosen_and_says_so(served):
    port, token, model = served
    auth = {"Authorization": f"Bearer {token}"}
    texts = ["The deploy runs on Fridays.", "Backups go to the north cluster.", "We use black with line length 100."]
    for text in texts:
        assert _request(port, "/store", {"text": text}, **auth)[0] == 200
    _, plain = _request(port, "/recall", {"query": "deploy backups black", "limit": 3}, **auth)
    model.reply = "2"
    _, chosen = _request(port, "/recall", {"query": "deploy backups black", "limit": 3, "filter": True}, **auth)
    assert [h["text"] for h in chosen["hits"]] == [plain["hits"][1]["text"]] and chosen["ranked_by"] == "llm-filter"
    model.reply = "I think the second one"
    _, kept = _request(port, "/recall", {"query": "deploy backups black", "limit": 3, "filter": True}, **auth)
    assert [h["text"] for h in kept["hits"]] == [h["text"] for h in plain["hits"]] and kept["ranked_by"] == "zero-LLM"
    assert any("zero-LLM ranking kept" in note for note in kept["notes"])


def test_health_counts_snapshot_recall_with_snapshot_and_query_pointers(served):
    """The recall server's whole surface, through the resident server: /health with counts, /snapshot, /recall with
    the snapshot beside its hits, /query answered with pointers (zero-LLM, then through the filter)."""
    port, token, model = served
    auth = {"Authorization": f"Bearer {token}"}
    for text, kind in (("Backups go to the north cluster every night.", "decision"),
                       ("Rotate the backup keys before Friday.", "task"),
                       ("The deploy runs on Fridays.", "note")):
        assert _request(port, "/store", {"text": text, "kind": kind}, **auth)[0] == 200
    status, health = _request(port, "/health", **auth)
    assert status == 200 and health["ok"] is True
    assert health["memories"] == 3 and health["memories_by_kind"] == {"decision": 1, "task": 1, "note": 1}
    assert health["open_tasks"] == 1 and all(v >= 1 for v in health["versions"].values())
    assert {"chunks", "embeddings_pending", "index_fresh"} <= set(health)

    status, snapshot = _request(port, "/snapshot", **auth)
    assert status == 200 and "Rotate the backup keys" in snapshot["text"]
    status, found = _request(port, "/recall", {"query": "where do backups go", "snapshot": True}, **auth)
    assert status == 200 and found["snapshot"]["text"] == snapshot["text"] and found["hits"]
    status, found = _request(port, "/recall", {"query": "where do backups go"}, **auth)
    assert status == 200 and "snapshot" not in found

    status, answer = _request(port, "/query", {"question": "where do the backups go?"}, **auth)
    assert status == 200 and answer["ranked_by"] == "zero-LLM"
    first = answer["pointers"][0]
    assert set(first) == {"id", "kind", "title", "score"} and first["kind"] == "decision"
    model.reply = "2"
    status, filtered = _request(port, "/query", {"question": "what happens on friday", "limit": 3, "filter": True},
                                **auth)
    assert status == 200 and filtered["ranked_by"] == "llm-filter" and len(filtered["pointers"]) == 1
    status, refused = _request(port, "/query", {"question": ""}, **auth)
    assert status == 400 and "question" in refused["error"]


def test_a_store_sent_again_with_its_idempotency_key_is_answered_once(served):
    """`POST /store` carried no write id: a script that lost the answer and sent it again could store it twice
    (with a key, as a second version). An `Idempotency-Key` header names the write: the same request again gets
    the first answer, `repeated`; the key with another body is refused in one line."""
    port, token, _ = served
    auth = {"Authorization": f"Bearer {token}", "Idempotency-Key": "store-call-0001"}
    body = {"text": "Backups are kept 30 days", "key": "backup-retention"}
    status, first = _request(port, "/store", body, **auth)
    assert status == 200 and first["outcome"] == "created" and first["write_id"] == "store-call-0001"
    status, again = _request(port, "/store", body, **auth)
    assert status == 200 and again == {**first, "repeated": True}
    status, other = _request(port, "/store", {**body, "text": "Backups are kept 90 days"}, **auth)
    assert status == 400 and other["error"].startswith("write id store-call-0001 was used by another write")
    listed = _request(port, "/recall", {"query": "how long are backups kept"}, Authorization=f"Bearer {token}")[1]
    assert [h["text"] for h in listed["hits"]] == ["Backups are kept 30 days"]
