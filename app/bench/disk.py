"""`cortex bench disk --repo PATH`: the size of `.cortex` under sustained writes, against its compacted size.

A copy of the repository's files is indexed; then for `minutes`, `writers` processes each remember notes through
the resident server as fast as it answers, `cortex watch` keeps the index fresh, and one source file is edited
every second. `.cortex` is measured every second. Then the writers and the watcher stop and the resident server is
left alone for `SETTLE_S`, as a user's server is after a burst of work: what its background compaction leaves is
the size after the writes. Then everything stops and `cortex gc` runs (every table compacted
with no old version kept), and that size is the compacted size: the peak and the 95th percentile are printed as
multiples of it. What the data itself takes is measured too: the memories exported (`cortex export
--all-versions`), and imported into a new database beside a fresh index of the same files, compacted as well;
`.cortex` after `gc`, and at its peak, are printed as multiples of that. The repository is read, never written.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SETTLE_S = 90.0
"""How long the server is left alone after the writes: its compactor settles each table once it has had no write
for `compact_keep` (three optimizes, `compact_keep` apart), as `cortex gc` would."""

WRITER = """
import contextlib, io, sys, time
from cortex_tui.app.cli import client
deadline, n, number = float(sys.argv[1]), 0, sys.argv[2]
while time.time() < deadline:
    n += 1
    with contextlib.redirect_stdout(io.StringIO()):
        client.main(["remember", f"writer {number} note {n}: the orders service retries the payment call with backoff",
                     "--tags", f"writer{number}", "--files", "src/orders.py"])
print(n)
"""


@dataclass(frozen=True)
class DiskBench:
    """Numbers printed by `cortex bench disk`."""

    repo: str
    minutes: float
    writers: int
    memories_written: int
    edits: int
    samples: int
    start_mb: float
    peak_mb: float
    p95_mb: float
    end_mb: float
    """When the writers stopped."""
    settled_mb: float
    """`SETTLE_S` after the writes, the resident server still running (its background compaction done)."""
    settled_tables: str
    """Every table at that mark: its size, versions, data files and index folders."""
    peak_tables: str
    """The largest tables at the peak, with their sizes and versions."""
    compacted_mb: float
    peak_ratio: float
    p95_ratio: float
    fresh_mb: float
    """A fresh index of the same files with the memories exported and imported, after `cortex gc`."""
    gc_vs_fresh: float
    peak_vs_fresh: float
    settled_vs_fresh: float


def run(repo: Path, minutes: float = 5.0, writers: int = 3) -> DiskBench:
    with tempfile.TemporaryDirectory(prefix="cortex-bench-disk-") as tmp:
        work = Path(tmp) / "repo"
        _copy_tracked(repo.resolve(), work)
        env = {**os.environ, "CORTEX_RUNTIME_DIR": str(Path(tmp) / "run")}
        env.pop("CORTEX_NO_DAEMON", None)
        cortex = [sys.executable, "-m", "cortex_tui.app.cli.client"]
        subprocess.run([*cortex, "index", "--no-embed"], cwd=work, env=env, check=True, capture_output=True)
        db = work / ".cortex"
        start = _size(db)
        deadline = time.time() + minutes * 60
        procs = [subprocess.Popen([*cortex, "watch"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)]
        writing = [subprocess.Popen([sys.executable, "-c", WRITER, str(deadline), str(i)], cwd=work, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                   for i in range(writers)]
        sources = sorted(p for p in work.rglob("*.py") if ".cortex" not in p.parts)[:50] or [work / "notes.py"]
        sizes, edits, peak_tables = [], 0, ""
        try:
            while time.time() < deadline:
                target = sources[edits % len(sources)]
                with target.open("a", encoding="utf-8") as f:
                    f.write(f"\n# edit {edits}: retry the payment call\n")
                edits += 1
                sizes.append(_size(db))
                if sizes[-1] == max(sizes):
                    peak_tables = _tables(db / "db")
                time.sleep(1.0)
            written = sum(int((p.communicate(timeout=600)[0] or "0").strip() or 0) for p in writing)
            end = _size(db)
            procs[0].send_signal(signal.SIGINT)
            try:
                procs[0].wait(60)
            except subprocess.TimeoutExpired:  # a watcher slow to stop on a loaded machine must not lose the run
                procs[0].kill()
            time.sleep(SETTLE_S)
            settled = _size(db)
            settled_tables = _tables(db / "db", every=True)
        finally:
            for p in procs + writing:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
            for p in procs + writing:
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
            subprocess.run([*cortex, "serve", "--stop"], cwd=work, env=env, capture_output=True)
        offline = [*cortex, "--no-daemon"]
        subprocess.run([*offline, "gc"], cwd=work, env=env, check=True, capture_output=True)
        compacted = _size(db)
        fresh = _fresh_size(work, Path(tmp), offline, env)
        peak, p95 = max(sizes), _percentile(sizes, 95)
        mb = 1 << 20
        return DiskBench(str(repo), minutes, writers, written, edits, len(sizes), start / mb, peak / mb, p95 / mb,
                         end / mb, settled / mb, settled_tables, peak_tables, compacted / mb, peak / compacted, p95 / compacted,
                         fresh / mb, compacted / fresh, peak / fresh, settled / fresh)


def _fresh_size(work: Path, tmp: Path, cortex: list[str], env: dict[str, str]) -> int:
    """`.cortex` of a new database holding the same data: the work tree's files as they ended, indexed afresh,
    and the memories exported and imported, compacted by `cortex gc`."""
    export = tmp / "export.jsonl"
    subprocess.run([*cortex, "export", "--all-versions", "-o", str(export)], cwd=work, env=env, check=True,
                   capture_output=True)
    fresh = tmp / "fresh"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=work,
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        (fresh / name.decode()).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(work / name.decode(), fresh / name.decode())
    _commit_all(fresh)
    for step in (["index", "--no-embed"], ["import", str(export)], ["gc"]):
        subprocess.run([*cortex, *step], cwd=fresh, env=env, check=True, capture_output=True)
    return _size(fresh / ".cortex")


def _copy_tracked(repo: Path, target: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = repo / name.decode()
        if source.is_file() and not source.is_symlink():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())
    _commit_all(target)


def _commit_all(target: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    subprocess.run(["git", "add", "-A"], cwd=target, check=True)
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "copy"],
                   cwd=target, check=True)


def _size(directory: Path) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # removed by a compaction while measured
                continue
    return total


def _tables(db: Path, every: bool = False) -> str:
    """The three largest tables (`every`: all of them, with their data files and index folders): MB and versions."""
    found = sorted(((_size(t), t.name.removesuffix(".lance"), _count(t / "_versions", "*.manifest"), _count(t / "data", "*"),
                     _count(t / "_indices", "*")) for t in db.glob("*.lance")), reverse=True)
    if every:
        return ", ".join(f"{name} {size / (1 << 20):.1f} MB ({n} versions, {files} data files, {indices} index folders)"
                         for size, name, n, files, indices in found)
    return ", ".join(f"{name} {size / (1 << 20):.1f} MB in {n} versions" for size, name, n, _, _ in found[:3])


def _count(folder: Path, pattern: str) -> int:
    return sum(1 for _ in folder.glob(pattern))


def _percentile(values: list[int], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))] if ordered else 0.0


def rows(b: DiskBench) -> list[tuple[str, str]]:
    return [
        ("repository", b.repo),
        ("load", f"{b.writers} writers through the server + cortex watch + 1 edit/s, {b.minutes:g} min"),
        ("memories written / files edited", f"{b.memories_written} / {b.edits}"),
        (".cortex at start", f"{b.start_mb:.1f} MB"),
        (".cortex peak / p95", f"{b.peak_mb:.1f} MB / {b.p95_mb:.1f} MB ({b.samples} samples, 1/s)"),
        ("at the peak", b.peak_tables),
        (".cortex when the writes stopped", f"{b.end_mb:.1f} MB"),
        (f".cortex {SETTLE_S:g} s later (server up)", f"{b.settled_mb:.1f} MB"),
        ("its tables", b.settled_tables),
        ("after cortex gc", f"{b.compacted_mb:.1f} MB"),
        ("peak / p95 vs after gc", f"{b.peak_ratio:.2f}x / {b.p95_ratio:.2f}x"),
        ("fresh index + export re-imported", f"{b.fresh_mb:.1f} MB"),
        ("after gc / peak / settled vs fresh",
         f"{b.gc_vs_fresh:.2f}x / {b.peak_vs_fresh:.2f}x / {b.settled_vs_fresh:.2f}x"),
    ]
