"""A larger evaluation set for each .onnx of the corpus, so that "edgec's INT8 as close to float as ONNX Runtime's
static INT8" is a measurement and not a coin flip (the oracle's 1-4 stored samples decided it before).

The inputs are not stored (32 images of 96x96 would be a megabyte per model): they are drawn again, deterministically,
by the generator that made the model's calibration set, continued past the draws it used. The generator is found
by reproducing `calib.npz` bit for bit (the exporters' seeded NumPy draws, the uniform draws `oracles.py` made for a
shipped model, or rows of a data file); the evaluation samples are its draws EVAL_START.., disjoint from the
calibration set (and from the 32 draws the exporters set BatchNorm statistics from). Stored in the model's
oracle.npz beside the oracle's own keys: `eval_recipe` (how the inputs are drawn), `eval_x_sha256` (of the float32
inputs: a generator that changed is caught, not silently compared), `eval_float<k>` (ONNX Runtime float) and
`eval_ort_int8_<k>` (ONNX Runtime's quantize_static INT8, calibrated on calib.npz, default settings).

    python scripts/corpus/evaluation.py [--only NAME ...] [--force]
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402
from oracles import _stacked, as_onnx, calibration, input_grid, onnx_input_list, onnx_inputs, onnx_runs, pack, \
    shipped_inputs  # noqa: E402

EVAL_SAMPLES = 32
EVAL_START = 32          # the exporters drew 32 samples (BatchNorm statistics); calib.npz keeps the first 8
EVAL_MIN_SAMPLES = 8     # fewer than 32 (not fewer than this) where a sample's outputs are large (detectors) ...
OUTPUT_BYTES = 256 * 1024    # ... to keep the stored float and ORT INT8 outputs of a model under about this


def _seed(name: str) -> int:
    return sum(map(ord, name))


def _normal(seed_name: str, shape, n: int, image_axis: int | None) -> np.ndarray:
    """scripts/corpus/export_torch.py `inputs` (image_axis 0: channels first, smooth along the last axis) and
    export_tf.py `calibration` (image_axis -1: channels last, smooth along the second last)."""
    x = np.random.default_rng(_seed(seed_name)).standard_normal((n, *shape)).astype(np.float32)
    if image_axis == 0 and len(shape) == 3 and shape[0] == 3:
        x = np.cumsum(x, axis=-1) / np.sqrt(shape[-1]) * 0.5 + 0.5
    if image_axis == -1 and len(shape) == 3 and shape[-1] == 3:
        x = np.cumsum(x, axis=-2) / np.sqrt(shape[-2]) * 0.5 + 0.5
    return x.astype(np.float32)


def _recipes(name: str, entry: dict, shape):
    """(description, draw(n) -> the generator's first n samples) for each generator a model's calibration set may
    come from."""
    names = [name] + re.findall(r"tests/corpus/(\w+)", str(entry.get("source", {}).get("architecture", "")))
    exporters = [("export_torch.py inputs", 0), ("export_tf.py calibration", -1)]
    if "export_tf" in str(entry.get("source", {}).get("made_by", "")):    # the same draws but for images: named
        exporters.reverse()                                                 # after the script that made the model
    for seed_name in dict.fromkeys(names):
        for label, axis in exporters:
            yield (f"{label}('{seed_name}')", lambda n, s=seed_name, a=axis: _normal(s, shape, n, a))
    lo, hi = entry.get("input_range") or (0, 1)
    yield (f"oracles.py uniform({lo}, {hi}) draws of '{name}'",
           lambda n: shipped_inputs(name, n, (1, *shape), 3, entry.get("input_range")))
    path = manifest.CORPUS / entry["file"]
    grid = input_grid(path, onnx_inputs(path, name)[0]) if path.suffix == ".onnx" and path.is_file() else None
    if grid is not None:               # an integer input read by a DequantizeLinear: integers over its whole range
        scale, zero, dtype = grid
        info = np.iinfo(dtype)
        yield (f"export_tf_tenth.py integer draws on the input grid of '{name}'",
               lambda n: ((np.random.default_rng(_seed(name)).integers(info.min, info.max + 1, (n, *shape)) - zero)
                          * scale).astype(np.float32))
    data = manifest.ROOT / "examples" / "shapes_detector" / "calib.npz"     # the shapes detectors' images
    if data.is_file():
        rows = np.load(data)["x"].astype(np.float32)
        if rows.shape[1:] == tuple(shape):
            yield ("rows of examples/shapes_detector/calib.npz", lambda n: rows[:n])


def _as_calibrated(x: np.ndarray) -> np.ndarray:
    """As manifest.save_calibration stores it: images as 8-bit pixels / 255."""
    return (np.clip(np.round(x * 255), 0, 255) / 255).astype(np.float32) if manifest.is_image(x) else x


def several_normal(name: str, k: int, shape, n: int) -> np.ndarray:
    """The first n draws of input k of a model with several inputs (the corpus's multi-input exporters,
    scripts/corpus/export_*_multi.py, made their calibration sets so): standard normal, each input its own
    generator seeded by the model's name and the input's index."""
    return np.random.default_rng(_seed(name) + 1000 * k).standard_normal((n, *shape)).astype(np.float32)


def _several(name: str, entry: dict, n: int) -> tuple[list[np.ndarray], str]:
    """evaluation_inputs of a model with several inputs, one array per input (the model's order)."""
    path = manifest.CORPUS / entry["file"]
    names = [i for i, _ in onnx_input_list(path)]
    calib = calibration(path.parent / "calib.npz", names)
    start = max(EVAL_START, len(calib[0]))
    if all(np.array_equal(several_normal(name, k, c.shape[1:], len(c)), c) for k, c in enumerate(calib)):
        return ([several_normal(name, k, c.shape[1:], start + n)[start:] for k, c in enumerate(calib)],
                f"evaluation.py several_normal('{name}', input k)[{start}:{start + n}]")
    raise LookupError(f"{name}: no known generator reproduces its calib.npz; its evaluation set cannot be drawn")


def several_inputs(entry: dict) -> bool:
    """Whether the model (an .onnx) has several inputs."""
    path = manifest.CORPUS / entry["file"]
    return path.suffix == ".onnx" and path.is_file() and len(onnx_input_list(path)) > 1


def evaluation_inputs(name: str, entry: dict, n: int = EVAL_SAMPLES) -> tuple[np.ndarray, str]:
    """(n evaluation inputs, the recipe): draws EVAL_START.. of the generator that reproduces calib.npz; several
    inputs: packed (N, total), each input flattened, in the model's order."""
    if several_inputs(entry):
        x, recipe = _several(name, entry, n)
        return pack(x), recipe
    path = manifest.CORPUS / entry["file"]
    calib = np.load(path.parent / "calib.npz")["x"].astype(np.float32)
    start = max(EVAL_START, len(calib))
    for recipe, draw in _recipes(name, entry, calib.shape[1:]):
        first = draw(len(calib))
        for stored in (_as_calibrated, np.asarray):     # (a shipped model's draws are stored as drawn)
            if len(first) == len(calib) and np.array_equal(stored(first), calib):
                x = draw(start + n)[start:]
                if len(x) == n:
                    return stored(x), f"{recipe}[{start}:{start + n}]"
    raise LookupError(f"{name}: no known generator reproduces its calib.npz; its evaluation set cannot be drawn")


def x_sha256(x: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(x, np.float32).tobytes()).hexdigest()


def stored_inputs(name: str, entry: dict, oracle) -> np.ndarray | None:
    """The evaluation inputs the oracle's eval_* outputs were computed on, drawn again (None: the oracle has none);
    a generator that no longer gives the same inputs is an error, not another measurement."""
    if "eval_x_sha256" not in oracle:
        return None
    # (outputs go by index: one ORT's float run does not give as floats, a classifier's int64 label, has none)
    n = len(oracle[min((k for k in list(oracle) if k.startswith("eval_float")), key=lambda k: int(k[10:]))])
    x, _ = evaluation_inputs(name, entry, n)
    if x_sha256(x) != str(oracle["eval_x_sha256"]):
        raise ValueError(f"{name}: the evaluation inputs drawn again are not those of the stored oracle "
                         f"({oracle['eval_recipe']}): python scripts/corpus/evaluation.py --force --only {name}")
    return x


def evaluation_oracle(name: str, entry: dict) -> dict:
    path = manifest.CORPUS / entry["file"]
    with tempfile.TemporaryDirectory() as tmp:      # (a float .tflite: its float ONNX translation)
        source = as_onnx(path, Path(tmp))
        if several_inputs(entry):
            x, recipe = _several(name, entry, EVAL_SAMPLES)
            names = [i for i, _ in onnx_input_list(source)]
            calib = calibration(path.parent / "calib.npz", names)
            floats, ints, note = onnx_runs(source, names, calib, x)
            x, calib = pack(x), calib[0]
        else:
            x, recipe = evaluation_inputs(name, entry)
            calib = np.load(path.parent / "calib.npz")["x"].astype(np.float32)
            floats, ints, note = onnx_runs(source, onnx_inputs(source, name)[0], calib, x)
    per_sample = 2 * sum(np.asarray(o).nbytes for o in floats[0])
    n = max(EVAL_MIN_SAMPLES, min(EVAL_SAMPLES, OUTPUT_BYTES // per_sample))
    x, floats, ints = x[:n], floats[:n], None if ints is None else ints[:n]
    start = max(EVAL_START, len(calib))
    recipe = f"{recipe.rsplit('[', 1)[0]}[{start}:{start + n}]"
    arrays = {"eval_recipe": recipe, "eval_x_sha256": x_sha256(x), "eval_oracle": note,
              **{"eval_" + k: v for k, v in _stacked("float", floats).items()}}
    if ints is not None:
        arrays.update({"eval_" + k: v for k, v in _stacked("ort_int8_", ints).items()})
    return arrays


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--force", action="store_true", help="again where the oracle has an evaluation set")
    args = ap.parse_args(argv)
    for name, entry in manifest.load().items():
        path = manifest.CORPUS / entry["file"]
        out = path.parent / "oracle.npz"
        if (args.only and name not in args.only) or entry["format"] not in ("onnx", "tflite-float") \
                or not path.is_file() \
                or not out.is_file():
            continue
        oracle = dict(np.load(out))
        if "eval_x_sha256" in oracle and not args.force:
            continue
        if str(oracle["sha256"]) != entry["sha256"]:
            print(f"{name}: skipped, the stored oracle is for other bytes", file=sys.stderr)
            continue
        oracle = {k: v for k, v in oracle.items() if not k.startswith("eval_")}
        oracle.update(evaluation_oracle(name, entry))
        np.savez_compressed(out, **{k: np.asarray(v) for k, v in oracle.items()})
        print(f"{name}: {oracle['eval_recipe']}; {oracle['eval_oracle']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
