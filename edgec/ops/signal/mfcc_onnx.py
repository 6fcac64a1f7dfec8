"""Read a float MFCC / log-mel front end from an ONNX graph as training pipelines export it, into the `spec` that
mfcc.constants turns into the fixed-point kernel's parameters; and that spec's float features in NumPy.

Recognised (scripts/export_mfcc_frontends.py makes both): tf.signal through tf2onnx (framing by Slice / Reshape /
Gather, the window a Mul, the DFT a MatMul by tf2onnx's [2, bins, fft_length] cos/sin constant, |X| from Pow,
Add, Sqrt, the mel matrix a MatMul, log(x + eps), the DCT a MatMul) and torchaudio through torch.onnx (ONNX STFT
with its window, ReduceL2 then Pow 2: the power spectrum, the mel MatMul, Clip(min) before Log, 10 log10 as Div
and Mul, top_db as ReduceMax / Sub / Max, the DCT MatMul). What the nodes are is read from their kinds and
constants; the framing of the tf2onnx form is found by running that part of the graph (onnx's reference
evaluator) on the sample indices. A graph of another shape is refused with one line saying what is missing.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from edgec.errors import EdgecError
from edgec.ops.signal import mfcc


def _consts(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    out = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute:
            out[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    return out


def _ancestors(nodes, value: str) -> list[onnx.NodeProto]:
    """The nodes `value` depends on, in graph order."""
    producer = {o: n for n in nodes for o in n.output}
    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        n = producer.get(v)
        if n is not None and id(n) not in seen:
            seen.add(id(n))
            todo.extend(n.input)
    return [n for n in nodes if id(n) in seen]


def _const_of(node, consts, ndim: int | None = None):
    """(input index, value) of node's one constant operand (of rank ndim), or (None, None)."""
    for k, i in enumerate(node.input):
        if i in consts and (ndim is None or consts[i].ndim == ndim):
            return k, consts[i]
    return None, None


def _scalar(node, consts):
    _, c = _const_of(node, consts)
    return None if c is None or c.size != 1 else float(np.asarray(c).reshape(-1)[0])


def _framing(model: onnx.ModelProto, value: str, samples: int) -> tuple[int, int]:
    """(hop, frame length) of the frames `value` holds, found by running the graph up to it on the sample
    indices; an error unless every frame is `frame_length` consecutive samples `hop` apart."""
    from onnx.reference import ReferenceEvaluator
    g = model.graph
    sub = onnx.helper.make_model(
        onnx.helper.make_graph([n for n in _ancestors(g.node, value)], "framing", [g.input[0]],
                               [onnx.helper.make_tensor_value_info(value, onnx.TensorProto.FLOAT, None)],
                               list(g.initializer)), opset_imports=model.opset_import)
    ramp = np.arange(samples, dtype=np.float32).reshape(1, samples)
    frames = np.asarray(ReferenceEvaluator(sub).run(None, {g.input[0].name: ramp})[0]).reshape(-1, 0 + 1)
    length = int(np.asarray(ReferenceEvaluator(sub).run(None, {g.input[0].name: ramp})[0]).shape[-1])
    frames = frames.reshape(-1, length)
    hop = int(frames[1, 0] - frames[0, 0]) if len(frames) > 1 else length
    want = np.arange(len(frames))[:, None] * hop + np.arange(length)[None, :]
    if not np.array_equal(frames, want):
        raise EdgecError("the front end's framing is not frames of consecutive samples at a fixed hop; edgec's MFCC "
                         "front end takes tf.signal.stft's and ONNX STFT's framing")
    return hop, length


def recognise(model: onnx.ModelProto) -> dict:
    """The float front end `model` computes from its one audio input [1, samples] to its output, as a spec
    (mfcc.constants): an EdgecError naming what is missing when the graph is not such a front end."""
    g, consts = model.graph, _consts(model)
    inputs = [i for i in g.input if i.name not in consts]
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim] if len(inputs) == 1 else []
    if len(dims) != 2 or dims[0] != 1 or len(g.output) != 1:
        raise EdgecError("an MFCC front end takes one audio input [1, samples] and gives one output")
    samples = int(dims[1])
    logs = [n for n in g.node if n.op_type == "Log"]
    if len(logs) != 1:
        raise EdgecError(f"the front end has {len(logs)} Log nodes; edgec's MFCC front end takes one (the log-mel)")
    log = logs[0]
    pre = _ancestors(g.node, log.input[0])
    kinds = [n.op_type for n in pre]
    spec: dict = {"samples": samples}
    stft = next((n for n in pre if n.op_type == "STFT"), None)
    if stft is not None:
        if not (stft.input[1] in consts and len(stft.input) > 2 and stft.input[2] in consts):
            raise EdgecError("the front end's STFT needs a constant frame step and window")
        if any(a.name == "onesided" and a.i == 0 for a in stft.attribute):
            raise EdgecError("the front end's STFT is two-sided; edgec takes onesided=1 (a real signal)")
        spec["window"] = np.asarray(consts[stft.input[2]], np.float64).reshape(-1)
        spec["fft_length"] = spec["frame_length"] = spec["window"].size
        spec["hop"] = int(np.asarray(consts[stft.input[1]]).reshape(-1)[0])
    else:
        dft = next((n for n in pre if n.op_type == "MatMul" and _const_of(n, consts, 3)[1] is not None), None)
        win = next((n for n in pre if n.op_type == "Mul" and _const_of(n, consts, 1)[1] is not None), None)
        if dft is None or win is None:
            raise EdgecError("the front end has no STFT, nor a window Mul and a DFT MatMul before its Log")
        k, w = _const_of(win, consts, 1)
        spec["window"] = np.asarray(w, np.float64)
        spec["fft_length"] = int(_const_of(dft, consts, 3)[1].shape[-1])
        spec["hop"], spec["frame_length"] = _framing(model, win.input[1 - k], samples)
        if spec["frame_length"] != spec["window"].size:
            raise EdgecError("the front end's window and frames differ in length")
    n = spec["fft_length"]
    bins = n // 2 + 1
    mel = next((c for m in pre if m.op_type == "MatMul" for c in [_const_of(m, consts, 2)[1]]
                if c is not None and bins in c.shape), None)
    if mel is None:
        raise EdgecError(f"the front end has no mel MatMul by a constant with {bins} rows before its Log")
    spec["mel"] = mel if mel.shape[0] == bins else mel.T
    mag = [i for i, t in enumerate(kinds) if t in ("Sqrt", "ReduceL2", "Abs")]
    squared = [i for i, n in enumerate(pre) if n.op_type == "Pow" and _scalar(n, consts) == 2.0]
    spec["power"] = 1 if mag and not any(i > mag[-1] for i in squared) else 2
    clip = next((n for n in pre if n.op_type == "Clip" and len(n.input) > 1 and n.input[1] in consts), None)
    add = next((n for n in reversed(pre) if n.op_type in ("Add", "Max") and _scalar(n, consts) is not None), None)
    if clip is not None:
        spec["eps"], spec["eps_mode"] = float(np.asarray(consts[clip.input[1]]).reshape(-1)[0]), "clamped"
    elif add is not None:
        spec["eps"], spec["eps_mode"] = _scalar(add, consts), "added" if add.op_type == "Add" else "clamped"
    else:
        spec["eps"], spec["eps_mode"] = 0.0, "clamped"
    post = [m for m in g.node if m not in pre and m is not log]
    scale, top_db = 1.0, None
    for m in post:
        s = _scalar(m, consts)
        if m.op_type == "Mul" and s is not None:
            scale *= s
        elif m.op_type == "Div" and s is not None and m.input[1] in consts:
            scale /= s
        elif m.op_type == "Sub" and s is not None and "ReduceMax" in [p.op_type for p in post]:
            top_db = s
    dct = next((c for m in post if m.op_type == "MatMul" for c in [_const_of(m, consts, 2)[1]]
                if c is not None and mel.shape[1] in c.shape), None)
    if dct is None:
        raise EdgecError("the front end has no DCT MatMul by a constant after its Log")
    mels = spec["mel"].shape[1]
    spec["dct"] = dct if dct.shape[0] == mels else dct.T
    spec.update(log_scale=scale, top_db=top_db)
    out = [d.dim_value for d in g.output[0].type.tensor_type.shape.dim]
    coeffs = spec["dct"].shape[1]
    spec["transposed"] = len(out) >= 2 and out[-1] != coeffs
    _check(model, spec)
    return spec


def _check(model: onnx.ModelProto, spec: dict) -> None:
    """Refuse a graph whose output is not what the spec read from it computes (onnx's reference evaluator on a
    chirp in noise against float_features): e.g. a front end and a classifier exported as one graph."""
    from onnx.reference import ReferenceEvaluator
    n = spec["samples"]
    t = np.arange(n) / n
    x = (0.3 * np.sin(2 * np.pi * (50 + 3000 * t) * t * n / 16) + np.random.default_rng(0).normal(0, 0.05, n))
    try:
        got = np.asarray(ReferenceEvaluator(model).run(None, {model.graph.input[0].name: x[None].astype(np.float32)})[0])
        want = float_features(x.astype(np.float32), spec)
        close = got.size == want.size and np.abs(got.reshape(-1) - want.reshape(-1)).max() <= \
            1e-3 * max(np.abs(want).max(), 1.0)
    except Exception:       # (a graph the reference evaluator cannot run)
        close = False
    if not close:
        raise EdgecError(f"{model.graph.output[0].name}: the graph's output is not the MFCC front end edgec read "
                         "from it (an STFT, mel, Log and DCT); edgec builds a front end on its own: export the features "
                         "and the model that reads them as two ONNX files")


def float_features(audio, spec: dict) -> np.ndarray:
    """The spec's features of float audio [samples], in float64: [frames, coeffs] ([coeffs, frames] if
    transposed). The float graph's own arithmetic, the reference the integer front end is measured against."""
    x = np.asarray(audio, np.float64).reshape(-1)
    length, hop = spec["frame_length"], spec["hop"]
    frames = 1 + (x.size - length) // hop
    idx = np.arange(frames)[:, None] * hop + np.arange(length)[None, :]
    mag = np.abs(np.fft.rfft(x[idx] * spec["window"], n=spec["fft_length"], axis=1))
    e = (mag ** spec["power"]) @ spec["mel"]
    e = e + spec["eps"] if spec["eps_mode"] == "added" else np.maximum(e, spec["eps"])
    y = spec["log_scale"] * np.log(np.maximum(e, 1e-300))
    if spec["top_db"] is not None:
        y = np.maximum(y, y.max() - spec["top_db"])
    out = y @ spec["dct"]
    return out.T if spec["transposed"] else out


def is_front_end(model: onnx.ModelProto) -> bool:
    """Whether the graph looks like an audio front end this module reads: one Log, and an STFT or DFT before it."""
    kinds = [n.op_type for n in model.graph.node]
    if kinds.count("Log") != 1:
        return False
    rank3 = {i.name for i in model.graph.initializer if len(i.dims) == 3}      # (no weights decoded)
    return "STFT" in kinds or "DFT" in kinds or any(
        n.op_type == "MatMul" and any(i in rank3 for i in n.input) for n in model.graph.node)


def import_graph(cx, model: onnx.ModelProto) -> bool:
    """The whole graph as one signal_mfcc op when it is an MFCC / log-mel front end (int16 audio in, the float
    samples times 32768; int32 Q16 features out, in the output's ONNX layout); False, taking nothing, when it is
    not one."""
    if not is_front_end(model):
        return False
    spec = recognise(model)
    source, out = model.graph.input[0].name, model.graph.output[0].name
    x = cx.graph.retensor(cx.values[source][0], dtype="int16").name
    cx.graph.fixed_qparams[source] = (mfcc.INPUT_SCALE, 0)     # int16 PCM as it is: 32768 is float 1.0
    shape = cx.shape(out, model.graph.node[-1])
    y = cx.new_tensor(out, shape, out)
    cx.graph.retensor(y, dtype="int32")
    node = onnx.helper.make_node("STFT", [source], [out], name=f"{source} -> {out} (MFCC front end)")
    op = cx.emit("signal_mfcc", node, [x], y, spec=spec)
    op.params.update(mfcc.constants(spec)[0])     # (the shapes, for planning before quantization: edgec inspect)
    cx.values[out] = (y, tuple(range(len(shape))))
    return True
