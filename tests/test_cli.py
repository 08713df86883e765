"""Every `cortex` command, driven in-process through `main()` against real repositories and a real store."""

import json

import pytest

from .conftest import Cli


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


def test_stats_git_and_gc(cli, repo):
    cli.json("remember", "one")
    cli.json("remember", "two", "--kind", "task")
    stats = cli.json("stats")["stores"][0]
    assert stats["active"] == 2 and stats["open_tasks"] == 1 and stats["by_kind"] == {"note": 1, "task": 1}
    ctx = cli.json("git")
    assert ctx["branch"] == "main" and len(ctx["commits"]) == 2
    assert cli.json("gc")["versions_removed"] >= 1


def test_remember_reads_stdin(cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("from standard input\n"))
    assert cli.json("remember", "-")["memory"]["text"] == "from standard input\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (("remember", ""), "empty"),
        (("remember", "x", "--kind", "opinion"), "unknown kind"),
        (("show", "nope"), "no memory"),
        (("done", "nope"), "no memory"),
        (("forget",), "needs a memory id"),
        (("list", "--status", "weird"), "unknown status"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(cli, args, message):
    cli.json("remember", "something stored first")
    code, out, err = cli(*args)
    assert code != 0 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert len(cli.json("list")) == 1


def test_reads_on_a_directory_without_a_database_say_so(tmp_path, capsys):
    code, _, err = Cli(tmp_path, capsys)("list")
    assert code == 1 and "no cortex database" in err


def test_non_git_directory_works(tmp_path, capsys):
    cli = Cli(tmp_path, capsys)
    made = cli.json("remember", "plain directory note")
    assert made["memory"]["branch"] == "" and (tmp_path / ".cortex" / "db").is_dir()
    assert cli.json("git")["is_repo"] is False


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
    other = Cli(tmp_path, capsys)
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


def test_import_of_invalid_utf8_stores_nothing(cli, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.md").write_text("# fine\ntext\n")
    (bad / "b.md").write_bytes(b"# broken\n\xff\xfe text\n")
    cli.json("remember", "already here")
    code, _, err = cli("import", str(bad))
    assert code == 1 and "not valid UTF-8" in err and "b.md" in err
    assert [m["text"] for m in cli.json("list")] == ["already here"]
