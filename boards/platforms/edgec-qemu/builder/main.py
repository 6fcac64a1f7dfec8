# edgec-qemu PlatformIO builder: a bare-metal ELF for a QEMU machine, built with the system
# toolchain (Debian gcc-arm-none-eabi + newlib for Cortex-M, gcc-riscv64-unknown-elf + picolibc for
# RV32); `pio run -t upload` starts QEMU.  edgec itself starts QEMU (edgec/device/device.py); pio is only
# the build step there.  The board manifest's build.arch ("arm" or "riscv") picks toolchain and BSP.
import os

from SCons.Script import AlwaysBuild, Default, DefaultEnvironment

env = DefaultEnvironment()
platform = env.PioPlatform()
board = env.BoardConfig()
ARCH = board.get("build.arch", "arm")
BSP_DIR = os.path.join(platform.get_dir(), "bsp", ARCH)
# edgec_board.h, the board API every edgec platform implements, is shared by all of them
COMMON_DIR = os.path.join(os.path.dirname(os.path.realpath(platform.get_dir())), "common")
PREFIX = {"arm": "arm-none-eabi-", "riscv": "riscv64-unknown-elf-"}[ARCH]
QEMU = {"arm": "qemu-system-arm", "riscv": "qemu-system-riscv32"}[ARCH]

env.Replace(
    PROGNAME="firmware",
    PROGSUFFIX=".elf",
    AR=PREFIX + "gcc-ar",
    AS=PREFIX + "as",
    CC=PREFIX + "gcc",
    CXX=PREFIX + "g++",
    GDB=PREFIX + "gdb",
    OBJCOPY=PREFIX + "objcopy",
    RANLIB=PREFIX + "gcc-ranlib",
    SIZETOOL=PREFIX + "size",
    ARFLAGS=["rc"],
    # PlatformIO's "checkprogsize" (RAM/Flash bars): flash = code + constants + .data image,
    # RAM = .data + .bss + the reserved stack (the unused heap region is not counted)
    SIZEPROGREGEXP=r"^(?:\.isr_vector|\.text|\.ARM\.extab|\.ARM\.exidx|\.init_array|\.data)\s+(\d+).*",
    SIZEDATAREGEXP=r"^(?:\.data|\.bss|\.stack)\s+(\d+).*",
    SIZECHECKCMD="$SIZETOOL -A -d $SOURCES",
    SIZEPRINTCMD="$SIZETOOL -B -d $SOURCES",
)

if ARCH == "arm":
    machine_flags = ["-mcpu=%s" % board.get("build.cpu"), "-mthumb"]
    if board.get("build.fpu", ""):
        machine_flags.append("-mfpu=%s" % board.get("build.fpu"))
    machine_flags.append("-mfloat-abi=%s" % board.get("build.float_abi", "soft"))
    specs = ["--specs=nano.specs"]
    uart_defines = [("EDGEC_UART_IRQN", board.get("build.uart_irq")),
                    ("EDGEC_NUM_IRQ", board.get("build.num_irq", 32))]
else:
    # gcc 12's rv32 multilibs are rv32imac/ilp32 with the 2.2 ISA spec (csr instructions in base I)
    machine_flags = ["-march=%s" % board.get("build.cpu"), "-mabi=ilp32", "-misa-spec=2.2", "-mcmodel=medany"]
    specs = ["--specs=picolibc.specs"]
    uart_defines = []

env.Append(
    ASFLAGS=machine_flags + ["-x", "assembler-with-cpp"],
    CCFLAGS=machine_flags + specs + ["-O2", "-g", "-ffunction-sections", "-fdata-sections", "-Wall"],
    CPPDEFINES=[
        ("F_CPU", "$BOARD_F_CPU"),
        ("EDGEC_F_CPU", board.get("build.f_cpu").rstrip("L") + "u"),  # SysTick clock in QEMU
        "EDGEC_UART_" + board.get("build.uart").upper(),
        ("EDGEC_UART_BASE", board.get("build.uart_base") + "u"),
        ("EDGEC_BOARD_NAME", env.StringifyMacro(board.get("build.mcu"))),
    ] + uart_defines,
    CPPPATH=[COMMON_DIR, BSP_DIR],
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

env.BuildSources(os.path.join("$BUILD_DIR", "edgec_bsp"), BSP_DIR, src_filter="+<*.c> +<*.S>")
target_elf = env.BuildProgram()
env.Depends(target_elf, ldscript)

# "upload" = run the firmware in QEMU; upload_port = socket://127.0.0.1:PORT makes UART0 a TCP server.
port = (env.subst("$UPLOAD_PORT") or "").strip()
serial = (["-serial", "tcp:%s,server=on,wait=on" % port[len("socket://"):]]
          if port.startswith("socket://") else ["-serial", "mon:stdio"])
qemu_args = [QEMU, "-M", board.get("build.qemu_machine"), "-display", "none",
             "-monitor", "none", "-nodefaults", "-nic", "none", "-icount", "shift=0"]
qemu_args += (["-semihosting-config", "enable=on,target=native"] if ARCH == "arm" else ["-bios", "none"])
qemu_args += serial
env.Replace(UPLOADER=QEMU, UPLOADCMD=" ".join(qemu_args) + " $UPLOAD_FLAGS -kernel $SOURCE")
upload = env.Alias("upload", target_elf,
                   env.VerboseAction("$UPLOADCMD", "Starting QEMU %s" % board.get("build.qemu_machine")))
AlwaysBuild(upload)

size = env.Alias("size", target_elf, env.VerboseAction("$SIZEPRINTCMD", "Calculating size $SOURCE"))
AlwaysBuild(size)

Default([target_elf, size])
