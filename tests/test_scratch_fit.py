"""Kernel scratch within the tensors' peak (edgec/plan/scratch_fit.py, edgec/ops/select.py within_scratch): without a
budget, a speed kernel's scratch must not raise the arena above what the tensors alone need; the window convolution
keeps its speed on narrower column bands (at least im2col.WINDOW_MIN_BAND columns), a kernel that cannot narrow
moves to another variant only where its scratch would add more than the plan allows (select.SWITCH_EXCESS, a
share of the peak)."""
from __future__ import annotations

import re

import numpy as np

from edgec.ir import Graph, Op, Tensor
from edgec.ops import select
from edgec.ops.opdef import CallSite
from edgec.ops.conv.im2col import WINDOW_MIN_BAND
from edgec.pipeline import schedule_and_plan
from edgec.plan import planner, scratch_fit


def conv(name: str, x: str, y: str, side: int, in_c: int, out_c: int, k: int, seed: int) -> Op:
    """A quantized 'same' k x k convolution of a side x side image, in the fast kernels' range."""
    rng = np.random.default_rng(seed)
    p = dict(in_h=side, in_w=side, in_c=in_c, out_h=side, out_w=side, out_c=out_c, k_h=k, k_w=k, stride_h=1,
             stride_w=1, dil_h=1, dil_w=1, pad_top=k // 2, pad_left=k // 2, input_zp=3, output_zp=-5,
             act_min=-128, act_max=127, depth_multiplier=1)
    arrays = dict(weights=rng.integers(-100, 101, size=(out_c, k, k, in_c)).astype(np.int8),
                  bias=rng.integers(-2000, 2000, out_c).astype(np.int32),
                  mult=np.full(out_c, 1_500_000_000, np.int32), shift=np.full(out_c, -9, np.int32))
    return Op("conv2d", name, (x,), y, params=p, arrays=arrays)


def chain(side: int = 16, c: int = 16) -> Graph:
    """x -> 3x3 conv -> y -> 1x1 conv -> z: the tensors peak while the 3x3 convolution runs (x and y alive), where
    the window kernel's ring of widened rows would come on top."""
    shape = (1, side, side, c)
    tensors = {n: Tensor(n, shape, n, 0.05, 0) for n in ("x", "y", "z")}
    ops = (conv("c3", "x", "y", side, c, c, 3, 1), conv("c1", "y", "z", side, c, c, 1, 2))
    return Graph("g", tensors, ops, "x", "z")


def test_window_scratch_no_longer_raises_the_arena_above_the_tensors_peak():
    """The 3x3 convolution stays on its speed variant (window4 on a DSP core) but on column bands, as narrow as they
    go where the tensors leave no room: 2,496 B on top of the tensors' 8,192 B where whole rows add 4,032 B."""
    graph = chain()
    lowered, plan = schedule_and_plan(graph, dsp=True)
    peak = max(scratch_fit.tensor_load(lowered))
    low = lowered.ops[0].lowering
    whole = low.kernel.scratch_bytes({**low.params, "band_w": low.params["out_w"]})
    assert peak == 2 * 16 * 16 * 16 and whole == 4032
    assert low.variant == "window4" and low.params["band_w"] == WINDOW_MIN_BAND and low.scratch_bytes == 2496
    assert plan.arena_bytes < peak + whole and plan.arena_bytes == peak + planner._align(low.scratch_bytes)
    assert [f["op"] for f in plan.ram_choice["scratch_within_peak"]] == [0]


def test_room_under_the_peak_keeps_whole_rows():
    """Where the tensors of another op set the peak (a wider output later), the window kernel keeps whole rows: the
    plan changes nothing that costs no RAM."""
    side, c = 16, 16
    tensors = {"x": Tensor("x", (1, side, side, c), "x", 0.05, 0), "y": Tensor("y", (1, side, side, c), "y", 0.05, 0),
               "z": Tensor("z", (1, side, side, 4 * c), "z", 0.05, 0)}
    ops = (conv("c3", "x", "y", side, c, c, 3, 1), conv("c1", "y", "z", side, c, 4 * c, 1, 2))
    lowered, plan = schedule_and_plan(Graph("g", tensors, ops, "x", "z"), dsp=True)
    assert lowered.ops[0].lowering.params["band_w"] == side and "scratch_within_peak" not in plan.ram_choice


def test_an_op_keeps_the_room_a_lifted_peak_leaves_it():
    """Two 3x3 convolutions: the first sets the tensors' peak and leaves no room (bands of 8 columns lift the arena by
    2,496 B); the second would not fit its whole rows under the tensors' peak, but fits them under the lifted one,
    which the arena has anyway: it keeps whole rows (no band costs it instructions)."""
    side, c = 16, 16
    tensors = {"x": Tensor("x", (1, side, side, c), "x", 0.05, 0), "y": Tensor("y", (1, side, side, c), "y", 0.05, 0),
               "z": Tensor("z", (1, side, side, c // 2), "z", 0.05, 0)}
    ops = (conv("a", "x", "y", side, c, c, 3, 1), conv("b", "y", "z", side, c, c // 2, 3, 2))
    lowered, plan = schedule_and_plan(Graph("g", tensors, ops, "x", "z"), dsp=True)
    first, second = (op.lowering for op in lowered.ops)
    assert first.params["band_w"] == WINDOW_MIN_BAND and second.params["band_w"] == side
    assert plan.arena_bytes == 2 * side * side * c + first.scratch_bytes


def test_within_scratch_narrows_before_it_switches_kernels():
    """The selector's answer to the plan: the same kernel on the widest bands within the room; a room no band
    reaches gives the narrowest bands while they add at most `switch_above` (the window kernel's speed is worth
    it), another variant only past that (blocked: 1,440 B)."""
    op = conv("c3", "x", "y", 32, 32, 32, 3, 1)
    low = select.select(op, select.Options(dsp=True))
    assert low.variant == "window4" and low.params["band_w"] == 32
    assert select.within_scratch(op, low, low.scratch_bytes) is low
    room = low.scratch_bytes // 2
    half = select.within_scratch(op, low, room)
    assert half.variant == "window4" and half.scratch_bytes <= room and WINDOW_MIN_BAND < half.params["band_w"] < 32
    tight = select.within_scratch(op, low, 0, switch_above=8192)
    assert tight.variant == "window4" and tight.params["band_w"] == WINDOW_MIN_BAND and tight.scratch_bytes == 4992
    assert select.within_scratch(op, low, 0).variant == "blocked"       # 4,992 B is more than SWITCH_EXCESS
    assert select.within_scratch(op, low, 0, switch_above=None).params == tight.params
    moved = select.within_scratch(op, low, 0, switch_above=tight.scratch_bytes - 1)
    assert moved.variant == "blocked" and moved.scratch_bytes < tight.scratch_bytes


def test_a_kernel_that_cannot_narrow_moves_to_the_variant_within_the_room():
    """The whole-image depthwise kernel (small) on a 16x16x64 image: its 5,760 B of widened image would add more
    than SWITCH_EXCESS above a room of 1 KiB, so the op runs on the rolling-window variant (fused) within the room; with
    `--optimize size` (switch_above None) it keeps its kernel."""
    rng = np.random.default_rng(5)
    p = dict(in_h=16, in_w=16, in_c=64, out_h=16, out_w=16, out_c=64, k_h=3, k_w=3, stride_h=1, stride_w=1,
             dil_h=1, dil_w=1, pad_top=1, pad_left=1, input_zp=3, output_zp=-5, act_min=-128, act_max=127,
             depth_multiplier=1)
    op = Op("depthwise_conv2d", "dw", ("x",), "y", params=p,
            arrays=dict(weights=rng.integers(-100, 101, size=(3, 3, 64)).astype(np.int8),
                        bias=rng.integers(-2000, 2000, 64).astype(np.int32),
                        mult=np.full(64, 1_500_000_000, np.int32), shift=np.full(64, -9, np.int32)))
    low = select.select(op, select.Options(dsp=True))
    assert low.variant == "small" and low.scratch_bytes > select.SWITCH_EXCESS
    moved = select.within_scratch(op, low, 1024)
    assert moved.variant == "fused" and moved.scratch_bytes <= 1024 and moved.variants == low.variants
    assert select.within_scratch(op, low, 1024, switch_above=None) is low
    assert select.within_scratch(op, low, low.scratch_bytes - select.SWITCH_EXCESS) is low


def test_a_budget_the_banded_plan_misses_starts_its_search_from_whole_rows():
    """Under a RAM budget the banded plan fits, it is built as is (no patched stage); under one it misses, the
    budget's search (patch-based stages, edgec/plan/ram_budget.py) starts from the whole-row kernels, whose row
    bands re-widen no columns."""
    fits, _ = schedule_and_plan(chain(), dsp=True, ram_budget=11000)
    assert fits.ops[0].lowering.params["band_w"] == WINDOW_MIN_BAND
    staged, plan = schedule_and_plan(chain(), dsp=True, ram_budget=9000)
    assert plan.stages and staged.ops[0].lowering.params["band_w"] == 16
    assert "scratch_within_peak" not in plan.ram_choice


def one_channel(in_h: int, in_w: int, out_c: int, k_h: int, k_w: int, stride: int, out_h: int, out_w: int,
                pad_top: int, pad_left: int) -> Graph:
    """x (one channel) -> k_h x k_w convolution -> y: a single-channel first layer (blocked4_padded on a DSP core),
    the tensors peaking while it runs."""
    rng = np.random.default_rng(7)
    p = dict(in_h=in_h, in_w=in_w, in_c=1, out_h=out_h, out_w=out_w, out_c=out_c, k_h=k_h, k_w=k_w, stride_h=stride,
             stride_w=stride, dil_h=1, dil_w=1, pad_top=pad_top, pad_left=pad_left, input_zp=3, output_zp=-5,
             act_min=-128, act_max=127, depth_multiplier=1)
    op = Op("conv2d", "c", ("x",), "y", params=p,
            arrays=dict(weights=rng.integers(-100, 101, size=(out_c, k_h, k_w, 1)).astype(np.int8),
                        bias=rng.integers(-2000, 2000, out_c).astype(np.int32),
                        mult=np.full(out_c, 1_500_000_000, np.int32), shift=np.full(out_c, -9, np.int32)))
    tensors = {"x": Tensor("x", (1, in_h, in_w, 1), "x", 0.05, 0),
               "y": Tensor("y", (1, out_h, out_w, out_c), "y", 0.05, 0)}
    return Graph("g", tensors, (op,), "x", "y")


def _call(op) -> str:
    """The C statement the generated code has for a lowered op (its record's `call`)."""
    low = op.lowering
    return low.kernel.call(op, low, CallSite("op0", ["x"], "y", {}, scratch="s"))


def test_the_padded_single_channel_kernel_drops_its_band_where_it_would_raise_the_arena():
    """micro_speech's first layer (49x40 -> 25x20x8, 10x8 taps, stride 2): the padded band (10 rows of 46 columns)
    would lift the arena above the tensors' peak; 16 of its 20 output columns' windows lie inside the image, so it
    runs without the band (band_w 0: the two pixels' taps alone, 320 B, as blocked4's) on the same variant."""
    lowered, plan = schedule_and_plan(one_channel(49, 40, 8, 10, 8, 2, 25, 20, 4, 3), dsp=True)
    low = lowered.ops[0].lowering
    banded = low.kernel.scratch_bytes({**low.params, "band_w": low.params["out_w"]})
    assert low.variant == "blocked4_padded" and low.params["band_w"] == 0
    assert banded == 4 * 80 + 10 * 46 and low.scratch_bytes == 4 * 80
    assert plan.arena_bytes == max(scratch_fit.tensor_load(lowered)) + low.scratch_bytes
    # its call names the loop without the band, so a firmware links that loop alone (2.5 kB less flash)
    assert re.match(r"edgec_conv2d_blocked4_unbanded_\w+_s8\(&op0_params, x, op0_fw, op0_rq, ", _call(lowered.ops[0]))


def test_the_padded_band_stays_where_most_windows_reach_the_padding():
    """SiLabs' magic wand's first layer (128x3 -> 128x3x8, 4x3 taps): no window's 4 columns lie inside the 3-column
    image, so its band stays though it lifts the arena (the band is what makes those windows fast); `padded_unbanded`
    declines it, and takes micro_speech's at any room below the band."""
    lowered, _ = schedule_and_plan(one_channel(128, 3, 8, 4, 3, 1, 128, 3, 1, 1), dsp=True)
    low = lowered.ops[0].lowering
    assert low.variant == "blocked4_padded" and low.params["band_w"] == 3
    assert low.kernel.narrow(low.params, 0) is None
    assert re.match(r"edgec_conv2d_blocked4_banded_\w+_s8\(", _call(lowered.ops[0]))
    speech = select.select(one_channel(49, 40, 8, 10, 8, 2, 25, 20, 4, 3).ops[0], select.Options(dsp=True))
    assert speech.kernel.narrow(speech.params, speech.scratch_bytes) is None
    assert speech.kernel.narrow(speech.params, speech.scratch_bytes - 1)["band_w"] == 0
