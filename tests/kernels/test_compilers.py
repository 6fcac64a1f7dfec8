"""The kernels under other compilers and the sanitizers: every runtime file warning-free with arm-none-eabi-gcc
for the Cortex-M4 (with clang -Wshadow -Wcast-qual: tests/test_cmodel_sanitizers.py), and a driver running the
int8 kernels of every family on fixed data under clang -fsanitize=address,undefined, bit-exact with the NumPy
reference."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np

from ckernels import RUNTIME, WARN, conv_case, i8, requant_params, runtime_sources
import hostcc
from conftest import SANITIZE, require
from edgec import cheader
from edgec.ops import binary
from edgec.ops import conv
from edgec.ops import dense
from edgec.ops import movement
from edgec.ops import pool
from edgec.ops import softmax


def test_builds_for_the_cortex_m4(tmp_path):
    """Every runtime file compiles warning-free with arm-none-eabi-gcc -O2 for the Cortex-M4 (its DSP paths; gcc's
    flow warnings need the compile).  The same files under clang -Wshadow -Wcast-qual (front-end warnings:
    -fsyntax-only), portable and DSP-emulated, are tests/test_cmodel_sanitizers.py's runtime warning test."""
    require(shutil.which("arm-none-eabi-gcc") is not None, "arm-none-eabi-gcc", "scripts/setup.sh installs it")
    for src in runtime_sources():
        r = subprocess.run(["arm-none-eabi-gcc", "-O2", *WARN, "-mcpu=cortex-m4", "-mthumb", f"-I{RUNTIME}", "-c",
                            src, "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
        assert r.returncode == 0 and not r.stderr, (src, r.stderr)


def _c_array(name, ctype, a):
    vals = ",".join(str(int(v)) for v in np.asarray(a).ravel()) or "0"
    return f"static const {ctype} {name}[] = {{{vals}}};\n"


def _c_params(ctype, name, p):
    return f"static const {ctype} {name} = {{{', '.join(str(int(p[f])) for f in cheader.field_names(ctype))}}};\n"


def test_sanitizers(tmp_path):
    """clang -fsanitize=address,undefined on a driver that runs every kernel on fixed data."""
    require(shutil.which("clang") is not None, "clang", "scripts/setup.sh installs it")
    rng = np.random.default_rng(80)
    src, body, expected = ['#include <stdio.h>\n#include "edgec_nn.h"\n'], [], []

    def emit(out_name, n, want):
        src.append(f"static int8_t {out_name}[{n}];\n")
        body.append(f"dump({out_name}, {n});")
        expected.append(np.asarray(want, np.int8).ravel())

    for i, dw in enumerate([False, True, False, True]):
        p, x, w, bias, mult, shift = conv_case(rng, dw)
        src += [_c_params("edgec_conv_params", f"cp{i}", p), _c_array(f"cx{i}", "int8_t", x),
                _c_array(f"cw{i}", "int8_t", w), _c_array(f"cb{i}", "int32_t", bias),
                _c_array(f"cm{i}", "int32_t", mult), _c_array(f"cs{i}", "int32_t", shift)]
        fn = "edgec_depthwise_conv2d_s8" if dw else "edgec_conv2d_s8"
        want = (conv.depthwise_conv2d_s8 if dw else conv.conv2d_s8)(p, x, w, bias, mult, shift)
        body.append(f"{fn}(&cp{i}, cx{i}, cw{i}, cb{i}, cm{i}, cs{i}, co{i});")
        emit(f"co{i}", want.size, want)
    pf = dict(in_features=37, out_features=5, input_zp=7, output_zp=-9, act_min=-128, act_max=127)
    fm, fs = requant_params(rng, 5)
    fx, fw, fb = i8(rng, 37, 3), i8(rng, (5, 37), 3), rng.integers(-999, 999, size=5).astype(np.int32)
    src += [_c_params("edgec_fully_connected_params", "fp", pf), _c_array("fx", "int8_t", fx),
            _c_array("fw", "int8_t", fw), _c_array("fb", "int32_t", fb), _c_array("fm", "int32_t", fm),
            _c_array("fs", "int32_t", fs)]
    body.append("edgec_fully_connected_s8(&fp, fx, fw, fb, fm, fs, fo);")
    emit("fo", 5, dense.fully_connected_s8(pf, fx, fw, fb, fm, fs))
    pp = dict(in_h=7, in_w=6, c=3, out_h=4, out_w=3, k_h=3, k_w=3, stride_h=2, stride_w=2, pad_top=1,
              pad_left=1, act_min=-100, act_max=120)
    px = i8(rng, (7, 6, 3), 3)
    src += [_c_params("edgec_pool_params", "pp", pp), _c_array("px", "int8_t", px)]
    body += ["edgec_max_pool_s8(&pp, px, mo);", "edgec_avg_pool_s8(&pp, px, ao);"]
    emit("mo", 36, pool.max_pool_s8(pp, px))
    emit("ao", 36, pool.avg_pool_s8(pp, px))
    pa = dict(binary.add_params(0.05, 3, 0.02, -7, 0.06, 1), n=50)
    a, b = i8(rng, 50, 2), i8(rng, 50, 3)
    src += [_c_params("edgec_add_params", "pa", pa), _c_array("aa", "int8_t", a), _c_array("ab", "int8_t", b)]
    body.append("edgec_add_s8(&pa, aa, ab, ad);")
    emit("ad", 50, binary.add_s8(pa, a, b))
    tab, sx = softmax.softmax_table(0.07), i8(rng, (3, 11), 3)
    src += [_c_array("tab", "uint32_t", tab), _c_array("sx", "int8_t", sx),
            "static const edgec_softmax_params sp = {3, 11};\n"]
    body.append("edgec_softmax_s8(&sp, sx, tab, so);")
    emit("so", 33, softmax.softmax_s8(sx, tab))
    tx = i8(rng, (2, 3, 4, 5), 3)
    src += [_c_array("tx", "int8_t", tx), "static const edgec_transpose_params tp = {{2, 3, 4, 5}, {3, 1, 0, 2}};\n"]
    body.append("edgec_transpose_s8(&tp, tx, to);")
    emit("to", 120, movement.transpose_s8(tx, [3, 1, 0, 2]))
    src.append("static void dump(const int8_t *v, int n) { int i; for (i = 0; i < n; ++i) printf(\"%d \", v[i]); printf(\"\\n\"); }\n")
    src.append("int main(void) {\n" + "\n".join(body) + "\nreturn 0;\n}\n")
    (tmp_path / "driver.c").write_text("".join(src))
    exe = tmp_path / "driver"
    # the runtime files the driver calls, as a model library picks them (the sanitizers check what runs; every
    # runtime file's clang warnings: tests/test_cmodel_sanitizers.py)
    called = [str(RUNTIME / f) for f in cheader.files_called(src) if f.endswith(".c")]
    hostcc.build([*called, tmp_path / "driver.c"], RUNTIME, exe, "clang", [*WARN, *SANITIZE, f"-I{RUNTIME}"])
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.strip().split("\n")
    assert len(lines) == len(expected)
    for line, want in zip(lines, expected):
        np.testing.assert_array_equal(np.array(line.split(), np.int64), want.astype(np.int64))
