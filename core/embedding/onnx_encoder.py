"""The default embedding model (all-MiniLM-L6-v2, int8 ONNX) run by onnxruntime with its working memory bounded and
given back after every batch of documents.

fastembed runs the same files, but its session keeps what a batch needed for good: onnxruntime's CPU arena grows to
the largest batch seen and never shrinks, and the memory pattern pre-plans a block per input shape. At batch 32 and
256 tokens that left 1.4 GB resident after a first index, for as long as the process lived (the resident server: 15
minutes). fastembed exposes neither the memory pattern nor run options, so this module makes the session itself:
- the memory pattern off, so the arena holds only what one run uses (about 20 MiB per 256-token text);
- after a batch of documents, one run on an empty text with arena shrinkage on hands the arena's free memory back
  (shrinking on the last real batch kept about 90 MiB that its output still pinned);
- each text runs alone: the model file multiplies in int8 (`int8_matmul.py`), and there padding a text to its
  batch's longest one moved its vector (up to 0.05 % in cosine), so a text's vector depended on its neighbours.
  Alone it depends on the text only, and costs no time: no padding is computed (docs/benchmarks.md);
- texts run side by side, one core each, rather than one at a time on every core: one text's matrices (a few
  hundred tokens by 384) are too small for onnxruntime's threads to share, so two threads on one text took about
  the wall time of one; two texts at once take half of it for the same CPU (docs/benchmarks.md). A run on one
  thread computes the same numbers as on two, so the vectors do not change.
Tokenizing, mean pooling and normalising are what sentence-transformers (and fastembed) do for this model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .. import heap

_SHRINK = ("memory.enable_memory_arena_shrinkage", "cpu:0")
"""Run option: after this run, the CPU arena returns its unused memory to the system."""


class OnnxEncoder:
    """Mean-pooled, unit-length sentence vectors from a BERT-style ONNX model in `model_dir` (`model.onnx`,
    `tokenizer.json`, `tokenizer_config.json`)."""

    def __init__(self, model_dir: Path, threads: int) -> None:
        """`threads`: texts embedded at once, each on one core (above)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads every text to 128 tokens and cuts there; the model was trained at
        # `model_max_length` (256), and a text that runs alone needs no padding.
        self._tokenizer.enable_truncation(max_length=int(config["model_max_length"]))
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_mem_pattern = False
        # One thread per run, and no pool whose idle threads would spin or sleep: the runs themselves go side by
        # side (`embed`). The session runs its graph sequentially, so there is no inter-op pool either.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._threads = max(1, threads)
        self._session = ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._release = ort.RunOptions()
        self._release.add_run_config_entry(*_SHRINK)
        heap.trim()  # loading parsed the file and converted its weights: about 50 MiB of that is garbage now

    def embed(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        """One unit vector per text, each text run alone, up to `threads` of them at once (onnxruntime lets go of
        the interpreter's lock while it runs, and one session serves concurrent runs). `max_tokens`: the model reads
        each text's first word pieces up to this many, its [CLS] and [SEP] markers included (`embed.py`)."""
        def run(text: str) -> np.ndarray:
            return self._run(text, max_tokens)

        if self._threads == 1 or len(texts) < 2:
            return np.stack([run(text) for text in texts])
        with ThreadPoolExecutor(min(self._threads, len(texts))) as pool:
            return np.stack(list(pool.map(run, texts)))

    def release(self) -> None:
        """Hand back the memory the last runs used: the arena's free regions, then the C heap's free pages."""
        self._session.run(None, self._feeds("", None), self._release)
        heap.trim()

    def _feeds(self, text: str, max_tokens: int | None) -> dict[str, np.ndarray]:
        pieces = self._tokenizer.encode(text).ids
        if max_tokens is not None and len(pieces) > max_tokens:
            # The same pieces as the tokenizer's own cut there: the first ones, then the closing [SEP].
            pieces = pieces[: max_tokens - 1] + pieces[-1:]
        ids = np.array([pieces], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        return {k: v for k, v in feeds.items() if k in self._inputs}

    def _run(self, text: str, max_tokens: int | None = None) -> np.ndarray:
        """Mean of the last hidden states over the text's tokens, to unit length."""
        pooled = self._session.run(None, self._feeds(text, max_tokens))[0][0].mean(axis=0, dtype=np.float64)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)
