"""The default model's weight matrices kept in int8 and multiplied in int8 (onnxruntime's MatMulNBits, 8 bits).

The shipped model stores each of its 36 weight matrices as int8 values with one scale per column, turned into float
by a Cast and a Mul before its MatMul. onnxruntime folds those into float matrices at load: 42 MiB that every process
with the model kept for its life (the resident server, each index child, an in-process command). Multiplying
without that folding (the memory saved) converted every weight again on every run: a query took 180-270 ms.

MatMulNBits holds the matrix as it is shipped (as uint8 with a zero point of 128, which is the same value) and, at
accuracy level 4, quantizes the activations per block of 128 values to int8 and multiplies in integers: the
model holds 69 MiB instead of 98, a query is embedded in about half the time and documents a third faster. The
activations' rounding moves a vector by 0.05 % in cosine (median; 0.35 % at most over 300 chunks), so the rewritten
model's vectors carry their own key (`Embedder.model_id`); search and LoCoMo were measured on both
(docs/benchmarks.md).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # onnx is imported only by the rewrite itself, once per model file
    from onnx import ModelProto, NodeProto, TensorProto

BLOCK = 128
"""Values per quantization block along K: a power of two (MatMulNBits' rule) dividing both 384 and 1,536."""

ACCURACY_INT8 = 4
"""MatMulNBits' accuracy level that multiplies in int8 (levels 0-1 dequantize the weights to float on every run)."""


def int8_matmuls(model: ModelProto) -> bool:
    """Edit the loaded model so every MatMul on a Cast-and-scaled int8 constant runs as MatMulNBits; False (and
    nothing changed) when any such matrix lacks the shipped form: int8 [K, N] with K in blocks, cast to float, one
    scale per column, and the matrix, its scales and each step between them read by nothing else."""
    from onnx import helper, numpy_helper

    graph = model.graph
    nodes = list(graph.node)  # one list, so positions name nodes (protobuf may wrap an element anew on each read)
    constants = {t.name: t for t in graph.initializer}
    producer = {out: at for at, node in enumerate(nodes) for out in node.output}
    readers = Counter(name for node in nodes for name in node.input)
    replaced: dict[int, NodeProto] = {}
    dropped_nodes: set[int] = set()
    dropped_constants: set[str] = set()
    added: list[TensorProto] = []
    for at, node in enumerate(nodes):
        feeding = _scaled_constant(node, nodes, producer, constants)
        if feeding is None:
            continue
        scale_at, cast_at = feeding
        scale_node, cast = nodes[scale_at], nodes[cast_at]
        quantized, scale = cast.input[0], scale_node.input[1]
        if any(readers[name] != 1 for name in (node.input[1], cast.output[0], quantized, scale)):
            return False
        values = numpy_helper.to_array(constants[quantized])
        scales = numpy_helper.to_array(constants[scale]) if scale in constants else None
        if not _shipped_form(values, scales, cast):
            return False
        k, n = values.shape
        name = node.input[1]
        added += _nbits_constants(name, values, scales)
        replaced[at] = helper.make_node(
            "MatMulNBits", [node.input[0], f"{name}_u8", f"{name}_scales", f"{name}_zero"], list(node.output),
            name=f"{node.name}_int8", domain="com.microsoft", K=k, N=n, bits=8, block_size=BLOCK,
            accuracy_level=ACCURACY_INT8)
        dropped_nodes |= {scale_at, cast_at}
        dropped_constants |= {quantized, scale}
    if not replaced:
        return False
    del graph.node[:]
    graph.node.extend(replaced.get(at, node) for at, node in enumerate(nodes) if at not in dropped_nodes)
    kept = [t for t in graph.initializer if t.name not in dropped_constants] + added
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return True


def _scaled_constant(node: NodeProto, nodes: list[NodeProto], producer: dict[str, int],
                     constants: dict[str, TensorProto]) -> tuple[int, int] | None:
    """Positions of the Mul and the Cast that make a MatMul's second input from a constant, if they do."""
    scale_at = producer.get(node.input[1]) if node.op_type == "MatMul" else None
    if scale_at is None or nodes[scale_at].op_type != "Mul":
        return None
    cast_at = producer.get(nodes[scale_at].input[0])
    if cast_at is None or nodes[cast_at].op_type != "Cast" or nodes[cast_at].input[0] not in constants:
        return None
    return scale_at, cast_at


def _shipped_form(values, scales, cast: NodeProto) -> bool:
    """int8 [K, N] with K in whole blocks, cast to float32, and one scale per column ([N] or [1, N]: a [K, 1] of
    per-row scales has as many values when K == N, and would be applied to the wrong axis)."""
    import numpy as np
    from onnx import TensorProto, helper

    to = next((helper.get_attribute_value(a) for a in cast.attribute if a.name == "to"), None)
    return (values.dtype == np.int8 and values.ndim == 2 and values.shape[0] % BLOCK == 0
            and to == TensorProto.FLOAT and scales is not None
            and scales.shape in ((values.shape[1],), (1, values.shape[1])))


def _nbits_constants(name: str, values, scales) -> list[TensorProto]:
    """MatMulNBits' inputs for one matrix: the values as uint8 around a zero point of 128 (the same numbers), laid
    out [N, blocks, BLOCK], and each column's scale repeated per block."""
    import numpy as np
    from onnx import numpy_helper

    k, n = values.shape
    blocks = k // BLOCK
    return [
        numpy_helper.from_array((values.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, blocks, BLOCK),
                                f"{name}_u8"),
        numpy_helper.from_array(np.repeat(scales.reshape(n, 1).astype(np.float32), blocks, axis=1).reshape(-1),
                                f"{name}_scales"),
        numpy_helper.from_array(np.full(n * blocks, 128, dtype=np.uint8), f"{name}_zero"),
    ]
