"""The watcher keeps the index fresh on a real work tree: a save, a new file, a deletion, a branch switch."""

import queue

from cortex_tui.core.engine import Engine
from cortex_tui.core.index.watch import IndexWatcher

from .conftest import commit_file, git, wait_for


def test_watcher_picks_up_saves_deletes_and_branch_switches(repo):
    commit_file(repo, "src/extra.py", "def extra():\n    return 0\n", "Add extra")
    git(repo, "checkout", "-q", "-b", "feature")
    commit_file(repo, "src/feature.py", "def feature_only():\n    return 1\n", "Feature file")
    git(repo, "checkout", "-q", "main")
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    updates: queue.Queue = queue.Queue()
    errors: list[str] = []
    with IndexWatcher(index, on_update=updates.put, on_error=errors.append, embed=False) as watcher:
        assert watcher.ready.wait(10)
        (repo / "src/app.py").write_text("def main():\n    return 'watchertoken'\n")
        assert wait_for(lambda: index.chunks.count_rows("text LIKE '%watchertoken%'") == 1)
        (repo / "src/extra.py").unlink()
        assert wait_for(lambda: index.files.count_rows("path = 'src/extra.py'") == 0)
        (repo / "src" / "extra.py").write_text("def extra():\n    return 0\n")
        git(repo, "checkout", "-q", "--", "src/app.py")
        git(repo, "stash", "-q", "--include-untracked")
        git(repo, "checkout", "-q", "feature")
        assert wait_for(lambda: index.files.count_rows("path = 'src/feature.py'") == 1)
        assert wait_for(lambda: index.status().fresh)
    seen = []
    while not updates.empty():
        seen.append(updates.get())
    assert any(u.git_state_changed for u in seen) and errors == []
