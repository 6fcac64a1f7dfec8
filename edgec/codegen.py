"""Stage 6: quantized graph + memory plan -> a stand-alone C model library.

The library is `<name>.c`/`<name>.h` (rendered from templates/model.*.j2) plus
the runtime_c files (edgec/cheader.py: edgec_nn.h, the kernel family files, fast/).
Weights, biases, requantization constants and tables are `const` arrays (flash);
activations live in one static arena at the offsets of the plan.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import jinja2
import numpy as np

from . import __version__
from .artifact import graph_hash
from . import cheader, guard, int16, ops_ext
from .ir import ALIAS_OPS, Graph, Op
from .planner import Plan
from .resources import resource_dir

_CTYPES = {np.int8: "int8_t", np.int32: "int32_t", np.uint32: "uint32_t", np.int64: "int64_t"}
_PARAM_STRUCTS = {"conv2d": "edgec_conv_params", "depthwise_conv2d": "edgec_conv_params",
                  "fully_connected": "edgec_fully_connected_params", "max_pool": "edgec_pool_params",
                  "avg_pool": "edgec_pool_params", "add": "edgec_add_params"}
_KERNELS = {"conv2d": "edgec_conv2d_s8", "depthwise_conv2d": "edgec_depthwise_conv2d_s8",
            "fully_connected": "edgec_fully_connected_s8", "max_pool": "edgec_max_pool_s8",
            "avg_pool": "edgec_avg_pool_s8", "add": "edgec_add_s8"}


def c_identifier(text: str) -> str:
    """A lower-case C identifier made from a model name ('MobileNet v1.onnx' -> 'mobilenet_v1')."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower() or "model"
    return "m_" + name if name[0].isdigit() else name


def c_string(text: str, limit: int = 255) -> str:
    """The body of a C string literal holding `text` (UTF-8, at most `limit` bytes): printable ASCII as is,
    everything else octal escaped; '?' escaped too (no trigraphs), so any ONNX name is safe in generated C."""
    out = []
    for b in str(text).encode("utf-8", "replace")[:limit]:
        c = chr(b)
        out.append("\\" + c if c in '"\\?' else c if 32 <= b < 127 else f"\\{b:03o}")
    return "".join(out)


def c_comment(text: str, limit: int = 120) -> str:
    """`text` made safe inside a C comment: printable ASCII only, no comment ends or trigraphs, shortened."""
    safe = "".join(c if 32 <= ord(c) < 127 else "?" for c in str(text)).replace("*/", "*?").replace("/*", "/?").replace("??", "?.")
    return safe if len(safe) <= limit else safe[:limit - 3] + "..."


def template_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(c_string=c_string, c_comment=c_comment)
    return env


def _c_array(values: np.ndarray, per_line: int = 24) -> str:
    flat = [str(int(v)) + ("u" if values.dtype == np.uint32 else "") for v in values.reshape(-1)]
    if values.dtype == np.int32:
        flat = [f"({v})" if v == str(-2**31) else v for v in flat]
        flat = ["(-2147483647 - 1)" if v == f"({-2**31})" else v for v in flat]
    return ",\n".join("    " + ", ".join(flat[i:i + per_line]) for i in range(0, len(flat), per_line))


def _fast_call(i: int, op: Op, plan: Plan, arrays: list[dict]) -> tuple[str, dict] | None:
    """The C call of op i on its fast kernel (edgec/fastkernels.py), its arrays added to `arrays`."""
    low = op.lowered
    scratch = plan.scratch.get(i)
    if low is None or (low["scratch_bytes"] and scratch is None):
        return None
    prefix = f"op{i}"
    for key, a in low["arrays"].items():
        if key == "rq":
            body = ",\n".join("    {" + ", ".join(_c_array(r).strip() for r in row.reshape(-1, 1)) + "}"
                               for row in a)
            arrays.append({"cname": f"{prefix}_rq", "ctype": "edgec_rq", "size": len(a), "body": body})
        else:
            arrays.append({"cname": f"{prefix}_{key}", "ctype": _CTYPES[a.dtype.type], "size": a.size,
                           "body": _c_array(a)})
    ins = [f"arena.bytes + {plan.offsets[t]}" for t in op.inputs]
    out = f"arena.bytes + {plan.offsets[op.output]}"
    if op.kind == "add":
        call = (f"{low['kernel']}(&{prefix}_params, {prefix}_lut1, {prefix}_lut2, {prefix}_rq, {ins[0]}, "
                f"{ins[1]}, {out});")
    elif op.kind == "avg_pool":
        q = low["params"]
        call = f"{low['kernel']}({q['pixels']}, {q['c']}, {q['act_min']}, {q['act_max']}, {ins[0]}, {out});"
    else:
        call = (f"{low['kernel']}(&{prefix}_params, {ins[0]}, {prefix}_fw, {prefix}_rq, "
                f"arena.bytes + {scratch}, {out});")
    return call, low


def _ops_for_template(graph: Graph, plan: Plan) -> tuple[list[dict], list[dict]]:
    arrays, ops = [], []
    for i, op in enumerate(graph.ops):
        if op.kind in ALIAS_OPS:
            assert plan.offsets[op.output] == plan.offsets[op.inputs[0]]
            continue
        prefix = f"op{i}"
        fast = _fast_call(i, op, plan, arrays)
        if fast is not None:
            call, low = fast
            ops.append({"index": i, "kind": op.kind, "name": op.name, "prefix": prefix, "struct": low["struct"],
                        "kernel": low["kernel"], "params": low["params"], "arrays": {}, "call": call,
                        "inputs": [plan.offsets[t] for t in op.inputs], "output": plan.offsets[op.output],
                        "output_bytes": graph.tensors[op.output].nbytes})
            continue
        names = {}
        for key, a in op.arrays.items():
            cname = f"{prefix}_{key}"
            arrays.append({"cname": cname, "ctype": _CTYPES[a.dtype.type], "size": a.size, "body": _c_array(a)})
            names[key] = cname
        params = dict(op.params)
        if op.kind == "transpose":
            for key in ("dims", "perm"):
                cname = f"{prefix}_{key}"
                arrays.append({"cname": cname, "ctype": "int32_t", "size": 4,
                               "body": _c_array(np.array(params[key], np.int32))})
                names[key] = cname
        ins, out = [f"arena.bytes + {plan.offsets[t]}" for t in op.inputs], f"arena.bytes + {plan.offsets[op.output]}"
        call = None
        if int16.is_int16(graph, op):
            call = int16.c_call(op, graph.tensors[op.output].dtype, prefix, names, ins, out)
        elif op.kind in ops_ext.KINDS:
            call = ops_ext.c_call(op, names, ins, out)
        ops.append({"index": i, "kind": op.kind, "name": op.name, "prefix": prefix, "call": call,
                    "struct": _PARAM_STRUCTS.get(op.kind), "kernel": _KERNELS.get(op.kind),
                    "params": params, "arrays": names,
                    "inputs": [plan.offsets[t] for t in op.inputs], "output": plan.offsets[op.output],
                    "output_bytes": graph.tensors[op.output].nbytes,
                    "scratch": plan.scratch.get(i)})   # arena offset of the op's scratch buffer, if it has one
    return arrays, ops


def generate(graph: Graph, plan: Plan, out_dir: Path, name: str) -> list[Path]:
    """Write the model library into out_dir; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays, ops = _ops_for_template(graph, plan)
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    ctx = dict(name=name, NAME=name.upper(), version=__version__, graph=graph, arrays=arrays, ops=ops,
               arena_bytes=plan.arena_bytes, model_hash=graph_hash(graph),
               input_offset=plan.offsets[graph.input], output_offset=plan.offsets[graph.output],
               input_bytes=tin.nbytes, output_bytes=tout.nbytes,
               input_scale=repr(float(tin.scale)), input_zp=tin.zero_point,
               output_scale=repr(float(tout.scale)), output_zp=tout.zero_point,
               input_shape=list(graph.input_onnx_shape), output_shape=list(graph.output_onnx_shape),
               macs=graph.macs(), guards=[], guard_status=guard.STATUS_BASE)
    harness = []
    if plan.guard_bytes:   # the arena guard's debug build (edgec/guard.py)
        ctx["guards"] = guard.regions(graph, plan)
        for k, op in enumerate(ops):    # paint what comes to life after the previous layer, up to this one
            op["paint_from"] = ops[k - 1]["index"] + 1 if k else -1
        harness = guard.RUNTIME_FILES
    env = template_env()
    written = []
    for template, filename in (("model.h.j2", f"{name}.h"), ("model.c.j2", f"{name}.c")):
        path = out_dir / filename
        path.write_text(env.get_template(template).render(**ctx))
        written.append(path)
    for source, f in cheader.library_files(harness):
        (out_dir / f).parent.mkdir(exist_ok=True)
        shutil.copyfile(source, out_dir / f)
        written.append(out_dir / f)
    return written
