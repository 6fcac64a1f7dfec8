"""Front-end fuzzing, a short budget (scripts/fuzz.py runs the long one): mutated real models and calibration
files either build or are refused with edgec's one-line error, never hang, never leave half-written output.
The cases are described in tests/fuzzcases.py; every case runs in a child process with a timeout."""
from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzcases import BASES, MUTATIONS, SMALL_BASES, Case, Worker, make_case

# Findings of earlier runs, kept as regression cases (each was a traceback before its fix). All must be refused.
REGRESSIONS = [
    "kws_dscnn_fp32/calib_flip/908776412",            # BadZipFile (bad CRC) while streaming the samples
    "digits_cnn/calib_flip/1061308341",
    "kws_dscnn_fp32/init_dtype/1752367035",           # initializer data that contradict its dims (reshape)
    "ad_fc_autoencoder_fp32/init_dtype/597361652",
    "cancer_conv1d/init_dtype/1601199298",
    "digits_cnn/init_shape/1069973051",               # Conv weights of the wrong rank (axes don't match)
    "ad_fc_autoencoder_fp32/rewire/1779329995",       # Gemm bias that cannot broadcast
    "kws_dscnn_fp32_nchw/attr/1035900360",            # onnxruntime fails on a negative group
    "ic_resnet8_fp32_nchw/nonfinite_weights/1060139139",
    "digits_cnn/calib_huge/317747865",                # multiplier above 2^30 (quantize_multiplier ValueError)
    "digits_cnn/calib_huge/494749986",
    "vww_mobilenetv1_025_fp32_nchw/flip_bytes/126122755",  # a name that is not UTF-8 (bytes in the JSON)
    "kws_dscnn_fp32/rewire/1136211447",               # a Conv bias computed at run time (KeyError)
    "vww_mobilenetv1_025_fp32_nchw/rewire/1874845761",
    "cancer_conv1d/calib_flip/1576689577",            # an npy header that is not a Python literal (TokenError)
    "digits_cnn/rewire/1944770917",                   # Clip bounds that are not scalars (TypeError)
]


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("fuzz"), timeout=60)
    yield w
    w.close()


CASES = st.builds(Case, st.sampled_from(SMALL_BASES), st.sampled_from(MUTATIONS), st.integers(0, 2**31 - 1))
HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=HEALTH)
@given(CASES)
def test_mutated_models_and_data_build_or_are_refused_cleanly(worker, case):
    outcome = worker.run(case)
    assert outcome.kind in ("built", "refused"), f"{case}: {outcome}"


@pytest.mark.sweep
@settings(max_examples=500, deadline=None, database=None, suppress_health_check=HEALTH)
@given(CASES)
def test_many_random_mutations_build_or_are_refused_cleanly(worker, case):
    """The default run's 60 fixed cases, and 500 fresh ones each sweep."""
    outcome = worker.run(case)
    assert outcome.kind in ("built", "refused"), f"{case}: {outcome}"


@pytest.mark.parametrize("case", REGRESSIONS)
def test_earlier_findings_are_refused(worker, case):
    if Case.parse(case).base not in BASES:
        from conftest import MLPERF, require_mlperf
        require_mlperf(MLPERF)
    outcome = worker.run(Case.parse(case))
    assert outcome.kind == "refused", f"{case}: {outcome}"


# Findings that were refused once (onnxruntime had no kernel for the declared old opset) and build since models
# below opset 11 are converted with onnx's version converter (edgec/frontend/opsets.py).
CONVERTED = ["kws_dscnn_fp32/opset/1685372452", "ad_fc_autoencoder_fp32/opset/1621709875"]


@pytest.mark.parametrize("case", CONVERTED)
def test_earlier_old_opset_findings_are_converted(worker, case):
    from conftest import MLPERF, require_mlperf
    require_mlperf(MLPERF)
    outcome = worker.run(Case.parse(case))
    assert outcome.kind == "built", f"{case}: {outcome}"


def test_every_mutation_is_exercised_and_both_outcomes_happen(worker):
    """The fuzzer is not vacuous: each mutation runs, damaged files are refused, harmless changes build."""
    kinds = {m: {worker.run(Case("digits_cnn", m, seed)).kind for seed in range(2)} for m in MUTATIONS}
    assert all(k <= {"built", "refused"} for k in kinds.values()), kinds
    assert kinds["truncate"] == {"refused"} and kinds["calib_missing_x"] == {"refused"}
    assert kinds["zero_weights"] == {"built"} and kinds["calib_constant"] == {"built"}


@pytest.mark.parametrize("case, code", [("digits_cnn/calib_constant/3", 0), ("cancer_conv1d/zero_weights/2", 0),
                                        ("digits_cnn/init_shape/1069973051", 2), ("digits_cnn/calib_flip/1061308341", 2)])
def test_cli_all_the_way_on_the_host_board(case, code, tmp_path):
    """The CLI on a few cases, firmware included: exit 0 with a firmware, or exit 2 with one line and nothing
    left behind."""
    folder = tmp_path / "case"
    folder.mkdir()
    model, calib = make_case(Case.parse(case), folder, tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "edgec", "build", str(model), "--calib", str(calib), "--board",
                           "host", "-o", str(out), "--sensitivity-samples", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "onnxruntime:" not in proc.stderr
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert not leftovers
    if code == 0:
        assert (out / "build-report.json").is_file() and (out / "project" / "firmware").is_file()
    else:
        errors = [line for line in proc.stderr.splitlines() if line.startswith("edgec: error: ")]
        assert len(errors) == 1 and proc.stderr.rstrip().endswith(errors[0]) and not out.exists()


def test_any_node_name_gives_clean_c(tmp_path):
    """Node names land in generated C strings and comments: comment ends, newlines, trigraphs, quotes,
    non-ASCII and very long names still compile warning-free (gcc and clang, -pedantic) and round-trip."""
    import numpy as np
    import hostcc
    from conftest import WARN, library_sources, run_generated_c
    from edgec import api
    from edgec.codegen import cmodel as codegen
    for seed in range(3):
        folder = tmp_path / str(seed)
        folder.mkdir()
        model, calib = make_case(Case("digits_cnn", "names", seed), folder, tmp_path)
        _, graph, plan = api.compile_model(model, calib)
        codegen.generate(graph, plan, folder / "lib", graph.name)
        x = np.zeros((1, graph.tensors[graph.input].size), np.int8)
        names = [op.name for op in graph.ops if op.kind != "reshape"]
        driver = folder / "names.c"
        driver.write_text('#include <stdio.h>\n#include "%s.h"\nint main(void) { unsigned i; for (i = 0; i < %s_LAYER_COUNT;'
                          ' i++) printf("%%s%%c", %s_layer_names[i], 0); return 0; }\n'
                          % (graph.name, graph.name.upper(), graph.name))
        for cc in ("gcc", "clang"):
            run_generated_c(folder / "lib", graph.name, x, graph.tensors[graph.output].size, cc=cc)
        exe = folder / "names"
        library = [s for s in library_sources(folder / "lib") if not s.endswith("driver_main.c")]
        hostcc.build([driver, *library], folder / "lib", exe, "gcc",
                     [*WARN, "-O2", "-I", str(folder / "lib")])
        got = subprocess.run([str(exe)], capture_output=True, check=True).stdout.split(b"\0")[:-1]
        assert got == [n.encode()[:255].split(b"\0")[0] for n in names]   # a NUL ends a C string
