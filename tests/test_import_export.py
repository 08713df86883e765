"""`cortex import` and `cortex export` on real databases: bad records by line, exact round trips, keys and versions."""

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.store.importer import ImportPlan, plan_import

from .conftest import Cli

AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"


def jsonl(path, *records) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return str(path)


def failure(cli, *args) -> str:
    code, _, err = cli(*args)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_bad_record_names_its_line_and_nothing_is_stored(cli, tmp_path):
    cli.json("remember", "already here")
    source = jsonl(tmp_path / "notes.jsonl", {"text": "first"}, "", {"text": "second"}, '{"text": "third",', {"text": "5"})
    err = failure(cli, "import", source)
    assert "notes.jsonl line 4: invalid JSON" in err and "nothing was imported" in err and "--skip-bad" in err
    bad_kind = jsonl(tmp_path / "kinds.jsonl", {"text": "fine"}, {"text": "x", "kind": "gossip " * 5000})
    err = failure(cli, "import", bad_kind)
    assert "kinds.jsonl line 2: unknown kind 'gossip gossip" in err and "characters)" in err and len(err) < 400
    wrong_type = jsonl(tmp_path / "types.jsonl", {"text": "fine"}, {"text": "x"}, {"text": "y", "tags": "a,b"})
    assert "types.jsonl line 3: tags must be a list of strings" in failure(cli, "import", wrong_type)
    (tmp_path / "bytes.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    assert "bytes.jsonl line 2: not valid UTF-8" in failure(cli, "import", str(tmp_path / "bytes.jsonl"))
    array = tmp_path / "list.json"
    array.write_text(json.dumps([{"text": "a"}, {"text": "b", "created_at": "yesterday"}]))
    assert "list.json record 2: created_at 'yesterday' is not an ISO date" in failure(cli, "import", str(array))
    assert [m["text"] for m in cli.json("list")] == ["already here"]


def test_a_secret_in_a_document_names_its_own_line_not_its_sections(cli, tmp_path):
    """A markdown or text file is imported by sections; its refusal named the line the section began on (line 1
    for a secret on line 3)."""
    (tmp_path / "notes.md").write_text(f"plain note\n\ndeploy with {AWS_KEY}\n", encoding="utf-8")
    assert "notes.md line 3: text contains a secret (aws-key-id)" in failure(cli, "import", str(tmp_path / "notes.md"))
    (tmp_path / "deploy.txt").write_text(f"\n\n# Deploy\n\nfirst step\nthen {AWS_KEY}\n# Other\n{AWS_KEY}\n",
                                         encoding="utf-8")
    report = cli.json("import", str(tmp_path / "deploy.txt"), "--dry-run", "--skip-bad")
    assert [b["where"].rsplit(" ", 2)[-2:] for b in report["bad"]] == [["line", "6"], ["line", "8"]]
    (tmp_path / "lead.md").write_text(f"\n\nlead in {AWS_KEY}\n", encoding="utf-8")
    assert "lead.md line 3: text contains a secret" in failure(cli, "import", str(tmp_path / "lead.md"))


def test_a_secret_record_aborts_unless_skip_bad_which_stores_the_rest(cli, tmp_path):
    source = jsonl(tmp_path / "mixed.jsonl", {"text": "keep me"}, {"text": f"deploy with {AWS_KEY}"},
                   {"text": "keep me too", "title": "[bold]markup[/] is text"}, "not json")
    err = failure(cli, "import", source)
    assert "mixed.jsonl line 2: text contains a secret (aws-key-id)" in err and AWS_KEY not in err
    assert "1 more bad record" in err
    with pytest.raises(Exception):
        cli.json("list")
    report = cli.json("import", source, "--skip-bad")
    assert report["created"] == 2 and [b["where"].rsplit(" ", 2)[-2:] for b in report["bad"]] == [["line", "2"], ["line", "4"]]
    assert AWS_KEY not in json.dumps(report)
    stored = cli.json("list")
    assert sorted(m["text"] for m in stored) == ["keep me", "keep me too"]
    assert "[bold]markup[/] is text" in {m["title"] for m in stored}
    code, out, _ = cli("import", source, "--skip-bad")
    assert code == 0 and "skipped bad record" in out and "line 2" in out


def test_two_plain_records_with_one_key_leave_one_active(cli, tmp_path):
    source = jsonl(tmp_path / "keyed.jsonl", {"text": "deploy on fridays", "key": "deploy"}, {"text": "unrelated"},
                   {"text": "never deploy on fridays", "key": "deploy"})
    report = cli.json("import", source)
    assert (report["created"], report["new_version"]) == (2, 1)
    versions = cli.json("history", "deploy")
    assert [(v["version"], v["status"], v["text"]) for v in versions] == [
        (1, "superseded", "deploy on fridays"), (2, "active", "never deploy on fridays")]
    assert [m["text"] for m in cli.json("list") if m["source_key"] == "deploy"] == ["never deploy on fridays"]


def test_an_import_logged_to_a_file_ends_on_its_last_progress_line(cli, tmp_path):
    """Progress on a standard error that is not a terminal (a log, CI) said one line per few seconds: a short import
    logged its first batch, "embedding 32/300 chunks (10%)", and nothing after. The last line of a phase is always
    said now, and an import counts memories, not chunks."""
    source = jsonl(tmp_path / "notes.jsonl", *({"text": f"note {n}: the cache is warmed at boot"} for n in range(40)))
    code, _, err = cli("import", source)
    lines = [line for line in err.splitlines() if line.startswith("cortex: importing")]
    assert code == 0 and lines, err
    assert lines[-1].startswith("cortex: importing 40/40 memories (100%)"), lines
    assert "chunks" not in err, err


def test_an_import_in_batches_builds_the_vector_index_once_after_its_last_batch(repo, tmp_path, monkeypatch):
    """The batch that took the table past the vector index's threshold built it (+140 MB and 2 minutes at 20,000
    rows), and every later batch's rows stayed outside it. At test size: batches of 40, a threshold of 50, 120
    notes; the index is built after the last batch, once, over all 120, and the progress says so and says the file
    was checked."""
    from cortex_tui.app.cli import transfer_commands
    from cortex_tui.core.engine import Engine
    from cortex_tui.core.store import importer, indexes

    monkeypatch.setattr(indexes, "ANN_MIN_ROWS", 50)
    monkeypatch.setattr(importer, "IMPORT_BATCH", 40)
    monkeypatch.setattr(transfer_commands, "CHECKING_SHOWN_BYTES", 1)
    source = jsonl(tmp_path / "notes.jsonl", *({"text": f"note {n}: the cache warms {n % 7} shards"} for n in range(120)))
    code, out, err = Cli(repo, served=False)("import", source)
    assert code == 0 and "120 new" in out, err
    size = Path(source).stat().st_size
    assert f"cortex: importing: checking {size:,}/{size:,} bytes (100%)" in err, err
    assert err.count("cortex: importing: building the vector index") == 1, err
    assert err.index("importing 120/120 memories") < err.index("building the vector index"), err
    table = Engine(repo).store().table
    [vector] = [i for i in table.list_indices() if i.columns == ["vector"]]
    stats = table.index_stats(vector.name)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (120, 0)


def _build_history(cli) -> dict:
    """Several versions per key, a deleted memory, a closed task, tags, files and markup in titles."""
    for n in range(1, 5):
        cli.json("remember", f"retry policy, revision {n}", "--key", "retry", "--tags", "net,policy", "--files", "src/app.py")
    for n in range(1, 3):
        cli.json("remember", f"[red]style[/] rule {n}", "--key", "style", "--title", "[b]Style[/b]")
    gone = cli.json("remember", "a note that is forgotten later")["memory"]["id"]
    cli.json("forget", gone)
    task = cli.json("remember", "ship the importer", "--kind", "task")["memory"]["id"]
    cli.json("done", task)
    cli.json("remember", "plain fact", "--kind", "fact", "--symbols", "main")
    return {"gone": gone, "task": task, "first_retry": cli.json("history", "retry")[0]["id"]}


def test_export_import_export_is_byte_identical_with_versions_ids_status_and_times(cli, repo, tmp_path, capsys):
    made = _build_history(cli)
    source = tmp_path / "all.jsonl"
    cli("export", "--all-versions", "-o", str(source), "--no-global")
    assert len(source.read_text().splitlines()) == 9
    fresh = Cli(tmp_path)
    db = ["--db", str(tmp_path / "fresh-db"), "--no-global"]
    report = fresh.json("import", str(source), *db)
    assert report["restored"] == 9 and report["created"] == 0

    again = tmp_path / "again.jsonl"
    fresh("export", "--all-versions", "-o", str(again), *db)
    assert again.read_bytes() == source.read_bytes()
    active, active_again = tmp_path / "active.jsonl", tmp_path / "active-again.jsonl"
    cli("export", "-o", str(active), "--no-global")
    fresh("export", "-o", str(active_again), *db)
    assert active_again.read_bytes() == active.read_bytes()

    old = fresh.json("show", made["first_retry"], *db)
    assert (old["version"], old["status"], old["tags"], old["files"]) == (1, "superseded", ["net", "policy"], ["src/app.py"])
    assert fresh.json("show", made["gone"], *db)["status"] == "deleted"
    assert fresh.json("show", made["task"], *db)["task_state"] == "done"
    assert [v["status"] for v in fresh.json("history", "retry", *db)] == ["superseded"] * 3 + ["active"]
    assert [m["text"] for m in fresh.json("list", *db) if m["source_key"] == "retry"] == ["retry policy, revision 4"]

    # importing the same export again, here or into the database it came from, changes nothing
    assert fresh.json("import", str(source), *db)["already_present"] == 9
    assert cli.json("import", str(source), "--no-global")["restored"] == 0
    fresh("export", "--all-versions", "-o", str(again), *db)
    assert again.read_bytes() == source.read_bytes()
    assert len(cli.json("list", "--status", "all", "--no-global")) == 9


def test_exact_records_that_disagree_still_leave_one_active_version_per_key(cli, tmp_path):
    cli.json("remember", "local first version", "--key", "shared")
    cli.json("remember", "local second version", "--key", "shared")
    stamp = "2024-05-01T10:00:00+00:00"
    source = jsonl(tmp_path / "exact.jsonl",
                   {"id": "aaaaaaaaaaa1", "text": "imported one", "key": "shared", "version": 1, "status": "active", "created_at": stamp},
                   {"id": "aaaaaaaaaaa2", "text": "imported two", "key": "shared", "version": 2, "status": "active", "created_at": stamp},
                   {"id": "aaaaaaaaaaa3", "text": "lonely", "key": "other", "version": 7, "status": "active", "created_at": stamp})
    assert cli.json("import", source)["restored"] == 3
    versions = cli.json("history", "shared")
    assert [(v["version"], v["status"]) for v in versions] == [(1, "superseded"), (2, "superseded"), (3, "superseded"), (4, "active")]
    assert versions[-1]["id"] == "aaaaaaaaaaa2" and versions[2]["id"] == "aaaaaaaaaaa1"
    assert cli.json("show", "aaaaaaaaaaa3")["version"] == 7
    twice = jsonl(tmp_path / "twice.jsonl", {"id": "bbbbbbbbbbb1", "text": "a"}, {"id": "bbbbbbbbbbb1", "text": "b"})
    assert "twice.jsonl line 2: id bbbbbbbbbbb1 appears twice" in failure(cli, "import", twice)


PAGE = """<!doctype html><html><head><title>Deploy guide</title><style>body { color: red }</style>
<script>document.title = "[bold]not text";</script></head>
<body><nav>Home | About</nav>
<p>Intro   text with <b>bold</b> &amp; entities, and markup that is text: [bold]x[/].</p>
<h2>Rollback</h2><p>Run <code>make rollback</code> then
check the logs.</p><ul><li>first</li><li>second</li></ul>
<h2>Shell</h2><pre>make deploy
  --dry</pre>
<p>unclosed <i>tags <b>everywhere
</body>"""

FEED = """<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Team notes</title>
<entry><title>Cache decision</title><content>We cache prices for <em>5 minutes</em>.</content></entry>
<entry id="invoices"><content>Invoices are numbered per year.</content></entry>
</feed>"""


def _documents(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.html").write_text(PAGE, encoding="utf-8")
    (docs / "feed.xml").write_text(FEED, encoding="utf-8")
    jsonl(docs / "log.ndjson", {"text": "Builds run on every push.", "kind": "fact"}, "", {"text": "Tags are releases."})
    return docs


def test_html_xml_and_ndjson_are_imported_as_their_text_keyed_by_where_it_was_read(cli, tmp_path):
    docs = _documents(tmp_path)
    report = cli.json("import", str(docs))
    assert (report["files"], report["created"], report["bad"]) == (3, 8, [])
    stored = {m["title"]: m for m in cli.json("list")}
    assert set(stored) == {"Deploy guide", "Rollback", "Shell", "Team notes", "Cache decision", "invoices",
                           "Builds run on every push.", "Tags are releases."}
    intro = stored["Deploy guide"]["text"]
    assert intro == "Home | About\n\nIntro text with bold & entities, and markup that is text: [bold]x[/]."
    assert stored["Rollback"]["text"] == "## Rollback\n\nRun make rollback then check the logs.\n\nfirst\n\nsecond"
    assert "make deploy\n  --dry" in stored["Shell"]["text"] and "unclosed tags everywhere" in stored["Shell"]["text"]
    assert not any("<" in m["text"] or "color" in m["text"] or "document.title" in m["text"] for m in stored.values())
    assert stored["Cache decision"]["text"] == "Cache decision\nWe cache prices for\n5 minutes\n."
    assert stored["invoices"]["text"] == "Invoices are numbered per year." and stored["Team notes"]["text"] == "Team notes"
    assert stored["Builds run on every push."]["kind"] == "fact"
    assert stored["Rollback"]["source_key"] == f"import:{(docs / 'guide.html').as_posix()}#1:Rollback"
    assert stored["invoices"]["source_key"].startswith(f"import:{(docs / 'feed.xml').as_posix()}#")
    assert all("imported" in stored[t]["tags"] for t in ("Deploy guide", "Cache decision"))
    again = cli.json("import", str(docs))
    assert again["duplicate"] == 8 and again["created"] == 0, "importing the same files again stores nothing new"


def test_dry_run_lists_what_would_be_stored_and_stores_nothing(cli, repo, tmp_path):
    docs = _documents(tmp_path)
    (docs / "keys.html").write_text(f"<p>deploy with {AWS_KEY}</p>", encoding="utf-8")
    (docs / "bomb.xml").write_text('<?xml version="1.0"?><!DOCTYPE b [<!ENTITY a "aaaaaaaaaa">'
                                   + "".join(f'<!ENTITY {c} "{("&" + p + ";") * 10}">' for p, c in
                                             zip("abcdefgh", "bcdefghi", strict=True))
                                   + "]><b>&i;</b>", encoding="utf-8")
    code, out, err = cli("import", str(docs), "--dry-run", "--json")
    assert code == 1, err
    report = json.loads(out)
    assert report["dry_run"] is True and report["files"] == 5
    assert [w["title"] for w in report["would_store"]] == [
        "Team notes", "Cache decision", "invoices", "Deploy guide", "Rollback", "Shell", "", ""]
    assert report["would_store"][4]["where"] == f"{docs / 'guide.html'} line 5"
    assert report["would_store"][4]["key"] == f"import:{(docs / 'guide.html').as_posix()}#1:Rollback"
    bad = {b["where"].rsplit("/", 1)[-1]: b["reason"] for b in report["bad"]}
    assert bad["keys.html line 1"] == "text contains a secret (aws-key-id)" and "invalid XML" in bad["bomb.xml"]
    assert AWS_KEY not in out + err
    assert not (repo / ".cortex").exists(), "a dry run creates no database"
    code, out, _ = cli("import", str(docs), "--dry-run", "--skip-bad")
    assert code == 0 and "would import 8 record(s) from 5 file(s); nothing was stored" in out
    assert "guide.html line 5: note 'Rollback'" in out and "bad record" in out and AWS_KEY not in out
    assert not (repo / ".cortex").exists()
    assert cli.json("import", str(docs), "--skip-bad")["created"] == 8


def test_a_dry_run_lists_the_first_records_and_counts_the_rest(repo, tmp_path, monkeypatch):
    """A dry run held and printed every record: 100,000 lines, 316 MB with --json. It lists the first
    `DRY_RUN_LISTED` (3 here) and counts the rest, in text and JSON alike; bad records are still all named."""
    from cortex_tui.app.cli import transfer_commands

    monkeypatch.setattr(transfer_commands, "DRY_RUN_LISTED", 3)
    source = jsonl(tmp_path / "notes.jsonl", *({"text": f"note {n}"} for n in range(10)), "not json")
    cli = Cli(repo, served=False)
    code, out, err = cli("import", source, "--dry-run", "--skip-bad")
    assert code == 0, err
    assert out.splitlines()[:5] == [
        "would import 10 record(s) from 1 file(s); nothing was stored",
        *(f"  {source} line {n}: note '' (6 characters)" for n in (1, 2, 3)),
        "  … and 7 more (the first 3 are listed)"]
    assert f"bad record {source} line 11: invalid JSON" in out
    report = json.loads(cli("import", source, "--dry-run", "--skip-bad", "--json")[1])
    assert report["records"] == 10 and [w["where"] for w in report["would_store"]] == [
        f"{source} line {n}" for n in (1, 2, 3)]
    assert not (repo / ".cortex").exists()


def test_input_nested_100000_deep_is_one_line_naming_the_depth_limit(cli, tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.json").write_text(deep)
    (tmp_path / "deep.jsonl").write_text(json.dumps({"text": "fine"}) + "\n" + deep + "\n")
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "0f1e2d3c.jsonl").write_text(deep + "\n")
    # Deeper than the limit but well within what Python's parser takes: refused all the same.
    (tmp_path / "deep65.json").write_text(json.dumps({"text": "x", "anchors": json.loads("[" * 65 + "]" * 65)}))
    for args, where in ((["deep.json"], "deep.json"), (["deep.jsonl"], "deep.jsonl line 2"),
                        (["deep65.json"], "deep65.json"), (["--claude-sessions", "sessions"], "0f1e2d3c.jsonl line 1")):
        err = failure(cli, "import", *(a if a.startswith("--") else str(tmp_path / a) for a in args))
        assert f"{where}: arrays and objects nested more than 64 deep (the limit)" in err, err
        assert "Recursion" not in err
    with pytest.raises(AssertionError, match="no cortex database"):
        cli.json("list")  # nothing was written: not even the database


def test_an_import_is_written_in_bounded_batches_that_keep_each_keys_versions_in_order():
    drafts = [MemoryDraft(text=f"record {n}", source_key=key) for n, key in enumerate("abaca")]
    plan = ImportPlan(entries=[(f"line {n}", d) for n, d in enumerate(drafts, 1)])
    assert [[d.text for d in batch] for batch in plan.rounds(most=2)] == [
        ["record 0", "record 1"], ["record 3"], ["record 2"], ["record 4"]]


def test_a_files_plan_holds_no_record_and_reads_its_batches_from_the_file_as_they_are_stored(tmp_path):
    """An import holds one batch's records at a time: the plan keeps counts and the keys seen twice, never the
    records (100,000 held took 300 MB before the first write), and each batch is read from the file when asked."""
    records = [{"text": f"record {n}", **({"key": key} if key else {})} for n, key in enumerate("abac" + "-" * 2996)]
    path = tmp_path / "notes.jsonl"
    jsonl(path, *[{k: v for k, v in r.items() if v != "-"} for r in records])
    plan_import(Path(jsonl(tmp_path / "first.jsonl", {"text": "the modules a plan needs, imported"})))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        plan = plan_import(path)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert plan.entries == [] and held < 200_000, f"the plan holds {held:,} bytes for 3,000 records"
    assert (plan.tally.drafts, plan.tally.exact, plan.tally.repeated) == (3000, 0, {"a": 2})
    rounds = plan.rounds(most=1000)
    first = next(rounds)
    assert [d.text for d in first[:3]] == ["record 0", "record 1", "record 3"] and len(first) == 1000
    # The file is read batch by batch: a record changed after the first batch was taken is read as it is now.
    path.write_text(path.read_text(encoding="utf-8").replace("record 2999", "record two thousand"), encoding="utf-8")
    rest = list(rounds)
    assert [len(b) for b in rest] == [1000, 999, 1] and rest[1][-1].text == "record two thousand"
    assert [d.text for d in rest[2]] == ["record 2"]


def test_bringing_a_vector_index_up_to_date_prints_no_lancedb_warning(tmp_path):
    """LanceDB's index optimize (the last step of every compaction: the upkeep, `cortex gc`, `cortex index`) printed
    "Vector index statistics currently include centroids ..." on standard error, once a process, when a vector index
    had rows to add. Any process that loads the store's modules now opts into LanceDB's coming default. In a process
    of its own: the warning is printed once a process, and from LanceDB's native code, past Python's `sys.stderr`."""
    script = f"""
import cortex_tui.core.store.indexes
import lancedb, numpy as np, pyarrow as pa
from lancedb.index import HnswSq

def rows(lo, n):
    v = np.random.default_rng(lo).standard_normal((n, 8)).astype("float32")
    return pa.table({{"id": [str(i) for i in range(lo, lo + n)],
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 8)}})

table = lancedb.connect({str(tmp_path)!r}).create_table("m", rows(0, 600))
table.create_index("vector", config=HnswSq(num_partitions=1))
table.add(rows(600, 50))
table.optimize()
print([i.num_unindexed_rows for i in table.list_indices()])
"""
    env = {k: v for k, v in os.environ.items() if k != "LANCE_INCLUDE_VECTOR_CENTROIDS"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "[0]", done.stderr
    assert "WARN" not in done.stderr, done.stderr
