"""The Helium (MVE) kernels (runtime_c/fast/edgec_*_mve.c, their records beside the fast kernels they replace in
edgec/ops/, chosen by edgec/ops/select.py on a Helium board) bit for bit with the NumPy reference on the emulated
Cortex-M55 (QEMU mps3-an547): one firmware of random layers covering their paths, benchmarked on random inputs: a
3-channel first convolution whose taps are not a multiple of 16, a 3x3 one on 16 channels (kernel rows read in
place, border rows built, a short last block of pixels), one at stride 2 with 6 outputs (channels padded to 8,
requantized in C), a 1x1 one reading the input pixel directly (24 channels: reading into the next pixel) and
through the tap copy (its last pixels), a 1x1 one on 16 channels (taps in place, 3 pixels across output rows) with
an odd number of outputs, a 1x1 one on 256 channels (the whole chain of 16 blocks a run) and a 3x3 one on 36
channels (324 taps: 21 blocks, past the chain: the counted loop), depthwise 3x3 at stride 1 (an odd number of
output rows: the last step has one) and 2 with padding on every side, on long rows and short ones, a clamped
activation range, short last blocks of pixels and of rows, fully connected layers of 256 and 16 inputs, global
average pooling and adds. The four MLPerf Tiny models on the same board: benchmarks/latency.py --boards
qemu-cortex-m55."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import make_model, save
from edgec import api
from edgec.bench.report import summary_lines
from edgec.lower.lowering import has_mve
from edgec.ops.conv.im2col import rq_vectors
from edgec.targets.boards import load_board


def random_layers():
    rng = np.random.default_rng(15)
    w = {"w1": rng.normal(0, .3, (16, 3, 3, 3)), "w2": rng.normal(0, .4, (16, 1, 3, 3)),
         "w3": rng.normal(0, .15, (24, 16, 3, 3)), "w4": rng.normal(0, .4, (24, 1, 3, 3)),
         "w5": rng.normal(0, .3, (16, 24, 1, 1)), "w6": rng.normal(0, .4, (16, 1, 3, 3)),
         "wf": rng.normal(0, .2, (16 * 2 * 8, 7)),
         "wg": rng.normal(0, .5, (16, 7)), "w7": rng.normal(0, .02, (5, 16, 1, 1)), "wh": rng.normal(0, .5, (5, 7)),
         "b7": np.linspace(-10, 10, 5),   # channel means as far apart as the values: the pool keeps its input's scale
         "w8": rng.normal(0, .15, (6, 16, 3, 3)), "w9": rng.normal(0, .5, (6, 7)),
         "wu": rng.normal(0, .3, (36, 16, 1, 1)), "wv": rng.normal(0, .06, (8, 36, 3, 3)),
         "wv2": rng.normal(0, .5, (8, 7)),
         "wt": rng.normal(0, .3, (256, 16, 1, 1)), "wt2": rng.normal(0, .05, (8, 256, 1, 1)),
         "wt3": rng.normal(0, .5, (8, 7))}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),                 # 27 taps
             helper.make_node("Relu", ["a"], ["b"]),                                          # clamped range
             helper.make_node("Conv", ["b", "w2"], ["c"], group=16, pads=[1, 1, 1, 1]),      # depthwise s1: 34 wide
             helper.make_node("Conv", ["c", "w3"], ["d"], pads=[1, 1, 1, 1]),                 # 3x3 on 16: 48-byte rows
             helper.make_node("Conv", ["d", "w4"], ["e"], group=24, strides=[2, 2], pads=[1, 0, 1, 1]),  # 17 wide
             helper.make_node("Conv", ["e", "w5"], ["e5"]),                                   # 1x1 on 24: 32 bytes read
             helper.make_node("Conv", ["e5", "w6"], ["f"], group=16, strides=[2, 2], pads=[1, 0, 1, 1]),  # 8 wide
             helper.make_node("Flatten", ["f"], ["g"]),
             helper.make_node("MatMul", ["g", "wf"], ["h"]),                                  # 7 rows
             helper.make_node("GlobalAveragePool", ["f"], ["i"]),
             helper.make_node("Flatten", ["i"], ["j"]),
             helper.make_node("MatMul", ["j", "wg"], ["k"]),                                  # 16 inputs
             helper.make_node("Conv", ["e5", "w7", "b7"], ["l"]),                             # 16 -> 5 channels
             helper.make_node("GlobalAveragePool", ["l"], ["m"]),
             helper.make_node("Flatten", ["m"], ["n"]),
             helper.make_node("MatMul", ["n", "wh"], ["o"]),
             helper.make_node("Add", ["h", "k"], ["hk"]),
             helper.make_node("Conv", ["c", "w8"], ["p"], strides=[2, 2], pads=[1, 1, 1, 1]),  # rows in place, s2
             helper.make_node("GlobalAveragePool", ["p"], ["q"]),
             helper.make_node("Flatten", ["q"], ["r"]),
             helper.make_node("MatMul", ["r", "w9"], ["s"]),
             helper.make_node("Add", ["hk", "o"], ["ho"]),
             helper.make_node("Conv", ["e5", "wu"], ["u"]),                                   # 16 -> 36 channels
             helper.make_node("Conv", ["u", "wv"], ["v"], pads=[1, 1, 1, 1]),                  # 324 taps: 21 blocks
             helper.make_node("GlobalAveragePool", ["v"], ["v1"]),
             helper.make_node("Flatten", ["v1"], ["v2"]),
             helper.make_node("MatMul", ["v2", "wv2"], ["vv"]),
             helper.make_node("Conv", ["e5", "wt"], ["t"]),                                   # 16 -> 256 channels
             helper.make_node("Conv", ["t", "wt2"], ["t2"]),                                  # 1x1 on 256: 16 blocks
             helper.make_node("GlobalAveragePool", ["t2"], ["t3"]),
             helper.make_node("Flatten", ["t3"], ["t4"]),
             helper.make_node("MatMul", ["t4", "wt3"], ["tt"]),
             helper.make_node("Add", ["ho", "s"], ["hs"]),
             helper.make_node("Add", ["hs", "vv"], ["hv"]),
             helper.make_node("Add", ["hv", "tt"], ["y"])]
    inits = {k: v.astype(np.float32) for k, v in w.items()}
    return make_model(nodes, ("x", [1, 3, 5, 34]), ("y", [1, 7]), inits)


@pytest.fixture(scope="module")
def m55_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("mve")
    model = save(random_layers(), d)
    rng = np.random.default_rng(1)
    np.savez(d / "calib.npz", x=rng.normal(0, 1, (32, 3, 5, 34)).astype(np.float32))
    np.savez(d / "test.npz", x=rng.normal(0, 1.2, (12, 3, 5, 34)).astype(np.float32))
    api.build(model, d / "calib.npz", "qemu-cortex-m55", d / "build")
    return d


def test_mve_kernels_bit_exact_on_emulated_m55(m55_build):
    code = (m55_build / "build" / "model" / f"{m55_build.name}.c").read_text()   # the model: named after its folder
    for kernel in ("edgec_conv2d_mve_s8(", "edgec_depthwise_conv2d_3x3_mve_s8(", "edgec_fully_connected_mve_s8(",
                   "edgec_avg_pool_global_mve_s8(", "edgec_add_lut_mve_s8("):
        assert kernel in code
    r = api.bench(m55_build / "build", m55_build / "test.npz")
    assert r["samples"] == 12 and r["agreement"]["device_vs_reference"] == 1.0
    assert r["latency"]["cycles_estimate"]["median"] > r["latency"]["median"] * 0.9     # the QEMU plugin's estimate
    assert any(line.startswith("cycle estimate: median") for line in summary_lines(r))


def test_only_helium_boards_lower_onto_mve():
    assert has_mve(load_board("qemu-cortex-m55"))
    assert not any(has_mve(load_board(b)) for b in ("qemu-cortex-m4", "qemu-cortex-m7", "host"))


def test_rq_vectors_group_four_channels_per_field():
    rq = np.arange(6 * 5, dtype=np.int32).reshape(6, 5)           # records of 6 channels
    v = rq_vectors(rq).reshape(-1)
    assert v.size == 2 * 20
    assert list(v[:4]) == list(rq[:4, 0]) and list(v[4:8]) == list(rq[:4, 1])    # biases, then multipliers
    assert list(v[20:22]) == list(rq[4:, 0]) and list(v[22:24]) == [0, 0]         # the missing channels: 0
    assert list(v[16:20]) == list(-rq[:4, 4])                                        # shifts negated


@pytest.mark.sweep
def test_depthwise_mve_far_rows_bit_exact(tmp_path):
    """A depthwise 3x3 whose input rows are too far apart for the strip's 16-bit gather offsets (3 rows of 1,400
    pixels of 16 channels: 22,400 bytes a row): the byte-by-byte strip path, bit-exact on the emulated M55."""
    rng = np.random.default_rng(4)
    shape = [1, 16, 3, 1400]
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], group=16, pads=[1, 1, 1, 1])]
    weights = {"w": rng.normal(0, .4, (16, 1, 3, 3)).astype(np.float32)}
    model = save(make_model(nodes, ("x", shape), ("y", shape), weights), tmp_path)
    np.savez(tmp_path / "calib.npz", x=rng.normal(0, 1, [8] + shape[1:]).astype(np.float32))
    np.savez(tmp_path / "test.npz", x=rng.normal(0, 1.2, [2] + shape[1:]).astype(np.float32))
    api.build(model, tmp_path / "calib.npz", "qemu-cortex-m55", tmp_path / "build")
    code = (tmp_path / "build" / "model" / f"{tmp_path.name}.c").read_text()
    assert "edgec_depthwise_conv2d_3x3_mve_s8(" in code
    r = api.bench(tmp_path / "build", tmp_path / "test.npz")
    assert r["samples"] == 2 and r["agreement"]["device_vs_reference"] == 1.0
