"""The default embedding model (all-MiniLM-L6-v2, int8 ONNX) run by onnxruntime with its working memory bounded and
given back after every batch of documents.

fastembed runs the same files, but its session keeps what a batch needed for good: onnxruntime's CPU arena grows to
the largest batch seen and never shrinks, and the memory pattern pre-plans a block per input shape. At batch 32 and
256 tokens that left 1.4 GB resident after a first index, for as long as the process lived (the resident server: 15
minutes). fastembed exposes neither the memory pattern nor run options, so this module makes the session itself:
- the memory pattern off, so the arena holds only what one batch uses (about 20 MiB per 256-token text);
- after a batch of documents, one run on an empty text with arena shrinkage on hands the arena's free memory back
  (shrinking on the last real batch kept about 90 MiB that its output still pinned);
- graph optimisations stay on: they turn the int8 weights into float ones once, at load (+120 MiB). Without them
  every run converts all the weights again, and a query took 180-270 ms instead of 12-40 ms.
Tokenizing, mean pooling and normalising are what sentence-transformers (and fastembed) do for this model; the
vectors agree with fastembed's to within 3e-7.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import heap

_SHRINK = ("memory.enable_memory_arena_shrinkage", "cpu:0")
"""Run option: after this run, the CPU arena returns its unused memory to the system."""


class OnnxEncoder:
    """Mean-pooled, unit-length sentence vectors from a BERT-style ONNX model in `model_dir` (`model.onnx`,
    `tokenizer.json`, `tokenizer_config.json`)."""

    def __init__(self, model_dir: Path, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads every text to 128 tokens and cuts there; the model was trained at
        # `model_max_length` (256) and a batch needs padding only to its longest text.
        self._tokenizer.enable_truncation(max_length=int(config["model_max_length"]))
        pad = config.get("pad_token", "[PAD]")
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id(pad) or 0, pad_token=pad)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_mem_pattern = False
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
        self._session = ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._release = ort.RunOptions()
        self._release.add_run_config_entry(*_SHRINK)
        heap.trim()  # loading parsed the file and converted its weights: about 50 MiB of that is garbage now

    def embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """One unit vector per text, `batch_size` texts per run."""
        return np.concatenate([self._run(texts[lo : lo + batch_size]) for lo in range(0, len(texts), batch_size)])

    def release(self) -> None:
        """Hand back the memory the last batches used: the arena's free regions, then the C heap's free pages."""
        self._session.run(None, self._feeds([""])[0], self._release)
        heap.trim()

    def _feeds(self, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        encoded = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return {k: v for k, v in feeds.items() if k in self._inputs}, mask

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        feeds, mask = self._feeds(texts)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float64)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

