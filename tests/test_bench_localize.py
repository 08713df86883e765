"""The selection benchmark's own arithmetic: the budget curve's precision shares, the oracle ceiling, the seed's
TF-IDF and full-stuff baselines and the per-repository win/tie/loss table (the scorer is what every figure in
docs/benchmarks.md rests on)."""

from __future__ import annotations

from pathlib import Path

from cortex_tui.app.bench.localize import Duel, _Files, duels, full_stuff_rank, tfidf_rank
from cortex_tui.app.bench.scoring import MethodScore, Shown, oracle_texts


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
