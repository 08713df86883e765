"""The selection benchmark's own arithmetic: the budget curve's precision shares, the oracle ceiling, the seed's
TF-IDF and full-stuff baselines and the per-repository win/tie/loss table (the scorer is what every figure in
docs/benchmarks.md rests on)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cortex_tui.app.bench.localize import (
    Duel,
    _Files,
    bm25_rank,
    default_methods,
    duels,
    full_stuff_rank,
    llm_triage_rank,
    run,
    tfidf_rank,
)
from cortex_tui.app.bench.scoring import MethodScore, Shown, oracle_texts
from cortex_tui.core.config import Settings
from cortex_tui.core.errors import CortexError
from cortex_tui.core.search.llm_filter import LLMFilterConfig

from .test_llm_filter import FakeModel


def _tree(tmp_path: Path) -> Path:
    files = {
        "src/progress.py": "def render_progress(bar):\n    percent = bar.pos * 100 // bar.length\n    return percent\n",
        "src/config.py": "def read_config(path):\n    return open(path).read()\n",
        "src/aaa.py": "VALUE = 1\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    return tmp_path


def test_tfidf_ranks_the_file_with_the_tasks_rare_words_first_and_full_stuff_is_path_order(tmp_path):
    files = _Files(_tree(tmp_path), {})
    assert tfidf_rank(files, "the progress percent is wrong")[0] == "src/progress.py"
    assert "src/aaa.py" not in tfidf_rank(files, "the progress percent is wrong")
    assert full_stuff_rank(files, "anything") == ["src/aaa.py", "src/config.py", "src/progress.py"]


def test_shares_count_the_tokens_and_files_that_lie_in_edited_files():
    score = MethodScore()
    shown = Shown(["a.py", "b.py"], {"a.py": "x = 1\n", "b.py": "y = 2\n"}, 100, 0.0, file_tokens={"a.py": 30, "b.py": 60})
    score.add({"a.py": ["x = 1 + 2 + 3"]}, shown)
    score.add({"a.py": []}, Shown([], {}, 0, 0.0))
    row = score.row()
    assert row["gold_token_share"] == round((30 / 100 + 0.0) / 2, 3)
    assert row["gold_file_share"] == round((1 / 2 + 0.0) / 2, 3)


def test_the_oracle_shows_only_the_changed_lines_smallest_file_first_within_the_budget(tmp_path):
    root = _tree(tmp_path)
    shown = oracle_texts(root, {"src/progress.py": frozenset({2}), "src/config.py": frozenset({1})}, budget=1000)
    assert shown.texts["src/progress.py"] == ("def render_progress(bar):\n    percent = bar.pos * 100 // bar.length\n"
                                              "    return percent\n")
    assert shown.texts["src/config.py"] == "def read_config(path):\n    return open(path).read()\n"
    tight = oracle_texts(root, {"src/progress.py": frozenset({2}), "src/config.py": frozenset({1})},
                         budget=shown.file_tokens["src/config.py"])
    assert list(tight.texts) == ["src/config.py"]


def test_duels_count_wins_ties_and_losses_per_repository_and_budget():
    edits = {
        "cortex@4000": [("pallets+click", 1.0), ("pallets+click", 0.5), ("spf13+cobra", 0.0)],
        "bm25@4000": [("pallets+click", 0.0), ("pallets+click", 0.5), ("spf13+cobra", 1.0)],
    }
    found = duels(edits, ["cortex", "bm25"], (4000,), lambda m, b: f"{m}@{b}")
    assert found == [Duel("pallets+click", "bm25", 4000, 1, 1, 0), Duel("spf13+cobra", "bm25", 4000, 0, 0, 1)]


def test_the_llm_triage_takes_the_files_the_model_points_at_and_falls_back_to_bm25(tmp_path):
    files = _Files(_tree(tmp_path), {})
    model = FakeModel()
    try:
        config = LLMFilterConfig(model.url, "tiny-test-model", timeout=5.0)
        model.reply = lambda body: next(line[1:line.index("]")] for line in body["messages"][1]["content"].splitlines()
                                        if line.startswith("[") and "src/config.py" in line)
        ranked, note = llm_triage_rank(files, "read the progress percent from the config", config)
        prompt = model.requests[-1]["body"]["messages"]
        assert "numbered files" in prompt[0]["content"] and "Files:\n[1] src/" in prompt[1]["content"]
        assert ranked == ["src/config.py"] and "chose 1 of" in note
        model.reply = "no idea"
        ranked, note = llm_triage_rank(files, "read the progress percent from the config", config)
        assert ranked == bm25_rank(files, "read the progress percent from the config") and "not a list" in note
    finally:
        model.close()


def test_the_llm_triage_runs_by_default_only_with_a_model_configured(monkeypatch):
    assert "llm-triage" not in default_methods(Settings())
    monkeypatch.setenv("CORTEX_LLM_FILTER_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CORTEX_LLM_FILTER_MODEL", "tiny-test-model")
    assert default_methods(Settings())[-1] == "llm-triage"
    monkeypatch.delenv("CORTEX_LLM_FILTER_URL")
    with pytest.raises(CortexError, match="llm-triage asks a model"):
        run([], methods=("llm-triage",), settings=Settings())
