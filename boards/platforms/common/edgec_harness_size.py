# PlatformIO extra script (pre:) that edgec copies into every firmware project (edgec/targets/firmware.py):
# the benchmark harness (serial link, MLPerf Tiny runner, dataset runner) is compiled for size (-Os, appended
# after every other flag, so it wins over the board's -O2). The harness is not what an application embeds
# and not what the benchmark times (the model's invoke between two reads of the tick counter); at -O2 it took
# about 1.3 KB more flash. The model library and the runtime keep the board's optimization level.
from SCons.Script import DefaultEnvironment

HARNESS_SOURCES = ("edgec_link.c", "edgec_mlperf.c", "edgec_dataset.c")

env = DefaultEnvironment()


def compile_for_size(env, node):
    return env.Object(node, CCFLAGS=env["CCFLAGS"] + ["-Os"])


for name in HARNESS_SOURCES:
    env.AddBuildMiddleware(compile_for_size, "*" + name)
