"""`cortex index` returns once the code is searchable (the lexical pass) and the resident server embeds the rest;
`--wait` blocks until every chunk is embedded; the status tells lexical freshness, embeddings done of all, and
whether anything embeds them now, also after a stop, a kill or Ctrl+C. Real processes: the installed command's
client, the resident server, its embedding child, the real model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from .conftest import git, process_alive, wait_for

SENTENCE = "The handler reads the request, checks the retries and returns the stored value or the default.\n    "
FILES = 30
CHUNKS = FILES * 4
"""More than SMALL_PASS_CHUNKS: a backlog `cortex index` leaves to the server instead of embedding it itself."""


def handlers(repo: Path, files: int = FILES) -> None:
    """`files` modules of four functions, each a chunk of its own (their docstrings make them large)."""
    (repo / "pkg").mkdir(exist_ok=True)
    for n in range(files):
        (repo / "pkg" / f"mod_{n}.py").write_text("".join(
            f"def handler_{n}_{k}(request, retries={k}):\n    \"\"\"{SENTENCE * 16}\"\"\"\n"
            f"    return request.get('value_{k}', {n}) * retries\n\n\n" for k in range(4)), encoding="utf-8")
    git(repo, "add", "pkg")
    git(repo, "commit", "-qm", "Add the handlers")


def cortex(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", *args, "-C", str(repo)],
                          capture_output=True, text=True, timeout=600, env=env)


def status(repo: Path) -> dict:
    done = cortex(repo, "index", "--status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def status_line(repo: Path) -> str:
    done = cortex(repo, "index", "--status")
    assert done.returncode == 0, done.stderr
    return done.stdout


def server(repo: Path) -> dict:
    return json.loads(cortex(repo, "serve", "--status", "--json").stdout)


def pending(repo: Path) -> int:
    """Read from the database in this process: no command that could start or nudge an embedder."""
    from cortex_tui.core.engine import Engine

    engine = Engine(repo)
    try:
        return engine.code_index(create=False).pending()
    finally:
        engine.close()


def test_index_returns_searchable_and_the_server_finishes_the_embeddings(repo):
    handlers(repo)
    indexed = cortex(repo, "index")
    assert indexed.returncode == 0, indexed.stderr
    assert f"searchable now (lexical); embedding {CHUNKS + 2} chunks in the background" in indexed.stdout, indexed.stdout
    assert "cortex: indexing: embedding" not in indexed.stderr, "the command embedded before it returned"
    # Searchable by its words at once.
    found = cortex(repo, "search", "handler_7_2")
    assert found.returncode == 0 and "pkg/mod_7.py" in found.stdout, found.stdout

    now = status(repo)
    assert now["fresh"] and now["embeddings_pending"] > 0 and now["embedding"], now
    assert ", continuing" in status_line(repo)
    assert server(repo)["embedding"]

    # No further command: the server embeds them all, then says so.
    assert wait_for(lambda: pending(repo) == 0, 300), "the server did not finish the embeddings"
    assert wait_for(lambda: not server(repo)["embedding"], 30)
    done = status(repo)
    assert done["fresh"] and done["embeddings_pending"] == 0 and not done["embedding"], done
    assert f"fresh; {FILES + 2} files, {CHUNKS + 2} chunks; all {CHUNKS + 2} embedded" in status_line(repo)


def test_wait_returns_with_every_chunk_embedded_and_starts_no_server(repo):
    handlers(repo)
    indexed = cortex(repo, "index", "--wait", "--json")
    assert indexed.returncode == 0, indexed.stderr
    report = json.loads(indexed.stdout)
    assert report["embeddings_pending"] == 0 and report["embedded"] == CHUNKS + 2, report
    assert not report["embedding_in_background"]
    assert "cortex: indexing: embedding" in indexed.stderr
    assert not server(repo)["running"], "--wait started a resident server"


def test_without_the_daemon_index_embeds_before_it_returns(repo):
    handlers(repo)
    indexed = cortex(repo, "--no-daemon", "index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    report = json.loads(indexed.stdout)
    assert report["embeddings_pending"] == 0 and not report["embedding_in_background"], report


def test_a_stopped_or_killed_server_leaves_a_true_status_and_the_next_index_finishes(repo):
    # Twice as many chunks: what the server embeds before it stops (a batch of 64 or more on a fast machine) must
    # leave more than a small pass's 64, which the next index would embed in place instead of handing over.
    handlers(repo, FILES * 2)
    assert cortex(repo, "index").returncode == 0
    pid = server(repo)["pid"]
    assert cortex(repo, "serve", "--stop").returncode == 0
    assert wait_for(lambda: not process_alive(pid), 60), "the server did not stop"
    stopped = status(repo)
    assert stopped["fresh"] and stopped["embeddings_pending"] > 0 and not stopped["embedding"], stopped
    assert "; paused — run `cortex index` to finish" in status_line(repo)

    # The next index hands them over again; its server is killed while it embeds: still a true status.
    again = cortex(repo, "index", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["embedding_in_background"], again.stderr
    assert status(repo)["embedding"]
    os.kill(server(repo)["pid"], signal.SIGKILL)
    assert wait_for(lambda: not status(repo)["embedding"], 60), "the killed server's child went on embedding"
    killed = status(repo)
    assert killed["embeddings_pending"] > 0 and not killed["embedding"], killed

    assert cortex(repo, "index").returncode == 0
    assert wait_for(lambda: pending(repo) == 0, 300), "the next index's server did not finish them"


def test_ctrl_c_during_wait_leaves_a_true_status_and_the_next_index_finishes(repo):
    handlers(repo)
    assert cortex(repo, "index", "--no-embed").returncode == 0
    run = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.client", "index", "--wait", "-C", str(repo)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # Into the embedding: the turn is held (status says "continuing") and a batch or more is stored.
    assert wait_for(lambda: pending(repo) < CHUNKS, 300), "no embedding happened"
    os.killpg(run.pid, signal.SIGINT)  # Ctrl+C reaches the terminal's whole process group
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130 and "cortex: interrupted" in err, err
    left = status(repo)
    assert left["fresh"] and 0 < left["embeddings_pending"] < CHUNKS and not left["embedding"], left
    assert f"embeddings {left['chunks'] - left['embeddings_pending']:,} of {left['chunks']:,}; paused" in status_line(repo)

    assert cortex(repo, "index").returncode == 0
    assert wait_for(lambda: pending(repo) == 0, 300)


def test_the_dashboards_pass_shows_the_servers_embedding_progress(repo):
    """A dashboard attached while the server embeds what `cortex index` left: its pass waits for that run, its top
    bar showing the embeddings' progress, and ends with none pending."""
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote

    handlers(repo)
    assert cortex(repo, "index").returncode == 0
    seen = []
    bridge = RemoteBridge(Remote.attach(repo, None, start=True))
    try:
        report, indexed = bridge.index(seen.append, lambda: False)
    finally:
        bridge.stop()
    assert indexed.embeddings_pending == 0, indexed
    embedding = [p for p in seen if p.phase == "embedding"]
    assert embedding and embedding[-1].done == embedding[-1].total, seen
    assert len({p.done for p in embedding}) > 1, "the progress did not move"


def test_ctrl_c_during_the_lexical_pass_leaves_it_stale_and_the_next_index_finishes(repo):
    """The lexical pass of a `cortex index` that leaves its embeddings to the server runs in the command's own
    process: Ctrl+C there stops it between commits, the status says which files are still to read, and nothing
    is handed over half-way."""
    # Imported before the pass starts: importing the engine in the first look took long enough under load for the
    # whole pass to end before Ctrl+C was sent (seen once in CI).
    from cortex_tui.core.engine import Engine

    from .test_index_process import many_files

    many_files(repo, 2000)
    run = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.client", "index", "-C", str(repo)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def some_written() -> bool:
        try:
            return Engine(repo).code_index(create=False).has_files()
        except Exception:  # noqa: BLE001 - no tables yet
            return False

    assert wait_for(some_written, 300), "the pass wrote nothing"
    os.killpg(run.pid, signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130 and "cortex: interrupted" in err, (out, err)
    left = status(repo)
    assert not left["fresh"] and left["new"] > 0 and not left["embedding"], left
    assert "stale: " in status_line(repo)

    again = cortex(repo, "index", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["embedding_in_background"], again.stderr
    finished = status(repo)
    assert finished["fresh"] and finished["indexed_files"] >= 2000 and finished["embedding"], finished
