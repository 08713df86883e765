"""Every `cortex` command, driven in-process through `main()` against real repositories and a real store."""

import json
import re

import pytest

from .conftest import Cli, both_modes, read_terminal, wait_for


@both_modes
def test_init_then_remember_show_list(cli, repo):
    assert cli.json("init")["is_repo"] is True
    made = cli.json("remember", "Retry uploads three times", "--kind", "decision", "--tags", "net,retry", "--files", "src/app.py")
    assert made["outcome"] == "created"
    shown = cli.json("show", made["memory"]["id"])
    assert shown["tags"] == ["net", "retry"] and shown["files"] == ["src/app.py"] and shown["branch"] == "main"
    listed = cli.json("list", "--kind", "decision")
    assert [m["id"] for m in listed] == [shown["id"]]
    assert cli.json("list", "--tag", "nope") == []
    code, out, _ = cli("show", shown["id"])
    assert code == 0 and "Retry uploads three times" in out


@both_modes
def test_the_first_command_in_a_directory_says_what_it_made_and_what_stays(cli, repo, tmp_path):
    """A first run in the wrong place (a home directory, a repository's parent) made `.cortex/` and left a resident
    server in silence. The command that makes `.cortex/` says where, how many files it lists for the index and, when a resident
    server ran it, that the server stays and how to end it; the commands after it say nothing more."""
    stays = ("; a resident server keeps the engine warm for the CLI, the dashboard and agents, and exits after 10 idle "
             "minutes; `cortex serve --stop` ends it now") if cli.served else ""
    code, out, err = cli("remember", "Prices include tax", "--json")
    assert code == 0 and json.loads(out)["outcome"] == "created", "the answer on standard output stays whole"
    assert err == f"cortex: first run in {repo}: made .cortex/ there (kept out of git); 2 files listed for the index (binary and secret ones are skipped){stays}\n"
    assert cli("remember", "Carts round once")[2] == ""

    plain = tmp_path / "notes"
    (plain / "drafts").mkdir(parents=True)
    for name in ("a.md", "b.md", "drafts/c.md"):
        (plain / name).write_text(f"# {name}\n")
    code, out, err = Cli(plain / "drafts", cli.served)("init")
    assert code == 0 and (plain / "drafts" / ".cortex").is_dir()
    assert err.startswith(f"cortex: first run in {plain / 'drafts'}: made .cortex/ there (not a git repository: cortex "
                          "works on the plain directory); 1 file listed for the index (binary and secret ones are skipped)")


@both_modes
def test_history_forget_purge_and_done(cli):
    cli.json("remember", "v1 text", "--key", "k")
    cli.json("remember", "v2 text", "--key", "k")
    versions = cli.json("history", "k")
    assert [(v["version"], v["status"]) for v in versions] == [(1, "superseded"), (2, "active")]
    task = cli.json("remember", "ship it", "--kind", "task")["memory"]
    assert cli.json("done", task["id"])["task_state"] == "done"
    assert cli.json("list", "--status", "open") == []
    cli.json("forget", "--key", "k")
    assert [m["status"] for m in cli.json("list", "--status", "all") if m["source_key"] == "k"] == ["deleted", "superseded"]
    cli.json("forget", "--key", "k", "--purge")
    assert all(m["source_key"] != "k" for m in cli.json("list", "--status", "all"))


def test_smart_search_is_the_first_name_of_ss(cli):
    """`cortex smart-search`, the name the cortex design gave it, is `cortex ss` (one command, through the server)."""
    made = cli.json("remember", "Deploys happen on fridays", "--kind", "decision")["memory"]
    assert [h["id"] for h in cli.json("smart-search", "deploy fridays", "--limit", "3")["hits"]] == \
        [h["id"] for h in cli.json("ss", "deploy fridays", "--limit", "3")["hits"]]
    assert cli.json("smart-search", "deploy fridays")["hits"][0]["id"] == made["id"]


@pytest.mark.parametrize("columns", [None, "57", "0", "wide", "-3"])
def test_help_is_as_wide_as_argparse_makes_it(monkeypatch, columns):
    """The parser's formatter finds the width shutil would find, without importing shutil."""
    import shutil

    from cortex_tui.app.terminal_size import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_the_parsers_table_names_every_command_in_the_module_that_declares_it():
    """The thin client imports a command's module from this table alone, and `cortex --help` lists them in its order."""
    import importlib

    from cortex_tui.app.cli import parser

    for module, names in parser.COMMAND_MODULES.items():
        declared = importlib.import_module(module, "cortex_tui.app.cli").COMMANDS
        assert names == tuple(name for command in declared for name in (command.name, *command.aliases)), module


@both_modes
def test_stats_git_and_gc(cli, repo):
    cli.json("remember", "one")
    cli.json("remember", "two", "--kind", "task")
    stats = cli.json("stats")["stores"][0]
    assert stats["active"] == 2 and stats["open_tasks"] == 1 and stats["by_kind"] == {"note": 1, "task": 1}
    ctx = cli.json("git")
    assert ctx["branch"] == "main" and len(ctx["commits"]) == 2
    assert cli.json("gc")["versions_removed"] >= 1


@both_modes
def test_remember_reads_stdin(cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"from standard input\n")))
    assert cli.json("remember", "-")["memory"]["text"] == "from standard input\n"


@both_modes
def test_search_reads_its_query_from_stdin(cli, monkeypatch):
    import io

    assert cli("remember", "Invoices are rounded half-even at the ledger", "--kind", "decision")[0] == 0
    assert cli("remember", "The cart keeps one price per region")[0] == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"invoice rounding\n")))
    found = cli.json("ss", "-", "--memories-only")
    assert found["query"] == "invoice rounding"
    assert "half-even" in found["hits"][0]["text"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b" \n")))
    code, _, err = cli("search", "-")
    assert code == 1 and err == ("cortex: error: standard input holds no query (`cortex search` without words "
                                 "searches for what you are working on)\n")


BAD_INPUT = [
    (("remember", ""), "empty"),
    (("remember", "x", "--kind", "opinion"), "unknown kind"),
    (("show", "nope"), "no memory"),
    (("done", "nope"), "no memory"),
    (("forget",), "needs a memory id"),
    (("list", "--status", "weird"), "unknown status"),
]


@both_modes
def test_bad_input_is_one_line_and_non_zero(cli):
    cli.json("remember", "something stored first")
    for args, message in BAD_INPUT:
        code, out, err = cli(*args)
        assert code != 0 and message in err and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert len(cli.json("list")) == 1


def test_reads_on_a_directory_without_a_database_say_so(tmp_path, capsys):
    code, _, err = Cli(tmp_path)("list")
    assert code == 1 and "no cortex database" in err


def test_non_git_directory_works(tmp_path, capsys):
    cli = Cli(tmp_path)
    made = cli.json("remember", "plain directory note")
    assert made["memory"]["branch"] == "" and (tmp_path / ".cortex" / "db").is_dir()
    assert cli.json("git")["is_repo"] is False


@both_modes
def test_import_markdown_and_jsonl_then_export_round_trip(cli, repo, tmp_path, capsys):
    docs = tmp_path / "docs"
    (docs / "ignored").mkdir(parents=True)
    (docs / "notes.md").write_text("intro line\n\n# Storage\nWe use LanceDB.\n\n## Caching\nCache by hash.\n```\n# not a heading\n```\n")
    (docs / "ignored" / "skip.md").write_text("# Skip\nshould not be imported\n")
    (docs / ".gitignore").write_text("ignored/\n")
    (docs / ".env").write_text("TOKEN=abc\n")
    (docs / "records.jsonl").write_text(
        json.dumps({"text": "Open task", "kind": "task", "key": "t1", "tags": ["x"], "task_state": "done"}) + "\n"
        + json.dumps({"text": "A fact", "kind": "fact", "created_at": "2024-01-02T03:04:05+00:00"}) + "\n"
    )
    report = cli.json("import", str(docs))
    assert report["created"] == 5 and report["files"] == 2
    assert any(s["reason"] == "secret file" for s in report["skipped"])
    titles = {m["title"] for m in cli.json("list")}
    assert {"notes", "Storage", "Caching", "Open task", "A fact"} == titles
    caching = next(m for m in cli.json("list") if m["title"] == "Caching")
    assert "# not a heading" in caching["text"]
    assert cli.json("import", str(docs))["duplicate"] == 5

    exported = tmp_path / "out.jsonl"
    cli.json("export", "-o", str(exported))
    other = Cli(tmp_path)
    fresh_db = str(tmp_path / "fresh-db")
    code, _, err = other("import", str(exported), "--db", fresh_db, "--no-global")
    assert code == 0, err
    again = tmp_path / "again.jsonl"
    code, _, err = other("export", "-o", str(again), "--db", fresh_db, "--no-global")
    assert code == 0, err

    def comparable(path):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return sorted((r["kind"], r["title"], r["text"], r["key"], r["task_state"], r["created_at"], tuple(r["tags"])) for r in rows)

    assert comparable(exported) == comparable(again)


@both_modes
def test_import_of_invalid_utf8_stores_nothing(cli, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.md").write_text("# fine\ntext\n")
    (bad / "b.md").write_bytes(b"# broken\n\xff\xfe text\n")
    cli.json("remember", "already here")
    code, _, err = cli("import", str(bad))
    assert code == 1 and "not valid UTF-8" in err and "b.md" in err
    assert [m["text"] for m in cli.json("list")] == ["already here"]


def run_cortex(*args: str, cwd=None, stdin: str | None = None):
    """`cortex` as a real process, the installed entry point (standard error is then not a terminal)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=env, timeout=300)


def test_global_options_before_or_after_the_command(repo, tmp_path, capsys):
    from cortex_tui.app.cli.main import main

    db = str(tmp_path / "elsewhere-db")
    assert main(["--db", db, "-C", str(repo), "remember", "kept in another database", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert main(["--json", "--db", db, "--no-global", "-C", str(repo), "list"]) == 0
    assert [m["id"] for m in json.loads(capsys.readouterr().out)] == [made["memory"]["id"]]
    assert main(["list", "-C", str(repo), "--db", db, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert not (repo / ".cortex").exists(), "--db given before the command was honoured"
    # nested subcommands: options before the group, between the group and the op, and after it
    assert main(["-C", str(repo), "--db", db, "agent", "--json", "init", "a goal"]) == 0
    assert json.loads(capsys.readouterr().out)["branch"]["name"] == "main"
    assert main(["--json", "agent", "-C", str(repo), "log", "--db", db, "--obs", "seen"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 1


def test_missing_path_before_the_command_is_one_line(tmp_path):
    done = run_cortex("-C", str(tmp_path / "nonexistent"), "search", "x")
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "does not exist" in done.stderr and "invalid choice" not in done.stderr
    usage = run_cortex("--json", "bogus-command")
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and "invalid choice" in usage.stderr


@both_modes
def test_since_too_far_back_is_one_line(cli):
    cli.json("remember", "anything at all")
    for since in ("99999999d", "99999999999999999999w"):
        code, _, err = cli("search", "x", "--since", since)
        assert code == 1 and err.count("\n") == 1 and "OverflowError" not in err and since in err


@pytest.mark.parametrize("args", [("list", "--limit", "-1"), ("search", "x", "--limit", "0"), ("what", "--limit", "0"),
                                  ("select", "x", "--max-items", "-1"), ("context", "x", "--max-items", "0"),
                                  ("graph", "x", "--depth", "0"), ("agent", "context", "-k", "-1")])
def test_out_of_range_numbers_are_refused_in_one_line(repo, capsys, args):
    from cortex_tui.app.cli.main import main

    assert main(["-C", str(repo), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "less than" in err


@pytest.mark.parametrize("args, message", [
    (("select", "x", "--min-score", "nan"), "'nan' is not a finite number"),
    (("context", "x", "--min-score", "inf"), "'inf' is not a finite number"),
    (("git", "--commits", "-5"), "-5 is less than 0"),
    (("mcp", "--http", "-1"), "-1 is less than 1"),
    (("mcp", "--http", "99999999"), "99999999 is not a port"),
    (("serve", "--idle-minutes", "nan"), "'nan' is not a finite number"),
    (("serve", "--idle-minutes", "0"), "0 is not more than 0"),
])
def test_numbers_that_are_not_numbers_or_out_of_range_are_refused_in_one_line(repo, capsys, args, message):
    """`nan` as a score floor kept only memories (every code comparison with nan is false), `--commits -5` printed
    the whole history, and a port out of range died in a traceback after the server had started."""
    from cortex_tui.app.cli.main import main

    assert main(["-C", str(repo), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@both_modes
def test_an_output_file_that_cannot_be_written_is_named_in_one_line(cli, tmp_path):
    cli.json("remember", "something to export")
    missing = tmp_path / "no" / "such" / "dir" / "out.md"
    for args, target in ((("context", "x", "-o", str(missing)), missing), (("export", "-o", str(missing)), missing),
                         (("context", "x", "-o", str(tmp_path)), tmp_path)):
        code, _, err = cli(*args)
        assert code == 1 and err.count("\n") == 1, err
        assert err.startswith(f"cortex: error: {target}: ") and "Error:" not in err and "CORTEX_DEBUG" not in err, err
    assert len(cli.json("list")) == 1


def test_index_prints_progress_lines_when_not_a_terminal_and_skipped_only_lists(repo):
    from .conftest import commit_file

    commit_file(repo, ".env", "TOKEN=x\n", "Add an env file")
    commit_file(repo, "blob.bin", "\x00\x01binary", "Add a binary")
    before = run_cortex("index", "--skipped", "-C", str(repo))
    assert before.returncode == 1 and before.stderr.count("\n") == 1
    done = run_cortex("index", "--no-embed", "-C", str(repo))
    assert done.returncode == 0, done.stderr
    *lines, first_run = done.stderr.splitlines()
    assert first_run == f"cortex: first run in {repo}: made .cortex/ there (kept out of git); 3 files listed for the index (binary and secret ones are skipped)"
    assert lines and all(line.startswith("cortex: indexing") for line in lines)
    assert {"listing", "writing", "done"} <= {line.split(": ")[2].split()[0] for line in lines}
    assert "index --skipped` lists them" in done.stdout

    (repo / "src" / "app.py").write_text("def main():\n    return 2\n")
    listed = run_cortex("--json", "index", "--skipped", "-C", str(repo))
    assert listed.returncode == 0 and listed.stderr == ""
    assert {".env", "blob.bin"} <= {s["path"] for s in json.loads(listed.stdout)}
    status = run_cortex("index", "--status", "--json", "-C", str(repo))
    assert json.loads(status.stdout)["stale"] == 1, "--skipped did not index the changed file"


def test_index_on_a_terminal_shows_the_rate_and_what_is_left(repo):
    """`cortex index --wait` in a terminal (as the installed command runs) said only the phase and done/total for the
    minutes a first embedding takes; now it says the rate and an estimate, as the dashboard. (Without `--wait` the
    command returns after the lexical pass: test_index_background.py.)"""
    import os
    import pty
    import subprocess
    import sys

    from .conftest import git

    # The rate shows once embedding has run 2 s (`progress.MIN_SECONDS`): 200 chunks of the model's full 256 tokens,
    # about 4 s on a quiet machine (42 small chunks took 1 s there, and the test passed only on a busy one).
    sentence = "The handler reads the request, checks the retries and returns the stored value or the default.\n    "
    for n in range(50):
        (repo / "pkg").mkdir(exist_ok=True)
        (repo / "pkg" / f"mod_{n}.py").write_text("".join(
            f"def handler_{n}_{k}(request, retries={k}):\n    \"\"\"{sentence * 16}\"\"\"\n"
            f"    return request.get('value_{k}', {n}) * retries\n\n\n" for k in range(4)), encoding="utf-8")
    git(repo, "add", "pkg")
    git(repo, "commit", "-qm", "Add the handlers")
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"}
    done = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.client", "index", "--wait", "-C", str(repo)],
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    out, reader = read_terminal(leader)
    assert done.wait(timeout=600) == 0, out.decode("utf-8", "replace")
    reader.join(timeout=30)
    os.close(leader)
    shown = out.decode("utf-8", "replace")
    assert re.search(r"embedding [\d,]+/[\d,]+ chunks \(\d+%\)", shown), shown[-2000:]
    assert re.search(r"\d+(\.\d)?/s", shown) and re.search(r"about \d+ (s|min) left", shown), shown[-2000:]
    assert "indexed " in shown
    assert "[progress" not in shown, "the bar's style is applied, not printed"


def test_the_progress_bar_on_a_terminal_shows_its_line_styled_never_markup():
    """The bar `cortex index` draws on a terminal printed its column's markup: `[progress.description]indexing: ...`.
    Drawn here on a real pseudo-terminal, as a person's terminal receives it."""
    import io
    import os
    import pty

    from cortex_tui.app.output import Output

    leader, follower = pty.openpty()
    terminal = os.fdopen(follower, "w", encoding="utf-8")
    shown, reader = read_terminal(leader)
    out = Output(io.StringIO(), terminal, {"TERM": "xterm-256color", "COLUMNS": "120"})

    def drawn() -> str:
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode("utf-8", "replace"))

    with out.progress_bar("indexing") as update:
        for done in (0, 96, 500, 2247):
            update(done, 2247, "embedding")
            # Each count drawn before the next (the bar redraws ten times a second, later on a loaded machine).
            assert wait_for(lambda: f" {done:,}/2,247 chunks" in drawn()), (done, drawn())
    terminal.close()
    reader.join(timeout=10)
    os.close(leader)
    text = drawn()
    assert "indexing: embedding 500/2,247 chunks (22%)" in text, text
    assert "[" not in text, "no markup tag, nor any bracket, is printed"
    assert b"\x1b[" in shown, "styled: the terminal gets colours, not tags"


def test_watch_says_what_each_update_did_in_the_dashboards_words(repo):
    """`cortex watch` printed ": 0 updated, 0 removed in 0 ms" for the catch-up pass and "git state changed" for a
    commit; it now prints the dashboard's top-bar line for each update."""
    import queue
    import signal
    import subprocess
    import sys
    import threading

    from .conftest import git

    proc = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.client", "watch", "--no-embed", "-C", str(repo)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def next_line(what: str) -> str:
        try:
            return lines.get(timeout=120)
        except queue.Empty:
            pytest.fail(f"cortex watch printed no line for {what}")

    try:
        assert "watching" in next_line("the start")
        seen = []  # the line is printed once the file system watch is in place
        (repo / "src" / "app.py").write_text("def main():\n    return 2\n")
        while not any("src/app.py" in line for line in seen):
            seen.append(next_line("the edit"))
        git(repo, "commit", "-qam", "Return two")
        while not any("branch or HEAD moved" in line for line in seen):
            seen.append(next_line("the commit"))
        assert all(line.startswith("index updated: ") for line in seen), seen
        assert not any("()" in line or " 0 ms" in line or "0 updated" in line for line in seen), seen
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


@both_modes
def test_inline_filters_and_words_may_follow_options(cli, repo):
    """`cortex ss match --limit 3 file:src/map.py`: words after an option still belong to the query (argparse alone
    stops the word list at the first option); an unknown option is still a usage error."""
    from .conftest import commit_file

    commit_file(repo, "src/map.py", "def match(url):\n    return url\n", "map")
    commit_file(repo, "src/other.py", "def match_other(url):\n    return url\n", "other")
    assert cli("index", "--no-embed")[0] == 0
    code, out, err = cli("--json", "search", "match", "--limit", "3", "file:src/map.py")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert hits and {h["path"] for h in hits} == {"src/map.py"}, hits
    code, out, err = cli("search", "match", "--limit", "3", "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_an_unknown_option_before_the_command_is_named(cli):
    """`cortex --frobnicate` said a command was missing; the word it could not read is the one to name."""
    for argv in (["--frobnicate"], ["--json", "--frobnicate", "list"], ["--db=somewhere", "--frobnicate"],
                 ["--no-global", "--frobnicate", "list"]):
        code, out, err = cli(*argv)
        assert code == 2 and "unrecognized option --frobnicate before the command" in err, (argv, err)
    code, out, err = cli("--json")
    assert code == 2 and "required: COMMAND" in err
    code, out, err = cli("--json", "init")
    assert code == 0, err
