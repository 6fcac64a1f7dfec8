"""benchmarks/peers.py: edgec and TFLite Micro side by side. The end-to-end case runs the AD autoencoder on
qemu-cortex-m4 against both TFLM builds of ../shared/peers and checks that the outputs are identical and that
every figure was read (no speed assertions); the others check the model lists, the tables and the doc section."""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import MLPERF, require, require_mlperf

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "peers.py"
BUNDLE = MLPERF.parent.parent / "peers" / "tflm-cmsisnn.tar.xz"


def _load():
    spec = importlib.util.spec_from_file_location("peers_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow        # about 20 s of CPU (an edgec build, three QEMU firmwares); 1-2 min on a loaded machine
def test_ad_on_the_m4_matches_tflm_byte_for_byte_and_every_figure_is_read(tmp_path, monkeypatch):
    require_mlperf(MLPERF / "ad_fc_autoencoder_int8.tflite")
    require(BUNDLE.is_file(), str(BUNDLE), "put ../shared (with peers/tflm-cmsisnn.tar.xz) beside the clone")
    require(shutil.which("qemu-system-arm") is not None and shutil.which("arm-none-eabi-g++") is not None,
            "qemu-system-arm and arm-none-eabi-g++", "run scripts/setup.sh")
    monkeypatch.setenv("EDGEC_PEERS_CACHE", str(tmp_path / "cache"))     # a fresh machine's first run
    m = _load()
    out = tmp_path / "peers.json"
    assert m.main(["--only", "ad", "--boards", "qemu-cortex-m4", "--bundle", str(BUNDLE), "--json", str(out)]) == 0
    [row] = json.loads(out.read_text())
    e = row["edgec"]
    assert row["model"] == "ad" and row["board"] == "qemu-cortex-m4" and e["device_vs_reference"] == 1.0
    assert e["exact_count"] and e["macs"] == 264192
    for key in ("instructions", "arena_bytes", "ram_total_bytes", "flash_bytes", "engine_code_bytes"):
        assert isinstance(e[key], (int, float)) and e[key] > 0, (key, e)
    assert [p["kernels"] for p in row["peers"]] == ["reference", "cmsis_nn"]
    for p in row["peers"]:
        assert "error" not in p and p["identical"] is True, p
        assert isinstance(p["instructions"], int) and p["instructions"] > 0
        assert p["arena_bytes"] >= p["arena_used_bytes"] > 0          # the smallest arena that works
        assert p["ram_total_bytes"] > p["arena_bytes"] and p["flash_bytes"] > p["engine_code_bytes"] > 0
        assert p["ratio"] == e["instructions"] / p["instructions"]
    assert (tmp_path / "cache").is_dir() and len(list((tmp_path / "cache").iterdir())) == 1   # unpacked once, in place


def test_models_come_from_a_folder_a_json_manifest_or_a_text_manifest(tmp_path):
    m = _load()
    (tmp_path / "a").mkdir()
    for name in ("a/one.tflite", "two.tflite", "three.onnx"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "two.npz").write_bytes(b"")
    assert [(x.name, x.data) for x in m.corpus_models(tmp_path)] == [("one", None), ("two", tmp_path / "two.npz")]
    manifest = tmp_path / "corpus.json"
    manifest.write_text(json.dumps({"models": [{"path": "a/one.tflite", "name": "first", "data": "two.npz"},
                                               "three.onnx", "two.tflite"]}))
    got = m.corpus_models(manifest)
    assert [(x.name, x.path, x.data) for x in got] == [("first", tmp_path / "a" / "one.tflite", tmp_path / "two.npz"),
                                                       ("two", tmp_path / "two.tflite", tmp_path / "two.npz")]
    named = tmp_path / "named.json"
    named.write_text(json.dumps({"first": "a/one.tflite", "second": {"file": "two.tflite"}}))
    assert [(x.name, x.path) for x in m.corpus_models(named)] == [("first", tmp_path / "a" / "one.tflite"),
                                                                 ("second", tmp_path / "two.tflite")]
    listing = tmp_path / "corpus.txt"
    listing.write_text("# corpus\na/one.tflite\n\n")
    assert [x.path for x in m.corpus_models(listing)] == [tmp_path / "a" / "one.tflite"]
    (tmp_path / "kws_model").mkdir()        # the corpus's <name>/model.tflite: named after its folder
    (tmp_path / "kws_model" / "model.tflite").write_bytes(b"")
    assert [x.name for x in m.corpus_models(tmp_path / "kws_model" / "model.tflite")] == ["kws_model"]


def _rows():
    edgec = {"instructions": 250.0, "arena_bytes": 2048, "ram_total_bytes": 3096, "flash_bytes": 9000,
             "engine_code_bytes": 3014, "device_vs_reference": 1.0}
    ref = {"engine": "TFLM ref", "kernels": "reference", "instructions": 1000, "arena_bytes": 2704,
           "ram_total_bytes": 3828, "flash_bytes": 8000, "engine_code_bytes": 16184, "identical": True, "ratio": 0.25}
    cmsis = dict(ref, engine="TFLM CMSIS-NN", kernels="cmsis_nn", instructions=500, ratio=0.5, identical=False)
    return [{"model": "ad", "board": "qemu-cortex-m4", "edgec": edgec, "peers": [ref, cmsis]},
            {"model": "big", "board": "qemu-cortex-m4", "edgec": {"error": "needs 5 MB of flash"}, "peers": []}]


def test_tables_show_each_engine_its_ratio_and_whether_outputs_match():
    m = _load()
    lines = m.table(_rows()).splitlines()
    assert lines[2].startswith("| ad | qemu-cortex-m4 | edgec | 250 | 1.00 | 2,048 | 3,096 | 9,000 | 3,014 |")
    assert lines[3] == "| ad | qemu-cortex-m4 | TFLM ref | 1,000 | 0.25 | 2,704 | 3,828 | 8,000 | 16,184 | identical |"
    assert lines[4].endswith("| 0.50 | 2,704 | 3,828 | 8,000 | 16,184 | DIFFER |")
    assert "does not build: needs 5 MB of flash" in lines[5]
    ratios = m.ratio_table(_rows()).splitlines()
    assert ratios[0] == "| model | cortex-m4 vs TFLM ref | cortex-m4 vs TFLM CMSIS-NN |"
    assert ratios[2] == "| ad | 0.25 | 0.50 |" and ratios[3] == "| big |  |  |"


def test_the_doc_section_is_replaced_between_its_markers(tmp_path):
    m = _load()
    doc = tmp_path / "performance.md"
    doc.write_text("# Title\n\nbefore\n")
    m.write_doc(doc, m.markdown(_rows(), "python benchmarks/peers.py --only ad"))
    first = doc.read_text()
    assert first.startswith("# Title\n\nbefore\n\n" + m.BEGIN) and "`python benchmarks/peers.py --only ad`" in first
    doc.write_text(first + "\nafter\n")
    m.write_doc(doc, m.markdown(_rows()[:1], "python benchmarks/peers.py"))
    second = doc.read_text()
    assert second.count(m.BEGIN) == 1 and second.endswith(m.END + "\n\nafter\n") and "| big |" not in second


def test_the_command_shown_with_the_tables_leaves_out_where_they_were_written():
    m = _load()
    assert m.shown_command(["--only", "ad", "--json", "x.json", "--md=docs/performance.md", "--no-bisect"]) == \
        "benchmarks/peers.py --only ad --no-bisect"


def test_a_missing_bundle_is_one_clear_line(tmp_path, capsys):
    m = _load()
    (tmp_path / "one.tflite").write_bytes(b"")
    assert m.main(["--no-mlperf", "--models", str(tmp_path), "--bundle", str(tmp_path / "none.tar.xz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "none.tar.xz not found" in err and "--bundle" in err, err


CORPUS = Path(__file__).resolve().parent / "corpus"


def test_float_inputs_and_outputs_are_fed_and_compared_as_the_same_integers(tmp_path):
    """A .tflite with float ends (QUANTIZE first, DEQUANTIZE last: MLCommons Tiny's ToyCar, TinyEngine's MCUNet)
    gets the float values of edgec's input bytes (fed the int8 bytes as floats, its QUANTIZE saturated 60 to 100 %
    of them), and its float outputs are compared as the integers they dequantize (not edgec's int8 bytes against
    float32 bytes): what made peers.py report these four models as differing from TFLM."""
    from edgec.frontend.tflite import load
    from edgec.quant import reference
    m = _load()
    path = CORPUS / "tiny_ad_toycar_micro" / "model.tflite"
    require(path.is_file(), str(path), "python scripts/corpus/repos.py --only tiny_ad_toycar_micro")
    assert m.float_inputs(path) == [True]
    assert m.float_inputs(CORPUS / "tiny_ad_autoencoder" / "model.tflite") == [False]      # int8 ends
    graph = load(path, "toycar")
    xq = np.random.default_rng(5).integers(-128, 128, (1, 640)).astype(np.int8)
    _, tflm_input = m.write_inputs(graph, [xq], tmp_path, [True])
    t = graph.tensors[graph.input]
    with np.load(tflm_input) as z:
        fed = z["x0"]
    assert fed.dtype == np.float32
    assert np.array_equal(np.clip(np.rint(fed / np.float32(t.scale)) + t.zero_point, -128, 127).reshape(1, -1), xq)
    ref = np.asarray(reference.run(graph, xq[0])).reshape(-1)
    out = graph.tensors[graph.outputs[0]]
    as_tflm = (np.float64(np.float32(out.scale)) * (ref.astype(np.int64) - out.zero_point)).astype(np.float32)
    row = {"outputs": [{"dtype": "float32", "hex": as_tflm.tobytes().hex()}]}
    assert m.same_outputs(graph, ref, row)
    off = as_tflm.copy()
    off[7] += np.float32(out.scale)               # one output one step off
    assert not m.same_outputs(graph, ref, {"outputs": [{"dtype": "float32", "hex": off.tobytes().hex()}]})
    assert not m.same_outputs(graph, ref, {"outputs": []})


def test_detection_postprocess_outputs_are_compared_in_their_defined_part():
    """TFLite_Detection_PostProcess: TFLM's four float32 outputs against edgec's one packed port, the rows past the
    count left out (TFLM leaves them as its arena held them): what made peers.py report
    keras_ssd_mobilenet_v2_postprocess as differing from TFLM."""
    from edgec.frontend.tflite import load
    m = _load()
    path = CORPUS / "keras_ssd_mobilenet_v2_postprocess" / "model.tflite"
    require(path.is_file(), str(path), "the corpus's committed files (tests/corpus)")
    graph = load(path, "ssd")
    with np.load(path.parent / "oracle.npz") as o:
        ys = [np.asarray(o[f"y{k}"][0], np.float32).reshape(-1) for k in range(4)]
    count = 6
    ys[3][0] = count                       # its samples fill all 10 rows: say 6 were found
    ref = np.concatenate(ys)
    tflm = [y.copy() for y in ys]
    tflm[0][4 * count:] = 7.5            # arena bytes past the count
    tflm[2][count:] = -1.0
    row = {"outputs": [{"dtype": "float32", "hex": y.tobytes().hex()} for y in tflm]}
    assert m.same_outputs(graph, ref, row)
    tflm[0][0] += 0.25                     # a defined box moved
    row = {"outputs": [{"dtype": "float32", "hex": y.tobytes().hex()} for y in tflm]}
    assert not m.same_outputs(graph, ref, row)
    assert not m.same_outputs(graph, ref, {"outputs": row["outputs"][:3]})


def _graph_and_inputs(m, path: Path, tmp_path: Path):
    """The model of a .tflite as peers.py finds it, its graph, the input both engines get, TFLM's .npz arrays and
    edgec's integer sample read back from its data file."""
    from edgec.frontend.tflite import load
    [model] = m.corpus_models(path)
    graph = load(path, path.parent.name)
    xs = m.input_row(model, graph)
    edgec_data, tflm_data = m.write_inputs(graph, xs, tmp_path, m.float_inputs(path))
    with np.load(tflm_data) as z:
        fed = [z[f"x{i}"] for i in range(len(z.files))]
    return graph, xs, fed, m.edgec_sample(graph, edgec_data)


def test_int32_token_ids_go_as_int32_from_the_corpus_oracle(tmp_path):
    """A text model's int32 ids (a table's rows): sent as int32 (they were cut to int8 bytes, ids -128..127 that
    GATHER refused), taken from the corpus oracle's first sample (random ids are no input); without data, one line."""
    from edgec.errors import EdgecError
    m = _load()
    path = CORPUS / "keras_text_gap" / "model.tflite"
    require(path.is_file(), str(path), "the corpus's committed files (tests/corpus)")
    graph, xs, fed, xq = _graph_and_inputs(m, path, tmp_path)
    with np.load(path.parent / "oracle.npz") as o:
        ids = o["x_q"][:1]
    assert ids.max() > 127 and len(xs) == len(fed) == 1
    for got in (xs[0], fed[0], xq):
        assert got.dtype == np.int32 and np.array_equal(got.reshape(ids.shape), ids)
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(path, alone / "model.tflite")
    with pytest.raises(EdgecError, match="is int32") as e:
        m.input_row(m.corpus_models(alone / "model.tflite")[0], graph)
    assert "\n" not in str(e.value)


def test_a_uint8_input_goes_as_uint8_and_an_int8_one_as_before(tmp_path):
    """uint8 (TFLiteConverter's inference_input_type=uint8): random values over 0..255 sent as uint8 (they were
    int8 bytes, which did not quantize back); an int8 input keeps the seeded row it always had."""
    m = _load()
    path = CORPUS / "keras_mobilenet_v2_035_96_uint8" / "model.tflite"
    require(path.is_file(), str(path), "the corpus's committed files (tests/corpus)")
    (tmp_path / "u8").mkdir()
    _, xs, fed, xq = _graph_and_inputs(m, path, tmp_path / "u8")
    assert xs[0].dtype == fed[0].dtype == xq.dtype == np.uint8 and xs[0].max() > 127
    assert np.array_equal(fed[0], xs[0]) and np.array_equal(xq.reshape(xs[0].shape), xs[0])
    int8 = CORPUS / "tiny_ad_autoencoder" / "model.tflite"
    (tmp_path / "i8").mkdir()
    _, xs, fed, xq = _graph_and_inputs(m, int8, tmp_path / "i8")
    before = np.random.default_rng(m.SEED).integers(-128, 128, (1, 640)).astype(np.int8)
    assert fed[0].dtype == np.int8 and np.array_equal(fed[0].reshape(1, -1), before)
    assert np.array_equal(xq.reshape(1, -1), before)


def test_several_inputs_go_each_in_its_own_type_and_tflm_computes_edgecs_reference(tmp_path):
    """An int32 ids input and an int8 activation (GATHER, then ADD): TFLM's .npz holds each in its own type, edgec's
    data file quantizes back to the same integers, and TFLite Micro's interpreter on the .npz gives edgec's reference
    output on its sample, byte for byte; data that the input's type cannot hold is refused, not wrapped."""
    from tflite_oracle import INT32, Case, Node, T, tflm, write
    from edgec.errors import EdgecError
    from edgec.frontend.tflite import load
    from edgec.quant import reference
    m = _load()
    rng = np.random.default_rng(3)
    tensors = [T((1, 4), [1.0], [0], INT32), T((10, 8), [0.05], [3], data=rng.integers(-128, 128, (10, 8), np.int8)),
               T((1, 4, 8), [0.05], [3]), T((1, 4, 8), [0.05], [3]), T((1, 4, 8), [0.1], [-2])]
    nodes = [Node("GATHER", [1, 0], 2, ("GatherOptions", {"Axis": 0})), Node("ADD", [2, 3], 4, ("AddOptions", {}))]
    blob = write(Case("gather_add", tensors, nodes, [0, 3], 4))
    path = tmp_path / "two.tflite"
    path.write_bytes(blob)
    ids, x = np.array([[9, 0, 4, 7]], np.int32), rng.integers(-128, 128, (1, 4, 8)).astype(np.int8)
    np.savez(tmp_path / "two.npz", x_t0=ids, x_t3=x)                 # beside the model: its data
    graph, xs, fed, xq = _graph_and_inputs(m, path, tmp_path)
    assert [a.dtype for a in fed] == [np.int32, np.int8]
    assert np.array_equal(fed[0], ids) and np.array_equal(fed[1], x)
    assert np.array_equal(xq, np.concatenate([ids, x.reshape(1, -1)], axis=1))
    want = np.asarray(reference.run(graph, xq[0])).reshape(-1)
    assert np.array_equal(tflm(blob, [a[None] for a in fed]).reshape(-1), want)
    np.savez(tmp_path / "two.npz", x_t0=ids, x_t3=x.astype(np.int16) + 200)
    with pytest.raises(EdgecError, match="input t3 is int8"):
        m.input_row(m.corpus_models(path)[0], load(path, "two"))


def test_tflm_runs_the_copy_with_tf_lites_shapes_of_a_batch_none_tcn():
    """keras_tcn_kws (a dilated Conv1D, Keras batch None): the file gives every tensor the converter's placeholder
    batch 1, also between SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND where TF Lite runs a batch of the dilation (2, 4,
    8). TFLite Micro never resizes a tensor: on the file it computes 1 of the d interleaved blocks and leaves the
    other rows as its arena held them (not the oracle); on scripts/corpus/fold_shapes.py's copy, the same arithmetic
    with TF Lite's shapes, it gives the oracle. peers.py runs TFLM on that copy (`.tflm.tflite` beside the file)."""
    import tflite
    from tflite_oracle import tflm
    m = _load()
    path = CORPUS / "keras_tcn_kws" / "model.tflite"
    copy = path.with_name("model.tflm.tflite")
    require(copy.is_file(), str(copy), "/work/venv-tf/bin/python scripts/corpus/fold_shapes.py on the model")
    [model] = m.corpus_models(CORPUS / "keras_tcn_kws")
    assert model.path == path and model.tflm == copy and model.tflm_file == copy

    def space_to_batch_batches(blob):
        g = tflite.Model.GetRootAsModel(blob, 0)
        sg = g.Subgraphs(0)
        return [int(sg.Tensors(op.Outputs(0)).Shape(0)) for op in (sg.Operators(i) for i in range(sg.OperatorsLength()))
                if g.OperatorCodes(op.OpcodeIndex()).BuiltinCode() == tflite.BuiltinOperator.SPACE_TO_BATCH_ND]
    assert space_to_batch_batches(path.read_bytes()) == [1] * 6
    assert space_to_batch_batches(copy.read_bytes()) == [2, 2, 4, 4, 8, 8]
    with np.load(path.parent / "oracle.npz") as o:
        x, y = o["x_q"][:1], o["y0"][:1]
    assert np.array_equal(tflm(copy.read_bytes(), x[None]), y.reshape(1, -1))
    assert not np.array_equal(tflm(path.read_bytes(), x[None]), y.reshape(1, -1))
