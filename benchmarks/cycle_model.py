"""The cycle estimate with the memory timing of real parts, for edgec and TFLite Micro + CMSIS-NN, against the
published silicon latencies of the MLPerf Tiny models on NUCLEO-L4R5ZI.

    .venv/bin/python benchmarks/cycle_model.py                          # the four models, M4 and M7
    .venv/bin/python benchmarks/cycle_model.py --models kws --boards qemu-cortex-m4
    .venv/bin/python benchmarks/cycle_model.py --boards qemu-cortex-m55   # Helium: the beats, no real part
    .venv/bin/python benchmarks/cycle_model.py --md docs/performance.md  # rewrites the generated block
    .venv/bin/python benchmarks/cycle_model.py --boards qemu-cortex-m4 --select-for nucleo-l4r5zi --engines edgec
        # edgec's kernels chosen as a nucleo-l4r5zi build chooses them (flash reads weighed), run on the emulator
    .venv/bin/python benchmarks/cycle_model.py --boards qemu-cortex-m4 --engines edgec --weights-in-ram
        # edgec built with --weights-in-ram: the weights and requantization records copied into SRAM at startup
    .venv/bin/python benchmarks/cycle_model.py --boards qemu-cortex-m4 --engines edgec --weights-in-ram --code-in-ram
        # the same, and in the same run edgec built also with --code-in-ram: the kernels run from the code RAM
        # (on the emulator the profile's stand-in window, weighed as the L4R5's SRAM2: edgec/targets/code_ram.py)
    .venv/bin/python benchmarks/cycle_model.py --boards qemu-cortex-m4 --select-for nucleo-l4r5zi --engines edgec --stage
        # and in the same run edgec built also with the reused weights staged in RAM as a build for the real part
        # stages them (edgec/lower/weight_staging.py: --select-for's part, else STAGE_PART's for the core)

For each MLPerf Tiny model (its INT8 .tflite, golden x_int8 row 0) and emulated board: edgec builds and benches
it (the bench's cycle estimate weighs, in the same QEMU run, every real part of the same core whose profile has
a [[cycle_model]]: boards/nucleo-l4r5zi.toml, nucleo-f446re.toml on the M4, nucleo-h743zi2.toml caches off and on
on the M7), then TFLite Micro + CMSIS-NN from ../shared/peers runs the same file and input on the same QEMU
machine, and the same plugin weighs its timed Invoke() (bench_mark_start to bench_mark_stop) with the same
timings. Published figures (ms at the board's clock, ../shared/docs/landscape.md section 0, MLPerf Tiny results
repositories): TFLM v2.3.1 + CMSIS-NN, the v0.5 reference submission on NUCLEO-L4R5ZI (the only published
silicon latency of TFLM + CMSIS-NN on these models; an older TFLM and CMSIS-NN than the bundle's, so its
"error" mixes the model's error with 5 years of kernel work), and X-CUBE-AI 10.2 (v1.3), the acceptance bar.
"""
from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import peers  # noqa: E402
from edgec import api  # noqa: E402
from edgec.bench import cycles  # noqa: E402
from edgec.lower import lowering  # noqa: E402
from edgec.ops import select  # noqa: E402
from edgec.quant import artifact  # noqa: E402
from edgec.settings import Settings  # noqa: E402
from edgec.targets import elf  # noqa: E402
from edgec.targets.boards import load_board  # noqa: E402

# published latency on NUCLEO-L4R5ZI at 120 MHz, ms (landscape.md section 0)
TFLM_V05 = {"kws": 181.92, "vww": 600.60, "ic": 704.23, "ad": 10.05}
XCUBE_102 = {"kws": 43.42, "vww": 89.44, "ic": 165.67, "ad": 4.79}
PUBLISHED_BOARD = "nucleo-l4r5zi"
STAGE_PART = {"qemu-cortex-m4": "nucleo-l4r5zi", "qemu-cortex-m7": "nucleo-h743zi2"}   # --stage without --select-for
TFLM_CPU = {"qemu-cortex-m4": "cortex-m4", "qemu-cortex-m7": "cortex-m7", "qemu-cortex-m55": "cortex-m55"}


def part_chooser(part: str | None):
    """The per-layer kernel chooser a build for the real part uses beyond its tuning log (its flash reads weighed:
    edgec/ops/select.py memory_chooser), for a build on the emulated board; None: the emulated board's own."""
    if part is None:
        return None
    real = load_board(part)
    return select.memory_chooser(lowering.flash_byte_cycles(real), lowering.has_arm_dsp(real))


def edgec_parts(key: str, board: str, work: Path, select_for: str | None = None, weights_in_ram: bool = False,
                code_in_ram: bool = False, stage_for: str | None = None) -> tuple[dict, dict]:
    """edgec on the board: (the bench's cycles_estimate, figures: instructions, exactness, RAM); select_for: its
    kernels chosen as a build for that real part chooses them; weights_in_ram: built with --weights-in-ram;
    code_in_ram: with --code-in-ram; stage_for: the reused weights staged in RAM as that real part's build stages
    them."""
    model = peers.mlperf_models([key])[0]
    out = work / "edgec"
    built = api.build(model.path, None, board, out, choose=None if weights_in_ram else part_chooser(select_for),
                      weights_in_ram=weights_in_ram, code_in_ram=code_in_ram, stage_for=stage_for)
    graph = artifact.load_graph(out)
    data, _ = peers.write_inputs(graph, peers.input_row(model, graph), work)
    r = api.bench(out, data, limit=1, report_dir=None)
    est = r["latency"]["cycles_estimate"]
    return est, {"instructions": est["plugin_instructions_median"], "ram": built["memory"]["ram_bytes"],
                 "weights_in_ram": built["memory"]["weights_in_ram_bytes"],
                 "code_in_ram": built["memory"].get("code_in_ram_bytes", 0),
                 "arena": built["memory"]["arena_bytes"], "staged": built["memory"]["staged_weights"],
                 "exact": r["agreement"]["device_vs_reference"]}


def tflm_parts(key: str, board_name: str, work: Path, select_for: str | None = None, weights_in_ram: bool = False
               ) -> tuple[dict, dict]:
    """TFLM + CMSIS-NN on the same QEMU machine, its kept firmware re-run under the cycle plugin."""
    board = load_board(board_name)
    bundle = peers.unpack_bundle(peers.DEFAULT_BUNDLE)
    with np.load(peers.MLPERF / "data" / f"golden_{key}.npz") as golden:
        np.savez(work / "x.npz", x0=golden["x_int8"][:1])
    j = peers.run_tflm(bundle, peers.MLPERF / peers.MLPERF_MODELS[key], TFLM_CPU[board_name], "cmsis_nn",
                       board_name, work / "x.npz", work / "tflm", bisect=False)
    if "error" in j:
        raise SystemExit(f"TFLM on {key}/{board_name}: {j['error']}")
    fw = work / "tflm" / "fw.elf"
    plugin = cycles.build_plugin(Settings.from_environment())
    out = work / "tflm-windows.txt"
    cmd = [*board.emulator_command, "-serial", "null", "-kernel", str(fw),
           *cycles.peer_args(plugin, out, elf.code_address(fw, "bench_mark_start"),
                             elf.code_address(fw, "bench_mark_stop"), board)]
    subprocess.run(cmd, capture_output=True, timeout=1800, check=False)
    windows = cycles.read_windows(out)
    if not windows or windows[-1][0] != j["instructions"]:
        raise SystemExit(f"TFLM on {key}/{board_name}: the plugin's last window ({windows[-1:]}) is not the "
                         f"driver's inference ({j['instructions']} instructions)")
    return cycles.summary(windows[-1:], 1, board), {"instructions": j["instructions"], "exact": j.get("exact")}


def rows_for(key: str, board: str, select_for: str | None = None, engines: tuple[str, ...] = ("edgec", "tflm"),
             weights_in_ram: bool = False, code_in_ram: bool = False, stage: bool = False) -> list[dict]:
    rows = []
    runs = [("edgec", edgec_parts), ("TFLM + CMSIS-NN", tflm_parts)]
    if stage:           # before and after in one run: the same build without and with the weights staged in RAM
        runs.insert(1, ("edgec staged", functools.partial(edgec_parts, stage_for=select_for or STAGE_PART[board],
                                                          code_in_ram=code_in_ram)))   # with --code-in-ram: both
    if code_in_ram:     # before and after in one run: the same build without and with --code-in-ram
        runs.insert(1, ("edgec code", functools.partial(edgec_parts, code_in_ram=True)))
    with tempfile.TemporaryDirectory(prefix="edgec-cycles-") as tmp:
        for engine, fn in runs:
            if engine.split()[0].lower() not in engines:
                continue
            w = Path(tmp) / engine.replace(" ", "-")
            w.mkdir()
            est, fig = fn(key, board, w, select_for, weights_in_ram)
            if engine.startswith("edgec") and fig["exact"] != 1.0:
                raise SystemExit(f"edgec on {key}/{board} ({engine}): device != reference ({fig['exact']})")
            code = f"--code-in-ram ({fig['code_in_ram']:,} B of code in the code RAM) " if engine == "edgec code" else ""
            if engine.startswith("edgec") and weights_in_ram:
                engine = (f"edgec --weights-in-ram {code}({fig['weights_in_ram']:,} B of weights and records in RAM; RAM "
                          f"{fig['ram']:,} B)")
            elif engine == "edgec code":
                engine = f"edgec {code}(RAM {fig['ram']:,} B)"
            elif engine == "edgec staged":
                st = fig["staged"]
                engine = (f"edgec, {'--code-in-ram, ' if code_in_ram else ''}weights staged for "
                          f"{select_for or STAGE_PART[board]} ({st['layers']} layers, "
                          f"{st['bytes']:,} B copied, arena {fig['arena']:,} B)")
            elif engine == "edgec" and stage:
                engine = (f"edgec{', kernels for ' + select_for if select_for else ''} (arena {fig['arena']:,} B)")
            elif engine == "edgec" and select_for:
                engine = f"edgec, kernels for {select_for}"
            base = {"model": key, "board": board, "engine": engine, "instructions": fig["instructions"]}
            rows.append({**base, "part": "0 wait states", "cycles": est["median"]})
            for p in est.get("parts", []):
                published = None
                if p["board"] == PUBLISHED_BOARD:
                    published = (XCUBE_102 if engine.startswith("edgec") else TFLM_V05)[key] * 1e-3 * 120e6
                rows.append({**base, "part": f"{p['board']} {p['memory']}", "cycles": p["median"], "ms": p["ms"],
                             "published": published})
    return rows


def markdown(rows: list[dict], command: str) -> str:
    lines = [f"Generated by `{command}`.", "",
             "| model | engine | emulated board | memory timing | instructions | cycles est. | ms est. | "
             "published (cycles) | est. / published |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        pub = r.get("published")
        against = "X-CUBE-AI 10.2" if r["engine"].startswith("edgec") else "TFLM v2.3.1 (v0.5 ref.)"
        lines.append(f"| {r['model']} | {r['engine']} | {r['board']} | {r['part']} | {r['instructions']:,.0f} | "
                     f"{r['cycles']:,.0f} | {r['ms']:.2f} | " if r.get("ms") is not None else
                     f"| {r['model']} | {r['engine']} | {r['board']} | {r['part']} | {r['instructions']:,.0f} | "
                     f"{r['cycles']:,.0f} | | ")
        lines[-1] += (f"{against}: {pub:,.0f} | {r['cycles'] / pub:.2f} |" if pub else " | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="kws,vww,ic,ad")
    ap.add_argument("--boards", default="qemu-cortex-m4,qemu-cortex-m7")
    ap.add_argument("--select-for", help="choose edgec's kernels as a build for this real board does (its flash "
                                         "reads weighed), e.g. nucleo-l4r5zi")
    ap.add_argument("--engines", default="edgec,tflm")
    ap.add_argument("--weights-in-ram", action="store_true", help="build edgec with --weights-in-ram (the weight "
                    "tensors and their requantization records copied into SRAM at startup)")
    ap.add_argument("--code-in-ram", action="store_true", help="also build edgec with --code-in-ram (the kernels "
                    "run from the board's code RAM), in the same run")
    ap.add_argument("--stage", action="store_true", help="also build edgec with the reused weights staged in RAM "
                    "as a build for the real part stages them (--select-for's, else the core's: STAGE_PART), in the "
                    "same run")
    ap.add_argument("--md", help="rewrite the <!-- cycle_model.py --> block of this Markdown file")
    a = ap.parse_args(argv)
    engines = tuple(a.engines.split(","))
    rows = [r for k in a.models.split(",") for b in a.boards.split(",") for r in rows_for(k, b, a.select_for, engines,
                                                                                      a.weights_in_ram, a.code_in_ram,
                                                                                      a.stage)]
    text = markdown(rows, "python benchmarks/cycle_model.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print(text)
    if a.md:
        doc = Path(a.md).read_text()
        begin, end = "<!-- cycle_model.py: begin -->\n", "<!-- cycle_model.py: end -->"
        if begin not in doc or end not in doc:
            raise SystemExit(f"{a.md} has no {begin.strip()} ... {end} block")
        head, rest = doc.split(begin, 1)
        Path(a.md).write_text(head + begin + text + end + rest.split(end, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
