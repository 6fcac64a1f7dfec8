"""Bench report -> bench-report.json, a self-contained report.html (inline SVG plots, templates/report.html.j2)
and the short text summary the CLI prints."""
from __future__ import annotations

import json
from pathlib import Path

from edgec import outputs, svgplot
from edgec.errors import EdgecError
from edgec.templating import environment

JSON_NAME, HTML_NAME = "bench-report.json", "report.html"


def write(result: dict, build_dir: Path, report_dir: Path) -> list[Path]:
    """Write bench-report.json and report.html into report_dir; returns both paths."""
    json_path, html_path = check_report_dir(report_dir)
    outputs.make_folder(report_dir, "report folder")
    outputs.write_json(json_path, result, what="bench report")
    outputs.write_text(html_path, render_html(result, build_dir), what="bench report")
    return [json_path, html_path]


def check_report_dir(report_dir: Path) -> tuple[Path, Path]:
    """The two report files, checked before the bench starts: edgec may write them (edgec/outputs.py)."""
    outputs.check_names(report_dir / HTML_NAME, "report folder")
    if report_dir.is_symlink() or (report_dir.exists() and not report_dir.is_dir()):
        raise EdgecError(f"report folder {report_dir} is not a folder; give another one with --report")
    paths = report_dir / JSON_NAME, report_dir / HTML_NAME
    return tuple(outputs.check_output_file(p, what="bench report", folder_exists=False) for p in paths)


# ---- plots ----

def plots(result: dict, build_dir: Path) -> list[dict]:
    """[{id, title, svg or None, note}] in the order the report shows them."""
    out = []
    lat = result["latency"]
    if lat.get("not_measured"):
        out.append({"id": "latency", "title": "Latency per sample", "svg": None,
                    "note": f"not measured: {lat['not_measured']}"})
    else:
        marks = {f"median {lat['median']:,.0f}": lat["median"], f"p90 {lat['p90']:,.0f}": lat["p90"]}
        out.append({"id": "latency", "title": "Latency per sample",
                    "svg": svgplot.histogram(lat["samples"], f"Latency of {result['samples']} samples", lat["unit"],
                                             bins=min(30, max(5, result["samples"] // 3)), marks=marks)})
    prof = result.get("profile")
    out.append({"id": "layers", "title": "Time per layer",
                "svg": svgplot.hbars([f"#{r['index']} {r['kind']} {r['name']}" for r in prof["layers"]],
                                     [r["units"] for r in prof["layers"]],
                                     f"Time per layer ({prof['samples']} sample(s), median)", prof["unit"],
                                     annotations=[f"{svgplot.fmt(r['units'])}  {100 * r['share']:.1f}%"
                                                  for r in prof["layers"]]) if prof else None,
                "note": None if prof else "run `edgec bench --profile` to time every layer on the device"})
    out.append(_memory_plot(build_dir))
    conf = result.get("confusion")
    if conf or not result.get("detection"):     # a detector's own plot is its boxes (below)
        out.append({"id": "confusion", "title": "Confusion matrix",
                    "svg": svgplot.heatmap(conf["matrix"], "Confusion matrix (device)", conf["rows"], conf["columns"])
                    if conf else None,
                    "note": None if conf else "the model is not a classifier (see the error table)"})
    ex = (result.get("detection") or {}).get("example")
    if ex:      # one image with the float, reference and device boxes (and the ground truth)
        layers = [(f"{k.replace('_', ' ')}", [b["box"] for b in v]) for k, v in ex["boxes"].items()]
        layers += [("ground truth", [b["box"] for b in ex["ground_truth"]])] if "ground_truth" in ex else []
        out.append({"id": "boxes", "title": "Boxes on one image",
                    "svg": svgplot.image_boxes(ex["image"], ex["height"], ex["width"], layers,
                                               f"Sample {ex['sample']}: float, int8 reference and device boxes")})
    div = result.get("divergence")
    if div:
        first = div["first_divergent_layer"]
        colors = [svgplot.PALETTE[3] if r["differing"] else svgplot.PALETTE[2] for r in div["layers"]]
        out.append({"id": "divergence", "title": "Device vs reference, layer by layer",
                    "svg": svgplot.hbars([f"#{r['index']} {r['kind']} {r['name']}" for r in div["layers"]],
                                         [r["max_abs_diff"] for r in div["layers"]],
                                         f"Max |device - reference| per layer, sample {div['sample']}",
                                         "int8 steps", colors=colors,
                                         annotations=[f"{r['max_abs_diff']} ({r['differing']}/{r['size']} differ)"
                                                      for r in div["layers"]]),
                    "note": (f"first differing layer: #{first['index']} {first['kind']} '{first['name']}'" if first
                             else "every layer matches the reference bit for bit")})
    out.append(_sensitivity_plot(build_dir))
    return [{"svg": None, "note": None, **p} for p in out]


def _memory_plot(build_dir: Path) -> dict:
    """The build's picture of the arena over time (memory.svg, drawn by edgec/plan/memory_report.py)."""
    plot = {"id": "memory", "title": "Memory over time (arena plan)", "svg": None}
    svg_file = build_dir / "memory.svg"
    if svg_file.is_file():
        plot["svg"] = _inline_svg(svg_file)
    else:
        plot["note"] = "this build folder has no memory.svg (built by an older edgec)"
    return plot


SENSITIVITY_KEYS = {"isolated_output_db": "SQNR at the output, dB (lower: more sensitive)",
                    "sensitivity": "sensitivity"}


def sensitivity(build_dir: Path) -> tuple[list[tuple[str, float]], str] | None:
    """((layer, value) pairs, what the value is) from the build folder's sensitivity.json, if the
    quantization analysis left one: a list of {"layer" or "name": ..., "isolated_output_db" (edgec's
    sensitivity report) or another number}, {"layers": [...]}, or {layer: number}."""
    try:
        data = json.loads((build_dir / "sensitivity.json").read_text())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("layers"), list):
        data = data["layers"]
    if isinstance(data, dict):
        pairs = [(str(k), float(v)) for k, v in data.items() if isinstance(v, (int, float))]
        return (pairs, "sensitivity") if pairs else None
    pairs, label = [], "sensitivity"
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict):
            continue
        name = item.get("layer", item.get("name", item.get("op")))
        numeric = {k: v for k, v in item.items() if k != "index" and isinstance(v, (int, float))
                   and not isinstance(v, bool)}
        key = next((k for k in SENSITIVITY_KEYS if k in numeric), next(iter(numeric), None))
        if name is not None and key is not None:
            pairs.append((str(name), float(numeric[key])))
            label = SENSITIVITY_KEYS.get(key, key)
    return (pairs, label) if pairs else None


def _sensitivity_plot(build_dir: Path) -> dict:
    plot = {"id": "sensitivity", "title": "Quantization sensitivity", "svg": None}
    svg_file = build_dir / "sensitivity.svg"
    found = sensitivity(build_dir)
    if svg_file.is_file():
        plot["svg"] = _inline_svg(svg_file)
    elif found:
        pairs, label = found
        plot["svg"] = svgplot.hbars([p[0] for p in pairs], [p[1] for p in pairs],
                                    "Quantization sensitivity per layer", label)
    else:
        plot["note"] = "not available: the build folder has no sensitivity.json"
    return plot


def _inline_svg(path: Path) -> str:
    """An SVG file's <svg> element, to put inline in HTML (no XML declaration or doctype)."""
    text = path.read_text(encoding="utf-8")
    return text[text.find("<svg"):] if "<svg" in text else ""


# ---- HTML ----

MEMORY_LABELS = {
    "arena_bytes": ("arena (activations and scratch)", "the planner's arena; plan.json has every buffer's offset"),
    "weights_bytes": ("constants in flash (weights, biases, tables)", "the rows below split it by kind"),
    "flash_bytes": ("firmware flash", "measured in the ELF"),
    "ram_bytes": ("firmware static RAM", "measured in the ELF: .data + .bss + reserved stack"),
    "live_set_lower_bound_bytes": ("live tensors at the peak, ONNX order, no in-place reuse",
                                   "a reference for the planner, not a bound on the arena: its schedule and "
                                   "in-place ops can go below it, alignment and kernel scratch above it"),
    "stack_estimate_bytes": ("stack, estimated", None), "stack_used_bytes": ("stack used, measured", None),
    "stack_reserved_bytes": ("stack reserved", None), "plan": ("arena plan", None), "picture": ("arena picture", None),
    "static_ram_bytes": ("static RAM", "measured in the ELF: .data + .bss + arena pieces in other RAM regions"),
    "total_ram_bytes": ("total device RAM", "static RAM + the stack used (measured on the device)"),
    "stack_used_note": ("stack used, why not measured", None),
}


CONSTANT_LABELS = {"weights": "weight tensors", "biases_requantization": "biases and requantization",
                   "lookup_tables": "lookup tables", "other": "other constants"}
CONSTANT_NOTES = {"weights": "as stored: int4 packed two per byte, int8, or a fast kernel's packing",
                  "biases_requantization": "int32 biases, Q31 multipliers and shifts",
                  "lookup_tables": "activation, Add rescaling, softmax and gate tables"}


def _bytes(v) -> str:
    return "n/a" if v is None else f"{v:,} B" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _constants_text(m: dict) -> str:
    c = m.get("constants")
    if not isinstance(c, dict):          # a report from before the breakdown
        return f"constants {m['weights_bytes']:,} B"
    tables = f", lookup tables {c['lookup_tables']:,} B" if c.get("lookup_tables") else ""
    return (f"constants {c['total']:,} B: weights {c['weights']:,} B, biases and requantization "
            f"{c['biases_requantization']:,} B{tables}" + (f", other {c['other']:,} B" if c.get("other") else ""))


RAM_LABEL = "firmware RAM (what --max-ram gates on)"
# folded into the one RAM row when the ELF was measured: no second or third RAM figure beside it
RAM_PARTS = ("ram_bytes", "static_ram_bytes", "total_ram_bytes", "stack_estimate_bytes", "stack_used_bytes",
             "stack_reserved_bytes", "stack_estimate_method")


def ram_row(memory: dict) -> tuple[str, str, str]:
    """The one RAM figure (the ELF's allocated RAM, which --max-ram gates on) with its parts: the arena, the rest of
    the static data (runtime, serial link, C library), the stack the linker reserves; then how much of that stack
    is used (estimated from gcc's -fstack-usage, measured on the device) and the RAM it needs at least."""
    ram, arena, static = memory.get("ram_bytes"), memory.get("arena_bytes"), memory.get("static_ram_bytes")
    parts = []
    if arena is not None and static is not None:
        parts += [f"arena {_bytes(arena)}", f"other static data {_bytes(static - arena)}"]
        if ram is not None and ram >= static:
            parts.append(f"stack reserved {_bytes(ram - static)}")
    note = (" + ".join(parts) + " (measured in the ELF)") if parts else "measured in the ELF: .data + .bss + reserved stack"
    used = memory.get("stack_used_bytes")
    if used is not None:
        note += f"; stack used {_bytes(used)} (measured on the device)"
    elif memory.get("stack_estimate_bytes") is not None:
        note += f"; stack needed about {_bytes(memory['stack_estimate_bytes'])} ({memory.get('stack_estimate_method') or 'estimate'})"
    if memory.get("total_ram_bytes") is not None:
        note += f", so the firmware needs {_bytes(memory['total_ram_bytes'])} of it"
    est = (memory.get("fit_estimate") or {}).get("ram")
    if isinstance(est, dict) and est.get("total") is not None:
        note += f"; estimated {_bytes(est['total'])} before building, of the board's {_bytes(est.get('board'))}"
    return RAM_LABEL, _bytes(ram), note


def memory_rows(memory: dict) -> list[tuple[str, str, str]]:
    """The Memory table: (what, value, note) per entry; the fit estimate as its sums, never a raw dict; one RAM
    figure (ram_row) with its parts when the firmware was measured."""
    rows = []
    measured = memory.get("ram_bytes") is not None
    for key, value in memory.items():
        if measured and key in RAM_PARTS:
            if key == "ram_bytes":
                rows.append(ram_row(memory))
            continue
        if key == "fit_estimate" and isinstance(value, dict):
            for part, d in value.items():
                if measured and part == "ram":      # in the RAM row's note
                    continue
                parts = " + ".join(f"{k} {_bytes(v)}" for k, v in d.items() if k not in ("total", "board", "regions"))
                rows.append((f"fit estimate before building: {part}", _bytes(d.get("total")),
                             f"{parts}; the board has {_bytes(d.get('board'))}"))
                for region, r in d.get("regions", {}).items():      # arena pieces in other RAM regions
                    rows.append((f"fit estimate before building: arena in RAM region {region}", _bytes(r["arena"]),
                                 f"linker section {r['section']}; the region has {_bytes(r['board'])}"))
            continue
        if key == "code" and isinstance(value, dict):         # edgec/targets/code_size.py
            rows.append(("code (functions) of the model library + runtime", _bytes(value["model_and_runtime"]),
                         "what an application embeds, besides the C library functions it calls"))
            rows.append(("code (functions) of the whole firmware", _bytes(value["total"]),
                         f"model {_bytes(value['model'])} + runtime {_bytes(value['runtime'])} + benchmark harness "
                         f"{_bytes(value['harness'])} + startup and board support {_bytes(value['board'])} + "
                         f"C library {_bytes(value['libraries'])}"))
            continue
        if key == "constants" and isinstance(value, dict):     # edgec/codegen/constants.py's breakdown
            rows += [(f"constants: {CONSTANT_LABELS[k]}", _bytes(v), CONSTANT_NOTES.get(k, ""))
                     for k, v in value.items() if k in CONSTANT_LABELS]
            continue
        if key == "stack_estimate_method":
            continue
        label, note = MEMORY_LABELS.get(key, (key.replace("_", " "), None))
        if key == "stack_estimate_bytes" and memory.get("stack_estimate_method"):
            note = memory["stack_estimate_method"]
        shown = _bytes(value) if key.endswith("_bytes") else ("n/a" if value is None else str(value))
        rows.append((label, shown, note or ""))
    return rows


# the serial link's statistics (edgec/device/link.py Stats, edgec/bench/runner.py's dataset-in-flash run):
# key -> (label, how its value reads)
_B, _S, _N = (lambda v: _bytes(v)), (lambda v: f"{v:,.3g} s"), (lambda v: f"{v:,}")
LINK_LABELS = {
    "mode": ("how inputs reached the device", str),
    "payload_bytes": ("payload moved (inputs, outputs, commands)", _B),
    "wire_bytes": ("bytes on the wire (with framing and CRCs)", _B),
    "io_seconds": ("time spent moving data", _S),
    "throughput_bytes_per_s": ("payload throughput", lambda v: f"{v / 1e3:,.1f} kB/s"),
    "retransmissions": ("frames sent again (timeout, NAK, bad CRC)", _N),
    "sample_retries": ("samples run again (end-to-end CRC disagreed)", _N),
    "line_bytes_per_s": ("nominal line rate (8N1)", lambda v: f"{v / 1e3:,.1f} kB/s"),
    "fraction_of_line_rate": ("share of the line rate used", lambda v: f"{100 * v:.0f}%"),
    "firmware": ("firmware images", str), "chunk_samples": ("samples per image", _N),
    "chunks": ("images run", _N), "units": ("devices in parallel", _N), "wall_s": ("wall time", _S),
    "reference_s": ("host reference time", _S), "input_bytes_in_images": ("input bytes compiled into images", _B),
    "image_s": ("time building images", _S), "load_s": ("time loading images", _S), "run_s": ("time running", _S),
    "result_bytes": ("result bytes read back", _B), "per_chunk": ("per image", str),
}
LINK_NONE = {"line_bytes_per_s": "n/a (a socket: no baud rate)", "fraction_of_line_rate": "n/a (a socket)",
             "throughput_bytes_per_s": "n/a (no data moved)"}


def link_rows(link: dict | None) -> list[tuple[str, str]]:
    """The Serial link table: (what, value) with readable labels and units, never a raw key name."""
    rows = []
    for key, value in (link or {}).items():
        label, shown = LINK_LABELS.get(key, (key.replace("_", " "), str))
        if value is None:
            rows.append((label, LINK_NONE.get(key, "n/a")))
        elif isinstance(value, (list, dict)):
            rows.append((label, f"{len(value)} entries (in bench-report.json)"))
        else:
            rows.append((label, shown(value)))
    return rows


def render_html(result: dict, build_dir: Path) -> str:
    env = environment()
    return env.get_template("report.html.j2").render(r=result, plots=plots(result, build_dir),
                                                      summary=summary_lines(result),
                                                      memory_rows=memory_rows(result.get("memory", {})),
                                                      link_rows=link_rows(result.get("link")))


# ---- text ----

def _pct(v) -> str:
    return "n/a (no labels)" if v is None else f"{100 * v:.2f}%"


def _quality_lines(r: dict) -> list[str]:
    """Accuracy (classification), error (regression) or mAP and box agreement (detection) of one output."""
    if r["task"] == "detection":
        from edgec.bench.detections import lines
        return lines(r)
    if r["task"] == "classification" and r["accuracy"]["device"] is None:
        t = r["agreement_top1"]
        return [f"no labels: top-1 agrees with the float model on {100 * t['device_vs_float']:.2f}% of "
                f"samples (int8 reference {100 * t['int8_vs_float']:.2f}%)"]
    if r["task"] == "classification":
        a = r["accuracy"]
        return [f"accuracy: float {_pct(a['float'])}, int8 reference {_pct(a['int8_reference'])}, "
                f"device {_pct(a['device'])}"]
    e = r["error"]
    parts = [f"{k.replace('_', ' ')} MSE {v['mse']:.4g} (max {v['max_abs']:.4g})" for k, v in e.items()
             if isinstance(v, dict)]
    return [f"error against the {e['against']}: " + ", ".join(parts)]


def summary_lines(r: dict) -> list[str]:
    """The short summary: what ran, how well, how fast, how big."""
    lines = [f"model {r['model']} on {r['board']}, {r['samples']} samples ({r['task']})"]
    if r["task"] == "multi-output":      # a model with several outputs: each on its own
        for name, q in r["outputs"].items():
            lines += [f"output {name} ({q['task']}): {line}" for line in _quality_lines(q)]
            lines.append(f"output {name}: device identical to the int8 reference on "
                         f"{100 * q['agreement']['device_vs_reference']:.2f}% of samples")
    else:
        lines += _quality_lines(r)
    if "score" in r:
        s = r["score"]
        lines.append(f"score {s['name']}: " + ", ".join(f"{k.replace('_', ' ')} {_score(v)}" for k, v in s.items()
                                                        if k != "name"))
    lines.append(f"agreement: device output identical to the int8 reference on "
                 f"{100 * r['agreement']['device_vs_reference']:.2f}% of samples")
    if "tflite" in r:       # a .tflite build: its "float" outputs are TFLite Micro's own (dequantized)
        t = r["tflite"]
        lines.append("TFLite Micro: not installed, or its interpreter cannot load this file (it names what it "
                     "lacks above); the int8 reference stands for it"
                     if t["interpreter"] is None else
                     f"TFLite Micro: int8 reference identical to its interpreter on "
                     f"{100 * t['reference_vs_interpreter']:.2f}% of samples ('float' above is its output)")
    lat = r["latency"]
    ms = lat.get("ms")
    ms_text = f" = {_ms(ms['median'])} ms ({ms['basis']})" if ms else ""
    per_mac = f", {lat['per_mac']:.2f} per MAC" if lat.get("per_mac") else ""
    if lat.get("not_measured"):
        lines.append(f"latency: not measured ({lat['not_measured']})")
    else:
        lines.append(f"latency: median {lat['median']:,.0f} {lat['unit']}{ms_text}; p90 {lat['p90']:,.0f}, "
                     f"min {lat['min']:,.0f}, max {lat['max']:,.0f}{per_mac}")
    if lat.get("cycles_estimate"):
        c = lat["cycles_estimate"]
        lines.append(f"cycle estimate: median {c['median']:,.0f} cycles ({c['cycles_per_instruction']:.2f} per "
                     f"instruction; {c['model']})")
        for p in c.get("parts") or ():
            ms = f" = {p['ms']:.2f} ms" if p.get("ms") else ""
            lines.append(f"  with the memory timing of {p['board']} ({p['memory']}: {p['note']}): "
                         f"{p['median']:,.0f} cycles{ms}")
    m = r["memory"]
    stack = (f", stack used {m['stack_used_bytes']:,} of {m['stack_reserved_bytes']:,} B"
             if m.get("stack_used_bytes") is not None else ", stack not measured on this board")
    lines.append(f"memory: firmware flash {m['flash_bytes']:,} B, RAM {m['ram_bytes']:,} B "
                 f"(arena {m['arena_bytes']:,} B, {_constants_text(m)}){stack}")
    if m.get("split"):      # a chained build: the front end's and the classifier's shares
        fe, net = m["split"]["frontend"], m["split"]["model"]
        lines.append(f"front end / classifier: arena {fe['arena_bytes']:,} / {net['arena_bytes']:,} B, constants "
                     f"{fe['constants_bytes']:,} / {net['constants_bytes']:,} B, audio buffer "
                     f"{m.get('audio_buffer_bytes', 0):,} B")
    ln = r.get("link")
    if ln and ln.get("throughput_bytes_per_s"):
        rate = (f" ({100 * ln['fraction_of_line_rate']:.0f}% of the {ln['line_bytes_per_s'] / 1e3:.1f} kB/s "
                f"nominal line rate)" if ln.get("fraction_of_line_rate") else " (a socket: no baud-rate limit)")
        lines.append(f"link: {ln['throughput_bytes_per_s'] / 1e3:.1f} kB/s payload{rate}, "
                     f"{ln['retransmissions']} retransmissions, {ln['sample_retries']} samples re-run")
    if "profile" in r:
        p = r["profile"]
        lines.append(f"profile: {len(p['layers'])} layers; their times sum to "
                     f"{100 * (p['sum_over_whole'] or 0):.1f}% of the whole inference"
                     + (f"; the front end {100 * p['frontend_share']:.1f}% of them" if p.get("frontend_share") is not None
                        else ""))
    if "divergence" in r:
        from edgec.bench.runner import describe_divergence
        lines.append(describe_divergence(r["divergence"]))
    return lines


def _ms(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def _short(name: str, width: int) -> str:
    """A long layer name with its middle left out: the start and the (telling) end stay."""
    return name if len(name) <= width else name[:width // 2 - 1] + "…" + name[-(width - width // 2):]


def _score(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {x:.4g}" for k, x in v.items()) + "}"
    return f"{v:.4g}"


def profile_table(r: dict, bar_width: int = 30) -> str:
    """The per-layer profile as a text table with a bar per layer."""
    p = r["profile"]
    unit = p["unit"]
    name_w = min(36, max(len(x["name"]) for x in p["layers"]) if p["layers"] else 4)
    rows = [f"{'#':>3} {'layer':{name_w}} {'kind':18} {'MACs':>10} {unit:>22} {'share':>6}"]
    for x in p["layers"]:
        bar = "#" * round(bar_width * x["share"])
        rows.append(f"{x['index']:>3} {_short(x['name'], name_w):{name_w}} {x['kind'][:18]:18} {x['macs']:>10,} "
                    f"{x['units']:>22,.0f} {100 * x['share']:>5.1f}% {bar}")
    rows.append(f"{'':>3} {'sum of layers':{name_w}} {'':18} {'':>10} {p['sum_units']:>22,.0f} "
                f"(whole inference {p['whole_units']:,.0f})")
    return "\n".join(rows)
