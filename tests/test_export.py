"""`edgec export`: self-contained model libraries in four layouts, two models in one firmware (PlatformIO
on the emulated Cortex-M4, and CMake on the host), the exported PlatformIO example built offline and run."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

from qemurun import run_qemu
from conftest import EXAMPLES, REPO, host_compiler, library_sources, make_model, save
from edgec import api
from edgec.quant import artifact
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.targets.boards import load_board
from edgec import cheader
from edgec.data import load_dataset
from edgec.errors import EdgecError
from edgec.export import MARKER
from edgec.templating import c_bytes
from edgec.targets.firmware import board_options, platform_spec
from edgec.targets.pio import run_pio
from edgec.settings import Settings

MODELS = ["digits_cnn", "cancer_conv1d"]
M4 = "qemu-cortex-m4"


def export(name, fmt, out, board=M4):
    return api.export(EXAMPLES / name / "model.onnx", EXAMPLES / name / "calib.npz", board, fmt, out)


def reference_outputs(name: str, n: int):
    """n quantized test inputs of an example and the integer reference's outputs for them."""
    from edgec.api import compile_model
    _, graph, _ = compile_model(EXAMPLES / name / "model.onnx", EXAMPLES / name / "calib.npz")
    x = load_dataset(EXAMPLES / name / "test.npz", graph.input_onnx_shape, limit=n).x
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    ref = np.stack([np.asarray(reference.run(graph, xq[i])).reshape(-1) for i in range(n)])
    xq = xq.reshape(n, -1)
    return artifact.graph_hash(graph), xq, ref


@pytest.fixture(scope="module")
def pio_libs(tmp_path_factory):
    """Both examples exported as PlatformIO libraries into one project's lib/ folder."""
    project = tmp_path_factory.mktemp("two_models")
    manifests = {name: export(name, "platformio", project / "lib" / name) for name in MODELS}
    return project, manifests


def _called(lib, name):
    """The runtime files the generated model calls (cheader.files_called over its .c and .h)."""
    return cheader.files_called([(lib / f"{name}{ext}").read_text() for ext in (".c", ".h")])


def test_library_holds_the_model_and_exactly_its_runtime(pio_libs):
    project, manifests = pio_libs
    shipped = {}
    for name, m in manifests.items():
        lib = project / "lib" / name
        files = sorted(p.relative_to(lib / "src").as_posix() for p in (lib / "src").rglob("*") if p.is_file())
        shipped[name] = _called(lib / "src", name)
        assert files == sorted([f"{name}.c", f"{name}.h", *shipped[name]])
        assert set(m["runtime_files"]) == set(shipped[name])
        assert {"edgec_nn.h", "edgec_runtime.c"} <= set(shipped[name])      # the ABI check's two ends
        assert "edgec_detection.c" not in shipped[name] and "edgec_recurrent.c" not in shipped[name]
        assert len(shipped[name]) < len(cheader.runtime_files())
        lj = json.loads((lib / "library.json").read_text())
        assert lj["name"] == name and lj["build"]["srcDir"] == "src"
        readme = (lib / "README.md").read_text()
        assert f"{name}_invoke()" in readme and "int main(void)" in readme and m["model_hash"] in readme
    # a runtime file is byte-identical in every export that ships it, so linking one copy is correct for both
    assert shipped["digits_cnn"] != shipped["cancer_conv1d"]       # (the firmware below links their union)
    for f in set(shipped["digits_cnn"]) & set(shipped["cancer_conv1d"]):
        a, b = (project / "lib" / n / "src" / f for n in MODELS)
        assert a.read_bytes() == b.read_bytes(), f
        assert manifests["digits_cnn"]["runtime_files"][f] == manifests["cancer_conv1d"]["runtime_files"][f]


TWO_MODEL_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "digits_cnn.h"
#include "cancer_conv1d.h"
#include "inputs.h"

static void dump(const char *name, int i, const int8_t *p, unsigned n)
{
    printf("%s %d ", name, i);
    for (unsigned k = 0; k < n; k++) printf("%02x", (unsigned)(uint8_t)p[k]);
    printf("\n");
}

int main(void)
{
    for (int i = 0; i < N_SAMPLES; i++) {      /* interleaved: each model's arena must survive the other */
        memcpy(digits_cnn_input(), digits_in[i], DIGITS_CNN_INPUT_BYTES);
        memcpy(cancer_conv1d_input(), cancer_in[i], CANCER_CONV1D_INPUT_BYTES);
        if (digits_cnn_invoke() != 0 || cancer_conv1d_invoke() != 0) return 3;
        dump("digits_cnn", i, digits_cnn_output(), DIGITS_CNN_OUTPUT_BYTES);
        dump("cancer_conv1d", i, cancer_conv1d_output(), CANCER_CONV1D_OUTPUT_BYTES);
    }
    return 0;
}
"""


def test_two_models_in_one_firmware_on_qemu_cortex_m4(pio_libs):
    """One PlatformIO firmware links both exported libraries (runtime twice in lib/, linked once) and
    both models' outputs on the emulated Cortex-M4 are identical to the integer reference."""
    project, manifests = pio_libs
    n = 6
    refs = {name: reference_outputs(name, n) for name in MODELS}
    board = load_board(M4)
    options = "\n".join(f"{k} = {v}" for k, v in board_options(board))
    (project / "platformio.ini").write_text(
        f"[env:m4]\nplatform = {platform_spec(board)}\nboard = {board.pio_board}\n{options}\n"
        "build_src_flags = -std=c99 -Wall -Wextra -Werror\n")
    src = project / "src"
    src.mkdir(exist_ok=True)
    inputs = [f"#define N_SAMPLES {n}"]
    for name, var in (("digits_cnn", "digits_in"), ("cancer_conv1d", "cancer_in")):
        xq = refs[name][1]
        rows = ",\n".join("{" + c_bytes(row) + "}" for row in xq)
        inputs.append(f"static const int8_t {var}[{n}][{xq.shape[1]}] = {{\n{rows}\n}};")
    (src / "inputs.h").write_text("#include <stdint.h>\n" + "\n".join(inputs) + "\n")
    (src / "main.c").write_text(TWO_MODEL_MAIN)
    env = Settings.from_environment()
    output = run_pio(["run", "-e", "m4"], project, project / "build.log", env.platformio_home, env.build_timeout,
                     log=None)
    assert "libdigits_cnn.a" in output and "libcancer_conv1d.a" in output
    elf = project / ".pio" / "build" / "m4" / "firmware.elf"
    nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    kernels = [line.split()[-1] for line in nm.splitlines() if " T edgec_" in line]
    assert kernels and len(kernels) == len(set(kernels))        # one shared runtime, each kernel linked once
    assert any(k.startswith(("edgec_conv2d_window4_", "edgec_conv2d_window_s8", "edgec_conv2d_blocked",
                             "edgec_conv2d_im2col_s8", "edgec_conv2d_s8")) for k in kernels)   # (window4's entries)
    code, out = run_qemu(M4, elf)
    assert code == 0, out
    got = {}
    for line in out.splitlines():
        name, i, hexs = line.split()
        got[name, int(i)] = np.frombuffer(bytes.fromhex(hexs), np.int8)
    for name in MODELS:
        model_hash, _, ref = refs[name]
        assert model_hash == manifests[name]["model_hash"]
        for i in range(n):
            assert np.array_equal(got[name, i], ref[i]), (name, i)


def test_exported_platformio_example_builds_offline_and_runs_after_a_move(pio_libs, tmp_path):
    project, _ = pio_libs
    moved = tmp_path / "elsewhere" / "digits_cnn"            # the library moved: no absolute path may break
    shutil.copytree(project / "lib" / "digits_cnn", moved)
    example = moved / "examples" / "basic"
    ini = (example / "platformio.ini").read_text()
    assert "lib_deps = symlink://../..\n" in ini and "board = qemu_mps2_an386\n" in ini
    assert "platform = edgec-qemu\n" in ini and str(REPO) not in ini and "symlink:///" not in ini
    proc = subprocess.run([sys.executable, "-m", "edgec.targets.pio", "run", "-d", str(example)],
                          capture_output=True, text=True, timeout=600)      # as the example's README says
    assert proc.returncode == 0, proc.stdout[-2000:]
    (elf,) = (example / ".pio" / "build").glob("*/firmware.elf")
    code, out = run_qemu(M4, elf)
    assert code == 0 and "digits_cnn: top output" in out and "identical to the reference" in out, out


CMAKE_MAIN = r"""
#include <string.h>
#include "digits_cnn.h"
#include "cancer_conv1d.h"
#include "digits_cnn_example_data.h"
#include "cancer_conv1d_example_data.h"
int main(void)
{
    memcpy(digits_cnn_input(), digits_cnn_example_input, DIGITS_CNN_INPUT_BYTES);
    memcpy(cancer_conv1d_input(), cancer_conv1d_example_input, CANCER_CONV1D_INPUT_BYTES);
    if (digits_cnn_invoke() || cancer_conv1d_invoke()) return 3;
    if (memcmp(digits_cnn_output(), digits_cnn_example_expected, DIGITS_CNN_OUTPUT_BYTES)) return 4;
    if (memcmp(cancer_conv1d_output(), cancer_conv1d_example_expected, CANCER_CONV1D_OUTPUT_BYTES)) return 5;
    return 0;
}
"""


def test_cmake_libraries_share_one_runtime_target(tmp_path):
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not installed (apt-get install cmake)")
    for name in MODELS:
        export(name, "cmake", tmp_path / name)
        assert (tmp_path / name / "zephyr" / "module.yml").read_text().count(f"name: edgec_{name}\n") == 1
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.c").write_text(CMAKE_MAIN)
    (app / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
        "add_compile_options(-Wall -Wextra -Werror)\n"
        + "".join(f"add_subdirectory(../{n} {n})\n" for n in MODELS)
        + "add_executable(app main.c)\n"
        + "target_include_directories(app PRIVATE ../digits_cnn/examples ../cancer_conv1d/examples)\n"
        + "target_link_libraries(app PRIVATE digits_cnn cancer_conv1d m)\n")
    build = tmp_path / "build"
    env = {"CC": host_compiler("gcc"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["cmake", "-S", str(app), "-B", str(build)], check=True, capture_output=True, env=env)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    cache = (build / "CMakeCache.txt").read_text()
    assert (build / "cancer_conv1d").is_dir() and "edgec_runtime" in (build / "digits_cnn" / "Makefile").read_text()
    assert "edgec_runtime" not in (build / "cancer_conv1d" / "Makefile").read_text()   # defined once, by the first
    assert "CMAKE_C_COMPILER" in cache
    assert subprocess.run([str(build / "app")]).returncode == 0


@pytest.mark.parametrize("stem", ["all", "install"])
def test_cmake_export_of_a_model_named_like_a_cmake_target_configures(stem, tmp_path):
    """A model `all.onnx` or `install.onnx`: its library is not named like CMake's reserved targets (the
    project did not configure)."""
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not installed (apt-get install cmake)")
    model = tmp_path / f"{stem}.onnx"
    shutil.copy(EXAMPLES / "cancer_conv1d" / "model.onnx", model)
    manifest = api.export(model, EXAMPLES / "cancer_conv1d" / "calib.npz", M4, "cmake", tmp_path / "lib")
    assert manifest["model"] == f"model_{stem}"
    env = {"CC": host_compiler("gcc"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(["cmake", "-S", str(tmp_path / "lib"), "-B", str(tmp_path / "build")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def test_c_layout_example_compiles_clean_and_matches_the_reference(tmp_path):
    out = tmp_path / "lib"
    m = export("cancer_conv1d", "c", out, board="host")
    assert sorted(m["library_files"]) == sorted(["cancer_conv1d.c", "cancer_conv1d.h", *_called(out, "cancer_conv1d")])
    exe = tmp_path / "example"
    sources = library_sources(out) + [str(out / "example" / "main.c")]
    subprocess.run([host_compiler("gcc"), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2",
                    "-I", str(out), *sources, "-o", str(exe), "-lm"], check=True, capture_output=True, text=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0 and "identical to the reference" in run.stdout, run.stdout


ARDUINO_STUB = """
#pragma once
#include <stdint.h>
#include <stddef.h>
struct StubSerial {
    void begin(unsigned long) {}
    explicit operator bool() const { return true; }
    size_t print(const char *) { return 0; }
    size_t print(int) { return 0; }
    size_t print(unsigned) { return 0; }
    size_t print(unsigned long) { return 0; }
    size_t println(const char *) { return 0; }
};
extern StubSerial Serial;
unsigned long micros(void);
"""


def test_arduino_layout(tmp_path):
    out = tmp_path / "cancer_conv1d"
    export("cancer_conv1d", "arduino", out, board="nucleo-l4r5zi")
    props = dict(line.split("=", 1) for line in (out / "library.properties").read_text().splitlines())
    assert props["name"] == "cancer_conv1d" and props["includes"] == "cancer_conv1d.h"
    assert props["dot_a_linkage"] == "true"    # archive: a second model's identical runtime is not linked twice
    assert sorted(p.relative_to(out / "src").as_posix() for p in (out / "src").rglob("*") if p.is_file()) == sorted(
        ["cancer_conv1d.c", "cancer_conv1d.h", *_called(out / "src", "cancer_conv1d")])
    sketch = out / "examples" / "cancer_conv1d_basic" / "cancer_conv1d_basic.ino"
    assert "#include <cancer_conv1d.h>" in sketch.read_text()
    # No Arduino core here: check the sketch's C++ against a stub of the few Arduino calls it makes.
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "Arduino.h").write_text(ARDUINO_STUB)
    subprocess.run([host_compiler("g++"), "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++",
                    "-I", str(stub), "-I", str(out / "src"), "-I", str(sketch.parent), str(sketch)],
                   check=True, capture_output=True, text=True)


def test_export_errors(tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "mine.txt").write_text("user data")
    with pytest.raises(EdgecError, match="exists and was not written by edgec"):
        export("cancer_conv1d", "c", occupied)
    assert (occupied / "mine.txt").read_text() == "user data"
    with pytest.raises(EdgecError, match="unknown export format 'zip'"):
        export("cancer_conv1d", "zip", tmp_path / "z")
    # a model whose arena cannot fit the 16 KB micro:bit is refused before anything is written
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                       ("x", [1, 1, 128, 128]), ("y", [1, 1, 128, 128]), {"w": np.ones((1, 1, 3, 3)) / 9})
    path = save(model, tmp_path)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(0).random((4, 1, 128, 128), np.float32))
    with pytest.raises(EdgecError, match="does not fit board qemu-cortex-m0: .* but the board has 16,384 B"):
        api.export(path, calib, "qemu-cortex-m0", "c", tmp_path / "big")
    assert not (tmp_path / "big").exists()
    again = export("cancer_conv1d", "c", tmp_path / "ok")        # an earlier export may be replaced
    assert export("cancer_conv1d", "c", tmp_path / "ok") == again and (tmp_path / "ok" / MARKER).is_file()


def _detection_tail(path):
    """A one-operator SSD tail (.tflite): int8 boxes [1, 16, 4] and scores [1, 16, 3], their DEQUANTIZE and
    TFLite_Detection_PostProcess (4 detections)."""
    from flatbuffers import flexbuffers
    from tflite_oracle import Case, Node, T, write
    from edgec.ops import detection

    c = (np.arange(4) + 0.5) / 4
    yy, xx = np.meshgrid(c, c, indexing="ij")
    anchors = np.stack([yy.ravel(), xx.ravel(), np.full(16, 0.2), np.full(16, 0.2)], 1).astype(np.float32)
    options = dict(max_detections=4, max_classes_per_detection=1, nms_score_threshold=0.3, nms_iou_threshold=0.5,
                   num_classes=2, y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0, use_regular_nms=False)
    tensors = [T((1, 16, 4), [0.05], [0]), T((1, 16, 3), [1 / 256], [-128]), T((1, 16, 4), [], [], 0),
               T((1, 16, 3), [], [], 0), T((16, 4), [], [], 0, anchors), T((1, 4, 4), [], [], 0),
               T((1, 4), [], [], 0), T((1, 4), [], [], 0), T((1,), [], [], 0)]
    nodes = [Node("DEQUANTIZE", [0], 2), Node("DEQUANTIZE", [1], 3),
             Node(f"CUSTOM:{detection.CUSTOM_CODE}", [2, 3, 4], [5, 6, 7, 8], custom=flexbuffers.Dumps(options))]
    path.write_bytes(write(Case("ssd_tail", tensors, nodes, [0, 1], [5, 6, 7, 8])))
    return path


def test_only_the_runtime_files_the_model_calls_ship_and_link(tmp_path):
    """A detection tail's export ships edgec_detection.c, a plain CNN's does not (nor the detection tail a
    convolution); each minimal library's example compiles -Werror clean, links and runs on the host, and matches
    the reference (the detection tail's float32 outputs compared as their bytes: once compared as int8 values)."""
    libs = {"cnn": export("digits_cnn", "c", tmp_path / "cnn", board="host"),
            "ssd": api.export(_detection_tail(tmp_path / "ssd_tail.tflite"), None, "host", "c", tmp_path / "ssd")}
    runtime = {k: set(m["runtime_files"]) for k, m in libs.items()}
    assert "edgec_detection.c" in runtime["ssd"] and "edgec_detection.c" not in runtime["cnn"]
    assert "edgec_conv.c" not in runtime["ssd"] and not any(f.startswith("fast/") for f in runtime["ssd"])
    for k, m in libs.items():
        out = tmp_path / k
        shipped = {p.relative_to(out).as_posix() for p in out.rglob("*.[ch]") if not p.parts[-2] == "example"}
        assert shipped == runtime[k] | {f"{m['model']}.c", f"{m['model']}.h"}
        exe = tmp_path / f"{k}.exe"
        subprocess.run([host_compiler("gcc"), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2",
                        "-I", str(out), *library_sources(out), str(out / "example" / "main.c"), "-o", str(exe), "-lm"],
                       check=True, capture_output=True, text=True)
    for k in libs:
        run = subprocess.run([str(tmp_path / f"{k}.exe")], capture_output=True, text=True)
        assert run.returncode == 0 and "identical to the reference" in run.stdout, (k, run.stdout)


def test_a_model_of_views_only_compiles_warning_free(tmp_path):
    """A .tflite of one RESHAPE lowers to no layer at all: its generated C once left the hook's parameters unused
    and failed -Werror. Its example compiles, runs and matches the reference."""
    from tflite_oracle import Case, Node, T, write

    path = tmp_path / "views.tflite"
    shape = T((2,), [], [], 2, np.array([2, 6], np.int32))          # (int32 constant: the new shape)
    path.write_bytes(write(Case("views", [T((1, 12), [0.1], [3]), shape, T((2, 6), [0.1], [3])],
                                [Node("RESHAPE", [0, 1], 2)], [0], [2])))
    api.export(path, None, "host", "c", tmp_path / "lib")
    out, exe = tmp_path / "lib", tmp_path / "views.exe"
    subprocess.run([host_compiler("gcc"), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", "-I", str(out),
                    *library_sources(out), str(out / "example" / "main.c"), "-o", str(exe), "-lm"],
                   check=True, capture_output=True, text=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0 and "identical to the reference" in run.stdout, run.stdout
