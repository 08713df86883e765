from pathlib import Path

from cortex_tui.core.git.gitctx import position, read_git_context

from .conftest import commit_file, git


def test_repo_with_no_commits_gives_an_empty_context(empty_repo):
    (empty_repo / "a.py").write_text("x = 1\n")
    ctx = read_git_context(empty_repo)
    assert ctx.is_repo and ctx.head == "" and ctx.commits == () and "no commits yet" in ctx.notes
    assert ctx.untracked == ("a.py",)
    git(empty_repo, "add", "a.py")
    assert read_git_context(empty_repo).staged == ("a.py",)


def test_non_git_directory(tmp_path):
    ctx = read_git_context(tmp_path)
    assert not ctx.is_repo and ctx.commits == () and ctx.branch == ""


def test_working_change_commits_and_recent_files(repo):
    (repo / "src" / "app.py").write_text("def main():\n    return 2\n")
    (repo / "new.py").write_text("y = 2\n")
    (repo / "README.md").write_text("# changed\n")
    git(repo, "add", "README.md")
    ctx = read_git_context(repo)
    assert ctx.branch == "main" and not ctx.detached
    assert ctx.modified == ("src/app.py",) and ctx.staged == ("README.md",) and ctx.untracked == ("new.py",)
    assert [c.subject for c in ctx.commits] == ["Write a readme", "Add the app entry point"]
    assert ctx.commits[1].files == ("src/app.py",)
    assert {f.path for f in ctx.recent_files} == {"src/app.py", "README.md"}
    assert ctx.changed_files == ("README.md", "src/app.py", "new.py")


def test_detached_head_and_branches(repo):
    git(repo, "branch", "feature/login")
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(repo, "checkout", "-q", first)
    ctx = read_git_context(repo)
    assert ctx.detached and ctx.branch == "" and ctx.head == first
    assert ctx.branches == ("feature/login", "main")


def test_worktree_and_submodule(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    ctx = read_git_context(wt)
    assert ctx.root == wt and ctx.branch == "side" and len(ctx.commits) == 2

    sub_src = tmp_path / "lib"
    sub_src.mkdir()
    git(sub_src, "init", "-q", "-b", "main")
    commit_file(sub_src, "lib.py", "z = 3\n", "Library")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(sub_src), "vendor/lib")
    sub = read_git_context(Path(repo / "vendor" / "lib"))
    assert sub.root == repo / "vendor" / "lib" and sub.commits[0].subject == "Library"


def test_a_long_lived_process_sees_every_commit_branch_and_edit_at_once(repo):
    """The history is cached until a ref moves; the working change is read fresh every time."""
    first = read_git_context(repo)
    assert read_git_context(repo) == first
    (repo / "README.md").write_text("# edited\n")
    assert read_git_context(repo).modified == ("README.md",)
    commit_file(repo, "README.md", "# edited\n", "Edit the readme")
    after = read_git_context(repo)
    assert after.head != first.head and after.commits[0].subject == "Edit the readme" and after.modified == ()
    assert position(repo) == ("main", after.head)
    git(repo, "commit", "-q", "--amend", "-m", "Edit the readme again")
    assert read_git_context(repo).commits[0].subject == "Edit the readme again"
    git(repo, "branch", "side")
    assert read_git_context(repo).branches == ("main", "side")
    git(repo, "pack-refs", "--all")
    git(repo, "checkout", "-q", "side")
    git(repo, "commit", "-q", "--allow-empty", "-m", "On the side")
    side = read_git_context(repo)
    assert side.branch == "side" and side.commits[0].subject == "On the side"
    git(repo, "branch", "-q", "-D", "main")
    assert read_git_context(repo).branches == ("side",)


def test_a_staged_rename_counts_the_new_path(repo):
    git(repo, "mv", "src/app.py", "src/main.py")
    assert read_git_context(repo).staged == ("src/main.py",)


def test_the_history_is_handed_over_from_the_same_read_as_the_working_change(repo):
    from concurrent.futures import Future

    from cortex_tui.core.git.gitctx import read_history

    (repo / "README.md").write_text("# changed\n")
    history: Future = Future()
    ctx = read_git_context(repo, history_out=history)
    assert history.done() and history.result() == read_history(repo)
    assert (history.result().branch, history.result().commits) == (ctx.branch, ctx.commits)
    assert ctx.modified == ("README.md",) and history.result().modified == ()


def test_outside_git_the_history_waiter_gets_the_not_a_repository_context(tmp_path):
    from concurrent.futures import Future

    history: Future = Future()
    ctx = read_git_context(tmp_path, history_out=history)
    assert history.done() and not history.result().is_repo and not ctx.is_repo


def test_paths_with_non_ascii_and_control_characters_read_as_themselves(repo, cli):
    """git quotes such paths (`"docs/Z\\303\\274rich caf\\303\\251.py"`) unless told not to: the timeline, the graph's
    commit-file edges and `cortex --json git` showed the quoted form and no edge joined such a file to its commit."""
    from cortex_tui.core.engine import Engine
    from cortex_tui.core.graph.graph import neighbours
    from cortex_tui.core.keys import Key

    names = ["docs/notes dir/Zürich café ☕.py", "a\ttab \"quoted\".py"]
    for name in names:
        commit_file(repo, name, "x = 1\n", f"Add {name[:5]}")
    context = read_git_context(repo)
    assert {f for c in context.commits for f in c.files} >= set(names)
    newest = context.commits[0]
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    nodes = {n.node for n in neighbours(engine.graph(), Key("commit", newest.sha), 1, limit=80)}
    assert Key.file(names[1]) in nodes
    shown = cli.json("git")
    assert names[0] in str(shown) and "\\303" not in str(shown)
