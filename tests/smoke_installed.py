"""The tool as a user installs it, used the way the README's quick start does: run with the Python of a virtual
environment that holds the wheel (not an editable install), it drives that environment's `cortex`, `cortex mcp` and
`cortex-tui` on a small git repository in a temporary directory, and exits non-zero at the first thing that fails.
`.ci/run` runs it; it is not a pytest test, since it needs the installed wheel rather than the source tree.

    <venv>/bin/python tests/smoke_installed.py
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from importlib.metadata import version
from pathlib import Path

BIN = Path(sys.executable).parent
FILES = {
    "shop/pricing.py": "TAX = 0.2\n\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n",
    "shop/cart.py": "from .pricing import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
                    "        return sum(price_of(i) for i in items)\n",
    "README.md": "# shop\n\nPrices include tax.\n",
}
TASK = "change how tax is applied to prices"
VERSION = version("cortex-tui")
"""The installed distribution's: what every command and the MCP server must say they are."""


def step(name: str) -> None:
    print(f"smoke: {name}", flush=True)


def cortex(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """One `cortex` command of the installed environment, or the script ends with what it said."""
    done = subprocess.run([str(BIN / "cortex"), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"smoke: `cortex {' '.join(args)}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def expect(condition: bool, what: str, seen: str = "") -> None:
    if not condition:
        sys.exit(f"smoke: {what}\n{seen[-3000:]}")


def make_repository(base: Path) -> Path:
    repo = base / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "A shop that prices with tax"], cwd=repo, check=True)
    return repo


def versions(repo: Path) -> None:
    step("cortex --version, cortex-tui --version")
    for command in ("cortex", "cortex-tui"):
        done = subprocess.run([str(BIN / command), "--version"], cwd=repo, capture_output=True, text=True, timeout=120)
        expect(done.stdout == f"{command} {VERSION}\n", f"`{command} --version` printed {done.stdout!r}",
               done.stderr)


def commands(repo: Path) -> None:
    step("cortex init, index, ss, select, context, doctor")
    first = cortex("init", cwd=repo).stderr
    expect((repo / ".cortex" / "db").is_dir(), "cortex init made no .cortex/db")
    expect(f"first run in {repo}: made .cortex/ there (kept out of git); {len(FILES)} files listed for the index (binary and secret ones are skipped); a resident "
           "server" in first, "cortex init did not say what its first run did", first)
    cortex("index", cwd=repo)
    found = cortex("ss", "price of a sku with tax", cwd=repo).stdout
    expect("shop/pricing.py" in found, "cortex ss did not find shop/pricing.py", found)
    selected = cortex("select", TASK, "--budget", "2000", cwd=repo).stdout
    expect("shop/pricing.py" in selected, "cortex select did not choose shop/pricing.py", selected)
    context = cortex("context", TASK, "--budget", "2000", cwd=repo).stdout
    expect("def price_of(sku):" in context, "cortex context does not hold price_of", context)
    doctor = cortex("doctor", cwd=repo).stdout
    expect(f"cortex-tui       {VERSION}" in doctor and "nothing to repair" in doctor, "cortex doctor", doctor)


async def mcp_session(repo: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    step("cortex mcp: initialize (name and version), tools/list, smart_search")
    server = StdioServerParameters(command=str(BIN / "cortex"), args=["mcp", "-C", str(repo)], env=dict(os.environ),
                                   cwd=str(repo))
    async with Client(server, read_timeout_seconds=120) as client:
        info = client.server_info
        expect((info.name, info.version) == ("cortex", VERSION), f"cortex mcp initialized as {info}")
        tools = {tool.name for tool in (await client.list_tools()).tools}
        expect({"smart_search", "select_context", "remember"} <= tools, f"cortex mcp lists {sorted(tools)}")
        found = await client.call_tool("smart_search", {"query": "price of a sku"})
        expect(not found.is_error and "shop/pricing.py" in str(found.structured_content),
               "smart_search over MCP did not find shop/pricing.py", str(found.content))


def dashboard(repo: Path) -> None:
    """`cortex-tui` in a terminal of its own (a pty): it must draw its panes and end on `q`."""
    step("cortex-tui: draw, then q")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    child = subprocess.Popen([str(BIN / "cortex-tui"), str(repo)], stdin=follower, stdout=follower, stderr=follower,
                             cwd=repo, start_new_session=True, env={**os.environ, "TERM": "xterm-256color"})
    os.close(follower)
    screen = bytearray()
    reader = threading.Thread(target=read_all, args=(leader, screen), daemon=True)
    reader.start()
    subject = "A shop that prices with tax"  # the commit, in the first pane at every width
    try:
        deadline = time.monotonic() + 120
        while subject not in words(screen) and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.2)
        expect(subject in words(screen), "cortex-tui did not show the repository's commit", words(screen))
        os.write(leader, b"q")
        code = child.wait(timeout=60)
        expect(code == 0, f"cortex-tui exited {code} after q", words(screen))
    finally:
        if child.poll() is None:
            os.killpg(child.pid, 9)
            child.wait()
        os.close(leader)


def words(screen: bytearray) -> str:
    """What a terminal shows, without the escape sequences that style and place it."""
    return re.sub(r"\x1b\[[0-9;?<>=$]*[A-Za-z~]", "", bytes(screen).decode(errors="replace"))


def read_all(leader: int, into: bytearray) -> None:
    """Everything the terminal shows, read all along: a terminal nobody reads stops the program writing to it."""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            return
        if not chunk:
            return
        into.extend(chunk)


def main() -> None:
    import cortex_tui

    installed = Path(cortex_tui.__file__).resolve()
    expect(Path(sys.prefix).resolve() in installed.parents, f"cortex_tui is imported from {installed}, not the "
           f"environment at {sys.prefix}: run this with the Python of the environment the wheel is installed in")
    step("the Python API's names")
    for name in cortex_tui.__all__:
        getattr(cortex_tui, name)  # each one imports the part of the engine it comes from
    base = Path(tempfile.mkdtemp(prefix="cxs-"))  # short: the server's socket path is limited to 108 bytes
    # Nothing of the user's: stores, caches, configuration and resident servers of this run only.
    os.environ.update({"CORTEX_CACHE_DIR": str(base / "cache"), "CORTEX_CONFIG": str(base / "config.toml"),
                       "CORTEX_RUNTIME_DIR": str(base / "run"), "CORTEX_GLOBAL_DB": str(base / "global-db"),
                       "GIT_AUTHOR_NAME": "Smoke", "GIT_AUTHOR_EMAIL": "smoke@example.com",
                       "GIT_COMMITTER_NAME": "Smoke", "GIT_COMMITTER_EMAIL": "smoke@example.com",
                       "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"})
    for name in ("CORTEX_DB", "CORTEX_NO_DAEMON", "CORTEX_DAEMON"):
        os.environ.pop(name, None)
    repo = make_repository(base)
    try:
        versions(repo)
        commands(repo)
        asyncio.run(mcp_session(repo))
        dashboard(repo)
    finally:
        subprocess.run([str(BIN / "cortex"), "serve", "--stop"], cwd=repo, capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)
    step(f"all passed with {installed.parent}")


if __name__ == "__main__":
    main()
