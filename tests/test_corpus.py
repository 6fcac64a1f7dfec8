"""The corpus of real models (tests/corpus, docs/corpus.md) built with edgec: whatever builds is right
(a .tflite bit-identical to TFLite Micro's stored outputs, a .onnx as close to float as ONNX Runtime's own static
INT8 (unless recorded as 'less-accurate': a known gap, still bit-exact), the host C program bit-exact with
edgec's NumPy reference), and whatever is refused is refused in one
clean line, never a traceback. A model recorded in tests/corpus/expected.json as building must go on building;
one recorded as refused (or not yet measured) may start to build (operators are being added), and must then
be right.

A few small models run in the default suite; every model under `sweep` (scripts/corpus_table.py prints the
table of the same checks).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import corpus_table  # noqa: E402
from corpus import manifest  # noqa: E402

ENTRIES = manifest.load()
EXPECTED = json.loads((manifest.CORPUS / "expected.json").read_text())
# the default suite's subset: small files of each source and format, a stateful one (TFLite's integer LSTM) and a
# float tail (a DEQUANTIZE, then a float32 LOG_SOFTMAX: edgec/ops/float_tail)
FAST = ["tflm_hello_world_int8", "tiny_kws_ds_cnn", "onnx2c_atmega_mnist", "tflm_mnist_lstm_int8",
        "tinyengine_mnist_lenet", "keras_two_stream_har_int8", "tf2onnx_two_stream_har"]     # (the last two: two inputs)


# what a refusal names: TFLite operators (each kind once, with its count), an ONNX node and its operator, or the
# graph port in the way
TFLITE_REFUSAL = re.compile(r"cannot honour (\d+) operator\(s\): ")
TFLITE_GROUP = re.compile(r"[A-Z][A-Z0-9_]* \((?:operator #\d+|operators ((?:#\d+, )*#\d+)(?: and (\d+) more)?): ")
NAMED = re.compile(r"node '[^']*' \([A-Za-z]+\): |unsupported operators: [A-Za-z]|graph (input|output) '[^']+': ")


def names_what_is_in_the_way(line: str) -> bool:
    """A .tflite refusal names every operator it counts (grouped by kind: "OP (operators #2, #5, #9 and 7 more:
    ...)"), none cut off; any other names a node and its operator, or a graph port."""
    m = TFLITE_REFUSAL.search(line)
    if m is None:
        return bool(NAMED.search(line))
    named = sum(1 if g[0] == "" else g[0].count("#") + int(g[1] or 0) for g in TFLITE_GROUP.findall(line))
    return named == int(m.group(1)) and not line.endswith("...")


def check(name: str, board: str, work: Path) -> corpus_table.Row:
    entry = ENTRIES[name]
    require((manifest.CORPUS / entry["file"]).is_file(), f"tests/corpus/{entry['file']}",
            f"it is not committed (its license or size): {entry['regenerate']}")
    row = corpus_table.check(entry, board, work)
    assert row.status in ("built", "refused"), f"{name} on {board}: {row.status}: {row.message}"
    if row.status == "refused":
        line = row.message
        assert line.strip() and "\n" not in line.strip() and "Traceback" not in line, \
            f"{name}: the refusal is not one clean line: {line!r}"
        assert names_what_is_in_the_way(line), f"{name}: the refusal names no operator or feature: {line}"
        assert EXPECTED[name][board] not in ("builds", "less-accurate"), \
            f"{name} built on {board} before and is refused now: {line}"
        return row
    known_gap = EXPECTED[name][board] == "less-accurate"     # recorded: further from float than ORT's INT8
    assert row.right or (known_gap and row.exact), (
                       f"{name} on {board} builds but is not right: TFLM identical {row.tflm_identical}, "
                       f"SQNR edgec {row.sqnr_edgec} vs ORT INT8 {row.sqnr_ort} dB, device = reference "
                       f"{row.device_vs_reference}, {row.extra}")
    return row


def test_every_model_has_provenance_license_and_an_oracle():
    assert len(ENTRIES) >= 50
    assert set(EXPECTED) == set(ENTRIES)
    for name, e in ENTRIES.items():
        assert e["kind"] in manifest.KINDS and e["license"] and e["source"] and e["regenerate"], name
        folder = manifest.CORPUS / name
        assert (folder / "oracle.npz").is_file(), name
        if e["committed"]:
            assert manifest.sha256(manifest.CORPUS / e["file"]) == e["sha256"], name
    assert set(manifest.KINDS) - {"regression"} <= {e["kind"] for e in ENTRIES.values()}


def _model_input_names(e: dict) -> list[str]:
    """The graph inputs of a corpus file, in the model's order (ONNX: its non-initializer inputs by name;
    .tflite: its subgraph's input tensors' names)."""
    import onnx
    import tflite

    path = manifest.CORPUS / e["file"]
    if e["format"] == "onnx":
        model = onnx.load(str(path), load_external_data=False)
        init = {i.name for i in model.graph.initializer}
        return [i.name for i in model.graph.input if i.name not in init]
    sg = tflite.Model.GetRootAsModel(path.read_bytes(), 0).Subgraphs(0)
    return [(sg.Tensors(sg.Inputs(k)).Name() or b"").decode() for k in range(sg.InputsLength())]


def test_models_with_several_inputs_are_in_the_corpus_and_measured_on_both_boards():
    """Models with several inputs (.tflite and .onnx, from Keras, tf2onnx and both torch.onnx exporters) have the
    oracle of every other model (each input's samples stored by index beside `inputs`, their names in the model's
    order) and a status on both boards; corpus_table feeds them packed in that order (the fast subset builds two).
    Which models have several inputs is read from their committed oracles; every model file committed to the
    repository is checked against its oracle (the files that are not are fetched by `regenerate`, not in a clone)."""
    several = {}
    for name, e in ENTRIES.items():
        oracle = np.load(manifest.CORPUS / name / "oracle.npz")
        names = [str(n) for n in oracle["inputs"]] if "inputs" in oracle.files else None
        if e.get("committed") and e["format"] in ("onnx", "tflite"):
            in_model = _model_input_names(e)
            assert (len(in_model) == 1) if names is None else (len(names) == len(in_model)), (name, names, in_model)
            if names is not None and e["format"] == "onnx":
                assert names == in_model, name
        if names is not None and len(names) > 1:
            several[name] = names
    assert len(several) >= 3 and {ENTRIES[n]["format"] for n in several} == {"onnx", "tflite"}, several
    for name in several:
        assert all(EXPECTED[name][b] in ("builds", "less-accurate") for b in corpus_table.BOARDS), name
    assert {"keras_two_stream_har_int8", "tf2onnx_two_stream_har"} <= set(several) & set(FAST)


def test_uncommitted_models_are_ignored_by_git():
    ignored = (manifest.CORPUS / ".gitignore").read_text().split()
    for e in ENTRIES.values():
        assert (e["file"] in ignored) == (not e["committed"]), e["name"]


@pytest.mark.parametrize("name", FAST)
def test_fast_subset_on_host(name, tmp_path):
    check(name, "host", tmp_path)


@pytest.mark.sweep
@pytest.mark.parametrize("board", corpus_table.BOARDS)
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_corpus_model(name, board, tmp_path):
    check(name, board, tmp_path)


TFLITE_BUILDS = sorted(n for n, e in ENTRIES.items() if e["format"] == "tflite" and e["committed"]
                       and EXPECTED[n]["host"] in ("builds", "less-accurate"))


@pytest.mark.parametrize("name", TFLITE_BUILDS)
def test_every_tflite_that_builds_imports_and_its_first_sample_is_tflms(name):
    """The default suite's guard over the whole .tflite corpus (the full checks are under sweep): each file that
    built imports, and edgec's reference on the oracle's first sample is its stored output (TFLite Micro's) —
    a file check that refused person_detect went unseen by the fast subset."""
    from edgec.frontend import tflite as importer
    from edgec.quant import reference
    from edgec import ports

    entry = ENTRIES[name]
    path = manifest.CORPUS / entry["file"]
    graph = importer.load(path, name)
    oracle = np.load(path.parent / "oracle.npz")
    xq = ports.quantize_inputs(graph, corpus_table.float_inputs(oracle)[:1])
    got = np.asarray(reference.run(graph, xq[0])).reshape(-1)
    want, k = [], 0
    for port in ports.outputs(graph):
        y, k = oracle[f"y{k}"][:1].reshape(-1), k + 1
        t = graph.tensors[port.tensor]
        if t.dtype == "float32" and y.size < port.size:      # TFLite_Detection_PostProcess's four outputs, packed
            while y.size < port.size:
                y, k = np.concatenate([y, oracle[f"y{k}"][:1].reshape(-1)]), k + 1
            mine = got[port.start:port.start + port.size].astype(np.float32)[None]
            assert np.array_equal(corpus_table._detection_bits(mine, port.size),
                                  corpus_table._detection_bits(y[None], port.size)), name
            y = got[port.start:port.start + port.size]
        elif y.dtype.kind == "f" and t.dtype == "float32":     # a float tail's output: TFLM's floats, bit for bit
            assert np.array_equal(got[port.start:port.start + port.size].astype(np.float32), y), name
            y = got[port.start:port.start + port.size]
        elif y.dtype.kind == "f":
            y = np.clip(np.round(y.astype(np.float64) / float(np.asarray(t.scale).reshape(-1)[0]))
                        + int(np.asarray(t.zero_point).reshape(-1)[0]), -128, 127)
        want.append(y)
    assert np.array_equal(got.astype(np.int64), np.concatenate(want).astype(np.int64))


def test_packed_detections_compare_on_their_defined_part():
    """TFLite_Detection_PostProcess's four TFLM outputs, packed [4D boxes | D classes | D scores | count], compare
    bit for bit with edgec's up to the count: the rows past it (TFLM leaves its arena's bytes there) do not count,
    a defined value one ulp off does."""
    rng = np.random.default_rng(0)
    d, count = 5, 3
    edgec = rng.random((2, 6 * d + 1), dtype=np.float32)
    edgec[:, 6 * d] = count
    for start, n in ((4 * count, 4 * (d - count)), (4 * d + count, d - count), (5 * d + count, d - count)):
        edgec[:, start:start + n] = 0
    tflm = edgec.copy()
    tflm[:, 4 * count:4 * d] = rng.random((2, 4 * (d - count)), dtype=np.float32)    # undefined boxes
    tflm[:, 5 * d + count:6 * d] = -1.0                                               # undefined scores
    assert np.array_equal(corpus_table._detection_bits(edgec, 6 * d + 1),
                          corpus_table._detection_bits(tflm, 6 * d + 1))
    tflm[1, 4 * d + 1] = np.nextafter(tflm[1, 4 * d + 1], np.float32(2))             # a defined class, 1 ulp
    same = np.all(corpus_table._detection_bits(edgec, 6 * d + 1) == corpus_table._detection_bits(tflm, 6 * d + 1),
                  axis=1)
    assert same.tolist() == [True, False]


def test_ssd_with_tflite_postprocess_reference_matches_tflm(tmp_path):
    """The corpus's SSD ending in TFLite_Detection_PostProcess (TFLiteConverter fused it from experimental_
    implements): edgec's reference gives TFLite Micro's boxes, classes, scores and count bit for bit (the sweep
    builds and benches it on both boards)."""
    from edgec import api

    entry = ENTRIES["keras_ssd_mobilenet_v2_postprocess"]
    oracle = np.load(manifest.CORPUS / entry["name"] / "oracle.npz")
    assert str(oracle["sha256"]) == entry["sha256"] and str(oracle["oracle"]) == "tflite-micro"
    api.build(manifest.CORPUS / entry["file"], None, "host", tmp_path / "b", firmware=False)
    n = len(oracle["x_q"])
    want = np.concatenate([oracle[f"y{k}"].reshape(n, -1) for k in range(4)], axis=1)
    got = np.stack([np.asarray(api.reference(tmp_path / "b", oracle["x_q"][i][None], quantized=True)[0]).reshape(-1)
                    for i in range(n)])
    assert got.shape == want.shape == (n, 6 * 10 + 1)
    assert int(want[:, -1].min()) >= 1                      # TFLM found boxes on every sample
    assert np.array_equal(corpus_table._detection_bits(got, got.shape[1]),
                          corpus_table._detection_bits(want, want.shape[1]))


def test_a_re_export_with_other_metadata_is_the_same_model(tmp_path):
    """A dynamo re-export names the folder it ran in in every node's metadata (its Python stack trace): other
    bytes, the same graph and weights. The corpus accepts it (content_sha256, or ONNX Runtime's float outputs on
    the oracle's inputs bit for bit the stored ones, for an entry recorded before that hash) and still refuses a
    file whose weights changed."""
    import onnx
    from onnx import numpy_helper

    entry = ENTRIES["torch_resnet8_cifar_dynamo"]
    path = manifest.CORPUS / entry["file"]
    oracle = np.load(path.parent / "oracle.npz")
    model = onnx.load(str(path))
    assert any(p.key == "pkg.torch.onnx.stack_trace" for n in model.graph.node for p in n.metadata_props)
    for node in model.graph.node:
        for p in node.metadata_props:
            p.value = p.value.replace("/work/", "/elsewhere/")
    model.producer_version += "+local"
    moved = tmp_path / "moved.onnx"
    onnx.save(model, moved)
    assert manifest.sha256(moved) != entry["sha256"] and manifest.content_sha256(moved) == entry["content_sha256"]
    assert manifest.same_model(moved, entry) and corpus_table.provenance_problem(entry, moved, oracle) is None
    old_entry = {k: v for k, v in entry.items() if k != "content_sha256"}
    assert not manifest.same_model(moved, old_entry)
    assert corpus_table.provenance_problem(old_entry, moved, oracle) is None       # the same float outputs
    w = model.graph.initializer[0]
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.01), w.name))
    changed = tmp_path / "changed.onnx"
    onnx.save(model, changed)
    assert not manifest.same_model(changed, entry)
    assert "the stored oracle is for another model" in corpus_table.provenance_problem(entry, changed, oracle)
