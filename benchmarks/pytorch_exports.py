"""Emulated instructions of the real PyTorch exports (examples/gesture_rnn/pytorch, examples/transformer_digits/
pytorch) on the emulated boards, with accuracy and bit-exactness on the whole test set.

    .venv/bin/python benchmarks/pytorch_exports.py                                   # all 16 files, M4 and M3
    .venv/bin/python benchmarks/pytorch_exports.py --boards qemu-cortex-m4 --models mha,encoder
    .venv/bin/python benchmarks/pytorch_exports.py --json results.json

For every file and board: `edgec build` (calibrated on the example's calib.npz), `edgec bench --profile` on
the example's test.npz (float and device top-1, device vs NumPy reference), and print the emulated
instructions per inference (QEMU -icount: exact), per MAC, and for the transformers the attention block
(from the layer that makes q/k/v, in_proj, through out_proj, the fully connected layer after the context
product): its instructions, MACs and instructions per MAC, and the two activation products (scores, context)
per MAC.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edgec import api  # noqa: E402

EXAMPLES = REPO / "examples"
FOLDERS = {"lstm": "gesture_rnn", "gru": "gesture_rnn", "encoder": "transformer_digits", "mha": "transformer_digits"}


def attention_block(layers: list[dict]) -> dict | None:
    """in_proj (the last fully connected layer before the first matmul) through out_proj (the first fully
    connected layer after the last matmul): instructions, MACs, and the products' own figures."""
    mm = [i for i, r in enumerate(layers) if r["kind"] == "matmul"]
    if not mm:
        return None
    fc = [i for i, r in enumerate(layers) if r["kind"].startswith("fully_connected")]
    first = max(i for i in fc if i < mm[0])
    last = min(i for i in fc if i > mm[-1])
    block = layers[first:last + 1]
    units, macs = sum(r["units"] for r in block), sum(r["macs"] for r in block)
    products = [dict(name=layers[i]["name"], units=layers[i]["units"], macs=layers[i]["macs"],
                     per_mac=layers[i]["units"] / layers[i]["macs"]) for i in mm]
    return dict(units=units, macs=macs, per_mac=units / macs, products=products)


def measure(model: Path, board: str, work: Path) -> dict:
    folder = model.parent.parent
    out = work / f"{model.stem}-{board}"
    api.build(model, folder / "calib.npz", board, out)
    r = api.bench(out, folder / "test.npz", profile=True, report_dir=None)
    lat = r["latency"]
    units = lat["median"]
    return dict(model=model.relative_to(EXAMPLES).as_posix(), board=board, samples=r["samples"],
                float=r["accuracy"]["float"], device=r["accuracy"]["device"],
                bit_exact=r["agreement"]["device_vs_reference"], instructions=units, macs=r["macs"],
                per_mac=units / r["macs"], attention=attention_block(r["profile"]["layers"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", default="qemu-cortex-m4,qemu-cortex-m3")
    ap.add_argument("--models", default=",".join(FOLDERS), help="comma-separated: " + ", ".join(FOLDERS))
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="edgec-exports-") as tmp:
        for kind in args.models.split(","):
            for model in sorted((EXAMPLES / FOLDERS[kind] / "pytorch").glob(f"{kind}_*.onnx")):
                for board in args.boards.split(","):
                    row = measure(model, board, Path(tmp))
                    rows.append(row)
                    att = row["attention"]
                    extra = "" if att is None else (
                        f"  attention {att['units']:,.0f} / {att['macs']:,} MACs = {att['per_mac']:.2f}; products "
                        + ", ".join(f"{p['per_mac']:.2f}" for p in att["products"]))
                    print(f"{row['model']:50s} {board:15s} float {row['float']:.2%} device {row['device']:.2%} "
                          f"bit-exact {row['bit_exact']:.2%}  {row['instructions']:,.0f} instr "
                          f"({row['per_mac']:.2f}/MAC){extra}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
