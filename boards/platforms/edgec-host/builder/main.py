# edgec-host PlatformIO builder: the firmware as a host program (system gcc).  At start it listens
# on 127.0.0.1:$EDGEC_PORT (0 = any free port), prints "EDGEC_SERIAL socket://127.0.0.1:PORT" and
# serves one client; `pio run -t upload` runs it.
import os

from SCons.Script import AlwaysBuild, Default, DefaultEnvironment

env = DefaultEnvironment()
platform = env.PioPlatform()
BSP_DIR = os.path.join(platform.get_dir(), "bsp")
# edgec_board.h, the board API every edgec platform implements, is shared by all of them
COMMON_DIR = os.path.join(os.path.dirname(os.path.realpath(platform.get_dir())), "common")

env.Replace(CC="gcc", CXX="g++", AR="gcc-ar", RANLIB="gcc-ranlib", SIZETOOL="size",
            PROGNAME="program", PROGSUFFIX="")
env.Append(
    CCFLAGS=["-O2", "-g", "-Wall"],
    CPPDEFINES=[("EDGEC_BOARD_NAME", env.StringifyMacro("host")), "EDGEC_HOST"],
    CPPPATH=[COMMON_DIR, BSP_DIR],
    LIBS=["m"],
)
env.BuildSources(os.path.join("$BUILD_DIR", "edgec_bsp"), BSP_DIR, src_filter="+<*.c>")
target_bin = env.BuildProgram()

port = (env.subst("$UPLOAD_PORT") or "").strip()
port = port.rsplit(":", 1)[1] if port.startswith("socket://") else "0"
upload = env.Alias("upload", target_bin,
                   env.VerboseAction("EDGEC_PORT=%s $SOURCE $UPLOAD_FLAGS" % port, "Running $SOURCE"))
AlwaysBuild(upload)
Default([target_bin])
