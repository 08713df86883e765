"""`cortex bench search --tasks/--repo/--cases`: does smart search put the code a question is about at the top?

Three kinds of question, each on the tree it belongs to (extracted from a bare git directory, read-only, indexed
in a temporary database as a new user's first `cortex index` would):
- real bug fixes (the shared dev tasks, or fixes mined from a repository's history as `cortex bench localize
  --repo` mines them): the fix's description -> the chunks whose lines the fix changes (old side);
- identifiers mined from the tree (`identifiers.py`): a name -> the chunk defining it;
- a checked-in case list (`search_cases.json`): a plain question -> the file or definition that answers it.

Every method answers from the same tree: smart search through `Engine.search` (what `cortex ss`, the dashboard and
MCP `smart_search` call) on the lexical index and again once every chunk is embedded; BM25 over the same chunks;
ranked `git grep` for what a person would type; and the selector's own file ranking (`Engine.select`). Fields that
reveal a fix (`task_raw`, `commit`, `all_changed_files`) never reach a method: only `_fix_answers` reads the diff.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...core.engine import Engine
from ...core.errors import CortexError
from ...core.index.languages import is_test_path
from ...core.locations import cache_dir
from ...core.requests import MapRequest
from ...core.search.roles import path_role, topics_of
from ...core.store.sql import scan
from .identifiers import mine
from .localize import Task, bm25_order, extract_tree, grep_words, load_tasks, mine_tasks
from .scoring import changed_lines
from .vectors import DiskVectorCache

CASES = Path(__file__).with_name("search_cases.json")
METHODS = ("cortex", "cortex-lexical", "bm25", "grep", "selector", "selector-lexical", "map-lexical")
MAP_FOLLOWS = "map follows search"
"""The group where `map-lexical`'s files are scored against lexical search's first hit's file: file@1 is the share of
questions whose map (`cortex map --focus QUESTION`) opens with the file search answers first."""
CHUNK_COLUMNS = ["id", "path", "start_line", "end_line", "symbols", "text"]
SHOWN = 10
NOISE_ROLES = frozenset({"test", "fixture", "docs", "history"})
"""What a question not about them should not be answered with: tests, docs and changelogs."""


@dataclass(frozen=True)
class Answer:
    """A path, and the lines within it that count (empty: any part of the file)."""

    path: str
    lines: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Question:
    group: str
    text: str
    answers: tuple[Answer, ...]
    label: str = ""


@dataclass(frozen=True)
class Found:
    """One ranked result; a file ranking's results have no lines."""

    path: str
    start_line: int = 0
    end_line: int = 0


@dataclass(frozen=True)
class Tree:
    """A revision to index and the questions asked of it (`identifiers`: how many to mine from it too)."""

    git_dir: Path
    rev: str
    name: str
    questions: tuple[Question, ...] = ()
    identifiers: str = ""
    """The group mined identifier questions go to (none when empty)."""
    cases: tuple[dict, ...] = ()
    """Case-list entries whose answers are resolved against this tree's chunks."""


@dataclass
class Tally:
    """Sums over the questions of one group for one method."""

    file_at: dict[int, float] = field(default_factory=lambda: {1: 0.0, 3: 0.0})
    chunk_at: dict[int, float] = field(default_factory=lambda: {1: 0.0, 3: 0.0, 10: 0.0})
    rr: float = 0.0
    noise: int = 0
    noise_of: int = 0
    chunks: bool = True
    times_ms: list[float] = field(default_factory=list)
    questions: int = 0

    def add(self, question: Question, found: list[Found], ms: float, has_lines: bool) -> int:
        """Counts one answer; returns the rank of the first right chunk (0: none in the top 10)."""
        self.questions += 1
        self.times_ms.append(ms)
        self.chunks = has_lines
        paths = {a.path for a in question.answers}
        for k in self.file_at:
            self.file_at[k] += any(f.path in paths for f in found[:k])
        rank = next((i for i, f in enumerate(found[:SHOWN], 1) if _right(f, question.answers)), 0) if has_lines else 0
        for k in self.chunk_at:
            self.chunk_at[k] += 0 < rank <= k
        self.rr += 1.0 / rank if rank else 0.0
        topics = topics_of(question.text)
        if not (topics["tests"] or topics["docs"] or topics["history"]):
            top = found[:3]
            self.noise_of += len(top)
            self.noise += sum(path_role(f.path, is_test_path(f.path)) in NOISE_ROLES for f in top)
        return rank

    def row(self) -> dict:
        n = max(self.questions, 1)
        times = sorted(self.times_ms) or [0.0]
        out: dict = {f"file@{k}": round(v / n, 3) for k, v in self.file_at.items()}
        for k, v in self.chunk_at.items():
            out[f"chunk@{k}"] = round(v / n, 3) if self.chunks else None
        out["MRR"] = round(self.rr / n, 3) if self.chunks else None
        out["noise@3"] = round(self.noise / self.noise_of, 3) if self.noise_of else None
        out["p50_ms"] = round(statistics.median(times), 1)
        out["p95_ms"] = round(times[int(0.95 * (len(times) - 1))], 1)
        out["questions"] = self.questions
        return out


def _right(found: Found, answers: tuple[Answer, ...]) -> bool:
    return any(found.path == a.path and (not a.lines or any(found.start_line <= n <= found.end_line for n in a.lines))
               for a in answers)


# --- what is asked ---------------------------------------------------------------------------------------------


def _fix_answers(task: Task) -> tuple[Answer, ...]:
    """The scorer's reading of the fix: the old-side lines it changes in each gold file."""
    return tuple(Answer(path, changed_lines(task.git_dir, task.parent, task.commit, path)) for path in task.gold)


def fix_trees(tasks: list[Task], group: str, identifiers: str) -> list[Tree]:
    """One tree per task; the first tree of each repository also yields that repository's identifier questions."""
    trees, seen = [], set()
    for task in tasks:
        mined = "" if task.git_dir in seen else identifiers
        seen.add(task.git_dir)
        question = Question(group, task.task, _fix_answers(task), task.id)
        trees.append(Tree(task.git_dir, task.parent, _repo_name(task.git_dir), (question,), mined))
    return trees


def dev_trees(tasks_file: Path, mirrors: Path, every: int = 1, limit: int | None = None) -> list[Tree]:
    """Every `every`-th task (a subset spread over all repositories), at most `limit` of them."""
    tasks = load_tasks(tasks_file, mirrors)[:: max(every, 1)]
    return fix_trees(tasks[:limit] if limit else tasks, "dev tasks", "dev identifiers")


def held_out_trees(repo: Path, limit: int) -> list[Tree]:
    name = _repo_name(repo)
    tasks = mine_tasks(repo, limit=limit)
    if not tasks:
        raise CortexError(f"no bug fix found in the history of {repo}")
    return fix_trees(tasks, f"{name} tasks", f"{name} identifiers")


def case_trees(cases_file: Path, mirrors: Path) -> list[Tree]:
    cases = json.loads(cases_file.read_text(encoding="utf-8"))["cases"]
    by_tree: dict[tuple[str, str], list[dict]] = {}
    for case in cases:
        by_tree.setdefault((case["repo"], case["rev"]), []).append(case)
    trees = []
    for (repo, rev), listed in by_tree.items():
        git_dir = mirrors / repo.replace("/", "+") / "repo"
        if not git_dir.exists():
            raise CortexError(f"case list: no bare git directory for {repo} at {git_dir}")
        trees.append(Tree(git_dir, rev, repo, cases=tuple(listed)))
    return trees


def _repo_name(git_dir: Path) -> str:
    path = git_dir.resolve()
    return path.parent.name if path.name in ("repo", ".git") else path.name


def _case_questions(tree: Tree, chunks: list[dict]) -> list[Question]:
    out = []
    for case in tree.cases:
        answers = []
        for want in case["answers"]:
            symbol = want.get("symbol")
            rows = [r for r in chunks if r["path"] == want["path"]]
            if symbol:
                rows = [r for r in rows if any(s == symbol or s.endswith("." + symbol) for s in r["symbols"] or [])]
            if not rows:
                raise CortexError(f"case {case['question']!r}: {want['path']} {symbol or ''} is not in {tree.name}@{tree.rev}")
            lines = frozenset(n for r in rows for n in range(r["start_line"], r["end_line"] + 1)) if symbol else frozenset()
            answers.append(Answer(want["path"], lines))
        out.append(Question("cases", case["question"], tuple(answers), f"{tree.name}: {case['question']}"))
    return out


def _identifier_questions(tree: Tree, chunks: list[dict]) -> list[Question]:
    if not tree.identifiers:
        return []
    return [Question(tree.identifiers, q.text, tuple(Answer(path, frozenset(range(a, b + 1))) for path, a, b in q.spans),
                     f"{tree.name} {q.form}: {q.text}") for q in mine(chunks, tree.name)]


# --- the methods -----------------------------------------------------------------------------------------------


def _timed(fn: Callable[[], list[Found]]) -> tuple[list[Found], float]:
    t0 = time.perf_counter()
    found = fn()
    return found, (time.perf_counter() - t0) * 1000


def _search(engine: Engine, text: str) -> list[Found]:
    hits = engine.search(text, limit=SHOWN).hits
    return [Found(h.path, h.start_line, h.end_line) for h in hits if h.source == "code"][:SHOWN]


def _select(engine: Engine, text: str) -> list[Found]:
    return [Found(p) for p in engine.select(text, 12000).ranked_files[:SHOWN]]


def _map(engine: Engine, text: str) -> list[Found]:
    """The map's files in the order it shows them (a file ranking: no lines)."""
    return [Found(p) for p in engine.repo_map(MapRequest(1000, (text,))).files[:SHOWN]]


def _bm25(chunks: list[dict], text: str) -> list[Found]:
    by_id = {r["id"]: r for r in chunks}
    ranked = bm25_order({r["id"]: f"{r['text']}\n{r['path']}" for r in chunks}, text)
    return [Found(by_id[i]["path"], by_id[i]["start_line"], by_id[i]["end_line"]) for i in ranked[:SHOWN]]


def _grep(tree: Path, chunks: list[dict], text: str) -> list[Found]:
    """`git grep -n -i -F` for the question's identifier-like words, as a person would type them; each matching
    chunk ranked by how many distinct words its lines hold, then by matching lines."""
    words = sorted(grep_words(text) | ({text.strip()} if " " not in text.strip() else set()))
    if not words:
        return []
    out = subprocess.run(["git", "grep", "--no-index", "-n", "-I", "-i", "-F", *[a for w in words for a in ("-e", w)]],
                         cwd=tree, capture_output=True, text=True, errors="replace", check=False).stdout
    by_path: dict[str, list[dict]] = {}
    for r in chunks:
        by_path.setdefault(r["path"], []).append(r)
    score: dict[str, tuple[set[str], int]] = {}
    rows: dict[str, dict] = {}
    lowered = [w.lower() for w in words]
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        number, _, body = rest.partition(":")
        if not number.isdigit():
            continue
        row = next((r for r in by_path.get(path, []) if r["start_line"] <= int(number) <= r["end_line"]), None)
        if row is None:
            continue
        matched, count = score.setdefault(row["id"], (set(), 0))
        matched.update(w for w in lowered if w in body.lower())
        score[row["id"]] = (matched, count + 1)
        rows[row["id"]] = row
    ranked = sorted(score, key=lambda i: (-len(score[i][0]), -score[i][1], rows[i]["path"], rows[i]["start_line"]))
    return [Found(rows[i]["path"], rows[i]["start_line"], rows[i]["end_line"]) for i in ranked[:SHOWN]]


# --- the run ---------------------------------------------------------------------------------------------------


def run(trees: list[Tree], methods: tuple[str, ...] = METHODS, vector_cache: Path | None = None,
        progress: Callable[[str], None] | None = None) -> dict[str, dict[str, dict]]:
    """Every method on every question; returns {group: {method: row}}."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise CortexError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    embed = any(m in methods for m in ("cortex", "selector"))
    cache = DiskVectorCache(vector_cache or cache_dir() / "bench" / "vectors.sqlite") if embed else None
    tallies: dict[str, dict[str, Tally]] = {}
    try:
        for number, spec in enumerate(trees, 1):
            line = _run_tree(spec, methods, cache, tallies)
            if progress:
                progress(f"[{number}/{len(trees)}] {spec.name}@{spec.rev[:10]}: {line}")
    finally:
        if cache is not None:
            cache.close()
    return {group: {m: t.row() for m, t in by_method.items()} for group, by_method in tallies.items()}


def _run_tree(spec: Tree, methods: tuple[str, ...], cache: DiskVectorCache | None,
              tallies: dict[str, dict[str, Tally]]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        extract_tree(spec.git_dir, spec.rev, root)
        engine = Engine(root, db=str(Path(tmp) / "db"))
        index = engine.code_index(create=True)
        # The lexical pass first, with the index's own (empty) vector cache: given the shared one, it would reuse
        # cached vectors as it writes and the lexical run would not be lexical.
        index.update(embed=False)
        chunks = scan(index.chunks, None, CHUNK_COLUMNS)
        questions = [*spec.questions, *_case_questions(spec, chunks), *_identifier_questions(spec, chunks)]
        answers: dict[str, list[tuple[Question, list[Found], float]]] = {}
        plain = {
            "bm25": lambda q: _bm25(chunks, q.text),
            "grep": lambda q: _grep(root, chunks, q.text),
            "cortex-lexical": lambda q: _search(engine, q.text),
            "selector-lexical": lambda q: _select(engine, q.text),
            "map-lexical": lambda q: _map(engine, q.text),
        }
        # A resident server answers warm: the first search of a tree (opening tables, loading the model and the
        # full-text index) is not timed.
        _search(engine, "warm up")
        for name, fn in plain.items():
            if name in methods:
                answers[name] = [(q, *_timed(lambda: fn(q))) for q in questions]
        if cache is not None:
            # Consecutive commits share most chunks: their vectors are computed once for the whole run.
            index.vector_cache = cache
            index.embed_pending()
            _search(engine, "warm up")
            embedded = {"cortex": lambda q: _search(engine, q.text), "selector": lambda q: _select(engine, q.text)}
            for name, fn in embedded.items():
                if name in methods:
                    answers[name] = [(q, *_timed(lambda: fn(q))) for q in questions]
        engine.close()
    if "map-lexical" in answers and "cortex-lexical" in answers:
        # The map against search's own first answer, whatever the question's right answer.
        for (question, shown, ms), (_, hits, _) in zip(answers["map-lexical"], answers["cortex-lexical"]):
            if hits:
                follows = Question(MAP_FOLLOWS, question.text, (Answer(hits[0].path),), question.label)
                tallies.setdefault(MAP_FOLLOWS, {}).setdefault("map-lexical", Tally()).add(follows, shown, ms, False)
    summary = []
    for name in methods:
        ranks = []
        for question, found, ms in answers.get(name, []):
            tally = tallies.setdefault(question.group, {}).setdefault(name, Tally())
            ranks.append(tally.add(question, found, ms, not name.startswith(("selector", "map"))))
        if ranks and not name.startswith(("selector", "map")):
            summary.append(f"{name} top3 {sum(0 < r <= 3 for r in ranks)}/{len(ranks)}")
            summary += [f"\n    {name} rank {r or '-'}: {q.label}" for (q, _, _), r in zip(answers[name], ranks)
                        if q.group == "cases" or q.group.endswith("identifiers") and r != 1]
    return " ".join(summary)
