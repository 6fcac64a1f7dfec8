"""A copy of a .tflite file TFLite Micro can run where it lacks an operator that only computes shapes: every int32
tensor an operator computes (a Keras Reshape with batch None: SHAPE, GATHER, REDUCE_PROD, CONCATENATION, PACK)
becomes a constant holding the value TF Lite's interpreter computed for it, the operators computing them are
dropped, and every tensor gets the shape TF Lite ran it with (the converter's placeholders for a batch of None,
[1, 1] for a [49, 10], replaced). The arithmetic of every other operator is untouched, so TFLite Micro's outputs
on the copy are its outputs on the file; scripts/corpus/oracles.py --tflm-copy runs TFLite Micro on it. edgec
folds the same computations at import (edgec/frontend/tflite_fold.py).

    /work/venv-tf/bin/python scripts/corpus/fold_shapes.py IN.tflite OUT.tflite
    /work/venv-tf/bin/python scripts/corpus/fold_shapes.py --tile-v1 IN.tflite OUT.tflite

`--tile-v1` writes a copy instead whose TILE operator codes say version 1: Keras 3's UpSampling1D/2D (nearest) is a
TILE of int8 activations marked version 3, which TF Lite 2.21's reference resolver does not register (TFLite Micro
has no TILE at all); its tile kernel is the same for every version, so TF Lite's reference kernels run the copy
(`scripts/corpus/oracles.py --tensorflow-lite-copy`).
"""
from __future__ import annotations

import sys

import flatbuffers
import numpy as np


def fold(src: str, dst: str) -> list[str]:
    import tensorflow as tf
    from tensorflow.lite.python import schema_py_generated as schema

    interp = tf.lite.Interpreter(model_path=src, experimental_preserve_all_tensors=True,
                                 experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    d = interp.get_input_details()[0]
    interp.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    interp.invoke()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(open(src, "rb").read(), 0))
    sg = model.subgraphs[0]
    computed = {int(i) for op in sg.operators for i in op.outputs}
    folded, kept, names = set(), [], []
    codes = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    for op in sg.operators:
        outs = [int(i) for i in op.outputs]
        if all(sg.tensors[i].type == schema.TensorType.INT32 for i in outs):
            folded.update(outs)
            names.append(codes[max(model.operatorCodes[op.opcodeIndex].builtinCode,
                                   model.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode)])
        else:
            kept.append(op)
    sg.operators = kept
    for i, t in enumerate(sg.tensors):
        if i not in computed and t.buffer:
            continue                                  # a constant: as it is
        value = interp.get_tensor(i)
        t.shape = np.asarray(value.shape, np.int32)
        t.shapeSignature = None
        if i in folded:                               # a shape computation: its value, a constant now
            buf = schema.BufferT()
            buf.data = np.frombuffer(np.ascontiguousarray(value).tobytes(), np.uint8)
            model.buffers.append(buf)
            t.buffer = len(model.buffers) - 1
    b = flatbuffers.Builder(1 << 20)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    with open(dst, "wb") as f:
        f.write(b.Output())
    return sorted(set(names))


def tile_v1(src: str, dst: str) -> int:
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(open(src, "rb").read(), 0))
    n = 0
    for code in model.operatorCodes:
        if schema.BuiltinOperator.TILE in (code.builtinCode, code.deprecatedBuiltinCode):
            code.version, n = 1, n + 1
    b = flatbuffers.Builder(1 << 20)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    with open(dst, "wb") as f:
        f.write(b.Output())
    return n


if __name__ == "__main__":
    if sys.argv[1] == "--tile-v1":
        print("TILE operator codes marked version 1:", tile_v1(sys.argv[2], sys.argv[3]))
    else:
        print("folded:", ", ".join(fold(sys.argv[1], sys.argv[2])))
