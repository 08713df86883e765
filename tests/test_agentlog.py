"""The agent context controller on a real repository and database: operations, context(k), merges, export/import,
concurrent logging from real processes, and agent memories reaching search and the timeline."""

import json
import subprocess
import sys
import textwrap

import pytest
from cortex_tui.core.agentlog.agentlog import MAIN
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError

from .conftest import Cli, commit_file, git


@pytest.fixture
def log(repo):
    agent = Engine(repo).agent_log(create=True)
    agent.init("Make the parser handle unicode")
    return agent


def _counts(log) -> tuple[int, int, int, int]:
    return (log.steps_table.count_rows(), log.commits_table.count_rows(), log.branches_table.count_rows(),
            log.store.table.count_rows())


def test_steps_number_per_branch_and_commits_cover_the_steps_since_the_last(log, repo):
    assert [log.log_ota(f"obs {i}", "t", f"act {i}").n for i in range(1, 4)] == [1, 2, 3]
    first = log.commit("Parser reads UTF-8", update_roadmap="Also support UTF-16")
    assert first.steps == (1, 2, 3) and first.summary == "" and first.kind == "commit"
    assert first.head == Engine(repo).git().head and first.purpose == "Make the parser handle unicode"
    log.log_ota("obs 4", "t", "act 4")
    second = log.commit("Handles BOMs")
    assert second.steps == (4,)
    assert second.summary == "- Parser reads UTF-8", "progress so far defaults to the previous commit's"
    third = log.log_ota("obs 5", "", "act 5") and log.commit("Decoder errors are reported", previous_summary="Done: UTF-8, BOM")
    assert third.summary == "Done: UTF-8, BOM"
    assert [e.text for e in log.roadmap()] == ["Make the parser handle unicode", "Also support UTF-16"]


def test_context_k1_and_k3(log):
    for contribution in ("one", "two", "three", "four"):
        log.log_ota(f"before {contribution}", "", "work")
        log.commit(contribution)
    log.log_ota("pending observation", "pending thought", "pending action")
    one, three = log.context(k=1), log.context(k=3)
    assert [c.contribution for c in one.commits] == ["four"] and one.earlier_commits == 3
    assert [c.contribution for c in three.commits] == ["two", "three", "four"] and three.earlier_commits == 1
    for context in (one, three):
        assert [s.observation for s in context.steps] == ["pending observation"]
        assert context.committed_steps == 4
    assert [s.observation for s in one.commit_steps] == ["before four"]
    assert [s.observation for s in three.commit_steps] == ["before two", "before three", "before four"]
    md1, md3 = one.markdown(), three.markdown()
    assert "pending action" in md1 and "before four" in md1 and "before three" not in md1, \
        "the steps of the last k commits are shown under them, older ones stay behind their commit"
    assert md1.count("### commit") == 1 and md3.count("### commit") == 3
    assert "Progress before:\n- one\n- two\n- three" in md1, "the progress summary accumulates"
    assert "Make the parser handle unicode" in md1 and "## Branch `main` (active)" in md1


def test_branch_switch_merge(log):
    log.log_ota("main work", "", "a")
    log.commit("main milestone")
    made = log.branch("try-regex", "try a regex tokenizer")
    assert made.parent == MAIN and log.current() == "try-regex"
    log.log_ota("regex is slower", "measure", "benchmark")
    log.log_ota("regex is wrong on emoji", "", "revert")
    log.commit("regex rejected")
    log.switch(MAIN)
    log.log_ota("back on main", "", "b")
    merge = log.merge("try-regex")
    main_steps = log.steps(MAIN)
    assert [s.n for s in main_steps] == [1, 2, 3, 4]
    assert [s.origin for s in main_steps[2:]] == ["try-regex#1", "try-regex#2"]
    assert main_steps[3].observation == "regex is wrong on emoji"
    assert merge.kind == "merge" and merge.branch == MAIN and merge.merged_from == "try-regex"
    assert merge.steps == (3, 4), "the merge commit covers the steps it brought in"
    assert "regex rejected" in merge.contribution
    assert log.get_branch("try-regex").status == "merged" and log.get_branch("try-regex").merged_into == MAIN
    context = log.context()
    assert [s.observation for s in context.steps] == [] or context.steps[0].n > 4
    with pytest.raises(CortexError, match="only active|merged"):
        log.log_ota("late", "", "x", branch="try-regex")


def test_bad_operations_change_nothing(log):
    log.log_ota("o", "t", "a")
    log.commit("c")
    log.branch("side", "p")
    log.log_ota("side o", "", "")
    log.merge("side")
    before = _counts(log)
    for call, message in (
        (lambda: log.merge(MAIN), "into itself"),
        (lambda: log.merge("side"), "already merged"),
        (lambda: log.switch("missing"), "no agent branch 'missing'"),
        (lambda: log.switch("side"), "merged"),
        (lambda: log.commit("nothing new"), "nothing to commit"),
        (lambda: log.branch("", "p"), "bad branch name"),
        (lambda: log.branch("a/b", "p"), "bad branch name"),
        (lambda: log.branch("../up", "p"), "bad branch name"),
        (lambda: log.branch("side", "p"), "already exists"),
        (lambda: log.log_ota("", " ", ""), "empty step"),
        (lambda: log.init("again"), "already exists"),
    ):
        with pytest.raises(CortexError, match=message):
            call()
    assert _counts(log) == before
    assert log.current() == MAIN


def test_uninitialised_log_says_how_to_start(repo):
    with pytest.raises(CortexError, match="cortex agent init"):
        Engine(repo).agent_log(create=True).log_ota("o", "t", "a")


def test_export_import_round_trip_is_exact(log, tmp_path):
    log.log_ota("saw: ünïcode breaks", "multi\nline thought", "edit src/app.py")
    log.commit("first", update_roadmap="handle emoji: 🙂")
    log.branch("idea", "a: risky idea")
    log.log_ota("risky", "", "try")
    log.commit("tried")
    log.switch(MAIN)
    log.merge("idea", summary="merged the idea")
    log.branch("dead-end", "never works")
    log.log_ota("no", "", "")
    log.abandon("dead-end")
    first = tmp_path / "first"
    files = log.export(first)
    assert {p.relative_to(first).as_posix() for p in files} >= {
        "roadmap.md", "metadata.yaml", "branches/main/log.md", "branches/idea/commits.md"}
    assert "saw: ünïcode breaks" in (first / "branches/main/log.md").read_text(encoding="utf-8")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "main")
    other = Engine(elsewhere).agent_log(create=True)
    other.import_(first)
    second = tmp_path / "second"
    other.export(second)
    for path in files:
        assert (second / path.relative_to(first)).read_bytes() == path.read_bytes(), path.name
    assert other.context(k=3).markdown() == log.context(k=3).markdown()
    assert other.current() == MAIN
    assert other.import_(first).added == {}, "importing the same export again adds nothing"
    log.log_ota("only in the first database", "", "")
    other.log_ota("only in the second database", "", "")
    third = tmp_path / "third"
    log.export(third)
    with pytest.raises(CortexError, match=r"^this database's agent context differs from .*third \(step main#\d+\): "):
        other.import_(third)


def test_concurrent_processes_get_distinct_gap_free_steps(log, repo):
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from cortex_tui.core.engine import Engine
        log = Engine(Path({str(repo)!r})).agent_log()
        print(" ".join(str(log.log_ota(f"proc {{sys.argv[1]}} step {{i}}", "", "act").n) for i in range(4)))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for p in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    numbers = sorted(int(n) for out, _ in outputs for n in out.split())
    assert numbers == list(range(1, 13))
    steps = log.steps(MAIN)
    assert [s.n for s in steps] == list(range(1, 13))
    assert len({s.observation for s in steps}) == 12


def test_the_cli_drives_a_session_and_search_finds_committed_steps(repo, capsys):
    commit_file(repo, "src/lexer.py", "def lex(text):\n    return text.split()\n", "Add the lexer")
    cli = Cli(repo)
    assert cli.json("agent", "init", "Speed up the lexer")["branch"]["name"] == MAIN
    step = cli.json("agent", "log", "--obs", "src/lexer.py allocates a list per token", "--thought",
                    "a generator avoids the quadratic copying", "--action", "rewrite lex as a generator")
    assert step["n"] == 1
    commit = cli.json("agent", "commit", "lex yields tokens lazily")
    assert commit["steps"] == [1]
    code, _, err = cli("agent", "commit", "again")
    assert code == 1 and "nothing to commit" in err and "\n" not in err.strip()
    hits = cli.json("search", "quadratic copying generator")["hits"]
    assert any(h["id"] == step["memory_id"] for h in hits[:3])
    assert cli("agent", "roadmap", "then cache the token table")[1] == "roadmap entry 2 added\n"
    code, _, err = cli("agent", "roadmap", "  ")
    assert code == 1 and err.strip() == "cortex: error: the roadmap entry is empty"
    context = cli.json("agent", "context", "-k", "1")
    assert "lex yields tokens lazily" in context["markdown"] and context["commits"][0]["id"] == commit["id"]
    assert "2. then cache the token table" in context["markdown"]
    timeline = Engine(repo).timeline()
    marks = [m.id for e in timeline.entries for m in e.agent_commits]
    assert marks == [commit["memory_id"]], "the commit marks the timeline; its steps do not"
    assert cli("index", "--no-embed")[0] == 0
    graph = cli.json("graph", "src/lexer.py")
    assert any(n["node"] == f"mem:{step['memory_id']}" for n in graph["neighbours"]), "the step mentions the file"
    assert json.loads(json.dumps(cli.json("agent", "branches")))["current"] == MAIN


def test_init_and_branches_print_as_text(empty_repo):
    """Without --json, `cortex agent init` says where the context starts (it used to fail after writing it), and
    `cortex agent branches` counts each branch's steps and commits."""
    cli = Cli(empty_repo)
    code, out, err = cli("agent", "init", "Speed up the [bold]lexer[/]")
    assert out == "agent context on branch main: Speed up the [bold]lexer[/]\n"
    assert code == 0 and err.startswith(f"cortex: first run in {empty_repo}: ") and err.count("\n") == 1, err
    cli.json("agent", "log", "--obs", "slow")
    cli.json("agent", "commit", "measured")
    cli.json("agent", "log", "--obs", "still slow")
    code, out, err = cli("agent", "branches")
    assert code == 0 and out.split("\t")[:6] == ["*", "main", "active", "", "2", "1"], out
    code, out, _ = cli("agent", "context", "-k", "1")
    assert code == 0 and "Contribution:\nmeasured\n1. **O:** slow" in out and "2. **O:** still slow" in out


def test_an_oversized_field_is_refused_by_its_size_before_its_scan(log):
    big = "the parser reads one token at a time " * 60_000 + "end"  # 2.2 MB: over the 1 MB limit of a memory
    size = f"{len(big):,}"
    with pytest.raises(CortexError, match=f"^the observation is {size} bytes; the limit is 1,000,000$"):
        log.log_ota(big, "", "")
    with pytest.raises(CortexError, match=f"^the contribution is {size} bytes; the limit is 1,000,000$"):
        log.commit(big)
    assert _counts(log)[:2] == (0, 0)


def test_an_export_nested_100000_deep_is_one_line_naming_the_depth_limit(log, tmp_path):
    log.log_ota("saw it", "", "")
    exported = tmp_path / "export"
    log.export(exported)
    (exported / "metadata.yaml").write_text("[" * 100_000 + "]" * 100_000)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "main")
    with pytest.raises(CortexError, match=r"metadata.yaml: arrays and objects nested more than 64 deep \(the limit\)$"):
        Engine(elsewhere).agent_log(create=True).import_(exported)
