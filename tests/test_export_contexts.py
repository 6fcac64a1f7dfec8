"""The C API v2 in a bare-metal application of its own (not edgec's harness) on the emulated Cortex-M4: two
exported models and a second instance of one of them on one caller-provided arena, fed float inputs through the
generated helpers; every dequantized output bit-identical to the host reference, and the same application
through the one-call API prints the same bytes. The context-only firmware links no static arena."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from conftest import EXAMPLES
from edgec import api, ports
from edgec.data import load_dataset
from edgec.quant import reference
from edgec.settings import Settings
from edgec.targets.boards import load_board
from edgec.targets.firmware import board_options, platform_spec
from edgec.targets.pio import run_pio
from qemurun import run_qemu

M4 = "qemu-cortex-m4"

MODELS = ["digits_cnn", "cancer_conv1d"]
N = 4

APP = r"""
#include <stdio.h>
#include <string.h>
#include "digits_cnn.h"
#include "cancer_conv1d.h"
#include "inputs.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#ifdef CONTEXTS
static union { int64_t align; int8_t bytes[MAX(DIGITS_CNN_ARENA_BYTES, CANCER_CONV1D_ARENA_BYTES)]; } shared;
#endif
static float digits_y[DIGITS_CNN_OUTPUT_ELEMENTS], cancer_y[CANCER_CONV1D_OUTPUT_ELEMENTS];

static void dump(const char *name, int i, const float *y, unsigned n)
{
    printf("%s %d ", name, i);
    for (unsigned k = 0; k < n; k++) {
        uint32_t bits;
        memcpy(&bits, &y[k], 4);
        printf("%08lx", (unsigned long)bits);
    }
    printf("\n");
}

int main(void)
{
#ifdef CONTEXTS
    digits_cnn_ctx first, second;
    cancer_conv1d_ctx cancer;
    if (digits_cnn_ctx_init(&first, shared.bytes, sizeof shared.bytes) != 0
        || digits_cnn_ctx_init(&second, shared.bytes, sizeof shared.bytes) != 0
        || cancer_conv1d_ctx_init(&cancer, shared.bytes, sizeof shared.bytes) != 0) return 2;
    if (digits_cnn_ctx_init(&first, shared.bytes + 1, sizeof shared.bytes - 1) != DIGITS_CNN_ERROR_ARENA
        || cancer_conv1d_ctx_init(&cancer, shared.bytes, CANCER_CONV1D_ARENA_BYTES - 1) != CANCER_CONV1D_ERROR_ARENA) return 5;
    if (cancer_conv1d_ctx_init(&cancer, shared.bytes, sizeof shared.bytes) != 0
        || digits_cnn_ctx_init(&first, shared.bytes, sizeof shared.bytes) != 0) return 2;
#else
    if (digits_cnn_init() != 0 || cancer_conv1d_init() != 0) return 2;
#endif
    for (int i = 0; i < N_SAMPLES; i++) {     /* one model at a time on the one arena, each output read out first */
#ifdef CONTEXTS
        digits_cnn_ctx_quantize_input(&first, digits_x[i]);
        if (digits_cnn_ctx_invoke(&first) != 0) return 3;
        digits_cnn_ctx_dequantize_output(&first, digits_y);
        dump("digits_cnn", i, digits_y, DIGITS_CNN_OUTPUT_ELEMENTS);
        cancer_conv1d_ctx_quantize_input(&cancer, cancer_x[i]);
        if (cancer_conv1d_ctx_invoke(&cancer) != 0) return 3;
        cancer_conv1d_ctx_dequantize_output(&cancer, cancer_y);
        dump("cancer_conv1d", i, cancer_y, CANCER_CONV1D_OUTPUT_ELEMENTS);
        digits_cnn_ctx_quantize_input(&second, digits_x[N_SAMPLES - 1 - i]);
        if (digits_cnn_ctx_invoke(&second) != 0) return 3;
        digits_cnn_ctx_dequantize_output(&second, digits_y);
#else
        digits_cnn_quantize_input(digits_x[i]);
        if (digits_cnn_invoke() != 0) return 3;
        digits_cnn_dequantize_output(digits_y);
        dump("digits_cnn", i, digits_y, DIGITS_CNN_OUTPUT_ELEMENTS);
        cancer_conv1d_quantize_input(cancer_x[i]);
        if (cancer_conv1d_invoke() != 0) return 3;
        cancer_conv1d_dequantize_output(cancer_y);
        dump("cancer_conv1d", i, cancer_y, CANCER_CONV1D_OUTPUT_ELEMENTS);
        digits_cnn_quantize_input(digits_x[N_SAMPLES - 1 - i]);
        if (digits_cnn_invoke() != 0) return 3;
        digits_cnn_dequantize_output(digits_y);
#endif
        dump("digits_cnn_second", N_SAMPLES - 1 - i, digits_y, DIGITS_CNN_OUTPUT_ELEMENTS);
    }
    return 0;
}
"""


def _c_floats(x: np.ndarray) -> str:
    return ", ".join(f"{float(v).hex()}f" if np.isfinite(v) else "0" for v in np.asarray(x, np.float32).reshape(-1))


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    """The application built twice (context API on one shared arena; one-call API), both models exported as
    PlatformIO libraries; plus the float inputs and the host's expected outputs."""
    project = tmp_path_factory.mktemp("contexts")
    graphs, inputs, expected = {}, {}, {}
    for name in MODELS:
        api.export(EXAMPLES / name / "model.onnx", EXAMPLES / name / "calib.npz", M4, "platformio",
                   project / "lib" / name)
        _, graph, _ = api.compile_model(EXAMPLES / name / "model.onnx", EXAMPLES / name / "calib.npz")
        x = load_dataset(EXAMPLES / name / "test.npz", graph.input_onnx_shape, limit=N).x
        q = ports.quantize_inputs(graph, x)
        out = np.stack([np.asarray(reference.run(graph, s)).reshape(-1) for s in q])
        expected[name] = np.asarray(ports.dequantize_outputs(graph, out), np.float32).reshape(N, -1)
        inputs[name] = x.reshape(N, -1)
    board = load_board(M4)
    options = "\n".join(f"{k} = {v}" for k, v in board_options(board))
    flags = "-std=c99 -Wall -Wextra -Wshadow -Werror"
    (project / "platformio.ini").write_text(
        f"[env:ctx]\nplatform = {platform_spec(board)}\nboard = {board.pio_board}\n{options}\n"
        f"build_src_flags = {flags} -DCONTEXTS\n\n"
        f"[env:one_call]\nplatform = {platform_spec(board)}\nboard = {board.pio_board}\n{options}\n"
        f"build_src_flags = {flags}\n")
    src = project / "src"
    src.mkdir()
    header = [f"#define N_SAMPLES {N}"] + [
        f"static const float {var}[{N}][{inputs[name].shape[1]}] = {{\n"
        + ",\n".join("{" + _c_floats(row) + "}" for row in inputs[name]) + "\n};"
        for name, var in (("digits_cnn", "digits_x"), ("cancer_conv1d", "cancer_x"))]
    (src / "inputs.h").write_text("\n".join(header) + "\n")
    (src / "main.c").write_text(APP)
    env = Settings.from_environment()
    run_pio(["run"], project, project / "build.log", env.platformio_home, env.build_timeout, log=None)
    return project, expected


def _run(project, env_name: str) -> dict:
    code, out = run_qemu(M4, project / ".pio" / "build" / env_name / "firmware.elf")
    assert code == 0, out
    got = {}
    for line in out.splitlines():
        name, i, hexs = line.split()
        got[name, int(i)] = np.frombuffer(bytes.fromhex(hexs), ">u4").astype(np.uint32)
    return got


def test_contexts_on_one_arena_match_the_host_reference_and_the_one_call_api(firmware):
    project, expected = firmware
    contexts, one_call = _run(project, "ctx"), _run(project, "one_call")
    assert len(contexts) == 3 * N and contexts.keys() == one_call.keys()
    for (name, i), bits in contexts.items():
        want = expected["digits_cnn" if name.startswith("digits_cnn") else name][i].view(np.uint32)
        assert np.array_equal(bits, want), (name, i)
        assert np.array_equal(one_call[name, i], bits), (name, i)


def test_context_firmware_links_no_static_arena(firmware):
    """Only the caller's arena: the models' own static arenas are dropped by --gc-sections when unused."""
    project, _ = firmware
    symbols = {}
    for env_name in ("ctx", "one_call"):
        nm = subprocess.run(["arm-none-eabi-nm", "-S", str(project / ".pio" / "build" / env_name / "firmware.elf")],
                            capture_output=True, text=True, check=True).stdout
        symbols[env_name] = {line.split()[-1]: int(line.split()[1], 16) for line in nm.splitlines()
                             if len(line.split()) == 4}
    assert "static_arena" not in symbols["ctx"] and "shared" in symbols["ctx"]
    assert sum(size for s, size in symbols["one_call"].items() if s == "static_arena") > 0
