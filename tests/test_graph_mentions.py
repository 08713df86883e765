"""Graph mentions: only code-shaped words link a memory to a symbol, and extraction stays linear on huge texts."""

import subprocess
import sys
import time

from cortex_tui.core.engine import Engine
from cortex_tui.core.graph.graph import neighbours
from cortex_tui.core.graph.mentions import extract_mentions
from cortex_tui.core.keys import Key
from cortex_tui.core.records import MemoryDraft

from .conftest import commit_file

WORDS_PY = '''\
def first():
    return 1


def read():
    return 2


def output():
    return 3


def flush_buffer():
    return 4


def termwidth():
    return 80


def parse(text):
    return text


class ZshComplete:
    def source(self):
        return "zsh"
'''


def mentioned(graph, memory_id: str) -> set[str]:
    return {str(n.node) for n in neighbours(graph, Key.memory(memory_id), 1) if n.via == "mentions"}


def symbol_mentions(graph, memory_id: str) -> set[str]:
    return {node for node in mentioned(graph, memory_id) if node.startswith("sym:")}


def test_english_words_that_name_symbols_are_not_mentions(repo):
    commit_file(repo, "src/words.py", WORDS_PY, "Add words")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    prose = engine.remember(MemoryDraft(text="Read the first output line, then parse it and source the script.")).memory
    graph = engine.graph()
    assert symbol_mentions(graph, prose.id) == set()


def test_code_shaped_and_rare_names_are_mentions(repo):
    commit_file(repo, "src/words.py", WORDS_PY, "Add words")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    code = engine.remember(MemoryDraft(text=(
        "`first` returns early. ZshComplete.source builds the script, flush_buffer runs after it, "
        "call parse(text) once, and termwidth is cached. See src/words.py."
    ))).memory
    graph = engine.graph()
    assert symbol_mentions(graph, code.id) == {
        "sym:first", "sym:ZshComplete.source", "sym:flush_buffer", "sym:parse", "sym:termwidth",
    }
    assert "file:src/words.py" in mentioned(graph, code.id)


def test_class_names_in_camel_case_are_mentions():
    found = extract_mentions("The ZshComplete class and the HTTPServer too.", set(),
                             {"ZshComplete": ["ZshComplete"], "HTTPServer": ["net.HTTPServer"]}, set())
    assert found.symbols == {"ZshComplete", "net.HTTPServer"}


EXTRACT_HUGE = """
import time
from cortex_tui.core.graph.mentions import extract_mentions
texts = ["x" * 999_000, "a.b/c-d_" * 125_000, "`" + "y." * 500_000, "q(" * 500_000]
start = time.perf_counter()
for text in texts:
    extract_mentions(text, {"src/app.py"}, {"x": ["x"], "a": ["a"]}, {"a.b"})
print(time.perf_counter() - start)
"""


def test_extraction_on_a_megabyte_is_bounded():
    # In a child process: the old path pattern backtracked quadratically (25 minutes on a megabyte of `x`)
    # while holding the GIL, so a hang must fail the test, not freeze the run.
    result = subprocess.run([sys.executable, "-c", EXTRACT_HUGE], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) < 5.0


def test_graph_and_expanded_search_with_a_near_limit_memory(repo):
    commit_file(repo, "src/words.py", WORDS_PY, "Add words")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.remember(MemoryDraft(text="x" * 999_000, title="nearlimit"))
    engine.remember(MemoryDraft(text="src/" + "deep.dir/" * 100_000 + "file.py", title="long path"))
    engine.remember(MemoryDraft(text="The progress bar redraws at most ten times a second.", title="progress"))
    for args in (["graph", "src/words.py"], ["ss", "progress", "--expand"]):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.main", args[0], "-C", str(repo), *args[1:]],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert time.perf_counter() - start < 60, args
