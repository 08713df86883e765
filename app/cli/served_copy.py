"""`cortex context --copy` through the resident server: the server selects and assembles (its engine is warm), and
this process puts the text on the clipboard, because the clipboard tool, its display and the terminal that takes an
OSC 52 escape are the client's, not the server's. Standard library only, like the client."""

from __future__ import annotations

import json

COPY_FLAG = "--copy"


class CopyHere:
    """What the client does with the served answer: copy its text, then report as the command would have. (Not a
    dataclass: see `app/command.py`.)"""

    __slots__ = ("root", "json_wanted")

    def __init__(self, root: str, json_wanted: bool) -> None:
        self.root = root
        """The repository: the file fallback goes to its `.cortex/clipboard`."""
        self.json_wanted = json_wanted


def served_argv(argv: list[str]) -> list[str]:
    """The command the server runs: the same, without `--copy` and with `--json` (the text comes back to copy)."""
    end = argv.index("--") if "--" in argv else len(argv)
    head = [a for a in argv[:end] if a != COPY_FLAG]
    if "--json" not in head:
        head.append("--json")
    return head + argv[end:]


def finish(copy: CopyHere, output: list, code: int) -> tuple[list, int]:
    """The output the user sees: the served one when it failed; otherwise the copy's report in its place."""
    if code != 0:
        return output, code
    # Here, not at the top: subprocess, tempfile and pathlib would cost every served command their import.
    from pathlib import Path

    from ...core.clipboard import copy as to_clipboard
    from ...core.clipboard import terminal_osc52

    report = json.loads("".join(text for number, text in output if number == 1))
    text = report.pop("text", None)
    if text is None:  # with --output the server wrote the file (relative paths are this process's) and left it out
        text = Path(report["output"]).read_text(encoding="utf-8")
    result = to_clipboard(text, osc52=terminal_osc52(), fallback_dir=Path(copy.root) / ".cortex" / "clipboard",
                          suffix=report["suffix"])
    report["copied"] = {"method": result.method, "bytes": result.bytes, "path": result.path}
    report["message"] = result.describe(report["tokens"])
    errors = [(number, chunk) for number, chunk in output if number != 1]
    if copy.json_wanted:
        return errors + [(1, json.dumps(report, ensure_ascii=False, indent=2) + "\n")], 0
    lines = []
    if report.get("output"):
        lines.append(f"wrote {report['tokens']:,} tokens ({report['items']} items) to {report['output']}")
    lines.append(report["message"])
    if report["redactions"]:
        lines.append(f"{report['redactions']} secret-looking string(s) redacted")
    return errors + [(1, "".join(line + "\n" for line in lines))], 0

