"""The generated C API gives every input and output its own C type (templates/model.h.j2, model.c.j2;
edgec/ports.py c_typed): an int16-in/int16-out model's NAME_input() and NAME_output() are int16_t *, a model with
int32 token ids, uint8 bytes and an int16 output has int32_t *, uint8_t * and int16_t * per-name accessors (the
one-call and the context API alike), while the port tables keep their byte view (data() as int8_t *, bytes) and
say each port's dtype. Host programs written with the typed pointers and no casts compile -Wall -Wextra -Werror
-pedantic with gcc (and clang in the sweep; the model's own file also -Wcast-align=strict), and print what edgec's NumPy
reference computes. Before, every accessor was int8_t * and such code needed a cast per port."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import hostcc
import tflite_oracle as oracle
from conftest import WARN, host_compiler, library_sources
from tflite_oracle import INT32, Case, Node, T
from edgec import ports
from edgec.codegen import cmodel
from edgec.frontend import tflite as importer
from edgec.plan import caller_io as caller_buffers, planner
from edgec.quant import reference

INT16, UINT8 = 7, 3


def int16_case() -> Case:
    """x int16 [1,6] -> QUANTIZE to int8 -> QUANTIZE to int16 (another scale) y [1,6]: int16 in, int16 out."""
    return Case("a16", [T((1, 6), [0.001], [0], INT16), T((1, 6), [0.05], [2]), T((1, 6), [0.002], [0], INT16)],
                [Node("QUANTIZE", [0], 1), Node("QUANTIZE", [1], 2)], [0], [2])


def ids_case() -> Case:
    """table int8 [1,5,4], ids int32 [1,3], raw uint8 [1,6] in (t0, t1, t2); out: rows int8 [1,3,4] (t3, table's
    rows at ids), emb int16 (t4, the rows QUANTIZEd) and raw8 int8 [1,6] (t5, raw QUANTIZEd)."""
    tensors = [T((1, 5, 4), [0.05], [3]), T((1, 3), [], [], INT32), T((1, 6), [0.02], [128], UINT8),
               T((1, 3, 4), [0.05], [3]), T((1, 3, 4), [0.001], [0], INT16), T((1, 6), [0.03], [-5])]
    nodes = [Node("GATHER", [0, 1], 3, ("GatherOptions", {"Axis": 1, "BatchDims": 1})),
             Node("QUANTIZE", [3], 4), Node("QUANTIZE", [2], 5)]
    return Case("ids", tensors, nodes, [0, 1, 2], [3, 4, 5])


def c_list(values) -> str:
    return "{" + ", ".join(str(int(v)) for v in np.asarray(values).reshape(-1)) + "}"


def build(case: Case, work, caller_io: bool = False):
    """The case's graph and its generated library in work/<name>."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{case.name}.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, case.name)
    plan = planner.plan(graph)
    plan = caller_buffers.replan(graph, plan) if caller_io else plan
    lib = work / case.name
    cmodel.generate(graph, plan, lib, case.name)
    return graph, lib


def run(lib, name: str, main: str, cc: str) -> list[list[int]]:
    """Compile main with the library (strict warnings) and run it: one list of integers per printed line."""
    (lib / "typed_main.c").write_text(main)
    flags = [*WARN, "-O1", "-I", str(lib)]
    # the model's own file under -Wcast-align=strict too (its typed pointers go through void *)
    strict = "-Wcast-align=strict" if cc == "gcc" else "-Wcast-align"      # (clang: always strict)
    hostcc._run([host_compiler(cc), *flags, strict, "-fsyntax-only", str(lib / f"{name}.c")])
    exe = hostcc.build(library_sources(lib), lib, lib / f"typed_{cc}", host_compiler(cc), flags)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return [[int(v) for v in line.split()] for line in out.splitlines()]


INT16_MAIN = r"""#include <stdio.h>
#include <stdint.h>
#include "a16.h"
static const int16_t x[6] = %(x)s;
int main(void)
{
    int16_t *in = a16_input();
    const int16_t *out = a16_output();
    a16_ctx c;
    static union { int64_t align; int8_t bytes[A16_ARENA_BYTES]; } arena;
    unsigned i;
    if (a16_init() != 0 || A16_INPUT_ELEMENTS != 6u || A16_INPUT_BYTES != 12u || !A16_INPUT_INT16) return 2;
    for (i = 0; i < A16_INPUT_ELEMENTS; i++) in[i] = x[i];
    if (a16_invoke() != 0) return 3;
    for (i = 0; i < A16_OUTPUT_ELEMENTS; i++) printf("%%d ", out[i]);
    printf("\n");
    /* the context API: the same types */
    if (a16_ctx_init(&c, arena.bytes, sizeof arena.bytes) != 0) return 4;
    {
        int16_t *cin = a16_ctx_input(&c);
        int16_t *cout = a16_ctx_output(&c);
        for (i = 0; i < A16_INPUT_ELEMENTS; i++) cin[i] = x[i];
        if (a16_ctx_invoke(&c) != 0) return 5;
        for (i = 0; i < A16_OUTPUT_ELEMENTS; i++) printf("%%d ", cout[i]);
        printf("\n");
    }
    return 0;
}
"""

IDS_MAIN = r"""#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "ids.h"
static const int8_t table[20] = %(table)s;
static const int32_t ids[3] = %(ids)s;
static const uint8_t raw[6] = %(raw)s;
int main(void)
{
    int8_t *t = ids_input_t0();       /* int8 ports: int8_t *, as always */
    int32_t *k = ids_input_t1();      /* token ids */
    uint8_t *r = ids_input_t2();      /* a sensor's bytes */
    const int8_t *rows = ids_output_t3();
    const int16_t *emb = ids_output_t4();
    const int8_t *raw8 = ids_output_t5();
    unsigned i;
    if (ids_init() != 0) return 2;
    for (i = 0; i < 20u; i++) t[i] = table[i];
    for (i = 0; i < 3u; i++) k[i] = ids[i];
    for (i = 0; i < 6u; i++) r[i] = raw[i];
    if (ids_invoke() != 0) return 3;
    for (i = 0; i < IDS_OUTPUT_T3_ELEMENTS; i++) printf("%%d ", rows[i]);
    printf("\n");
    for (i = 0; i < IDS_OUTPUT_T4_ELEMENTS; i++) printf("%%d ", emb[i]);
    printf("\n");
    for (i = 0; i < IDS_OUTPUT_T5_ELEMENTS; i++) printf("%%d ", raw8[i]);
    printf("\n");
    /* the tables: each port's bytes (the same place) and its type */
    printf("%%d %%d %%d %%d %%d %%d\n", strcmp(ids_inputs[0].dtype, "int8") == 0,
           strcmp(ids_inputs[1].dtype, "int32") == 0 && ids_inputs[1].bytes == 12u,
           strcmp(ids_inputs[2].dtype, "uint8") == 0, strcmp(ids_outputs[1].dtype, "int16") == 0,
           ids_inputs[1].data() == (void *)k, ids_outputs[1].data() == (const void *)emb);
    return 0;
}
"""


def ids_samples():
    rng = np.random.default_rng(4207)
    return (rng.integers(-128, 128, (1, 5, 4)).astype(np.int8), np.array([[4, 0, 2]], np.int32),
            np.array([[0, 255, 128, 7, 200, 31]], np.uint8))


@pytest.mark.parametrize("cc", ["gcc", pytest.param("clang", marks=pytest.mark.sweep)])
def test_int16_ports_are_int16_pointers_in_both_apis(tmp_path, cc):
    graph, lib = build(int16_case(), tmp_path)
    x = np.array([-32768, -1000, -1, 0, 777, 32767], np.int16)
    want = np.asarray(reference.run(graph, x.reshape(1, 6))).reshape(-1)
    assert graph.tensors[graph.output].dtype == "int16"
    assert "int16_t *a16_input(void);" in (lib / "a16.h").read_text()
    got = run(lib, "a16", INT16_MAIN % {"x": c_list(x)}, cc)
    assert got == [want.tolist(), want.tolist()]


@pytest.mark.parametrize("cc", ["gcc", pytest.param("clang", marks=pytest.mark.sweep)])
def test_int32_ids_uint8_and_int16_ports_have_their_types_and_the_tables_their_bytes(tmp_path, cc):
    graph, lib = build(ids_case(), tmp_path)
    table, ids, raw = ids_samples()
    packed = ports.pack(graph, [table.reshape(1, -1), ids.reshape(1, -1), raw.reshape(1, -1)])
    want = np.asarray(reference.run(graph, packed[0])).reshape(-1)
    parts = [want[p.start:p.start + p.size].tolist() for p in ports.outputs(graph)]
    got = run(lib, "ids", IDS_MAIN % {"table": c_list(table), "ids": c_list(ids), "raw": c_list(raw)}, cc)
    assert got[:3] == parts
    assert got[3] == [1] * 6


def test_caller_buffers_keep_the_typed_accessors(tmp_path):
    """--io-buffers caller: the one-call API's static buffers and the context's typed the same way."""
    graph, lib = build(int16_case(), tmp_path, caller_io=True)
    header = (lib / "a16.h").read_text()
    assert "int16_t *a16_input(void);" in header and "int16_t *a16_ctx_output(const a16_ctx *c);" in header
    x = np.array([5, -5, 300, -300, 32000, 1], np.int16)
    want = np.asarray(reference.run(graph, x.reshape(1, 6))).reshape(-1)
    main = INT16_MAIN.replace("if (a16_ctx_invoke(&c) != 0) return 5;",
                              "if (a16_ctx_set_input(&c, cin) != 0) return 6;\n        "
                              "if (a16_ctx_set_output(&c, cout) != 0) return 7;\n        "
                              "if (a16_ctx_invoke(&c) != 0) return 5;")
    main = main.replace("int16_t *cin = a16_ctx_input(&c);",
                        "static union { int64_t align; int16_t v[6]; } in_buf, out_buf;\n        "
                        "int16_t *cin = in_buf.v;\n        int16_t *cout = out_buf.v;")
    main = main.replace("        int16_t *cout = a16_ctx_output(&c);\n", "")
    assert "a16_ctx_output" not in main
    got = run(lib, "a16", main % {"x": c_list(x)}, "gcc")
    assert got == [want.tolist(), want.tolist()]


def test_export_example_reads_a_typed_output_in_its_type(tmp_path):
    """`edgec export`'s example main (templates/export/example_main.c.j2) declares NAME_output() in its own type
    (the int16 model's int16_t *) and compiles with strict warnings: it runs the model on the example sample and
    finds the reference's output (before, it declared an int8_t * and the typed header would not compile)."""
    from edgec import api
    path = tmp_path / "a16.tflite"
    path.write_bytes(oracle.write(int16_case()))
    out = tmp_path / "ex"
    api.export(path, None, "qemu-cortex-m4", "c", out)
    main = (out / "example" / "main.c").read_text()
    assert "const int16_t *out = a16_output();" in main and "A16_OUTPUT_ELEMENTS" in main
    exe = hostcc.build([*library_sources(out), str(out / "example" / "main.c")], out, out / "example_exe",
                       host_compiler("gcc"), [*WARN, "-O1", "-I", str(out), "-I", str(out / "example")])
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0 and "identical to the reference" in run.stdout, run.stdout + run.stderr
