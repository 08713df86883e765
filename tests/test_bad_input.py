"""Input no command can use is one line and leaves nothing behind: bytes that are not UTF-8 in an argument or on
standard input (in-process and through the resident server), and a database location nothing can work with
(`--db /dev/null`), which must not leave a resident server running. Real processes; oversized input is
timed only loosely (seconds, not the minutes it took)."""

from __future__ import annotations

import json
import subprocess
import sys

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


def _twenty_megabytes() -> bytes:
    """20 MiB of ordinary notes: words and identifiers, nothing secret."""
    line = b"the cache keeps one price per region and sku; the worker reads price_table_v2 at start\n"
    return line * (20 * 1024 * 1024 // len(line) + 1)


@pytest.mark.parametrize("served", [True, False])
def test_a_20_mb_memory_is_refused_by_its_size_at_once(repo, runtime, served):
    """The size is checked before the secret scan and the near-duplicate embedding (which took two minutes and
    1.6 GB): the text holds a key, and the refusal names the size, not the key. Through the server, a second client
    is answered too."""
    assert cortex(repo, "init", served=False).returncode == 0
    if served:
        assert cortex(repo, "list").returncode == 0  # the server is up: its start-up is not what is timed
    big = _twenty_megabytes() + b"deploy with AKIAZ7QW3ERTY5UIOPAS\n"
    other = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.client", "remember", "Prices are per region",
                              *([] if served else ["--no-daemon"])], cwd=repo, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    out = cortex(repo, "remember", "-", served=served, stdin=big)
    _, other_err = other.communicate(timeout=600)
    assert out.returncode == 1, out.stderr
    assert out.stderr.decode() == f"cortex: error: memory text is {len(big):,} bytes; the limit is 1,000,000\n"
    assert other.returncode == 0, other_err
    assert [m["title"] for m in json.loads(cortex(repo, "list", "--json", served=False).stdout)] == \
        ["Prices are per region"]


def test_a_20_mb_import_record_is_refused_by_its_size(repo, runtime, tmp_path):
    assert cortex(repo, "init", served=False).returncode == 0
    # A secret inside too: measured first, the record is refused for its size, before any scan of it.
    big = _twenty_megabytes().decode() + "deploy with AKIAZ7QW3ERTY5UIOPAS\n"
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"text": "a small note"}) + "\n" + json.dumps({"text": big}) + "\n")
    out = cortex(repo, "import", str(notes))
    assert out.returncode == 1
    # A file of a megabyte or more logs how far its check got (standard error is not a terminal here) before the
    # error, which is one line.
    *progress, error = out.stderr.decode().splitlines()
    assert all(line.startswith("cortex: importing: checking ") for line in progress), progress
    assert error == (f"cortex: error: {notes} line 2: memory text is {len(big):,} bytes; the limit is 1,000,000; "
                     "nothing was imported (--skip-bad imports the rest)")


def test_standard_input_read_for_a_server_that_could_not_run_reaches_the_in_process_run(repo, runtime, tmp_path):
    shared = tmp_path / "shared-runtime"
    shared.mkdir(mode=0o755)  # not private: no server is started there, the command runs in-process
    out = cortex(repo, "remember", "-", stdin=b"Prices are per region\n", env={"CORTEX_RUNTIME_DIR": str(shared)})
    assert out.returncode == 0, out.stderr
    assert [m["text"] for m in json.loads(cortex(repo, "list", "--json", served=False).stdout)] == \
        ["Prices are per region\n"]


def test_a_memory_over_the_limit_is_refused_before_it_is_sent_or_a_database_opens(repo, runtime):
    """A refusal by size took a second: the client sent the 20 MB to the resident server (as base64) and the server
    decoded it, or, in-process, the engine was imported first (0.3 s of CPU). Now the client refuses it before any
    server is asked (none is started), and in-process it is refused before the engine is imported."""
    big = _twenty_megabytes()[:1_500_000]
    said = "cortex: error: memory text is 1,500,000 bytes; the limit is 1,000,000\n"
    out = cortex(repo, "remember", "-", stdin=big)
    assert (out.returncode, out.stderr.decode()) == (1, said)
    assert _servers_for(runtime) == [], "the text went to a server"
    out = cortex(repo, "remember", "-", served=False, stdin=big)
    assert (out.returncode, out.stderr.decode()) == (1, said)
    imports = subprocess.run([sys.executable, "-X", "importtime", "-m", "cortex_tui.app.cli.main", "remember", "-"],
                             cwd=repo, input=big, capture_output=True, timeout=600).stderr.decode()
    assert said in imports and not [line for line in imports.splitlines() if line.endswith("| cortex_tui.core.engine")], \
        "the engine (the stores, the index, the agent log) was imported for it"
    raised = cortex(repo, "remember", "-", stdin=big, env={"CORTEX_MAX_TEXT_BYTES": "2000000"})
    assert raised.returncode == 0, raised.stderr
