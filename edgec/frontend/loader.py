"""Stage 1: read an ONNX file into a checked, shape-inferred ModelProto."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from edgec.errors import EdgecError
from edgec.limits import DEFAULT as DEFAULT_MEMORY_LIMIT, check_bytes
from edgec.frontend import (fold, functions, loop_recurrent, onnx_ml, opsets, qdq, qonnx, qoperator,
                            scan_recurrent, tflite_float, unroll, unroll_rnn)
from edgec.frontend.input_shapes import has_dynamic_axes, pin_inputs
from edgec.frontend.input_shapes import graph_inputs  # noqa: F401  (edgec.api and others read loader.graph_inputs)
from edgec.frontend.fold import static_shape  # noqa: F401  (edgec.api and tests read loader.static_shape)
from edgec.ops import recurrent
from edgec.ops.registry import SUPPORTED_OPS, TAKES_WHOLE


def load_model(path: str | Path, memory_limit: int = DEFAULT_MEMORY_LIMIT,
               calib: str | Path | None = None) -> onnx.ModelProto:
    """Load `path`, pin a dynamic batch dimension to 1 and any other dynamic input dimension to the calibration
    data file `calib`'s size (edgec/frontend/input_shapes.py) and infer every shape; no tensor of it may need more
    than memory_limit bytes (Settings.memory_limit)."""
    path = Path(path)
    if not path.exists():
        raise EdgecError(f"{path}: no such file (give the path of a float .onnx model)")
    if path.is_dir():
        raise EdgecError(f"{path}: is a folder, not an .onnx model file")
    if not path.is_file():          # reading a FIFO or a device would block or never end
        raise EdgecError(f"{path}: is not a regular file (a FIFO or a device); give an .onnx model file")
    if path.stat().st_size == 0:
        raise EdgecError(f"{path}: the file is empty (expected an ONNX model)")
    if tflite_float.float_tflite(path):      # its float ONNX translation, calibrated as any float ONNX model
        return prepare(tflite_float.to_onnx(path), path, memory_limit, calib)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises many types for garbage input
        raise EdgecError(f"{path}: not a readable ONNX model ({_short(exc)}); export it again or check the file") from None
    if not model.graph.node:
        raise EdgecError(f"{path}: the ONNX graph has no nodes (is this really a model file?)")
    _check_names(model, path)
    external = [t.name for t in _all_tensors(model) if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:        # weights (initializers or Constant nodes) in files next to the model, never the current folder
        try:
            onnx.load_external_data_for_model(model, str(path.resolve().parent))
        except Exception as exc:
            raise EdgecError(f"{path}: initializer '{external[0]}' keeps its data in an external file that cannot "
                             f"be read ({_short(exc)}); keep the data files next to the model, or save it as one "
                             "file (onnx.save(..., save_as_external_data=False))") from None
    for init in model.graph.initializer:
        try:
            numpy_helper.to_array(init)
        except Exception as exc:  # dims that do not match the data, an unknown data type, ...
            raise EdgecError(f"{path}: initializer '{init.name}' is damaged ({_short(exc)}); "
                             "export the model again") from None
    return prepare(model, path, memory_limit, calib)


def _all_tensors(model: onnx.ModelProto):
    """Every tensor stored in the model: initializers and the tensor attributes of its nodes (Constant)."""
    yield from model.graph.initializer
    for node in model.graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors


def check_sizes(model: onnx.ModelProto, where, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> None:
    """Refuse, before anything is allocated, a model one of whose tensors (static shapes) would need more
    float32 memory than edgec's limit: calibration would run it in float."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    for vi in (*g.input, *g.value_info, *g.output):
        shape = fold.static_shape(vi)
        if shape:
            n = producer.get(vi.name)
            node = f"node '{n.name or n.op_type}' ({n.op_type}) output" if n is not None else "input"
            check_bytes(4 * int(np.prod(shape, dtype=np.int64)), f"{where}: {node} '{vi.name}' {list(shape)}",
                        "no microcontroller holds a tensor this large: make the model smaller", memory_limit)


def copy_model(src: str | Path, dst: str | Path, calib: str | Path | None = None) -> None:
    """Copy a model file; one with external data is written as a single file, a float .tflite as its float ONNX
    translation (what the bench runs as the float model), one with a dynamic input axis with the sizes `calib`
    gave it (what was built)."""
    if tflite_float.float_tflite(src):
        onnx.save(tflite_float.to_onnx(src), str(dst))
        return
    m = onnx.load(str(src), load_external_data=False)
    if calib is not None and has_dynamic_axes(m):
        m = onnx.load(str(src))
        pin_inputs(m, src, calib)
        onnx.save(m, str(dst))
    elif any(i.data_location == onnx.TensorProto.EXTERNAL for i in m.graph.initializer):
        onnx.save(onnx.load(str(src)), str(dst))
    else:
        shutil.copyfile(src, dst)


def prepare(model: onnx.ModelProto, where: str | Path = "model",
            memory_limit: int = DEFAULT_MEMORY_LIMIT, calib: str | Path | None = None) -> onnx.ModelProto:
    """Check a model, pin its batch dimension to 1 and its other dynamic input dimensions from `calib` (a data file)
    and infer every shape."""
    pin_inputs(model, where, calib)
    model = qonnx.to_qdq(model, where)   # QONNX Quant nodes (Brevitas export_qonnx, FINN): QDQ nodes
    model = qoperator.to_qdq(model, where)   # QLinearConv, QGemm... (ORT's QOperator format): QDQ nodes
    model = onnx_ml.lower(model, where)  # skl2onnx's classifier heads (ai.onnx.ml): ONNX operators
    _refuse_unknown_operators(model, where)
    model = opsets.upgrade(model, where)     # below opset 11: converted; above what onnx knows: refused
    model = qdq.strip(model)        # a QDQ model: the float model it describes + its quantization
    recurrent.to_time_major(model)  # batch-first LSTM/GRU (layout 1): onnxruntime runs only layout 0
    try:
        onnx.checker.check_model(model)
        model = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        if functions.expand_functions(model, SUPPORTED_OPS, TAKES_WHOLE):   # e.g. LayerNormalization: its ONNX body
            model = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        model = fold.fold_constants(model, memory_limit)   # shapes computed in the graph (PyTorch's exporter)
        cells = loop_recurrent.recognise_loops(model)   # tf2onnx's Keras GRU/LSTM Loop: one GRU/LSTM node
        if cells is not None:
            model = shape_inference.infer_shapes(cells, strict_mode=True, data_prop=True)
        cells = scan_recurrent.recognise_scans(model)   # tf2onnx's TF1 GRU/LSTM cells' Scan: GRU/LSTM nodes
        if cells is not None:
            model = shape_inference.infer_shapes(cells, strict_mode=True, data_prop=True)
        for unroll_all in (unroll.unroll_loops, unroll.unroll_scans):   # a Loop of a known trip count (tf2onnx's
            unrolled = unroll_all(model)        # Keras LSTM/GRU), a Scan of a known length (its TF1 dynamic_rnn)
            if unrolled is not None:
                model = fold.fold_constants(shape_inference.infer_shapes(unrolled, strict_mode=True, data_prop=True),
                                            memory_limit)
        stepped = unroll_rnn.unroll_state_inputs(model)     # a GRU/LSTM whose initial state is a model input
        if stepped is not None:
            model = shape_inference.infer_shapes(stepped, strict_mode=True, data_prop=True)
    except EdgecError:
        raise
    except Exception as exc:
        raise EdgecError(f"{where}: invalid ONNX model ({_short(exc)})") from None
    check_sizes(model, where, memory_limit)
    return model


def _refuse_unknown_operators(model: onnx.ModelProto, where) -> None:
    """Nodes of ONNX's own domain whose operator ONNX does not define (QONNX's Quant, which FINN writes there, is
    taken first: edgec/frontend/qonnx.py): named all at once, where ONNX's checker would name the first and call
    the model invalid."""
    local = {(f.domain, f.name) for f in model.functions}
    unknown: dict[str, list[str]] = {}
    for i, node in enumerate(model.graph.node):
        if node.domain in ("", "ai.onnx") and (node.domain, node.op_type) not in local \
                and not onnx.defs.has(node.op_type, ""):
            unknown.setdefault(node.op_type, []).append(node.name or f"node #{i}")
    if unknown:
        named = "; ".join(f"{op} ({len(ns)} node{'s' if len(ns) > 1 else ''}: {', '.join(ns[:3])}"
                          f"{f' and {len(ns) - 3} more' if len(ns) > 3 else ''})" for op, ns in unknown.items())
        raise EdgecError(f"{where}: operators ONNX does not define, in its default domain: {named}; edgec builds "
                         "ONNX operators")


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def _check_names(model: onnx.ModelProto, path) -> None:
    """Refuse names protobuf could not decode as UTF-8 (it hands them over as bytes)."""
    g = model.graph
    named = [("node", n.name) for n in g.node] + [("operator", n.op_type) for n in g.node] + \
        [("value", v) for n in g.node for v in (*n.input, *n.output)] + \
        [("value", v.name) for v in (*g.input, *g.output, *g.value_info, *g.initializer)]
    for what, name in named:
        if not isinstance(name, str):
            raise EdgecError(f"{path}: a {what} name is not valid UTF-8 ({bytes(name)[:40]!r}); "
                             "the file is damaged, export the model again")
