"""`what` on a crafted repository, the memory graph, and `--expand`."""

import os
import subprocess

from cortex_tui.core.engine import Engine
from cortex_tui.core.graph.graph import neighbours, resolve_node
from cortex_tui.core.keys import Key
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.query import Filters

from .conftest import Cli, commit_file, git


def crafted(repo):
    commit_file(repo, "src/util.py", "def helper():\n    return 1\n", "Add helper")
    commit_file(repo, "src/core.py", "from .util import helper\n\ndef run():\n    return helper()\n", "Add core")
    commit_file(repo, "src/cli.py", "from .core import run\nfrom .util import helper\n", "Add cli")
    git(repo, "checkout", "-q", "-b", "feature/speed")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    return engine


def test_what_returns_every_section(repo):
    engine = crafted(repo)
    on_branch = engine.remember(MemoryDraft(text="Speed work: profile the hot loop first.", kind="note")).memory
    about_file = engine.remember(MemoryDraft(text="helper() must stay pure.", kind="decision", files=("src/util.py",))).memory
    task = engine.remember(MemoryDraft(text="Benchmark helper() before merging.", kind="task", files=("src/util.py",))).memory
    other = engine.remember(MemoryDraft(text="Unrelated chore.", kind="task")).memory
    (repo / "src/util.py").write_text("def helper():\n    return 2\n")
    (repo / "src/cli.py").write_text("from .core import run\n")
    (repo / "notes.txt").write_text("scratch\n")
    w = engine.what()
    assert on_branch.id in [m.id for m in w.branch_memories]
    assert [m.id for m in w.file_memories] == [about_file.id]
    assert [m.id for m in w.open_tasks][:1] == [task.id] and other.id in [m.id for m in w.open_tasks]
    sections = [w.branch_memories, w.file_memories, w.open_tasks, w.recent_memories]
    shown = [m.id for section in sections for m in section]
    assert len(shown) == len(set(shown)) and {on_branch.id, task.id} <= set(shown)
    assert [c.subject for c in w.recent_commits][:1] == ["Add cli"]
    assert [f.path for f in w.changed_files][0] == "src/util.py"
    assert {f.state for f in w.changed_files} == {"modified", "untracked"}
    assert w.changed_files[0].imported_by == 2


def test_what_groups_sections_caps_agent_steps_and_keeps_old_commits(repo):
    engine = crafted(repo)
    git(repo, "checkout", "-q", "main")
    long_ago = {**os.environ, "GIT_COMMITTER_DATE": "2001-01-01T00:00:00", "GIT_AUTHOR_DATE": "2001-01-01T00:00:00"}
    for subject in ("Old work", "Older still"):
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", subject], cwd=repo, check=True, env=long_ago)
    notes = [engine.remember(MemoryDraft(text=f"Note {n} about the parser.", kind="note")).memory for n in range(3)]
    log = engine.agent_log(create=True)
    log.init("Speed up the parser")
    for n in range(7):
        log.log_ota(f"observed {n}", f"thought {n}", f"action {n}")
    log.commit("Parser profiled")
    log.log_ota("observed again", "", "tuned")
    log.commit("Parser tuned")
    w = engine.what()
    sections = [w.branch_memories, w.file_memories, w.open_tasks, w.recent_memories]
    shown = [m for section in sections for m in section]
    assert len({m.id for m in shown}) == len(shown)
    assert {n.id for n in notes} <= {m.id for m in shown}
    agent = [m for m in shown if m.kind == "agent"]
    assert [m.title for m in agent] == [next(m.title for m in engine.list_memories(kind="agent") if "Parser tuned" in m.text)]
    assert [c.subject for c in w.recent_commits][:2] == ["Older still", "Old work"]


def test_what_on_an_empty_repository_is_a_helpful_empty_state(empty_repo):
    w = Engine(empty_repo).what()
    assert w.branch_memories == [] and w.open_tasks == [] and w.changed_files == []
    text = " ".join(w.hints)
    assert "no commits yet" in text and "no memories yet" in text and "not indexed" in text


def test_graph_edges_and_neighbours(repo):
    engine = crafted(repo)
    first = engine.remember(MemoryDraft(text="src/core.py calls helper() on every request", kind="decision")).memory
    second = engine.remember(MemoryDraft(text=f"Follow-up to {first.id}: keep helper small.", files=("src/util.py",))).memory
    graph = engine.graph()
    types = {n.via.removeprefix("<-") for node in (Key.memory(first.id), Key.file("src/core.py"), Key.file("src/cli.py"))
             for n in neighbours(graph, node, 1)}
    assert {"imports", "defines", "touched", "mentions", "links", "made_on"} <= types
    near = {str(n.node): n.via for n in neighbours(graph, Key.memory(first.id), 1)}
    assert near["file:src/core.py"] == "mentions" and near["sym:helper"] == "mentions" and near[f"mem:{second.id}"] == "<-links"
    # Named in the text only (not in `files`): found by the full-text words, then checked in the text.
    assert {n.node: n.via for n in neighbours(graph, Key.file("src/core.py"), 1)}[Key.memory(first.id)] == "<-mentions"
    assert {n.node: n.via for n in neighbours(graph, Key("symbol", "helper"), 1)}[Key.memory(first.id)] == "<-mentions"
    two = {str(n.node) for n in neighbours(graph, Key.file("src/cli.py"), 2)}
    assert "file:src/util.py" in two and "sym:helper" in two
    assert str(resolve_node(graph, "src/util.py")) == "file:src/util.py"
    assert resolve_node(graph, "helper") == Key("symbol", "helper") == resolve_node(graph, "sym:helper")


def test_search_expand_adds_linked_neighbours(repo):
    engine = crafted(repo)
    engine.remember(MemoryDraft(text="Never cache the result of helper.", kind="decision", files=("src/util.py",)))
    results = engine.search("cache helper result", Filters(memories_only=True), expand=True)
    assert Key.file("src/util.py") in {n.node for n in results.neighbours}


def test_cli_search_what_graph(repo, capsys):
    engine = crafted(repo)
    m = engine.remember(MemoryDraft(text="helper must stay pure", kind="decision", files=("src/util.py",))).memory
    cli = Cli(repo)
    found = cli.json("ss", "helper pure", "--explain")
    assert found["hits"][0]["id"] == m.id and "ranks" in found["hits"][0]["breakdown"]
    code, out, _ = cli("search", "kind:decision", "helper", "--explain")
    assert code == 0 and "rel" in out and "helper must stay pure" in out
    assert cli.json("what")["branch"] == "feature/speed"
    graph = cli.json("graph", m.id, "--depth", "2")
    assert any(n["node"] == "file:src/util.py" for n in graph["neighbours"])
    code, _, err = cli("graph", "no-such-node")
    assert code == 1 and "no node" in err
    code, _, err = cli("search", "x", "--kind", "opinion")
    assert code == 1 and "unknown kind" in err
