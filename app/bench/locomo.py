"""`cortex bench locomo --data FILE`: turn-level evidence retrieval on LoCoMo conversations.

Every turn of a conversation becomes a memory (dated with its session's date, with the neighbouring turns as
its search context); every question of categories 1-4
(5 is adversarial) is asked four ways in the same run: full-text only, vector only, hybrid RRF, and the full smart
search (reranker and time words on top of the fusion); with an LLM filter configured, a fifth: smart search then
the pointer-only filter. Time words are read relative to the conversation's last session, its "now". Reported:
evidence recall@1/@5/@10 (share of a question's evidence turns in the top k) and MRR of the first evidence turn,
over all questions and per category (multi-hop, temporal, open-domain, single-hop).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ...core.config import Settings
from ...core.embedding.embed import Embedder
from ...core.errors import CortexError
from ...core.records import MemoryDraft
from ...core.search.llm_filter import LLMFilterConfig, filter_results
from ...core.search.search import Searcher
from ...core.store.database import Database
from ...core.store.store import MemoryStore


@dataclass(frozen=True)
class Mode:
    """One way to search: the signals fused, and whether the boosts apply (`Searcher.search`'s own arguments)."""

    signals: tuple[str, ...]
    boost: bool


MODES = {
    "full-text only": Mode(signals=("text",), boost=False),
    "vector only": Mode(signals=("vector",), boost=False),
    "hybrid RRF": Mode(signals=("vector", "text"), boost=False),
    "smart search": Mode(signals=("vector", "text", "context"), boost=True),
}
KS = (1, 5, 10)
FILTERED = "smart + LLM filter"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""LoCoMo's question categories (5, adversarial, has no evidence to find)."""


@dataclass
class ModeScore:
    """Recall@k sums and reciprocal ranks for one way of searching."""

    recall: dict[int, float] = field(default_factory=lambda: {k: 0.0 for k in KS})
    rr: float = 0.0
    questions: int = 0
    seconds: float = 0.0

    def add(self, gold: set[str], ranked: list[str | None], seconds: float) -> None:
        self.questions += 1
        self.seconds += seconds
        for k in KS:
            self.recall[k] += len(gold & set(ranked[:k])) / len(gold)
        first = next((i for i, key in enumerate(ranked, 1) if key in gold), None)
        self.rr += 1.0 / first if first else 0.0

    def row(self) -> dict:
        n = max(self.questions, 1)
        return {**{f"R@{k}": round(self.recall[k] / n, 3) for k in KS}, "MRR": round(self.rr / n, 3),
                "questions": self.questions, "ms_per_query": round(1000 * self.seconds / n, 1)}


def _session_time(value: str) -> datetime | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%H:%M on %d %B, %Y"):
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def turns(conversation: dict) -> list[tuple[str, str, datetime | None]]:
    """(dia_id, memory text, session time) for every turn; a shared photo's caption is part of the turn."""
    out = []
    sessions = sorted(
        (int(k.split("_")[1]), v) for k, v in conversation.items() if k.startswith("session_") and isinstance(v, list)
    )
    for number, session in sessions:
        when = _session_time(conversation.get(f"session_{number}_date_time", ""))
        for turn in session:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append((turn["dia_id"], text, when))
    return out


def _around(items, i: int) -> str:
    """The turns before and after: a reply often answers what the other speaker just asked."""
    before = items[i - 1][1] if i > 0 else ""
    after = items[i + 1][1] if i + 1 < len(items) else ""
    return f"{before}\n{after}".strip()


def run(data: Path, limit_conversations: int | None = None, progress: Callable[[str], None] | None = None,
        settings: Settings | None = None) -> dict[str, dict]:
    settings = settings or Settings()
    try:
        conversations = json.loads(data.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CortexError(f"cannot read LoCoMo data {data}: {exc}") from exc
    embedder = Embedder(settings.embed_model, settings.embed_model_path, settings.embed_threads, settings.embed_batch)
    llm = LLMFilterConfig.from_settings(settings)
    modes = dict(MODES, **({FILTERED: MODES["smart search"]} if llm.configured else {}))
    scores = {mode: ModeScore() for mode in modes}
    by_category = {(mode, c): ModeScore() for mode in modes for c in CATEGORIES}
    for conv in conversations[:limit_conversations]:
        with tempfile.TemporaryDirectory() as tmp:
            store = MemoryStore(Database(str(Path(tmp) / "db"), create=True), embedder)
            items = turns(conv["conversation"])
            drafts = [
                MemoryDraft(text=t, kind="observation", source_key=d, created_at=w, tags=("locomo",), context=_around(items, i))
                for i, (d, t, w) in enumerate(items)
            ]
            if progress:
                progress(f"{conv.get('sample_id', '?')}: ingesting {len(drafts)} turns")
            results = store.remember_many(drafts)
            key_of = {r.memory.id: r.memory.source_key for r in results}
            valid = {d for d, _, _ in items}
            searcher = Searcher([store], None, embedder, settings.search)
            now = max((w for _, _, w in items if w), default=None)
            questions = [q for q in conv["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")
                         and all(e in valid for e in q["evidence"])]
            if progress:
                progress(f"{conv.get('sample_id', '?')}: asking {len(questions)} questions")
            for q in questions:
                gold = set(q["evidence"])
                for mode, how in modes.items():
                    t0 = time.perf_counter()
                    if mode == FILTERED:
                        found = searcher.search(q["question"], limit=max(max(KS), llm.candidates), now=now,
                                                signals=how.signals, boost=how.boost)
                        hits = filter_results(found, llm).hits[: max(KS)]
                    else:
                        hits = searcher.search(q["question"], limit=max(KS), now=now, signals=how.signals,
                                               boost=how.boost).hits
                    elapsed = time.perf_counter() - t0
                    ranked = [key_of.get(h.id) for h in hits]
                    for score in (scores[mode], by_category[(mode, q["category"])]):
                        score.add(gold, ranked, elapsed)
    rows = {mode: s.row() for mode, s in scores.items()}
    rows.update({f"{mode} / {CATEGORIES[c]}": s.row() for (mode, c), s in by_category.items()})
    return rows

