"""The CLI's text output shows user and repository text as it is: markup characters never style, crash or vanish."""

from __future__ import annotations

import json

from .conftest import commit_file
from .test_serve import runtime, status  # noqa: F401  (runtime is a fixture)

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
    import io

    from cortex_tui.app.output import Output
    from cortex_tui.core.secrets.secrets import redacted

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert redacted(f"token {token}") != f"token {token}"
    out = Output(io.StringIO(), io.StringIO(), {})
    out.console.print(f"stored title {token}")
    assert token not in out.stdout.getvalue() and "stored title" in out.stdout.getvalue()


def test_escape_sequences_in_stored_text_do_not_reach_the_terminal(repo, tmp_path):
    """A memory (from an agent, say) or a commit subject holding escape sequences: on a terminal the CLI shows
    them as visible symbols instead of letting them set the title, clear the screen or reorder the line; piped
    output writes them as escapes (`\\x1b`)."""
    import os
    import subprocess
    import sys

    title_seq, clear, bidi = "\x1b]0;PWNED\x07", "\x1b[2J", "\u202e"
    commit_file(repo, "src/esc.py", "x = 1\n", f"Subject {clear}wiped {bidi}desrever")
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200", "PYTHONIOENCODING": "utf-8"}
    cortex = [sys.executable, "-m", "cortex_tui.app.cli.main", "-C", str(repo)]
    subprocess.run([*cortex, "remember", f"zqesc body {title_seq} and {clear} end", "--title", f"zqesc {clear}title"],
                   check=True, capture_output=True, env=env, timeout=300)

    def on_a_terminal(*args: str) -> str:
        return _on_a_pty([*cortex, *args], env, stdin_too=False)

    # (a small budget keeps the context under what a pty holds unread)
    for args in (("search", "zqesc"), ("list",), ("what",), ("git",), ("context", "zqesc body", "--budget", "400")):
        out = on_a_terminal(*args)
        assert title_seq not in out and clear not in out and bidi not in out, (args, out)
    assert "zqesc \u241b[2Jtitle" in on_a_terminal("list")
    assert "Subject \u241b[2Jwiped \ufffddesrever" in on_a_terminal("git")
    assert "zqesc body \u241b]0;PWNED\u2407" in on_a_terminal("context", "zqesc body", "--budget", "400")
    piped = subprocess.run([*cortex, "list"], capture_output=True, text=True, env=env, timeout=300).stdout
    assert "zqesc \\x1b[2Jtitle" in piped and clear not in piped, "a program reading the pipe gets escapes"


def test_a_command_started_with_its_output_streams_closed_ends_cleanly(repo):
    """`cortex git >&-` (stdout closed, so Python's sys.stdout is None) made the exit path itself fail with a
    traceback; with stderr closed the command's status went from 0 to 1."""
    import subprocess
    import sys

    cortex = [sys.executable, "-m", "cortex_tui.app.cli.main", "-C", str(repo), "git"]
    for closed in ({"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}, {"stdout": subprocess.PIPE}):
        done = subprocess.run(["bash", "-c", '"$@" >&- ' if "stderr" in closed else '"$@" 2>&-', "bash", *cortex],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr + done.stdout, (closed, done)


def test_piped_text_output_is_never_wrapped(cli, repo):
    """Output read by a program (`cortex what | cat`, `cortex ss ... | grep`) keeps each line whole: a 2,000-character
    subject and a long memory are one line each, whatever width a terminal would have."""
    subject = "Rework " + " ".join(f"part{i}" for i in range(300))
    commit_file(repo, "src/long.py", "def long_subject():\n    return 1\n", subject)
    text = "Retries back off " + " ".join(f"step{i}" for i in range(300))
    code, out, err = cli("remember", text, "--title", "backoff notes")
    assert code == 0, err
    memory_id = cli.json("list")[0]["id"]
    code, out, err = cli("show", memory_id)
    assert code == 0 and text in out.splitlines(), out
    code, out, err = cli("what")
    assert code == 0 and any(subject in line for line in out.splitlines()), out


FORGED = "line.py  imported by 99"


def test_a_file_name_with_a_newline_cannot_forge_a_line(cli, repo):
    """A file named `new\\nline.py` was printed raw, so a name could forge lines of any answer; now every path
    and title is printed on its own line's terms, as `new\\nline.py`."""
    (repo / "src" / "new\nline.py").write_text("def forged_line_marker():\n    return 1\n")
    (repo / "src" / "tab\tcr\rname.py").write_text("x = 1\n")
    code, out, err = cli("remember", "The forged_line_marker helper is temporary", "--title", "forged marker note",
                         "--files", "src/new\nline.py")
    assert code == 0, err
    memory_id = cli.json("list")[0]["id"]
    for args in (("what",), ("git",), ("ss", "forged_line_marker"), ("show", memory_id), ("list",),
                 ("select", "forged_line_marker", "--budget", "2000"), ("context", "forged_line_marker", "--budget", "2000")):
        code, out, err = cli(*args)
        assert code == 0, (args, err)
        lines = out.split("\n")
        assert not any(line.startswith("line.py") for line in lines), (args, out)
        assert "\r" not in out, (args, out)
        if args[0] in ("what", "git", "show"):
            assert "new\\nline.py" in out, (args, out)


def test_served_commands_print_on_a_terminal_of_size_0x0(repo, runtime):
    """`script -qc "cortex ss hello" /dev/null` gives a terminal of 0 columns: served commands printed nothing and
    exited 0 while `--no-daemon` printed. A new pty is 0x0 until someone sets its size."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    cortex = [sys.executable, "-m", "cortex_tui.app.cli.client", "-C", str(repo)]
    made = subprocess.run([*cortex, "remember", "Prices are cached per region", "--title", "zerosize pricing note"],
                          capture_output=True, env=env, timeout=300)
    assert made.returncode == 0, made.stderr
    memory_id = json.loads(subprocess.run([*cortex, "list", "--json"], capture_output=True, env=env,
                                          timeout=300).stdout)[0]["id"]

    def on_a_0x0_terminal(*args: str) -> str:
        return _on_a_pty([*cortex, *args], env, stdin_too=True, size=(0, 0))

    for args, said in ((("ss", "pricing"), "zerosize"), (("list",), "zerosize"), (("what",), "zerosize"),
                       (("stats",), "memories: 1 active"), (("show", memory_id), "zerosize"),
                       (("select", "pricing", "--budget", "500"), "/ 500 tokens")):
        out = on_a_0x0_terminal(*args)
        assert said in out, (args, out)
    assert status(repo)["running"], "these were served"


def _on_a_pty(command: list[str], env: dict, stdin_too: bool, size: tuple[int, int] | None = None) -> str:
    """What a command prints on a pseudo-terminal (its standard input too when `stdin_too`); it must succeed."""
    import os
    import pty
    import subprocess

    master, slave = pty.openpty()
    if size is not None:
        assert os.get_terminal_size(slave) == size
    done = subprocess.run(command, stdin=slave if stdin_too else subprocess.DEVNULL, stdout=slave, stderr=slave,
                          env=env, timeout=300)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert done.returncode == 0, out
    return out.decode("utf-8", "replace")


CONTROLS = "".join(map(chr, [*range(1, 0x20), 0x7F, *range(0x80, 0xA0)]))
"""Every C0 control but NUL (no argument can hold one), DEL and every C1 control."""
IN_A_LINE = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\v": "\\x0b", "\f": "\\x0c", "\x1c": "\\x1c", "\x1d": "\\x1d",
             "\x1e": "\\x1e", "\x85": "\\x85"}
"""How a field printed within a line writes the characters that end a line (and tab), piped or not."""


def test_every_control_character_in_a_file_name_is_shown_not_dropped(cli, repo):
    """A BEL in a file name vanished from text answers while the other controls were escaped: rich deletes `\\a`,
    `\\b`, `\\v`, `\\f` and `\\r` from what it prints. Each control is now written as an escape when piped and as a
    visible symbol on a terminal, through the resident server as in-process."""
    import os
    import sys

    name = f"src/a{CONTROLS}z.py"
    code, _, err = cli("remember", "the controls note", "--files", name, "--title", "bell\a\btitle")
    assert code == 0, err
    memory_id = cli.json("list")[0]["id"]
    code, out, err = cli("show", memory_id)
    assert code == 0, err
    piped = "".join(IN_A_LINE.get(c, f"\\x{ord(c):02x}") for c in CONTROLS)
    assert f"files: src/a{piped}z.py\n" in out, out
    code, out, err = cli("ss", "the controls note", "--memories-only")
    assert code == 0 and " 1. bell\\x07\\x08title  note " in out, out  # a hit's title, in a line `styled` builds
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "400", "PYTHONIOENCODING": "utf-8"}
    shown = _on_a_pty([sys.executable, "-m", "cortex_tui.app.cli.main", "-C", str(repo), "show", memory_id], env,
                      stdin_too=False)
    symbols = "".join(IN_A_LINE.get(c) or ("\ufffd" if ord(c) >= 0x80 else chr(0x2400 + ord(c)) if ord(c) < 0x20
                                           else "\u2421") for c in CONTROLS)
    assert f"files: src/a{symbols}z.py" in shown, shown
