"""`cortex export --agents-md` through the resident server on a real repository: cortex's block between its markers,
the user's lines kept byte for byte, and writing again changes nothing."""

from __future__ import annotations

from cortex_tui.core.store.agents_file import END, START


def test_decisions_and_conventions_go_between_the_markers_idempotently(repo, cli):
    mine = "# House rules\n\nBe kind to the build.\n"
    (repo / "CLAUDE.md").write_text(mine, encoding="utf-8")
    made = cli.json("remember", "Money is integer cents [bold]never floats[/]; see " + END, "--kind", "decision",
                    "--files", "src/app.py", "--title", "Money in cents")
    cli("remember", "Branch names are kebab-case", "--kind", "note", "--tags", "convention")
    gone = cli.json("remember", "Use floats for money", "--kind", "decision")
    cli("forget", gone["memory"]["id"])

    first = cli.json("export", "--agents-md")
    assert first["files"] == ["CLAUDE.md"] and first["changed"] == ["CLAUDE.md"]
    assert not (repo / "AGENTS.md").exists(), "only the instruction files that exist are written"
    text = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert text.startswith(mine + "\n" + START + "\n") and text.endswith(END + "\n")
    block = text[text.index(START):]
    assert block.count(END) == 1, "a memory quoting the end marker cannot end the block"
    assert f"- **Money in cents** (src/app.py) [{made['memory']['id']}]: Money is integer cents [bold]never floats[/]" in block
    assert "### Conventions" in block and "Branch names are kebab-case" in block
    assert "floats for money" not in block

    again = cli.json("export", "--agents-md")
    assert again["changed"] == [] and (repo / "CLAUDE.md").read_text(encoding="utf-8") == text

    (repo / "CLAUDE.md").write_text(text + "\nMy own footer.\n", encoding="utf-8")
    cli("remember", "Logs are JSON lines", "--kind", "decision")
    cli.json("export", "--agents-md")
    updated = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert updated.startswith(mine) and updated.endswith(END + "\n\nMy own footer.\n") and "Logs are JSON lines" in updated


def test_without_an_instruction_file_agents_md_is_made_and_a_broken_block_is_left_alone(repo, cli):
    cli("remember", "Retries back off exponentially", "--kind", "decision")
    assert cli.json("export", "--agents-md")["files"] == ["AGENTS.md"]
    assert "Retries back off exponentially" in (repo / "AGENTS.md").read_text(encoding="utf-8")
    broken = f"notes\n{START}\nhalf a block\n"
    (repo / "AGENTS.md").write_text(broken, encoding="utf-8")
    code, _, err = cli("export", "--agents-md")
    assert code == 1 and "only one of cortex's markers" in err and err.count("\n") == 1
    assert (repo / "AGENTS.md").read_text(encoding="utf-8") == broken
