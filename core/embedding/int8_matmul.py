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

BLOCK = 128
"""Values per quantization block along K: a power of two (MatMulNBits' rule) dividing both 384 and 1,536."""

ACCURACY_INT8 = 4
"""MatMulNBits' accuracy level that multiplies in int8 (levels 0-1 dequantize the weights to float on every run)."""


def int8_matmuls(model) -> bool:
    """Edit the loaded model so every MatMul on a Cast-and-scaled int8 constant runs as MatMulNBits; False (and
    nothing changed) when any such matrix lacks the shipped form (int8 [K, N], one scale per column, K in blocks)."""
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    nodes = list(graph.node)  # one list, so positions name nodes (protobuf may wrap an element anew on each read)
    constants = {t.name: t for t in graph.initializer}
    producer = {out: at for at, node in enumerate(nodes) for out in node.output}
    readers: dict[str, int] = {}
    for node in nodes:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    replaced: dict[int, object] = {}
    dropped_nodes: set[int] = set()
    dropped_constants: set[str] = set()
    added = []
    for at, node in enumerate(nodes):
        feeding = _scaled_constant(node, nodes, producer, constants)
        if feeding is None:
            continue
        scale_at, cast_at = feeding
        scale_node, cast = nodes[scale_at], nodes[cast_at]
        values = numpy_helper.to_array(constants[cast.input[0]])
        scales = numpy_helper.to_array(constants[scale_node.input[1]]) if scale_node.input[1] in constants else None
        if (values.dtype != np.int8 or values.ndim != 2 or scales is None or scales.size != values.shape[1]
                or values.shape[0] % BLOCK or readers[node.input[1]] != 1 or readers[cast.output[0]] != 1):
            return False
        k, n = values.shape
        blocks = k // BLOCK
        name = node.input[1]
        added += [
            numpy_helper.from_array((values.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, blocks, BLOCK),
                                    f"{name}_u8"),
            numpy_helper.from_array(np.repeat(scales.reshape(n, 1).astype(np.float32), blocks, axis=1).reshape(-1),
                                    f"{name}_scales"),
            numpy_helper.from_array(np.full(n * blocks, 128, dtype=np.uint8), f"{name}_zero"),
        ]
        replaced[at] = helper.make_node(
            "MatMulNBits", [node.input[0], f"{name}_u8", f"{name}_scales", f"{name}_zero"], list(node.output),
            name=f"{node.name}_int8", domain="com.microsoft", K=k, N=n, bits=8, block_size=BLOCK,
            accuracy_level=ACCURACY_INT8)
        dropped_nodes |= {scale_at, cast_at}
        dropped_constants |= {cast.input[0], scale_node.input[1]}
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


def _scaled_constant(node, nodes: list, producer: dict[str, int], constants: dict) -> tuple[int, int] | None:
    """Positions of the Mul and the Cast that make a MatMul's second input from an int8 constant, if they do."""
    scale_at = producer.get(node.input[1]) if node.op_type == "MatMul" else None
    if scale_at is None or nodes[scale_at].op_type != "Mul":
        return None
    cast_at = producer.get(nodes[scale_at].input[0])
    if cast_at is None or nodes[cast_at].op_type != "Cast" or nodes[cast_at].input[0] not in constants:
        return None
    return scale_at, cast_at
