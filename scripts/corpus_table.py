"""Build every model of the corpus (tests/corpus, docs/corpus.md) with edgec and print the table.

    python scripts/corpus_table.py                 # host board
    python scripts/corpus_table.py --all           # host and qemu-cortex-m4
    python scripts/corpus_table.py --only NAME ... [--json out.json]

Per model and board: does it build (or edgec's refusal line); a .tflite: are edgec's INT8 outputs bit-identical
to TFLite Micro's stored outputs on every sample; a .onnx: SQNR (dB, worst output) of edgec's INT8 against
ONNX Runtime's float, beside the SQNR of ONNX Runtime's own static INT8 of the same model; and the device (host
C program or emulated board) bit-exact with edgec's NumPy reference (`edgec bench` agreement).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
import manifest  # noqa: E402
from oracles import float_inputs, onnx_input_list  # noqa: E402
import evaluation  # noqa: E402

BOARDS = ("host", "qemu-cortex-m4")


@dataclass
class Row:
    name: str
    kind: str
    format: str
    board: str
    status: str = "missing"           # built | refused | crashed | missing
    message: str = ""                 # the refusal line, the traceback, or why the file is missing
    tflm_identical: float | None = None   # fraction of samples bit-identical to TFLite Micro's stored outputs
    sqnr_edgec: float | None = None   # dB, worst output, edgec INT8 vs ONNX Runtime float
    sqnr_ort: float | None = None     # dB, worst output, ONNX Runtime static INT8 vs float
    samples: int | None = None        # the samples the SQNRs are over (a .onnx's evaluation set where it has one)
    closer_samples: int | None = None  # of them, those where edgec's worst output is at least as close as ORT's
    device_vs_reference: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """Built, the device bit-exact with the reference and, a .tflite, bit-identical to its oracle."""
        return (self.status == "built" and self.device_vs_reference == 1.0
                and (self.format != "tflite" or self.tflm_identical == 1.0))

    @property
    def outcome(self) -> str:
        """builds (right) | less-accurate (exact, but further from float than ORT's INT8) | wrong | refused |
        crashed | missing."""
        if self.status != "built":
            return self.status
        return "builds" if self.right else "less-accurate" if self.exact and self.sqnr_edgec is not None else "wrong"

    @property
    def right(self) -> bool:
        """Built and right: bit-identical to TFLM / as close to float as ORT's INT8 (or no tolerance
        recorded), and the device bit-exact with the reference."""
        if self.status != "built" or self.device_vs_reference != 1.0:
            return False
        if self.format == "tflite":
            return self.tflm_identical == 1.0
        return self.sqnr_edgec is not None and (self.sqnr_ort is None or self.sqnr_edgec >= self.sqnr_ort - 1e-9)


def sqnr(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = np.asarray(ref, np.float64).ravel(), np.asarray(got, np.float64).ravel()
    noise = np.sum((ref - got) ** 2)
    signal = np.sum(ref ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(max(signal, 1e-30) / noise))


def one_line(exc: BaseException) -> str:
    return str(exc)


def _detection_bits(y: np.ndarray, size: int) -> np.ndarray:
    """TFLite_Detection_PostProcess's packed float32 output [N, 6D+1] (edgec/ops/detection.py) as the bits of its
    defined part: TFLM leaves the rows past the count as its arena held them."""
    from edgec.ops import detection
    return detection.defined(np.asarray(y, np.float32), (size - 1) // 6).view(np.int32)


def provenance_problem(entry: dict, path: Path, oracle) -> str | None:
    """Why the file on disk is not the model the manifest and the stored oracle describe, or None. Its bytes need
    not be the manifest's (a dynamo re-export names the folder it ran in in each node's metadata): the graph with
    its weights (manifest content_sha256) or, for an .onnx (an entry recorded before that hash, whose file was
    made again), ONNX Runtime's float outputs on the oracle's inputs, bit for bit the stored ones, will do."""
    if manifest.same_model(path, entry):
        return None
    if entry["format"] == "onnx" and oracle is not None and "float0" in oracle:
        import onnxruntime as ort
        n = sum(1 for k in oracle.files if re.fullmatch(r"float\d+", k))
        want = [oracle[f"float{k}"] for k in range(n)]
        try:     # as scripts/corpus/oracles.py ran it: onnxruntime's default session, one sample a run
            sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            names = [i for i, _ in onnx_input_list(path)]
            xs = [oracle[f"x{k}"] for k in range(len(names))] if "inputs" in oracle else [oracle["x"]]
            runs = [sess.run(None, {m: a[i][None] for m, a in zip(names, xs)}) for i in range(len(xs[0]))]
            got = [np.stack([r[k] for r in runs]) for k in range(n)]
        except Exception:              # noqa: BLE001  (a file onnxruntime cannot run is not the oracle's model)
            got = None
        if got is not None and all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want)):
            return None
    return ("sha256 differs from the manifest's, and so does the graph with its weights (content_sha256) or the "
            "float outputs: the stored oracle is for another model")


def check(entry: dict, board: str, work: Path, bench: bool = True) -> Row:
    """One model on one board."""
    from edgec import api
    from edgec import ports
    from edgec.errors import EdgecError
    from edgec.quant import artifact, reference

    row = Row(entry["name"], entry["kind"], entry["format"], board)
    path = manifest.CORPUS / entry["file"]
    oracle_path = path.parent / "oracle.npz"
    if not path.is_file():
        row.message = f"not on disk: {entry['regenerate']}"
        return row
    oracle = np.load(oracle_path) if oracle_path.is_file() else None
    problem = provenance_problem(entry, path, oracle)
    if problem is not None:
        row.message = problem
        return row
    if manifest.sha256(path) != entry["sha256"]:       # a re-export: other producer metadata, the same model
        row.extra["file"] = "re-exported: other bytes, the manifest's model"
    if oracle is None or not ("x" in oracle or "x_q" in oracle or "inputs" in oracle):
        row.message = "no oracle: " + (str(oracle["oracle"]) if oracle is not None else "run scripts/corpus/oracles.py")
        return row
    if str(oracle["sha256"]) != entry["sha256"]:
        row.message = ("the stored oracle was computed on other bytes (an exporter of another version?): "
                       f"python scripts/corpus/oracles.py --force --only {entry['name']}")
        return row
    calib = path.parent / "calib.npz"
    out = work / f"{entry['name']}-{board}"
    try:
        api.build(path, None if entry["format"] == "tflite" else calib, board, out)
    except EdgecError as e:
        row.status, row.message = "refused", one_line(e)
        return row
    except Exception:                    # noqa: BLE001  a crash is what the table exists to show
        row.status, row.message = "crashed", traceback.format_exc()
        return row
    row.status = "built"
    graph = artifact.load_graph(out)
    x = float_inputs(oracle)
    xq = ports.quantize_inputs(graph, x)
    ref = reference.run_sequence(graph, xq)     # one stream: a stateful model's state carried, as in the oracle
    if entry["format"] == "tflite":
        if "x_q" in oracle and not np.array_equal(xq.reshape(oracle["x_q"].shape), oracle["x_q"]):
            row.extra["input"] = "edgec's quantized input differs from the oracle's integer input"
        if "inputs" in oracle and not np.array_equal(
                xq, ports.pack(graph, [oracle[f"x_q{k}"] for k in range(len(oracle["inputs"]))])):
            row.extra["input"] = "edgec's quantized inputs differ from the oracle's integer inputs"
        want, k, detections = [], 0, set()
        for port in ports.outputs(graph):
            if f"y{k}" not in oracle:
                break
            y, k = oracle[f"y{k}"].reshape(len(x), -1), k + 1
            if graph.tensors[port.tensor].dtype == "float32" and y.shape[1] < port.size:
                while y.shape[1] < port.size and f"y{k}" in oracle:     # TFLite_Detection_PostProcess's four, packed
                    y, k = np.concatenate([y, oracle[f"y{k}"].reshape(len(x), -1)], axis=1), k + 1
                y = _detection_bits(y, port.size)
                detections.add(port.tensor)
            elif y.dtype.kind == "f" and graph.tensors[port.tensor].dtype == "float32":   # a float tail: its bits
                y = y.astype(np.float32).view(np.int32)
            elif y.dtype.kind == "f":    # a float output (DEQUANTIZE at the end): TFLM's int8 values, exactly
                t = graph.tensors[port.tensor]
                scale = float(np.asarray(t.scale).reshape(-1)[0])
                zp = int(np.asarray(t.zero_point).reshape(-1)[0])
                y = np.clip(np.round(y.astype(np.float64) / scale) + zp, -128, 127)
            want.append(y)
        want = np.concatenate(want, axis=1)

        def bits(p):
            r = p.of(ref).reshape(len(x), -1)
            if graph.tensors[p.tensor].dtype != "float32":
                return r.astype(np.int64)
            return _detection_bits(r, p.size) if p.tensor in detections else r.astype(np.float32).view(np.int32)
        ref = np.concatenate([bits(p).astype(np.int64) for p in ports.outputs(graph)], axis=1)
        if not str(oracle["oracle"]).startswith("tflite-micro"):
            row.extra["oracle"] = str(oracle["oracle"])
        row.tflm_identical = float(np.mean(np.all(want.astype(np.int64) == ref, axis=1))) \
            if want.shape == ref.shape else 0.0
    else:
        try:
            accuracy(row, graph, entry, oracle, x, ref)
        except ValueError as e:      # the evaluation inputs drawn again are not the stored oracle's
            row.message = one_line(e)
    if bench:
        data = work / f"{entry['name']}-data.npz"
        np.savez(data, **bench_inputs(graph, x))
        try:
            r = api.bench(out, data)
            row.device_vs_reference = r["agreement"]["device_vs_reference"]
        except EdgecError as e:
            row.extra["bench"] = one_line(e)
        except Exception:                # noqa: BLE001
            row.extra["bench"] = traceback.format_exc()
    shutil.rmtree(out, ignore_errors=True)
    return row


def bench_inputs(graph, x: np.ndarray) -> dict:
    """The bench's data file of float samples x: `x` (one input), or `x_<name>` for each of several (x packed)."""
    from edgec import ports
    if not graph.more_inputs:
        return {"x": x}
    return {f"x_{p.name}": p.of(x) for p in ports.inputs(graph)}


def accuracy(row: Row, graph, entry: dict, oracle, x: np.ndarray, ref) -> None:
    """row.sqnr_edgec and row.sqnr_ort (dB, the worst output, over all samples) on the oracle's evaluation set
    (scripts/corpus/evaluation.py: 32 samples drawn like the calibration set, disjoint from it), or on its few
    stored samples where it has none; and on how many samples edgec's worst output is at least as close."""
    from edgec import ports
    from edgec.quant import reference

    x_eval, prefix = evaluation.stored_inputs(entry["name"], entry, oracle), "eval_"
    if x_eval is None:
        x_eval, prefix = x, ""
    else:
        ref = reference.run_sequence(graph, ports.quantize_inputs(graph, x_eval))
    n = len(x_eval)
    got = ports.dequantize_outputs(graph, ref).reshape(n, -1)
    worst_e, worst_o, per_e, per_o = [], [], [], []
    for k, port in enumerate(ports.outputs(graph)):
        if f"{prefix}float{k}" not in oracle:       # an NMS selection (rows vary): the bench compares the boxes
            continue
        f = oracle[f"{prefix}float{k}"].reshape(n, -1)
        e = got[:, port.start:port.start + port.size]
        worst_e.append(sqnr(f, e))
        per_e.append([sqnr(f[i], e[i]) for i in range(n)])
        if f"{prefix}ort_int8_{k}" in oracle:
            o = oracle[f"{prefix}ort_int8_{k}"].reshape(n, -1)
            worst_o.append(sqnr(f, o))
            per_o.append([sqnr(f[i], o[i]) for i in range(n)])
    row.sqnr_edgec, row.samples = min(worst_e), n
    row.sqnr_ort = min(worst_o) if worst_o else None
    if per_o:
        row.closer_samples = int(np.sum(np.min(per_e, axis=0) >= np.min(per_o, axis=0) - 1e-9))


def fmt_db(v):
    return "" if v is None else ("inf" if v == float("inf") else f"{v:.1f}")


def table(rows: list[Row]) -> str:
    lines = ["| model | kind | board | builds | TFLM bit-identical | SQNR edgec / ORT INT8 (dB) | device = reference | refusal |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tflm = "" if r.tflm_identical is None else f"{r.tflm_identical:.0%}" + (" (TF Lite)" if "oracle" in r.extra else "")
        sq = "" if r.sqnr_edgec is None else f"{fmt_db(r.sqnr_edgec)} / {fmt_db(r.sqnr_ort) or 'n/a'}"
        if r.sqnr_ort is not None and r.sqnr_edgec is not None and r.samples:
            sq += (f" ({r.sqnr_edgec - r.sqnr_ort:+.2f} dB, n={r.samples}" +
                   (f", closer on {r.closer_samples}" if r.closer_samples is not None else "") + ")")
        dev = "" if r.device_vs_reference is None else f"{r.device_vs_reference:.0%}"
        msg = r.message.strip().splitlines()[-1] if r.status == "crashed" else r.message
        if "bench" in r.extra:
            msg = ("bench CRASH: " if "Traceback" in r.extra["bench"] else "bench: ") \
                + r.extra["bench"].strip().splitlines()[-1]
        builds = {"builds": "yes", "less-accurate": "yes (below ORT)", "wrong": "yes (WRONG)", "refused": "refused",
                  "crashed": "CRASH", "missing": "missing"}[r.outcome]
        msg = msg.replace(str(manifest.ROOT) + "/", "").replace("|", "/")     # paths relative to the repository
        lines.append(f"| {r.name} | {r.kind} | {r.board} | {builds} | {tflm} | {sq} | {dev} | {msg} |")
    return "\n".join(lines)


def refusal_kind(message: str) -> str:
    """A refusal line without what is particular to one model (its path, operator and tensor numbers, names)."""
    line = re.sub(r"^\S*(/|\\)model\.(tflite|onnx): ", "", message)
    line = re.sub(r"#\d+", "#N", line)
    line = re.sub(r"(input|output): \S+", r"\1: NAME", line)
    return line[:160]


def summary(rows: list[Row]) -> str:
    out = []
    for board in sorted({r.board for r in rows}):
        rs = [r for r in rows if r.board == board]
        built = [r for r in rs if r.status == "built"]
        out.append(f"{board}: {len(built)} of {len(rs)} build, {sum(r.right for r in built)} of them right, "
                   f"{sum(r.outcome == 'less-accurate' for r in rs)} exact but further from float than ORT's INT8, "
                   f"{sum(r.outcome == 'wrong' for r in rs)} wrong; "
                   f"{sum(r.status == 'refused' for r in rs)} refused, {sum(r.status == 'crashed' for r in rs)} "
                   f"crashed, {sum(r.status == 'missing' for r in rs)} missing")
        refusals: dict[str, int] = {}
        for r in rs:
            if r.status == "refused":
                key = refusal_kind(r.message)
                refusals[key] = refusals.get(key, 0) + 1
        out += [f"  refused {n}x: {k}" for k, n in sorted(refusals.items(), key=lambda kv: -kv[1])]
    return "\n".join(out)


def provenance(entries: dict) -> str:
    """The manifest as a markdown table: where each file comes from, under which license, committed or not."""
    lines = ["| model | kind | file | source | license | committed |", "|---|---|---|---|---|---|"]
    for e in entries.values():
        src = e["source"]
        where = (f"[{src['repository'].split('github.com/')[-1]}]({src['repository']}) `{src['path']}` @ "
                 f"`{src['commit'][:10]}`" if "repository" in src else f"{src['exporter']}; {src['architecture']}")
        lines.append(f"| {e['name']} | {e['kind']} | {e['format']} | {where} | {e['license']} | "
                     f"{'yes' if e['committed'] else 'no: `' + e['regenerate'] + '`'} |")
    return "\n".join(lines)


def write_expected(rows: list[Row]) -> None:
    """tests/corpus/expected.json: per model and board, 'builds' (it must go on building, and be right),
    'less-accurate' (it must go on building, bit-exact; its SQNR may not yet reach ORT's INT8), 'refused' (built
    wrong or refused: it may start to build) or 'unmeasured'. Rows of this run replace the file's rows for their models and boards."""
    path = manifest.CORPUS / "expected.json"
    expected = json.loads(path.read_text()) if path.is_file() else {}
    for r in rows:
        if r.status in ("built", "refused"):
            expected.setdefault(r.name, {})[r.board] = r.outcome if r.outcome in ("builds", "less-accurate") else "refused"
    for name in manifest.load():         # not run yet on a board: nothing promised
        for board in BOARDS:
            expected.setdefault(name, {}).setdefault(board, "unmeasured")
    path.write_text(json.dumps(dict(sorted(expected.items())), indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="host and qemu-cortex-m4 (default: host)")
    ap.add_argument("--board", choices=BOARDS, help="this board only")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json", type=Path, help="write the rows here too")
    ap.add_argument("--provenance", action="store_true", help="print the manifest as a table and stop")
    ap.add_argument("--write-expected", action="store_true",
                    help="record this run's outcome in tests/corpus/expected.json (what tests/test_corpus.py holds to)")
    ap.add_argument("--rows", nargs="*", type=Path, help="print the table of rows saved by --json (later files "
                    "replace earlier rows of the same model and board) instead of building")
    args = ap.parse_args(argv)
    if args.rows:
        merged = {}
        for f in args.rows:
            merged.update({(d["name"], d["board"]): Row(**d) for d in json.loads(f.read_text())})
        order = list(manifest.load())
        rows = sorted(merged.values(), key=lambda r: (r.board, order.index(r.name) if r.name in order else 0))
        print(table(rows) + "\n\n" + summary(rows))
        if args.write_expected:
            write_expected(rows)
        return 0
    if args.provenance:
        print(provenance(manifest.load()))
        return 0
    entries = [e for n, e in manifest.load().items() if not args.only or n in args.only]
    if args.only:                       # in the order given
        entries.sort(key=lambda e: args.only.index(e["name"]))
    rows = []
    with tempfile.TemporaryDirectory(prefix="edgec-corpus-") as tmp:
        for board in (BOARDS if args.all else [args.board or BOARDS[0]]):
            for e in entries:
                rows.append(check(e, board, Path(tmp)))
                print(f"{e['name']} on {board}: {rows[-1].status}", file=sys.stderr, flush=True)
                if args.json:            # as it goes: a long run stopped half-way keeps what it measured
                    args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    print(table(rows))
    print()
    print(summary(rows))
    if args.write_expected:
        write_expected(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
