"""The agent context as files: a contexa workspace (`.GCC/`, built here by hand from contexa's documented layout)
imported with every branch, step and commit, idempotently; the live files in `.cortex/agent/` after CLI operations
say what the store holds, and parse back to it exactly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cortex_tui.core.agentlog.agentlog_files import read_agent_dir
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError

from .conftest import Cli, git
from .test_secrets import fake_secrets

T = "2026-03-0{}T10:{:02d}:00.000000+00:00"


def _t(day: int, minute: int) -> str:
    return T.format(day, minute)


def _step(n: int, at: str, observation: str, thought: str, action: str, legacy: bool = False) -> str:
    header = f"### Step {n}-{at}" if legacy else f"### Step {n} — {at}"
    return (f"{header}\n**Observation:** {observation}\n\n**Thought:** {thought}\n\n**Action:** {action}\n\n"
            + ("--------\n" if legacy else "---\n"))


def _commit(commit_id: str, at: str, purpose: str, summary: str, contribution: str) -> str:
    return (f"## Commit `{commit_id}`\n**Timestamp:** {at}\n\n**Branch Purpose:** {purpose}\n\n"
            f"**Previous Progress Summary:** {summary}\n\n**This Commit's Contribution:** {contribution}\n\n---\n")


def _metadata(name: str, purpose: str, created_from: str, created_at: str, status: str = "active",
              merged_into: str | None = None, merged_at: str | None = None) -> str:
    into = merged_into or "null"
    when = f"'{merged_at}'" if merged_at else "null"
    return (f"created_at: '{created_at}'\ncreated_from: '{created_from}'\nmerged_at: {when}\nmerged_into: {into}\n"
            f"name: {name}\npurpose: {purpose}\nstatus: {status}\n")


REGEX_STEPS = [
    (1, _t(1, 20), "regex is slower\non long lines", "measure it", "benchmark tokenize()"),
    (2, _t(1, 25), "regex breaks on emoji", "a line of its own:\n\\---\nkept", "revert the regex"),
]


def contexa_workspace(root: Path) -> Path:
    """What contexa writes for: init, two steps, a commit with a roadmap update, a branch with two steps and a
    commit, a merge back into main (copies under `## Merged from`, a merge commit, a roadmap update), one more step
    (in contexa's older `### Step N-<time>` / `--------` form) and a roadmap appended on its own."""
    gcc = root / ".GCC"
    (gcc / "branches" / "main").mkdir(parents=True)
    (gcc / "branches" / "try-regex").mkdir(parents=True)
    (gcc / "main.md").write_text(
        f"# Project Roadmap\n\n**Initialized:** {_t(1, 0)}\n\nMake the parser handle unicode\n"
        f"\n## Update ({_t(1, 15)})\nThen: UTF-16 with a BOM\n"
        f"\n## Update ({_t(1, 41)})\nMerged `try-regex`: regex rejected: slower and wrong on emoji\n"
        "\nAlso: report undecodable bytes by offset\n", encoding="utf-8")
    main_log = ("# OTA Log — branch `main`\n\n"
                + _step(1, _t(1, 5), "parse() fails on ünïcode", "decode first", "read src/parse.py")
                + _step(2, _t(1, 10), "decode() assumes utf-8", "", "detect the BOM")
                + f"\n## Merged from `try-regex` ({_t(1, 40)})\n\n"
                + "".join(_step(*s) for s in REGEX_STEPS)
                + _step(5, _t(1, 50), "BOM detection works", "commit next", "run the tests", legacy=True))
    (gcc / "branches" / "main" / "log.md").write_text(main_log, encoding="utf-8")
    (gcc / "branches" / "main" / "commit.md").write_text(
        "# Commit History — branch `main`\n\n"
        + _commit("a1b2c3d4", _t(1, 15), "Primary reasoning trajectory", "Initial state — no prior commits.",
                  "BOM detection picks the codec")
        + _commit("e5f6a7b8", _t(1, 41), "Primary reasoning trajectory",
                  "Merging branch `try-regex` with purpose: try a regex tokenizer",
                  "regex rejected: slower and wrong on emoji"), encoding="utf-8")
    (gcc / "branches" / "main" / "metadata.yaml").write_text(
        _metadata("main", "Primary reasoning trajectory", "", _t(1, 0)), encoding="utf-8")
    (gcc / "branches" / "try-regex" / "log.md").write_text(
        "# OTA Log — branch `try-regex`\n\n" + "".join(_step(*s) for s in REGEX_STEPS), encoding="utf-8")
    (gcc / "branches" / "try-regex" / "commit.md").write_text(
        "# Commit History — branch `try-regex`\n\n"
        + _commit("0c0ffee1", _t(1, 30), "try a regex tokenizer", "Initial state — no prior commits.",
                  "regex measured: slower, wrong on emoji"), encoding="utf-8")
    (gcc / "branches" / "try-regex" / "metadata.yaml").write_text(
        _metadata("try-regex", "try a regex tokenizer", "main", _t(1, 16), "merged", "main", _t(1, 42)),
        encoding="utf-8")
    return gcc


def _counts(log) -> tuple[int, ...]:
    return (log.roadmap_table.count_rows(), log.branches_table.count_rows(), log.steps_table.count_rows(),
            log.commits_table.count_rows(), log.store.table.count_rows())


def test_a_contexa_workspace_imports_every_branch_step_and_commit_once(repo):
    contexa_workspace(repo)
    log = Engine(repo).agent_log(create=True)
    done = log.import_(repo)  # the directory holding .GCC/
    assert done.kind == "contexa workspace"
    assert done.added == {"branches": 2, "roadmap": 3, "steps": 7, "commits": 3}

    assert [e.text for e in log.roadmap()] == [
        "Make the parser handle unicode", "Then: UTF-16 with a BOM",
        "Merged `try-regex`: regex rejected: slower and wrong on emoji\n\nAlso: report undecodable bytes by offset"]
    main, regex = log.get_branch("main"), log.get_branch("try-regex")
    assert (main.purpose, main.parent, main.status) == ("Primary reasoning trajectory", "", "active")
    assert (regex.parent, regex.status, regex.merged_into) == ("main", "merged", "main")
    steps = log.steps("main")
    assert [(s.n, s.origin) for s in steps] == [(1, ""), (2, ""), (3, "try-regex#1"), (4, "try-regex#2"), (5, "")]
    assert [s.observation for s in steps] == ["parse() fails on ünïcode", "decode() assumes utf-8",
                                               "regex is slower\non long lines", "regex breaks on emoji",
                                               "BOM detection works"]
    assert steps[3].thought == "a line of its own:\n---\nkept", "contexa's escaped rule reads back as a rule"
    assert steps[4].at.isoformat() == "2026-03-01T10:50:00+00:00" and steps[4].action == "run the tests"
    assert [(s.n, s.action) for s in log.steps("try-regex")] == [(1, "benchmark tokenize()"), (2, "revert the regex")]
    commits = log.commits("main")
    assert [(c.id, c.kind, c.steps, c.merged_from) for c in commits] == [
        ("a1b2c3d4", "commit", (1, 2), ""), ("e5f6a7b8", "merge", (3, 4), "try-regex")]
    assert commits[0].summary == "Initial state — no prior commits."
    assert commits[1].contribution == "regex rejected: slower and wrong on emoji"
    assert [(c.id, c.steps) for c in log.commits("try-regex")] == [("0c0ffee1", (1, 2))]
    assert [s.n for s in log.context().steps] == [5], "the step after the last commit is the pending one"
    memories = Engine(repo).list_memories(tag="agent-step", status="all", limit=None)
    assert len(memories) == 5, "each step logged once is a memory; the merge's copies are not"

    before = _counts(log)
    again = Engine(repo).agent_log().import_(repo / ".GCC")
    assert again.added == {} and _counts(log) == before, "a second import changes nothing"


def test_the_cli_says_what_an_import_did_and_refuses_a_different_context(repo, tmp_path):
    contexa_workspace(tmp_path)
    cli = Cli(repo)
    code, out, _ = cli("agent", "import", str(tmp_path / ".GCC"))
    assert code == 0 and out == ("imported a contexa workspace: 2 branches, 7 steps, 3 commits, 3 roadmap entries; "
                                 "on branch main: Primary reasoning trajectory\n")
    code, out, _ = cli("agent", "import", str(tmp_path))
    assert code == 0 and out == "nothing to import: this database's agent context already holds all of this contexa workspace\n"
    cli("agent", "log", "--obs", "only here")
    log_md = tmp_path / ".GCC" / "branches" / "main" / "log.md"
    log_md.write_text(log_md.read_text(encoding="utf-8") + _step(6, _t(2, 0), "only there", "", ""), encoding="utf-8")
    code, _, err = cli("agent", "import", str(tmp_path))
    assert code == 1 and err == (f"cortex: error: this database's agent context differs from {tmp_path} "
                                 "(step main#6): import into a database without one\n")


@pytest.mark.parametrize(("damage", "said"), [
    (lambda gcc: (gcc / "branches/try-regex/metadata.yaml").write_text("name: try-regex\nstatus: weird\n"
                                                                        "created_at: '2026-03-01T10:00:00'\n"),
     r"try-regex/metadata.yaml: status 'weird' is not active, merged or abandoned$"),
    (lambda gcc: (gcc / "branches/main/commit.md").write_text("## Commit `abc`\n**Timestamp:** yesterday\n"),
     r"main/commit.md:1: 'yesterday' is not an ISO time$"),
    (lambda gcc: (gcc / "main.md").write_text("# Project Roadmap\n\nno time here\n"),
     r"main.md: no `\*\*Initialized:\*\* <time>` line: not a contexa roadmap$"),
    (lambda gcc: (gcc / "branches/try-regex/log.md").unlink(), r"try-regex/log.md not found$"),
])
def test_a_damaged_workspace_is_one_line_naming_the_file_and_nothing_is_stored(repo, damage, said):
    damage(contexa_workspace(repo))
    log = Engine(repo).agent_log(create=True)
    with pytest.raises(CortexError, match=said):
        log.import_(repo)
    assert _counts(log)[:4] == (0, 0, 0, 0)


def test_a_secret_in_a_contexa_step_is_refused_and_nothing_is_stored(repo):
    gcc = contexa_workspace(repo)
    log_md = gcc / "branches" / "try-regex" / "log.md"
    secret = fake_secrets()["STEP_PASSWORD"]
    log_md.write_text(log_md.read_text(encoding="utf-8").replace("measure it", f"password: {secret}"),
                      encoding="utf-8")
    log = Engine(repo).agent_log(create=True)
    with pytest.raises(CortexError, match="looks like it contains a secret"):
        log.import_(repo)
    assert _counts(log)[:4] == (0, 0, 0, 0)


def test_the_live_files_follow_every_cli_operation_and_read_back_as_the_store(repo, tmp_path):
    cli = Cli(repo)
    cli.json("agent", "init", "Make the parser handle unicode")
    cli.json("agent", "log", "--obs", "parse() fails on a BOM", "--thought", "---\n**Thought:** looks like a label",
             "--action", "read src/parse.py")
    cli.json("agent", "commit", "BOM detection", "--roadmap", "Then: UTF-16")
    cli.json("agent", "branch", "try-regex", "try a regex tokenizer")
    cli.json("agent", "log", "--obs", "regex is slower", "--action", "benchmark")
    cli.json("agent", "commit", "regex rejected")
    cli.json("agent", "switch", "main")
    cli.json("agent", "merge", "try-regex", "--summary", "regex rejected: slower")
    cli.json("agent", "branch", "dead-end", "never works")
    cli.json("agent", "log", "--obs", "no")
    cli.json("agent", "abandon", "dead-end")
    cli.json("agent", "roadmap", "Also: UTF-32")
    cli.json("agent", "log", "--obs", "pending on main")

    live = repo / ".cortex" / "agent"
    assert sorted(p.relative_to(live).as_posix() for p in live.rglob("*") if p.is_file()) == [
        ".cortex.json", "branches/dead-end/commit.md", "branches/dead-end/log.md", "branches/dead-end/metadata.yaml",
        "branches/main/commit.md", "branches/main/log.md", "branches/main/metadata.yaml",
        "branches/try-regex/commit.md", "branches/try-regex/log.md", "branches/try-regex/metadata.yaml", "main.md"]
    main_log = (live / "branches/main/log.md").read_text(encoding="utf-8")
    assert main_log.startswith("# OTA Log — branch `main`\n\n### Step 1 — ")
    assert "**Observation:** parse() fails on a BOM\n\n**Thought:** \\---\n\\**Thought:** looks like a label\n" in main_log
    assert "\n## Merged from `try-regex` (" in main_log and "**Observation:** pending on main" in main_log
    assert "status: merged\nmerged_into: main\nmerged_at: '" in \
        (live / "branches/try-regex/metadata.yaml").read_text(encoding="utf-8")
    assert "\n## Update (" in (live / "main.md").read_text(encoding="utf-8")

    log = Engine(repo).agent_log()
    kind, files = read_agent_dir(live)
    assert kind == "contexa workspace" and files == log._held(), "the files say what the store holds"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "main")
    other = Engine(elsewhere).agent_log(create=True)
    other.import_(live)
    log.export(tmp_path / "mine")
    other.export(tmp_path / "theirs")
    for path in sorted((tmp_path / "mine").rglob("*.*")):
        assert (tmp_path / "theirs" / path.relative_to(tmp_path / "mine")).read_bytes() == path.read_bytes(), path
    assert other.current() == "main"
    assert (elsewhere / ".cortex/agent/branches/main/log.md").read_text(encoding="utf-8") == main_log


def test_init_never_writes_over_another_contexts_files(repo):
    contexa_workspace(repo)
    shutil.copytree(repo / ".GCC", repo / ".cortex" / "agent")
    log = Engine(repo).agent_log(create=True)
    with pytest.raises(CortexError, match=r"agent holds another agent context's files: continue it with "):
        log.init("a new goal")
    assert not log.is_initialised()
    log.import_(repo / ".cortex" / "agent")
    assert [s.n for s in log.steps("main")] == [1, 2, 3, 4, 5]
    assert "<!-- cortex {" in (repo / ".cortex/agent/branches/main/log.md").read_text(encoding="utf-8")
