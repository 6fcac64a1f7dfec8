"""TFLite_Detection_PostProcess (edgec/ops/detection.py, runtime_c/edgec_detection.c) against TFLite Micro's own
kernel: random single-operator .tflite files (two int8 inputs, their DEQUANTIZE, the custom operator with its
flexbuffer options; tests/tflite_oracle.py writes them) run by TFLM's Python interpreter, by the NumPy twin and by
the C kernel, compared bit for bit: random cases, ties in the scores, every box overlapping every other, no box
over the score threshold, max_detections reached, fast and regular NMS."""
from __future__ import annotations

import ctypes
import importlib.util
import os

import numpy as np
import pytest
from flatbuffers import flexbuffers

import tflite_oracle
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference

from ckernels import make, ptr
from edgec import cheader
from edgec.ops import detection

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

F32 = 0
MODES = ("random", "ties", "overlap", "none", "max")


def detection_case(rng, mode: str, regular: bool, quantized_anchors: bool = False):
    """(model fields, params, int8 boxes, int8 scores, anchors, fparams, options) of one random case."""
    from tflite_oracle import Case, Node, T

    nb = int(rng.integers(1, 40)) if mode != "max" else int(rng.integers(20, 60))
    nc = int(rng.integers(1, 7))
    cb = nc + int(rng.integers(0, 2))
    bs = 4 if rng.random() < 0.8 else int(rng.integers(5, 9))
    d = int(rng.integers(1, 12)) if mode != "max" else int(rng.integers(1, 6))
    per_class = None if rng.random() < 0.3 else int(rng.integers(1, 8))
    box_scale, box_zp = float(np.float32(10 ** rng.uniform(-2, -0.5))), int(rng.integers(-128, 128))
    if rng.random() < 0.5:
        score_scale, score_zp = 1 / 256, -128                 # a LOGISTIC's output
    else:
        score_scale, score_zp = float(np.float32(10 ** rng.uniform(-3, -1))), int(rng.integers(-128, 128))
    anchors = np.stack([rng.uniform(0, 1, nb), rng.uniform(0, 1, nb), rng.uniform(0.02, 0.6, nb),
                        rng.uniform(0.02, 0.6, nb)], 1).astype(np.float32)
    if mode == "max":                                   # a grid of small anchors: little overlap, many kept
        anchors[:, 2:] = np.float32(0.01)
        anchors[:, 0] = np.float32(np.arange(nb) / nb)
    boxes = rng.integers(-128, 128, (1, nb, bs)).astype(np.int8)
    scores = rng.integers(-128, 128, (1, nb, cb)).astype(np.int8)
    threshold = float(rng.uniform(0.0, 0.8)) * float((127 - score_zp) * score_scale)
    if mode == "ties":
        scores = rng.choice(rng.integers(-128, 128, 3), (1, nb, cb)).astype(np.int8)
    elif mode == "overlap":                             # one anchor, one encoding: every box the same
        anchors[:] = anchors[0]
        boxes[:] = boxes[0, 0]
    elif mode == "none":
        threshold = float((127 - score_zp) * score_scale) * 1.01 + 1e-3
    elif mode == "max":
        threshold = float((-128 - score_zp) * score_scale) - 1e-3
    options = dict(max_detections=d, max_classes_per_detection=1, nms_score_threshold=threshold,
                   nms_iou_threshold=float(rng.uniform(0.05, 1.0)), num_classes=nc,
                   y_scale=float(rng.choice([10.0, 1.0, 7.5])), x_scale=float(rng.choice([10.0, 1.0, 3.0])),
                   h_scale=float(rng.choice([5.0, 1.0, 2.5])), w_scale=float(rng.choice([5.0, 1.0, 4.0])),
                   use_regular_nms=regular)
    if per_class is not None:
        options["detections_per_class"] = per_class
    tensors = [T((1, nb, bs), [box_scale], [box_zp]), T((1, nb, cb), [score_scale], [score_zp]),
               T((1, nb, bs), [], [], F32), T((1, nb, cb), [], [], F32), T((nb, 4), [], [], F32, anchors),
               T((1, d, 4), [], [], F32), T((1, d), [], [], F32), T((1, d), [], [], F32), T((1,), [], [], F32)]
    nodes = [Node("DEQUANTIZE", [0], 2), Node("DEQUANTIZE", [1], 3),
             Node(f"CUSTOM:{detection.CUSTOM_CODE}", [2, 3, 4], [5, 6, 7, 8], custom=flexbuffers.Dumps(options))]
    if quantized_anchors:        # int8 anchors and their DEQUANTIZE (TFLM runs it; edgec at build time)
        scale, zp = float(np.float32(1 / 200)), int(rng.integers(-20, 20))
        q = np.clip(np.round(anchors / scale) + zp, -128, 127).astype(np.int8)
        anchors = (q.astype(np.int32) - zp).astype(np.float32) * np.float32(scale)
        tensors[4] = T((nb, 4), [], [], F32)
        tensors.append(T((nb, 4), [scale], [zp], 9, q))
        nodes.insert(0, Node("DEQUANTIZE", [9], 4))
    case = Case(f"det_{mode}_{'regular' if regular else 'fast'}", tensors, nodes, [0, 1], [5, 6, 7, 8])
    p = dict(num_boxes=nb, box_stride=bs, num_classes=nc, score_stride=cb, max_detections=d,
             max_classes_per_detection=1, detections_per_class=per_class or detection.DETECTIONS_PER_CLASS,
             regular_nms=int(regular), box_zp=box_zp, score_zp=score_zp)
    f = lambda v: np.float32(v)                                              # noqa: E731 (flexbuffers: doubles)
    fparams = np.array([box_scale, score_scale, f(threshold), f(options["nms_iou_threshold"]), options["y_scale"],
                        options["x_scale"], options["h_scale"], options["w_scale"]], np.float32)
    return case, p, boxes, scores, anchors, fparams


def tflm_run(case, boxes, scores) -> np.ndarray | None:
    """TFLM's four outputs packed; None where its Invoke fails (an empty decoded box)."""
    from tflite_oracle import tflm, write

    try:
        return tflm(write(case), [boxes[None], scores[None]])[0].astype(np.float32)
    except RuntimeError:
        return None


def c_run(ck, p, boxes, scores, anchors, fparams) -> tuple[int, np.ndarray]:
    scratch = np.zeros(cheader.buffer_size("edgec_detection_postprocess_s8", p) + 16, np.uint8)
    out = np.full(6 * p["max_detections"] + 1, np.nan, np.float32)
    status = ck.lib.edgec_detection_postprocess_s8(ctypes.byref(make("edgec_detection_postprocess_params", p)),
                                                   ptr(boxes), ptr(scores), ptr(anchors), ptr(fparams),
                                                   ptr(scratch), ptr(out))
    return status, out


def comparable(out: np.ndarray, d: int, regular: bool) -> np.ndarray:
    """What TFLM defines: every output in regular NMS; in fast NMS the rows up to the count (TFLM leaves the
    others as the arena held them)."""
    if regular:
        return out
    n = int(out[6 * d])
    return np.concatenate([out[:4 * n], out[4 * d:4 * d + n], out[5 * d:5 * d + n], out[6 * d:]])


@pytest.mark.parametrize("regular", [False, True], ids=["fast_nms", "regular_nms"])
@pytest.mark.parametrize("mode", MODES)
def test_twin_and_c_match_tflm(ck, mode, regular):
    rng = np.random.default_rng(MODES.index(mode) * 2 + regular)
    compared = counts = 0
    for _ in range(40):
        case, p, boxes, scores, anchors, fparams = detection_case(rng, mode, regular)
        want = tflm_run(case, boxes, scores)
        status, got_c = c_run(ck, p, boxes, scores, anchors, fparams)
        if want is None:                     # TFLM refuses an empty decoded box: so do the twin and the C
            with pytest.raises(detection.InvalidBoxes):
                detection.detection_postprocess(p, boxes, scores, anchors, fparams)
            assert status == -1
            continue
        got = detection.detection_postprocess(p, boxes, scores, anchors, fparams)
        d = p["max_detections"]
        assert status == 0
        np.testing.assert_array_equal(got_c.view(np.uint32), got.view(np.uint32))     # C == twin, every bit
        np.testing.assert_array_equal(comparable(got, d, regular).view(np.uint32),
                                      comparable(want, d, regular).view(np.uint32))
        compared += 1
        counts += int(got[6 * d])
    assert compared >= 30
    if mode == "none":
        assert counts == 0
    else:
        assert counts > 0


def test_imported_models_reference_and_host_c_match_tflm(tmp_path):
    """The single-operator models through edgec's TFLite import: the NumPy reference of the graph and its
    generated C (compiled for the host, one program for all) against TFLM, bit for bit; half of them with int8
    anchors and their DEQUANTIZE."""
    rng = np.random.default_rng(11)
    graphs, xs, wants = [], [], []
    for i in range(40):
        mode, regular = MODES[i % len(MODES)], bool(i // len(MODES) % 2)
        case, p, boxes, scores, anchors, fparams = detection_case(rng, mode, regular, quantized_anchors=i % 4 >= 2)
        want = tflm_run(case, boxes, scores)
        if want is None:
            continue
        f = tmp_path / f"{case.name}_{i}.tflite"
        f.write_bytes(tflite_oracle.write(case))
        g = importer.load(f, f"{case.name}_{i}")
        x = np.concatenate([boxes.reshape(-1), scores.reshape(-1)])
        got = np.asarray(reference.run(g, x), np.float32).reshape(-1)
        d = p["max_detections"]
        np.testing.assert_array_equal(comparable(got, d, regular).view(np.uint32),
                                      comparable(want, d, regular).view(np.uint32))
        graphs.append(g)
        xs.append(x[None])
        wants.append((want, d, regular))
    assert len(graphs) >= 30
    for out, (want, d, regular) in zip(tflite_oracle.run_c(graphs, xs, tmp_path / "c", "reference"), wants):
        got = np.ascontiguousarray(out[0]).view(np.float32)
        np.testing.assert_array_equal(comparable(got, d, regular).view(np.uint32),
                                      comparable(want, d, regular).view(np.uint32))


def _refused(tmp_path, case) -> str:
    f = tmp_path / "refused.tflite"
    f.write_bytes(tflite_oracle.write(case))
    with pytest.raises(EdgecError) as err:
        importer.load(f, "refused")
    return str(err.value)


def test_what_tflm_cannot_run_is_refused_in_one_line(tmp_path):
    """Fast NMS with two classes a detection (TFLM writes those outside its outputs), a model that gives only
    some of the operator's outputs, a dequantized tensor another operator reads too, an IoU threshold of 0:
    refused in one line, naming what and what to do."""
    rng = np.random.default_rng(2)
    case = detection_case(rng, "random", False)[0]
    node = case.nodes[-1]
    options = flexbuffers.Loads(node.custom)
    node.custom = flexbuffers.Dumps({**options, "max_classes_per_detection": 2})
    msg = _refused(tmp_path, case)
    assert "max_classes_per_detection" in msg and "\n" not in msg
    case = detection_case(rng, "random", True)[0]
    case.output = [5, 7]
    msg = _refused(tmp_path, case)
    assert "all 4 outputs" in msg and "\n" not in msg
    case = detection_case(rng, "random", True)[0]          # a dequantized tensor read by another operator too
    case.tensors.append(tflite_oracle.T(case.tensors[3].shape, [], [], F32))
    case.nodes.append(tflite_oracle.Node("LOGISTIC", [3], 9))
    case.output = [5, 6, 7, 8, 9]
    msg = _refused(tmp_path, case)
    assert "LOGISTIC (operator #3: input 0 ('t3') is float32" in msg and "\n" not in msg   # no float LOGISTIC
    case = detection_case(rng, "random", True)[0]
    case.nodes[-1].custom = flexbuffers.Dumps({**flexbuffers.Loads(case.nodes[-1].custom), "nms_iou_threshold": 0.0})
    assert "nms_iou_threshold" in _refused(tmp_path, case)


def ssd_head_case(rng, regular: bool, h: int = 4, w: int = 4, c: int = 8, a: int = 3, nc: int = 3):
    """A small SSD-style head: an int8 image, a 3x3 conv giving 4 box encodings and a 1x1 conv giving nc + 1
    class logits per anchor (a anchors a pixel), each reshaped to [1, boxes, ...], the logits through LOGISTIC,
    both dequantized into TFLite_Detection_PostProcess; its four outputs the model's."""
    from tflite_oracle import Case, Node, T, _bias, _weights

    nb, d = h * w * a, 5
    xs, xz = 0.02, -3
    bw, bws = _weights(rng, (4 * a, 3, 3, c), 0, False)
    cw, cws = _weights(rng, ((nc + 1) * a, 1, 1, c), 0, False)
    gy, gx = np.meshgrid((np.arange(h) + 0.5) / h, (np.arange(w) + 0.5) / w, indexing="ij")
    sizes = np.array([[0.2, 0.2], [0.3, 0.15], [0.15, 0.3]], np.float32)[:a]
    anchors = np.array([[y, x, *s] for y, x in zip(gy.reshape(-1), gx.reshape(-1)) for s in sizes], np.float32)
    i32 = lambda v: np.array(v, np.int32)                                          # noqa: E731
    tensors = [T((1, h, w, c), [xs], [xz]),                                                         # 0 image
               T((4 * a, 3, 3, c), bws, [0] * len(bws), data=bw), T((4 * a,), [xs * s for s in bws],
                                                                    [0] * len(bws), 2, _bias(rng, 4 * a, False, bws)),
               T((1, h, w, 4 * a), [0.05], [2]),                                                     # 3 box conv
               T((3,), [1.0], [0], 2, i32([1, nb, 4])), T((1, nb, 4), [0.05], [2]),                  # 4, 5
               T((1, nb, 4), [], [], F32),                                                           # 6
               T(((nc + 1) * a, 1, 1, c), cws, [0] * len(cws), data=cw),                             # 7
               T(((nc + 1) * a,), [xs * s for s in cws], [0] * len(cws), 2, _bias(rng, (nc + 1) * a, False, cws)),
               T((1, h, w, (nc + 1) * a), [0.1], [0]),                                               # 9 logits
               T((3,), [1.0], [0], 2, i32([1, nb, nc + 1])), T((1, nb, nc + 1), [0.1], [0]),         # 10, 11
               T((1, nb, nc + 1), [1 / 256], [-128]), T((1, nb, nc + 1), [], [], F32),               # 12, 13
               T((nb, 4), [], [], F32, anchors),                                                     # 14
               T((1, d, 4), [], [], F32), T((1, d), [], [], F32), T((1, d), [], [], F32), T((1,), [], [], F32)]
    conv = ("Conv2DOptions", dict(Padding=0, StrideW=1, StrideH=1, FusedActivationFunction=0, DilationWFactor=1,
                                  DilationHFactor=1))
    options = dict(max_detections=d, max_classes_per_detection=1, detections_per_class=3, nms_score_threshold=0.3,
                   nms_iou_threshold=0.5, num_classes=nc, y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0,
                   use_regular_nms=regular)
    nodes = [Node("CONV_2D", [0, 1, 2], 3, conv), Node("RESHAPE", [3, 4], 5), Node("DEQUANTIZE", [5], 6),
             Node("CONV_2D", [0, 7, 8], 9, conv), Node("RESHAPE", [9, 10], 11), Node("LOGISTIC", [11], 12),
             Node("DEQUANTIZE", [12], 13),
             Node(f"CUSTOM:{detection.CUSTOM_CODE}", [6, 13, 14], [15, 16, 17, 18], custom=flexbuffers.Dumps(options))]
    return Case(f"ssd_head_{'regular' if regular else 'fast'}", tensors, nodes, 0, [15, 16, 17, 18]), d


@pytest.mark.parametrize("regular", [False, True], ids=["fast_nms", "regular_nms"])
def test_ssd_head_end_to_end_matches_tflm(tmp_path, regular):
    """A conv head and the post-processing, imported as one model (one input, its four outputs packed): the
    reference and the host-compiled generated C give TFLM's boxes, classes, scores and count bit for bit on
    random images."""
    rng = np.random.default_rng(21 + regular)
    case, d = ssd_head_case(rng, regular)
    f = tmp_path / f"{case.name}.tflite"
    f.write_bytes(tflite_oracle.write(case))
    x = rng.integers(-128, 128, (24, 1, 4, 4, 8)).astype(np.int8)
    want = tflite_oracle.tflm(f.read_bytes(), x).astype(np.float32)
    g = importer.load(f, case.name)
    assert g.output_onnx_shape == (1, 6 * d + 1) and not g.more_outputs
    got = np.stack([np.asarray(reference.run(g, xi), np.float32).reshape(-1) for xi in x])
    c_out = np.ascontiguousarray(tflite_oracle.run_c([g], [x.reshape(len(x), -1)], tmp_path / "c", "portable")[0])
    c_out = c_out.view(np.float32)
    assert int(want[:, -1].sum()) > 0
    for w, r, c in zip(want, got, c_out):
        bits = comparable(w, d, regular).view(np.uint32)
        np.testing.assert_array_equal(comparable(r, d, regular).view(np.uint32), bits)
        np.testing.assert_array_equal(comparable(c, d, regular).view(np.uint32), bits)


DETECTIONS_MAIN = r"""#include <stdio.h>
#include "%(name)s.h"
int main(void)
{
    %(name)s_detection found[%(NAME)s_MAX_DETECTIONS];
    uint32_t n;
    if (fread(%(name)s_input(), 1, %(NAME)s_INPUT_BYTES, stdin) != %(NAME)s_INPUT_BYTES) return 3;
    if (%(name)s_invoke() != 0) return 4;
    n = %(name)s_detections(found, %(NAME)s_MAX_DETECTIONS);
    fwrite(&n, sizeof n, 1, stdout);
    fwrite(found, sizeof found[0], n, stdout);
    return 0;
}
"""


def test_generated_detections_api_gives_the_structs(tmp_path):
    """NAME_detections() of the generated header (ASan and UBSan on): the count, then class, score and box of
    each detection, as the reference's packed outputs hold them."""
    import subprocess

    from edgec.codegen import cmodel
    from edgec.pipeline import schedule_and_plan

    rng = np.random.default_rng(5)
    case, d = ssd_head_case(rng, True)
    f = tmp_path / "ssd.tflite"
    f.write_bytes(tflite_oracle.write(case))
    g = importer.load(f, "ssd")
    sg, plan = schedule_and_plan(g)
    lib = tmp_path / "ssd"
    cmodel.generate(sg, plan, lib, "ssd")
    (lib / "main.c").write_text(DETECTIONS_MAIN % {"name": "ssd", "NAME": "SSD"})
    exe = tmp_path / "ssd.exe"
    sources = [str(p) for p in lib.rglob("*.c")]
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", f"-I{lib}", *sources, "-o", str(exe), "-lm"], check=True)
    rows = np.dtype([("cls", "<i4"), ("score", "<f4"), ("box", "<f4", 4)])
    seen = 0
    for x in rng.integers(-128, 128, (8, 1, 4, 4, 8)).astype(np.int8):
        out = subprocess.run([str(exe)], input=x.tobytes(), capture_output=True, check=True).stdout
        n = int(np.frombuffer(out[:4], np.uint32)[0])
        got = np.frombuffer(out[4:], rows)
        want = np.asarray(reference.run(g, x), np.float32).reshape(-1)
        assert n == int(want[6 * d]) and len(got) == n
        np.testing.assert_array_equal(got["cls"], want[4 * d:4 * d + n].astype(np.int32))
        np.testing.assert_array_equal(got["score"], want[5 * d:5 * d + n])
        np.testing.assert_array_equal(got["box"], want[:4 * n].reshape(n, 4))
        seen += n
    assert seen > 0


@pytest.mark.slow
@pytest.mark.parametrize("regular", [False, pytest.param(True, marks=pytest.mark.sweep)],
                         ids=["fast_nms", "regular_nms"])
def test_ssd_head_on_cortex_m4_matches_tflm(tmp_path, regular):
    """The SSD-style head built for the emulated Cortex-M4 (single-precision FPU; the decoding's double and exp
    in software) and run over the serial link: every device output equals the reference's and TFLM's, bit for
    bit; `edgec bench` reads them as boxes: every sample bit-exact with the reference and TFLM's interpreter."""
    import json

    from conftest import edgec
    from edgec import api
    from edgec.device.device import open_device
    from edgec.targets.build_folder import load_build

    rng = np.random.default_rng(31 + regular)
    case, d = ssd_head_case(rng, regular)
    f = tmp_path / "ssd_head.tflite"
    f.write_bytes(tflite_oracle.write(case))
    x = rng.integers(-128, 128, (12, 4, 4, 8)).astype(np.int8)
    want = tflite_oracle.tflm(f.read_bytes(), x[:, None]).astype(np.float32)
    out = tmp_path / "build"
    api.build(f, None, "qemu-cortex-m4", out)
    g = importer.load(f, "ssd_head")
    report, board, firmware = load_build(out)
    with open_device(board, firmware) as dev:
        dev.link.hello()
        for xi, w in zip(x, want):
            got = np.frombuffer(dev.link.run_checked(xi.tobytes())["output"], np.float32)
            ref = np.asarray(reference.run(g, xi), np.float32).reshape(-1)
            np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
            np.testing.assert_array_equal(comparable(got, d, regular).view(np.uint32),
                                          comparable(w, d, regular).view(np.uint32))
    assert int(want[:, -1].sum()) > 0
    data = tmp_path / "data.npz"
    np.savez(data, x=(x.astype(np.float32) + 3) * np.float32(0.02))
    proc = edgec("bench", out, "--data", data, "--json", "-", "--no-report")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["task"] == "detection" and r["agreement"]["device_vs_reference"] == 1.0
    assert r["tflite"]["reference_vs_interpreter"] == 1.0
    a = r["detection"]["agreement"]["device_vs_float"]
    assert a["matched"] == a["identical_boxes"] == int(want[:, -1].sum()) and a["missed"] == a["extra"] == 0


@pytest.mark.sweep
def test_thousand_cases_match_tflm(ck):
    """The long sweep: 1000 random cases of every mode, both NMS, a third with int8 anchors (TFLM dequantizes
    them at run time, edgec at build time), twin and C against TFLM bit for bit."""
    rng = np.random.default_rng(1000)
    agreed = 0
    for i in range(1000):
        mode, regular = MODES[i % len(MODES)], bool(rng.integers(0, 2))
        case, p, boxes, scores, anchors, fparams = detection_case(rng, mode, regular, quantized_anchors=i % 3 == 0)
        want = tflm_run(case, boxes, scores)
        status, got_c = c_run(ck, p, boxes, scores, anchors, fparams)
        if want is None:
            assert status == -1
            continue
        got = detection.detection_postprocess(p, boxes, scores, anchors, fparams)
        d = p["max_detections"]
        assert status == 0
        np.testing.assert_array_equal(got_c.view(np.uint32), got.view(np.uint32))
        np.testing.assert_array_equal(comparable(got, d, regular).view(np.uint32),
                                      comparable(want, d, regular).view(np.uint32))
        agreed += 1
    print(f"{agreed} of 1000 cases compared bit for bit, {1000 - agreed} refused by TFLM and by edgec alike")
    assert agreed >= 800
