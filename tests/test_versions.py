"""`--version` of the installed commands: the version of the distribution pip (or pipx, or uv) installed."""

import subprocess
import sys
from importlib.metadata import version

import pytest

import cortex_tui


@pytest.mark.parametrize("module, prog", [("cortex_tui.app.cli.client", "cortex"),
                                          ("cortex_tui.app.tui.main", "cortex-tui")])
def test_each_command_prints_the_installed_version(module, prog, tmp_path):
    done = subprocess.run([sys.executable, "-m", module, "--version"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{prog} {version('cortex-tui')}\n", "")
    assert version("cortex-tui") == cortex_tui.__version__, "the distribution's version is the package's"


def test_version_is_written_to_the_commands_own_stream(tmp_path):
    """In a process that runs commands for others (the resident server, tests), not to this process's stdout."""
    import io

    from cortex_tui.app.cli.context import CommandContext
    from cortex_tui.app.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    assert main(["--version"], CommandContext(io.StringIO(), out, err, tmp_path, {})) == 0
    assert (out.getvalue(), err.getvalue()) == (f"cortex {version('cortex-tui')}\n", "")
