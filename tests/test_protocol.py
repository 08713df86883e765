"""The resident server's protocol (`app/link/messages.py`, `app/link/exchange.py`): every request and reply kind
through its wire form and back, and what happens when the two ends are of different versions."""

from __future__ import annotations

import json
import os
import socket
import threading
import typing
from pathlib import Path

import pytest
from cortex_tui.app.link import connection, messages, protocol
from cortex_tui.app.link.exchange import Exchange
from cortex_tui.app.link.messages import (
    PROTOCOL_VERSION,
    Accepted,
    Alive,
    CallRequest,
    Done,
    Error,
    Failed,
    Indexed,
    Memories,
    PassReport,
    Progress,
    ProtocolError,
    ReceiptAnswer,
    ReceiptRequest,
    Refused,
    Replaced,
    Result,
    Retired,
    RunRequest,
    Status,
    StatusRequest,
    Stopping,
    StopRequest,
    Update,
    VersionMismatch,
    WatchRequest,
    Where,
)

ENV = {"CORTEX_DB": "/tmp/x \udcff", "LANG": "C.UTF-8"}
EXAMPLES: dict[type, list[messages.Message]] = {
    RunRequest: [RunRequest("f1", ("remember", "-", "--kind", "decision"), "/w", ENV, stdout_tty=True,
                            stderr_tty=False, stdout_encoding="latin-1", stderr_encoding="utf-8", stdin="aGk=",
                            stdin_encoding="utf-8", stdin_errors="surrogateescape", write_id="6b0-84ad"),
                 RunRequest("f1", ("ss", "bar"), "/w", {})],
    CallRequest: [CallRequest("f1", "tools", "recall", protocol.pack((("q",), {"limit": 3})), "session-1", ENV),
                  CallRequest("f1", "bridge", "stores", protocol.pack(((), {})))],
    WatchRequest: [WatchRequest("f1", ENV), WatchRequest("f1")],
    ReceiptRequest: [ReceiptRequest(Where("sub", "target", "/db", True), "/w", ENV, "6b0-84ad"),
                     ReceiptRequest(Where(), "/w", {}, "6b0-84ad")],
    StatusRequest: [StatusRequest()],
    StopRequest: [StopRequest()],
    Accepted: [Accepted(4242)],
    Alive: [Alive()],
    Done: [Done(((1, "out\n"), (2, "err \udcff\n"), (1, "")), 3), Done((), 0)],
    Retired: [Retired("this server is stopping")],
    Refused: [Refused("unknown request")],
    ReceiptAnswer: [ReceiptAnswer(True), ReceiptAnswer(False), ReceiptAnswer(None, "OSError: gone")],
    Status: [Status({"pid": 1, "root": "/r", "rss_bytes": None, "memory_pool": {"bytes": 3}})],
    Stopping: [Stopping(4242)],
    Result: [Result(protocol.pack([1, "two", None]))],
    Error: [Error(protocol.pack(ValueError("bad")))],
    Progress: [Progress("embedding", 3, 10)],
    Indexed: [Indexed(protocol.pack(("report", "status")))],
    Update: [Update(protocol.pack({"changed": 1}))],
    Memories: [Memories()],
    Replaced: [Replaced()],
    Failed: [Failed("the database is locked", locked=True), Failed("gone")],
    PassReport: [PassReport({"listed": 3, "skipped": [["a.bin", "binary"]], "embed_seconds": 0.5})],
}
"""At least one of every kind, every field set away from its default somewhere."""

REQUEST_KINDS = typing.get_args(messages.Request)
REPLY_KINDS = typing.get_args(messages.Reply)


def _over_the_wire(message: messages.Message) -> dict:
    """The message as the other end reads it: JSON text (with surrogates, as a frame carries them) and back."""
    text = json.dumps(message.to_wire(), ensure_ascii=False)
    return json.loads(text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("kind", REQUEST_KINDS + REPLY_KINDS, ids=lambda kind: kind.__name__)
def test_every_kind_crosses_the_wire_and_comes_back_equal(kind):
    """The unions are the list: a kind added to one without a codec (or an example here) fails."""
    assert EXAMPLES.get(kind), f"no example of {kind.__name__}: add one (and its codec)"
    decode = messages.decode_request if kind in REQUEST_KINDS else messages.decode_reply
    for message in EXAMPLES[kind]:
        wire = _over_the_wire(message)
        assert wire["type"] == kind.KIND and wire["version"] == PROTOCOL_VERSION
        back = decode(wire)
        assert type(back) is kind and back == message, (message, back)
    with pytest.raises(AttributeError):
        EXAMPLES[kind][0].kind = "changed"  # frozen


def test_the_tables_list_every_kind_of_the_unions_once():
    assert sorted(messages.REQUESTS) == sorted(kind.KIND for kind in REQUEST_KINDS)
    assert sorted(messages.REPLIES) == sorted(kind.KIND for kind in REPLY_KINDS)
    assert len(REQUEST_KINDS) == len(messages.REQUESTS) and len(REPLY_KINDS) == len(messages.REPLIES)


@pytest.mark.parametrize("wire", [
    {"type": "run", "version": PROTOCOL_VERSION, "fingerprint": "f", "argv": "ss bar", "cwd": "/", "env": {}},
    {"type": "run", "version": PROTOCOL_VERSION, "fingerprint": "f", "argv": [], "cwd": "/", "env": {"A": 1}},
    {"type": "call", "version": PROTOCOL_VERSION, "fingerprint": "f", "facade": "bridge", "method": "x"},
    {"type": "launch", "version": PROTOCOL_VERSION},
])
def test_a_malformed_request_is_refused_in_one_line(wire):
    with pytest.raises(ProtocolError) as failed:
        messages.decode_request(wire)
    assert "\n" not in str(failed.value) and str(failed.value)


@pytest.mark.parametrize("wire", [
    {"type": "done", "version": PROTOCOL_VERSION, "output": [[3, "x"]], "exit": 0},
    {"type": "done", "version": PROTOCOL_VERSION, "output": [], "exit": True},
    {"type": "progress", "version": PROTOCOL_VERSION, "phase": "reading", "done": "1", "total": 2},
])
def test_a_malformed_reply_is_refused_in_one_line(wire):
    with pytest.raises(ProtocolError) as failed:
        messages.decode_reply(wire)
    assert "\n" not in str(failed.value) and str(failed.value)


def test_a_message_of_another_version_is_refused_in_one_line():
    old = {**StatusRequest().to_wire(), "version": PROTOCOL_VERSION - 1}
    for decode in (messages.decode_request, messages.decode_reply):
        with pytest.raises(VersionMismatch) as failed:
            decode({**old, "type": "status" if decode is messages.decode_request else "alive"})
        said = str(failed.value)
        assert "\n" not in said and f"version {PROTOCOL_VERSION - 1}" in said and str(PROTOCOL_VERSION) in said
    # What a server of any version says when it takes nothing reads the same in every version.
    assert messages.decode_reply({"type": "retired", "message": "another install"}) == Retired("another install")


def test_the_server_retires_for_a_client_of_another_version(repo, tmp_path):
    """A client of the previous version (its request as version 3 sent it): the real server answers `retired` with
    the one-line reason, and goes, so that the client's next attempt starts a server of its own install."""
    from cortex_tui.app.server.serve import Server

    with open(tmp_path / "server.log", "w") as log:
        server = Server(str(repo), "", protocol.server_paths(str(repo), ""), 300, log)
        ours, theirs = socket.socketpair()
        handler = threading.Thread(target=server._handle, args=(theirs,))
        handler.start()
        try:
            protocol.send(ours, {"op": "run", "version": 3, "fingerprint": "old", "argv": ["ss", "bar"], "cwd": "/"})
            reply = Exchange.on_socket(ours).answer()
            handler.join(60)
        finally:
            ours.close()
            server._worker.shutdown()
            server._hosted.close()
    assert isinstance(reply, Retired)
    assert "\n" not in reply.message and "version 3" in reply.message, reply.message
    assert server._stopping.is_set()


def test_a_server_of_another_version_is_one_line_to_the_client(tmp_path):
    """`cortex serve --status` against a server of another version: what it answers (its `retired`, or a status in
    its own version) is one line, never a traceback nor "no server"."""
    paths = protocol.ServerPaths(*(str(tmp_path / f"s{suffix}") for suffix in (".sock", ".lock", ".json", ".log")))
    for answer in ({"type": "retired", "message": "this server is from another cortex install"},
                   {"type": "status", "version": PROTOCOL_VERSION - 1, "pid": 1}):
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(paths.socket)
            listener.listen(1)

            def other_version(answer=answer, listener=listener) -> None:  # a server of another install
                conn, _ = listener.accept()
                with conn:
                    protocol.receive(conn)
                    protocol.send(conn, answer)

            peer = threading.Thread(target=other_version)
            peer.start()
            with pytest.raises(ProtocolError) as failed:
                connection.ask(paths, "status")
            peer.join(60)
        os.unlink(paths.socket)
        assert "\n" not in str(failed.value) and "another" in str(failed.value), failed.value


def test_no_daemon_is_the_commands_setting_not_the_processes(repo, capsys):
    """`cortex --no-daemon` runs the command in-process with CORTEX_NO_DAEMON in its own environment: the process's
    stays as it was (the server runs commands side by side, and a variable set for one would reach the others)."""
    from cortex_tui.app.cli import client

    assert "CORTEX_NO_DAEMON" not in os.environ
    assert client.main(["--no-daemon", "-C", str(repo), "init"]) == 0, capsys.readouterr().err
    assert "CORTEX_NO_DAEMON" not in os.environ
    assert not list(Path(os.environ["CORTEX_RUNTIME_DIR"]).glob("*.sock")), "no server was started"


def test_an_index_childs_lines_are_read_by_field_name():
    """The lines an index child writes go through the same codec: progress by its fields' names (in any order),
    then the report, field by field."""
    import io

    from cortex_tui.app.bridge.index_process import _read_answer, report_from_wire
    from cortex_tui.core.answers import IndexProgress, IndexReport

    lines = io.StringIO()
    child = Exchange.on_lines(writer=lines)
    child.send(Progress("reading", 1, 4))
    lines.write(json.dumps({"total": 4, "type": "progress", "done": 2, "phase": "writing",
                            "version": PROTOCOL_VERSION}) + "\n")
    child.send(PassReport({"listed": 4, "changed": 2, "skipped": [["a.bin", "binary"]]}))
    lines.seek(0)
    seen: list[IndexProgress] = []
    answer = _read_answer(Exchange.on_lines(lines), seen.append)
    assert seen == [IndexProgress("reading", 1, 4), IndexProgress("writing", 2, 4)]
    assert isinstance(answer, PassReport)
    assert report_from_wire(answer.report) == IndexReport(listed=4, changed=2, skipped=[("a.bin", "binary")])
