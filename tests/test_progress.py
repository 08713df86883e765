"""Index progress as people read it: each phase shows from its start, with done/total, a percentage, a rate and an
estimate (core, no Textual), and the dashboard's top bar shows that line."""

from cortex_tui.core.answers import IndexProgress
from cortex_tui.core.engine import Engine
from cortex_tui.core.index.progress import ProgressClock

from .conftest import commit_file


def test_the_clock_gives_a_rate_and_an_estimate_once_a_phase_has_run_a_while():
    now = [100.0]
    clock = ProgressClock(clock=lambda: now[0])
    assert clock.update(IndexProgress("listing", 0, 0)).line() == "listing"
    assert clock.update(IndexProgress("embedding", 0, 2048)).line() == "embedding 0/2,048 chunks (0%)"
    now[0] += 1.0
    assert clock.update(IndexProgress("embedding", 64, 2048)).rate is None, "too early to tell"
    now[0] += 19.0
    estimate = clock.update(IndexProgress("embedding", 640, 2048))
    assert estimate.rate == 32.0 and estimate.remaining == (2048 - 640) / 32
    assert estimate.line() == "embedding 640/2,048 chunks (31%) · 32/s · about 44 s left"
    now[0] += 44.0
    assert clock.update(IndexProgress("embedding", 2048, 2048)).line() == "embedding 2,048/2,048 chunks (100%) · 32/s"
    now[0] += 1.0
    assert clock.update(IndexProgress("writing", 10, 65)).line() == "writing 10/65 files (15%)", "a new phase"


def test_an_index_pass_reports_embedding_from_its_start_and_the_step_after_writing(repo):
    for n in range(3):
        commit_file(repo, f"src/m{n}.py", f"def f{n}():\n    return {n}\n", f"Add m{n}")
    seen: list[IndexProgress] = []
    Engine(repo).code_index(create=True).update(embed=True, progress=seen.append)
    phases = [p.phase for p in seen]
    embedding = [p for p in seen if p.phase == "embedding"]
    assert embedding[0].done == 0 and embedding[0].total > 0, "the model loads during the first batch: say so"
    assert phases.index("updating search indexes") > max(i for i, p in enumerate(phases) if p == "writing")


async def test_the_top_bar_shows_rate_and_estimate_while_indexing(repo):
    from cortex_tui.app.tui.messages import IndexFinished, IndexProgressed, WhatLoaded
    from cortex_tui.app.tui.showcase import RecordingApp, settle, wait_until

    from .conftest import bridge_for

    app = RecordingApp(bridge_for(repo), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        # The dashboard's own index pass begins once the first panes are filled: its progress, arriving among the
        # figures posted below, restarted the rate (CI, once). They are posted once it has finished.
        await settle(pilot, WhatLoaded, IndexFinished)
        now = [0.0]
        app.screen.progress_clock = ProgressClock(clock=lambda: now[0])
        top = app.screen.query_one("#topbar")
        for done, at in ((0, 0.0), (64, 5.0), (640, 20.0)):
            now[0] = at
            app.screen.post_message(IndexProgressed(IndexProgress("embedding", done, 2048)))
            await pilot.pause()
        await wait_until(pilot, lambda: "left" in str(top.content), "the estimate")
        assert "embedding 640/2,048 chunks (31%) · 32/s · about 44 s left" in str(top.content)
