"""Input no command can use is one line and leaves nothing behind: bytes that are not UTF-8 in an argument or on
standard input (in-process and through the resident server), and a database location nothing can work with
(`--db /dev/null`), which must not leave a resident server running. Real processes; nothing here is timed."""

from __future__ import annotations

import json

import pytest

from .test_serve import _servers_for, cortex, runtime, status  # noqa: F401  (runtime is a fixture)

NOT_UTF8 = b"caf\xff note"


def argument(raw: bytes) -> str:
    """An argument as Python hands it to a program when the bytes are not UTF-8."""
    return raw.decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("served", [True, False])
@pytest.mark.parametrize("args", [("remember", "{bad}"), ("remember", "ok", "--title", "{bad}"),
                                  ("remember", "ok", "--tags", "{bad}"), ("search", "{bad}"),
                                  ("select", "{bad}"), ("context", "fix {bad}")])
def test_an_argument_that_is_not_utf8_is_one_line(repo, runtime, served, args):
    assert cortex(repo, "init", served=False).returncode == 0
    out = cortex(repo, *(a.format(bad=argument(NOT_UTF8)) for a in args), served=served)
    assert out.returncode == 2, out.stderr
    assert out.stderr.decode().count("\n") == 1 and "is not valid UTF-8 (byte 0xff" in out.stderr.decode()
    assert b"Traceback" not in out.stderr and b"TypeError" not in out.stderr
    assert json.loads(cortex(repo, "list", "--json", served=False).stdout) == []


@pytest.mark.parametrize("served", [True, False])
@pytest.mark.parametrize("args", [("remember", "-"), ("select", "-"), ("context", "-")])
def test_standard_input_that_is_not_utf8_is_one_line(repo, runtime, served, args):
    assert cortex(repo, "init", served=False).returncode == 0
    out = cortex(repo, *args, served=served, stdin=NOT_UTF8, env={"LC_ALL": "C", "PYTHONIOENCODING": ""})
    assert out.returncode == 1, out.stderr
    assert out.stderr.decode().count("\n") == 1 and "standard input is not valid UTF-8 (byte 0xff" in out.stderr.decode()
    assert json.loads(cortex(repo, "list", "--json", served=False).stdout) == []


def test_a_command_that_cannot_work_leaves_no_server_behind(repo, runtime):
    for args in (("remember", "note", "--db", "/dev/null"), ("search", "note", "--db", "/dev/null"),
                 ("list", "-C", str(repo / "no-such-dir"))):
        out = cortex(repo, *args)
        assert out.returncode == 1 and out.stderr.decode().count("\n") == 1, out.stderr
    assert _servers_for(runtime) == []
    # A usable database keeps its server, as before.
    assert cortex(repo, "remember", "Prices are cached per region").returncode == 0
    assert status(repo)["running"]
