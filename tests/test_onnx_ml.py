"""edgec/frontend/onnx_ml.py: scikit-learn linear classifiers as skl2onnx 1.20 exports them with zipmap=False
(tests/data/make_sklearn_heads.py): Scaler, LinearClassifier (SOFTMAX, binary LOGISTIC, LinearSVC's NONE scores),
Normalizer and an MLPClassifier's label (ArrayFeatureExtractor of its class list) written in ONNX operators. They
were refused ("operator of the custom domain 'ai.onnx.ml'")."""
from __future__ import annotations

from pathlib import Path

import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import hostcc
from conftest import WARN, host_compiler, library_sources
from edgec import api, ports
from edgec.codegen import cmodel
from edgec.errors import EdgecError
from edgec.frontend import loader, onnx_ml
from edgec.plan import planner
from edgec.quant import reference

DATA = Path(__file__).resolve().parent / "data"
MODELS = ["skl_logreg_multi", "skl_logreg_binary", "skl_linear_svc", "skl_mlp_pipeline"]


def _data():
    d = np.load(DATA / "skl_heads_data.npz")
    return d["calib"], d["test"]


def _ort(model: onnx.ModelProto, x) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    runs = [sess.run(None, {model.graph.input[0].name: xi[None]}) for xi in x]
    return [np.concatenate(v) for v in zip(*runs)]


@pytest.mark.parametrize("name", MODELS)
def test_the_lowering_is_onnx_runtimes_ml_operators(name):
    """The rewrite computes ONNX Runtime's ai.onnx.ml kernels: the same labels, the same probabilities / scores."""
    _, x = _data()
    model = onnx.load(str(DATA / f"{name}.onnx"))
    assert any(n.domain == onnx_ml.ML for n in model.graph.node)
    want = _ort(model, x)
    low = onnx_ml.lower(onnx.ModelProto.FromString(model.SerializeToString()))
    assert not any(n.domain == onnx_ml.ML for n in low.graph.node)
    got = _ort(low, x)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    assert len(np.unique(want[0])) > 1


@pytest.mark.parametrize("name", MODELS)
def test_classifier_heads_build_and_the_c_is_bit_exact(name, tmp_path):
    """INT8: the label output (the class index) is ONNX Runtime's float label but near a tie of two scores (within
    two steps of the scores' int8 grid), the probabilities / scores within 25 dB of its float ones; the generated C
    equals the reference on both outputs."""
    calib, x = _data()
    model = onnx.load(str(DATA / f"{name}.onnx"))
    label, scores = _ort(model, x)
    graph = api.calibrate(DATA / f"{name}.onnx", calib).graph
    got = np.stack([np.asarray(api.reference(graph, xi[None]).y, np.float64).reshape(-1) for xi in x])
    got_label, got_scores = got[:, 0], got[:, 1:]
    sqnr = 10 * np.log10(np.sum(scores.astype(np.float64) ** 2) / np.sum((scores - got_scores) ** 2))
    agree = float(np.mean(got_label == label))
    print(f"{name}: labels equal to ONNX Runtime's {agree:.3f}, scores {sqnr:.1f} dB")
    step = (scores.max() - scores.min()) / 255
    rows = np.arange(len(x))
    assert np.all(scores[rows, got_label.astype(int)] >= scores.max(1) - 2 * step)
    assert sqnr > 25 and agree >= 0.75
    _check_c(graph, x, tmp_path, len(scores[0]))


DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include "%(name)s.h"
int main(void)
{
    for (;;) {
        size_t got = fread(%(name)s_input(), 1, %(NAME)s_INPUT_BYTES, stdin);
        if (got == 0) return 0;
        if (got != %(NAME)s_INPUT_BYTES) return 3;
        if (%(name)s_invoke() != 0) return 4;
        fwrite(%(name)s_output_label(), 1, 1, stdout);
        fwrite(%(name)s_output_probabilities(), 1, %(classes)d, stdout);
    }
}
"""


def _check_c(graph, x, tmp_path, classes: int) -> None:
    """The model library on the host: both outputs equal the reference's."""
    cmodel.generate(graph, planner.plan(graph), tmp_path, graph.name)
    (tmp_path / "driver_main.c").write_text(DRIVER % {"name": graph.name, "NAME": graph.name.upper(),
                                                      "classes": classes})
    exe = tmp_path / "driver"
    hostcc.build(library_sources(tmp_path), tmp_path, exe, host_compiler("gcc"), [*WARN, "-O2", "-I", str(tmp_path)])
    xq = ports.quantize_inputs(graph, x)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    proc = subprocess.run([str(exe)], input=np.ascontiguousarray(xq, np.int8).tobytes(), capture_output=True)
    assert proc.returncode == 0 and proc.stderr == b""
    np.testing.assert_array_equal(np.frombuffer(proc.stdout, np.int8).reshape(want.shape), want)


@pytest.mark.parametrize("name, part", [
    ("skl_logreg_strings", "node 'LinearClassifier' (LinearClassifier, ai.onnx.ml): string class labels are not "
                           "supported"),
    ("skl_logreg_zipmap", "node 'ZipMap' (ZipMap, ai.onnx.ml): a ZipMap (the probabilities as a list of maps) is "
                          "not a tensor; export with skl2onnx's options={id(model): {'zipmap': False}}")])
def test_what_cannot_be_lowered_is_refused_in_one_line(name, part):
    with pytest.raises(EdgecError) as err:
        loader.prepare(onnx.load(str(DATA / f"{name}.onnx")), f"{name}.onnx")
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{name}.onnx: ") and part in line, line


@pytest.mark.sweep        # ~1 min each: a firmware built and run on qemu-cortex-m4
@pytest.mark.parametrize("name", ["skl_logreg_multi", "skl_mlp_pipeline"])
def test_classifier_heads_on_cortex_m4_equal_their_reference(name, tmp_path):
    """`edgec build --calib --board qemu-cortex-m4` and `edgec bench`: the device equals the reference on every
    sample, both outputs."""
    from conftest import bench_report

    calib, x = _data()
    r = bench_report(DATA / f"{name}.onnx", calib, x, tmp_path)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == len(x)
