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


def test_long_lines_without_newlines_count_exactly_in_pieces(monkeypatch):
    """A megabyte memory on one line once raised 'Input too long'; pieces cut at word boundaries sum exactly."""
    from cortex_tui.core import tokens

    texts = ["y " * 20_000, "héllo wörld, ünïcode  and   spaces " * 1_000, "mixed 123 numbers4you and_snake CamelCase " * 800]
    whole = [tokens.count_tokens(t) for t in texts]  # under the real piece size: one call each
    unbroken = "x" * 30_000 + " tail words here"
    whole_unbroken = tokens.count_tokens(unbroken)
    monkeypatch.setattr(tokens, "_MAX_PIECE_CHARS", 997)
    assert [tokens.count_tokens(t) for t in texts] == whole
    # No boundary at all: hard cuts, each adding at most one token.
    assert whole_unbroken <= tokens.count_tokens(unbroken) <= whole_unbroken + 30_000 // (2 * 997) + 1
    monkeypatch.undo()
    assert tokens.count_tokens("y " * 200_000) > 0
