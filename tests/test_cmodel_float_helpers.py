"""The generated float boundary helpers (NAME_quantize_input, NAME_dequantize_output and their per-port versions,
runtime_c/edgec_nn.h edgec_quantize_f32) against the host reference (edgec/fixedpoint/scheme.py): compiled for
the host, every int8 byte and every float bit identical, exact ties (x / scale = k + 0.5, rounded to the even k)
and clamped values included."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import hostcc
from conftest import EXAMPLES, SANITIZE, WARN, host_compiler, library_sources
from edgec import api, ports
from edgec.codegen import cmodel
from edgec.fixedpoint import scheme
from edgec.quant import reference

DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "%(name)s.h"
int main(void)
{
    static float x[%(n_in)d], y[%(n_out)d];
    if (%(name)s_init() != 0) return 2;
    while (fread(x, sizeof(float), %(n_in)d, stdin) == %(n_in)d) {
%(quantize)s
%(copy_in)s
        if (%(name)s_invoke() != 0) return 4;
%(dequantize)s
        fwrite(y, sizeof(float), %(n_out)d, stdout);
    }
    return 0;
}
"""


def ties(scale: float, lo: int = -300, hi: int = 300) -> np.ndarray:
    """Float32 inputs x with x / float32(scale) exactly k + 0.5 in float32 (the rounding's ties), for k in [lo, hi)."""
    s = np.float32(scale)
    found = []
    for k in range(lo, hi):
        v = np.float32(k + 0.5)
        x = np.float32(v * s)
        for c in (x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))):
            if np.float32(c / s) == v:
                found.append(c)
                break
    return np.array(found, np.float32)


def build_and_run(graph, plan, tmp_path, x: np.ndarray, cc="gcc", flags=("-O2",)):
    name = graph.name
    cmodel.generate(graph, plan, tmp_path, name)
    ins, outs = ports.inputs(graph), ports.outputs(graph)
    multi = ports.multi(graph)
    n_in, n_out = ports.packed_size(ins), ports.packed_size(outs)
    q_total = n_in
    if multi:
        quantize = "\n".join(f"        {name}_quantize_input_{p.c_name}(x + {p.start});" for p in ins)
        copy_in = "\n".join(f"        fwrite({name}_input_{p.c_name}(), 1, {p.size}, stderr);" for p in ins)
        dequantize = "\n".join(f"        {name}_dequantize_output_{p.c_name}(y + {p.start});" for p in outs)
    else:
        quantize = f"        {name}_quantize_input(x);"
        copy_in = f"        fwrite({name}_input(), 1, {q_total}, stderr);"
        dequantize = f"        {name}_dequantize_output(y);"
    (tmp_path / "driver_main.c").write_text(DRIVER % dict(name=name, n_in=n_in, n_out=n_out, quantize=quantize,
                                                          copy_in=copy_in, dequantize=dequantize))
    exe = tmp_path / f"driver_{cc}"
    hostcc.build(library_sources(tmp_path), tmp_path, exe, host_compiler(cc), [*WARN, *flags, "-I", str(tmp_path)])
    proc = subprocess.run([str(exe)], input=np.ascontiguousarray(x, np.float32).tobytes(), capture_output=True)
    assert proc.returncode == 0, proc.returncode
    q = np.frombuffer(proc.stderr, np.int8).reshape(len(x), q_total)
    y = np.frombuffer(proc.stdout, np.float32).reshape(len(x), n_out)
    return q, y


def host(graph, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = ports.quantize_inputs(graph, x).reshape(len(x), -1)
    out = np.stack([np.asarray(reference.run(graph, s)).reshape(-1) for s in q])
    return q, np.asarray(ports.dequantize_outputs(graph, out), np.float32).reshape(len(x), -1)


def with_ties(graph, x: np.ndarray) -> np.ndarray:
    """x (N, packed) with rows whose every value is an exact tie of its input's scale, then rows far outside
    the int8 range (clamped) and signed zeros."""
    rows = [x]
    for p in ports.inputs(graph):
        t = ties(graph.tensors[p.tensor].scale)
        block = np.resize(t, (int(np.ceil(len(t) / p.size)), p.size))
        filled = np.resize(x[:1], (len(block), x.shape[1])).copy()
        filled[:, p.start:p.start + p.size] = block
        rows.append(filled)
    extreme = np.resize(np.array([1e30, -1e30, 0.0, -0.0, 3e5, -3e5], np.float32), x[:1].shape)
    rows.append(extreme)
    return np.concatenate(rows).astype(np.float32)


@pytest.mark.parametrize("example", ["cancer_conv1d", "diabetes_multitask"])
def test_device_quantization_is_bit_identical_to_the_host_ties_included(example, tmp_path):
    _, graph, plan = api.compile_model(EXAMPLES / example / "model.onnx", EXAMPLES / example / "calib.npz")
    data = ports.load_data(EXAMPLES / example / "test.npz", graph, limit=16, labels=False)
    x = with_ties(graph, data.x.reshape(len(data.x), -1))
    # the ties are real and would be rounded otherwise by C's lroundf (half away from zero) on odd k
    for p in ports.inputs(graph):
        v = x[:, p.start:p.start + p.size] / np.float32(graph.tensors[p.tensor].scale)
        tie = (v - np.floor(v)) == 0.5
        assert tie.sum() >= 100 and np.any(tie & (np.floor(v) % 2 == 0)) and np.any(tie & (np.floor(v) % 2 == 1))
    want_q, want_y = host(graph, x)
    for cc, flags in (("gcc", ("-O2",)), ("clang", SANITIZE)):
        q, y = build_and_run(graph, plan, tmp_path / cc, x, cc=cc, flags=flags)
        assert np.array_equal(q, want_q), f"{cc}: rows {np.flatnonzero(np.any(q != want_q, axis=1))[:10]} differ"
        assert np.array_equal(y.view(np.uint32), want_y.view(np.uint32)), f"{cc}: dequantized outputs differ"


def test_host_rule_rounds_ties_to_even():
    """The rule itself, on the host: a tie k + 0.5 goes to the even neighbour (NumPy's round), as edgec_quantize_f32 does."""
    class T:
        scale, zero_point, dtype = 0.5, 0, "int8"
    q = scheme.quantize_input(T, np.array([0.25, 0.75, -0.25, -0.75, 1.25], np.float32))
    assert q.tolist() == [0, 2, 0, -2, 2]
