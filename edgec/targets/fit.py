"""Does the model fit the board? Estimated before anything is generated, measured after the build.

Before: RAM = arena (exact, from the plan) + the benchmark runtime's static RAM + the board's stack
reserve; flash = constants (exact: weights, biases, multipliers, shifts, tables) + a code estimate.
Too big: `check` raises one EdgecError line with the numbers, the biggest tensors and layers, and what to try.

After (`measure`): from the firmware ELF, the static RAM (.data + .bss + the arena pieces other RAM regions
hold, sections .edgec_*), the stack estimate from gcc's
`-fstack-usage` files along the deepest call chain of the firmware, and the check that no constant of the
model library sits in RAM (the arena is the model's only RAM symbol).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from edgec.targets.boards import Board
from edgec.errors import EdgecError
from edgec.targets import elf
from edgec.targets.code_size import code_by_part
from edgec.lower.lowering import VARIANT, variant_code_bytes
from edgec.ir import Graph
from edgec.ops.registry import ALIAS_OPS, KERNEL_CODE_BYTES
from edgec.plan.memory_report import summary
from edgec.plan.planner import Plan, check_plan
from edgec.plan.regions import Space, assign
from edgec import cheader

# Static RAM of the benchmark firmware besides the arena: serial-link frames and counters (edgec_link.c,
# board.c) plus a 4-byte tick counter per layer for the profile. Measured on qemu-cortex-m4
# (arm-none-eabi-gcc 12, -O2): .data + .bss - arena = 640 + 4 x layers bytes on the four MLPerf models
# (1,168 before the link kept two frame buffers instead of four).
RUNTIME_RAM_BYTES = 640
RUNTIME_RAM_PER_LAYER_BYTES = 4


def runtime_ram_bytes(graph: Graph) -> int:
    return RUNTIME_RAM_BYTES + RUNTIME_RAM_PER_LAYER_BYTES * sum(op.kind not in ALIAS_OPS for op in graph.ops)
# Code (flash besides the model's constants), calibrated on the four MLPerf Tiny models built for
# qemu-cortex-m4 (within ~10%): startup, serial link, libc pieces, plus each kernel used once, plus the
# call and parameter struct of every op. Layer-name strings are dropped by the linker unless used.
# Base re-fitted (2,560 -> 3,360) once reference kernels that speed variants replace stopped being counted:
# firmware flash within -1.2 .. +1.1 % on digits_cnn, cancer_conv1d and the four MLPerf Tiny int8 models
# (tests/test_board_fit.py). Base 3,360 -> 3,910 when the firmware's common part grew by about 550 B (the link's
# RESET frame and the state code of the generated model; both digits_cnn and cancer_conv1d grew by the same).
CODE_BASE_BYTES = 3910
CODE_PER_OP_BYTES = 192
UNKNOWN_KERNEL_CODE_BYTES = 1024       # (a survey's placeholders for unsupported nodes)
DEFAULT_STACK_BYTES = 4096    # when the board's platform does not say how much stack it reserves
# A Cortex-M exception stacks 8 words, 26 with the FPU's lazy context: 104 bytes, taken by an interrupt
# (serial, SysTick) arriving in the deepest kernel. Handlers' own frames come from their .su entries.
EXCEPTION_FRAME_BYTES = 104


def board_stack_bytes(board: Board) -> int:
    """The stack the board's linker script reserves (edgec's local platforms say it in the board manifest)."""
    local = board.local_platform_dir
    manifest = local / "boards" / f"{board.pio_board}.json" if local else None
    if manifest and manifest.is_file():
        size = json.loads(manifest.read_text()).get("build", {}).get("stack_size")
        if isinstance(size, int) and size > 0:
            return size
    return DEFAULT_STACK_BYTES


def code_estimate(graph: Graph) -> int:
    ops = [op for op in graph.ops if op.kind not in ALIAS_OPS]
    # a kind's reference kernel is linked only when one of its ops runs on it (not when speed variants run all)
    # (a non-variant kernel that states its own code_bytes, e.g. an int16 one, counts once as itself; the others as
    # their kind's int8 reference kernel)
    linked = {(op.lowering.kernel.name, op.lowering.kernel.code_bytes)
              if op.lowering is not None and op.lowering.kernel.code_bytes
              else (op.kind, KERNEL_CODE_BYTES.get(op.kind, UNKNOWN_KERNEL_CODE_BYTES))
              for op in ops if op.lowering is None or op.lowering.kernel.role != VARIANT}
    return CODE_BASE_BYTES + CODE_PER_OP_BYTES * len(ops) + sum(b for _, b in linked) + variant_code_bytes(ops)


def region_spaces(graph: Graph, board: Board) -> list[Space]:
    """The board's RAM regions as the arena may use them (edgec/plan/regions.py): the first region minus what
    the firmware takes there besides the arena (runtime, stack, framework), every later one with a section whole."""
    first = board.region("ram")
    others = board.arena_regions()[1:] if first else ()
    if not others:
        return []
    own = runtime_ram_bytes(graph) + board_stack_bytes(board) + board.reserved_ram_bytes
    return [Space(first.name, "", max(board.ram_bytes - own, 0), first.speed, first.origin, first.size)] + \
        [Space(r.name, r.section, r.size, r.speed, r.origin, r.size) for r in others]


def place_in_regions(graph: Graph, plan: Plan, board: Board) -> Plan:
    """The plan spread over the board's RAM regions when it lists more than one the arena may use (the hottest
    buffers in the fastest region, see edgec/plan/regions.py); otherwise the plan as it was."""
    spaces = region_spaces(graph, board)
    if not spaces:
        return plan
    plan = assign(graph, plan, spaces)
    check_plan(graph, plan)
    return plan


def _default_arena_bytes(plan: Plan) -> int:
    """Arena bytes in the first RAM region (beside .data, .bss and the stack)."""
    if not plan.pieces:
        return plan.arena_bytes
    return sum(p.bytes for p in plan.pieces if not p.section)


def estimate(graph: Graph, plan: Plan, board: Board) -> dict:
    """RAM and flash the firmware needs, by part, against the board's; with arena pieces in other RAM regions,
    ram.regions has each one's bytes against its region's size."""
    ram = {"arena": _default_arena_bytes(plan), "runtime": runtime_ram_bytes(graph), "stack": board_stack_bytes(board),
           "framework": board.reserved_ram_bytes}
    flash = {"constants": graph.weights_bytes(), "code": code_estimate(graph), "framework": board.reserved_flash_bytes}
    est = {"ram": dict(ram, total=sum(ram.values()), board=board.ram_bytes),
           "flash": dict(flash, total=sum(flash.values()), board=board.flash_bytes)}
    others = [p for p in plan.pieces if p.section]
    if others:
        est["ram"]["regions"] = {p.name: {"arena": p.bytes, "board": p.size, "section": p.section} for p in others}
    return est


# --ram-budget counts the RAM the firmware really uses: its static RAM and the stack it touches, not the
# stack the linker script reserves. The bench firmware's stack high-water mark on qemu-cortex-m4 stays below
# this (the deepest kernel frame plus the link's handlers); an assumption until the device measures it.
BUDGET_STACK_BYTES = 2048


def ram_limits(graph: Graph, board: Board, ram_budget: int | None) -> dict:
    """What the planner may spend on the arena (edgec/pipeline.schedule_and_plan's ram arguments): with a
    budget, the budget beside the firmware's other static RAM and the stack it uses; else the board's RAM
    beside everything the fit check counts."""
    if ram_budget is not None:
        return {"ram_budget": ram_budget, "overhead": runtime_ram_bytes(graph) + BUDGET_STACK_BYTES}
    spaces = region_spaces(graph, board)
    if spaces:      # several RAM regions: the fastest plan fits when the arena fits their sum (placed later)
        return {"board_ram": sum(s.capacity for s in spaces), "overhead": 0}
    return {"board_ram": board.ram_bytes, "overhead": runtime_ram_bytes(graph) + board_stack_bytes(board)
            + board.reserved_ram_bytes}


def _b(n: int) -> str:
    return f"{n:,} B"


def _framework(part: dict) -> str:
    return f" + framework {_b(part['framework'])}" if part["framework"] else ""


def check(graph: Graph, plan: Plan, board: Board) -> dict:
    """The estimate; EdgecError if the model does not fit the board's RAM or flash."""
    est = estimate(graph, plan, board)
    ram, flash = est["ram"], est["flash"]
    where = f"model {graph.name} does not fit board {board.name}"
    if ram["total"] > ram["board"]:
        s = summary(graph, plan)
        tensors = ", ".join(f"{t['tensor']} ({_b(t['bytes'])})" for t in s["biggest_tensors"])
        layers = ", ".join(f"op {x['op']} {x['kind']} '{x['name']}' ({_b(x['live_bytes'])} live)"
                           for x in s["biggest_layers"][:2])
        raise EdgecError(
            f"{where}: it needs {_b(ram['total'])} of RAM (arena {_b(ram['arena'])} + runtime {_b(ram['runtime'])}"
            f" + stack {_b(ram['stack'])}{_framework(ram)}) but the board has {_b(ram['board'])}, "
            f"{_b(ram['total'] - ram['board'])} "
            f"short; biggest tensors: {tensors}; peak layers: {layers}; try a smaller input resolution or fewer "
            f"channels around those layers, or a board with more RAM")
    for region, part in ram.get("regions", {}).items():
        if part["arena"] > part["board"]:
            raise EdgecError(f"{where}: its arena piece in RAM region {region} needs {_b(part['arena'])} but the "
                             f"region has {_b(part['board'])}; give the board's profile bigger regions or a board "
                             "with more RAM")
    if flash["total"] > flash["board"]:
        layers = sorted(((sum(a.nbytes for a in op.arrays.values()), i) for i, op in enumerate(graph.ops)),
                        reverse=True)[:3]
        names = ", ".join(f"op {i} {graph.ops[i].kind} '{graph.ops[i].name}' ({_b(n)})" for n, i in layers)
        raise EdgecError(
            f"{where}: it needs about {_b(flash['total'])} of flash (constants {_b(flash['constants'])} + code "
            f"about {_b(flash['code'])}{_framework(flash)}) but the board has {_b(flash['board'])}; biggest layers by constants: "
            f"{names}; try fewer or narrower layers (or pruning them), or a board with more flash")
    return est


# ---------------------------------------------------------------- after the build

def ram_symbols(program: Path) -> dict[str, int]:
    """{symbol: bytes} of everything the program keeps in .data/.bss (static RAM)."""
    return elf.ram_symbols(program)


def defined_symbols(objects: list[Path]) -> set[str]:
    """Names defined by these object files (functions, constants and variables, static ones included)."""
    return set().union(*(elf.defined_names(o) for o in objects))


def _su_function(where: str) -> str:
    """The function name of a .su entry: `file:line:col:name` where a C++ name reads `void setup()`."""
    name = where.split(":", 3)[-1]
    if "(" in name:
        name = name.split("(")[0].split()[-1].split("::")[-1]
    return name.split(".")[0]      # gcc suffixes clones: foo.constprop.0, foo.isra.0


def stack_usage(build_dir: Path) -> dict[str, int]:
    """{function: frame bytes} from the `-fstack-usage` (.su) files gcc wrote next to the objects
    (tab-separated: location:name, bytes, qualifier)."""
    frames = {}
    for su in sorted(Path(build_dir).rglob("*.su")):
        for line in su.read_text(errors="replace").splitlines():
            parts = line.strip().split("\t")
            if len(parts) == 3 and parts[1].isdigit():
                name = _su_function(parts[0])
                frames[name] = max(frames.get(name, 0), int(parts[1]))
    return frames


# The way into the benchmark loop: edgec's own platforms call main() of bench_main.c; on a framework board
# the framework's main() calls the sketch's setup(), which calls edgec_bench_main() (arduino_main.cpp.j2).
# The framework's objects may come from PlatformIO's build cache, which keeps no .su files: then its main()
# counts as FRAMEWORK_MAIN_BYTES (STM32duino 2.12's main(): 8 bytes, from its .su on a fresh build).
FRAMEWORK_MAIN_BYTES = 16


def stack_estimate(frames: dict[str, int], model: str) -> int | None:
    """Deepest stack of the benchmark firmware: its entry (main, or on framework boards main -> setup ->
    edgec_bench_main) -> edgec_link_serve -> (its command handler) -> NAME_invoke -> NAME_invoke_with_hook ->
    NAME_run (a model with the context API) -> the deepest kernel, plus an interrupt arriving there.  Kernels inline their helpers; libgcc's 64-bit
    division (softmax) is not in the .su files and is counted as 64 bytes. None when the files are missing
    (a build without -fstack-usage)."""
    if "edgec_bench_main" in frames:
        if "setup" not in frames:
            return None
        entry = frames.get("main", FRAMEWORK_MAIN_BYTES) + frames["setup"] + frames["edgec_bench_main"]
    elif "main" in frames:
        entry = frames["main"]
    else:
        return None
    chain = ["edgec_link_serve", "handle", f"{model}_invoke", f"{model}_invoke_with_hook"]
    if not all(f in frames for f in chain[:1] + chain[2:]):
        return None
    chain.append(f"{model}_run")     # the layers' static function under both APIs (when the compiler kept it)
    kernels = [v for k, v in frames.items() if k.startswith("edgec_") and k.endswith("_s8")]
    isr = max((v for k, v in frames.items() if k.endswith("_Handler") or k.endswith("_irq_handler")), default=32)
    return entry + sum(frames.get(f, 0) for f in chain) + max(kernels, default=0) + 64 + EXCEPTION_FRAME_BYTES + isr


def objects_of(build_dir: Path, names) -> list[Path]:
    """The object files of these sources: `name.o` (edgec's platforms) or `name.c.o` (PlatformIO's builders)."""
    return [o for name in names for pattern in (f"{name}.o", f"{name}.c.o") for o in sorted(build_dir.rglob(pattern))]


def optimization_level(obj: Path) -> str | None:
    """The -O option gcc really applied to an object (the last one of its recorded command line,
    -frecord-gcc-switches), or None when the object has no record."""
    out = " " + elf.recorded_switches(obj).replace(b"\0", b" ").decode("utf-8", "replace")
    levels = re.findall(r"\s(-O[0-3sgz]?|-Ofast)\b", out)
    return levels[-1] if levels else None


def measure(project: Path, program: Path, model: str, host: bool) -> dict:
    """Static RAM, stack estimate, the flash-not-RAM check and the code by part (edgec/targets/code_size.py)
    of a built firmware."""
    build_dir = next((d for d in (Path(project) / ".pio" / "build").glob("*") if d.is_dir()), None)
    frames = stack_usage(build_dir) if build_dir else {}
    stack = stack_estimate(frames, model)
    result = {"stack_estimate_bytes": stack, "stack_estimate_method": "gcc -fstack-usage, deepest call chain"}
    if host:
        return result
    ram = ram_symbols(program)
    static = sum(s.size for s in elf.sections(program)
                 if s.name in (".data", ".bss") or s.name.startswith(".edgec_"))
    kernels = [Path(f).stem for f in cheader.runtime_files() if f.endswith(".c")]     # the runtime's objects
    objects = objects_of(build_dir, (model, *kernels)) if build_dir else []
    model_in_ram = sorted(set(ram) & defined_symbols(objects)) if objects else None
    model_obj = objects_of(build_dir, (model,)) if build_dir else []
    code = code_by_part(build_dir, program, model) if build_dir else None
    result.update({"code": code, "static_ram_bytes": static, "model_ram_symbols": model_in_ram,
                   "total_ram_bytes": static + stack if stack is not None else None,
                   "model_optimization": optimization_level(model_obj[0]) if model_obj else None})
    return result
