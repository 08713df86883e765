"""The default model's word-embedding table kept in int8: only the rows a text uses are converted to float.

The shipped int8 model turns each weight matrix into float before its use (Cast, then Mul by the row scales), and
onnxruntime folds those constants once at load, which is what makes queries fast (see onnx_encoder.py). For the
word-embedding table (30,522 x 384) that folding costs 45 MiB of float rows, though a text reads only a few hundred
of them. Rewritten to look the int8 rows and their scales up first, then Cast and Mul, the table stays 11 MiB: each
row is the same float32 product as before, so this edit alone leaves the vectors bit-identical (the other weights:
`int8_matmul.py`).

The edit is one of the rewrites `model_rewrite.py` makes once per model file.
"""

from __future__ import annotations

TABLE = "inner.embeddings.word_embeddings.weight"
"""The folded table's name in the shipped model: its int8 values are `TABLE_q`, its row scales `TABLE_scale`."""


def look_up_table(model) -> bool:
    """Edit the loaded model so the word-embedding table is looked up in int8; False (and nothing changed) when the
    model does not have the shipped model's form."""
    import onnx
    from onnx import helper

    nodes = list(model.graph.node)
    cast = [n for n in nodes if n.op_type == "Cast" and list(n.input) == [f"{TABLE}_q"]]
    scale = [n for n in nodes if n.op_type == "Mul" and list(n.output) == [TABLE]
             and list(n.input) == [cast[0].output[0], f"{TABLE}_scale"]] if len(cast) == 1 else []
    lookup = [n for n in nodes if n.op_type == "Gather" and n.input[0] == TABLE]
    users = [n for n in nodes if TABLE in n.input or (cast and cast[0].output[0] in n.input)]
    if len(scale) != 1 or len(lookup) != 1 or len(users) != 2:
        return False
    ids, out = lookup[0].input[1], lookup[0].output[0]
    rows = [
        helper.make_node("Gather", [f"{TABLE}_q", ids], [f"{TABLE}_q_rows"], axis=0),
        helper.make_node("Cast", [f"{TABLE}_q_rows"], [f"{TABLE}_f_rows"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Gather", [f"{TABLE}_scale", ids], [f"{TABLE}_scale_rows"], axis=0),
        helper.make_node("Mul", [f"{TABLE}_f_rows", f"{TABLE}_scale_rows"], [out]),
    ]
    first = nodes.index(cast[0])
    kept = [n for n in nodes if n not in (cast[0], scale[0], lookup[0])]
    del model.graph.node[:]
    model.graph.node.extend(kept[:first] + rows + kept[first:])
    return True
