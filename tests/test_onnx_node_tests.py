"""ONNX's own node test cases through edgec: float semantics, INT8 tolerance, generated C bit-exact.

The fast subset covers every extended canonical op kind; the sweep test (`scripts/test.sh -m sweep`) runs every
case and
requires each case output recorded as passing in tests/conformance_expected.json (written by
scripts/conformance.py together with docs/conformance.md) to still pass. A recorded case or output that the
installed onnx no longer defines, or that did not run, fails (fast check and slow run alike).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import hostcc
from conftest import WARN
from edgec import cheader
import onnx_node_tests as C

EXPECTED = set(json.loads((Path(__file__).parent / "conformance_expected.json").read_text()))
FAST = """test_sigmoid test_leakyrelu test_prelu_broadcast test_add_bcast test_mul_bcast test_div_bcast
test_max_example test_concat_2d_axis_1 test_slice test_constant_pad_negative_axes test_gather_0
test_depthtospace_crd_mode_example test_spacetodepth_example test_resize_upsample_scales_nearest
test_resize_upsample_scales_linear test_convtranspose test_averagepool_2d_pads_count_include_pad
test_argmax_keepdims_example test_reduce_sum_keepdims_example test_logsoftmax_axis_1 test_softmax_axis_0
test_matmul_3d test_gemm_transposeA test_split_equal_parts_1d_opset18 test_tile test_expand_dim_changed
test_reduce_mean_keepdims_example test_gelu_default_1 test_hardswish test_batchnorm_example
test_conv_with_strides_and_asymmetric_padding test_maxpool_2d_ceil test_mean_example test_swish
test_layer_normalization_3d_axis1_epsilon test_rms_normalization_2d_axis1 test_center_crop_pad_crop""".split()


@pytest.fixture(scope="module")
def cases():
    return {c.name: c for c in C.node_cases(skip_exports=C.SLOW_REFUSED_EXPORTS)}


@pytest.fixture(scope="module")
def objs(tmp_path_factory):
    """The runtime's objects, the ones every other gcc -O2 test links (tests/hostcc.py)."""
    runtime = cheader.runtime_dir()
    sources = [runtime / f for f in cheader.runtime_files() if f.endswith(".c")]
    return hostcc.objects(sources, runtime, "gcc", [*WARN, "-O2", f"-I{runtime}"], tmp_path_factory.mktemp("obj"))


def test_fast_subset_is_recorded_as_passing():
    names = {e.split("/")[0] for e in EXPECTED}
    assert set(FAST) <= names, sorted(set(FAST) - names)


def test_every_recorded_case_is_still_defined(cases):
    """After an onnx upgrade a recorded case (or one of its outputs) may be gone: that is a failure, not a
    case that silently stops running."""
    gone = sorted(e for e in EXPECTED if e.split("/")[0] not in cases)
    assert not gone, f"{len(gone)} recorded cases the installed onnx no longer defines: {gone[:20]}"
    outputs = {name: {o.name for o in c.model.graph.output} for name, c in cases.items()}
    lost = sorted(e for e in EXPECTED if e.split("/", 1)[1] not in outputs[e.split("/")[0]])
    assert not lost, f"recorded case outputs no longer defined: {lost[:20]}"


def _recorded(name):
    return {e for e in EXPECTED if e.split("/")[0] == name}


@pytest.mark.parametrize("name", FAST)
def test_case(name, cases, objs, tmp_path):
    assert name in cases, f"{name} is not defined by the installed onnx"
    ran = set()
    for r in C.run_case(cases[name], tmp_path, objs):
        ran.add(f"{r.case}/{r.output}")
        if f"{r.case}/{r.output}" in EXPECTED:
            assert r.float_ok and r.int8_ok and r.c_ok, r
            assert r.detail.get("int8_mask_wrong", 0) == 0
            assert r.detail.get("int8_max_err", 0) <= r.detail.get("tolerance", 0)
    assert _recorded(name) <= ran, f"recorded outputs that did not run: {sorted(_recorded(name) - ran)}"


@pytest.mark.parametrize("name", ["test_and_bcast4v3d", "test_xor2d", "test_not_2d", "test_greater"])
def test_bool_inputs_and_outputs_are_scored(name, cases, objs, tmp_path):
    """A bool output is scored (every element of the mask equal to ONNX's, float and INT8, the C bit-exact) and a
    case of bool inputs only gets them as 0 / 1 floats through a Cast to bool: And / Or / Xor / Not cases and the
    comparisons' masks were listed unscored."""
    for r in C.run_case(cases[name], tmp_path, objs):
        assert r.passed and r.c_ok and r.detail["int8_mask_wrong"] == 0, r


def test_unsupported_case_gives_a_reason(cases):
    (r,) = C.run_case(cases["test_maxpool_2d_dilations"])
    assert not r.passed and "dilated pooling" in r.reason


@pytest.mark.sweep      # 3-4 minutes: the fast subset above covers every extended op kind in the default run
def test_every_recorded_case_still_passes(cases, objs, tmp_path):
    failed, ran = [], set()
    for r in C.run_cases(cases.values(), tmp_path / "c", objs):
        ran.add(f"{r.case}/{r.output}")
        if f"{r.case}/{r.output}" in EXPECTED and not r.passed:
            failed.append(f"{r.case}/{r.output}: {r.reason}")
    assert not failed, failed[:20]
    assert EXPECTED <= ran, f"recorded case outputs that did not run: {sorted(EXPECTED - ran)[:20]}"
