"""Each corpus model's oracle, computed once and stored beside it (tests/corpus/<name>/oracle.npz):

- a .tflite: a few input samples (integers over the input type's whole range, and the same as float through the
  file's input quantization) and TFLite Micro's interpreter's outputs (`tflite_micro`, reference kernels), the
  samples consecutive Invoke calls: a stateful model's variable tensors (an LSTM's, an SVDF's state) and the
  signal library's persistent buffers carried from one to the next as TFLite Micro carries them until `reset()`
  (what edgec's device and `edgec bench` do by default);
- a .onnx: a few input samples drawn like its calibration set, ONNX Runtime's float outputs, and the outputs of
  ONNX Runtime's own static INT8 (onnxruntime.quantization.quantize_static, QDQ, per-channel int8 weights,
  calibrated on the model's calib.npz) of the same model: the tolerance edgec's INT8 is measured against.

Keys: x (a .onnx's float inputs, (N, *input shape)), x_q, x_scale, x_zero_point (a .tflite's integer inputs and
the file's input quantization), y<k> (TFLM's raw outputs),
float<k> and ort_int8_<k> (ONNX Runtime's outputs, per output k in the file's order); `oracle` says which
interpreter made them or why none could.

    python scripts/corpus/oracles.py [--only NAME ...] [--force]
    python scripts/corpus/oracles.py --only NAME --tflm-copy COPY.tflite     # COPY: scripts/corpus/fold_shapes.py
    /work/venv-tf/bin/python scripts/corpus/oracles.py --only NAME --tensorflow-lite-copy COPY.tflite
                                                         # COPY: fold_shapes.py --tile-v1 (TF Lite lacks TILE v3)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402

SAMPLES = 4
INPUT_BYTES = 256 * 1024     # stored inputs per model at most (fewer samples for large inputs), but one sample


def samples(shape, itemsize: int) -> int:
    return max(1, min(SAMPLES, INPUT_BYTES // (int(np.prod(shape[1:])) * itemsize)))
_INT_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def _rng(name: str, salt: int = 0):
    return np.random.default_rng(sum(map(ord, name)) + salt)


def n_outputs(path: Path) -> int:
    import tflite
    return tflite.Model.GetRootAsModel(path.read_bytes(), 0).Subgraphs(0).OutputsLength()


def _draw(rng, dtype, shape, ids=None) -> np.ndarray:
    """Input samples: integers over the type's range, int32 token ids in the manifest's input_range [lo, hi)."""
    n = (samples(shape, dtype.itemsize), *shape[1:])
    if dtype.name == "int32" and ids is not None:
        return rng.integers(ids[0], ids[1], n).astype(dtype)
    lo, hi = _INT_RANGE[dtype.name]
    return rng.integers(lo, hi + 1, n).astype(dtype)


def n_inputs(path: Path) -> int:
    import tflite
    return tflite.Model.GetRootAsModel(path.read_bytes(), 0).Subgraphs(0).InputsLength()


def tflite_oracle(name: str, path: Path, ids=None) -> dict:
    """TFLite Micro's outputs on drawn integer inputs; several inputs: each drawn (its own generator after the
    first's) and set by its index, stored as x_q<k>, x_scale<k>, x_zero_point<k> beside `inputs`."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(path.read_bytes(), arena_size=1 << 24)
    drawn, names = [], []
    for k in range(n_inputs(path)):
        details = interp.get_input_details(k)
        dtype = np.dtype(details["dtype"])
        shape = tuple(details["shape"])
        scale, zp = details["quantization_parameters"]["scales"], details["quantization_parameters"]["zero_points"]
        rng = _rng(name, 1 + 10 * k)
        if dtype.name in _INT_RANGE or ids is not None:
            x_q = _draw(rng, dtype, shape, ids)
            s, z = (float(scale[0]), int(zp[0])) if len(scale) else (1.0, 0)
        else:
            x_q, s, z = rng.standard_normal((samples(shape, dtype.itemsize), *shape[1:])).astype(dtype), 1.0, 0
        drawn.append((x_q, s, z, shape))
        names.append(str(details.get("name", k)))
    n = min(len(d[0]) for d in drawn)
    outs = []
    for i in range(n):              # consecutive Invoke calls: a stateful model's state carried (no reset())
        for k, (x_q, _, _, shape) in enumerate(drawn):
            interp.set_input(x_q[i].reshape(shape), k)
        interp.invoke()
        outs.append([np.array(interp.get_output(k)) for k in range(n_outputs(path))])
    arrays = {f"y{k}": np.stack([o[k] for o in outs]) for k in range(len(outs[0]))}
    if len(drawn) == 1:
        x_q, s, z, _ = drawn[0]
        return dict(x_q=x_q, x_scale=s, x_zero_point=z, oracle="tflite-micro", **arrays)
    keys = {"inputs": np.asarray(names)}
    for k, (x_q, s, z, _) in enumerate(drawn):
        keys.update({f"x_q{k}": x_q[:n], f"x_scale{k}": s, f"x_zero_point{k}": z})
    return dict(keys, oracle="tflite-micro", **arrays)


def tensorflow_lite_oracle(name: str, path: Path, ids=None) -> dict:
    """TF Lite's interpreter, where TFLite Micro cannot run the file (run this script with TensorFlow's
    environment: /work/venv-tf/bin/python scripts/corpus/oracles.py --tensorflow-lite --only NAME)."""
    import tensorflow as tf

    interp = tf.lite.Interpreter(model_path=str(path), experimental_op_resolver_type=(
        tf.lite.experimental.OpResolverType.BUILTIN_REF))      # reference kernels, as TFLite Micro's
    interp.allocate_tensors()
    d = interp.get_input_details()[0]
    dtype, shape = np.dtype(d["dtype"]), tuple(d["shape"])
    s, z = d["quantization"]
    x_q = _draw(_rng(name, 1), dtype, shape, ids)
    s, z = (s, z) if s else (1.0, 0)       # (int32 token ids: not quantized)
    outs = []
    for xi in x_q:
        interp.set_tensor(d["index"], xi.reshape(shape))
        # consecutive invokes: a stateful model's variables carried, as TFLite Micro carries them
        interp.invoke()
        outs.append([np.array(interp.get_tensor(o["index"])) for o in interp.get_output_details()])
    arrays = {f"y{k}": np.stack([o[k] for o in outs]) for k in range(len(outs[0]))}
    return dict(x_q=x_q, x_scale=float(s), x_zero_point=int(z), oracle="tensorflow-lite (reference kernels)", **arrays)


def float_inputs(oracle) -> np.ndarray:
    """The oracle's inputs as float: a .tflite's integer inputs through the file's input quantization; a model with
    several inputs (`inputs` stored): packed (N, total), each input flattened, in the model's order (edgec.ports)."""
    if "inputs" in oracle:
        return pack([float_inputs(_one(oracle, k)) for k in range(len(oracle["inputs"]))])
    if "x" in oracle:
        return oracle["x"]
    return ((oracle["x_q"].astype(np.float64) - int(oracle["x_zero_point"])) * float(oracle["x_scale"])).astype(np.float32)


def _one(oracle, k: int) -> dict:
    """Input k's keys of a several-input oracle (x<k>, or x_q<k>, x_scale<k>, x_zero_point<k>) without their index."""
    return {key[:-len(str(k))]: oracle[key] for key in (f"x{k}", f"x_q{k}", f"x_scale{k}", f"x_zero_point{k}")
            if key in oracle}


def pack(parts: list) -> np.ndarray:
    """Samples of each input (N, ...) -> (N, total): each flattened, in the model's order (edgec.ports' packing)."""
    n = len(parts[0])
    return np.concatenate([np.asarray(p).reshape(n, -1) for p in parts], axis=1)


def several(arrays: list, names: list[str], prefix: str = "x") -> dict:
    """The oracle keys of a model with several inputs: `inputs` (their names, in the model's order) and
    <prefix><k> for each."""
    return {"inputs": np.asarray(names), **{f"{prefix}{k}": a for k, a in enumerate(arrays)}}


def as_onnx(path: Path, folder: Path) -> Path:
    """The .onnx ONNX Runtime runs for a model: itself, or a float .tflite's float ONNX translation (edgec's,
    edgec/frontend/tflite_float.py: the float model edgec quantizes), written into folder."""
    if path.suffix != ".tflite":
        return path
    import onnx
    from edgec.frontend import tflite_float
    out = folder / "translated.onnx"
    onnx.save(tflite_float.to_onnx(path), str(out))
    return out


def onnx_inputs(path: Path, name: str):
    """(name, shape) of the model's first input."""
    return onnx_input_list(path)[0]


def onnx_input_list(path: Path) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of each input of the model (initializers aside), in its order; a dynamic dimension as 1."""
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    init = {i.name for i in model.graph.initializer}
    return [(i.name, tuple(d.dim_value or 1 for d in i.type.tensor_type.shape.dim))
            for i in model.graph.input if i.name not in init]


def calibration(path: Path, names: list[str]) -> list[np.ndarray]:
    """A model's calib.npz, per input: `x` (one input) or `x_<name>` for each of several (edgec's data files)."""
    data = np.load(path)
    return [data["x" if len(names) == 1 else f"x_{n}"].astype(np.float32) for n in names]


def _stacked(prefix: str, runs: list) -> dict:
    """{prefix<k>: output k of every sample}, for the float outputs (a NonMaxSuppression's selection, int64 rows as
    many as it selects, is left out: the bench judges a detector's boxes)."""
    return {f"{prefix}{k}": np.stack([r[k] for r in runs]) for k in range(len(runs[0]))
            if np.asarray(runs[0][k]).dtype.kind == "f"}


def input_grid(path: Path, input_name: str):
    """(scale, zero point, numpy dtype) of an integer graph input that a DequantizeLinear reads (through data
    movement: tf2onnx's converted .tflite, a uint8 image model), or None for a float input."""
    import onnx
    from onnx import TensorProto, numpy_helper
    model = onnx.load(str(path), load_external_data=False)
    dtype = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16}.get(
        next(i for i in model.graph.input if i.name == input_name).type.tensor_type.elem_type)
    if dtype is None:
        return None
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    value = input_name
    while (node := next(n for n in model.graph.node if value in n.input)).op_type != "DequantizeLinear":
        value = node.output[0]
    return float(init[node.input[1]]), int(init[node.input[2]]), dtype


def ort_input(path: Path, input_name: str):
    """What ONNX Runtime is fed for the float sample x: x itself, or for an integer input (input_grid) x on that
    grid, as the device's input port quantizes it (round, zero point, saturate)."""
    grid = input_grid(path, input_name)
    if grid is None:
        return lambda x: x
    scale, zero, dtype = grid
    info = np.iinfo(dtype)
    return lambda x: np.clip(np.round(x / scale) + zero, info.min, info.max).astype(dtype)


def ort_outputs(path: Path):
    """run -> run with each integer graph output a QuantizeLinear writes (tf2onnx's converted .tflite) as the real
    values it stands for ((q - zero point) x scale), as the device's output port is dequantized; others as they are."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(path), load_external_data=False)
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    writer = {o: n for n in model.graph.node for o in n.output}
    grids = []
    for out in model.graph.output:
        node = writer.get(out.name)
        quantized = node is not None and node.op_type == "QuantizeLinear" and len(node.input) > 2 \
            and all(i in init and init[i].size == 1 for i in node.input[1:3])
        grids.append((float(init[node.input[1]]), int(init[node.input[2]])) if quantized else None)
    return lambda run: [y if g is None else ((np.asarray(y, np.float64) - g[1]) * g[0]).astype(np.float32)
                        for y, g in zip(run, grids)]


def onnx_runs(path: Path, input_name, calib, x):
    """ONNX Runtime's float outputs on x, and those of its static INT8 of the model (quantize_static, QDQ,
    per-channel int8 weights, int8 activations, default settings otherwise, calibrated on calib), one sample a
    run: (floats, ints or None, what made them). Several inputs: input_name a list of names, calib and x lists of
    their samples (N, ...), in the same order."""
    import onnx
    import onnxruntime as ort
    from onnxruntime import quantization as q

    import qonnx_exec
    names, calib, x = ([input_name], [calib], [x]) if isinstance(input_name, str) else (input_name, calib, x)
    if qonnx_exec.is_qonnx(path):     # Quant nodes (Brevitas export_qonnx): ONNX Runtime has no kernel for them
        sess = qonnx_exec.session(path)
        return [sess.run(None, {n: p[i][None] for n, p in zip(names, x)}) for i in range(len(x[0]))], None, \
            "QONNX semantics in NumPy (scripts/corpus/qonnx_exec.py: onnx.reference + QONNX's Quant); no ORT INT8"
    feeds = {n: ort_input(path, n) for n in names}

    def sample(parts, i, grid=True):
        return {n: (feeds[n] if grid else (lambda v: v))(p[i][None]) for n, p in zip(names, parts)}

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    real = ort_outputs(path)
    floats = [real(sess.run(None, sample(x, i))) for i in range(len(x[0]))]

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.it = iter(range(len(calib[0])))

        def get_next(self):
            i = next(self.it, None)
            return None if i is None else sample(calib, i, grid=False)

    note, ints = "onnxruntime float; quantize_static failed", None
    if any(n.op_type == "QuantizeLinear" for n in onnx.load(str(path)).graph.node):
        # a QDQ file: ORT runs it as it is (its quantize_static of one fails, or, on an A16W8 ViT, never returns)
        return floats, None, "onnxruntime running the QDQ file; no quantize_static of it"
    with tempfile.TemporaryDirectory() as tmp:
        qpath = Path(tmp) / "int8.onnx"
        pre = Path(tmp) / "pre.onnx"
        prepared = "pre-processed"
        try:                     # ORT's recommended pre-processing (symbolic shape inference, fusions; needs sympy)
            q.quant_pre_process(str(path), str(pre))
        except Exception as e:   # noqa: BLE001  without it where it fails, and the oracle's note says so
            pre, prepared = path, f"quant_pre_process failed ({type(e).__name__}), not pre-processed"
        # per-tensor last: an old opset's DequantizeLinear takes no axis (onnx2c's opset-8 MNIST)
        for source, per_channel in [(pre, True), (path, True), (path, False)]:
            try:
                q.quantize_static(str(source), str(qpath), Reader(), quant_format=q.QuantFormat.QDQ,
                                  per_channel=per_channel, activation_type=q.QuantType.QInt8,
                                  weight_type=q.QuantType.QInt8)
                qs = ort.InferenceSession(str(qpath), providers=["CPUExecutionProvider"])
                ints = [qs.run(None, sample(x, i, grid=False)) for i in range(len(x[0]))]
            except Exception as e:   # noqa: BLE001  recorded: the table says there is no tolerance for this model
                note = (f"onnxruntime float; quantize_static failed: {type(e).__name__}: "
                        f"{str(e).splitlines()[0][:160] if str(e) else ''}")
                continue
            note = ("onnxruntime float + onnxruntime quantize_static int8 (QDQ, "
                    f"{'per-channel' if per_channel else 'per-tensor'} int8 weights, "
                    f"{prepared if source == pre else 'not pre-processed'})")
            break
    return floats, ints, note


def shipped_inputs(name: str, n: int, shape, salt: int, value_range=None) -> np.ndarray:
    """Inputs for a shipped .onnx without data: uniform in [0, 1], or in the manifest's input_range [lo, hi] (a
    model fed raw 8-bit pixels: its input QuantizeLinear has scale 1), images as whole pixel steps."""
    lo, hi = value_range or (0, 1)
    x = _rng(name, salt).uniform(lo, hi, (n, *shape[1:])).astype(np.float32)
    if manifest.is_image(x):
        x = (np.clip(np.round(x * 255 / hi), 0, 255) * hi / 255).astype(np.float32)
    return x


def onnx_oracle(name: str, path: Path, value_range=None) -> dict:
    """ONNX Runtime's float and static INT8 outputs (a float .tflite: on its float ONNX translation)."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = onnx_input_list(as_onnx(path, Path(tmp)))
    if len(inputs) > 1:
        return _several_onnx_oracle(name, path, inputs)
    input_name, shape = inputs[0]
    n = samples(shape, 4)
    calib_file = path.parent / "calib.npz"
    if calib_file.is_file():
        calib = np.load(calib_file)["x"].astype(np.float32)
        rng = _rng(name, 2)      # test samples: other draws of the calibration set's distribution
        x = (calib[:n] + 0.1 * calib.std() * rng.standard_normal(calib[:n].shape)).astype(np.float32)
        if manifest.is_image(calib):       # pixels / 255, as the calibration images
            x = (np.clip(np.round(x * 255), 0, 255) / 255).astype(np.float32)
    else:                        # a shipped model without data: images in [0, 1]
        calib = shipped_inputs(name, 16, shape, 3, value_range)      # what evaluation.py draws again
        calib = calib[:8] if calib.nbytes > INPUT_BYTES else calib  # large inputs: 8 (the same first draws)
        x = shipped_inputs(name, n, shape, 2, value_range)
        np.savez_compressed(calib_file, x=calib)
    with tempfile.TemporaryDirectory() as tmp:
        floats, ints, note = onnx_runs(as_onnx(path, Path(tmp)), input_name, calib, x)
    arrays = _stacked("float", floats)
    if ints is not None:
        arrays.update(_stacked("ort_int8_", ints))
    return dict(x=x, oracle=note, **arrays)


def _several_onnx_oracle(name: str, path: Path, inputs: list) -> dict:
    """onnx_oracle for a model with several inputs: its calib.npz (`x_<name>` per input, as edgec reads it) is
    required; the test samples are the calibration samples with 10 % of each input's spread of noise added."""
    names = [n for n, _ in inputs]
    calib = calibration(path.parent / "calib.npz", names)
    n = min(samples(shape, 4) for _, shape in inputs)
    rng = _rng(name, 2)
    x = [(c[:n] + 0.1 * c.std() * rng.standard_normal(c[:n].shape)).astype(np.float32) for c in calib]
    with tempfile.TemporaryDirectory() as tmp:
        floats, ints, note = onnx_runs(as_onnx(path, Path(tmp)), names, calib, x)
    arrays = _stacked("float", floats)
    if ints is not None:
        arrays.update(_stacked("ort_int8_", ints))
    return dict(several(x, names), oracle=note, **arrays)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--tensorflow-lite", action="store_true",
                    help="the .tflite files TFLite Micro could not run, through TF Lite's interpreter (its reference "
                    "FULLY_CONNECTED with per-channel weights rounds some ties unlike TFLite Micro: docs/corpus.md, "
                    "the eighth round)")
    ap.add_argument("--tflm-copy", type=Path, help="with one --only NAME: TFLite Micro on this copy of its file, "
                    "its shape computations folded (scripts/corpus/fold_shapes.py), where TFLite Micro lacks one")
    ap.add_argument("--tensorflow-lite-copy", type=Path, help="with one --only NAME: TF Lite's reference kernels on "
                    "this copy of its file, its TILE marked version 1 (scripts/corpus/fold_shapes.py --tile-v1)")
    args = ap.parse_args(argv)
    for name, entry in manifest.load().items():
        if args.only and name not in args.only:
            continue
        path = manifest.CORPUS / entry["file"]
        out = path.parent / "oracle.npz"
        if args.tensorflow_lite:
            if entry["format"] != "tflite" or not out.is_file() or not str(np.load(out)["oracle"]).startswith("none"):
                continue
        elif (out.is_file() and not args.force and not args.tflm_copy and not args.tensorflow_lite_copy) \
                or not path.is_file():
            continue
        try:
            if args.tensorflow_lite_copy:
                arrays = {**tensorflow_lite_oracle(name, args.tensorflow_lite_copy, entry.get("input_range")),
                          "oracle": "tensorflow-lite (reference kernels, on a copy whose TILE is marked version 1: "
                          "scripts/corpus/fold_shapes.py --tile-v1)"}
            elif args.tflm_copy:
                arrays = {**tflite_oracle(name, args.tflm_copy), "oracle": "tflite-micro (on a copy, its shape "
                          "computations folded: scripts/corpus/fold_shapes.py)"}
            elif args.tensorflow_lite:
                arrays = tensorflow_lite_oracle(name, path, entry.get("input_range"))
            else:
                arrays = (tflite_oracle(name, path, entry.get("input_range")) if entry["format"] == "tflite"
                          else onnx_oracle(name, path, entry.get("input_range")))
        except Exception as e:   # noqa: BLE001  recorded beside the model: the table shows it
            arrays = {"oracle": f"none: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        arrays["sha256"] = entry["sha256"]
        np.savez_compressed(out, **{k: np.asarray(v) for k, v in arrays.items()})
        print(f"{name}: {arrays['oracle']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
