/* edgec Helium (MVE) depthwise 3x3 convolution (declared in edgec_nn.h, machinery in edgec_mve_support.h): one
 * channel at a time over a strip of column tiles (each strip column holds 4 consecutive input rows of the channel,
 * 4 bytes), so the 3x3 window of an output pixel is 12 contiguous bytes of the strip: one 16-byte load and one
 * VMLADAVA (9 products of int8) per output, two output rows (stride 1) from the same load (the window's weights
 * placed at rows 0..2 and at rows 1..3 of the tile). Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#ifdef EDGEC_MVE
/* Strip columns [x0, x1) of channel ch, input rows r0..r0 + 3 (rows outside [0, rows) hold the zero point): two
 * columns (8 bytes) per widening gather of the 4 rows, or byte by byte where the gather's 16-bit offsets do not
 * reach (col_step + 3 * row_step > 65535). */
static void edgec_mve_dw_tile_strip(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input, int32_t ch,
                                    int32_t r0, int32_t x0, int32_t x1, int8_t *strip)
{
    const int32_t rs = p->in_row_step, cs = p->in_col_step, pl = p->pad_left;
    const int32_t lo = r0 < 0 ? -r0 : 0, hi = p->rows - r0 < 4 ? p->rows - r0 : 4; /* valid tile rows [lo, hi) */
    const int8_t zp = (int8_t)p->input_zp;
    int8_t *dst = strip + 4 * x0;
    int32_t left = x1 - x0;
    if (left <= 0) return;
    if (hi <= lo) { /* no input row: the zero point */
        edgec_mve_fill(dst, zp, 4 * left);
        return;
    }
    if (cs + 3 * rs <= 65535) {
        /* lane j: column j / 4, tile row j % 4, relative to the first valid row lo */
        const uint16x8_t lane = vidupq_n_u16(0u, 1);
        const uint16x8_t row = vandq_u16(lane, vdupq_n_u16(3u));
        const uint16x8_t offs = vaddq_u16(vmulq_n_u16(vshrq_n_u16(lane, 2), (uint16_t)cs),
                                          vmulq_n_u16(vsubq_n_u16(row, (uint16_t)lo), (uint16_t)rs));
        const int8_t *src = input + (r0 + lo) * rs + (x0 - pl) * cs + ch;
        if (lo == 0 && hi == 4) {
            for (; left > 1; left -= 2, src += 2 * cs, dst += 8) {
                vstrbq_s16(dst, vldrbq_gather_offset_s16(src, offs));
            }
            if (left > 0) { /* the last column alone */
                const mve_pred16_t four = vctp16q(4u);
                vstrbq_p_s16(dst, vldrbq_gather_offset_z_s16(src, offs, four), four);
            }
        } else { /* top or bottom border: the rows outside are the zero point */
            const mve_pred16_t in = vcmpcsq_n_u16(row, (uint16_t)lo) & vcmphiq_n_u16(vdupq_n_u16((uint16_t)hi), 0u) &
                                    vcmpcsq_u16(vdupq_n_u16((uint16_t)(hi - 1)), row);
            const int16x8_t zv = vdupq_n_s16(zp);
            for (; left > 0; left -= 2, src += 2 * cs, dst += 8) {
                const mve_pred16_t keep = vctp16q((uint32_t)(4 * left));
                vstrbq_p_s16(dst, vpselq_s16(vldrbq_gather_offset_z_s16(src, offs, in & keep), zv, in), keep);
            }
        }
        return;
    }
    for (; left > 0; --left, input += 0) { /* far apart: byte by byte */
        const int32_t x = x1 - left - pl;
        int32_t r;
        for (r = 0; r < 4; ++r) {
            *dst++ = r >= lo && r < hi ? input[(r0 + r) * rs + x * cs + ch] : zp;
        }
    }
}

/* The requantization constants of one channel as the assembly below reads them (keep the offsets in step). */
typedef struct {
    int32x4_t ooffs, lo, hi;                          /* bytes 0, 16, 32 */
    int32_t bias, mult, khi, negneg, nshift, ostep; /* bytes 48, 52, ..., 68 */
    const int8_t *w;                                /* byte 72: the channel's 32 weight bytes */
} edgec_mve_dw_k;

/* One block of 4 outputs (x, x + 1, x + 2, x + 3: S bytes apart in the strip from t) of one output row into qA:
 * outputs x and x + 2 first, then x + 1 and x + 3 (a VMOV fills lanes 0 and 2, or 1 and 3); with B, the next
 * output row's too (weights q1) into q7. */
#define EDGEC_MVE_DW_HALF(hi, lo, ofs0, ofs1, B)                                                           \
    "vldrb.u8 q5, [%[t], #" ofs0 "]\n"                                                                     \
    "vmladav.s8 %[a0], q5, q0\n" B("vmladav.s8 %[a2], q5, q1\n")                                          \
    "vldrb.u8 q5, [%[t], #" ofs1 "]\n"                                                                     \
    "vmladav.s8 %[a1], q5, q0\n" B("vmladav.s8 %[a3], q5, q1\n")                                          \
    "vmov q6[" hi "], q6[" lo "], %[a0], %[a1]\n" B("vmov q7[" hi "], q7[" lo "], %[a2], %[a3]\n")
#define EDGEC_MVE_DW_ONE(x) ""
#define EDGEC_MVE_DW_TWO(x) x
/* (((2 * acc * mult + 2^31) >> 32) + khi + (acc < 0 ? neg : 0)) >> shift, clamped (edgec_mve_requant), acc in Q
 * (with the bias added), q5 free */
#define EDGEC_MVE_DW_RQ(Q)                                                                                    \
    "vadd.i32 " Q ", " Q ", %[bias]\n"                                                                      \
    "vshr.s32 q5, " Q ", #31\n"                                                                             \
    "vqrdmulh.s32 " Q ", " Q ", %[mult]\n"                                                                  \
    "vadd.i32 " Q ", " Q ", %[khi]\n"                                                                       \
    "ldr %[a0], [%[k], #60]\n"                                                                              \
    "vmla.s32 " Q ", q5, %[a0]\n"                                                                           \
    "ldr %[a0], [%[k], #64]\n"                                                                              \
    "vshl.s32 " Q ", %[a0]\n"                                                                               \
    "vmax.s32 " Q ", " Q ", q3\n"                                                                           \
    "vmin.s32 " Q ", " Q ", q4\n"
/* The loop over n outputs of one (B: two) output rows; the strip columns S bytes apart (4 * stride), blocks of 4
 * outputs 4 * S apart; the last block's stores predicated. q0, q1: weights, q2: the output offsets of 4 pixels,
 * q3, q4: lo, hi. */
#define EDGEC_MVE_DW_LOOP(S, S2, S3, S4, B)                                                                   \
    __asm__ volatile("ldr %[a0], [%[k], #72]\n"                                                             \
                     "vldrb.u8 q0, [%[a0]]\n"                                                               \
                     "vldrb.u8 q1, [%[a0], #16]\n"                                                          \
                     "vldrw.32 q2, [%[k]]\n"                                                                \
                     "vldrw.32 q3, [%[k], #16]\n"                                                           \
                     "vldrw.32 q4, [%[k], #32]\n"                                                           \
                     "ldr lr, %[nb]\n"                                                                      \
                     "dls lr, lr\n"                                                                         \
                     "1:\n"                                                                                 \
                     EDGEC_MVE_DW_HALF("2", "0", "0", S2, B)                                    \
                     EDGEC_MVE_DW_HALF("3", "1", S, S3, B)                                      \
                     "add %[t], #" S4 "\n"                                                                  \
                     EDGEC_MVE_DW_RQ("q6") B(EDGEC_MVE_DW_RQ("q7"))                                         \
                     "vctp.32 %[left]\n"                                                                    \
                     B("vpst\n" "vstrbt.32 q7, [%[o2], q2]\n")                                              \
                     "vpst\n"                                                                               \
                     "vstrbt.32 q6, [%[o], q2]\n"                                                           \
                     "ldr %[a0], [%[k], #68]\n"                                                             \
                     "subs %[left], #4\n"                                                                   \
                     "add %[o], %[a0]\n"                                                                    \
                     B("add %[o2], %[a0]\n")                                                                \
                     "le lr, 1b\n"                                                                          \
                     : [t] "+&r"(t), [o] "+&r"(o), [o2] "+&r"(o2), [left] "+&r"(left), [a0] "=&Te"(a0),       \
                       [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3)                                    \
                     : [k] "r"(k), [nb] "m"(nb), [bias] "r"(k->bias), [mult] "r"(k->mult), [khi] "r"(k->khi)  \
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "lr", "memory", "cc")

/* Output row o (and o2 if two: the next row, stride 1) of one channel, n outputs from the strip t. */
static EDGEC_NOINLINE void edgec_mve_dw_tile_outputs(const int8_t *t, int32_t n, int32_t s, const edgec_mve_dw_k *k,
                                                     int8_t *o, int8_t *o2, int two)
{
    const int32_t nb = (n + 3) >> 2;
    int32_t left = n, a0, a1, a2, a3;
    if (two) {
        EDGEC_MVE_DW_LOOP("4", "8", "12", "16", EDGEC_MVE_DW_TWO);
    } else if (s == 1) {
        EDGEC_MVE_DW_LOOP("4", "8", "12", "16", EDGEC_MVE_DW_ONE);
    } else {
        EDGEC_MVE_DW_LOOP("8", "16", "24", "32", EDGEC_MVE_DW_ONE);
    }
    (void)a1;
    (void)a2;
    (void)a3;
}
#undef EDGEC_MVE_DW_LOOP
#undef EDGEC_MVE_DW_RQ
#undef EDGEC_MVE_DW_HALF

/* Weights [c][2][16] int8 (edgec/ops/conv/depthwise3x3.py mve_3x3): per channel the window at tile rows 0..2,
 * then at rows 1..3 (byte 4 * kx + ky (+ 1)), zeros elsewhere; the sweep orientation of the params. scratch: the
 * strip, 4 bytes a column (edgec_depthwise_conv2d_3x3_mve_s8_get_buffer_size). */
void edgec_depthwise_conv2d_3x3_mve_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                       const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                       int8_t *output)
{
    const int32_t s = p->stride, n = p->out_cols, pl = p->pad_left;
    const int32_t width = ((n + 3) / 4 * 4 - 1) * s + 4; /* strip columns the loads read */
    /* strip columns [0, width) are input columns [-pl, width - pl); those in [x0, x1) are inside */
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = p->cols + pl < width ? (p->cols + pl < x0 ? x0 : p->cols + pl) : width;
    const int8_t *w = (const int8_t *)(const void *)weights;
    edgec_mve_dw_k k;
    int32_t ch, oy;
    k.ooffs = vreinterpretq_s32_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)p->out_col_step));
    k.lo = vdupq_n_s32(p->act_min);
    k.hi = vdupq_n_s32(p->act_max);
    k.ostep = 4 * p->out_col_step;
    edgec_mve_fill(scratch, (int8_t)p->input_zp, 4 * width); /* the padding columns keep it */
    for (ch = 0; ch < p->c; ++ch, w += 32) {
        const edgec_rq *q = rq + ch;
        k.bias = q->bias;
        k.mult = q->mult;
        k.khi = q->khi;
        k.negneg = -q->neg;
        k.nshift = -q->shift;
        k.w = w;
        for (oy = 0; oy < p->out_rows; oy += s == 1 ? 2 : 1) {
            const int two = s == 1 && oy + 1 < p->out_rows;
            int8_t *o = output + oy * p->out_row_step + ch;
            edgec_mve_dw_tile_strip(p, input, ch, oy * s - p->pad_top, x0, x1, scratch);
            edgec_mve_dw_tile_outputs(scratch, n, s, &k, o, two ? o + p->out_row_step : o, two);
        }
    }
}
#endif /* EDGEC_MVE */
