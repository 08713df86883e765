"""Push, not poll: an open dashboard hears of what changes under it and refreshes without `r`, attached to the
repository's resident server (as `cortex-tui` runs by default) and with an engine of its own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from cortex_tui.app.link import connection, protocol
from cortex_tui.app.tui.messages import (
    DatabaseReplaced,
    IndexChanged,
    IndexFinished,
    IndexProgressed,
    MemoriesChanged,
    SearchFinished,
    WhatLoaded,
)
from cortex_tui.app.tui.showcase import RecordingApp, settle, wait_until
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.widgets.graph_pane import GraphPane

from .conftest import both, bridge_for, commit_file, watching

SIZE = (160, 45)

NOT_INDEXED = "code not indexed yet"


def cortex(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """`cortex ARGS` in another process, through the installed entry point."""
    return subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", *args, "-C", str(repo)],
                          capture_output=True, text=True, timeout=300)


def server_status(repo: Path) -> dict:
    return connection.ask(protocol.server_paths(*connection.server_key(str(repo), None)), "status") or {}


async def watched(pilot) -> None:
    """The dashboard has its first results and the index pass, and the watcher has its watch in place."""
    await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
    await wait_until(pilot, lambda: watching(pilot.app.bridge), "the watcher")


def says_not_indexed(app) -> bool:
    return any(NOT_INDEXED in hint for hint in app.seen(WhatLoaded).what.hints)


def what_texts(app) -> list[str]:
    shown = app.seen(WhatLoaded).what
    return [m.text for m in shown.open_tasks + shown.recent_memories + shown.branch_memories]


@both
async def test_a_memory_another_process_writes_appears_in_the_open_dashboard(repo, served):
    Engine(repo).remember(MemoryDraft(text="Ship the ledger export", kind="task"))
    app = RecordingApp(bridge_for(repo, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await watched(pilot)
        app.messages.clear()
        # A second shell, as a person or an agent would: nothing is pressed in the dashboard afterwards.
        done = cortex(repo, "remember", "Rotate the signing keys before Friday", "--kind", "task")
        assert done.returncode == 0, done.stderr
        await wait_until(pilot, lambda: app.seen(WhatLoaded) is not None and
                         "Rotate the signing keys before Friday" in what_texts(app), "the new task in pane 1",
                         timeout=30)
        assert app.seen(MemoriesChanged) is not None
        await settle(pilot, SearchFinished)  # the search pane asked again too


def _a_package(repo: Path, files: int) -> None:
    """Enough code that embedding it takes seconds: modules importing each other, text never seen before (no
    cached vectors)."""
    salt = uuid.uuid4().hex
    for n in range(files):
        body = "".join(f"def step_{n}_{k}(value):\n    '''{salt} stage {n}.{k} of the pipeline'''\n"
                       f"    return value + {k}\n\n\n" for k in range(12))
        (repo / "pipeline").mkdir(exist_ok=True)
        (repo / "pipeline" / f"stage_{n}.py").write_text(
            (f"from .stage_{n - 1} import step_{n - 1}_0\n\n\n" if n else "") + body, encoding="utf-8")
    commit_file(repo, "pipeline/__init__.py", "", "Add the pipeline")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "Add the stages"], cwd=repo, check=True)


@both
async def test_panes_refresh_once_the_first_index_pass_has_the_code_without_r(repo, served):
    """A fresh clone: panes 1-3 (what, search, graph) show the code as soon as the first pass has written it, while
    its embeddings are still being made, and again when the pass ends; nobody presses `r`."""
    _a_package(repo, 40)
    app = RecordingApp(bridge_for(repo, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await wait_until(pilot, lambda: app.seen(WhatLoaded) is not None, "the first what")
        assert says_not_indexed(app)
        await wait_until(pilot, lambda: any(isinstance(m, IndexProgressed) and m.progress.phase == "embedding"
                                            for m in app.messages), "the embedding phase", timeout=300)
        await wait_until(pilot, lambda: not says_not_indexed(app), "pane 1 without the hint", timeout=300)
        assert app.seen(IndexFinished) is None, "refreshed while embeddings were still being made"
        if served:  # the server tells of a memory it writes even before its watcher runs (after the pass)
            done = cortex(repo, "remember", "Stage 7 must stay idempotent", "--kind", "task")
            assert done.returncode == 0, done.stderr
            await wait_until(pilot, lambda: "Stage 7 must stay idempotent" in what_texts(app), "the memory", timeout=60)
        await settle(pilot, IndexFinished)
        await settle(pilot)
        assert not says_not_indexed(app)
        results = app.seen(SearchFinished).results
        assert results.index_fresh is True, "pane 2 searched the index, not 'no code index'"
        graph = app.screen.query_one(GraphPane)
        assert graph.query_one("Tree").root.children, "pane 3 has neighbours"


@both
async def test_rm_rf_cortex_shows_the_new_empty_state_and_the_watcher_runs(repo, served):
    Engine(repo).remember(MemoryDraft(text="The ledger closes at midnight UTC", kind="decision"))
    app = RecordingApp(bridge_for(repo, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await watched(pilot)
        assert "The ledger closes at midnight UTC" in what_texts(app)
        app.messages.clear()
        shutil.rmtree(repo / ".cortex")
        await wait_until(pilot, lambda: app.seen(DatabaseReplaced) is not None, "the replaced database", timeout=60)
        await wait_until(pilot, lambda: app.seen(IndexFinished) is not None, "the new database's index pass",
                         timeout=300)
        await settle(pilot)
        assert "The ledger closes at midnight UTC" not in what_texts(app), "pane 1 shows the new, empty database"
        await pilot.press("slash", *"ledger midnight")
        await wait_until(pilot, lambda: (m := app.seen(SearchFinished)) is not None and m.request == "ledger midnight",
                         "the search")
        assert all(h.source == "code" for h in app.seen(SearchFinished).results.hits), "no memory of the old database"
        if served:
            status = server_status(repo)
            assert status["watching"], status
        await wait_until(pilot, lambda: watching(app.bridge), "the watcher on the new database", timeout=60)
        (repo / "src" / "late.py").write_text("def reconcile_the_ledger():\n    return 0\n", encoding="utf-8")
        await wait_until(pilot, lambda: any(isinstance(m, IndexChanged) and "src/late.py" in m.update.paths
                                            for m in app.messages), "the watcher's update", timeout=60)
    done = cortex(repo, "ss", "reconcile ledger", "--code-only", "--json")
    assert done.returncode == 0, done.stderr
    assert any(h.get("path") == "src/late.py" for h in json.loads(done.stdout)["hits"])
