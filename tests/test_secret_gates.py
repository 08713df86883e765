"""Every generated credential form (`tests/secret_forms.py`) through every gate, as users reach them: the CLI through
the resident server, the MCP server attached to it, `cortex import`, and the engine in-process.

Gates: the index (files of 12 types, every form in each), a memory's text, title, tags, key and files (CLI, MCP,
import), and output (search, context, show, list, export) over rows that hold raw secrets (rows written before a
rule existed). Nothing may be found afterwards under `.cortex/`, the global store, the vector cache or the
server's log, in a LanceDB row, nor in any output. A canary stored the same way proves the byte search can see
stored text at all. Nothing here is timed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import lancedb
import pytest
from cortex_tui.app.cli import client
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.index.walk import Listed, vet_source
from cortex_tui.core.locations import cache_dir
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.secrets.secrets import find_secrets, redact

from .conftest import git
from .secret_forms import FILE_NAMES, FILE_TYPES, FORMS, Sample, file_text, line, samples
from .test_mcp import server
from .test_serve import runtime, status  # noqa: F401  (the fixture)

RAW_MEMORY = "a1b2c3d4e5f6"


def leaked(blob: str | bytes, batch: list[Sample]) -> list[str]:
    """The forms whose value (or its longest random run) is in `blob`, as stored or lowercased (full-text tokens)."""
    if isinstance(blob, bytes):
        blob = blob.decode("utf-8", "replace")
    # A needle found as stored is found lowercased too; a sample's value holds its longest random run, so the run
    # alone decides (one scan per sample instead of four: the blobs here are megabytes).
    folded = blob.lower()
    return sorted({s.form.kind for s in batch for n in _least(s.needles) if n.lower() in folded})


def _least(needles: tuple[str, ...]) -> list[str]:
    """The needles that hold no other needle: where one of these is absent, so is any needle holding it."""
    return [n for n in needles if not any(other != n and other in n for other in needles)]


def stored_bytes(*directories: Path) -> bytes:
    return b"\n".join(p.read_bytes() for d in directories if d.exists() for p in sorted(d.rglob("*")) if p.is_file())


def table_rows(uri: str) -> str:
    db = lancedb.connect(uri)
    return "\n".join(repr(db.open_table(name).to_arrow().to_pylist()) for name in db.list_tables().tables)


def build_repo(repo: Path, batch: list[Sample], canary: str) -> None:
    for kind in FILE_TYPES:
        path = repo / FILE_NAMES[kind]
        path.parent.mkdir(parents=True, exist_ok=True)
        text = file_text(batch, kind)
        path.write_text(text if kind in ("json", "ipynb") else f"{text}\n{_comment(kind)} {canary} orders\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Settings of the orders service")


def _comment(kind: str) -> str:
    return {"py": "#", "ts": "//", "go": "//", "yaml": "#", "toml": "#", "tf": "#", "sh": "#", "md": "",
            "ini": ";", "xml": "<!--"}[kind]


def test_one_verdict_for_a_text_wherever_it_comes_from():
    """The index's scan of a file and the output's scan of the same text agree (the index used to scan code files
    in a mode that only saw quoted values: an Azure connection string in a .py file was stored raw and shown
    redacted)."""
    batch = samples()
    assert len(FORMS) >= 120 and len({f.kind for f in FORMS}) == len(FORMS) and len(FILE_TYPES) >= 8
    for kind in FILE_TYPES:
        text = file_text(batch, kind)
        source, _ = vet_source(Listed(FILE_NAMES[kind], len(text), 0), text.encode())
        assert source is not None and source.text == redact(text)[0]
        assert leaked(source.text, batch) == [], kind


def test_every_form_in_every_field_is_refused_or_redacted_in_process(repo):
    engine = Engine(repo)
    batch = samples()
    for sample in batch:
        note = line(sample)
        for field in ("text", "title", "tags", "key", "context"):
            draft = {"text": MemoryDraft(note), "title": MemoryDraft("ok", title=note),
                     "tags": MemoryDraft("ok", tags=("deploy", note)), "key": MemoryDraft("ok", source_key=note),
                     "context": MemoryDraft("ok", context=note)}[field]
            with pytest.raises(CortexError, match=f"memory's {field} looks like it contains a secret"):
                engine.remember(draft)
    # Paths are normalised before they reach the engine (`//` collapsed): a URL in a path is still a URL.
    files = tuple(f"deploy/{line(s)}".replace("//", "/") for s in batch)
    made = engine.remember(MemoryDraft("Where the settings live", files=files)).memory
    assert len(made.files) == len(batch) and leaked(json.dumps(made.to_json()), batch) == []


async def test_every_form_is_caught_at_every_gate_through_the_server(empty_repo, runtime, capsys, tmp_path,
                                                                      monkeypatch):
    repo, batch = empty_repo, samples()
    rng = random.Random(7)
    canary = "canary" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(16))
    build_repo(repo, batch, canary)
    monkeypatch.chdir(repo)
    shown: list[str] = []

    def cortex(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = client.main(list(args))
        out, err = capsys.readouterr()
        shown.extend((out, err))
        return code, out, err

    # The index gate: every file is indexed (embedded too: `--wait`), with its secrets redacted.
    code, out, err = cortex("index", "--wait")
    assert code == 0, err
    index = Engine(repo).code_index()
    chunks = index.chunks.to_arrow().to_pylist()
    assert {c["path"] for c in chunks} >= {FILE_NAMES[k] for k in FILE_TYPES}
    assert all(c["embedded"] for c in chunks)
    assert sum("«redacted" in c["text"] for c in chunks) >= len(FILE_TYPES)

    # The memory gates on the CLI: each form in each free-text field is refused with one line; in files, redacted.
    for sample in batch:
        note = line(sample)
        for option in ("text", "--title", "--tags", "--key"):
            args = ("remember", note) if option == "text" else ("remember", "Deploy notes", option, note)
            code, out, err = cortex(*args)
            assert code == 1 and err.count("\n") == 1 and "looks like it contains a secret" in err, (note, err)
            assert option.lstrip("-").rstrip("s") in err
    code, out, err = cortex("remember", "Where the settings live", "--json",
                            *[a for s in batch for a in ("--files", f"deploy/{line(s)}")])
    assert code == 0, err
    assert status(repo)["running"]  # the commands went to a resident server
    assert len(json.loads(out)["memory"]["files"]) == len(batch)

    # MCP, attached to the same server.
    async with server(repo, "--no-watch") as mcp:
        for sample in batch:
            note = line(sample)
            for arguments in ({"text": note}, {"text": "ok", "title": note}, {"text": "ok", "tags": [note]},
                              {"text": "ok", "key": note}):
                result = await mcp.call_tool("remember", arguments)
                assert result.is_error and "looks like it contains a secret" in result.content[0].text, arguments
                shown.append(result.content[0].text)
        result = await mcp.call_tool("remember", {"text": "Where the deploy settings live",
                                                  "files": [f"deploy/{line(s)}" for s in batch]})
        assert not result.is_error
        shown.append(json.dumps(result.structured_content))

    # Import: a record per form and field; the files of every form in one record.
    records = tmp_path / "notes.jsonl"
    rows = [{"text": "ok", **{field: [line(s)] if field == "tags" else line(s)}} for s in batch
            for field in ("text", "title", "tags", "key")]
    rows.append({"text": "Imported settings notes", "files": [f"deploy/{line(s)}" for s in batch]})
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cortex("import", str(records), "--skip-bad", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["created"] == 1 and len(report["bad"]) == 4 * len(batch)

    # Nothing stored: every byte of the database, the global store, the vector cache and the server's log; every row.
    engine = Engine(repo)
    places = (repo / ".cortex", tmp_path / "global-db", runtime, cache_dir())
    disk = stored_bytes(*places)
    assert canary.encode() in disk  # the search sees stored text
    assert leaked(disk, batch) == []
    assert leaked(table_rows(engine.db_uri), batch) == []

    # The output gate: rows stored raw before a rule existed are redacted in every answer.
    _store_raw_rows(engine, batch)
    task = "change the deploy settings, tokens and passwords of the orders service"
    for args in (("search", "orders settings token password", "--limit", "50"), ("search", canary),
                 ("context", task, "--budget", "200000"), ("context", task, "--format", "json", "--budget", "200000"),
                 ("select", task, "--budget", "200000"), ("show", RAW_MEMORY), ("list",), ("export",), ("what",)):
        code, out, err = cortex(*args)
        assert code == 0, (args, err)
        assert leaked(out + err, batch) == [], args
    async with server(repo, "--no-watch") as mcp:
        for tool, arguments in (("smart_search", {"query": "orders settings token password"}),
                                ("select_context", {"task": task, "budget": 200000}), ("what_should_i_know", {})):
            result = await mcp.call_tool(tool, arguments)
            assert not result.is_error
            assert leaked(json.dumps(result.structured_content), batch) == [], tool
    assert leaked("\n".join(shown), batch) == []
    assert any("«redacted" in s for s in shown)


def _store_raw_rows(engine: Engine, batch: list[Sample]) -> None:
    """Chunks and a memory holding every form raw, written straight to the tables (as rows from before a rule)."""
    raw = "".join(line(s) + "\n" for s in batch)
    db = lancedb.connect(engine.db_uri)
    chunks = db.open_table("chunks")
    row = chunks.search().where(f"path = '{FILE_NAMES['md']}'").limit(1).to_list()[0]
    row.pop("_distance", None)
    chunks.add([{**row, "id": "raw" + row["id"][3:], "text": "orders settings token password\n" + raw}])
    memories = db.open_table("memories")
    memory = memories.search().where("text = 'Where the settings live'").limit(1).to_list()[0]
    memory.pop("_distance", None)
    memories.add([{**memory, "id": RAW_MEMORY, "source_key": "raw-orders-settings", "title": "orders settings " + raw[:300],
                   "text": "orders settings token password\n" + raw}])


def test_the_found_spans_are_the_values_and_the_names_stay(repo):
    """Redaction keeps what a reader needs: the name of the setting and the text around the value."""
    for sample in samples():
        text = line(sample)
        out, count = redact(text)
        assert count >= 1 and "«redacted" in out
        if not sample.form.multiline and "=" in text and not text.startswith(("machine", "curl", "Authorization")):
            assert out.startswith(sample.form.name), (text, out)
    assert find_secrets("") == []
