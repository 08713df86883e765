import re
import subprocess
import sys

import pytest
from cortex_tui.core import tokens
from cortex_tui.core.errors import CortexError


def test_counts_match_openai_published_values():
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("tiktoken is great!") == 6
    assert tokens.count_tokens("hello world", "o200k_base") == 2


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(CortexError, match="unknown token encoding"):
        tokens.count_tokens("x", "p50k_edit")


def test_long_texts_count_whole_and_exactly():
    """A megabyte memory on one line once raised 'Input too long'; now any length is one exact count, equal to the
    sum over pieces cut where the pre-tokenizer always splits (after a newline followed by a non-space)."""
    text = "".join(f"def f{i}(x):\n    return x  +  {i}\n\n  indented  \n" for i in range(3000))
    pieces = re.split(r"(?<=\n)(?=\S)", text)
    assert len(pieces) > 1000 and tokens.count_tokens(text) == sum(tokens.count_tokens(p) for p in pieces)
    assert tokens.count_tokens("y " * 500_000) == 500_001
    assert tokens.count_tokens("a\udcffb") == tokens.count_tokens("a\ufffdb")


def test_counting_builds_only_the_encoding_asked_for():
    """Importing bpe-openai's package builds all three of its encodings' rank tables (seconds on a busy machine,
    paid on a watcher's first save); the count loads only its compiled tokenizer, which builds one."""
    code = ("import sys\nfrom cortex_tui.core import tokens\nassert 'bpe_openai' not in sys.modules\n"
            "assert tokens.count_tokens('hello world', 'o200k_base') == 2\n"
            "print(sorted(m for m in sys.modules if m.startswith('bpe_openai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['bpe_openai._bindings']", "the package (its registry of encodings) was imported"
