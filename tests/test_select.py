"""The kernel selector (edgec/ops/select.py), the one place that decides which kernel runs an op: precision (int16
output > packed int4 weights > int8), the reference kernel where nothing faster takes the op, the default fast
kernel, then `--optimize speed` (a speed variant: the tuning log's choice where it names one offered for the op,
else the first that applies) or `size` (none), and the Helium kernel on a Helium target only. Also the typed,
read-only lowering it returns and the lower stage that applies it to a graph (a new graph)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edgec.fixedpoint.scheme import pack_int4
from edgec.ir import Graph, Op, Tensor
from edgec.lower import lowering
from edgec.ops import select
from edgec.ops.kernel import FAST, GENERIC, HELIUM, INT4, INT8, INT16, REFERENCE, VARIANT
from edgec.ops.registry import KERNELS, VARIANTS
from edgec.quant import reference

INT8_TENSORS = ("int8", "int8")
SPEED, SIZE, HELIUM_SPEED = select.Options(), select.Options(optimize="size"), select.Options(helium=True)


def conv_op(k: int = 3, in_c: int = 8, out_c: int = 6, dilation: int = 1, four: bool = False) -> Op:
    """A quantized conv2d on a 7x7 image (stride 1, no padding), int8 or int4 weights, in the fast path's range."""
    rng = np.random.default_rng(k * 100 + in_c * 10 + dilation)
    out = 7 - (k - 1) * dilation
    p = dict(in_h=7, in_w=7, in_c=in_c, out_h=out, out_w=out, out_c=out_c, k_h=k, k_w=k, stride_h=1, stride_w=1,
             dil_h=dilation, dil_w=dilation, pad_top=0, pad_left=0, input_zp=3, output_zp=-5, act_min=-128,
             act_max=127, depth_multiplier=1)
    w = rng.integers(-7 if four else -100, 8 if four else 101, size=(out_c, k, k, in_c)).astype(np.int8)
    arrays = dict(bias=rng.integers(-2000, 2000, out_c).astype(np.int32),
                  mult=np.full(out_c, 1_500_000_000, np.int32), shift=np.full(out_c, -9, np.int32))
    arrays.update(weights4=pack_int4(w)) if four else arrays.update(weights=w)
    return Op("conv2d", "conv", ("x",), "y", params=p, arrays=arrays)


def test_precedence_int16_over_int4_over_int8():
    """An int16 output takes the 16x8 kernel even where the weights are int4; int4 weights the _s4 kernels; else
    int8. The reference run (the twin) and the lowering agree on it."""
    four, eight = conv_op(four=True), conv_op()
    assert select.precision(four, "int16") == INT16 and select.precision(four) == INT4
    assert select.precision(eight) == INT8 and select.precision(eight, "int16") == INT16
    wide = conv_op(four=True)       # the int16 quantizer's int64 bias: the 16x8 kernel; an int32 bias (a .tflite's
    wide.arrays["bias"] = wide.arrays["bias"].astype(np.int64)      # 16x8 conv may have one) its _b32 twin
    assert select.reference(wide, "int16").name == "edgec_conv2d_s16"
    assert select.reference(four, "int16").name == "edgec_conv2d_s16_b32"
    assert select.reference(four).name == "edgec_conv2d_s4" and select.reference(eight).name == "edgec_conv2d_s8"
    sixteen = select.select(wide, SPEED, ("int16", "int16"))       # no fast kernel takes an int16 layer
    assert sixteen.kernel.name == "edgec_conv2d_s16" and sixteen.kernel.role == REFERENCE
    assert select.select(four, SPEED, INT8_TENSORS).kernel.name == "edgec_conv2d_im2col_s4"
    assert select.select(four, select.REFERENCE_ONLY, INT8_TENSORS).kernel.name == "edgec_conv2d_s4"
    assert select.twin(four) is select.reference(four).run
    x = np.random.default_rng(0).integers(-128, 128, (7, 7, 8)).astype(np.int8)
    unpacked = conv_op()       # the same values as int8 weights: the int4 twin is the int8 twin on them
    unpacked.arrays["weights"] = np.clip(unpacked.arrays["weights"], -7, 7)
    four.arrays["weights4"] = pack_int4(unpacked.arrays["weights"])
    assert np.array_equal(reference.run_op(four, [x], (1, 5, 5, 6)), reference.run_op(unpacked, [x], (1, 5, 5, 6)))


def test_speed_runs_the_first_variant_that_applies_and_size_the_generic_kernel():
    for op, names in ((conv_op(3, 8), ("generic", "window", "blocked")),
                      (conv_op(1, 8), ("generic", "blocked4", "pointwise", "blocked"))):
        speed, size = select.select(op, SPEED, INT8_TENSORS), select.select(op, SIZE, INT8_TENSORS)
        assert speed.variants == size.variants == names
        assert speed.variant == names[1] and speed.kernel.role == VARIANT and speed.extra_bytes > 0
        assert size.variant == GENERIC and size.kernel.name == "edgec_conv2d_im2col_s8" and size.extra_bytes == 0
        assert speed.signature == size.signature and speed.signature.startswith("conv2d-")
        assert speed.kernel.base is size.kernel and speed.struct == size.struct


def test_tuning_choice_is_honoured_only_when_it_names_an_offered_variant():
    op = conv_op(3, 8)
    seen = []

    def choosing(name):
        def choose(o, generic):
            seen.append(generic)
            return name
        return select.Options(choose=choose)
    assert select.select(op, choosing("blocked"), INT8_TENSORS).kernel.name == "edgec_conv2d_blocked_s8"
    assert select.select(op, choosing(GENERIC), INT8_TENSORS).kernel.name == "edgec_conv2d_im2col_s8"
    for name in ("pointwise", "blocked4", "no-such-variant", None):     # not offered for a 3x3 convolution
        assert select.select(op, choosing(name), INT8_TENSORS).variant == "window"
    size = select.Options(optimize="size", choose=lambda o, generic: "blocked")
    assert select.select(op, size, INT8_TENSORS).variant == GENERIC
    # the chooser sees the generic lowering with the variants offered and the layer's signature (the log's key)
    assert all(g.kernel.name == "edgec_conv2d_im2col_s8" and g.variants == ("generic", "window", "blocked")
               and g.signature == seen[0].signature for g in seen)


def test_helium_kernels_only_on_helium_targets():
    op = conv_op(3, 8)
    helium = select.select(op, HELIUM_SPEED, INT8_TENSORS)
    assert helium.kernel.name == "edgec_conv2d_mve_s8" and helium.kernel.role == HELIUM
    assert helium.variant is None and helium.variants == ()            # no speed variant beside it
    assert all(select.select(op, o, INT8_TENSORS).kernel.role != HELIUM for o in (SPEED, SIZE))
    # where the fast kernel has no Helium one (int4 weights), a Helium target keeps it and its variants' choice
    four = select.select(conv_op(four=True), HELIUM_SPEED, INT8_TENSORS)
    assert four.kernel.name == "edgec_conv2d_im2col_s4" and four.variants == (GENERIC,)
    assert all(k.isa == "helium" for k in KERNELS if k.role == HELIUM)


def test_reference_kernel_where_the_fast_lowering_declines():
    """A dilated convolution: the im2col kernel declines it, so it runs on the reference kernel with its own
    params and arrays (read-only), no variant, no signature."""
    op = conv_op(3, 4, dilation=2)
    assert select.fast(op) is None
    low = select.select(op, SPEED, INT8_TENSORS)
    assert low.kernel.name == "edgec_conv2d_s8" and low.kernel.role == REFERENCE and low.struct == "edgec_conv_params"
    assert dict(low.params) == op.params and low.arrays.keys() == op.arrays.keys() and low.scratch_bytes == 0
    assert low.variant is None and low.signature is None
    assert select.select(conv_op(), SPEED, ("int8", "int16")).kernel.role == REFERENCE    # not all int8: no fast


def test_lowering_is_read_only_and_leaves_the_op_writable():
    op = conv_op()
    for low in (select.select(op, SPEED, INT8_TENSORS), select.select(op, select.REFERENCE_ONLY, INT8_TENSORS)):
        with pytest.raises(TypeError):
            low.params["k_h"] = 5
        with pytest.raises(ValueError):
            next(iter(low.arrays.values()))[0] = 1
        with pytest.raises(AttributeError):
            low.scratch_bytes = 0
    op.arrays["weights"][0] = 1                  # the op's own arrays stay writable


def test_lower_stage_returns_a_new_graph_with_every_op_lowered():
    tensors = {n: Tensor(n, (1, 7, 7, 8) if n == "x" else (1, 5, 5, 6), n, 0.1, 0) for n in ("x", "y", "r")}
    op = conv_op()
    view = Op("reshape", "view", ("y",), "r")
    graph = Graph("g", tensors, (op, view), "x", "r")
    lowered = lowering.lower_graph(graph)
    assert lowered is not graph and graph.ops == (op, view) and op.lowering is None and view.lowering is None
    assert lowered.ops[0].lowering.variant == "window" and lowered.ops[1].lowering is None     # a view: no code
    assert lowered.ops[0].params is op.params and lowered.tensors is graph.tensors
    assert select.lowering_of(graph, op).kernel.name == "edgec_conv2d_s8"       # not lowered: the reference kernel
    assert lowering.summary(lowered.ops)["variants"] == {"window": 1}


def test_every_variant_and_helium_kernel_repacks_a_default_fast_kernel():
    """The selector finds a variant through its base: every base is a default fast kernel of the same kinds and
    precision, and a variant's name is unique beside its base's other variants."""
    for k in KERNELS:
        if k.role in (VARIANT, HELIUM):
            assert k.base.role == FAST and k.base.precision == k.precision and set(k.kinds) <= set(k.base.kinds)
    for base, variants in VARIANTS.items():
        names = [v.variant for v in variants]
        assert len(set(names)) == len(names) and GENERIC not in names


def fc_op(n_in: int, n_out: int) -> Op:
    """A quantized fully connected layer in the fast path's range."""
    rng = np.random.default_rng(n_in * 1000 + n_out)
    p = dict(in_features=n_in, out_features=n_out, input_zp=3, output_zp=-5, act_min=-128, act_max=127)
    arrays = dict(weights=rng.integers(-100, 101, (n_out, n_in)).astype(np.int8),
                  bias=rng.integers(-2000, 2000, n_out).astype(np.int32),
                  mult=np.full(n_out, 1_500_000_000, np.int32), shift=np.full(n_out, -9, np.int32))
    return Op("fully_connected", "fc", ("x",), "y", params=p, arrays=arrays)


@pytest.mark.parametrize("shape, dsp, want", [
    ((4000, 4), True, GENERIC),      # TFLite Micro's micro_speech: rows8 would run 8 rows (estimates 28,225 vs 28,156)
    ((256, 2), True, GENERIC),       # VWW's classifier (2,429 vs 1,804)
    ((128, 128), True, "rows8"),     # AD's hidden layers (12,360 vs 22,960 and wide's 19,160)
    ((8, 128), True, "rows8"),       # AD's 8 -> 128 (2,000 vs wide's 3,360 since rows8's assembly passes)
    ((4000, 4), False, GENERIC),     # the portable paths (63,469 vs 86,595)
    ((128, 128), False, "rows8"),
])
def test_speed_picks_the_fully_connected_kernel_the_cost_model_finds_cheapest(shape, dsp, want):
    """Fully connected kernels carry a cost estimate (edgec/ops/dense_cost.py FC_COSTS, fitted to emulated counts; in the
    comments the counts measured on qemu-cortex-m4, or qemu-cortex-m3-large without dsp): the selector runs the
    cheapest, the generic kernel included, where no tuning choice names one; a tuning choice still wins; size
    keeps the generic kernel."""
    op = fc_op(*shape)
    low = select.select(op, select.Options(dsp=dsp), INT8_TENSORS)
    pairs = ("pairs",) if dsp and shape[0] <= 1024 else ()     # the DSP path, an input widened in one pass
    assert low.variant == want and low.variants == (GENERIC, "rows8", "wide", *pairs)
    generic = select.fast(op)
    assert select.cheapest(generic, dsp) == want
    assert select.select(op, select.Options(dsp=dsp, choose=lambda o, g: "wide"), INT8_TENSORS).variant == "wide"
    assert select.select(op, select.Options(dsp=dsp, optimize="size"), INT8_TENSORS).variant == GENERIC


def test_without_cost_estimates_the_first_variant_offered_runs():
    """Where a kernel has no estimate for the shape (a 3x3 convolution: the window kernels have no cost function,
    the others none but for 1x1 layers) the declared order decides: cheapest has no answer (window4 first on a
    core with the DSP extension, window elsewhere)."""
    generic = select.fast(conv_op(3, 8))
    assert generic.kernel.cost(generic.params, True) is None and select.cheapest(generic, True) is None
    assert select.select(conv_op(3, 8), select.Options(dsp=True), INT8_TENSORS).variant == "window4"
    assert select.select(conv_op(3, 8), select.Options(dsp=False), INT8_TENSORS).variant == "window"


def pointwise_op(side: int, in_c: int, out_c: int) -> Op:
    """A quantized 1x1, stride-1 convolution on a side x side image."""
    rng = np.random.default_rng(side * 10000 + in_c * 100 + out_c)
    p = dict(in_h=side, in_w=side, in_c=in_c, out_h=side, out_w=side, out_c=out_c, k_h=1, k_w=1, stride_h=1,
             stride_w=1, dil_h=1, dil_w=1, pad_top=0, pad_left=0, input_zp=3, output_zp=-5, act_min=-128,
             act_max=127, depth_multiplier=1)
    arrays = dict(weights=rng.integers(-100, 101, (out_c, 1, 1, in_c)).astype(np.int8),
                  bias=rng.integers(-2000, 2000, out_c).astype(np.int32),
                  mult=np.full(out_c, 1_500_000_000, np.int32), shift=np.full(out_c, -9, np.int32))
    return Op("conv2d", "pw", ("x",), "y", params=p, arrays=arrays)


@pytest.mark.parametrize("shape, dsp, want", [
    ((48, 8, 16), True, "blocked4"),      # VWW's first 1x1 layer (blocked4 613,120 since its block of assembly at 8
                                          # words, pointwise 764,040 on qemu-cortex-m4)
    ((24, 40, 4), True, "pointwise"),     # few output channels: blocked4's per-pixel work is spread over one block
    ((24, 16, 32), True, "blocked4"),     # VWW's second (blocked4 450,840 since its store's neg -1 path, pointwise 477,574)
    ((24, 32, 32), True, "blocked4"),     # VWW's third (709,452 vs 713,734)
    ((6, 128, 128), True, "blocked4"),    # VWW's late layers (485,082 vs 517,600)
    ((48, 8, 16), False, "blocked4"),     # no estimate without the DSP extension: the declared order
    ((12, 10, 16), True, "blocked4"),     # nor for input channels that are not a multiple of 4
])
def test_speed_picks_the_pointwise_kernel_the_cost_model_finds_cheapest(shape, dsp, want):
    """1x1 convolutions carry a cost estimate on DSP cores (edgec/ops/conv/im2col.py POINTWISE_COSTS; in the comments
    the counts measured on qemu-cortex-m4): few output channels run on the pointwise kernel, more on blocked4."""
    low = select.select(pointwise_op(*shape), select.Options(dsp=dsp), INT8_TENSORS)
    assert low.variants == (GENERIC, "blocked4", "pointwise", "blocked") and low.variant == want


# ---- the flash-aware cost (select.memory_chooser, lowering.flash_byte_cycles): a part whose weights stream from
# flash with wait states (the NUCLEO-L4R5ZI's 5 wait states a 64-bit line: 0.625 cycles a byte)
L4R5ZI_BYTE = 5 / 8


def test_flash_reads_move_a_wide_fully_connected_layer_onto_its_int8_weights():
    """AD's 640 -> 128 layer: rows8 runs fewer instructions but reads int16 weights, twice the packed kernel's
    int8 bytes; with the flash weighed the generic (packed) kernel is cheaper (alone on qemu-cortex-m4 with the
    L4R5ZI timing: 195,477 against rows8's 224,912 cycles), and the pairs kernel (int8 weights too, fewer
    instructions: edgec/ops/dense_pairs.py; its weight stream holds a bias a row too) cheaper still; at zero wait
    states the choice is unchanged."""
    generic = select.fast(fc_op(640, 128))
    kernels = {k.variant or GENERIC: k for k in (generic.kernel, *select.offered(generic, True))}
    assert kernels["rows8"].flash_bytes(generic.params) == 2 * kernels[GENERIC].flash_bytes(generic.params)
    assert select.cheapest(generic, True) == "rows8"
    assert select.cheapest(generic, True, 0.0) == "rows8"
    assert kernels["pairs"].flash_bytes(generic.params) == kernels[GENERIC].flash_bytes(generic.params) + 4 * 128
    assert select.cheapest(generic, True, L4R5ZI_BYTE) == "pairs"


def test_flash_reads_keep_a_pointwise_layer_on_blocked4():
    """A 1x1 layer of many channels: the generic kernel reads a quarter of the variants' flash bytes (int8 for 4
    pixels a pass, against int16 for 2), but blocked4 stays cheaper with the flash weighed (alone on qemu-cortex-m4
    with the L4R5ZI timing, 6x6x128 -> 128: 1,202,082 cycles against the generic kernel's 1,323,571)."""
    generic = select.fast(pointwise_op(6, 128, 128))
    kernels = {k.variant or GENERIC: k for k in (generic.kernel, *select.offered(generic, True))}
    reads = {name: k.flash_bytes(generic.params) for name, k in kernels.items()}
    assert reads["blocked4"] == reads["pointwise"] == reads["blocked"] == 4 * reads[GENERIC]
    assert select.cheapest(generic, True, L4R5ZI_BYTE) == "blocked4" == select.cheapest(generic, True)


def test_memory_chooser_takes_the_tuning_record_first_then_the_flash_aware_cost():
    op = fc_op(640, 128)
    log = {"fc": "wide"}
    chooser = select.memory_chooser(L4R5ZI_BYTE, True, lambda o, g: log.get(o.name))
    assert select.select(op, select.Options(dsp=True, choose=chooser), INT8_TENSORS).variant == "wide"
    log.clear()
    assert select.select(op, select.Options(dsp=True, choose=chooser), INT8_TENSORS).variant == "pairs"
    assert select.select(op, select.Options(dsp=True), INT8_TENSORS).variant == "rows8"
    no_estimate = select.memory_chooser(L4R5ZI_BYTE, True)
    assert no_estimate(conv_op(3, 8), select.fast(conv_op(3, 8))) is None     # the declared order decides


def test_flash_byte_cycles_come_from_the_real_part_profiles_of_the_cortex_m4():
    """The L4R5ZI's miss cycles over its 8-byte line, the F446RE's over 16 bytes; nothing on the emulated boards
    (zero-wait-state memory: their builds choose as before) nor on the M7 part (the cost fits are the M4's)."""
    from edgec.targets.boards import load_board
    assert lowering.flash_byte_cycles(load_board("nucleo-l4r5zi")) == L4R5ZI_BYTE
    assert lowering.flash_byte_cycles(load_board("nucleo-f446re")) == 5 / 16
    for name in ("qemu-cortex-m4", "qemu-cortex-m7", "nucleo-h743zi2", "qemu-cortex-m3"):
        assert lowering.flash_byte_cycles(load_board(name)) == 0.0
    assert lowering.flash_byte_cycles(None) == 0.0


def test_variant_code_is_counted_once_where_two_variants_share_it():
    """The fit check's code estimate: blocked4_padded links blocked4's assembly, counted once where a build runs both
    (MLPerf Tiny KWS: its first layer on the one, its 1x1 layers on the other), whole where it runs alone."""
    first, pointwise = (dataclasses.replace(op, lowering=select.select(op, SPEED))
                        for op in (conv_op(3, 1), conv_op(1, 8)))
    padded, b4 = first.lowering.kernel, pointwise.lowering.kernel
    assert (first.lowering.variant, pointwise.lowering.variant) == ("blocked4_padded", "blocked4")
    shared = padded.shares_code[1]
    assert padded.shares_code[0] is b4 and 0 < shared < padded.code_bytes
    assert lowering.variant_code_bytes([first]) == padded.code_bytes
    assert lowering.variant_code_bytes([first, pointwise]) == padded.code_bytes + b4.code_bytes - shared
