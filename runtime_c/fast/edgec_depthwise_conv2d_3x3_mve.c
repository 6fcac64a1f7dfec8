/* edgec Helium (MVE) depthwise 3x3 convolution (declared in edgec_nn.h, machinery in edgec_mve_support.h): long
 * rows one channel at a time with 4 output pixels per vector (VMLA by each tap's weight), short rows 4 channels
 * per vector. Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#include <string.h>

#ifdef EDGEC_MVE
/* ---------------------------------------------------------------- depthwise 3x3 */
/* Rows of at least this many outputs go one channel at a time (4 outputs per vector), shorter ones 4 channels
 * at a time (the per-channel set-up would dominate). */
#define EDGEC_MVE_DW_PLANE_COLS 16
/* One channel at a time, 4 output pixels per vector: each tap is one widening load of 4 neighbouring input
 * values and one VMLA by the tap's weight (a scalar), over a rolling strip of 3 input rows of that channel
 * (int8, the zero point in the padding). */

/* n values of one channel, col_step bytes apart, into dst (8 per gather). */
static void edgec_mve_dw_plane_row(const int8_t *src, int32_t col_step, int32_t n, int8_t *dst)
{
    if (col_step <= 65535 / 7) {
        const uint16x8_t offs = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)col_step);
        for (; n > 0; n -= 8, src += 8 * col_step, dst += 8) {
            const mve_pred16_t p = vctp16q((uint32_t)n);
            vstrbq_p_s16(dst, vldrbq_gather_offset_z_s16(src, offs, p), p);
        }
    } else {
        for (; n > 0; --n, src += col_step) *dst++ = *src;
    }
}

/* The constants of one channel: bias, lo, hi and the output offsets of 4 pixels as vectors, then the
 * requantization scalars and the 9 weights (laid out for the assembly below: keep the offsets in step). */
typedef struct {
    int32x4_t bias, lo, hi, offsets;
    int32_t mult, khi, negneg, nshift, w[9];
} edgec_mve_dw_channel;

/* The layer's constants (lo, hi, offsets) once, then each channel's (edgec_mve_dw_channel_setup). */
static void edgec_mve_dw_layer_setup(edgec_mve_dw_channel *k, int32_t lo, int32_t hi, int32_t out_step)
{
    k->lo = vdupq_n_s32(lo);
    k->hi = vdupq_n_s32(hi);
    k->offsets = vreinterpretq_s32_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_step));
}

static void edgec_mve_dw_setup(edgec_mve_dw_channel *k, const int8_t *w, int32_t c, const edgec_rq *q)
{
    int32_t t;
    k->bias = vdupq_n_s32(q->bias);
    k->mult = q->mult;
    k->khi = q->khi;
    k->negneg = -q->neg;
    k->nshift = -q->shift;
    for (t = 0; t < 9; ++t) k->w[t] = w[t * c];
}

/* One output row of one channel from strip rows r0..r2: n outputs, `s` strip columns apart, out_step bytes
 * apart in the output (the offsets in k). Stride 1: 4 outputs per iteration, every constant in a register
 * (gcc 12 spills them); the last block's stores are predicated. */
static EDGEC_NOINLINE void edgec_mve_dw_plane_outputs(const int8_t *r0, const int8_t *r1, const int8_t *r2, int32_t n,
                                                      int32_t s, const edgec_mve_dw_channel *k, int8_t *o,
                                                      int32_t out_step)
{
    if (s == 1) {
        const int32_t nb = (n + 3) >> 2, mult = k->mult, khi = k->khi;
        int32_t t, left = n;
        __asm__ volatile("vldrw.32 q7, [%[k]]\n"
                         "vldrw.32 q6, [%[k], #16]\n"
                         "vldrw.32 q5, [%[k], #32]\n"
                         "vldrw.32 q4, [%[k], #48]\n"
                         "ldr lr, %[nb]\n"
                         "dls lr, lr\n"
                         "1:\n"
                         "vmov q0, q7\n"
#define EDGEC_MVE_DW_TAP(addr, at) "vldrb.s32 q1, " addr "\n" "ldr %[t], [%[k], #" at "]\n" \
                                   "vmla.s32 q0, q1, %[t]\n"
/* columns 1 and 2 first: column 0's loads then step the row pointers (post-increment) */
                         EDGEC_MVE_DW_TAP("[%[r0], #1]", "84") EDGEC_MVE_DW_TAP("[%[r0], #2]", "88")
                         EDGEC_MVE_DW_TAP("[%[r1], #1]", "96") EDGEC_MVE_DW_TAP("[%[r1], #2]", "100")
                         EDGEC_MVE_DW_TAP("[%[r2], #1]", "108") EDGEC_MVE_DW_TAP("[%[r2], #2]", "112")
                         EDGEC_MVE_DW_TAP("[%[r0]], #4", "80") EDGEC_MVE_DW_TAP("[%[r1]], #4", "92")
                         EDGEC_MVE_DW_TAP("[%[r2]], #4", "104")
#undef EDGEC_MVE_DW_TAP
                         "vqrdmulh.s32 q1, q0, %[mult]\n"
                         "vadd.i32 q1, q1, %[khi]\n"
                         "vshr.s32 q2, q0, #31\n"
                         "ldr %[t], [%[k], #72]\n" /* negneg, nshift: reloaded (out of registers) */
                         "vmla.s32 q1, q2, %[t]\n"
                         "ldr %[t], [%[k], #76]\n"
                         "vshl.s32 q1, %[t]\n"
                         "vmax.s32 q1, q1, q6\n"
                         "vmin.s32 q1, q1, q5\n"
                         "vctp.32 %[left]\n"
                         "vpst\n"
                         "vstrbt.32 q1, [%[o], q4]\n"
                         "subs %[left], #4\n"
                         "add %[o], %[ostep]\n"
                         "le lr, 1b\n"
                         : [r0] "+&l"(r0), [r1] "+&l"(r1), [r2] "+&l"(r2), /* widening loads take r0-r7 */
                           [o] "+&r"(o), [t] "=&r"(t), [left] "+&r"(left)
                         : [k] "r"(k), [nb] "m"(nb), [mult] "r"(mult), [khi] "r"(khi), [ostep] "r"(4 * out_step)
                         : "q0", "q1", "q2", "q4", "q5", "q6", "q7", "lr", "memory", "cc");
    } else { /* stride 2: every other strip column (a gather of 4) */
        const uint32x4_t ix = vidupq_n_u32(0u, 2), oo = vreinterpretq_u32_s32(k->offsets);
        const int32_t *w = k->w;
        int32_t ox;
        for (ox = 0; ox < n; ox += 4, r0 += 8, r1 += 8, r2 += 8, o += 4 * out_step) {
            int32x4_t acc = vmlaq_n_s32(k->bias, vldrbq_gather_offset_s32(r0, ix), w[0]), v;
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r0 + 1, ix), w[1]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r0 + 2, ix), w[2]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r1, ix), w[3]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r1 + 1, ix), w[4]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r1 + 2, ix), w[5]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r2, ix), w[6]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r2 + 1, ix), w[7]);
            acc = vmlaq_n_s32(acc, vldrbq_gather_offset_s32(r2 + 2, ix), w[8]);
            v = vaddq_n_s32(vqrdmulhq_n_s32(acc, k->mult), k->khi);
            v = vshlq_r_s32(vmlaq_n_s32(v, vshrq_n_s32(acc, 31), k->negneg), k->nshift);
            vstrbq_scatter_offset_p_s32(o, oo, vminq_s32(vmaxq_s32(v, k->lo), k->hi), vctp32q((uint32_t)(n - ox)));
        }
    }
}

/* Two output rows (o, o2) of one channel at stride 1 from strip rows r0..r3: each weight is loaded once for both
 * rows and each input vector serves both (one less load per tap than two single rows). */
static EDGEC_NOINLINE void edgec_mve_dw_plane_two_rows(const int8_t *r0, const int8_t *r1, const int8_t *r2,
                                                       const int8_t *r3, int32_t n, const edgec_mve_dw_channel *k,
                                                       int8_t *o, int8_t *o2, int32_t out_step)
{
    const int32_t nb = (n + 3) >> 2;
    int32_t t, left = n;
    __asm__ volatile("vldrw.32 q7, [%[k]]\n"
                     "vldrw.32 q6, [%[k], #16]\n"
                     "vldrw.32 q5, [%[k], #32]\n"
                     "vldrw.32 q4, [%[k], #48]\n"
                     "ldr lr, %[nb]\n"
                     "dls lr, lr\n"
                     "1:\n"
                     "vmov q0, q7\n"
                     "vmov q2, q7\n"
/* one kernel column: rows 0..3 (addresses a0..a3) alternate in q1/q3; its weights for ky = 0, 1, 2 at a, b, c;
 * columns 1 and 2 first: column 0's loads then step the row pointers (post-increment) */
#define EDGEC_MVE_DW_COL(a0, a1, a2, a3, a, b, c)                                                 \
    "vldrb.s32 q1, " a0 "\n"                                                                       \
    "ldr %[t], [%[k], #" a "]\n"                                                                   \
    "vldrb.s32 q3, " a1 "\n"                                                                       \
    "vmla.s32 q0, q1, %[t]\n"                                                                      \
    "vmla.s32 q2, q3, %[t]\n"                                                                      \
    "ldr %[t], [%[k], #" b "]\n"                                                                   \
    "vldrb.s32 q1, " a2 "\n"                                                                       \
    "vmla.s32 q0, q3, %[t]\n"                                                                      \
    "vmla.s32 q2, q1, %[t]\n"                                                                      \
    "ldr %[t], [%[k], #" c "]\n"                                                                   \
    "vldrb.s32 q3, " a3 "\n"                                                                       \
    "vmla.s32 q0, q1, %[t]\n"                                                                      \
    "vmla.s32 q2, q3, %[t]\n"
                     EDGEC_MVE_DW_COL("[%[r0], #1]", "[%[r1], #1]", "[%[r2], #1]", "[%[r3], #1]", "84", "96", "108")
                     EDGEC_MVE_DW_COL("[%[r0], #2]", "[%[r1], #2]", "[%[r2], #2]", "[%[r3], #2]", "88", "100", "112")
                     EDGEC_MVE_DW_COL("[%[r0]], #4", "[%[r1]], #4", "[%[r2]], #4", "[%[r3]], #4", "80", "92", "104")
#undef EDGEC_MVE_DW_COL
                     "ldr %[t], [%[k], #64]\n" /* mult */
                     "vqrdmulh.s32 q1, q0, %[t]\n"
                     "vqrdmulh.s32 q3, q2, %[t]\n"
                     "ldr %[t], [%[k], #68]\n" /* khi */
                     "vadd.i32 q1, q1, %[t]\n"
                     "vadd.i32 q3, q3, %[t]\n"
                     "vshr.s32 q0, q0, #31\n"
                     "vshr.s32 q2, q2, #31\n"
                     "ldr %[t], [%[k], #72]\n" /* negneg */
                     "vmla.s32 q1, q0, %[t]\n"
                     "vmla.s32 q3, q2, %[t]\n"
                     "ldr %[t], [%[k], #76]\n" /* nshift */
                     "vshl.s32 q1, %[t]\n"
                     "vshl.s32 q3, %[t]\n"
                     "vmax.s32 q1, q1, q6\n"
                     "vmax.s32 q3, q3, q6\n"
                     "vmin.s32 q1, q1, q5\n"
                     "vmin.s32 q3, q3, q5\n"
                     "vctp.32 %[left]\n"
                     "vpstt\n"
                     "vstrbt.32 q1, [%[o], q4]\n"
                     "vstrbt.32 q3, [%[o2], q4]\n"
                     "subs %[left], #4\n"
                     "add %[o], %[ostep]\n"
                     "add %[o2], %[ostep]\n"
                     "le lr, 1b\n"
                     : [r0] "+&l"(r0), [r1] "+&l"(r1), [r2] "+&l"(r2), [r3] "+&l"(r3), /* widening loads: r0-r7 */
                       [o] "+&r"(o), [o2] "+&r"(o2), [t] "=&r"(t), [left] "+&r"(left)
                     : [k] "r"(k), [nb] "m"(nb), [ostep] "r"(4 * out_step)
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "lr", "memory", "cc");
}

/* Long rows: one channel at a time (above). scratch: 4 strip rows (3 at stride 2) of width = (out_cols - 1) *
 * stride + 3 bytes, plus 16 each (the last block of 4 outputs reads up to 6 columns past them). */
static void edgec_mve_dw_planes(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c = p->c, s = p->stride, rows = p->rows, cols = p->cols, n = p->out_cols, pl = p->pad_left;
    const int32_t width = (n - 1) * s + 3, pitch = width + 16;
    /* strip columns [0, width) are input columns [-pl, width - pl); those in [x0, x1) are inside */
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = cols + pl < width ? (cols + pl < x0 ? x0 : cols + pl) : width;
    const int8_t zp = (int8_t)p->input_zp;
    edgec_mve_dw_channel k;
    int32_t ch, oy, r;
    const int32_t slots = s == 1 ? 4 : 3; /* stride 1: two output rows at a time read 4 input rows */
    edgec_mve_fill(scratch, zp, slots * pitch); /* the padding columns keep it: rows write [x0, x1) only */
    edgec_mve_dw_layer_setup(&k, p->act_min, p->act_max, p->out_col_step);
    for (ch = 0; ch < c; ++ch) {
        int32_t next = -p->pad_top; /* the next input row the strip does not hold yet */
        edgec_mve_dw_setup(&k, (const int8_t *)(const void *)weights + ch, c, rq + ch);
        for (oy = 0; oy < p->out_rows; oy += (s == 1 ? 2 : 1)) {
            const int32_t r0 = oy * s - p->pad_top, two = s == 1 && oy + 1 < p->out_rows;
            int8_t *slot[4];
            for (r = 0; r < slots; ++r) slot[r] = scratch + (((r0 + r) % slots + slots) % slots) * pitch;
            for (r = next > r0 ? next : r0; r < r0 + 3 + two; ++r) {
                int8_t *row = slot[r - r0];
                if (r >= 0 && r < rows) {
                    edgec_mve_dw_plane_row(input + r * p->in_row_step + (x0 - pl) * p->in_col_step + ch,
                                           p->in_col_step, x1 - x0, row + x0);
                } else {
                    edgec_mve_fill(row + x0, zp, x1 - x0);
                }
            }
            next = r0 + 3 + two;
            if (two) {
                int8_t *const o = output + oy * p->out_row_step + ch;
                edgec_mve_dw_plane_two_rows(slot[0], slot[1], slot[2], slot[3], n, &k, o, o + p->out_row_step,
                                            p->out_col_step);
            } else {
                edgec_mve_dw_plane_outputs(slot[0], slot[1], slot[2], n, s, &k, output + oy * p->out_row_step + ch,
                                           p->out_col_step);
            }
        }
    }
}
/* acc + x * w lane by lane (Helium's VMLA takes a scalar factor: a multiply and an add) */
#define EDGEC_MVE_MLA(acc, x, w) vaddq_s32((acc), vmulq_s32((x), (w)))

/* Strip columns [x0, x1) of input row src (4 channels) into a strip row; the others keep the zero point. */
static void edgec_mve_dw_row(const int8_t *src, int32_t col_step, int32_t x0, int32_t x1, edgec_w32 *dst)
{
    int32_t j;
    for (j = x0; j < x1; ++j, src += col_step) {
        uint32_t v;
        memcpy(&v, src, 4); /* one LDR (unaligned words are allowed) */
        dst[j] = v;
    }
}

/* One output row of 4 channels from three strip rows (4 int8 per column), n outputs `s` columns apart. */
static EDGEC_NOINLINE void edgec_mve_dw_outputs(const int8_t *r0, const int8_t *r1, const int8_t *r2, int32_t n,
                                                int32_t s, const int8_t *wt, int32_t c, const edgec_rq *rq,
                                                int8_t *o, int32_t out_step, int32_t lo, int32_t hi)
{
    const int32x4_t w0 = vldrbq_s32(wt), w1 = vldrbq_s32(wt + c), w2 = vldrbq_s32(wt + 2 * c);
    const int32x4_t w3 = vldrbq_s32(wt + 3 * c), w4 = vldrbq_s32(wt + 4 * c), w5 = vldrbq_s32(wt + 5 * c);
    const int32x4_t w6 = vldrbq_s32(wt + 6 * c), w7 = vldrbq_s32(wt + 7 * c), w8 = vldrbq_s32(wt + 8 * c);
    const edgec_mve_rq q = edgec_mve_rq_four(rq);
    const int32x4_t bias = edgec_mve_bias_four(rq), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
    const int32_t step = 4 * s;
    for (; n > 0; --n, r0 += step, r1 += step, r2 += step, o += out_step) {
        int32x4_t acc = EDGEC_MVE_MLA(bias, vldrbq_s32(r0), w0);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r0 + 4), w1);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r0 + 8), w2);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r1), w3);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r1 + 4), w4);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r1 + 8), w5);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r2), w6);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r2 + 4), w7);
        acc = EDGEC_MVE_MLA(acc, vldrbq_s32(r2 + 8), w8);
        vstrbq_s32(o, edgec_mve_requant(acc, q, vlo, vhi));
    }
}

/* Short rows (few output columns, many channels): 4 channels per vector (each tap a widening load, a multiply
 * and an add), for each group of 4 channels over a rolling strip of three input rows (4 int8 per column, the
 * zero point in the padding): 3 * 4 * ((out_cols - 1) * stride + 3) bytes of scratch. */
static void edgec_mve_dw_channel_groups(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                        const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                        int8_t *output)
{
    const int32_t c = p->c, s = p->stride, rows = p->rows, cols = p->cols, n = p->out_cols, pl = p->pad_left;
    const int32_t width = (n - 1) * s + 3;
    /* strip columns [0, width) are input columns [-pl, width - pl); those in [x0, x1) are inside */
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = cols + pl < width ? (cols + pl < x0 ? x0 : cols + pl) : width;
    const uint32_t zp4 = (uint32_t)(uint8_t)(int8_t)p->input_zp * 0x01010101u;
    edgec_w32 *strip = (edgec_w32 *)(void *)scratch;
    int32_t cg, oy, r, j;
    for (cg = 0; cg < c; cg += 4) {
        int32_t next = -p->pad_top; /* the next input row the strip does not hold yet */
        for (j = 0; j < 3 * width; ++j) strip[j] = zp4;
        for (oy = 0; oy < p->out_rows; ++oy) {
            const int32_t r0 = oy * s - p->pad_top;
            for (r = next > r0 ? next : r0; r < r0 + 3; ++r) {
                edgec_w32 *row = strip + ((r % 3 + 3) % 3) * width;
                if (r >= 0 && r < rows) {
                    edgec_mve_dw_row(input + r * p->in_row_step + (x0 - pl) * p->in_col_step + cg, p->in_col_step,
                                     x0, x1, row);
                } else {
                    for (j = x0; j < x1; ++j) row[j] = zp4;
                }
            }
            next = r0 + 3;
            edgec_mve_dw_outputs((const int8_t *)(strip + ((r0 % 3 + 3) % 3) * width),
                                 (const int8_t *)(strip + (((r0 + 1) % 3 + 3) % 3) * width),
                                 (const int8_t *)(strip + (((r0 + 2) % 3 + 3) % 3) * width), n, s,
                                 (const int8_t *)(const void *)weights + cg, c, rq + cg,
                                 output + oy * p->out_row_step + cg, p->out_col_step, p->act_min, p->act_max);
        }
    }
}
/* Weights [3][3][c] int8 in the sweep orientation of edgec_depthwise_conv2d_3x3_params (rows x cols); scratch:
 * the larger of the two strips above. */
void edgec_depthwise_conv2d_3x3_mve_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                       const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                       int8_t *output)
{
    if (p->out_cols < EDGEC_MVE_DW_PLANE_COLS) {
        edgec_mve_dw_channel_groups(p, input, weights, rq, scratch, output);
    } else {
        edgec_mve_dw_planes(p, input, weights, rq, scratch, output);
    }
}
#endif /* EDGEC_MVE */
