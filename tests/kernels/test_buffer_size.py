"""The kernels' scratch sizes: edgec/cheader.py buffer_size, which evaluates the edgec_<kernel>_get_buffer_size
functions of runtime_c/edgec_nn.h for the planner, against those functions compiled (gcc on the host) on random
params, so the Python reading of the C cannot drift from it; and the evaluator's refusals."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from edgec import cheader

RUNTIME = cheader.runtime_dir()
CASES = 40      # random params per function


def _random_params(rng, struct: str) -> dict:
    """Every field of the struct, small positive values (strides, shapes and counts of at least 1; gru 0 or 1)."""
    p = {}
    for field, count in cheader.struct_fields(struct):
        hi = 2 if field in ("gru", "reverse", "exclusive") else 64
        values = [int(v) for v in rng.integers(0 if hi == 2 else 1, hi, size=count)]
        p[field] = values if count > 1 else values[0]
    return p


def _init(p: dict) -> str:
    return "{" + ", ".join("{" + ", ".join(map(str, v)) + "}" if isinstance(v, list) else str(v)
                           for v in p.values()) + "}"


def test_buffer_size_matches_the_compiled_functions(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    rng = np.random.default_rng(7)
    functions = cheader.buffer_functions()
    assert len(functions) >= 20
    body, expected = [], []
    for kernel, (struct, _) in sorted(functions.items()):
        for _ in range(CASES):
            p = _random_params(rng, struct)
            body.append(f'    {{ static const {struct} p = {_init(p)};\n'
                        f'      printf("%ld\\n", (long){kernel}_get_buffer_size(&p)); }}')
            expected.append(cheader.buffer_size(kernel, p))
    (tmp_path / "sizes.c").write_text('#include <stdio.h>\n#include "edgec_nn.h"\nint main(void)\n{\n'
                                      + "\n".join(body) + "\n    return 0;\n}\n")
    exe = tmp_path / "sizes"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=undefined",
                    "-fno-sanitize-recover=all", f"-I{RUNTIME}", str(tmp_path / "sizes.c"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    got = [int(v) for v in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    assert got == expected


def test_every_kernel_taking_scratch_has_its_buffer_size():
    """A kernel with a scratch argument has a _get_buffer_size, but for the Helium fully connected layer (no
    scratch; the argument keeps the fast kernels' one signature), which buffer_size gives 0 like every other
    kernel without one, and the loops a record's call names by its params (Kernel.entries: blocked4_padded's),
    whose scratch is their record's."""
    from edgec.ops.registry import KERNELS

    entries = {e for k in KERNELS for e in k.entries}
    header = re.sub(r"/\*.*?\*/", " ", (RUNTIME / cheader.HEADER).read_text(), flags=re.S)
    taking = {m.group(1) for m in re.finditer(r"^(?:void|int)\s+(edgec_\w+)\s*\(([^;]*?)\);", header, re.M | re.S)
              if re.search(r"\bscratch\b", m.group(2))}
    assert taking - set(cheader.buffer_functions()) - entries == {"edgec_fully_connected_mve_s8"}
    assert set(cheader.buffer_functions()) <= taking
    assert cheader.buffer_size("edgec_fully_connected_mve_s8", {}) == 0
    assert cheader.buffer_size("edgec_max_pool_s8", {}) == 0
    with pytest.raises(KeyError, match="no kernel"):
        cheader.buffer_size("edgec_no_such_kernel_s8", {})
    with pytest.raises(KeyError, match="p->k4"):
        cheader.buffer_size("edgec_conv2d_im2col_s8", {})


@pytest.mark.parametrize("expr, why", [
    ("p->a ? 1 : 2", "cannot evaluate"), ("(int32_t)p->a", "cannot evaluate"), ("p->a << 2", "p->a << 2"),
    ("p->a / 0", "division"), ("(p->a - 9) / 2", "division of -8"), ("-p->a % 3", "remainder of -1"),
    ("max(p->a, 2)", "a call of max"), ("p->a * 1073741824", "outside int32_t"), ("p->a.b", "'_p_a.b'"),
    ("edgec_x_get_buffer_size(q)", "a call of edgec_x_get_buffer_size")])
def test_the_evaluator_refuses_what_is_not_plain_integer_arithmetic(expr, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        cheader.evaluate(expr, {"a": 2 if "1073741824" in expr else 1}, {})


def test_the_evaluator_is_c_integer_arithmetic():
    assert cheader.evaluate("(p->a + 7) / 8 * 8 + p->a % 3 - -1", {"a": 9}, {}) == 16 + 0 + 1
    assert cheader.evaluate("EDGEC_MAX(4 * (p->a + 16), 12 * p->a) + N", {"a": 9}, {"N": 2}) == 110
