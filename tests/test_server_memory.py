"""What a resident server's memory costs after it embeds a repository, measured on real processes from /proc.

Not timed. The session's runtime directory and the stopping of each test's servers come from conftest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import cortex_tui.core as core_package
from cortex_tui.app.server.serve import LIBRARY_PAGES_KEPT
from cortex_tui.core.heap import _clean_library_mappings

from .conftest import commit_file, wait_for

SOURCES = ("index/index.py", "store/store.py", "store/database.py", "search/search.py")
"""Real code with long functions: about a hundred chunks, a third of them at the model's 256-token limit."""
EMBEDDING_LEFTOVER_MIB = 100
"""How far above its warm size a server may stay once it has embedded them. The old session kept the largest
batch's working memory for good (more than 1 GB here); handing it back leaves some tens of MiB."""
FIRST_INDEX_LEFTOVER_MIB = 40
"""How far a server that ran a repository's first index may stay above a warm server on the indexed repository."""
SERVER_MIB = 400
"""What a resident server may hold once quiet: the figure the README promises (docs/benchmarks.md measures it on a
2,000-file repository)."""
QUERIES = ("index a file", "open the database", "search results ranking", "write the store", "embedding batches",
           "locks and retries", "schema version", "chunks of code", "memories by kind", "compaction")


def _cortex(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", *args], cwd=repo, capture_output=True,
                          timeout=600)


def _status(repo: Path) -> dict:
    out = _cortex(repo, "serve", "--status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for process {pid}")


def _library_mib(pid: int) -> float:
    """The resident pages of the process's shared libraries that a drop would unmap (read from its mappings)."""
    return sum(rss for _, _, rss in _clean_library_mappings(Path(f"/proc/{pid}/smaps").read_text())) / 2**20


def _own_mib(pid: int) -> float:
    """The process's own memory: its resident set without the shared libraries' pages, which a server maps and
    lets go of by its own rule (a bound, tested below), whatever the work left behind."""
    return _rss_mib(pid, "RssAnon")


def _first_index_through_the_server(repo: Path):
    """What `cortex-tui` does on attaching: the server runs the index pass, then watches the work tree."""
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote

    bridge = RemoteBridge(Remote.attach(repo, None, start=True))
    try:
        return bridge.index(lambda progress: None, lambda: False)
    finally:
        bridge.stop()


def _commit_sources(repo: Path) -> None:
    for name in SOURCES:
        commit_file(repo, f"engine/{name}", (Path(core_package.__file__).parent / name).read_text(), f"Add {name}")


def test_a_server_that_ran_a_first_index_is_as_small_as_one_that_did_not(empty_repo):
    """A repository never indexed: the server's first pass reads, chunks, writes and embeds every file. Afterwards
    the server is compared with a new one started on the now indexed repository (warmed by the same command):
    the pass runs in child processes that exit, so it leaves nothing behind. Run in the server itself, it left
    LanceDB's writer buffers, the lexical pass's state and the embedding runtime's leftovers resident."""
    _commit_sources(empty_repo)
    assert _cortex(empty_repo, "what").returncode == 0  # starts the server and waits for its warm-up
    server = _status(empty_repo)["pid"]
    report, indexed = _first_index_through_the_server(empty_repo)
    assert indexed.indexed_files == len(SOURCES) and indexed.embeddings_pending == 0 and report.embedded >= 90
    assert _status(empty_repo)["pid"] == server, "the same server ran the pass"
    assert _cortex(empty_repo, "what").returncode == 0
    after = _own_mib(server)

    assert _cortex(empty_repo, "serve", "--stop").returncode == 0
    deadline = time.monotonic() + 30
    while _status(empty_repo)["running"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _cortex(empty_repo, "what").returncode == 0
    fresh = _status(empty_repo)["pid"]
    assert fresh != server
    warm = _own_mib(fresh)
    assert after - warm < FIRST_INDEX_LEFTOVER_MIB, f"after a first index {after:.0f} MiB, a warm server {warm:.0f} MiB"


def test_a_server_that_embedded_a_repository_gives_the_memory_back(empty_repo):
    """The dashboard's first index on a lexically indexed repository: the server embeds every chunk, and its
    resident memory afterwards is close to what it was warm, not the largest batch's working set."""
    _commit_sources(empty_repo)
    lexical = subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.main", "index", "--no-embed", "--json"],
                             cwd=empty_repo, capture_output=True, timeout=600)
    assert lexical.returncode == 0, lexical.stderr
    assert json.loads(lexical.stdout)["embeddings_pending"] >= 90

    assert _cortex(empty_repo, "what").returncode == 0  # starts the server and waits for its warm-up
    server = _status(empty_repo)["pid"]
    warm = _own_mib(server)

    report, indexed = _first_index_through_the_server(empty_repo)
    assert indexed.embeddings_pending == 0 and report.embedded >= 90
    assert _status(empty_repo)["pid"] == server, "the same server embedded them"

    after = _own_mib(server)
    assert after - warm < EMBEDDING_LEFTOVER_MIB, f"warm {warm:.0f} MiB, after embedding {after:.0f} MiB"
    # `cortex serve --status` reports the same figure.
    shown = _status(empty_repo)["rss_bytes"] / 2**20
    assert abs(shown - _rss_mib(server)) < 0.1 * shown


def test_a_server_that_indexed_and_searched_stays_under_its_bound(empty_repo):
    """The path an agent's day runs: the server's first index pass, then searches, a memory, `what`, a map and a
    selection. Once quiet, the server holds at most SERVER_MIB, as `cortex serve --status` shows. Before, each search's buffers stayed in
    the C heap's per-thread arenas and the model's word table was held as floats: 420-450 MiB here."""
    _commit_sources(empty_repo)
    assert _cortex(empty_repo, "what").returncode == 0  # starts the server and waits for its warm-up
    server = _status(empty_repo)["pid"]
    _first_index_through_the_server(empty_repo)
    for query in QUERIES:
        assert _cortex(empty_repo, "ss", query).returncode == 0
    assert _cortex(empty_repo, "remember", "compaction runs after every hundred commits", "--kind", "note").returncode == 0
    assert _cortex(empty_repo, "what").returncode == 0
    for command in (["map"], ["select", "make compaction retry on a locked table"]):
        assert _cortex(empty_repo, *command).returncode == 0
    assert _status(empty_repo)["pid"] == server, "one server served it all"

    # The server hands memory back once it has been quiet a moment; `--status` itself is not work.
    assert wait_for(lambda: _status(empty_repo)["idle_for"] > 2.0, seconds=30)
    status = _status(empty_repo)
    shown, own = status["rss_bytes"] / 2**20, status["private_bytes"] / 2**20
    assert abs(shown - _rss_mib(server)) < 0.1 * shown
    assert shown <= SERVER_MIB, f"a quiet server holds {shown:.0f} MiB"
    # Of what is not its own, the shared libraries' pages are held to a bound (they were about 200 MiB of it).
    libraries = _library_mib(server)
    assert libraries < LIBRARY_PAGES_KEPT / 2**20 + 10, f"{libraries:.0f} of {shown - own:.0f} MiB of files' pages are libraries' pages left mapped"
    assert _status(empty_repo)["memory_pool"] == "system", "pyarrow's own pool keeps what arrow work freed"


ARROW_WORK = """
import gc, sys
import numpy as np
from cortex_tui.core import heap
heap.one_arena()
if sys.argv[1] == "c-heap":
    heap.arrow_on_the_c_heap()
import pyarrow as pa, pyarrow.compute as pc

def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024

before = rss()
column = pa.chunked_array([pc.cast(pa.array(np.arange(i * 10000, (i + 1) * 10000)), pa.string()) for i in range(100)])
kept = []
for _ in range(10):  # a repository map's build: large temporaries, small results that stay
    whole = column.combine_chunks()
    kept.append(pc.utf8_length(pc.dictionary_encode(whole).dictionary.slice(0, 10)))
    del whole
del column
gc.collect()
heap.trim()
print(rss() - before)
"""


def test_arrow_work_in_a_long_lived_process_is_handed_back():
    """The resident server puts pyarrow on the C heap (`core.heap`): pyarrow's own pool kept what a repository
    map's symbol graph build freed (about 40 MiB on a 2,000-file repository, about 90 MiB here) for the life of the
    process. Both pools run the same work in fresh processes; only the C heap hands it back."""
    def left(pool: str) -> int:
        out = subprocess.run([sys.executable, "-c", ARROW_WORK, pool], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    assert left("c-heap") < 20
    assert left("arrow") > 60, "pyarrow's own pool hands the memory back too: the C heap's reason is gone"


LIBRARY_WORK = """
import json, sys
from cortex_tui.core import heap
from cortex_tui.core.embedding.embed import Embedder
from cortex_tui.core.lancedb_loader import load_lancedb
from cortex_tui.core.secrets.secrets import redact
from cortex_tui.core.tokens import count_tokens
import pyarrow as pa, pyarrow.compute as pc

def file_mib():
    return int(next(l for l in open("/proc/self/status") if l.startswith("RssFile")).split()[1]) / 1024

def work():
    # Every compiled library a server runs: the model, LanceDB, Arrow, the secret rules, the token counter.
    vector = Embedder().embed_uncached(["parse the config file"])[0].tolist()
    db = load_lancedb().connect(sys.argv[1])
    rows = pa.table({"vector": pa.FixedSizeListArray.from_arrays(pa.array(vector, pa.float32()), len(vector)),
                     "s": ["alpha"]})
    found = db.create_table("t", data=rows, mode="overwrite").search(vector).limit(1).to_list()[0]["s"]
    return [vector, found, count_tokens("def f(x):\\n    return x + 1\\n"),
            redact("token = ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")[0],
            pc.sum(pa.array(range(1000))).as_py()]

first = work()
before = file_mib()
dropped = heap.drop_library_pages() / 2**20
after = file_mib()
print(json.dumps({"same": work() == first, "before": before, "after": after, "dropped": dropped}))
"""


def test_a_quiet_server_lets_go_of_library_pages_and_runs_them_again_unchanged(tmp_path):
    """The resident server unmaps its shared libraries' pages when quiet (`core.heap.drop_library_pages`): they
    are clean copies of the files, mapped again by the next command that runs them. In a fresh process that ran
    every library a server runs, the file-backed resident pages mostly go, and the same work then gives the same
    answers (a page the loader wrote, unmapped, would have been read back from the file and broken them)."""
    out = subprocess.run([sys.executable, "-c", LIBRARY_WORK, str(tmp_path / "db")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["same"]
    assert found["dropped"] > 50 and found["after"] < found["before"] / 3, found


SMAPS = """\
7f0000000000-7f0000001000 r-xp 00000000 fe:00 1 /usr/lib/libcode.so.6
Rss:                   4 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
7f0000001000-7f0000002000 r--p 00001000 fe:00 1 /usr/lib/libcode.so.6
Rss:                   4 kB
Anonymous:             4 kB
Swap:                  0 kB
7f0000002000-7f0000003000 r--p 00002000 fe:00 1 /usr/lib/libcode.so.6
Rss:                   4 kB
Anonymous:             0 kB
Swap:                924 kB
7f0000003000-7f0000004000 rw-p 00003000 fe:00 1 /usr/lib/libcode.so.6
Rss:                   4 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000004000-7f0000005000 r--p 00000000 fe:00 2 /usr/lib/gone.so (deleted)
Rss:                   4 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000005000-7f0000006000 r--p 00000000 fe:00 3 /data/notes.txt
Rss:                   4 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000006000-7f0000008000 r--p 00000000 fe:00 4 /opt/my libs/libdata.so
Rss:                   8 kB
Anonymous:             0 kB
Swap:                  0 kB
"""


def test_only_library_pages_that_are_the_files_own_are_let_go():
    """Relocated pages (anonymous once written, or in swap once swapped out), writable mappings, files that are not
    libraries and deleted ones stay; a path with a space is still a path."""

    assert list(_clean_library_mappings(SMAPS)) == [(0x7f0000000000, 4096, 4096), (0x7f0000006000, 8192, 8192)]
