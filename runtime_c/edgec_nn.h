/* edgec neural-network kernels: the public header of the C runtime (C99, no allocation, no I/O).
 *
 * What an application or a kernel user calls, one section per family: the parameter structs, every kernel's
 * prototype, the size of the scratch buffer of every kernel that takes one (edgec_<kernel>_get_buffer_size) and
 * the constants a caller needs. The kernel files share the internals of edgec_nn_support.h (inline
 * requantization helpers, int4 nibble access, the recurrence's function table); the generated model code
 * includes this header alone. Each family's reference kernels live in the file named after it (edgec_conv.c,
 * edgec_fully_connected.c, ...), int8 and int16 variants together; the fast kernels in fast/, each file named
 * after the kernel(s) it holds (fast/edgec_conv2d_im2col.c holds edgec_conv2d_im2col_s8 and _s4, ...).
 *
 * Every kernel takes its arguments in one order: the params struct, the input(s), the constant arrays (weights,
 * requantization, tables), the scratch buffer, the output.
 *
 * Numerics follow the TFLite / TFLM reference kernels and are bit-exact with the NumPy twins
 * (the twins in the family modules of edgec/ops/; the fast kernels with the same functions via
 * their kernel records, edgec/ops/). Activations are contiguous and without a batch dimension, NHWC for images; int8
 * unless the kernel's name ends in _s16 (16x8: int16 activations with zero point 0, int8 weights, int64
 * bias). Parameter structs are passed by const pointer so generated code can keep them `static const` (in
 * flash); their fields are all int32_t, and edgec/cheader.py reads their layout from this file.
 *
 * The fast kernels (fast/, chosen per op at build time by edgec/ops/select.py) move work to build time: the
 * input zero point is folded into the bias (padded taps read the zero point itself), weights are
 * padded/reordered for the inner loops, and requantization uses one record per output channel (edgec_rq)
 * that turns TFLite's two rounding steps into one 64-bit multiply-add and a shift. Two inner-loop paths,
 * chosen when compiling:
 *   - Arm DSP extension (__ARM_FEATURE_DSP: Cortex-M4/M7/M33/M55): SXTB16 + SMLAD dot products;
 *   - portable C (Cortex-M0/M3, RISC-V, host), blocked the same way.
 * Define EDGEC_EMULATE_DSP to run the DSP path on any compiler with C emulations of the intrinsics
 * (tests), EDGEC_NO_DSP to force the portable path on a DSP core.
 * Their layouts (all built by their kernel records' packing in edgec/ops/; words are little-endian):
 *   conv   weights [out_c][k4] int8, k4 = k_h*k_w*in_c rounded up to 4, zero padded
 *   fc     weights in blocks of 4 rows: [block][k4/4][row 0..3][4 int8], remaining rows [row][k4]
 *   dw3x3  weights [c][3][3] int16, in the kernel's sweep orientation (see edgec_depthwise_conv2d_3x3_params)
 * Scratch buffers (planned into the arena by edgec/plan/planner.py) are 4-byte aligned; their sizes in bytes are
 * the kernels' edgec_<kernel>_get_buffer_size(&params), which edgec/cheader.py buffer_size reads for the
 * planner (each is one `return <expression>;` of the params' fields and this header's #define constants). */
#ifndef EDGEC_NN_H
#define EDGEC_NN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime's ABI version: bumped whenever a params struct, a kernel's prototype, its numerics or its packed
 * weight layout change (6: the pairs fully connected kernel's biases moved into its weight stream; 7: the fast
 * SVDF's params name their path).
 * Every generated model checks it when compiled (#error naming both versions) and in its init: two models
 * exported by different edgec versions cannot share one copy of the runtime by accident. */
#define EDGEC_RUNTIME_ABI_VERSION 7
/* ... and the version the runtime's objects were compiled with (edgec_runtime.c), for the check at init. */
extern const int32_t edgec_runtime_abi_version;

/* Copy `bytes` of a layer's constants from flash into its scratch before its call (edgec_runtime.c; the generated
 * code of a part whose flash has wait states, for the layers whose kernels re-read their weights:
 * edgec/lower/weight_staging.py): 16 bytes a step by LDM/STM where both are word-aligned, else memcpy. */
void edgec_stage_copy(void *dst, const void *src, uint32_t bytes);

#define EDGEC_RANK 6        /* the rank of the broadcasting and index-map kernels (binary, remap) */
#define EDGEC_CONV_CHUNK 16 /* output channels the fast im2col convolution accumulates before requantizing */
/* the larger of two sizes (the buffer-size functions' one helper: edgec/cheader.py buffer_size reads them) */
#define EDGEC_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Requantization of one output channel by the fast kernels: with acc the int32 accumulator (bias included),
 *   out = (((2*acc*mult + khi * 2^32 + 2^31) >> 32) + (acc < 0 ? neg : 0)) >> shift
 * (one SMMLAR, an AND/ADD and a shift on Arm), equal to TFLite's MultiplyByQuantizedMultiplier plus
 * the output zero point for the multipliers edgec/ops/fast.py accepts; neg is -1 if shift > 0, else 0. */
typedef struct {
    int32_t bias, mult, khi, neg, shift;
} edgec_rq;

/* ================================================================ convolution
 * edgec_conv.c. Output (oy, ox) reads input row oy*stride_h - pad_top + ky*dil_h (same for x); padded taps
 * contribute nothing; bias/mult/shift per output channel. depth_multiplier is used only by the depthwise kernels
 * (out_c = in_c * depth_multiplier). The 16x8 kernels take the same struct; their zero points must be 0 and
 * act_min/act_max are int16 bounds. int4 weights (_s4, the families' int4 kernel records): the int8 layouts, values in [-8, 7]
 * packed two per byte (value 2k in the low nibble of byte k). */
typedef struct {
    int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w,
        pad_top, pad_left, input_zp, output_zp, act_min, act_max, depth_multiplier;
} edgec_conv_params;

/* Convolution, weights OHWI [out_c][k_h][k_w][in_c]. */
void edgec_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output);
void edgec_conv2d_s4(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output);
void edgec_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                      const int64_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output);
/* 16x8 with an int32 bias (TFLite's ConvPerChannel<int32_t>): an int32 sum (wrapping), the 32-bit requantization. */
void edgec_conv2d_s16_b32(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                          const int32_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output);
/* Depthwise convolution, weights [k_h][k_w][out_c]; output channel oc reads input channel oc / depth_multiplier. */
void edgec_depthwise_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                               int8_t *output);
void edgec_depthwise_conv2d_s4(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                               int8_t *output);
void edgec_depthwise_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                                const int64_t *bias, const int32_t *mult, const int32_t *shift,
                                int16_t *output);

/* Grouped convolution: edgec_conv_params' fields (no depth multiplier) and the number of groups. */
typedef struct {
    int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w,
        pad_top, pad_left, input_zp, output_zp, act_min, act_max, groups;
} edgec_group_conv2d_params;

/* weights [out_c][k_h][k_w][in_c / groups]; output channel oc reads the input channels of group
 * oc / (out_c / groups). */
void edgec_group_conv2d_s8(const edgec_group_conv2d_params *p, const int8_t *input, const int8_t *weights,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output);

/* ================================================================ fast convolution
 * fast/edgec_conv2d_*.c, chosen by edgec/ops/select.py (any kernel size, stride, padding; dilation 1). The
 * input zero point is folded into rq's bias (edgec_rq, one record per output channel); padded taps read the zero
 * point itself. weights: [out_c][k4] int8 as words, k4 = k_h*k_w*in_c rounded up to 4, zero padded (the
 * speed variants repack them, edgec/ops/conv/im2col.py). */
typedef struct {
    int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, pad_top, pad_left,
        input_zp, output_zp, act_min, act_max, k4;
    int32_t band_w; /* the window kernels: output columns a column band (out_w: whole rows; clamped to 1..out_w);
                     * blocked4_padded: 0 without its band */
} edgec_conv2d_im2col_params;

/* A matrix product over an int16 im2col of 4 output pixels at a time (fast/edgec_conv2d_im2col.c). */
void edgec_conv2d_im2col_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* the im2col columns (8 * k4), one pixel's taps (k4), the accumulators of EDGEC_CONV_CHUNK channels x 4 pixels */
static inline int32_t edgec_conv2d_im2col_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 9 * p->k4 + 16 * EDGEC_CONV_CHUNK;
}
/* The same with int4 weights: each channel's k4 taps as (k4 + 4) / 8 words of 8 nibbles (edgec/ops/conv/im2col.py
 * lower_conv). */
void edgec_conv2d_im2col_s4(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_conv2d_im2col_s4_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return edgec_conv2d_im2col_s8_get_buffer_size(p);
}

/* `--optimize speed`: 2 output pixels x 2 output channels in registers, the weights widened to int16 at build
 * time (fast/edgec_conv2d_blocked.c). */
void edgec_conv2d_blocked_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                             const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* two pixels' int16 taps (k4 rounded up to 8, times 4 bytes) and one pixel's int8 taps (k4) */
static inline int32_t edgec_conv2d_blocked_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 4 * ((p->k4 + 7) / 8 * 8) + p->k4;
}
/* `--optimize speed`: 2 output pixels x 4 output channels in registers, doubled int16 weights
 * (fast/edgec_conv2d_blocked4.c). */
void edgec_conv2d_blocked4_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                              const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_conv2d_blocked4_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 4 * ((p->k4 + 7) / 8 * 8) + p->k4;
}
/* `--optimize speed`, single-channel inputs: blocked4 reading every window in place from a band of the input padded with
 * its zero point (k_w rounded up to 4 taps a kernel row, zero weights; k4 = k_h * that; fast/edgec_conv2d_blocked4.c). */
void edgec_conv2d_blocked4_padded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                     const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* its two loops, for a caller that knows band_w (the generated code): with the band (band_w > 0) and without it
 * (band_w 0); scratch as edgec_conv2d_blocked4_padded_s8_get_buffer_size gives it for those params */
void edgec_conv2d_blocked4_banded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                     const edgec_rq *rq, int8_t *scratch, int8_t *output);
void edgec_conv2d_blocked4_unbanded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input,
                                       const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* the entries the generated code calls (edgec/ops/conv/im2col.py blocked4_entry): one per mode (plain, its direct
 * single-channel reads (in_c 1, k_w a multiple of 4), the padded variant with its band, without) and loop (a
 * full-range layer's by k8 = k4 rounded up to 8: 8, 16, up to 64, exactly 64 (every record's neg -1), any; `_anyneg`: some
 * record's neg 0; `clamped`: an output range narrower than int8's), each computing what the entry above that
 * chooses them at run time does for params and records of its kind, and linking only its own loop */
#define EDGEC_CONV2D_BLOCKED4_ARGS                                                                                     \
    const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq,           \
        int8_t *scratch, int8_t *output
void edgec_conv2d_blocked4_k8_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_k8_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_k16_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_k16_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_k64_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_k64_exact_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_kx_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_kx_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_clamped_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_k8_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_k8_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_k16_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_k16_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_k64_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_k64_exact_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_kx_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_kx_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_direct_clamped_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_k8_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_k8_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_k16_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_k16_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_k64_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_k64_exact_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_kx_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_kx_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_banded_clamped_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_k8_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_k8_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_k16_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_k16_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_k64_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_k64_exact_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_kx_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_kx_anyneg_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
void edgec_conv2d_blocked4_unbanded_clamped_s8(EDGEC_CONV2D_BLOCKED4_ARGS);
/* two pixels' int16 taps and k_h rows of the padded input (k_h + stride_h where out_w is odd: a pair of pixels then
 * spans two output rows), each (out_w - 1) * stride_w + k_w4 bytes; band_w 0 (the plan's narrowing): no band, the
 * taps alone (windows inside the image read in place, the others built in the taps) */
static inline int32_t edgec_conv2d_blocked4_padded_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 4 * ((p->k4 + 7) / 8 * 8) + (p->band_w + p->out_w - 1) / p->out_w *
           (p->k_h + p->out_w % 2 * p->stride_h) * ((p->out_w - 1) * p->stride_w + (p->k_w + 3) / 4 * 4);
}
/* `--optimize speed`, 1x1 convolutions: the blocked convolution with no loop over the taps (an unrolled body of
 * 64 taps entered part-way), weights and bias doubled at build time (fast/edgec_conv2d_pointwise.c). */
void edgec_conv2d_pointwise_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                               const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_conv2d_pointwise_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 5 * p->k4;
}
/* `--optimize speed`, kernels larger than 1x1: the 2x2 blocking without im2col, over a ring of input rows
 * widened to int16 once each, in pixel pairs, channels padded to c4, a multiple of 4 (fast/edgec_conv2d_window.c). */
void edgec_conv2d_window_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* a ring of k_h widened rows of (b - 1) * stride_w + k_w entries (b = band_w clamped to 1..out_w: a column band's
 * input) and the k_h * k_w gathered taps, each c4 pairs of int16 (c4: in_c rounded up to 4) */
static inline int32_t edgec_conv2d_window_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 4 *
           (p->k_h * ((p->out_w + EDGEC_MAX(p->band_w, 1) - EDGEC_MAX(p->out_w, EDGEC_MAX(p->band_w, 1)) - 1) *
                          p->stride_w +
                      p->k_w) +
            p->k_h * p->k_w) *
           ((p->in_c + 3) / 4 * 4);
}
/* `--optimize speed`, kernels larger than 1x1 on cores with the DSP extension: the window kernel with 2 output
 * pixels x 4 output channels in registers, doubled int16 weights and biases (fast/edgec_conv_block2x4.h); the
 * window kernel's scratch. */
void edgec_conv2d_window4_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                             const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_conv2d_window4_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return edgec_conv2d_window_s8_get_buffer_size(p);
}
/* the entries the generated code calls (edgec/ops/conv/im2col.py window4_entry), each linking only its loop (n: the
 * words of a pixel's taps, k_w * k_h * in_c rounded up to 4): `clamped` (an output range narrower than int8's),
 * `full` (n not below), by n % 16 `k16` / `k16t4` / `k16t8` (n > 16), `_all` where every record's neg is -1, and
 * the row assembly `row48` (n a multiple of 48) / `row36` (n 36) where also out_c is a multiple of 4; each computes
 * what edgec_conv2d_window4_s8 does for params and records of its kind */
#define EDGEC_CONV2D_WINDOW4_ARGS                                                                                      \
    const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq,           \
        int8_t *scratch, int8_t *output
void edgec_conv2d_window4_clamped_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_full_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_k16_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_k16_all_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_k16t4_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_k16t4_all_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_k16t8_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_k16t8_all_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_row48_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_window4_row36_s8(EDGEC_CONV2D_WINDOW4_ARGS);
/* `--optimize speed`, a 3x3 convolution of 3 input channels (an image model's first layer) on cores with the DSP
 * extension: window4's 2x4 block over each pixel's 27 taps read straight from the input (28 a pixel, 2x4 block weights
 * in edgec/ops/conv/rgb3x3.py's tap order; fast/edgec_conv2d_window.c). */
void edgec_conv2d_rgb3x3_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* a column band's pixel pairs' taps (28 words a pair; b = band_w clamped to 1..out_w columns, whole rows where
 * band_w is out_w) and a row of zero points (3 * in_w bytes) */
static inline int32_t edgec_conv2d_rgb3x3_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 112 * ((p->out_w + EDGEC_MAX(p->band_w, 1) - EDGEC_MAX(p->out_w, EDGEC_MAX(p->band_w, 1)) + 1) / 2) +
           3 * p->in_w;
}
/* its entries (edgec/ops/conv/rgb3x3.py rgb3x3_entry): `clamped` (a range narrower than int8's), `row28` (out_c a
 * multiple of 4, every record's neg -1), `full`, whole rows; `banded` on column bands */
void edgec_conv2d_rgb3x3_clamped_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_rgb3x3_full_s8(EDGEC_CONV2D_WINDOW4_ARGS);
void edgec_conv2d_rgb3x3_row28_s8(EDGEC_CONV2D_WINDOW4_ARGS);
/* column bands (band_w below out_w), whichever loop the params and records need */
void edgec_conv2d_rgb3x3_banded_s8(EDGEC_CONV2D_WINDOW4_ARGS);
/* Helium (MVE, Cortex-M55; fast/edgec_conv2d_mve.c, compiled for Helium cores only, chosen by
 * edgec/ops/conv/im2col.py): weights [2 * ceil(out_c / 4)][k4 / 16][2][16] int8 (pairs of channels, block by
 * block, zero channels up to a multiple of 4; k4 here: k_h*k_w*in_c rounded up to 16), 3 output pixels by 2
 * channels (VMLADAVA), kernel rows read in place where k_w*in_c is a multiple of 16, rq regrouped as
 * [out_c / 4][field][4] with the shift negated (edgec/ops/conv/im2col.py rq_vectors). */
void edgec_conv2d_mve_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                         const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* every channel's accumulators of 3 pixels (64 bytes per 4 channels), 3 pixels' taps (k4: taps rounded to 16) and
 * a padding row */
static inline int32_t edgec_conv2d_mve_s8_get_buffer_size(const edgec_conv2d_im2col_params *p)
{
    return 64 * ((p->out_c + 3) / 4) + 4 * p->k4;
}

/* ================================================================ fast 16x8 convolution
 * fast/edgec_conv2d_fast_s16.c, fast/edgec_depthwise_conv2d_fast_s16.c (edgec/ops/conv/s16.py): TFLite's 16x8
 * convolutions (int16 activations, zero point 0, int8 weights, int64 bias) with the sum in int32, taken only where
 * the layer proves it cannot overflow (|bias| + 32768 * sum|w| < 2^31 per output channel). rq: per output channel
 * {bias (int32), the Q31 multiplier reduced to Q15, 15 - shift}: TFLite's MultiplyByQuantizedMultiplier(int64). */
typedef struct {
    int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left,
        act_min, act_max, k4;
    int32_t in_place; /* edgec_conv2d_fast_s16: 1 where the pixels are read where they lie (a 1x1, stride-1,
                       * unpadded convolution of in_c a multiple of 4: no scratch), else 0 */
} edgec_conv_fast_s16_params;

/* Any window, stride, dilation and padding: two pixels' windows gathered into scratch (k4 = k_h*k_w*in_c rounded
 * up to 4, zero padded), two output channels a pass, SMLAD on SXTB16 pairs; weights [out_c rounded up to 2 / 2]
 * [k4 / 4][2 channels][4 taps] int8, each group of 4 as w0 w2 w1 w3. */
void edgec_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input, const uint32_t *weights,
                           const int32_t *rq, int16_t *scratch, int16_t *output);
/* the two windows interleaved (4 * k4 bytes; none in place) */
static inline int32_t edgec_conv2d_fast_s16_get_buffer_size(const edgec_conv_fast_s16_params *p)
{
    return 4 * p->k4 * (1 - p->in_place);
}
/* Depth multiplier 1, in_c even: two channels a pass (SMLABB, SMLATT), the taps off the image skipped; weights
 * [k_h][k_w][c] int16 as words. */
void edgec_depthwise_conv2d_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input,
                                     const uint32_t *weights, const int32_t *rq, int16_t *output);

/* ================================================================ fast depthwise 3x3
 * fast/edgec_depthwise_conv2d_3x3*.c: depth multiplier 1, c a multiple of 4, stride 1 or 2 on both axes, over a
 * rolling window of 3 input rows widened to int16. "Sweep" orientation: the kernel walks `rows` x `cols` where a
 * row is the longer of the image's two axes (for an image taller than wide, rows are the image's columns and the
 * weights are transposed at build time); steps are in bytes. The input zero point is folded into rq's bias. */
typedef struct {
    int32_t rows, cols, c, out_rows, out_cols, stride, pad_top, pad_left, in_row_step, in_col_step,
        out_row_step, out_col_step, input_zp, act_min, act_max;
    int32_t band; /* 0: the call's first and last output rows are the image's (a whole layer); a row band of a
                   * patch-based stage (edgec/plan/patching.py) adds EDGEC_DW3X3_NOT_TOP where its first output row
                   * is not the image's first, EDGEC_DW3X3_NOT_BOTTOM where its last may not take the image's last
                   * row's weight set (the fused kernel's edge sets; the other kernels ignore it) */
} edgec_depthwise_conv2d_3x3_params;
#define EDGEC_DW3X3_NOT_TOP 1
#define EDGEC_DW3X3_NOT_BOTTOM 2

/* 4 channels at a time, one SMLAD two taps of one channel; weights [c][3][3] int16, doubled, in the sweep
 * orientation (fast/edgec_depthwise_conv2d_3x3.c). */
void edgec_depthwise_conv2d_3x3_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* the window (32 bytes per strip column, (out_cols - 1) * stride + 3 columns) and one row's accumulators */
static inline int32_t edgec_depthwise_conv2d_3x3_s8_get_buffer_size(const edgec_depthwise_conv2d_3x3_params *p)
{
    return 32 * ((p->out_cols - 1) * p->stride + 3) + 4 * p->out_cols;
}
/* The same with int4 weights: the [c][3][3] weights two per byte (edgec/ops/conv/depthwise3x3.py lower_3x3_4). */
void edgec_depthwise_conv2d_3x3_s4(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* the weights widened to int16 (18 * c bytes) in front of the s8 kernel's scratch */
static inline int32_t edgec_depthwise_conv2d_3x3_s4_get_buffer_size(const edgec_depthwise_conv2d_3x3_params *p)
{
    return 18 * p->c + edgec_depthwise_conv2d_3x3_s8_get_buffer_size(p);
}
/* `--optimize speed`: the weights packed for each rotation of the window (per channel and rotation 6 words: the
 * SMLAD pairs, the third row's taps and the doubled bias; edgec/ops/conv/depthwise3x3.py), each output requantized
 * from its register as soon as it is summed (fast/edgec_depthwise_conv2d_3x3_fused.c). */
void edgec_depthwise_conv2d_3x3_fused_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                         const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* the window alone (no accumulator row) */
static inline int32_t edgec_depthwise_conv2d_3x3_fused_s8_get_buffer_size(const edgec_depthwise_conv2d_3x3_params *p)
{
    return 32 * ((p->out_cols - 1) * p->stride + 3);
}
/* the entries the generated code calls (edgec/ops/conv/depthwise3x3.py fused_entry), each linking only its rows:
 * `rows_s1` / `rows_s2` (the whole int8 range, every record's neg -1, that stride), `full_anyneg` (some neg 0),
 * `clamped` (a narrower range; `_anyneg`: some neg 0) */
#define EDGEC_DEPTHWISE_3X3_ARGS                                                                                       \
    const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq,    \
        int8_t *scratch, int8_t *output
void edgec_depthwise_conv2d_3x3_fused_rows_s1_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_rows_s2_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_full_anyneg_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_clamped_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_clamped_anyneg_s8(EDGEC_DEPTHWISE_3X3_ARGS);
/* the same for a row band of 2 rows or more of a patch-based stage (p->band): the image's edge weight sets only on
 * the image's own first and last rows (edgec_depthwise_conv2d_3x3_fused_s8, choosing at run time, does the same) */
void edgec_depthwise_conv2d_3x3_fused_band_rows_s1_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_band_rows_s2_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_band_full_anyneg_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_band_clamped_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_fused_band_clamped_anyneg_s8(EDGEC_DEPTHWISE_3X3_ARGS);
/* `--optimize speed` on small images (a MobileNet's last layers; cores with the Arm DSP extension): the whole padded
 * input of 4 channels widened once into records of 4 rows, each channel's weights in registers for all its outputs
 * (per channel 7 words: the doubled int16 pairs (w[0][kx], w[1][kx]), (w[1][kx], w[2][kx]) and the doubled bias;
 * edgec/ops/conv/depthwise3x3.py; fast/edgec_depthwise_conv2d_3x3_small.c). */
void edgec_depthwise_conv2d_3x3_small_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                         const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* 32 bytes a tile column of every record row ((out_rows * stride + 1) / 2 of them, and a spare either side) */
static inline int32_t edgec_depthwise_conv2d_3x3_small_s8_get_buffer_size(const edgec_depthwise_conv2d_3x3_params *p)
{
    return 32 * ((p->out_cols - 1) * p->stride + 3) * ((p->out_rows * p->stride + 1) / 2 + 2);
}
/* its entries (edgec/ops/conv/depthwise3x3.py small_entry), each linking only its code: the whole int8 range with
 * every record's neg -1 `pairs` (stride 1, two output rows or more), `rows_s2` (stride 2), `full` (stride 1, one
 * row); `full_anyneg` (some neg 0); `clamped` (a narrower range; `_anyneg`: some neg 0) */
void edgec_depthwise_conv2d_3x3_small_pairs_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_small_rows_s2_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_small_full_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_small_full_anyneg_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_small_clamped_s8(EDGEC_DEPTHWISE_3X3_ARGS);
void edgec_depthwise_conv2d_3x3_small_clamped_anyneg_s8(EDGEC_DEPTHWISE_3X3_ARGS);
/* Helium (MVE; fast/edgec_depthwise_conv2d_3x3_mve.c): weights a zero byte, then [c][16] int8 (the 3x3 window over
 * a tile of 4 input rows a column, byte 4 * kx + ky), one channel at a time. */
void edgec_depthwise_conv2d_3x3_mve_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                       const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                       int8_t *output);
/* the strips of up to 4 steps (a step: 2 output rows at stride 1, 1 at stride 2), 4 bytes a column, the
 * columns the blocks of 4 outputs read */
static inline int32_t edgec_depthwise_conv2d_3x3_mve_s8_get_buffer_size(const edgec_depthwise_conv2d_3x3_params *p)
{
    return 4 * (((p->out_cols + 3) / 4 * 4 - 1) * p->stride + 4) *
           ((p->out_rows * p->stride + 1) / 2 + 4 - EDGEC_MAX((p->out_rows * p->stride + 1) / 2, 4));
}

/* ================================================================ fast 1-D depthwise
 * fast/edgec_depthwise_conv2d_line.c: a depthwise convolution along one line (an image of height 1 or width 1, its
 * kernel 1 tap across), depth multiplier 1, c a multiple of 4, any taps k, stride, dilation and padding along the
 * line: input [len][c], output [out_len][c]. Weights [c / 4][k][4 channels] int16 in the order w0, w2, w1, w3 (the
 * pairs SXTB16 gives; edgec/ops/conv/line.py). The input zero point is folded into rq's bias. */
typedef struct {
    int32_t len, c, out_len, k, stride, dilation, pad, input_zp, act_min, act_max;
} edgec_depthwise_conv2d_line_params;
void edgec_depthwise_conv2d_line_s8(const edgec_depthwise_conv2d_line_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* no scratch (the argument keeps the fast kernels' one signature) */
static inline int32_t edgec_depthwise_conv2d_line_s8_get_buffer_size(const edgec_depthwise_conv2d_line_params *p)
{
    return 0 * p->c;
}

/* ================================================================ fast depthwise k_h x k_w
 * fast/edgec_depthwise_conv2d_kxk.c: a depthwise convolution of any window (MCUNet's 5x5 and 7x7), depth multiplier
 * 1, c a multiple of 4, any stride, dilation and padding. Weights [c / 4][k_h][k_w][4 channels] int16 in the order
 * w0, w2, w1, w3 (the pairs SXTB16 gives), then k_h x c int32: input_zp x the sum of each window row's weights per
 * channel (edgec/ops/conv/depthwise_kxk.py). The input zero point is folded into rq's bias. */
typedef struct {
    int32_t in_h, in_w, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, c, input_zp,
        act_min, act_max;
} edgec_depthwise_conv2d_kxk_params;
void edgec_depthwise_conv2d_kxk_s8(const edgec_depthwise_conv2d_kxk_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
/* no scratch (the argument keeps the fast kernels' one signature) */
static inline int32_t edgec_depthwise_conv2d_kxk_s8_get_buffer_size(const edgec_depthwise_conv2d_kxk_params *p)
{
    return 0 * p->c;
}
/* `--optimize speed` (fast/edgec_depthwise_conv2d_kxk_tile.c; the same constants): per group of 4 channels the input
 * rows widened into a tile of int16 records, then the window rows inside the image with no edge test, 5-tap rows
 * unrolled; the group's accumulators requantized channel by channel. */
void edgec_depthwise_conv2d_kxk_tile_s8(const edgec_depthwise_conv2d_kxk_params *p, const int8_t *input,
                                        const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                        int8_t *output);
/* the tile (8 bytes a column of every input row, the columns the windows span), then 16 bytes an output pixel */
static inline int32_t edgec_depthwise_conv2d_kxk_tile_s8_get_buffer_size(const edgec_depthwise_conv2d_kxk_params *p)
{
    return 8 * p->in_h * ((p->out_w - 1) * p->stride_w + (p->k_w - 1) * p->dil_w + 1) + 16 * p->out_h * p->out_w;
}

/* ================================================================ fully connected
 * edgec_fully_connected.c: weights [out_features][in_features] (int4: packed two per byte), bias/mult/shift per
 * output. */
typedef struct {
    int32_t in_features, out_features, input_zp, output_zp, act_min, act_max;
} edgec_fully_connected_params;

void edgec_fully_connected_s8(const edgec_fully_connected_params *p, const int8_t *input, const int8_t *weights,
                              const int32_t *bias, const int32_t *mult, const int32_t *shift,
                              int8_t *output);
void edgec_fully_connected_s4(const edgec_fully_connected_params *p, const int8_t *input, const int8_t *weights,
                              const int32_t *bias, const int32_t *mult, const int32_t *shift,
                              int8_t *output);
void edgec_fully_connected_s16(const edgec_fully_connected_params *p, const int16_t *input, const int8_t *weights,
                               const int64_t *bias, const int32_t *mult, const int32_t *shift,
                               int16_t *output);

/* `rows` rows ([rows][in_features] -> [rows][out_features]) through one fully connected layer. */
typedef struct {
    int32_t in_features, out_features, input_zp, output_zp, act_min, act_max, rows;
} edgec_fully_connected_rows_params;

void edgec_fully_connected_rows_s8(const edgec_fully_connected_rows_params *p, const int8_t *input,
                                   const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                   const int32_t *shift, int8_t *output);
/* 16x8 with an int32 bias (TFLite's int32 sum, wrapping, and 32-bit requantization): one row, or several. */
void edgec_fully_connected_s16_b32(const edgec_fully_connected_params *p, const int16_t *input,
                                   const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                   const int32_t *shift, int16_t *output);
void edgec_fully_connected_rows_s16_b32(const edgec_fully_connected_rows_params *p, const int16_t *input,
                                        const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                        const int32_t *shift, int16_t *output);
/* 16x8 (TFLite's int16 FULLY_CONNECTED of several rows): int64 bias, zero points 0. */
void edgec_fully_connected_rows_s16(const edgec_fully_connected_rows_params *p, const int16_t *input,
                                    const int8_t *weights, const int64_t *bias, const int32_t *mult,
                                    const int32_t *shift, int16_t *output);
/* The fast 16x8 fully connected layer of `rows` rows (1: one row; zero points 0): edgec_conv2d_fast_s16 as a 1x1
 * convolution of a rows x 1 image (fast/edgec_fully_connected_fast_s16.c; weights and rq as it takes them), its
 * params that convolution's, built at build time (edgec/ops/conv/s16.py fc_params; in_place 0). */
void edgec_fully_connected_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input,
                                    const uint32_t *weights, const int32_t *rq, int16_t *scratch, int16_t *output);
static inline int32_t edgec_fully_connected_fast_s16_get_buffer_size(const edgec_conv_fast_s16_params *p)
{
    return 4 * p->k4;
}

/* ================================================================ fast fully connected
 * fast/edgec_fully_connected_*.c: the input zero point folded into rq's bias (edgec_rq, one record per row);
 * weights in blocks of 4 rows, [block][k4/4][row 0..3][4 int8], remaining rows [row][k4] (k4: in_features
 * rounded up to 4, zero padded; the speed variants repack them). */
typedef struct {
    int32_t in_features, out_features, output_zp, act_min, act_max, k4;
} edgec_fully_connected_packed_params;

/* 4 rows at a time (fast/edgec_fully_connected_packed.c): the entry that tests k4 at run time and tail-calls one
 * of its two paths; the generated code calls the path its layer needs (edgec/ops/dense.py packed_entry), so the
 * linker drops the other: one pass (k4 up to 4 * EDGEC_FC_WIDEN_GROUPS) or chunked (longer inputs). */
void edgec_fully_connected_packed_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                     const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                     int8_t *output);
void edgec_fully_connected_packed_onepass_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                             const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                             int8_t *output);
void edgec_fully_connected_packed_chunked_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                             const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                             int8_t *output);
/* the input widened to int16, at most EDGEC_FC_WIDEN_GROUPS groups of 4 at a time (a longer input is widened a
 * chunk at a time, again for each block of 4 rows: the scratch stays under the input's own size) */
#define EDGEC_FC_WIDEN_GROUPS 256
static inline int32_t edgec_fully_connected_packed_s8_get_buffer_size(const edgec_fully_connected_packed_params *p)
{
    return 2 * p->k4 + 8 * EDGEC_FC_WIDEN_GROUPS - EDGEC_MAX(2 * p->k4, 8 * EDGEC_FC_WIDEN_GROUPS);
}
/* int4 weights, one row at a time; k4 here is in_features rounded up to 8, the weights k4 / 8 words per row
 * (nibble order: edgec/ops/dense.py lower_fc4). */
void edgec_fully_connected_packed_s4(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                     const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                     int8_t *output);
static inline int32_t edgec_fully_connected_packed_s4_get_buffer_size(const edgec_fully_connected_packed_params *p)
{
    return 2 * p->k4;
}
/* `--optimize speed`: the same layout with the weights widened to int16 at build time (each group of 4 as
 * (w0, w2) (w1, w3), edgec/ops/dense.py; fast/edgec_fully_connected_wide.c). */
void edgec_fully_connected_wide_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_fully_connected_wide_s8_get_buffer_size(const edgec_fully_connected_packed_params *p)
{
    return 2 * p->k4;
}
/* `--optimize speed` where weights are read from flash with wait states: int8 weights in pairs of rows, the even
 * row's offset by 128, three instructions for 4 MACs; a header word (the output stage), each block's doubled biases
 * after its weights, one rq record for a layer of one weight scale, else one a row (edgec/ops/dense_pairs.py;
 * fast/edgec_fully_connected_pairs.c). */
void edgec_fully_connected_pairs_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_fully_connected_pairs_s8_get_buffer_size(const edgec_fully_connected_packed_params *p)
{
    return 2 * p->k4;
}
/* `--optimize speed`: 8 rows a pass over doubled int16 weights (edgec/ops/dense.py;
 * fast/edgec_fully_connected_rows8.c). */
void edgec_fully_connected_rows8_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);
static inline int32_t edgec_fully_connected_rows8_s8_get_buffer_size(const edgec_fully_connected_packed_params *p)
{
    return 2 * p->k4;
}
/* Any int32 bias (fast/edgec_fully_connected_bias32.c, edgec/ops/dense.py lower_fc_bias32): weights int16 as
 * fast/edgec_rows16.h reads them (4 rows a block, rows padded to 4); rq [rows padded to 4][4]: bias - input_zp *
 * sum w (modulo 2^32), multiplier, left shift, right shift. No scratch. */
void edgec_fully_connected_bias32_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                     const uint32_t *weights, const int32_t *rq, int8_t *output);
/* Helium (MVE; fast/edgec_fully_connected_mve.c): weights [out_features][k4] int8, 4 rows at a time; no scratch
 * (the argument keeps the fast kernels' one signature). */
void edgec_fully_connected_mve_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                  const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output);

/* `rows` rows through the packed fully connected layer (the same packing; fast/edgec_fully_connected_packed.c). */
typedef struct {
    int32_t in_features, out_features, output_zp, act_min, act_max, k4, rows;
} edgec_fully_connected_packed_rows_params;

void edgec_fully_connected_packed_rows_s8(const edgec_fully_connected_packed_rows_params *p, const int8_t *input,
                                          const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                          int8_t *output);
static inline int32_t edgec_fully_connected_packed_rows_s8_get_buffer_size(
    const edgec_fully_connected_packed_rows_params *p)
{
    return 2 * p->k4;
}

/* ================================================================ matrix product of two activations
 * edgec_matmul.c; fast variant in fast/edgec_matmul_fast.c. out[b][i][j] = sum_k (a[b][i][k] - a_zp) *
 * (b[b][k][j] - b_zp), requantized; every index goes through its stride (elements): batch, row, column of a,
 * b and the output (a batch stride of 0 broadcasts), so transposed operands and outputs need no copy. */
typedef struct {
    int32_t batch, m, k, n, a_batch_stride, a_row_stride, a_col_stride, b_batch_stride, b_row_stride,
        b_col_stride, out_batch_stride, out_row_stride, out_col_stride, a_zp, b_zp, mult, shift, output_zp,
        act_min, act_max;
} edgec_matmul_params;
void edgec_matmul_s8(const edgec_matmul_params *p, const int8_t *a, const int8_t *b, int8_t *output);
/* 16x8 (TFLite's BatchMatMul<int16_t, int64_t>): an int64 sum, the 64-bit requantization, zero points 0. */
void edgec_matmul_s16(const edgec_matmul_params *p, const int16_t *a, const int16_t *b, int16_t *output);
/* fast: the same numbers, no scratch (fast/edgec_matmul_fast_s16.c): int64 sums by SMLALD of int16 pairs read
 * in place, one entry per loop: kk (A's rows and B's columns contiguous), kn (A's rows and B's rows contiguous),
 * any; edgec_matmul_fast_s16 picks by mode. The requantization: the high word of acc * rq_mult (unsigned) +
 * rq_round (rq_round_hi:rq_round_lo), shifted right by rq_shift (edgec/ops/matmul.py lower_matmul16). */
#define EDGEC_MM16_ANY 0
#define EDGEC_MM16_KK 1
#define EDGEC_MM16_KN 2
typedef struct {
    int32_t batch, m, k, n, a_batch_stride, a_row_stride, a_col_stride, b_batch_stride, b_row_stride,
        b_col_stride, out_batch_stride, out_row_stride, out_col_stride, mode, rq_mult, rq_round_lo, rq_round_hi,
        rq_shift, act_min, act_max;
} edgec_matmul_fast_s16_params;
void edgec_matmul_fast_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                           int16_t *output);
void edgec_matmul_fast_kk_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                              int16_t *output);
void edgec_matmul_fast_kn_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                              int16_t *output);
void edgec_matmul_fast_any_s16(const edgec_matmul_fast_s16_params *p, const int16_t *a, const int16_t *b,
                               int16_t *output);

/* fast: the same product with one edgec_rq requantization (rq_*; the output zero point folded into rq_khi). */
typedef struct {
    int32_t batch, m, k, n, a_batch_stride, a_row_stride, a_col_stride, b_batch_stride, b_row_stride,
        b_col_stride, out_batch_stride, out_row_stride, out_col_stride, a_zp, b_zp, act_min, act_max, rq_mult,
        rq_khi, rq_neg, rq_shift;
} edgec_matmul_fast_params;
void edgec_matmul_fast_s8(const edgec_matmul_fast_params *p, const int8_t *a, const int8_t *b, int8_t *scratch,
                          int8_t *output);
/* with G = k / 4 and P = n / 2 rounded up: B^T widened (16 * G * P), its column corrections and a row pair's
 * sums (24 * P), a row pair of A when A's rows are not contiguous (8 * G) */
static inline int32_t edgec_matmul_fast_s8_get_buffer_size(const edgec_matmul_fast_params *p)
{
    return 16 * ((p->k + 3) / 4) * ((p->n + 1) / 2) + 24 * ((p->n + 1) / 2) + 8 * ((p->k + 3) / 4);
}

/* ================================================================ pooling
 * edgec_pool.c; fast variants in fast/edgec_avg_pool_global*.c */
typedef struct {
    int32_t in_h, in_w, c, out_h, out_w, k_h, k_w, stride_h, stride_w, pad_top, pad_left, act_min,
        act_max;
} edgec_pool_params;

void edgec_max_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output);
void edgec_avg_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output);
/* int16 activations (between two int16 layers, TFLite MaxPool16 / AveragePool16): the same params. */
void edgec_max_pool_s16(const edgec_pool_params *p, const int16_t *input, int16_t *output);
void edgec_avg_pool_s16(const edgec_pool_params *p, const int16_t *input, int16_t *output);
/* QONNX's Trunc after an average pool (Brevitas TruncAvgPool2d): sum / count with QONNX's rounding_mode. */
#define EDGEC_ROUND_EVEN 0
#define EDGEC_ROUND_FLOOR 1
#define EDGEC_ROUND_CEIL 2
void edgec_avg_pool_trunc_s8(const edgec_pool_params *p, int32_t rounding, const int8_t *input, int8_t *output);

/* Global average pooling: the average over all pixels of [pixels][c], TFLite rounding. */
typedef struct {
    int32_t pixels, c, act_min, act_max;
} edgec_avg_pool_global_params;

void edgec_avg_pool_global_s8(const edgec_avg_pool_global_params *p, const int8_t *input, int8_t *output);
/* Helium (MVE; fast/edgec_avg_pool_global_mve.c): the same, 4 channels per vector. */
void edgec_avg_pool_global_mve_s8(const edgec_avg_pool_global_params *p, const int8_t *input, int8_t *output);

/* ================================================================ elementwise
 * edgec_elementwise.c; fast variants in fast/edgec_add_lut*.c */
typedef struct {
    int32_t n, input1_zp, input1_mult, input1_shift, input2_zp, input2_mult, input2_shift,
        output_mult, output_shift, output_zp, left_shift, act_min, act_max;
} edgec_add_params;

/* Add of two [n] tensors, TFLite's scheme (inputs rescaled after << left_shift, the sum requantized). */
void edgec_add_s8(const edgec_add_params *p, const int8_t *input1, const int8_t *input2,
                  int8_t *output);
/* int16 (between two int16 layers, TFLite's 16x8 Add): the same params, zero points 0, left_shift 15. */
void edgec_add_s16(const edgec_add_params *p, const int16_t *input1, const int16_t *input2,
                   int16_t *output);

/* Broadcasting elementwise op over 6-D dims (input strides 0 where broadcast).
 * op 0..3 (add, sub, max, min): TFLite add scheme (inputs rescaled after << left_shift);
 * op 4 (mul): (a-za)*(b-zb) requantized; op 5 (div): round(((a-za) << 16) / (b-zb)) requantized;
 * op 6, 7 (TFLite's MAXIMUM, MINIMUM): max / min of the int8 values a and b, nothing rescaled;
 * op 8 (TFLite's SQUARED_DIFFERENCE): the add scheme's rescaled inputs (left shift 7), their difference squared
 * and requantized; op 9 (TFLite's DIV): TFLite's DivElementwise (gemmlowp's reciprocal of the divisor, the
 * numerator's headroom, one requantization by out_shift less both shifts); ops 10-15 (TFLite's EQUAL, NOT_EQUAL,
 * GREATER, GREATER_EQUAL, LESS, LESS_EQUAL): both inputs rescaled (<< left_shift, their own multiplier), compared,
 * 0 or 1 (a bool byte); ops 16, 17 (LOGICAL_AND, LOGICAL_OR) of the bytes themselves; op 18 (TFLite's 16x8
 * PRELU); op 19 (a QDQ file's int16 Div): round((a-za) * 2^left_shift / (b-zb)) in int64, saturated to int32,
 * requantized. */
typedef struct {
    int32_t op, dims[EDGEC_RANK], a_stride[EDGEC_RANK], b_stride[EDGEC_RANK];
    int32_t a_zp, a_mult, a_shift, b_zp, b_mult, b_shift, left_shift, out_mult, out_shift, out_zp,
        act_min, act_max;
} edgec_binary_params;
void edgec_binary_s8(const edgec_binary_params *p, const int8_t *a, const int8_t *b, int8_t *output);
/* int16 (TFLite's 16x8 SUB, MUL, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, broadcast ADD; a QDQ file's Div, op 19):
 * zero points 0, left_shift 15 (add, sub) or 0 (squared difference), the int16 clamp. */
void edgec_binary_s16(const edgec_binary_params *p, const int16_t *a, const int16_t *b, int16_t *output);

/* TFLite's SELECT_V2: out = cond ? x : y over the broadcast [dims] (6-D, strides 0 where an input is broadcast);
 * cond bool bytes (0 or 1), the bytes of x or y copied. */
typedef struct {
    int32_t dims[EDGEC_RANK], c_stride[EDGEC_RANK], x_stride[EDGEC_RANK], y_stride[EDGEC_RANK];
} edgec_where_params;
void edgec_where_s8(const edgec_where_params *p, const uint8_t *cond, const int8_t *x, const int8_t *y,
                    int8_t *output);
/* int16 (TFLite's 16x8 SELECT_V2 and DYNAMIC_UPDATE_SLICE): the same params. */
void edgec_where_s16(const edgec_where_params *p, const uint8_t *cond, const int16_t *x, const int16_t *y,
                     int16_t *output);

/* TFLite's ADD_N of `count` [n] tensors quantized alike: each value rescaled as TFLite's ADD rescales it
 * (rq((x - input_zp) << left_shift, input_mult, input_shift)), the int32 sum (wrapping; from the rescaled
 * -input_zp, as TFLite's) requantized (mult, shift),
 * plus output_zp, clamped. */
typedef struct {
    int32_t n, count, input_zp, output_zp, left_shift, input_mult, input_shift, mult, shift, act_min, act_max;
} edgec_add_n_params;
void edgec_add_n_s8(const edgec_add_n_params *p, const int8_t *const *inputs, int8_t *output);

/* Elementwise lookup: y[i] = table[((i / inner) % count) * 256 + x[i] + 128]. In place is fine. */
typedef struct {
    int32_t n, count, inner;
} edgec_lut_params;
void edgec_lut_s8(const edgec_lut_params *p, const int8_t *input, const int8_t *table, int8_t *output);

/* TFLite's 16x8 activations of int16 values (zero points 0; edgec/ops/lut/int16.py): fn 0 LOGISTIC, 1 TANH (the
 * input rescaled by input_mult and a rounding right shift of input_shift, TFLite's sigmoid table interpolated),
 * 2 RELU (requantized by input_mult / input_shift), 3 RELU6 (the input itself), 4 LEAKY_RELU (below 0: alpha_sign
 * times the requantization by alpha_mult / alpha_shift), 5 ABS (|x|, requantized where input_mult is not 0); then
 * clamped to [act_min, act_max]. */
typedef struct {
    int32_t n, fn, input_mult, input_shift, alpha_mult, alpha_shift, alpha_sign, act_min, act_max;
} edgec_activation16_params;
void edgec_activation_s16(const edgec_activation16_params *p, const int16_t *input, int16_t *output);

/* An int16 function by TFLite's 513-entry int16 table (LUTPopulate<int16_t>, lut_lookup_with_interpolation):
 * entry 256 + (x >> 7) and the next, interpolated over x's low 7 bits (edgec/ops/lut/table16.py). */
typedef struct {
    int32_t n;
} edgec_lut16_params;
void edgec_lut16_s16(const edgec_lut16_params *p, const int16_t *input, const int16_t *table, int16_t *output);

/* fast: add where lut1/lut2[v + 128] is input v rescaled to the common scale (TFLite's first two
 * requantizations, done at build time); the sum is requantized with rq (bias unused; fast/edgec_add_lut.c). */
typedef struct {
    int32_t n, output_zp, act_min, act_max;
} edgec_add_lut_params;

void edgec_add_lut_s8(const edgec_add_lut_params *p, const int8_t *input1, const int8_t *input2, const int32_t *lut1,
                      const int32_t *lut2, const edgec_rq *rq, int8_t *output);
/* Helium (MVE; fast/edgec_add_lut_mve.c): the same, 4 values per vector (table gathers). */
void edgec_add_lut_mve_s8(const edgec_add_lut_params *p, const int8_t *input1, const int8_t *input2,
                          const int32_t *lut1, const int32_t *lut2, const edgec_rq *rq, int8_t *output);
/* fast: multiply over [rows][cols] (fast/edgec_mul_bcast.c, edgec/ops/binary/mul.py): out[r][j] =
 * rq((a[r * a_row_stride + j] - a_zp) * (b[r * b_row_stride + j] - b_zp)) clamped to [act_min, act_max]; a row
 * stride is cols (the operand read whole) or 0 (one row read for every row: squeeze-excite's gate); the output
 * zero point is in rq (bias unused). */
typedef struct {
    int32_t rows, cols, a_row_stride, b_row_stride, a_zp, b_zp, act_min, act_max;
} edgec_mul_bcast_params;
void edgec_mul_bcast_s8(const edgec_mul_bcast_params *p, const int8_t *a, const int8_t *b, const edgec_rq *rq,
                        int8_t *output);

/* ================================================================ layer normalization
 * edgec_norm.c. Over the last axis of [rows][cols]: integer statistics in one pass, the normalized values int16
 * with frac_bits fraction bits, times gamma (int16) plus beta (int32), requantized (edgec/ops/norm.py). */
typedef struct {
    int32_t rows, cols, input_zp, eps_q, frac_bits, mult, shift, output_zp, act_min, act_max;
    int32_t rms;        /* RMSNormalization: the row sum taken as 0 (no mean) */
    int32_t eps_shift;  /* the int16 kernel's epsilon is eps_q * 4^eps_shift (the int8 one: eps_q) */
} edgec_layer_norm_params;
void edgec_layer_norm_s8(const edgec_layer_norm_params *p, const int8_t *input, const int16_t *gamma,
                         const int32_t *beta, int8_t *output);
/* int16 in and out (zero points 0): the same arithmetic with int64 row statistics */
void edgec_layer_norm_s16(const edgec_layer_norm_params *p, const int16_t *input, const int16_t *gamma,
                          const int32_t *beta, int16_t *output);

/* TFLite's L2_NORMALIZATION over the last axis of [rows][cols]: each x - input_zp times TFLite's inverse square
 * root of the row's sum of squares (GetInvSqrtQuantizedMultiplierExp), output in 1/128 with zero point 0. With
 * out_mult (an ONNX model's calibrated output grid): the normalized value with 15 fraction bits, requantized by
 * out_mult / out_shift, plus output_zp. */
typedef struct {
    int32_t rows, cols, input_zp, out_mult, out_shift, output_zp;
} edgec_l2_norm_params;
void edgec_l2_norm_s8(const edgec_l2_norm_params *p, const int8_t *input, int8_t *output);

/* The int16 variant (an int16 tail of a float model, edgec/ops/norm.py l2_norm_s16): int16 input with zero point
 * 0, each x / sqrt(row's sum of squares) in Q0.15 (int16 output, scale 1/32768); a row of zeros gives zeros. */
typedef struct {
    int32_t rows, cols;
} edgec_l2_norm16_params;
void edgec_l2_norm_s16(const edgec_l2_norm16_params *p, const int16_t *input, int16_t *output);

/* ================================================================ softmax
 * edgec_softmax.c: over the last axis of [rows][cols]. */
typedef struct {
    int32_t rows, cols;
} edgec_softmax_params;

/* exp_table[d] = round(exp(-d*scale*beta) * 2^24). Output scale 1/256, zero point -128. */
void edgec_softmax_s8(const edgec_softmax_params *p, const int8_t *input, const uint32_t *exp_table,
                      int8_t *output);
/* The int16 softmax (--int16 on a Softmax): int16 input (symmetric), output Q0.15 (scale 1/32768, zero
 * point 0). exp_hi[h] = round(exp(-256 h s) * 2^15), exp_lo[l] = round(exp(-l s) * 2^15): the exp of the
 * difference d = max - x is (exp_hi[d >> 8] * exp_lo[d & 255] + 2^14) >> 15; one reciprocal 2^46 / sum per row. */
void edgec_softmax_s16(const edgec_softmax_params *p, const int16_t *input, const uint16_t *exp_hi,
                       const uint16_t *exp_lo, int16_t *output);

/* The masked softmax (edgec/ops/softmax/masked.py): a constant attention mask folded in. Row r reads keep row
 * r % mask_rows (1: attended, 0: masked); masked positions take no part in the max or the sum and give -128
 * (probability 0); a row with no kept position is all -128. exp_table as softmax's; output scale 1/256, zero
 * point -128. */
typedef struct {
    int32_t rows, cols, mask_rows;
} edgec_masked_softmax_params;
void edgec_masked_softmax_s8(const edgec_masked_softmax_params *p, const int8_t *input, const int8_t *keep,
                             const uint32_t *exp_table, int8_t *output);

/* Log-softmax; exp_table as softmax's, log_table[i] = log2(1 + (i + 0.5) / 256) in Q16; k_in = s_in / s_out and
 * k_ln = 1 / s_out in Q16. */
typedef struct {
    int32_t rows, cols, k_in, k_ln, output_zp;
} edgec_log_softmax_params;
void edgec_log_softmax_s8(const edgec_log_softmax_params *p, const int8_t *input, const uint32_t *exp_table,
                          const int32_t *log_table, int8_t *output);

/* TFLite's own int8 log-softmax (LogSoftmaxQuantized, as TFLite Micro runs it), for .tflite models: q5_table[d]
 * the difference -d from the row's max rescaled into Q5.26, exp_table[d] its gemmlowp exp rescaled into the Q12.19
 * sum (0 below diff_min); the sum's log (log_x_for_x_greater_than_or_equal_to_1, Q5.26); outputs
 * (q5 - log) / 2^22 + 127, -128 at or below the adjusted diff_min (rev_mult, rev_shift). Output 16/256, 127. */
typedef struct {
    int32_t rows, cols, diff_min, rev_mult, rev_shift;
} edgec_log_softmax_tflite_params;
void edgec_log_softmax_tflite_s8(const edgec_log_softmax_tflite_params *p, const int8_t *input,
                                 const int32_t *q5_table, const int32_t *exp_table, int8_t *output);

/* The int16 LogSoftmax of an int16 tail (edgec/ops/softmax/log_softmax16.py): int16 scores (zero point 0) in, log-probabilities
 * out on a symmetric int16 grid; exp_hi / exp_lo as edgec_softmax_s16's, k_in = round(s_in / s_out 2^16), k_ln =
 * round(2^16 / s_out); cols <= 4095. */
typedef struct {
    int32_t rows, cols, k_in, k_ln;
} edgec_log_softmax16_params;
void edgec_log_softmax_s16(const edgec_log_softmax16_params *p, const int16_t *input, const uint16_t *exp_hi,
                           const uint16_t *exp_lo, int16_t *output);

/* TFLite's own int8 softmax (reference_ops::Softmax, as TFLite Micro runs it), for .tflite models:
 * exp_table[d] = gemmlowp's fixed-point exp (Q0.31) of the difference -d from the row's max rescaled into
 * Q5.26 as TFLite does (differences below diff_min give -128), a Q12.19 sum and its Newton-Raphson
 * reciprocal. Output scale 1/256, zero point -128. */
typedef struct {
    int32_t rows, cols, diff_min;
} edgec_softmax_tflite_params;
void edgec_softmax_tflite_s8(const edgec_softmax_tflite_params *p, const int8_t *input, const int32_t *exp_table,
                             int8_t *output);
/* The same with an int16 output (Softmax<int8_t, int16_t>): scale 1/65536, zero point -32768. */
void edgec_softmax_tflite_s8_s16(const edgec_softmax_tflite_params *p, const int8_t *input,
                                 const int32_t *exp_table, int16_t *output);
/* TFLite's SoftmaxInt16 (16x8): int16 scores of zero point 0 in, probabilities in 1/32768 out; each difference
 * from the row's max requantized (input_mult, input_shift) into the 513-entry exp LUT's input, the sum's
 * reciprocal from the 1 / (1 + x) LUT (both TFLite's LUTPopulate, stored with the op). In place is fine. */
typedef struct {
    int32_t rows, cols, input_mult, input_shift;
} edgec_softmax_tflite16_params;
void edgec_softmax_tflite_s16(const edgec_softmax_tflite16_params *p, const int16_t *input, const int16_t *exp_lut,
                              const int16_t *recip_lut, int16_t *output);

/* ================================================================ data movement
 * edgec_movement.c */

/* Rank-4 transpose (pad lower ranks with leading 1s): like numpy.transpose(x, perm) of x with shape dims. */
typedef struct {
    int32_t dims[4], perm[4];
} edgec_transpose_params;
void edgec_transpose_s8(const edgec_transpose_params *p, const int8_t *input, int8_t *output);
/* int16 (between two int16 layers): the same params. */
void edgec_transpose_s16(const edgec_transpose_params *p, const int16_t *input, int16_t *output);

/* Separable index map: out[i0..i5] = in[sum_k offsets[start[k] + i_k]], or pad_value when the
 * sum is negative (an axis entry of -2^27 marks padding). */
typedef struct {
    int32_t dims[EDGEC_RANK], start[EDGEC_RANK], pad_value;
} edgec_remap_params;
void edgec_remap_s8(const edgec_remap_params *p, const int8_t *input, const int32_t *offsets, int8_t *output);
/* int16 (between two int16 layers): the same params, pad_value on the int16 grid. */
void edgec_remap_s16(const edgec_remap_params *p, const int16_t *input, const int32_t *offsets, int16_t *output);

/* A constant tensor (a branch of the model computed from constants alone, folded at build time: an SSD's
 * anchors) written into its buffer: output[i] = values[i] for i < n. */
void edgec_constant_s8(const int8_t *values, int8_t *output, int32_t n);

/* One input of a concatenation: out[o * out_stride + out_offset + j] = in[o * chunk + j]
 * (through table[in + 128] when table is not NULL). */
typedef struct {
    int32_t outer, chunk, out_stride, out_offset;
} edgec_concat_params;
void edgec_concat_part_s8(const edgec_concat_params *p, const int8_t *input, const int8_t *table,
                          int8_t *output);
/* int16 (between two int16 layers): each value requantized by mult and shift (mult 0: copied). */
void edgec_concat_part_s16(const edgec_concat_params *p, const int16_t *input, int32_t mult, int32_t shift,
                           int16_t *output);

/* ================================================================ reduction
 * edgec_reduce.c */

/* Reduce [outer][n][inner] over n. kind 0 sum (mean: 1/n in mult), 1 max, 2 min, 3 argmax, 4 argmin. */
typedef struct {
    int32_t outer, n, inner, kind, select_last, input_zp, mult, shift, output_zp, act_min, act_max;
} edgec_reduce_params;
void edgec_reduce_s8(const edgec_reduce_params *p, const int8_t *input, int8_t *output);
/* int16 (TFLite's 16x8 MEAN) */
void edgec_reduce_s16(const edgec_reduce_params *p, const int16_t *input, int16_t *output);
/* TFLite's ARG_MAX / ARG_MIN (kind 3, 4): the first index of the largest / smallest int8 value along n, as int32 */
void edgec_reduce_index32_s8(const edgec_reduce_params *p, const int8_t *input, int32_t *output);

/* ================================================================ running sum
 * edgec_cumsum.c: out[k] = sum of (x[j] - input_zp) for j <= k (j < k: exclusive; j >= k: reverse) along n of
 * [outer][n][inner], requantized (Q31 mult + shift), plus output_zp, clamped to [act_min, act_max] */
typedef struct {
    int32_t outer, n, inner, exclusive, reverse, input_zp, mult, shift, output_zp, act_min, act_max;
} edgec_cumsum_params;
void edgec_cumsum_s8(const edgec_cumsum_params *p, const int8_t *input, int8_t *output);

/* edgec_cumsum.c: TFLite's CUMSUM: the same running sums, each value rescaled first as TFLite's ADD rescales it
 * (rq((x - input_zp) << left_shift, input_mult, input_shift)), the int32 sum (wrapping; from the rescaled -input_zp,
 * as TFLite's) requantized (mult, shift) */
typedef struct {
    int32_t outer, n, inner, exclusive, reverse, input_zp, left_shift, input_mult, input_shift, mult, shift,
        output_zp, act_min, act_max;
} edgec_cumsum_tflite_params;
void edgec_cumsum_tflite_s8(const edgec_cumsum_tflite_params *p, const int8_t *input, int8_t *output);

/* ================================================================ recurrent
 * edgec_recurrent.c: ONNX LSTM (gru 0, gates i o f c) and GRU (gru 1, gates z r h) over
 * [steps][batch][input_size], one direction (reverse: last step first). Weights int8 per row
 * ([gates*hidden][input_size] and [gates*hidden][hidden]), gate pre-activations int16 Q3.12 (x part:
 * rq(bias_x + w_x.x, mult_x, shift_x) + wb; h part: rq(w_h.h, mult_h, shift_h) + rb), sigmoid/tanh by 513-entry
 * int16 tables, hidden state int16 Q0.15, cell state int16 Q4.11 (initial states init_h, init_c
 * [batch][hidden]); output int8 (rq(state, out_mult, out_shift) + output_zp): output 0 h of every step
 * ([steps][batch][hidden]), 1 the last h, 2 the last c ([batch][hidden]). */
typedef struct {
    int32_t steps, batch, input_size, hidden, gru, reverse, linear_before_reset, output, out_mult, out_shift,
        output_zp;
    /* LSTM peepholes (ONNX's P): 1 when init_c is followed by the int16 weights [3][hidden] (gates i, o, f); gate
     * g's pre-activation + rq(p * c, peep_mult[g], peep_shift[g]), saturated to int16 (i, f: c_{t-1}; o: c_t) */
    int32_t peephole, peep_mult[3], peep_shift[3];
} edgec_recurrent_params;
void edgec_recurrent_s8(const edgec_recurrent_params *p, const int8_t *input, const int8_t *w_x, const int8_t *w_h,
                        const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                        const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                        const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                        const int16_t *tanh_table, void *scratch, int8_t *output);
/* int32 pre-activations of the gates + 1 rows (gates: 4 - gru) and int16 h, c [batch][hidden] and r*h */
static inline int32_t edgec_recurrent_s8_get_buffer_size(const edgec_recurrent_params *p)
{
    return 4 * (4 - p->gru + 1) * p->hidden + 2 * (2 * p->batch + 1) * p->hidden;
}
/* The same with int4 weights (--weights int4, --int4 NODE): w_x and w_h in [-7, 7], each matrix packed two per
 * byte in its flattened [gates*hidden][columns] order. */
void edgec_recurrent_s4(const edgec_recurrent_params *p, const int8_t *input, const int8_t *w_x, const int8_t *w_h,
                        const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                        const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                        const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                        const int16_t *tanh_table, void *scratch, int8_t *output);
static inline int32_t edgec_recurrent_s4_get_buffer_size(const edgec_recurrent_params *p)
{
    return edgec_recurrent_s8_get_buffer_size(p);
}

/* The same with int16 input and output, zero points 0 (a float model's recurrence: int16 sequence in and out;
 * bias_x 0, out_mult/out_shift from Q0.15 to the output's int16 scale); |w_x| sums below 2^31 / 32768. */
void edgec_recurrent_s16(const edgec_recurrent_params *p, const int16_t *input, const int8_t *w_x, const int8_t *w_h,
                         const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                         const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                         const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                         const int16_t *tanh_table, void *scratch, int16_t *output);
static inline int32_t edgec_recurrent_s16_get_buffer_size(const edgec_recurrent_params *p)
{
    return edgec_recurrent_s8_get_buffer_size(p);
}
/* fast (fast/edgec_recurrent_fast.c; edgec/ops/recurrent.py lower_recurrent): the same recurrence with each
 * weight row zero-padded to a multiple of 4 (words), multiplied with SMLAD on the Arm DSP path: x widened to
 * int16 pairs (x0, x2), (x1, x3) once per step, h laid out the same way once per product, each weight word
 * split by SXTB16 into (w0, w2), (w1, w3); int8 weights stay int8 in flash; requantized by the fast kernels'
 * one-multiply records (rq_x, rq_h: edgec_rq's 5 fields a row, its bias field the left shift of a multiplier
 * over 1, applied to the accumulator first; a null pointer: the reference requantization, for a product whose
 * multipliers or accumulators the records do not take). */
void edgec_recurrent_fast_s8(const edgec_recurrent_params *p, const int8_t *input, const uint32_t *w_x,
                             const uint32_t *w_h, const int32_t *bias_x, const int32_t *mult_x,
                             const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb,
                             const int32_t *rb, const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                             const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, void *scratch,
                             int8_t *output);
/* the portable kernel's (rounded up to 4 bytes), then x and h laid out as int16 pairs (rows padded to 4) */
static inline int32_t edgec_recurrent_fast_s8_get_buffer_size(const edgec_recurrent_params *p)
{
    return (edgec_recurrent_s8_get_buffer_size(p) + 3) / 4 * 4 +
           2 * ((p->input_size + 3) / 4 * 4 + (p->hidden + 3) / 4 * 4);
}
/* The same with int4 weights: each row zero-padded to a multiple of 8, 8 nibbles a word in edgec/ops/fast.py's
 * PERM8 order (as edgec_fully_connected_packed_s4). */
void edgec_recurrent_fast_s4(const edgec_recurrent_params *p, const int8_t *input, const uint32_t *w_x,
                             const uint32_t *w_h, const int32_t *bias_x, const int32_t *mult_x,
                             const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb,
                             const int32_t *rb, const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                             const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, void *scratch,
                             int8_t *output);
/* the portable kernel's (rounded up to 4 bytes), then x and h laid out as int16 pairs (rows padded to 8) */
static inline int32_t edgec_recurrent_fast_s4_get_buffer_size(const edgec_recurrent_params *p)
{
    return (edgec_recurrent_s8_get_buffer_size(p) + 3) / 4 * 4 +
           2 * ((p->input_size + 7) / 8 * 8 + (p->hidden + 7) / 8 * 8);
}
/* The same with int16 input and output (edgec_recurrent_s16's arithmetic): x laid out as h is. */
void edgec_recurrent_fast_s16(const edgec_recurrent_params *p, const int16_t *input, const uint32_t *w_x,
                              const uint32_t *w_h, const int32_t *bias_x, const int32_t *mult_x,
                              const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb,
                              const int32_t *rb, const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                              const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, void *scratch,
                              int16_t *output);
static inline int32_t edgec_recurrent_fast_s16_get_buffer_size(const edgec_recurrent_params *p)
{
    return edgec_recurrent_fast_s8_get_buffer_size(p);
}

/* edgec_recurrent_tflite.c: TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite Micro computes it (edgec/ops/
 * recurrent_tflite.py): input int8 [steps][batch] (time_major) or [batch][steps] of [input_size], weights int8 per
 * tensor [4][hidden][input_size] and [4][hidden][hidden] (gates forget, input, cell, output), bias int32
 * [4][hidden], gate multipliers mult/shift_x, mult/shift_h [4]; the cell state c int16 of scale 2^cell_power and
 * the hidden state h int8 (hidden_zp), each [batch][hidden], persistent across calls (0 and hidden_zp after reset);
 * output int8, each step's hidden state, laid out as the input. */
typedef struct {
    int32_t steps, batch, input_size, hidden, time_major, input_zp, hidden_zp, cell_sigmoid, cell_power, cell_clip,
        fc_mult, fc_shift, ig_mult, ig_shift, oh_mult, oh_shift;
} edgec_lstm_tflite_params;
void edgec_lstm_tflite_s8(const edgec_lstm_tflite_params *p, const int8_t *input, const int8_t *w_x,
                          const int8_t *w_h, const int32_t *bias, const int32_t *mult_x, const int32_t *shift_x,
                          const int32_t *mult_h, const int32_t *shift_h, int16_t *c, int8_t *h, void *scratch,
                          int8_t *output);
/* the four gates (int16), each [batch][hidden] */
static inline int32_t edgec_lstm_tflite_s8_get_buffer_size(const edgec_lstm_tflite_params *p)
{
    return 8 * p->batch * p->hidden;
}
/* 16x8: the same with int16 input, hidden state (zero point 0) and output, int64 gate biases and sums */
void edgec_lstm_tflite_s16(const edgec_lstm_tflite_params *p, const int16_t *input, const int8_t *w_x,
                           const int8_t *w_h, const int64_t *bias, const int32_t *mult_x, const int32_t *shift_x,
                           const int32_t *mult_h, const int32_t *shift_h, int16_t *c, int16_t *h, void *scratch,
                           int16_t *output);
static inline int32_t edgec_lstm_tflite_s16_get_buffer_size(const edgec_lstm_tflite_params *p)
{
    return 8 * p->batch * p->hidden;
}
/* fast (fast/edgec_lstm_tflite_fast.c; edgec/ops/recurrent_tflite.py lower_lstm_tflite): the same arithmetic, the
 * weights int16 per hidden unit (its 4 gate rows interleaved by groups of 4 inputs, pairs (w0, w2), (w1, w3)), bias
 * [hidden][8] (the 4 gates' input then recurrent biases, the zero points folded in), the requantization records
 * rq_x, rq_h ([4][5]) and rq_oh (output gate x tanh(cell): [5]) */
void edgec_lstm_tflite_fast_s8(const edgec_lstm_tflite_params *p, const int8_t *input, const uint32_t *w_x,
                               const uint32_t *w_h, const int32_t *bias, const int32_t *rq_x, const int32_t *rq_h,
                               const int32_t *rq_oh, int16_t *c, int8_t *h, void *scratch, int8_t *output);
/* the input and the hidden state widened to int16, in whole groups of 4 */
static inline int32_t edgec_lstm_tflite_fast_s8_get_buffer_size(const edgec_lstm_tflite_params *p)
{
    return 8 * ((p->input_size + 3) / 4 + (p->hidden + 3) / 4);
}

/* edgec_svdf.c: TFLite's integer SVDF as TFLite Micro computes it (edgec/ops/svdf.py): input int8 [batch][input_size],
 * feature weights int8 [units*rank][input_size], time weights [units*rank][memory] (int8 or int16 in the file,
 * int16 here), bias int32 [units]; the activation state (int8 or int16: state_min/max, held as its type,
 * [batch][units*rank][memory]) persistent across calls (state_zp after reset), shifted and fed the new features
 * at every call; output int8 [batch][units]. */
typedef struct {
    int32_t batch, input_size, rank, units, memory, input_zp, state_zp, state_min, state_max, mult1, shift1, mult2,
        shift2, output_zp;
} edgec_svdf_params;
void edgec_svdf_s8(const edgec_svdf_params *p, const int8_t *input, const int8_t *w_feature, const int16_t *w_time,
                   const int32_t *bias, void *state, int8_t *output);
/* The fast kernel (fast/edgec_svdf_fast.c, edgec/ops/svdf.py lower_svdf_fast): the feature weights int16, 4 filters
 * a block ([block][group of 4 inputs][filter][(w0, w2) (w1, w3)], filters padded to 4), fbias [filters padded to 4]
 * = -input_zp * sum of a filter's weights, tbias [units] = bias - state_zp * sum of a unit's time weights (both
 * modulo 2^32); the time weights [units*rank][wt wt] (each row twice; int16, or int8 with an int8 state) as
 * words; multipliers with their left and right shifts. The state [batch][units*rank][memory] (its type; memory
 * even, a multiple of 4 for int8) a ring: each row's oldest entry at *pos (0 after reset; the kernel moves it on),
 * not edgec_svdf_s8's shifted layout. path: 4 where the feature sums take edgec_rq_any (a left shift or none), plus
 * 1 for rank-1 rows of 8 int8 entries, 2 of 8 int16 ones (the unrolled unit functions), else 0. */
typedef struct {
    int32_t batch, input_size, rank, units, memory, state_zp, state_min, state_max, mult1, left1, right1, mult2,
        left2, right2, output_zp, path;
} edgec_svdf_fast_params;
void edgec_svdf_fast_s8(const edgec_svdf_fast_params *p, const int8_t *input, const uint32_t *w_feature,
                        const int32_t *fbias, const uint32_t *w_time, const int32_t *tbias, void *state,
                        int32_t *pos, int8_t *output);

/* ================================================================ variables
 * edgec_variables.c: TFLite's resource variables (edgec/ops/variables.py): a variable's int8 values held in the
 * model's persistent state (NAME_reset() writes its initial values); read copies them out, assign writes new ones
 * (through a table of 256 values indexed by value + 128, or as they are when table is NULL). */
void edgec_variable_read_s8(int32_t n, const int8_t *state, int8_t *output);
void edgec_variable_assign_s8(int32_t n, const int8_t *value, const int8_t *table, int8_t *state);

/* ================================================================ resize
 * edgec_resize.c */

/* Linear resize of [in_h][in_w][c] -> [out_h][out_w][c]: idx = y0[out_h], y1[out_h], x0[out_w],
 * x1[out_w]; frac = Q10 weight of y1 [out_h] then of x1 [out_w]. */
typedef struct {
    int32_t in_h, in_w, c, out_h, out_w;
} edgec_resize_params;
void edgec_resize_linear_s8(const edgec_resize_params *p, const int8_t *input, const int32_t *idx,
                            const int32_t *frac, int8_t *output);

/* ================================================================ type conversion
 * edgec_convert.c */

/* Boundary conversions of n values between int8 (zero point zero_point) and int16 (zero point 0), by a Q31
 * multiplier + shift. */
typedef struct {
    int32_t n, zero_point, mult, shift;
} edgec_requantize_params;
void edgec_requantize_s8_s16(const edgec_requantize_params *p, const int8_t *input, int16_t *output);
void edgec_requantize_s16_s8(const edgec_requantize_params *p, const int16_t *input, int8_t *output);

/* TFLite's QUANTIZE between integer types (TFLM's Requantize): n values of input_type in, output_type out (0 int8,
 * 1 uint8, 2 int16, 3 int32), (x - input_zp) by a Q31 multiplier + shift, plus output_zp, clamped to the output type. */
typedef struct {
    int32_t n, input_zp, mult, shift, output_zp, input_type, output_type;
} edgec_quantize8_params;
void edgec_quantize8(const edgec_quantize8_params *p, const void *input, void *output);

/* ================================================================ detection post-processing
 * edgec_detection.c. TFLite's TFLite_Detection_PostProcess custom operator, bit-identical with TFLite Micro's
 * kernel (tensorflow/lite/micro/kernels/detection_postprocess.cc): int8 box encodings [num_boxes][box_stride]
 * (y, x, h, w first) and class scores [num_boxes][score_stride] dequantized to float as TFLM's DEQUANTIZE does,
 * decoded against the anchors [num_boxes][4] (y, x, h, w; float) in double as TFLM does, then fast NMS
 * (regular_nms 0: each anchor's best class, max_classes_per_detection 1) or class-wise regular NMS (regular_nms
 * 1: detections_per_class per class). score_stride - num_classes is 0 or 1 (a background class first).
 * fparams (float): box_scale, score_scale, score_threshold, iou_threshold, y_scale, x_scale, h_scale, w_scale.
 * output (float, TFLite's four outputs one after the other): boxes [max_detections][4] (ymin, xmin, ymax, xmax),
 * classes [max_detections], scores [max_detections], the number of detections [1]; rows after that number are 0.
 * Returns 0, or -1 where a decoded box is empty (ymin >= ymax or xmin >= xmax: TFLM's Invoke fails there). */
typedef struct {
    int32_t num_boxes, box_stride, num_classes, score_stride, max_detections, max_classes_per_detection,
        detections_per_class, regular_nms, box_zp, score_zp;
} edgec_detection_postprocess_params;
int edgec_detection_postprocess_s8(const edgec_detection_postprocess_params *p, const int8_t *boxes,
                                   const int8_t *scores, const float *anchors, const float *fparams, void *scratch,
                                   float *output);
/* decoded boxes and scores, the NMS's candidate lists (4-byte words), then one byte a box */
static inline int32_t edgec_detection_postprocess_s8_get_buffer_size(const edgec_detection_postprocess_params *p)
{
    return 4 * ((8 + p->score_stride) * p->num_boxes + 5 * (p->max_detections + p->num_boxes)) + p->num_boxes;
}

/* ================================================================ non-maximum suppression
 * edgec_nms.c. ONNX NonMaxSuppression with static bounds, bit-identical with ONNX Runtime's CPU kernel: int8 boxes
 * [num_batches][num_boxes][4] (center_point_box 0: two corners y, x, y, x; 1: x centre, y centre, width, height)
 * and scores [num_batches][num_classes][num_boxes] dequantized to float ((float)(q - zp) * scale), then per batch
 * and class the boxes with score > score_threshold (every box when has_score_threshold is 0), best first (equal
 * scores: lower index first), each kept unless its IoU with a kept box of the class is > iou_threshold, at most
 * max_per_class (<= num_boxes) a class. fparams (float): boxes_scale, scores_scale, iou_threshold,
 * score_threshold. output (float): [num_batches * num_classes * max_per_class][3] (batch, class, box) then the
 * number of rows selected; rows after that number are 0. */
typedef struct {
    int32_t num_batches, num_classes, num_boxes, max_per_class, center_point_box, has_score_threshold, boxes_zp,
        scores_zp;
} edgec_nms_params;
void edgec_nms_s8(const edgec_nms_params *p, const int8_t *boxes, const int8_t *scores, const float *fparams,
                  void *scratch, float *output);
/* normalized boxes, areas and one class's scores (floats), two index lists and the kept boxes (int32) */
static inline int32_t edgec_nms_s8_get_buffer_size(const edgec_nms_params *p)
{
    return 4 * (8 * p->num_boxes + p->max_per_class);
}

/* ================================================================ signal library (audio front end)
 * edgec_signal.c. TensorFlow Lite Micro's signal operators (custom ops Signal*), bit-identical with TFLM's kernels
 * (tflite-micro signal/): int16 window and FFT auto-scale, the int16 real FFT (KISS FFT fixed point 16; twiddles
 * [fft_length/2][2] and super_twiddles [fft_length/4][2] made by edgec/ops/signal/kissfft.py; scratch: 2 *
 * fft_length int16), energies (uint32; bins outside [start, end) are 0), the filter bank (uint64 sums), its square
 * root, spectral subtraction (its noise estimate [num_channels] is state kept between invocations), PCAN gain
 * control and the log. */
typedef struct {
    int32_t num_channels, smoothing, one_minus_smoothing, alternate_smoothing, alternate_one_minus_smoothing,
        smoothing_bits, spectral_subtraction_bits, min_signal_remaining, clamping;
} edgec_signal_spectral_subtraction_params;
void edgec_signal_window_s16(int32_t n, int32_t frame, int32_t shift, const int16_t *x, const int16_t *w, int16_t *y);
/* y: the n scaled samples, then the shift (TFLM's second output) */
void edgec_signal_fft_auto_scale_s16(int32_t n, const int16_t *x, int16_t *y);
typedef struct {
    int32_t fft_length, input_length, frames;
} edgec_signal_rfft_params;
void edgec_signal_rfft_s16(const edgec_signal_rfft_params *p, const int16_t *x, const int16_t *twiddles,
                           const int16_t *super_twiddles, int16_t *scratch, int16_t *y);
/* the zero-padded frame, then the complex FFT's result */
static inline int32_t edgec_signal_rfft_s16_get_buffer_size(const edgec_signal_rfft_params *p)
{
    return 4 * p->fft_length;
}
void edgec_signal_energy_s16(int32_t bins, int32_t start, int32_t end, const int16_t *spectrum, uint32_t *y);
void edgec_signal_filter_bank_u32(int32_t channels, const uint32_t *x, const int16_t *weights,
                                  const int16_t *unweights, const int16_t *freq_starts, const int16_t *weight_starts,
                                  const int16_t *widths, uint64_t *y);
void edgec_signal_filter_bank_square_root_u64(int32_t channels, const uint64_t *x, int32_t scale_bits, uint32_t *y);
void edgec_signal_spectral_subtraction_u32(const edgec_signal_spectral_subtraction_params *p, const uint32_t *x,
                                           uint32_t *noise, uint32_t *y);
void edgec_signal_pcan_u32(int32_t channels, const uint32_t *x, const uint32_t *noise, const int16_t *gain_lut,
                           int32_t snr_shift, uint32_t *y);
void edgec_signal_filter_bank_log_u32(int32_t channels, const uint32_t *x, int32_t output_scale, int32_t correction_bits,
                                      int16_t *y);
/* the inverse real FFT (kiss_fftri): p->input_length complex bins a frame in, fft_length samples out; tables from
 * edgec/ops/signal/kissfft.py (inverse_twiddles, inverse_super_twiddles); scratch: fft_length int16 */
void edgec_signal_irfft_s16(const edgec_signal_rfft_params *p, const int16_t *x, const int16_t *twiddles,
                            const int16_t *super_twiddles, int16_t *scratch, int16_t *y);
static inline int32_t edgec_signal_irfft_s16_get_buffer_size(const edgec_signal_rfft_params *p)
{
    return 2 * p->fft_length;
}
/* streaming operators; their state is the caller's (static arrays of the generated code, zero at start):
 * framer: fifo [outer][capacity] and count [outer] (count starts at frame_size - frame_step with prefill),
 * y: the frames then the valid flag; stacker: fifo [capacity] and state {count, first frame seen}, y: the stack
 * then the valid flag; delay: line [outer][delay]; overlap-add: buffer [outer][frame_size] */
typedef struct {
    int32_t outer, n_frames, frame_size, frame_step, capacity;
} edgec_signal_framer_params;
void edgec_signal_framer_s16(const edgec_signal_framer_params *p, const int16_t *x, int16_t *fifo, int32_t *count,
                             int16_t *y);
typedef struct {
    int32_t num_channels, left, right, step, capacity;
} edgec_signal_stacker_params;
void edgec_signal_stacker_s16(const edgec_signal_stacker_params *p, const int16_t *x, int16_t *fifo, int32_t *state,
                              int16_t *y);
void edgec_signal_delay_s16(int32_t outer, int32_t frame, int32_t delay, const int16_t *x, int16_t *line, int16_t *y);
void edgec_signal_overlap_add_s16(int32_t outer, int32_t n_frames, int32_t frame_size, int32_t frame_step,
                                  const int16_t *x, int16_t *buffer, int16_t *y);
/* TFLite's builtin CAST, 1-D STRIDED_SLICE, CONCATENATION around constants and int32 ADD/MUL/DIV/MINIMUM/MAXIMUM
 * with a constant (b_size 1: a scalar), on the front end's plain integers. CAST keeps the low bits (C's
 * conversion); ADD and MUL wrap around; DIV truncates (C's division). Types and operations by code: */
#define EDGEC_SIGNAL_INT8 0
#define EDGEC_SIGNAL_INT16 1
#define EDGEC_SIGNAL_INT32 2
#define EDGEC_SIGNAL_UINT32 3
#define EDGEC_SIGNAL_UINT64 4
#define EDGEC_SIGNAL_ADD 0
#define EDGEC_SIGNAL_MUL 1
#define EDGEC_SIGNAL_DIV 2
#define EDGEC_SIGNAL_MIN 3
#define EDGEC_SIGNAL_MAX 4
void edgec_signal_cast(int32_t n, int32_t from, int32_t to, const void *x, void *y);
void edgec_signal_slice_u32(int32_t begin, int32_t stride, int32_t n, const uint32_t *x, uint32_t *y);
void edgec_signal_concat_u32(int32_t before, int32_t n, int32_t after, const uint32_t *pre, const uint32_t *x,
                             const uint32_t *post, uint32_t *y);
void edgec_signal_arith_s32(int32_t n, int32_t code, int32_t b_size, const int32_t *x, const int32_t *b, int32_t *y);
void edgec_signal_compare_s32(int32_t n, int32_t code, int32_t b_size, const int32_t *x, const int32_t *b, uint8_t *y);
void edgec_signal_select_s32(int32_t n, const uint8_t *cond, const int32_t *x, const int32_t *y, int32_t *out);
/* a training pipeline's MFCC / log-mel front end in fixed point (edgec/ops/signal/mfcc.py): int16 audio
 * [samples] -> int32 Q16 features [frames][coeffs] ([coeffs][frames] when transposed); the tables as mfcc.py
 * makes them; scratch: the FFT's parts, then every frame's log-mel values */
typedef struct {
    int32_t samples, frames, hop, frame_length, fft_length, window_shift, mels, coeffs, power, clamp, value_shift,
        headroom, log_mult, top_db, dct_shift, transposed;
} edgec_signal_mfcc_params;
void edgec_signal_mfcc_s16(const edgec_signal_mfcc_params *p, const int16_t *x, const int16_t *window,
                           const int16_t *mel, const int16_t *mel_lo, const int16_t *mel_hi, const int64_t *eps,
                           const int32_t *log2_unit, const int16_t *dct, const int32_t *cos_q30,
                           const int32_t *sin_q30, int32_t *scratch, int32_t *y);
static inline int32_t edgec_signal_mfcc_s16_get_buffer_size(const edgec_signal_mfcc_params *p)
{
    return 4 * (2 * p->fft_length + p->frames * p->mels);
}

/* ================================================================ float tail
 * edgec_float.c: a DEQUANTIZE inside a .tflite graph and TFLite Micro's float32 kernels after it
 * (edgec/ops/float_tail), and EMBEDDING_LOOKUP (int32 ids into a constant int8 [rows][cols] table: the rows
 * copied, or with `hybrid` dequantized to float32 by `scale`; an id outside the table gives a row of zeros).
 * in_code, out_code: 0 int8, 1 int16, 2 uint8 (QUANTIZE: TFLM's AffineQuantize). edgec_float_binary
 * broadcasts over EDGEC_FLOAT_RANK dimensions: dims of the output, element strides of each input over them (0
 * where it is broadcast). */
#define EDGEC_FLOAT_NEG 0
#define EDGEC_FLOAT_FLOOR 1
#define EDGEC_FLOAT_CEIL 2
#define EDGEC_FLOAT_ROUND 3
#define EDGEC_FLOAT_SQRT 4
#define EDGEC_FLOAT_EXP 5
#define EDGEC_FLOAT_LOG 6
#define EDGEC_FLOAT_SIN 7
#define EDGEC_FLOAT_COS 8
#define EDGEC_FLOAT_SQUARE 9
#define EDGEC_FLOAT_FLOOR_DIV 0
#define EDGEC_FLOAT_FLOOR_MOD 1
#define EDGEC_FLOAT_RANK 6
void edgec_float_dequantize(int32_t n, int32_t in_code, int32_t zero_point, float scale, const void *x, float *y);
void edgec_float_quantize(int32_t n, int32_t out_code, int32_t zero_point, float scale, const float *x, void *y);
void edgec_float_unary(int32_t n, int32_t code, const float *x, float *y);
void edgec_float_binary(int32_t code, const int32_t *dims, const int32_t *a_strides, const int32_t *b_strides,
                        const float *a, const float *b, float *y);
void edgec_float_softmax(int32_t rows, int32_t cols, int32_t log_softmax, float beta, const float *x, float *y);
void edgec_float_l2_pool(int32_t batch, int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                         int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t pad_h, int32_t pad_w,
                         float lo, float hi, const float *x, float *y);
void edgec_float_slice(int32_t outer, int32_t row, int32_t start, int32_t n, const float *x, float *y);
/* Returns how many ids lie outside the table (their rows zeros); the model's invoke then returns
 * EDGEC_ERROR_INDEX, as TFLite Micro's Invoke fails on such an id (EMBEDDING_LOOKUP, GATHER). */
#define EDGEC_ERROR_INDEX (-5)
int edgec_float_embedding_lookup(int32_t ids, int32_t rows, int32_t cols, int32_t hybrid, float scale,
                                 const int32_t *id, const int8_t *table, void *y);
/* edgec_gather.c: TFLite's GATHER of an activation x [batch][outer][axis_size][inner] at run-time int32 indices
 * [batch][coords]; returns how many lie outside the axis (their slices zeros: invoke returns EDGEC_ERROR_INDEX). */
int edgec_gather_s8(int32_t batch, int32_t outer, int32_t axis_size, int32_t coords, int32_t inner,
                    const int8_t *x, const int32_t *ids, int8_t *y);

/* ================================================================ float boundary
 * The float <-> integer quantization at a model's inputs and outputs, exactly as edgec's host reference does it
 * (edgec/fixedpoint/scheme.py quantize_input and dequantize), in IEEE-754 binary32 arithmetic:
 *   q = clamp(round_half_to_even(x / scale) + zero_point, lo, hi)     (x / scale one float32 division)
 *   x = (float)(q - zero_point) * scale                               (one float32 multiplication)
 * Ties (x / scale exactly k + 0.5) go to the even k, as NumPy's round does; NaN quantizes to lo. Bit-exact with
 * the host when float arithmetic is IEEE binary32 (FLT_EVAL_METHOD 0, as on Arm, RISC-V and x86-64; not under
 * -ffast-math, which may turn the division into a multiplication by 1/scale). The generated models call these
 * from NAME_quantize_input() and NAME_dequantize_output(). */
static inline int32_t edgec_round_half_even(float v)
{
    /* |v| <= 2^16 (the callers clamp): v - trunc(v) is exact */
    int32_t i = (int32_t)v;
    float r = v - (float)i;
    if (r > 0.5f || (r == 0.5f && (i & 1))) {
        ++i;
    } else if (r < -0.5f || (r == -0.5f && (i & 1))) {
        --i;
    }
    return i;
}

static inline int32_t edgec_quantize_f32(float x, float scale, int32_t zero_point, int32_t lo, int32_t hi)
{
    float v = x / scale;
    int32_t q;
    if (!(v >= -65536.0f)) v = -65536.0f;   /* NaN too */
    if (v > 65536.0f) v = 65536.0f;
    q = edgec_round_half_even(v) + zero_point;
    return q < lo ? lo : (q > hi ? hi : q);
}

static inline void edgec_quantize_f32_s8(const float *x, int8_t *q, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) q[i] = (int8_t)edgec_quantize_f32(x[i], scale, zero_point, -128, 127);
}

static inline void edgec_quantize_f32_s16(const float *x, int16_t *q, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) q[i] = (int16_t)edgec_quantize_f32(x[i], scale, zero_point, -32768, 32767);
}

/* an int32 input (EMBEDDING_LOOKUP's ids: scale 1, zero point 0): the float value rounded, within +-65536 */
static inline void edgec_quantize_f32_s32(const float *x, int32_t *q, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) q[i] = edgec_quantize_f32(x[i], scale, zero_point, -65536, 65536);
}

static inline void edgec_quantize_f32_u8(const float *x, uint8_t *q, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) q[i] = (uint8_t)edgec_quantize_f32(x[i], scale, zero_point, 0, 255);
}

static inline void edgec_dequantize_u8_f32(const uint8_t *q, float *x, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) x[i] = (float)((int32_t)q[i] - zero_point) * scale;
}

/* a float32 output (the detection post-processing's) is float already: copied */
static inline void edgec_dequantize_f32_f32(const float *q, float *x, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    (void)scale;
    (void)zero_point;
    for (i = 0; i < n; ++i) x[i] = q[i];
}

static inline void edgec_dequantize_s8_f32(const int8_t *q, float *x, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) x[i] = (float)((int32_t)q[i] - zero_point) * scale;
}

/* a bool output (TFLite's comparisons and logical operators: one byte, 0 or 1) */
static inline void edgec_dequantize_b8_f32(const uint8_t *q, float *x, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) x[i] = (float)((int32_t)q[i] - zero_point) * scale;
}

/* an int32 output (TFLite's ARG_MAX / ARG_MIN indices: scale 1, zero point 0) */
static inline void edgec_dequantize_s32_f32(const int32_t *q, float *x, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) x[i] = (float)(q[i] - zero_point) * scale;
}

static inline void edgec_dequantize_s16_f32(const int16_t *q, float *x, int32_t n, float scale, int32_t zero_point)
{
    int32_t i;
    for (i = 0; i < n; ++i) x[i] = (float)((int32_t)q[i] - zero_point) * scale;
}

#ifdef __cplusplus
}
#endif

#endif /* EDGEC_NN_H */
