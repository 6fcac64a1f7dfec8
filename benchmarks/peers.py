"""edgec and TensorFlow Lite Micro side by side, in one run, on the same emulated boards and the same input bytes.

    .venv/bin/python benchmarks/peers.py                                   # the four MLPerf Tiny .tflite files, all boards
    .venv/bin/python benchmarks/peers.py --only ad --boards qemu-cortex-m4 --json peers.json
    .venv/bin/python benchmarks/peers.py --models tests/corpus --no-mlperf # every .tflite under a folder
    .venv/bin/python benchmarks/peers.py --models corpus.json              # a manifest (below)
    .venv/bin/python benchmarks/peers.py --md docs/performance.md          # rewrite the generated section of the doc

For every model and board: edgec builds the .tflite for the board and benches it on QEMU (one sample); the
TFLite Micro bundle of ../shared/peers (TFLM with its reference kernels and with CMSIS-NN, Helium on the M55,
prebuilt for the same QEMU machines: its README) runs the same file on the same machine with the same input bytes.
Per engine: exact emulated instructions per inference (both counted by a QEMU TCG plugin under -icount shift=0:
edgec/bench/cycles.py's and the bundle's icount_markers), the arena (TFLM: the smallest that works), the total
device RAM (static .data + .bss + arena + the measured stack high-water mark), the flash of the whole firmware
(code, weights, constants; harness and C library included on both sides), and whether the output bytes are
identical (edgec's device output equals its NumPy integer reference on the sample, checked by the bench, and
that reference equals TFLM's bytes; a file with float ends, QUANTIZE first and DEQUANTIZE last, gets the float
values of the same input bytes and its float outputs are compared as the integers they dequantize). For .tflite
files they must be: a difference exits non-zero.

The bundle is unpacked once into a cache folder ($EDGEC_PEERS_CACHE, else ~/.cache/edgec/peers), keyed by its
hash; --bundle or $EDGEC_PEERS_BUNDLE names the tarball (default ../shared/peers/tflm-cmsisnn.tar.xz).

--models takes a .tflite file, a folder (every .tflite under it) or a manifest: .json (a list of paths or of
{"path" (or "file", "tflite", "model"), "name", "data"} objects, or {name: path or object}, either of them under
"models"; paths relative to the manifest; other files than .tflite are left out) or .txt (a path a line).
Input: each input in its own type and shape (int8, uint8, int16, int32 token ids; several inputs each by its name),
the same integers to both engines (edgec's data file holds float values that quantize back to them; TFLM's driver
copies them into its input tensors as they are). They are the `data` file's first sample if given (x / x_int8 /
x_q / x_<input name>; float data is quantized with the input's scale), else `<stem>.npz` or `<stem>.test.npz`
beside the model, else seeded pseudo-random values over each input's integer type; an int32 input (ids, which
index a table) takes the corpus oracle's first sample instead (`oracle.npz` x_q beside the file). The MLPerf Tiny
models get their golden x_int8 row 0.

TFLM runs `<stem>.tflm.tflite` beside the model instead where there is one (`tflm_copy`: a Keras file with batch
None, which TFLite Micro runs with the converter's placeholder shapes; scripts/corpus/fold_shapes.py's copy has
TF Lite's), shown as "(on `.tflm.tflite`)" in the table.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edgec import api, ports  # noqa: E402
from edgec.errors import EdgecError  # noqa: E402
from edgec.ir import DTYPES  # noqa: E402
from edgec.quant import artifact, reference  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from peer_inputs import SEED, edgec_sample, float_inputs, input_row, write_inputs  # noqa: E402,F401

SHARED = next((d / "shared" for d in (REPO.parent, REPO.parent.parent) if (d / "shared").is_dir()),
              REPO.parent / "shared")
MLPERF = Path(os.environ.get("EDGEC_MLPERF_DIR") or SHARED / "models" / "mlperf_tiny")
MLPERF_MODELS = {"kws": "kws_dscnn_int8.tflite", "vww": "vww_mobilenetv1_025_int8.tflite",
                 "ic": "ic_resnet8_int8.tflite", "ad": "ad_fc_autoencoder_int8.tflite"}
DEFAULT_BUNDLE = SHARED / "peers" / "tflm-cmsisnn.tar.xz"
BUNDLE_ROOT = "tflm-cmsisnn"          # the folder the tarball holds
# edgec board -> the TFLM builds of the bundle for its core: (--cpu, --kernels, column label)
CONFIGS = {"qemu-cortex-m4": [("cortex-m4", "reference", "TFLM ref"), ("cortex-m4", "cmsis_nn", "TFLM CMSIS-NN")],
           "qemu-cortex-m55": [("cortex-m55", "cmsis_nn", "TFLM CMSIS-NN (Helium)")],
           "qemu-cortex-m7": [("cortex-m7", "cmsis_nn", "TFLM CMSIS-NN")],
           "qemu-cortex-m3-large": [("cortex-m3", "reference", "TFLM ref")]}
PATH_KEYS = ("path", "file", "tflite", "model")      # what a manifest entry may call its file


@dataclass(frozen=True)
class Model:
    name: str
    path: Path
    data: Path | None = None       # a data file (its first sample is the input)
    golden: Path | None = None     # an MLPerf Tiny golden file (x_int8 row 0)
    tflm: Path | None = None       # the file TFLM runs instead of `path` (its copy with TF Lite's shapes), if any

    @property
    def tflm_file(self) -> Path:
        return self.tflm or self.path


# ---- models ----

def mlperf_models(only: list[str] | None = None) -> list[Model]:
    keys = only or list(MLPERF_MODELS)
    return [Model(k, MLPERF / MLPERF_MODELS[k], golden=MLPERF / "data" / f"golden_{k}.npz") for k in keys]


def _beside(path: Path) -> Path | None:
    return next((p for p in (path.with_suffix(".npz"), path.with_name(path.stem + ".test.npz")) if p.is_file()), None)


def tflm_copy(path: Path) -> Path | None:
    """`<stem>.tflm.tflite` beside a model: the copy TFLM runs where it would not run the file as TF Lite does. A
    Keras model with batch None has the converter's placeholder batch 1 in every tensor's shape; TF Lite resizes
    them at run time, TFLite Micro never resizes a tensor, and between SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (a
    dilated Conv1D) the batch is the dilation, not 1: TFLM computes the first of the d interleaved blocks and leaves
    the other output rows as its arena held them. scripts/corpus/fold_shapes.py writes the copy with TF Lite's
    shapes (the arithmetic untouched); edgec builds the file itself (it takes the run-time batch at import)."""
    copy = path.with_name(path.stem + ".tflm.tflite")
    return copy if copy.is_file() else None


def _model(name: str, path: Path, data: Path | None) -> Model:
    return Model(name, path, data, tflm=tflm_copy(path))


def _name(path: Path) -> str:
    """A model's name in the tables: its file's stem, or its folder's name for the corpus's `<name>/model.tflite`."""
    return path.parent.name if path.stem == "model" and path.parent.name else path.stem


def corpus_models(arg: str | Path) -> list[Model]:
    """The .tflite models of a file, a folder (recursively) or a manifest (.json or .txt)."""
    src = Path(arg)
    if src.is_dir():
        return [_model(_name(p), p, _beside(p)) for p in sorted(src.rglob("*.tflite"))
                if not p.name.endswith(".tflm.tflite")]
    if not src.is_file():
        raise EdgecError(f"--models {src}: no such file or folder; give a .tflite, a folder or a manifest")
    if src.suffix == ".tflite":
        return [_model(_name(src), src, _beside(src))]
    if src.suffix == ".json":
        entries = json.loads(src.read_text())
        entries = entries.get("models", entries) if isinstance(entries, dict) else entries
        if isinstance(entries, dict):         # {name: path or entry}
            entries = [dict(e, name=e.get("name", k)) if isinstance(e, dict) else {"path": e, "name": k}
                       for k, e in entries.items()]
    else:
        entries = [line.strip() for line in src.read_text().splitlines() if line.strip() and not line.startswith("#")]
    out = []
    for e in entries:
        e = {"path": e} if isinstance(e, str) else e
        where = next((e[k] for k in PATH_KEYS if isinstance(e.get(k), str)), None)
        if where is None:
            raise EdgecError(f"{src}: entry {e} names no file ({', '.join(PATH_KEYS)})")
        path = (src.parent / where).resolve()
        if path.suffix != ".tflite":
            continue                      # a corpus manifest may list ONNX files too: TFLM runs only .tflite
        data = (src.parent / e["data"]).resolve() if e.get("data") else _beside(path)
        out.append(_model(e.get("name") or _name(path), path, data))
    return out


# ---- the TFLM bundle ----

def cache_root() -> Path:
    if os.environ.get("EDGEC_PEERS_CACHE"):
        return Path(os.environ["EDGEC_PEERS_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "edgec" / "peers"


def unpack_bundle(tarball: Path, cache: Path | None = None) -> Path:
    """The bundle's folder in the cache, unpacked on first use (into a temporary folder renamed into place, so
    concurrent runs and interrupted ones never see half a bundle)."""
    if not tarball.is_file():
        raise EdgecError(f"TFLite Micro bundle {tarball} not found; put ../shared/peers beside the checkout or "
                         "pass --bundle (or set EDGEC_PEERS_BUNDLE)")
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    cache = cache or cache_root()
    target = cache / f"{BUNDLE_ROOT}-{digest}"
    if (target / BUNDLE_ROOT / "run_tflm.py").is_file():
        return target / BUNDLE_ROOT
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
    with tarfile.open(tarball) as tf:
        tf.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    try:
        tmp.rename(target)
    except OSError:                       # another run put it there first
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    if not (target / BUNDLE_ROOT / "run_tflm.py").is_file():
        raise EdgecError(f"{tarball} did not unpack to {BUNDLE_ROOT}/run_tflm.py; is it the TFLM peer bundle?")
    return target / BUNDLE_ROOT


def run_tflm(bundle: Path, tflite: Path, cpu: str, kernels: str, board: str, inputs: Path, work: Path,
             bisect: bool = True) -> dict:
    """One run of the bundle's driver: its JSON line (with "error" if it failed)."""
    cmd = [sys.executable, str(bundle / "run_tflm.py"), str(tflite), "--cpu", cpu, "--kernels", kernels,
           "--board", board, "--input", str(inputs), "--runs", "1", "--keep", str(work)]
    if not bisect:
        cmd.append("--no-bisect")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"run_tflm.py exited {proc.returncode}: {tail}"}
    out = json.loads(line)
    if proc.returncode != 0 and "error" not in out:
        out["error"] = f"run_tflm.py exited {proc.returncode}"
    return out


def tflm_mlperf(key: str, board: str, kernels: str, bisect: bool = False) -> dict:
    """TFLM on an MLPerf Tiny .tflite with its golden x_int8 row 0, built for this edgec board's core: the
    figures of tflm_figures, or {"error": why} (what benchmarks/latency.py and memory.py compare with)."""
    cpu = next((c for c, k, _ in CONFIGS[board] if k == kernels), None)
    if cpu is None:
        return {"error": f"the TFLM bundle has no {kernels} build for {board}"}
    bundle = unpack_bundle(Path(os.environ.get("EDGEC_PEERS_BUNDLE") or DEFAULT_BUNDLE))
    with tempfile.TemporaryDirectory(prefix="edgec-peers-") as tmp:
        with np.load(MLPERF / "data" / f"golden_{key}.npz") as golden:
            np.savez(Path(tmp) / "x.npz", x0=golden["x_int8"][:1])
        j = run_tflm(bundle, MLPERF / MLPERF_MODELS[key], cpu, kernels, board, Path(tmp) / "x.npz",
                     Path(tmp) / "work", bisect)
    return j if "error" in j else tflm_figures(j)


# ---- edgec's side ----

def run_edgec(model: Model, board: str, work: Path) -> tuple[dict, np.ndarray | None, Path | None, object]:
    """Build and bench on the board: (figures, reference output bytes per output, TFLM's input file, the graph)."""
    out = work / "edgec"
    try:        # one model that edgec cannot build, feed or bench is a line of the table, not the end of the run
        rep = api.build(model.path, None, board, out)
        graph = artifact.load_graph(out)
        data, tflm_data = write_inputs(graph, input_row(model, graph), work, float_inputs(model.path))
        xq = edgec_sample(graph, data)
        r = api.bench(out, data, limit=1, report_dir=None)
    except EdgecError as e:
        return {"error": str(e)}, None, None, None
    except (KeyError, ValueError, StopIteration) as e:
        return {"error": f"no input for it in {model.golden or model.data}: {e!r}"}, None, None, None
    estimate = r["latency"].get("cycles_estimate") or {}
    code = rep["memory"].get("code") or {}
    ref = np.asarray(reference.run(graph, xq[0])).reshape(-1)
    figures = {"instructions": estimate.get("plugin_instructions_median") or r["latency"]["median"],
               "exact_count": bool(estimate), "cycles_estimate": estimate.get("median"),
               "arena_bytes": rep["memory"]["arena_bytes"], "ram_total_bytes": r["memory"].get("total_ram_bytes"),
               "flash_bytes": r["memory"]["flash_bytes"], "engine_code_bytes": code.get("model_and_runtime"),
               "stack_bytes": r["memory"].get("stack_used_bytes"), "macs": rep.get("macs"),
               "device_vs_reference": r["agreement"]["device_vs_reference"]}
    return figures, ref, tflm_data, graph


def same_outputs(graph, ref: np.ndarray, tflm: dict) -> bool:
    """edgec's reference output (the device's, when the bench found them equal) against TFLM's bytes, port by
    port: a float32 output of the file after an integer port of edgec's (a DEQUANTIZE at the model's end) is
    compared as the integers TFLM dequantized, quantized back with the port's scale (exact: TFLM's float is
    (q - zero point) x scale); a float32 port of edgec's (a float tail) by its float bits; the others as integers."""
    outs, ref = tflm.get("outputs", []), np.asarray(ref).reshape(-1)
    if len(outs) != len(ports.outputs(graph)):
        return _same_detections(graph, ref, outs)
    for o, p in zip(outs, ports.outputs(graph)):
        t, mine = graph.tensors[p.tensor], ref[p.start:p.start + p.size]
        y = np.frombuffer(bytes.fromhex(o["hex"]), np.dtype(o["dtype"]))
        if t.dtype == "float32":
            same = y.dtype == np.float32 and mine.astype(np.float32).tobytes() == y.tobytes()
        else:
            if y.dtype == np.float32:
                info = np.iinfo(DTYPES[t.dtype])
                y = np.clip(np.rint(y / np.float32(t.scale)) + t.zero_point, info.min, info.max)
            same = y.size == mine.size and np.array_equal(y.astype(np.int64), mine.astype(np.int64))
        if not same:
            return False
    return True


def _same_detections(graph, ref: np.ndarray, outs: list) -> bool:
    """TFLite_Detection_PostProcess's four float32 outputs (boxes, classes, scores, count) against edgec's one packed
    port [6D+1], in their defined part (edgec/ops/detection.py `defined`: TFLM leaves the rows past the count as
    its arena held them)."""
    from edgec.ops import detection
    (port,) = ports.outputs(graph) if len(ports.outputs(graph)) == 1 else (None,)
    if port is None or graph.tensors[port.tensor].dtype != "float32" or any(o["dtype"] != "float32" for o in outs):
        return False
    y = np.concatenate([np.frombuffer(bytes.fromhex(o["hex"]), np.float32) for o in outs])
    if y.size != port.size:
        return False
    d = (port.size - 1) // 6
    mine = np.asarray(ref[port.start:port.start + port.size], np.float32)
    return detection.defined(y[None], d).tobytes() == detection.defined(mine[None], d).tobytes()


def tflm_figures(j: dict) -> dict:
    parts = j.get("code_by_part") or {}
    return {"instructions": j["instructions"], "arena_bytes": j.get("arena_min_bytes") or j["arena_used_bytes"],
            "arena_used_bytes": j["arena_used_bytes"], "ram_total_bytes": j["ram_total_bytes"],
            "flash_bytes": j["flash_total_bytes"], "stack_bytes": j["stack_used_bytes"],
            "engine_code_bytes": sum(parts.get(k, {}).get("text", 0) for k in ("tflm", "cmsis_nn")) or None}


def measure(models: list[Model], boards: list[str], bundle: Path, kernels: set[str] | None = None,
            bisect: bool = True, log=lambda s: print(s, file=sys.stderr, flush=True),
            progress=lambda rows: None) -> list[dict]:
    """The rows of every model and board; `progress(rows)` after each (a long run stopped half-way keeps them)."""
    rows = []
    for model in models:
        for board in boards:
            row = {"model": model.name, "file": str(model.path), "board": board, "peers": []}
            with tempfile.TemporaryDirectory(prefix="edgec-peers-") as tmp:
                work = Path(tmp)
                row["edgec"], ref, tflm_input, graph = run_edgec(model, board, work)
                if tflm_input is None:
                    log(f"{model.name} {board}: edgec: {row['edgec']['error']}")
                    rows.append(row)
                    progress(rows)
                    continue
                for cpu, kern, label in CONFIGS[board]:
                    if kernels and kern not in kernels:
                        continue
                    j = run_tflm(bundle, model.tflm_file, cpu, kern, board, tflm_input, work / f"tflm-{kern}", bisect)
                    peer = {"engine": label, "cpu": cpu, "kernels": kern}
                    if model.tflm:
                        peer["file"] = str(model.tflm)
                    if "error" in j:
                        peer["error"] = j["error"]
                    else:
                        peer.update(tflm_figures(j), identical=row["edgec"]["device_vs_reference"] == 1.0
                                    and same_outputs(graph, ref, j))
                        peer["ratio"] = row["edgec"]["instructions"] / peer["instructions"]
                    row["peers"].append(peer)
                    log(f"{model.name} {board} {label}: " + (peer.get("error") or
                        f"edgec {row['edgec']['instructions']:,.0f} / TFLM {peer['instructions']:,} insns, "
                        f"identical={peer['identical']}"))
            rows.append(row)
            progress(rows)
    return rows


# ---- tables ----

def _n(v) -> str:
    return "" if v is None else f"{round(v):,}"


def table(rows: list[dict]) -> str:
    """One line per model, board and engine: edgec's line, then each TFLM build's with edgec's ratio to it."""
    lines = ["| model | board | engine | instructions | edgec / this | arena B | total RAM B | flash B "
             "| engine code B | outputs |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        e = r["edgec"]
        if "error" in e:
            lines.append(f"| {r['model']} | {r['board']} | edgec | does not build: {e['error'][:100]} | | | | | | |")
            continue
        lines.append(f"| {r['model']} | {r['board']} | edgec | {_n(e['instructions'])} | 1.00 | {_n(e['arena_bytes'])} "
                     f"| {_n(e['ram_total_bytes'])} | {_n(e['flash_bytes'])} | {_n(e['engine_code_bytes'])} | "
                     f"{'= reference' if e['device_vs_reference'] == 1.0 else 'DIFFERS from its reference'} |")
        for p in r["peers"]:
            if "error" in p:
                lines.append(f"| {r['model']} | {r['board']} | {p['engine']} | does not run: {p['error'][:100]} "
                             "| | | | | | |")
                continue
            engine = p["engine"] + (" (on `.tflm.tflite`)" if p.get("file") else "")
            lines.append(f"| {r['model']} | {r['board']} | {engine} | {_n(p['instructions'])} | {p['ratio']:.2f} "
                         f"| {_n(p['arena_bytes'])} | {_n(p['ram_total_bytes'])} | {_n(p['flash_bytes'])} "
                         f"| {_n(p['engine_code_bytes'])} | {'identical' if p['identical'] else 'DIFFER'} |")
    return "\n".join(lines)


def ratio_table(rows: list[dict]) -> str:
    """edgec's instructions / TFLM's, a model a line, a board and TFLM build a column."""
    cols = [(b, label) for b in CONFIGS for _, _, label in CONFIGS[b]
            if any(r["board"] == b and any(p["engine"] == label for p in r["peers"]) for r in rows)]
    models = list(dict.fromkeys(r["model"] for r in rows))
    lines = ["| model | " + " | ".join(f"{b.removeprefix('qemu-')} vs {label}" for b, label in cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for m in models:
        cells = []
        for b, label in cols:
            p = next((p for r in rows if r["model"] == m and r["board"] == b for p in r["peers"]
                      if p["engine"] == label), None)
            cells.append("" if p is None else p.get("error", "")[:30] or f"{p['ratio']:.2f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


NOTE = ("instructions: exact emulated instructions of one inference (QEMU -icount shift=0, counted by a TCG plugin "
        "on both sides, the same input bytes); arena: edgec's planned arena, TFLM's smallest arena that works; total "
        "RAM: .data + .bss + arena + measured stack high-water mark; flash: the whole firmware image (code, weights, "
        "constants; harness and C library included); engine code: edgec's model library + runtime functions, TFLM's "
        "library + CMSIS-NN .text; outputs: edgec's device output equals its NumPy reference, and that equals TFLM's "
        "output bytes (a file with float ends, QUANTIZE first and DEQUANTIZE last: TFLM gets the float values of the "
        "same input bytes, and its float outputs are compared as the integers they dequantize).")
BEGIN, END = "<!-- peers.py: begin -->", "<!-- peers.py: end -->"


def markdown(rows: list[dict], command: str) -> str:
    return (f"{BEGIN}\nGenerated by `{command}` (one run, {datetime.date.today().isoformat()}).\n\n{ratio_table(rows)}\n\n{table(rows)}\n\n{NOTE}\n{END}")


def write_doc(path: Path, text: str) -> None:
    """Replace the generated section of a doc (between the markers), or append it."""
    doc = path.read_text() if path.is_file() else ""
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + text + doc[doc.index(END) + len(END):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    path.write_text(doc)


def shown_command(argv: list[str] | None) -> str:
    """The command line that made the tables, without where it wrote them (--json, --md)."""
    args, shown = list(argv if argv is not None else sys.argv[1:]), ["benchmarks/peers.py"]
    while args:
        a = args.pop(0)
        if a in ("--json", "--md"):
            args = args[1:]
        elif not a.startswith(("--json=", "--md=")):
            shown.append(a)
    return " ".join(shown)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", action="append", default=[], help=".tflite file, folder or manifest (repeatable)")
    ap.add_argument("--no-mlperf", action="store_true", help="leave out the four MLPerf Tiny models")
    ap.add_argument("--only", help="comma-separated model names to keep (kws,vww,ic,ad or corpus stems)")
    ap.add_argument("--boards", default=",".join(CONFIGS), help=f"comma-separated, of {', '.join(CONFIGS)}")
    ap.add_argument("--kernels", help="comma-separated TFLM kernels to run: reference, cmsis_nn (default both)")
    ap.add_argument("--no-bisect", action="store_true", help="skip TFLM's smallest-arena search (arena = used)")
    ap.add_argument("--bundle", default=os.environ.get("EDGEC_PEERS_BUNDLE") or str(DEFAULT_BUNDLE))
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--md", help="write the tables into this Markdown file (between peers.py markers)")
    args = ap.parse_args(argv)
    try:
        boards = [b for b in args.boards.split(",") if b]
        unknown = [b for b in boards if b not in CONFIGS]
        if unknown:
            raise EdgecError(f"--boards: no TFLM build for {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
        only = [k for k in (args.only or "").split(",") if k]
        models = [] if args.no_mlperf else mlperf_models([k for k in only if k in MLPERF_MODELS] if only else None)
        for m in args.models:
            models += corpus_models(m)
        models = [m for m in models if not only or m.name in only]
        missing = [str(m.path) for m in models if not m.path.is_file()]
        if missing:
            raise EdgecError(f"model file(s) not found: {', '.join(missing)}")
        if not models:
            raise EdgecError("no models to run: check --models / --only")
        bundle = unpack_bundle(Path(args.bundle))
        kernels = set(args.kernels.split(",")) if args.kernels else None
        save = (lambda rows: Path(args.json).write_text(json.dumps(rows, indent=1))) if args.json else (lambda rows: None)
        rows = measure(models, boards, bundle, kernels, not args.no_bisect, progress=save)
    except EdgecError as e:
        print(f"peers.py: error: {e}", file=sys.stderr)
        return 2
    print(ratio_table(rows) + "\n\n" + table(rows) + "\n\n" + NOTE)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.md:
        write_doc(Path(args.md), markdown(rows, f".venv/bin/python {shown_command(argv)}"))
    differ = [f"{r['model']}@{r['board']} vs {p['engine']}" for r in rows for p in r["peers"]
              if "error" not in p and not p["identical"]]
    if differ:
        print(f"peers.py: error: outputs differ from TFLite Micro: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
