"""The embedding model: the shipped MiniLM files on an onnxruntime session of our own (fastembed for a model directory
of the user's), with a vector cache."""

from pathlib import Path

MINILM_FILES = Path(__file__).parent / "model_files" / "all-MiniLM-L6-v2"
"""The tokenizer and config files of all-MiniLM-L6-v2 (Apache-2.0, NOTICE beside them), shipped with the package."""
