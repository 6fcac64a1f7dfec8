"""The arena guard (edgec/plan/guard.py, `edgec build --arena-guard`): canaries around the arena and every planned
buffer, checked after every layer. A correct plan runs bit-exact with the guard on; a deliberately wrong plan
(a buffer planned too small, two live buffers overlapping) is caught at the layer that overran, and the host
names that layer."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import hostcc
from conftest import EXAMPLES, SANITIZE, WARN, host_compiler, library_sources, run_generated_c
from edgec import api
from edgec import cli, pipeline
from edgec.codegen import cmodel as codegen
from edgec.plan import guard
from edgec.plan import planner
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.data import load_dataset

DIGITS = EXAMPLES / "digits_cnn"


def _compiled(guarded: bool = True):
    _, graph, _ = api.compile_model(DIGITS / "model.onnx", DIGITS / "calib.npz")
    return graph, planner.plan(graph, guard=guard.GUARD_BYTES if guarded else 0)


def _buffer(plan, tensor):
    return next(b for b in plan.buffers if tensor in b.tensors)


def _layer_of(graph, tensor) -> int:
    layers = [op for op in graph.ops if op.kind != "reshape"]
    return next(k for k, op in enumerate(layers) if op.output == tensor)


def _overlap(plan, a, b) -> None:
    """Plan buffer b 8 bytes over buffer a: over a's end, or over its start where that would leave the arena
    (an overlap inside the arena is the planning bug the guard is for; writing past the arena is another)."""
    b.offset = a.offset + a.size - 8
    if b.offset + b.size > plan.arena_bytes:
        b.offset = a.offset - b.size + 8
    assert 0 <= b.offset and b.offset + b.size <= plan.arena_bytes
    for t in b.tensors:
        plan.offsets[t] = b.offset


def _invoke_status(graph, plan, tmp_path) -> int:
    """Compile the model (ASan/UBSan) with a driver that runs one zero input and prints invoke's status."""
    codegen.generate(graph, plan, tmp_path, graph.name)
    (tmp_path / "status_main.c").write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "%s.h"\n'
        'int main(void) { memset(%s_input(), 0, %s_INPUT_BYTES); printf("%%d\\n", %s_invoke()); return 0; }\n'
        % (graph.name, graph.name, graph.name.upper(), graph.name))
    exe = tmp_path / "status"
    hostcc.build(library_sources(tmp_path), tmp_path, exe, host_compiler(), [*WARN, *SANITIZE, "-I", str(tmp_path)])
    return int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)


def test_guard_plan_gives_every_buffer_private_canaries():
    graph, plan = _compiled()
    planner.check_plan(graph, plan)      # checks the canaries too (plan.guard_bytes)
    regions = guard.regions(graph, plan)
    assert regions[0][:2] == (0, guard.GUARD_BYTES) and regions[1][0] + regions[1][1] == plan.arena_bytes
    assert len(regions) == 2 + 2 * len(plan.buffers)
    assert all(b.offset % planner.ALIGN == 0 for b in plan.buffers)
    assert plan.arena_bytes > planner.plan(graph).arena_bytes


def test_guarded_model_is_bit_exact_and_reports_success(tmp_path):
    graph, plan = _compiled()
    codegen.generate(graph, plan, tmp_path, graph.name)
    assert "edgec_guard_intact(" in (tmp_path / f"{graph.name}.c").read_text()
    x = load_dataset(DIGITS / "test.npz", graph.input_onnx_shape, 32).x
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    # the driver fails on a non-zero invoke status: the guard finds nothing on a correct plan
    got = run_generated_c(tmp_path, graph.name, xq.reshape(len(xq), -1), want.shape[1],
                          flags=SANITIZE)
    assert np.array_equal(got, want)
    assert _invoke_status(graph, plan, tmp_path / "status") == 0


def test_overlapping_buffers_are_caught_at_the_layer_that_overran(tmp_path):
    graph, plan = _compiled()
    dw = next(op for op in graph.ops if op.kind == "depthwise_conv2d")
    a, b = _buffer(plan, dw.inputs[0]), _buffer(plan, dw.output)   # the dw conv's input and output
    _overlap(plan, a, b)
    with pytest.raises(AssertionError):
        planner.check_plan(graph, plan)
    status = _invoke_status(graph, plan, tmp_path)
    assert status == guard.STATUS_BASE + _layer_of(graph, dw.output)
    assert f"layer {_layer_of(graph, dw.output)} '{dw.name}'" in guard.describe_status(
        status, [op.name for op in graph.ops if op.kind != "reshape"])


def test_unguarded_wrong_plan_goes_unnoticed(tmp_path):
    """Without the guard the same overlap runs to the end and reports success (why the guard exists)."""
    graph, plan = _compiled(guarded=False)
    dw = next(op for op in graph.ops if op.kind == "depthwise_conv2d")
    a, b = _buffer(plan, dw.inputs[0]), _buffer(plan, dw.output)
    _overlap(plan, a, b)
    assert _invoke_status(graph, plan, tmp_path) == 0


def test_buffer_planned_too_small_is_named_by_the_bench_on_the_host_board(tmp_path, monkeypatch, capsys):
    """`edgec build --arena-guard` with a planner that plans one buffer 8 bytes too small: `edgec bench` on
    the host board stops with one line naming the layer that wrote past its buffer."""
    victim = {}

    def wrong_plan(graph, guard_bytes=0, *lowering, **ram):
        graph, plan = real(graph, guard_bytes, *lowering, **ram)
        conv = [op for op in graph.ops if op.kind == "conv2d"][1]
        _buffer(plan, conv.output).size -= 8
        victim.update(layer=_layer_of(graph, conv.output), name=conv.name)
        return graph, plan

    real = pipeline.schedule_and_plan
    monkeypatch.setattr(pipeline, "schedule_and_plan", wrong_plan)      # what api.build plans with
    out = tmp_path / "build"
    assert cli.main(["build", str(DIGITS / "model.onnx"), "--calib", str(DIGITS / "calib.npz"), "--board", "host",
                     "-o", str(out), "--arena-guard", "--sensitivity-samples", "0"]) == 0
    assert "_ARENA_GUARD 1" in (out / "model" / "digits_cnn.h").read_text()
    capsys.readouterr()
    assert cli.main(["bench", str(out), "--data", str(DIGITS / "test.npz"), "--limit", "4", "--no-report"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("edgec: error: ") and "Traceback" not in "\n".join(err)
    assert f"arena guard caught layer {victim['layer']} '{victim['name']}'" in err[-1], err[-1]
