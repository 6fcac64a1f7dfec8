"""Exports as each ecosystem expects them: `--name`/`--lib-version`, a plain-C example for the c and cmake
layouts whatever the board's framework, CMake install + find_package(<name>) in a consumer project that runs
the library bit-exact, the Zephyr module and ESP-IDF component files (structure only: no SDK here), and the
Arduino/PlatformIO metadata."""
from __future__ import annotations

import json
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import DRIVER, EXAMPLES, assert_clean_error, host_compiler
from edgec import api, cli
from edgec.quant import reference
from edgec.fixedpoint import scheme

CANCER = EXAMPLES / "cancer_conv1d"
ARDUINO_BOARD = "nucleo-l4r5zi"       # an Arduino-framework board: the c/cmake examples stay plain C


def export(fmt, out, **kw):
    return api.export(CANCER / "model.onnx", CANCER / "calib.npz", kw.pop("board", ARDUINO_BOARD), fmt, out, **kw)


def cmake(*args, cwd=None):
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not installed (apt-get install cmake)")
    env = {"CC": host_compiler("gcc"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["cmake", *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd)


CONSUMER = """cmake_minimum_required(VERSION 3.14)
project(consumer C)
add_compile_options(-Wall -Wextra -Werror)
find_package(tumor {version} CONFIG REQUIRED)
add_executable(example main.c)
add_executable(driver driver_main.c)
target_link_libraries(example PRIVATE edgec::tumor)
target_link_libraries(driver PRIVATE edgec::tumor)
"""


def test_cmake_install_and_find_package_consumer_runs_bit_exact(tmp_path):
    lib = tmp_path / "tumor"
    m = export("cmake", lib, name="tumor", lib_version="1.2.3")
    assert m["model"] == "tumor" and m["version"] == "1.2.3"
    main = (lib / "examples" / "main.c").read_text()
    assert "Arduino" not in main and "int main(void)" in main            # plain C on an Arduino board
    prefix = tmp_path / "prefix"
    for args in (("-S", lib, "-B", tmp_path / "lib-build"), ("--build", tmp_path / "lib-build"),
                 ("--install", tmp_path / "lib-build", "--prefix", prefix)):
        proc = cmake(*args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    installed = {p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file()}
    assert {"include/tumor/tumor.h", "include/tumor/edgec_nn.h", "lib/cmake/tumor/tumorConfig.cmake",
            "lib/cmake/tumor/tumorConfigVersion.cmake", "lib/cmake/tumor/tumorTargets.cmake"} <= installed
    assert {"lib/libtumor.a", "lib/libtumor_edgec_runtime.a"} <= installed

    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(lib / "examples" / "main.c", app / "main.c")
    shutil.copy(lib / "examples" / "tumor_example_data.h", app)
    (app / "driver_main.c").write_text(DRIVER % {"name": "tumor", "NAME": "TUMOR"})
    (app / "CMakeLists.txt").write_text(CONSUMER.format(version="1.2"))
    shutil.rmtree(lib)                              # the consumer sees only the installed package
    build = tmp_path / "app-build"
    for args in (("-S", app, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}"), ("--build", build)):
        proc = cmake(*args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    run = subprocess.run([str(build / "example")], capture_output=True, text=True)
    assert run.returncode == 0 and "identical to the reference" in run.stdout, run.stdout

    _, graph, _ = api.compile_model(CANCER / "model.onnx", CANCER / "calib.npz")
    x = np.load(CANCER / "test.npz")["x"][:32]
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    got = subprocess.run([str(build / "driver")], input=xq.tobytes(), capture_output=True, check=True).stdout
    assert np.array_equal(np.frombuffer(got, np.int8).reshape(want.shape), want)

    (app / "CMakeLists.txt").write_text(CONSUMER.format(version="2.0"))     # the version file refuses 2.x
    proc = cmake("-S", app, "-B", tmp_path / "app-build-2", f"-DCMAKE_PREFIX_PATH={prefix}")
    assert proc.returncode != 0 and "1.2.3" in proc.stderr


def test_zephyr_module_and_esp_idf_component_files(tmp_path):
    lib = tmp_path / "kws"
    m = export("cmake", lib, name="kws")
    runtime_c = [f for f in m["library_files"] if f.endswith(".c") and f != "src/kws.c"]
    module = (lib / "zephyr" / "module.yml").read_text()
    assert "name: edgec_kws\n" in module and "cmake: zephyr" in module and "kconfig: zephyr/Kconfig" in module
    assert "config EDGEC_KWS\n\tbool" in (lib / "zephyr" / "Kconfig").read_text()
    zephyr_cmake = (lib / "zephyr" / "CMakeLists.txt").read_text()
    assert zephyr_cmake.count("if(CONFIG_EDGEC_KWS)") == 1 and "zephyr_library_named(edgec_kws)" in zephyr_cmake
    listed = zephyr_cmake[zephyr_cmake.index("foreach(f ") + len("foreach(f "):].split(")", 1)[0].split()
    assert sorted(f"src/{f}" for f in listed) == sorted(runtime_c) and "${kws_root}/src/${f}" in zephyr_cmake
    top = (lib / "CMakeLists.txt").read_text()
    idf = top[top.index("idf_component_register("):top.index("return()")]
    assert all(f'"{f}"' in idf for f in ["src/kws.c", *runtime_c]) and 'INCLUDE_DIRS "src"' in idf
    assert 'version: "0.1.0"' in (lib / "idf_component.yml").read_text()
    readme = (lib / "README.md").read_text()
    assert "has **not been built**" in readme and "Zephyr 3.5.0" in readme and "CONFIG_EDGEC_KWS=y" in readme


def test_zephyr_names_are_prefixed_so_a_model_named_like_a_subsystem_does_not_enable_it(tmp_path):
    """A model named `adc` wrote `config ADC`, which is Zephyr's ADC driver: every Kconfig symbol, the module
    and the Zephyr library names of an export carry the edgec prefix, and nothing else is declared."""
    lib = tmp_path / "adc"
    export("cmake", lib, name="adc")
    kconfig = (lib / "zephyr" / "Kconfig").read_text()
    symbols = [line.split()[1] for line in kconfig.splitlines() if line.startswith(("config ", "menuconfig "))]
    assert symbols == ["EDGEC_ADC"]
    zephyr_cmake = (lib / "zephyr" / "CMakeLists.txt").read_text()
    assert "if(CONFIG_EDGEC_ADC)" in zephyr_cmake and "CONFIG_ADC" not in zephyr_cmake
    libraries = [part.split(")")[0] for part in zephyr_cmake.split("zephyr_library_named(")[1:]]
    assert libraries == ["edgec_runtime", "edgec_adc"]
    module = (lib / "zephyr" / "module.yml").read_text()
    assert [line for line in module.splitlines() if line.startswith("name:")] == ["name: edgec_adc"]
    assert "CONFIG_EDGEC_ADC=y" in (lib / "README.md").read_text() and "CONFIG_ADC=" not in (lib / "README.md").read_text()


def test_library_metadata_and_c_layout_on_an_arduino_board(tmp_path):
    ard = tmp_path / "ard"
    export("arduino", ard, name="tumor", lib_version="2.0.1", maintainer="Ada <ada@example.org>",
           url="https://example.org/tumor")
    props = dict(line.split("=", 1) for line in (ard / "library.properties").read_text().splitlines())
    assert (props["name"], props["version"], props["maintainer"], props["url"]) == (
        "tumor", "2.0.1", "Ada <ada@example.org>", "https://example.org/tumor")
    assert (ard / "src" / "tumor.h").is_file() and "tumor_invoke" in (ard / "src" / "tumor.h").read_text()

    pio = tmp_path / "pio"
    export("platformio", pio, board="qemu-cortex-m4", lib_version="3.1", maintainer="Ada", url="https://example.org")
    manifest = json.loads((pio / "library.json").read_text())
    assert manifest["version"] == "3.1" and manifest["homepage"] == "https://example.org"
    assert manifest["authors"] == [{"name": "Ada", "maintainer": True}]
    ini = (pio / "examples" / "basic" / "platformio.ini").read_text()
    assert "platform = edgec-qemu\n" in ini and "/" not in ini.split("platform = ")[1].split("\n")[0]

    c = tmp_path / "c"
    assert export("c", c)["example"] == "example/main.c"      # plain C (test_export.py compiles and runs it)
    assert "#include <Arduino.h>" not in (c / "example" / "main.c").read_text()


def test_bad_name_and_version_are_exit_2(tmp_path, capsys):
    for flag, value in (("--name", "3d-model"), ("--name", "edgec_conv"), ("--lib-version", "v1")):
        code = cli.main(["export", str(CANCER / "model.onnx"), "--calib", str(CANCER / "calib.npz"), "--board", "host",
                         "--format", "c", "-o", str(tmp_path / "out"), flag, value])
        out, err = capsys.readouterr()
        assert_clean_error(SimpleNamespace(returncode=code, stdout=out, stderr=err), flag)
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag, value", [("--maintainer", "Me <me@example.com>\nname=evil"),
                                         ("--url", 'https://example.com/"evil'),
                                         ("--maintainer", "Me\r\nversion=9.9.9"), ("--lib-version", "1.0\\n")])
def test_manifest_values_cannot_inject_keys_or_break_the_yaml(flag, value, tmp_path, capsys):
    """--maintainer/--url/--lib-version end up in library.properties (key=value lines) and quoted strings of
    idf_component.yml and library.json: a line break or a quote is refused before any work."""
    out = tmp_path / "lib"
    code = cli.main(["export", str(CANCER / "model.onnx"), "--calib", str(CANCER / "calib.npz"), "--board",
                     "host", "--format", "arduino", "-o", str(out), flag, value])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and flag in err and "manifests cannot hold" in err, err
    assert not out.exists()
