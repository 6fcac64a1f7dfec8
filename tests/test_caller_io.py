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


M4_APP = r"""
#include <stdio.h>
#include <string.h>
#include "diabetes.h"
#include "inputs.h"

static union { int64_t a; int8_t b[DIABETES_ARENA_BYTES]; } arena;
static union { int64_t a; int8_t b[DIABETES_INPUT_CLINICAL_BYTES]; } clinical;
static union { int64_t a; int8_t b[DIABETES_INPUT_SERUM_BYTES]; } serum;
static union { int64_t a; int8_t b[DIABETES_OUTPUT_RISK_BYTES]; } risk;
static union { int64_t a; int8_t b[DIABETES_OUTPUT_PROGRESS_BYTES]; } progress;

static void stage(int i, int one_call)     /* the packed sample i into the inputs */
{
    memcpy(one_call ? diabetes_input_clinical() : clinical.b, x[i], DIABETES_INPUT_CLINICAL_BYTES);
    memcpy(one_call ? diabetes_input_serum() : serum.b, x[i] + DIABETES_INPUT_CLINICAL_BYTES, DIABETES_INPUT_SERUM_BYTES);
}

static void dump(int api, int i, const int8_t *a, unsigned na, const int8_t *b, unsigned nb)
{
    unsigned k;
    printf("%d %d ", api, i);
    for (k = 0; k < na; k++) printf("%02x", (unsigned)(uint8_t)a[k]);
    for (k = 0; k < nb; k++) printf("%02x", (unsigned)(uint8_t)b[k]);
    printf("\n");
}

int main(void)
{
    diabetes_ctx c;
    int i, one_call;
    if (diabetes_ctx_init(&c, arena.b, sizeof arena.b) || diabetes_ctx_set_input_clinical(&c, clinical.b)
        || diabetes_ctx_set_input_serum(&c, serum.b) || diabetes_ctx_set_output_risk(&c, risk.b)
        || diabetes_ctx_set_output_progress(&c, progress.b)) return 2;
    for (one_call = 0; one_call < 2; one_call++) {
        stage(0, one_call);
        for (i = 0; i < N_SAMPLES; i++) {
            if ((one_call ? diabetes_invoke() : diabetes_ctx_invoke(&c)) != 0) return 3;
            if (i + 1 < N_SAMPLES) stage(i + 1, one_call);      /* the next input before the output is read */
            if (one_call)
                dump(1, i, diabetes_output_risk(), DIABETES_OUTPUT_RISK_BYTES, diabetes_output_progress(),
                     DIABETES_OUTPUT_PROGRESS_BYTES);
            else
                dump(0, i, risk.b, DIABETES_OUTPUT_RISK_BYTES, progress.b, DIABETES_OUTPUT_PROGRESS_BYTES);
        }
    }
    return 0;
}
"""


def test_caller_buffers_on_the_emulated_cortex_m4(tmp_path):
    """An exported --io-buffers caller library in a bare-metal application of its own on qemu-cortex-m4: the
    outputs read after the next input was staged are the reference's, through the context API and the one-call
    API."""
    from edgec.settings import Settings
    from edgec.targets.boards import load_board
    from edgec.targets.firmware import board_options, platform_spec
    from edgec.targets.pio import run_pio
    from edgec.templating import c_bytes
    from qemurun import run_qemu

    model, calib = EXAMPLES / "diabetes_multitask" / "model.onnx", EXAMPLES / "diabetes_multitask" / "calib.npz"
    m = api.export(model, calib, "qemu-cortex-m4", "platformio", tmp_path / "lib" / "diabetes", name="diabetes",
                   io_buffers="caller")
    header = (tmp_path / "lib" / "diabetes" / "src" / "diabetes.h").read_text()
    assert "#define DIABETES_IO_BUFFERS_CALLER 1" in header and m["arena_bytes"] < 64   # 64 B with the ports
    _, graph, _ = api.compile_model(model, calib)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (4, ports.packed_size(ports.inputs(graph)))).astype(np.int8)
    want = np.stack([np.asarray(reference.run(graph, row)).reshape(-1) for row in x])
    board = load_board("qemu-cortex-m4")
    options = "\n".join(f"{k} = {v}" for k, v in board_options(board))
    (tmp_path / "platformio.ini").write_text(
        f"[env:m4]\nplatform = {platform_spec(board)}\nboard = {board.pio_board}\n{options}\n"
        "build_src_flags = -std=c99 -Wall -Wextra -Werror\n")
    (tmp_path / "src").mkdir()
    rows = ",\n".join("{" + c_bytes(row) + "}" for row in x)
    (tmp_path / "src" / "inputs.h").write_text(
        f"#include <stdint.h>\n#define N_SAMPLES {len(x)}\nstatic const int8_t x[{len(x)}][{x.shape[1]}] = {{\n{rows}\n}};\n")
    (tmp_path / "src" / "main.c").write_text(M4_APP)
    env = Settings.from_environment()
    run_pio(["run"], tmp_path, tmp_path / "build.log", env.platformio_home, env.build_timeout, log=None)
    code, out = run_qemu("qemu-cortex-m4", tmp_path / ".pio" / "build" / "m4" / "firmware.elf")
    assert code == 0, out
    got = {}
    for line in out.splitlines():
        which, i, hexs = line.split()
        got[int(which), int(i)] = np.frombuffer(bytes.fromhex(hexs), np.int8)
    assert len(got) == 2 * len(x)
    for (_, i), y in got.items():
        assert np.array_equal(y, want[i]), i


def test_a_caller_io_build_benches_bit_exact_on_the_host(tmp_path):
    """edgec's own bench firmware runs such a build through the one-call API's static buffers (with --profile)."""
    folder = EXAMPLES / "diabetes_multitask"
    report = api.build(folder / "model.onnx", folder / "calib.npz", "host", tmp_path / "b", io_buffers="caller")
    assert report["memory"]["io_buffers"] == "caller" and report["memory"]["arena_bytes"] < 64
    bench = api.bench(tmp_path / "b", folder / "test.npz", limit=10, report_dir=None, profile=True)
    assert bench["agreement"]["device_vs_reference"] == 1.0
    assert all(o["agreement"]["device_vs_reference"] == 1.0 for o in bench["outputs"].values())
