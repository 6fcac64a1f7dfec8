# edgec-qemu PlatformIO builder: a bare-metal Cortex-M ELF for a QEMU machine, built with the
# system toolchain (Debian gcc-arm-none-eabi + newlib); `pio run -t upload` starts QEMU.
# edgec itself starts QEMU (edgec/device.py); pio is only the build step there.
import os

from SCons.Script import AlwaysBuild, Default, DefaultEnvironment

env = DefaultEnvironment()
platform = env.PioPlatform()
board = env.BoardConfig()
BSP_DIR = os.path.join(platform.get_dir(), "bsp")

env.Replace(
    PROGNAME="firmware",
    PROGSUFFIX=".elf",
    AR="arm-none-eabi-gcc-ar",
    AS="arm-none-eabi-as",
    CC="arm-none-eabi-gcc",
    CXX="arm-none-eabi-g++",
    GDB="arm-none-eabi-gdb",
    OBJCOPY="arm-none-eabi-objcopy",
    RANLIB="arm-none-eabi-gcc-ranlib",
    SIZETOOL="arm-none-eabi-size",
    ARFLAGS=["rc"],
    # PlatformIO's "checkprogsize" (RAM/Flash bars): flash = code + constants + .data image,
    # RAM = .data + .bss + the reserved stack (the unused heap region is not counted)
    SIZEPROGREGEXP=r"^(?:\.isr_vector|\.text|\.ARM\.extab|\.ARM\.exidx|\.init_array|\.data)\s+(\d+).*",
    SIZEDATAREGEXP=r"^(?:\.data|\.bss|\.stack)\s+(\d+).*",
    SIZECHECKCMD="$SIZETOOL -A -d $SOURCES",
    SIZEPRINTCMD="$SIZETOOL -B -d $SOURCES",
)

machine_flags = ["-mcpu=%s" % board.get("build.cpu"), "-mthumb"]
if board.get("build.fpu", ""):
    machine_flags.append("-mfpu=%s" % board.get("build.fpu"))
machine_flags.append("-mfloat-abi=%s" % board.get("build.float_abi", "soft"))
specs = ["--specs=nano.specs"]

env.Append(
    ASFLAGS=machine_flags + ["-x", "assembler-with-cpp"],
    CCFLAGS=machine_flags + specs + ["-O2", "-g", "-ffunction-sections", "-fdata-sections", "-Wall"],
    CPPDEFINES=[
        ("F_CPU", "$BOARD_F_CPU"),
        ("EDGEC_F_CPU", board.get("build.f_cpu").rstrip("L") + "u"),  # SysTick clock in QEMU
        "EDGEC_UART_" + board.get("build.uart").upper(),
        ("EDGEC_UART_BASE", board.get("build.uart_base") + "u"),
        ("EDGEC_UART_IRQN", board.get("build.uart_irq")),
        ("EDGEC_NUM_IRQ", board.get("build.num_irq", 32)),
        ("EDGEC_BOARD_NAME", env.StringifyMacro(board.get("build.mcu"))),
    ],
    CPPPATH=[BSP_DIR],
    LINKFLAGS=machine_flags + specs + [
        "-nostartfiles", "-Wl,--gc-sections", "-Wl,-Map,${BUILD_DIR}/${PROGNAME}.map"],
    LIBS=["c", "m", "gcc"],
)


def render_ldscript():
    """bsp/link.ld.in with the board's memory sizes (overridable via board_upload.* in platformio.ini)."""
    with open(os.path.join(BSP_DIR, "link.ld.in")) as fp:
        text = fp.read()
    params = {
        "flash_origin": board.get("build.flash_origin"),
        "flash_size": str(int(board.get("upload.maximum_size"))),
        "ram_origin": board.get("build.ram_origin"),
        "ram_size": str(int(board.get("upload.maximum_ram_size"))),
        "stack_size": str(int(board.get("build.stack_size", 4096))),
    }
    for key, value in params.items():
        text = text.replace("{%s}" % key, value)
    build_dir = env.subst("$BUILD_DIR")
    os.makedirs(build_dir, exist_ok=True)
    path = os.path.join(build_dir, "edgec_link.ld")
    old = open(path).read() if os.path.isfile(path) else None
    if old != text:
        with open(path, "w") as fp:
            fp.write(text)
    return path


ldscript = env.subst(board.get("build.ldscript", "")) or render_ldscript()
env.Append(LINKFLAGS=["-T", ldscript])

env.BuildSources(os.path.join("$BUILD_DIR", "edgec_bsp"), BSP_DIR, src_filter="+<*.c>")
target_elf = env.BuildProgram()
env.Depends(target_elf, ldscript)

# "upload" = run the firmware in QEMU; upload_port = socket://127.0.0.1:PORT makes UART0 a TCP server.
port = (env.subst("$UPLOAD_PORT") or "").strip()
serial = (["-serial", "tcp:%s,server=on,wait=on" % port[len("socket://"):]]
          if port.startswith("socket://") else ["-serial", "mon:stdio"])
qemu_args = ["qemu-system-arm", "-M", board.get("build.qemu_machine"), "-display", "none",
             "-monitor", "none", "-nodefaults", "-nic", "none",
             "-semihosting-config", "enable=on,target=native", "-icount", "shift=0"] + serial
env.Replace(UPLOADER="qemu-system-arm", UPLOADCMD=" ".join(qemu_args) + " $UPLOAD_FLAGS -kernel $SOURCE")
upload = env.Alias("upload", target_elf,
                   env.VerboseAction("$UPLOADCMD", "Starting QEMU %s" % board.get("build.qemu_machine")))
AlwaysBuild(upload)

size = env.Alias("size", target_elf, env.VerboseAction("$SIZEPRINTCMD", "Calculating size $SOURCE"))
AlwaysBuild(size)

Default([target_elf, size])
