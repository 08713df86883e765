"""The default model's file rewritten once, so onnxruntime keeps its weights in int8 (about 65 MiB less per process).

Two edits of the shipped graph (the `onnx` package edits it): the word-embedding table looked up in int8
(`lookup_table.py`) and the weight matrices multiplied in int8 (`int8_matmul.py`). The result is written into the
model directory beside the tokenizer files. Both or neither: a model of another form loads as it is shipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from .int8_matmul import int8_matmuls
from .lookup_table import look_up_table


def write_rewritten_model(source: Path, target: Path) -> bool:
    """Write `source` with both edits to `target`; False (and nothing written) when either does not apply."""
    import onnx

    model = onnx.load(str(source))
    if not (look_up_table(model) and int8_matmuls(model)):
        return False
    onnx.checker.check_model(model)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    onnx.save(model, str(partial))
    os.replace(partial, target)  # several processes may write it at once: each renames a whole file
    return True
