"""`cortex bench locomo` on a small conversation in LoCoMo's shape: recall is reported over all questions and per
category, so a change that helps one kind of question (multi-hop) and hurts another shows."""

from __future__ import annotations

import json

from .conftest import Cli


def _turn(dia_id: str, speaker: str, text: str) -> dict:
    return {"dia_id": dia_id, "speaker": speaker, "text": text}


CONVERSATION = {
    "sample_id": "tiny",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [_turn("D1:1", "Ana", "I adopted a grey cat called Pixel last week."),
                      _turn("D1:2", "Ben", "Lovely! I spent Sunday repairing my bicycle."),
                      _turn("D1:3", "Ana", "My sister teaches violin at the conservatory.")],
        "session_2_date_time": "10:02 am on 20 June, 2023",
        "session_2": [_turn("D2:1", "Ben", "I rode the repaired bicycle to the coast on Saturday."),
                      _turn("D2:2", "Ana", "Pixel the cat knocked my violin case off the shelf.")],
    },
    "qa": [
        {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "Where did Ben ride his bicycle after repairing it?", "answer": "the coast",
         "evidence": ["D1:2", "D2:1"], "category": 1},
        {"question": "When did Ben ride to the coast?", "answer": "June 2023", "evidence": ["D2:1"], "category": 2},
        {"question": "Is this adversarial?", "answer": "", "evidence": ["D1:3"], "category": 5},
    ],
}


def test_locomo_reports_recall_per_category(repo, tmp_path):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([CONVERSATION]), encoding="utf-8")
    rows = Cli(repo, served=False).json("bench", "locomo", "--data", str(data))
    assert rows["smart search"]["questions"] == 3  # category 5 has no evidence to find
    for category, asked in (("single-hop", 1), ("multi-hop", 1), ("temporal", 1), ("open-domain", 0)):
        assert rows[f"smart search / {category}"]["questions"] == asked, category
    assert rows["smart search / single-hop"]["R@10"] == 1.0
