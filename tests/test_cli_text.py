"""The CLI's text output shows user and repository text as it is: markup characters never style, crash or vanish."""

from __future__ import annotations

from .conftest import commit_file

TITLE = "fix [/] closing tag [bold]loud[/bold]"
SUBJECT = "Handle [/] in paths [link=x]y"


def test_markup_characters_print_literally_in_every_text_answer(cli, repo):
    commit_file(repo, "src/paths.py", "def handle(path):\n    return path\n", SUBJECT)
    code, out, err = cli("remember", "paths with [/] inside them break the parser", "--title", TITLE,
                         "--files", "src/paths.py")
    assert code == 0, err
    memory_id = cli.json("list")[0]["id"]
    for args in (("show", memory_id), ("list",), ("what",), ("search", "closing tag"), ("git",),
                 ("graph", "src/paths.py")):
        code, out, err = cli(*args)
        assert code == 0, (args, err)
        if args[0] in ("show", "search"):
            assert TITLE in out, (args, out)
    code, out, _ = cli("what")
    assert SUBJECT in out


def test_text_output_redacts_a_secret_already_stored(cli, repo):
    """Rows written before every field was checked can hold a secret; the text answer redacts it like JSON does."""
    from cortex_tui.app.output import console
    from cortex_tui.core.secrets import redacted

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert redacted(f"token {token}") != f"token {token}"
    with console.capture() as captured:
        console.print(f"stored title {token}")
    assert token not in captured.get() and "stored title" in captured.get()
