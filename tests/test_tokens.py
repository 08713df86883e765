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


def test_piecewise_count_of_long_text_equals_one_whole_count(monkeypatch):
    text = "".join(f"def f{i}(x):\n    return x  +  {i}\n\n  indented  \n" for i in range(3000))
    whole = tokens.count_tokens(text)
    monkeypatch.setattr(tokens, "_MAX_PIECE_CHARS", 997)
    assert tokens.count_tokens(text) == whole
