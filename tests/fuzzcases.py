"""Front-end fuzzing: mutate real models and calibration files, build, and judge the outcome.

A case is (base, mutation, seed): `base` a real model with its calibration data (the examples and the
MLPerf Tiny models), `mutation` one of MUTATIONS, `seed` the NumPy seed that picks what to damage and how.
`make_case` writes the mutated model.onnx and calib.npz; `run_case` builds them with edgec (up to the C
model library, or all the way to the host board's firmware) and returns an Outcome:

    built     the build folder is complete (report, model library, quantized graph)
    refused   edgec raised its clean error: an EdgecError of one line, and left nothing behind
    finding   anything else: another exception (a traceback), a multi-line message, a half-written folder

`Worker` runs cases in a child process with a per-case timeout (a hang kills and restarts the child) and a
memory limit (an allocation bomb becomes a MemoryError finding instead of a dead machine). Used by
tests/test_fuzz.py (a short budget) and scripts/fuzz.py (a long run).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# as in conftest.py (next to the checkout or one level up), or $EDGEC_MLPERF_DIR
MLPERF = Path(os.environ["EDGEC_MLPERF_DIR"]) if os.environ.get("EDGEC_MLPERF_DIR") else next(
    (d / "shared" / "models" / "mlperf_tiny" for d in (REPO.parent, REPO.parent.parent)
     if (d / "shared" / "models" / "mlperf_tiny").is_dir()), REPO.parent / "shared" / "models" / "mlperf_tiny")

# base name -> (model file, calibration source: an .npz path, or (golden npz, NCHW?))
BASES: dict[str, tuple[Path, object]] = {
    "digits_cnn": (EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz"),
    "cancer_conv1d": (EXAMPLES / "cancer_conv1d" / "model.onnx", EXAMPLES / "cancer_conv1d" / "calib.npz"),
}
for _name, _key, _nchw in (("ad_fc_autoencoder_fp32", "ad", False), ("kws_dscnn_fp32", "kws", False),
                           ("kws_dscnn_fp32_nchw", "kws", True), ("ic_resnet8_fp32", "ic", False),
                           ("ic_resnet8_fp32_nchw", "ic", True), ("vww_mobilenetv1_025_fp32", "vww", False),
                           ("vww_mobilenetv1_025_fp32_nchw", "vww", True)):
    if (MLPERF / f"{_name}.onnx").is_file():
        BASES[_name] = (MLPERF / f"{_name}.onnx", (MLPERF / "data" / f"golden_{_key}.npz", _nchw))
SMALL_BASES = [b for b in BASES if b in ("digits_cnn", "cancer_conv1d", "ad_fc_autoencoder_fp32", "kws_dscnn_fp32",
                                          "kws_dscnn_fp32_nchw", "ic_resnet8_fp32_nchw")]

MODEL_MUTATIONS = ["flip_bytes", "truncate", "init_dtype", "input_dtype", "nonfinite_weights", "zero_weights",
                   "input_shape", "init_shape", "attr", "add_attr", "op_type", "rewire", "drop_node", "drop_init",
                   "opset", "outputs", "reshape_target", "huge_values", "names"]
CALIB_MUTATIONS = ["calib_flip", "calib_truncate", "calib_dtype", "calib_shape", "calib_nonfinite",
                   "calib_constant", "calib_huge", "calib_missing_x", "calib_y", "calib_one_sample"]
MUTATIONS = MODEL_MUTATIONS + CALIB_MUTATIONS
ABSURD_INTS = [0, -1, -2, 1, 2, 3, 255, 65536, 1 << 20, (1 << 31) - 1, 1 << 31, -(1 << 31), 1 << 40, (1 << 62)]
OPS = ["Conv", "Relu", "Add", "Mul", "Gemm", "MatMul", "MaxPool", "AveragePool", "Softmax", "Reshape", "Flatten",
       "Transpose", "Sigmoid", "Concat", "Identity", "BatchNormalization", "Clip", "LSTM", "Loop", "If",
       "NoSuchOp", "Resize", "ReduceMean", "Pad", "Slice", "Squeeze", "Unsqueeze", "Div", "Sub", "Exp", "Log"]

NASTY_NAMES = ["a*/ int x; /*", "line\nbreak", "tri??/graph", 'quote"back\\slash', "\u00e4\u4e2d\U0001f600", "%s%n",
               "<script>&amp;", "", " ", "\x00nul", "\x7f\x1b[31m", "x" * 5000, "{{ name }}", "../../etc"]


@dataclass(frozen=True)
class Case:
    base: str
    mutation: str
    seed: int

    def __str__(self) -> str:
        return f"{self.base}/{self.mutation}/{self.seed}"

    @staticmethod
    def parse(text: str) -> "Case":
        base, mutation, seed = text.strip().split("/")
        return Case(base, mutation, int(seed))


@dataclass
class Outcome:
    kind: str          # built | refused | finding
    message: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


# ---------------------------------------------------------------- base files

def base_calib(base: str, cache_dir: Path) -> Path:
    """The base's calibration .npz (the MLPerf golden samples repacked as x, NCHW where the model is)."""
    src = BASES[base][1]
    if isinstance(src, Path):
        return src
    golden, nchw = src
    path = cache_dir / f"calib_{base}.npz"
    if not path.is_file():
        x = np.load(golden)["x_fp32"]
        if nchw:
            x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, x=x)
        os.replace(tmp, path)
    return path


# ---------------------------------------------------------------- model mutations

def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _float_inits(model):
    return [i for i in model.graph.initializer if i.data_type == TensorProto.FLOAT and np.prod(i.dims) > 0]


def _set_array(init, arr):
    init.CopyFrom(numpy_helper.from_array(arr.astype(numpy_helper.to_array(init).dtype, copy=False), init.name))


def mutate_model(model: onnx.ModelProto, mutation: str, rng) -> onnx.ModelProto | bytes:
    """The mutated model (a ModelProto, or raw bytes for the byte-level mutations)."""
    g = model.graph
    if mutation == "flip_bytes":
        data = bytearray(model.SerializeToString())
        for _ in range(int(rng.integers(1, 9))):
            data[int(rng.integers(len(data)))] ^= int(rng.integers(1, 256))
        return bytes(data)
    if mutation == "truncate":
        data = model.SerializeToString()
        return data[:int(rng.integers(0, len(data)))]
    if mutation == "init_dtype" and g.initializer:
        init = _pick(rng, g.initializer)
        init.data_type = _pick(rng, [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64,
                                     TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.BOOL,
                                     TensorProto.STRING, TensorProto.COMPLEX64, TensorProto.UNDEFINED, 999])
        return model
    if mutation == "input_dtype":
        vi = _pick(rng, list(g.input) + list(g.output))
        vi.type.tensor_type.elem_type = _pick(rng, [TensorProto.INT8, TensorProto.INT64, TensorProto.DOUBLE,
                                                    TensorProto.FLOAT16, TensorProto.STRING, TensorProto.BOOL, 0])
        return model
    if mutation == "nonfinite_weights" and _float_inits(model):
        init = _pick(rng, _float_inits(model))
        arr = numpy_helper.to_array(init).copy()
        flat = arr.reshape(-1)
        bad = _pick(rng, [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-45])
        k = int(rng.integers(1, flat.size + 1)) if rng.random() < 0.3 else 1
        flat[rng.choice(flat.size, size=k, replace=False)] = bad
        _set_array(init, arr)
        return model
    if mutation == "zero_weights" and _float_inits(model):
        for _ in range(int(rng.integers(1, 4))):
            init = _pick(rng, _float_inits(model))
            arr = numpy_helper.to_array(init)
            _set_array(init, np.full_like(arr, _pick(rng, [0.0, 0.0, 1.0, -0.5, 1e-30])))
        return model
    if mutation == "input_shape":
        vi = _pick(rng, list(g.input) + list(g.output))
        dims = vi.type.tensor_type.shape.dim
        r = rng.random()
        if r < 0.6 and len(dims):
            dims[int(rng.integers(len(dims)))].dim_value = _pick(rng, ABSURD_INTS)
        elif r < 0.8:
            dims.add().dim_value = _pick(rng, [1, 2, 3, 1 << 16])
        elif len(dims):
            del dims[int(rng.integers(len(dims)))]
        return model
    if mutation == "init_shape" and g.initializer:
        init = _pick(rng, g.initializer)
        if init.dims and rng.random() < 0.7:
            init.dims[int(rng.integers(len(init.dims)))] = _pick(rng, ABSURD_INTS[:9])
        else:
            init.dims.append(_pick(rng, [1, 2, 0]))
        return model
    if mutation == "attr":
        nodes = [n for n in g.node if n.attribute]
        if nodes:
            attr = _pick(rng, _pick(rng, nodes).attribute)
            if attr.type == onnx.AttributeProto.INT:
                attr.i = _pick(rng, ABSURD_INTS)
            elif attr.type == onnx.AttributeProto.INTS and len(attr.ints):
                attr.ints[int(rng.integers(len(attr.ints)))] = _pick(rng, ABSURD_INTS)
                if rng.random() < 0.3:
                    attr.ints.append(_pick(rng, ABSURD_INTS))
            elif attr.type == onnx.AttributeProto.FLOAT:
                attr.f = _pick(rng, [float("nan"), float("inf"), -1.0, 0.0, 1e30])
            elif attr.type == onnx.AttributeProto.STRING:
                attr.s = _pick(rng, [b"", b"\xff\xfe", b"NOTSET", b"SAME_UPPER", b"VALID", b"x" * 100000])
            return model
    if mutation == "add_attr" and g.node:
        node = _pick(rng, g.node)
        name = _pick(rng, ["kernel_shape", "strides", "pads", "dilations", "group", "axis", "perm", "transB",
                           "alpha", "auto_pad", "ceil_mode", "count_include_pad", "junk_attribute"])
        value = _pick(rng, [[int(v) for v in rng.choice(ABSURD_INTS, size=int(rng.integers(1, 5)))],
                            int(_pick(rng, ABSURD_INTS)), float(_pick(rng, [np.nan, 1e30, -2.0])), "SAME_LOWER",
                            list(range(int(rng.integers(0, 2000))))])
        for i, a in enumerate(node.attribute):
            if a.name == name:
                del node.attribute[i]
                break
        node.attribute.append(helper.make_attribute(name, value))
        return model
    if mutation == "op_type" and g.node:
        _pick(rng, g.node).op_type = _pick(rng, OPS)
        return model
    if mutation == "rewire" and g.node:
        node = _pick(rng, g.node)
        names = [v for n in g.node for v in n.output] + [i.name for i in g.initializer] + ["no_such_value", ""]
        if node.input and rng.random() < 0.7:
            node.input[int(rng.integers(len(node.input)))] = _pick(rng, names)
        elif node.input:
            node.input.append(_pick(rng, names))
        return model
    if mutation == "drop_node" and len(g.node) > 1:
        del g.node[int(rng.integers(len(g.node)))]
        return model
    if mutation == "drop_init" and g.initializer:
        del g.initializer[int(rng.integers(len(g.initializer)))]
        return model
    if mutation == "opset":
        model.opset_import[0].version = _pick(rng, [1, 6, 7, 9, 11, 12, 14, 17, 19, 21, 99, 1 << 40])
        if rng.random() < 0.3:
            model.ir_version = _pick(rng, [0, 1, 3, 12, 99])
        return model
    if mutation == "outputs":
        if rng.random() < 0.5 and len(g.node) > 1:
            g.output.add().CopyFrom(helper.make_tensor_value_info(_pick(rng, g.node).output[0], TensorProto.FLOAT,
                                                                  None))
        else:
            g.output[0].name = _pick(rng, [g.input[0].name, g.node[0].output[0], "nothing", ""])
        return model
    if mutation == "reshape_target":
        consts = {n.input[1] for n in g.node if n.op_type == "Reshape" and len(n.input) > 1}
        inits = [i for i in g.initializer if i.name in consts]
        if inits:
            init = _pick(rng, inits)
            arr = numpy_helper.to_array(init).copy()
            if arr.size:
                arr[int(rng.integers(arr.size))] = _pick(rng, [0, -1, -2, 3, 1 << 20, -(1 << 40)])
            _set_array(init, arr)
            return model
    if mutation == "huge_values" and _float_inits(model):
        init = _pick(rng, _float_inits(model))
        arr = numpy_helper.to_array(init)
        _set_array(init, arr * np.float32(_pick(rng, [1e20, 1e-20, 1e30, 1e-35, -1e25])))
        return model
    if mutation == "names" and g.node:
        # node names end up in generated C (strings, comments), reports and JSON
        for node in rng.choice(list(g.node), size=int(rng.integers(1, len(g.node) + 1)), replace=False):
            node.name = _pick(rng, NASTY_NAMES) + str(int(rng.integers(10)))
        return model
    # the mutation does not apply to this model: damage a random byte instead
    return mutate_model(model, "flip_bytes", rng)


# ---------------------------------------------------------------- calibration mutations

def mutate_calib(src: Path, dst: Path, mutation: str, rng) -> None:
    with np.load(src) as npz:
        arrays = {k: npz[k] for k in npz.files}
    x = arrays["x"]
    if mutation in ("calib_flip", "calib_truncate"):
        np.savez(dst, **arrays)
        data = bytearray(dst.read_bytes())
        if mutation == "calib_truncate":
            data = data[:int(rng.integers(0, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 9))):
                data[int(rng.integers(len(data)))] ^= int(rng.integers(1, 256))
        dst.write_bytes(bytes(data))
        return
    if mutation == "calib_dtype":
        kind = _pick(rng, ["int8", "uint8", "int64", "float16", "float64", "bool", "complex64", "str", "object",
                           "datetime64[s]", "V4"])
        if kind == "str":
            x = x.astype(str)
        elif kind == "object":
            x = x.astype(object)
        elif kind == "V4":
            x = np.ascontiguousarray(x.astype(np.float32)).view("V4")
        else:
            x = x.astype(kind)
    elif mutation == "calib_shape":
        r = rng.random()
        if r < 0.25:
            x = x[:0]
        elif r < 0.5:
            x = x.reshape(len(x), -1)
        elif r < 0.75:
            x = x[..., None]
        else:
            x = x[0]
    elif mutation == "calib_nonfinite":
        x = x.astype(np.float32).copy()
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=int(rng.integers(1, min(flat.size, 64) + 1)), replace=False)] = \
            _pick(rng, [np.nan, np.inf, -np.inf])
    elif mutation == "calib_constant":
        x = np.full_like(x, _pick(rng, [0.0, 0.0, 1.0, -3.5, 255.0]))
    elif mutation == "calib_huge":
        x = (x * np.float32(_pick(rng, [1e30, 1e-30, 3e38, 1e-42, -1e20]))).astype(np.float32)
    elif mutation == "calib_missing_x":
        arrays = {"X": x}
        x = None
    elif mutation == "calib_y":
        arrays["y"] = _pick(rng, [np.zeros(len(x) + 1, np.int64), np.zeros((len(x), 3), np.int64),
                                  np.array(["a"] * len(x)), np.full(len(x), np.nan)])
    elif mutation == "calib_one_sample":
        x = x[:1]
    if x is not None:
        arrays["x"] = x
        if "y" in arrays and mutation != "calib_y":
            del arrays["y"]
    np.savez(dst, **arrays)


def make_case(case: Case, folder: Path, cache_dir: Path) -> tuple[Path, Path]:
    """Write the case's model.onnx and calib.npz into `folder`."""
    rng = np.random.default_rng(case.seed)
    model_src, _ = BASES[case.base]
    calib_src = base_calib(case.base, cache_dir)
    model_path, calib_path = folder / "model.onnx", folder / "calib.npz"
    if case.mutation in MODEL_MUTATIONS:
        out = mutate_model(onnx.load(str(model_src)), case.mutation, rng)
        model_path.write_bytes(out if isinstance(out, bytes) else out.SerializeToString())
        shutil.copyfile(calib_src, calib_path)
    else:
        shutil.copyfile(model_src, model_path)
        mutate_calib(calib_src, calib_path, case.mutation, rng)
    return model_path, calib_path


# ---------------------------------------------------------------- running a case

def leftovers(out: Path) -> list[str]:
    """Half-written things a build to `out` may have left: its scratch folders next to it."""
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*"))


def run_case(case: Case, workdir: Path, cache_dir: Path, firmware: bool = False) -> Outcome:
    """Build the case with edgec's API; judge the outcome (see the module doc)."""
    from edgec import api
    from edgec.quant import ptq
    from edgec.errors import EdgecError

    folder = Path(tempfile.mkdtemp(prefix="case.", dir=workdir))
    try:
        model_path, calib_path = make_case(case, folder, cache_dir)
        out = folder / "build"
        options = ptq.QuantOptions(sensitivity_samples=2)
        try:
            api.build(model_path, calib_path, "host", out, firmware=firmware, options=options)
        except EdgecError as exc:
            msg = str(exc)
            if "\n" in msg or not msg.strip():
                return Outcome("finding", f"EdgecError is not one line: {msg!r}")
            if out.exists() or leftovers(out):
                return Outcome("finding", f"refused but left {out.name} or {leftovers(out)} behind: {msg}")
            return Outcome("refused", msg)
        except Exception as exc:  # noqa: BLE001 - anything else is what we are looking for
            tb = traceback.format_exc(limit=-6)
            return Outcome("finding", f"{type(exc).__name__}: {str(exc)[:300]}\n{tb}")
        need = ["build-report.json", "quantized.json", "plan.json", "model"]
        missing = [n for n in need if not (out / n).exists()]
        if missing or leftovers(out) or not list((out / "model").glob("*.c")):
            return Outcome("finding", f"built, but {out} lacks {missing} or has leftovers {leftovers(out)}")
        if firmware and not (out / "project").is_dir():
            return Outcome("finding", "built without the firmware project")
        return Outcome("built", str(out))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- a child process with a timeout

def _worker_main(conn, workdir: str, cache_dir: str, mem_bytes: int) -> None:
    import resource
    import warnings

    warnings.simplefilter("ignore")
    if mem_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    os.environ["EDGEC_CACHE_DIR"] = cache_dir
    while True:
        msg = conn.recv()
        if msg is None:
            return
        case, firmware = msg
        try:
            outcome = run_case(case, Path(workdir), Path(cache_dir), firmware)
        except BaseException as exc:  # noqa: BLE001 - a broken case set-up is a finding too
            outcome = Outcome("finding", f"harness: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-4)}")
        conn.send(outcome)


class Worker:
    """Runs cases in a child process; a case that takes longer than `timeout` s is a 'hang' finding."""

    def __init__(self, workdir: Path, timeout: float = 60.0, mem_bytes: int = 6 << 30):
        self.workdir, self.timeout, self.mem_bytes = Path(workdir), timeout, mem_bytes
        self.cache_dir = self.workdir / "cache"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.proc = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, str(self.workdir), str(self.cache_dir),
                                                             self.mem_bytes), daemon=True)
        self.proc.start()

    def run(self, case: Case, firmware: bool = False, timeout: float | None = None) -> Outcome:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((case, firmware))
        if not self.conn.poll(timeout or self.timeout):
            self.kill()
            return Outcome("finding", f"hang: no outcome after {timeout or self.timeout:.0f} s")
        try:
            return self.conn.recv()
        except EOFError:
            code = self.proc.exitcode if self.proc else None
            self.kill()
            return Outcome("finding", f"crash: the worker died (exit code {code})")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.conn.send(None)
            self.proc.join(5)
        self.kill()
