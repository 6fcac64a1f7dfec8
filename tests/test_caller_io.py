"""edgec/plan/caller_io.py, `--io-buffers caller`: the inputs and outputs in buffers the caller owns. The plan
keeps them out of the arena (which shrinks), no kernel writes into an input, and on the host (gcc and clang,
-Werror, ASan + UBSan) the generated C's outputs through the caller's buffers are bit-identical to the reference
while staging the next input leaves the previous output intact, through the context API and the one-call API."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import hostcc
from conftest import EXAMPLES, SANITIZE, WARN, host_compiler, library_sources
from edgec import api, cli, ports
from edgec.codegen import cmodel
from edgec.errors import EdgecError
from edgec.ops.registry import ALIAS_OPS
from edgec.plan import caller_io, planner
from edgec.quant import reference



# gesture_rnn: one input, one output, the input live at the arena's peak; diabetes_multitask: two inputs, two
# outputs, and in the arena an input that overlaps an output (writing it destroyed the previous output)
MODELS = {"gesture_rnn": "gru.onnx", "diabetes_multitask": "model.onnx"}


@pytest.fixture(scope="module", params=sorted(MODELS))
def compiled(request):
    name = request.param
    _, graph, plan = api.compile_model(EXAMPLES / name / MODELS[name], EXAMPLES / name / "calib.npz")
    return graph, plan, caller_io.replan(graph, plan)


def test_the_arena_holds_no_input_or_output_and_shrinks(compiled):
    graph, arena_plan, plan = compiled
    io = set(caller_io.slots(graph))
    assert set(plan.caller_io) >= io and sorted(set(plan.caller_io.values())) == list(range(len(io)))
    assert not any(set(b.tensors) & set(plan.caller_io) for b in plan.buffers)
    assert all(plan.offsets[t] >= plan.arena_bytes for t in plan.caller_io)     # logical, past the arena
    planner.check_plan(graph, plan)
    took = sum(-(-graph.tensors[t].nbytes // planner.ALIGN) * planner.ALIGN for t in io)     # aligned as placed
    assert arena_plan.arena_bytes - took <= plan.arena_bytes < arena_plan.arena_bytes
    for op in graph.ops:            # no kernel writes into an input's buffer (a view writes nothing)
        if op.kind not in ALIAS_OPS:
            assert plan.caller_io.get(op.output, -1) not in range(len(graph.inputs)), op


def _driver(graph, name: str) -> str:
    """Reads every sample's inputs into the caller's buffers; after each invoke it stages the next sample's
    inputs (quantized from float by the context's helper for a one-port model) BEFORE it writes the previous
    outputs: they must still be the reference's. Then the same through the one-call API's own buffers."""
    ins, outs = ports.inputs(graph), ports.outputs(graph)
    multi, N = ports.multi(graph), name.upper()
    suffix = (lambda p: f"_{p.c_name}") if multi else (lambda p: "")
    decl = "".join(f"static union {{ int64_t a; int8_t b[{p.size}]; }} in{k};\n" for k, p in enumerate(ins))
    decl += "".join(f"static union {{ int64_t a; int8_t b[{p.size}]; }} out{k};\n" for k, p in enumerate(outs))
    read = "".join(f"    if (fread(in_at({k}), 1, {p.size}, stdin) != {p.size}) return 0;\n" for k, p in enumerate(ins))
    write = "".join(f"    fwrite(out_at({k}), 1, {p.size}, stdout);\n" for k, p in enumerate(outs))
    setters = "".join(f"    if ({name}_ctx_set_input{suffix(p)}(&c, in{k}.b)) return 10;\n" for k, p in enumerate(ins)) + \
        "".join(f"    if ({name}_ctx_set_output{suffix(p)}(&c, out{k}.b)) return 11;\n" for k, p in enumerate(outs))
    one_call_in = " ".join(f"if (k == {k}) return (int8_t *){name}_input{suffix(p)}();" for k, p in enumerate(ins))
    one_call_out = " ".join(f"if (k == {k}) return (int8_t *){name}_output{suffix(p)}();" for k, p in enumerate(outs))
    ctx_in = " ".join(f"if (k == {k}) return in{k}.b;" for k in range(len(ins)))
    ctx_out = " ".join(f"if (k == {k}) return out{k}.b;" for k in range(len(outs)))
    return f"""#include <stdio.h>
#include <stdint.h>
#include "{name}.h"
{decl}static union {{ int64_t a; int8_t b[{N}_ARENA_BYTES]; }} arena;
static int one_call;
static int8_t *in_at(int k) {{ if (one_call) {{ {one_call_in} }} {ctx_in} return 0; }}
static int8_t *out_at(int k) {{ if (one_call) {{ {one_call_out} }} {ctx_out} return 0; }}
static int stage(void)
{{
{read}    return 1;
}}
static void emit(void)
{{
{write}}}
int main(void)
{{
    {name}_ctx c;
    int n, staged;
    if ({name}_ctx_init(&c, arena.b, sizeof arena.b)) return 9;
    if ({name}_ctx_invoke(&c) != {N}_ERROR_IO) return 12;            /* no buffers yet */
    if ({name}_ctx_set_output{suffix(outs[0])}(&c, arena.b + 1) != {N}_ERROR_IO) return 13;   /* misaligned */
{setters}    for (one_call = 0; one_call < 2; ++one_call) {{
        int count;
        if (fread(&count, sizeof count, 1, stdin) != 1) return 14;
        staged = stage();
        for (n = 0; n < count && staged; ++n) {{
            if ((one_call ? {name}_invoke() : {name}_ctx_invoke(&c)) != 0) return 15;
            staged = n + 1 < count ? stage() : 0;     /* the next input first, then the previous output */
            emit();
        }}
    }}
    return 0;
}}
"""


@pytest.mark.parametrize("cc, flags", [("gcc", ("-O2",)), ("clang", SANITIZE)])
def test_outputs_bit_identical_and_intact_while_the_next_input_is_staged(compiled, cc, flags, tmp_path):
    graph, _, plan = compiled
    name = graph.name
    cmodel.generate(graph, plan, tmp_path, name)
    header = (tmp_path / f"{name}.h").read_text()
    assert f"#define {name.upper()}_IO_BUFFERS_CALLER 1" in header and "leaves the last output intact" in header
    assert f"#define {name.upper()}_ARENA_BYTES {plan.arena_bytes}u" in header
    (tmp_path / "driver_main.c").write_text(_driver(graph, name))
    exe = tmp_path / "driver"
    hostcc.build(library_sources(tmp_path), tmp_path, exe, host_compiler(cc), [*WARN, *flags, "-I", str(tmp_path)])
    rng = np.random.default_rng(7)
    n_in = ports.packed_size(ports.inputs(graph))
    x = rng.integers(-128, 128, (5, n_in)).astype(np.int8)
    want = np.stack([np.asarray(reference.run(graph, row)).reshape(-1) for row in x])
    feed = b"".join(np.int32(len(x)).tobytes() + x.tobytes() for _ in range(2))    # context API, one-call API
    proc = subprocess.run([str(exe)], input=feed, capture_output=True)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    got = np.frombuffer(proc.stdout, np.int8).reshape(2, len(x), -1)
    assert np.array_equal(got[0], want) and np.array_equal(got[1], want)


def test_arena_io_of_the_same_model_does_clobber(compiled):
    """The contrast, from the header of the arena build: the multi-port model's input overlaps an output there."""
    graph, arena_plan, _ = compiled
    from edgec.codegen import iolife
    lines = iolife.lifetime(graph, arena_plan, graph.name)
    if ports.multi(graph):     # diabetes_multitask
        assert any("OVERLAPS" in line for line in lines)
    caller = iolife.lifetime(graph, caller_io.replan(graph, arena_plan), graph.name)
    assert not any("OVERLAPS" in line for line in caller) and "buffers the caller owns" in caller[0]


def test_what_caller_buffers_do_not_go_with_is_refused_in_one_line(tmp_path, capsys):
    _, graph, _ = api.compile_model(EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz")
    guarded = planner.plan(graph, guard=16)
    with pytest.raises(EdgecError, match="--io-buffers caller does not go with the arena guard"):
        caller_io.replan(graph, guarded)
    model, calib = EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz"
    code = cli.main(["export", str(model), "--calib", str(calib), "--board", "qemu-cortex-m4", "--format", "c",
                     "-o", str(tmp_path / "lib"), "--ram-budget", "7600", "--io-buffers", "caller"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "--io-buffers caller does not go with patch-based stages" in err
    assert not (tmp_path / "lib").exists()
