"""`cortex bench map`: does a repository map focused on a bug report show the files its fix edited?

For each task (a real fix's description, file names stripped; see `localize.py`), the tree at the fix's parent is
extracted once and mapped at each budget by our map (`cortex map --focus TASK`, index built lexically from scratch)
and by Aider's RepoMap on the same tree with the same text (aider-chat run by its own interpreter, see
`aider_map_driver.py`). A fix counts as shown at a budget when every non-test file it edited appears in the map.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...core.config import Settings
from ...core.engine import Engine
from ...core.errors import CortexError
from ...core.index.walk import list_files
from ...core.requests import MapRequest
from ...core.tokens import count_tokens
from .localize import Task, extract, offline_tiktoken

BUDGETS = (1000, 2000)
DRIVER = Path(__file__).with_name("aider_map_driver.py")


@dataclass
class _Score:
    """One method at one budget over the tasks."""

    all_shown: list[bool] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, gold: set[str], shown: set[str], tokens: int, seconds: float) -> None:
        self.all_shown.append(gold <= shown)
        self.recall.append(len(gold & shown) / len(gold))
        self.tokens.append(tokens)
        self.seconds.append(seconds)

    def row(self) -> dict:
        n = len(self.all_shown)
        return {"fixes_shown": round(sum(self.all_shown) / n, 3) if n else 0.0,
                "file_recall": round(statistics.mean(self.recall), 3) if n else 0.0,
                "tokens_median": int(statistics.median(self.tokens)) if n else 0,
                "tokens_max": max(self.tokens, default=0),
                "s_median": round(statistics.median(self.seconds), 3) if n else 0.0, "tasks": n}


class AiderMaps:
    """Aider's RepoMap in a process of its own interpreter, kept for the whole run (its imports take seconds)."""

    def __init__(self, python: str) -> None:
        # -P: the script's directory (this package, whose `select.py` would shadow the standard library's) stays off sys.path.
        self._process = subprocess.Popen([python, "-P", str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         env={**os.environ, "TQDM_DISABLE": "1"},
                                         text=True, encoding="utf-8")

    def maps(self, root: Path, task: str, files: list[str], budgets: tuple[int, ...]) -> dict[int, tuple[str, float]]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"root": str(root), "task": task, "files": files,
                                              "budgets": list(budgets)}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise CortexError("aider's repo map stopped (is aider-chat installed for --aider-python?)")
        return {int(b): (a["text"], a["seconds"]) for b, a in json.loads(line).items()}

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)


def files_in(text: str, files: set[str]) -> set[str]:
    """The files an Aider map shows: its lines that are a file's path (`path:` above its definitions, or bare)."""
    return {line.rstrip(":") for line in text.splitlines() if line.rstrip(":") in files}


def run(tasks: list[Task], budgets: tuple[int, ...] = BUDGETS, aider_python: str | None = None,
        progress: Callable[[str], None] | None = None, settings: Settings | None = None) -> dict[str, dict]:
    """Both maps of every task at every budget; a row per (method, budget)."""
    settings = settings or Settings()
    scores = {(m, b): _Score() for m in ("cortex", *(("aider",) if aider_python else ())) for b in budgets}
    aider = None
    if aider_python:
        offline_tiktoken()
        aider = AiderMaps(aider_python)
    try:
        for number, task in enumerate(tasks, 1):
            gold = set(task.gold)
            with tempfile.TemporaryDirectory() as tmp:
                tree = Path(tmp) / "tree"
                tree.mkdir()
                extract(task, tree)
                engine = Engine(tree, db=str(Path(tmp) / "db"), settings=settings)
                engine.code_index(create=True).update(embed=False)
                line = []
                for budget in budgets:
                    started = time.perf_counter()
                    found = engine.repo_map(MapRequest(budget, (task.task,)))
                    scores["cortex", budget].add(gold, set(found.files), found.tokens, time.perf_counter() - started)
                    line.append(f"cortex@{budget} {len(gold & set(found.files))}/{len(gold)}")
                if aider is not None:
                    files = sorted(f.path for f in list_files(tree, is_repo=False).files)
                    for budget, (text, seconds) in aider.maps(tree, task.task, files, budgets).items():
                        shown = files_in(text, set(files))
                        scores["aider", budget].add(gold, shown, count_tokens(text), seconds)
                        line.append(f"aider@{budget} {len(gold & shown)}/{len(gold)}")
            if progress:
                progress(f"[{number}/{len(tasks)}] {task.id} (edited files shown): " + ", ".join(line))
    finally:
        if aider is not None:
            aider.close()
    return {f"{method}@{budget}": score.row() for (method, budget), score in scores.items()}


@dataclass(frozen=True)
class Latency:
    """Wall times of MCP calls answered by the repository's resident server, after one warm-up call each."""

    tool: str
    calls: int
    p50_ms: float
    p95_ms: float
    first_ms: float


def latency(repo: Path, calls: int = 30, budget: int = 2000) -> list[Latency]:
    """`repo_map` and `snapshot` through `cortex mcp` (the SDK's client over stdio), attached to the resident server
    as agents run it: the first call of each (cold: the graph is built) and then `calls` more (warm)."""
    import asyncio
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.types import TextContent

    async def measure() -> list[Latency]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "cortex_tui.app.cli.client", "mcp", "-C",
                                                                     str(repo), "--no-watch"], cwd=str(repo))
        out = []
        async with Client(params, read_timeout_seconds=600) as client:
            for tool, arguments in (("repo_map", {"budget": budget}), ("snapshot", {})):
                times = []
                for _ in range(calls + 1):
                    started = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    times.append((time.perf_counter() - started) * 1000)
                    if result.is_error:
                        said = " ".join(part.text for part in result.content if isinstance(part, TextContent))
                        raise CortexError(f"{tool}: {said}")
                warm = sorted(times[1:])
                out.append(Latency(tool, calls, round(statistics.median(warm), 1),
                                   round(warm[min(len(warm) - 1, int(0.95 * len(warm)))], 1), round(times[0], 1)))
        return out

    return asyncio.run(measure())
