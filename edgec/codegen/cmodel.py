"""Stage 6: quantized graph + memory plan -> a stand-alone C model library.

The library is `<name>.c`/`<name>.h` (rendered from templates/model.*.j2) plus
the runtime_c files the model calls (edgec/cheader.py files_called: edgec_nn.h, edgec_runtime.c, the kernel
files of its layers, the headers they include). Weights, biases,
requantization constants and
tables are `const` arrays (flash); activations live in one static arena at the
offsets of the plan.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from edgec import __version__, cheader, ports
from edgec.ir import Graph
from edgec.ops import detection
from edgec.ops.kernel import REFERENCE
from edgec.ops.opdef import CallSite
from edgec.ops import state as op_state
from edgec.ops.registry import REGISTRY, graph_macs, state_fields, state_index
from edgec.ops.select import lowering_of
from edgec.codegen import constants, iolife, patched
from edgec.plan import caller_io, guard
from edgec.plan.planner import Plan
from edgec.plan.regions import REGIONS_LD_SUFFIX, c_pieces, c_pointer, linker_script
from edgec.quant.artifact import graph_hash
from edgec.templating import environment

_CTYPES = {np.int8: "int8_t", np.int16: "int16_t", np.uint16: "uint16_t", np.int32: "int32_t", np.uint32: "uint32_t",
           np.int64: "int64_t", np.float32: "float"}


def _c_array(values: np.ndarray, per_line: int = 24) -> str:
    if values.dtype == np.float32:      # C99 hexadecimal literals: every bit as given
        flat = [float(v).hex() + "f" for v in values.reshape(-1)]
        return ",\n".join("    " + ", ".join(flat[i:i + 6]) for i in range(0, len(flat), 6))
    flat = [str(int(v)) + ("u" if values.dtype == np.uint32 else "") for v in values.reshape(-1)]
    if values.dtype == np.int32:
        flat = [f"({v})" if v == str(-2**31) else v for v in flat]
        flat = ["(-2147483647 - 1)" if v == f"({-2**31})" else v for v in flat]
    return ",\n".join("    " + ", ".join(flat[i:i + per_line]) for i in range(0, len(flat), per_line))


def _array(cname: str, a: np.ndarray, records: bool) -> dict:
    if records:      # a fast kernel's edgec_rq records, one per output channel
        body = ",\n".join("    {" + ", ".join(_c_array(r).strip() for r in row.reshape(-1, 1)) + "}" for row in a)
        return {"cname": cname, "ctype": "edgec_rq", "size": len(a), "body": body}
    return {"cname": cname, "ctype": _CTYPES[a.dtype.type], "size": a.size, "body": _c_array(a)}


FAR_SECTION = ".edgec_far_weights"     # weights in RAM placed in a second RAM region (far_weights)


def pointer_of(plan: Plan):
    """tensor -> the C expression of its bytes: the arena at its offset, or (--io-buffers caller) the caller's
    buffer of its slot, `io[slot]` (model.c.j2 names the slots `io` in every function that runs layers)."""
    def pointer(t: str) -> str:
        if t in plan.caller_io:
            return f"io[{plan.caller_io[t]}]"
        return c_pointer(plan, plan.offsets[t])
    return pointer


def _ops_for_template(graph: Graph, plan: Plan, weights_in_ram: bool = False) -> tuple[list[dict], list[dict]]:
    """The constant arrays and the layers of the generated file: every op that is not an alias, with the C call
    of the kernel its lowering puts it on (edgec/ops/kernel.py; a graph that was not lowered: the reference
    kernels), the plan giving it its scratch. weights_in_ram: the weight tensors and their biases and
    requantization records (constants.RAM_KINDS) are initialized statics, not `const`: the C runtime copies them from flash into RAM at startup."""
    arrays, ops = [], []
    for i, op in enumerate(graph.ops):
        if REGISTRY[op.kind].alias:
            assert plan.offsets[op.output] == plan.offsets[op.inputs[0]]
            continue
        prefix = f"op{i}"
        scratch = plan.scratch.get(i)
        low = lowering_of(graph, op)
        assert scratch is not None or not low.scratch_bytes, f"op {i}: the plan gave its kernel no scratch"
        fast = low.kernel.role != REFERENCE
        own = {**low.arrays, **(low.kernel.c_arrays(op) if low.kernel.c_arrays else {})}
        names = {}
        for key, a in own.items():
            names[key] = f"{prefix}_{key}"
            arrays.append(dict(_array(names[key], a, records=fast and key == "rq"),
                               ram=weights_in_ram and constants.kind_of(key) in constants.RAM_KINDS, bytes=a.nbytes, section=""))
        dtype = graph.tensors[op.output].dtype
        pointer = pointer_of(plan)
        site = CallSite(prefix=prefix, inputs=[pointer(t) for t in op.inputs],
                        output=pointer(op.output), arrays=names,
                        scratch="(int8_t *)0" if scratch is None else c_pointer(plan, scratch), dtype=dtype,
                        state=None if state_index(graph, i) is None else c_pointer(plan, plan.state[state_index(graph, i)]))
        call = _staged_call(low.kernel.call(op, low, site), low, names, plan, scratch, fast)
        ops.append({"index": i, "kind": op.kind, "name": op.name, "prefix": prefix, "call": call, "arrays": names,
                    "struct": low.struct, "params": low.params,
                    "inputs": [plan.offsets[t] for t in op.inputs], "output": plan.offsets[op.output],
                    "output_bytes": 0 if op.output in plan.caller_io else graph.tensors[op.output].nbytes})
    bands = []
    by_index = {o["index"]: o for o in ops}
    for stage in plan.stages:          # patch-based stages: the first op's call runs the whole stage
        for k in stage.ops:
            by_index[k]["struct"], by_index[k]["call"] = None, ""
            if k != stage.last:      # never whole in the arena: only a window of its rows (0 bytes to capture)
                by_index[k]["output_bytes"] = 0
        by_index[stage.first]["call"] = patched.stage_block(graph, plan, stage, arrays_of(by_index), bands)
    return arrays, ops, bands


def _staged_call(call: str, low, names: dict, plan: Plan, scratch: int | None, fast: bool) -> str:
    """The call reading its staged arrays (`Lowering.staged`, edgec/lower/weight_staging.py) from their copies in its
    scratch, each copied there from flash first (edgec_stage_copy); the call as it is where none is staged."""
    copies = []
    for key, offset, size in low.staged:
        ctype = "edgec_rq" if fast and key == "rq" else _CTYPES[low.arrays[key].dtype.type]
        at = c_pointer(plan, scratch + offset)
        copies.append(f"edgec_stage_copy({at}, {names[key]}, {size}u);")
        call = re.sub(rf"\b{names[key]}\b", f"(const {ctype} *)(const void *)({at})", call)
    return "\n    ".join([*copies, call])


def state_resets(graph: Graph, plan: Plan) -> list[str]:
    """The C statements of `<name>_reset()`: every stateful op's state buffer (edgec/ops/state.py) to its
    initial values, as TFLite Micro's reset() leaves its variable tensors and persistent buffers."""
    return [line for i, off in sorted(plan.state.items())
            for line in op_state.c_reset(c_pointer(plan, off), state_fields(graph.ops[i]))]


def arrays_of(by_index: dict) -> dict:
    """op index -> the C names of its constant arrays (as the op's call site gives them)."""
    return {i: o["arrays"] for i, o in by_index.items()}


def far_weights(arrays: list[dict], capacity: int) -> int:
    """Put the largest RAM weight arrays, as many as fit `capacity` bytes (each rounded up to 8), in section
    FAR_SECTION (a second RAM region, placed by the linker script of `edgec build --code-in-ram` on a part whose
    code RAM splits its data RAM: edgec/targets/code_ram.py); returns the bytes placed there."""
    placed = 0
    for a in sorted((a for a in arrays if a["ram"]), key=lambda a: -a["bytes"]):
        size = (a["bytes"] + 7) // 8 * 8
        if placed + size <= capacity:
            a["section"] = FAR_SECTION
            placed += size
    return placed


def generate(graph: Graph, plan: Plan, out_dir: Path, name: str, runtime: bool = True,
             weights_in_ram: bool = False, far_capacity: int = 0, placed: dict | None = None) -> list[Path]:
    """Write the model library into out_dir, with a copy of the runtime files it calls unless `runtime` is False
    (callers that link one compiled runtime into many models); returns the files written. weights_in_ram
    (`edgec build --weights-in-ram`): the weight tensors in RAM, copied from flash at startup (_ops_for_template);
    far_capacity: how many of their bytes may go to a second RAM region (far_weights; placed["far_bytes"]: how
    many did)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays, ops, bands = _ops_for_template(graph, plan, weights_in_ram)
    far = far_weights(arrays, far_capacity) if far_capacity else 0
    if placed is not None:
        placed["far_bytes"] = far
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    pointer = pointer_of(plan)
    ctx = dict(name=name, NAME=name.upper(), version=__version__, graph=graph, arrays=arrays, ops=ops,
               layer_slots=max(len(ops), 1),      # (ISO C has no zero-size array: a model of views only)
               arena_bytes=plan.arena_bytes, pieces=c_pieces(plan), model_hash=graph_hash(graph),
               input_pointer=ports.c_typed(pointer(graph.input), tin.dtype),
               output_pointer=ports.c_typed(pointer(graph.output), tout.dtype),
               input_bytes=tin.nbytes, output_bytes=tout.nbytes, input_dtype=tin.dtype, output_dtype=tout.dtype,
               input_scale=repr(float(tin.scale)), input_zp=tin.zero_point,
               output_scale=repr(float(tout.scale)), output_zp=tout.zero_point,
               input_shape=list(tin.shape) if graph.input_perm else list(graph.input_onnx_shape),
               input_layout=("channels-last (--input-layout nhwc; the ONNX model's is "
                             f"{list(graph.input_onnx_shape)})" if graph.input_perm else "the ONNX model's layout"),
               output_shape=list(graph.output_onnx_shape),
               macs=graph_macs(graph), guards=[], guard_status=guard.STATUS_BASE, bands=bands,
               ports=ports.c_context(graph, pointer), detections=detection.c_detections(graph, pointer),
               input_elements=tin.size, output_elements=tout.size, input_q=ports.c_number_type(tin.dtype),
               output_q=ports.c_number_type(tout.dtype), input_scale_value=float(tin.scale),
               output_scale_value=float(tout.scale), abi_version=cheader.abi_version(),
               lifetime=iolife.lifetime(graph, plan, name),
               ctx_api=not plan.pieces,   # the context API: one arena (not in pieces over several RAM regions)
               caller_io=[graph.tensors[t].nbytes for t in caller_io.slots(graph)] if plan.caller_io else None,
               caller_io_inputs=len(graph.inputs), resets=state_resets(graph, plan),
               state_bytes=sum(b.size for b in plan.buffers if b.state_op is not None))
    if ctx["ctx_api"]:      # the one-call API's arena; `arena` names the arena a function runs on (model.c.j2)
        ctx["pieces"][0]["cname"] = "static_arena"
    harness = []
    if plan.guard_bytes:   # the arena guard's debug build (edgec/plan/guard.py)
        ctx["guards"] = guard.regions(graph, plan)
        for k, op in enumerate(ops):    # paint what comes to life after the previous layer, up to this one
            op["paint_from"] = ops[k - 1]["index"] + 1 if k else -1
        harness = guard.RUNTIME_FILES
    env = environment()
    written = []
    for template, filename in (("model.h.j2", f"{name}.h"), ("model.c.j2", f"{name}.c")):
        path = out_dir / filename
        path.write_text(env.get_template(template).render(**ctx))
        written.append(path)
    if any(piece.section for piece in plan.pieces):     # arena pieces in other RAM regions: where the linker puts them
        path = out_dir / f"{name}{REGIONS_LD_SUFFIX}"
        path.write_text(linker_script(plan))
        written.append(path)
    called = cheader.files_called([p.read_text() for p in written])      # only the runtime files the model calls
    for source, f in cheader.library_files(harness, called) if runtime else ():
        (out_dir / f).parent.mkdir(exist_ok=True)
        shutil.copyfile(source, out_dir / f)
        written.append(out_dir / f)
    return written
