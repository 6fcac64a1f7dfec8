"""Conformance against ONNX's own backend node test cases.

The cases are the ones the installed onnx package defines (onnx.backend.test.case.node, the
source of onnx/backend/test/data/node/*/: some wheels ship only the definitions, so they are
generated in memory). Each case runs twice:
  (a) float: edgec's canonical graph through edgec/quant/floatref.py vs the case's outputs;
  (b) int8: calibrated on the case's own inputs, quantized, run by the NumPy integer reference
      (compared with the case's outputs to quantization tolerance) and, when `c_dir` is given,
      as generated C compiled for this host, which must equal the reference bit for bit.
edgec models have one float input and one output, so a case is adapted: inputs that edgec
takes only as constants (weights, pads, shapes, integer indices...) become initializers, the
remaining float inputs are packed into one input (sliced back apart inside the model), and
a case with several outputs is run once per output.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgec.frontend import canonicalize
from edgec.codegen import cmodel as codegen
import hostrun
from edgec import pipeline
from edgec.quant import floatref
from edgec.frontend import loader
from edgec.plan import planner
from edgec.quant import quantize
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.errors import EdgecError
from edgec import cheader
from edgec.ir import DTYPES
from edgec.ops import nms

# input indices edgec takes only as build-time constants, per op type
PARAM_INPUTS = {
    "Conv": {1, 2}, "ConvTranspose": {1, 2}, "Gemm": {1, 2}, "BatchNormalization": {1, 2, 3, 4},
    "PRelu": {1}, "Clip": {1, 2}, "Pad": {1, 2, 3}, "Resize": {1, 2, 3}, "Upsample": {1},
    "InstanceNormalization": {1, 2}, "LayerNormalization": {1, 2}, "Reshape": {1}, "Slice": {1, 2, 3, 4},
    "Gather": {1}, "Tile": {1}, "Expand": {1}, "Split": {1}, "Squeeze": {1}, "Unsqueeze": {1},
    "ReduceMean": {1}, "ReduceSum": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceL1": {1},
    "ReduceSumSquare": {1}, "MatMul": set(), "Pow": set(), "LSTM": {1, 2, 3, 4, 5, 6, 7}, "GRU": {1, 2, 3, 4, 5},
    "NonMaxSuppression": {2, 3, 4},
}
FLOAT_RTOL, FLOAT_ATOL = 1e-3, 1e-4
INT8_SCALES = 3.0      # int8 result within 3 output steps of the expected value...
INT8_RANGE = 0.03      # ...or 3 % of the expected output's range, whichever is larger


@dataclass
class Result:
    case: str
    op: str
    output: str
    float_ok: bool | None = None
    int8_ok: bool | None = None
    c_ok: bool | None = None
    reason: str = ""
    detail: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.float_ok and self.int8_ok and self.c_ok is not False and not self.reason)


# Exports that spend most of the collection time (about 23 of 30 s here) in ONNX's pure-Python reference
# pooling, all for 3-D pooling, which edgec refuses (docs/conformance.md lists their cases with the reason).
# The suite's regression test collects without them; scripts/conformance.py runs every export.
SLOW_REFUSED_EXPORTS = frozenset({"export_averagepool_3d_default", "export_lppool_3d_default",
                                  "export_maxpool_3d_default"})


def node_cases(skip_exports: frozenset[str] = frozenset()):
    """Every node test case the installed onnx defines (name, model, data sets), except those made by the
    export functions named in skip_exports (applies when this process has not collected the cases yet)."""
    import onnx.backend.test.case.base as case_base
    import onnx.backend.test.case.node as node_cases_mod
    run_exports = case_base._Exporter.__init__

    def run_wanted_exports(cls, name, bases, dct):
        run_exports(cls, name, bases, {k: v for k, v in dct.items() if k not in skip_exports})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            case_base._Exporter.__init__ = run_wanted_exports
            try:
                return node_cases_mod.collect_testcases(None)
            finally:
                case_base._Exporter.__init__ = run_exports


def op_under_test(case) -> str:
    """The operator a case is about (its name names it; expanded cases hold a function body)."""
    name = case.name[len("test_"):].replace("_", "").lower()
    types = {n.op_type for n in case.model.graph.node} | {s.name for s in onnx.defs.get_all_schemas()}
    in_graph = {n.op_type for n in case.model.graph.node}
    best = max((t for t in in_graph if name.startswith(t.lower())), key=len, default=None) or \
        (case.model.graph.node[0].op_type if len(case.model.graph.node) == 1 else None) or \
        max((t for t in types if name.startswith(t.lower())), key=len, default=None)
    if best is None:
        real = [n.op_type for n in case.model.graph.node if n.op_type != "Constant"]
        best = real[-1] if real else case.model.graph.node[0].op_type
    return best


def _float_type(vi) -> bool:
    return vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in (
        TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)


def adapt(case, inputs: list[np.ndarray], output_index: int):
    """The case's model as an edgec-shaped model (one float input, one output) and its input."""
    model = onnx.ModelProto.FromString(case.model.SerializeToString())
    g = model.graph
    readers = {}
    for node in g.node:
        for i, name in enumerate(node.input):
            readers.setdefault(name, []).append((node.op_type, i))
    acts, consts, casts, masks = [], [], [], []
    for vi, value in zip(list(g.input), inputs):
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise EdgecError("input is not a tensor (a sequence or optional)")
        as_param = any(i in PARAM_INPUTS.get(op, set()) for op, i in readers.get(vi.name, []))
        if _float_type(vi) and not as_param and value.dtype.kind == "f":
            acts.append((vi, value.astype(np.float32)))
        elif value.dtype == np.bool_ and not as_param:
            masks.append((vi, value))
        else:
            consts.append(numpy_helper.from_array(value, vi.name))
    for vi, value in masks:     # bool inputs beside float ones stay constants (a Where's condition, an attention
        if acts:                # mask); a case of bool inputs only (And, Or, Xor, Not) gets them as 0 / 1 floats
            consts.append(numpy_helper.from_array(value, vi.name))      # through a Cast to bool
            continue
        flt = helper.make_tensor_value_info(vi.name + "__float", TensorProto.FLOAT, _dims(vi))
        casts.append(helper.make_node("Cast", [flt.name], [vi.name], to=TensorProto.BOOL, name=vi.name + "__cast"))
        acts.append((flt, value.astype(np.float32)))
    if not acts:
        raise EdgecError("the case has no float input edgec could compute on")
    if casts:       # (a bool-input case at an old opset, And-7 ... Not-1: their latest versions, read at 13 as the
        for imp in model.opset_import:        # packing's Slice inputs and Cast's int `to` need)
            if imp.domain in ("", "ai.onnx") and imp.version < 13:
                imp.version = 13
        model.ir_version = max(model.ir_version, 8)
        nodes = casts + list(g.node)
        del g.node[:]
        g.node.extend(nodes)
    out = g.output[output_index]
    if _float_type(out):      # (a double case: edgec computes in float32 like its input)
        out.type.tensor_type.elem_type = TensorProto.FLOAT
    del g.output[:]
    g.output.append(out)
    del g.input[:]
    g.initializer.extend(consts)
    if len(acts) == 1:
        vi, value = acts[0]
        vi.type.tensor_type.elem_type = TensorProto.FLOAT
        g.input.append(vi)
        x = value
    else:                                             # pack several float inputs into one
        sizes = [v.size for _, v in acts]
        x = np.concatenate([v.reshape(-1) for _, v in acts]).reshape(1, -1)
        g.input.append(helper.make_tensor_value_info("edgec_packed", TensorProto.FLOAT, list(x.shape)))
        nodes, start = [], 0
        for k, ((vi, v), n) in enumerate(zip(acts, sizes)):
            p = f"edgec_pack{k}"
            g.initializer.extend([numpy_helper.from_array(np.array([start], np.int64), p + "_s"),
                                  numpy_helper.from_array(np.array([start + n], np.int64), p + "_e"),
                                  numpy_helper.from_array(np.array([1], np.int64), p + "_a"),
                                  numpy_helper.from_array(np.array(v.shape, np.int64), p + "_shape")])
            nodes += [helper.make_node("Slice", ["edgec_packed", p + "_s", p + "_e", p + "_a"], [p], name=p),
                      helper.make_node("Reshape", [p, p + "_shape"], [vi.name], name=p + "_reshape")]
            start += n
        nodes += list(g.node)
        del g.node[:]
        g.node.extend(nodes)
    del g.value_info[:]
    return model, x


def _dims(vi) -> list:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]


def _selected_rows(packed, want) -> np.ndarray:
    """A NonMaxSuppression's packed output as ONNX's selected rows; an error when it selected another number of
    boxes than ONNX's (the case's want)."""
    rows = nms.selected(np.asarray(packed, np.float32), {}).astype(np.float64)
    if rows.shape != want.shape:
        raise EdgecError(f"selected {len(rows)} boxes where ONNX selects {len(want)}")
    return rows


def _close(got, want, rtol, atol):
    want = np.asarray(want, np.float64)
    got = np.asarray(got, np.float64).reshape(want.shape)
    return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def run_case(case, c_dir: Path | None = None, runtime_objs: list[Path] | None = None) -> list[Result]:
    """Run every output of every data set of one case; one Result per output."""
    return run_cases([case], c_dir, runtime_objs)


def run_cases(cases, c_dir: Path | None = None, runtime_objs: list[Path] | None = None,
              batch: int = 64) -> list[Result]:
    """run_case over many cases; their generated C is compiled `batch` libraries at a time into one program."""
    results, pending = [], []
    for case in cases:
        results += _run_case(case, pending.append if c_dir is not None else None)
    for start in range(0, len(pending), batch):
        _check_c(pending[start:start + batch], c_dir / f"batch{start // batch}", runtime_objs)
    return results


def _run_case(case, c_check) -> list[Result]:
    op = op_under_test(case)
    results = []
    inputs, outputs = case.data_sets[0]
    for k, want in enumerate(outputs):
        res = Result(case=case.name, op=op, output=case.model.graph.output[k].name)
        results.append(res)
        try:
            _run_output(case, inputs, k, _array(want), res, c_check)
        except Exception as exc:
            _failed(res, exc)
    return results


def _failed(res: Result, exc: Exception) -> None:
    if isinstance(exc, EdgecError):
        res.reason = str(exc)
    else:    # a defect of edgec: keep going, report it
        res.reason = f"edgec error {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"


def _array(value) -> np.ndarray:
    try:
        return np.asarray(value)
    except ValueError:
        raise EdgecError("output is a sequence, not a tensor") from None


def _run_output(case, inputs, k, want, res: Result, c_check) -> None:
    if want.dtype.kind not in "fiub":
        raise EdgecError(f"output is {want.dtype}; edgec computes numbers")
    mask = want.dtype == np.bool_     # a bool output (a comparison's or logic op's mask): every element equal
    model, x = adapt(case, inputs, k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = loader.prepare(model, case.name)
        graph = canonicalize.canonicalize(model, "case")
        with np.errstate(all="ignore"):
            got = floatref.output(graph, x)
    selection = nms.output_op(graph)      # edgec's static [selected x 3 | count] -> ONNX's [K, 3] rows
    if selection is not None:
        got = _selected_rows(got, want)
    rtol, atol = max(case.rtol, FLOAT_RTOL), max(case.atol, FLOAT_ATOL)
    res.float_ok = _close(got, want, 0.0, 0.0) if mask else _close(got, want, rtol, atol)
    if not res.float_ok:
        err = np.nanmax(np.abs(np.asarray(got, np.float64).reshape(want.shape) - want))
        res.reason = f"float result differs from ONNX's (max abs error {err:.3g})"
        return
    if not np.all(np.isfinite(want)):
        raise EdgecError("expected output holds Inf/NaN, which int8 cannot represent")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ranges = floatref.graph_ranges(model, graph, x[None])
    graph = quantize.quantize(graph, ranges)
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    xq = scheme.quantize_input(tin, x)
    yq = reference.run(graph, xq)
    deq = scheme.dequantize(tout, yq).astype(np.float64)
    deq = _selected_rows(deq, want) if selection is not None else deq.reshape(want.shape)
    if mask:
        if tout.dtype != "bool":
            raise EdgecError(f"output is bool; edgec computes {tout.dtype}")
        wrong = int(np.count_nonzero((deq != 0) != want))
        res.detail = {"int8_mask_wrong": wrong}
        res.int8_ok = wrong == 0
        if wrong:
            res.reason = f"int8 mask differs from ONNX's on {wrong} of {want.size} elements"
        if c_check is not None:
            c_check((graph, xq, yq, res))
        return
    span = float(np.max(want) - np.min(want)) if want.size else 0.0
    tol = max(INT8_SCALES * tout.scale, INT8_RANGE * span)
    err = float(np.max(np.abs(deq - want))) if want.size else 0.0
    res.detail = {"int8_max_err": err, "tolerance": tol, "out_scale": tout.scale}
    res.int8_ok = err <= tol + 1e-9
    if not res.int8_ok:
        res.reason = f"int8 error {err:.3g} exceeds tolerance {tol:.3g}"
    if c_check is not None:
        c_check((graph, xq, yq, res))


def _check_c(pending: list, work: Path, runtime_objs: list[Path] | None) -> None:
    """The generated C of (graph, xq, yq, result)s compiled into one program: each result's c_ok. A batch that
    does not compile or run is retried a library at a time, so the failure is charged to its own case."""
    objs = runtime_objs or runtime_objects(work / "obj")
    models, xs = [], []
    try:
        for k, (graph, xq, _, _) in enumerate(pending):
            models.append(_generate(graph, work / f"m{k}", f"m{k}"))
            xs.append(np.asarray(xq, np.int8).reshape(1, -1))
        outs = hostrun.run_models(models, xs, work, [*C_FLAGS, f"-I{cheader.runtime_dir()}"], objs)
    except Exception:
        if len(pending) == 1:
            return _failed(pending[0][3], sys.exc_info()[1])
        for k, one in enumerate(pending):
            _check_c([one], work / f"one{k}", objs)
        return
    for (graph, _, yq, res), got in zip(pending, outs):     # compared as bytes (a float32 output too)
        want = np.ascontiguousarray(np.asarray(yq).astype(DTYPES[graph.tensors[graph.output].dtype]))
        res.c_ok = bool(np.array_equal(np.ascontiguousarray(got).view(np.uint8).reshape(-1),
                                       want.view(np.uint8).reshape(-1)))
        if not res.c_ok:
            res.reason = "generated C differs from the integer reference"


C_FLAGS = ["-O1", "-pedantic"]


def runtime_objects(work: Path, cc: str = "gcc") -> list[Path]:
    """The runtime kernels compiled once (the model libraries of many cases link against them)."""
    work.mkdir(parents=True, exist_ok=True)
    objs = []
    for f in (f for f in cheader.runtime_files() if f.endswith(".c")):
        o = work / (Path(f).stem + ".o")
        subprocess.run([cc, "-std=c99", *C_FLAGS, "-Wall", "-Wextra", "-Werror", "-c",
                        str(cheader.runtime_dir() / f), "-o", str(o)], check=True, capture_output=True)
        objs.append(o)
    return objs


def _generate(graph, work: Path, name: str) -> hostrun.HostModel:
    graph = pipeline.lower(graph)
    plan = planner.plan(graph)
    planner.check_plan(graph, plan)
    codegen.generate(graph, plan, work, name, runtime=False)
    return hostrun.HostModel(name, work, graph.tensors[graph.output].nbytes)


def case_hash(case) -> str:
    return hashlib.sha256(case.model.SerializeToString()).hexdigest()[:12]


def clean(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
