"""Many generated model libraries compiled into one host program and run over their inputs.

Compiling a model library with a driver of its own costs about a quarter of a second of compiler start-up
and linking per model. ONNX's node tests (tests/onnx_node_tests.py) and the TFLite oracle
(tests/tflite_oracle.py) run hundreds of small models, so they build them a batch at a time: every library
keeps its own name (so its symbols do not collide), one driver calls them in turn over stdin/stdout.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hostcc
from edgec import cheader

DRIVER_CASE = """    if (%(name)s_init() != 0) return 5;
    for (n = 0; n < %(count)d; ++n) {
%(reset)s        if (fread(%(name)s_input(), 1, %(NAME)s_INPUT_BYTES, stdin) != %(NAME)s_INPUT_BYTES) return 3;
        if (%(name)s_invoke() != 0) return 4;
        fwrite(%(name)s_output(), 1, %(NAME)s_OUTPUT_BYTES, stdout);
    }
"""
# a model with several inputs and outputs: every input in turn from its table, every output likewise (packed)
DRIVER_PORTS = """    if (%(name)s_init() != 0) return 5;
    for (n = 0; n < %(count)d; ++n) {
%(reset)s        for (k = 0; k < %(NAME)s_INPUT_COUNT; ++k)
            if (fread(%(name)s_inputs[k].data(), 1, %(name)s_inputs[k].bytes, stdin) != %(name)s_inputs[k].bytes)
                return 3;
        if (%(name)s_invoke() != 0) return 4;
        for (k = 0; k < %(NAME)s_OUTPUT_COUNT; ++k)
            fwrite(%(name)s_outputs[k].data(), 1, %(name)s_outputs[k].bytes, stdout);
    }
"""


@dataclass
class HostModel:
    name: str              # the C name the library was generated with
    directory: Path        # where cmodel.generate wrote it
    output_bytes: int      # (several outputs: all of them)
    ports: bool = False    # several inputs or outputs: read and written through the port tables
    reset_each: bool = False   # a model with state: NAME_reset() before every input (else carried, as TFLM)


def run_models(models: list[HostModel], xs: list[np.ndarray], work: Path, cflags: list[str],
               runtime: list[Path]) -> list[np.ndarray]:
    """Compile the libraries with `runtime` (kernel sources or objects) into one program and run model k over
    the rows of xs[k] (int8, or int16); returns each model's outputs, one row per input. Raises CalledProcessError if the
    program does not compile or fails."""
    work.mkdir(parents=True, exist_ok=True)
    decls = [f'#include "{m.directory.relative_to(work)}/{m.name}.h"' for m in models]
    body = [(DRIVER_PORTS if m.ports else DRIVER_CASE) % {
        "name": m.name, "NAME": m.name.upper(), "count": len(x),
        "reset": f"        {m.name}_reset();\n" if m.reset_each else ""} for m, x in zip(models, xs)]
    main = work / "batch_main.c"
    main.write_text("#include <stdio.h>\n" + "\n".join(decls) + "\nint main(void)\n{\n    int n;\n    unsigned k = 0;\n    (void)k;\n"
                    + "".join(body) + "    return 0;\n}\n")
    exe = work / "batch.exe"
    sources = [str(m.directory / f"{m.name}.c") for m in models]
    warn = ["-std=c99", "-Wall", "-Wextra", "-Werror"]
    # the runtime's own .c files: objects compiled once per flags for the whole run (tests/hostcc.py), not at every
    # call (the oracle's checks each compiled the fast kernels' files again, per kernel path)
    objs = [p for p in map(Path, runtime) if p.suffix != ".c"] + hostcc.objects(
        [p for p in map(Path, runtime) if p.suffix == ".c"], cheader.runtime_dir(), "gcc", [*warn, *cflags],
        work / "runtime_objs")
    subprocess.run(["gcc", *warn, *cflags, f"-I{work}", str(main), *sources, *map(str, objs), "-o", str(exe), "-lm"],
                   check=True, capture_output=True, text=True)
    data = b"".join(np.ascontiguousarray(x, np.int16 if np.asarray(x).dtype == np.int16 else np.int8).tobytes()
                    for x in xs)                                   # (an int16 input: a 16x8 .tflite's, its bytes)
    got = np.frombuffer(subprocess.run([str(exe)], input=data, capture_output=True, check=True).stdout, np.int8)
    outs, off = [], 0
    for m, x in zip(models, xs):
        n = len(x) * m.output_bytes
        outs.append(got[off:off + n].reshape(len(x), m.output_bytes))
        off += n
    return outs
