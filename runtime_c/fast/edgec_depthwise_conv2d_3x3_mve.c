/* edgec Helium (MVE) depthwise 3x3 convolution (declared in edgec_nn.h, machinery in edgec_mve_support.h): one
 * channel at a time over a strip of column tiles (each strip column holds 4 consecutive input rows of the channel,
 * 4 bytes), so the 3x3 window of an output pixel is 12 contiguous bytes of the strip: one 16-byte load and one
 * VMLADAVA (9 products of int8) per output, two output rows (stride 1) from the same load (the window's weights
 * placed at rows 0..2 and at rows 1..3 of the tile). Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#include <stdint.h>

#ifdef EDGEC_MVE
/* The layer's strip constants: the gather offsets of two columns of 4 tile rows (lane j: column j / 4, row
 * j % 4; 16 bits: only where col_step + 3 * row_step < 65536, else `far`) and the zero point. */
typedef struct {
    uint16x8_t offs;
    int16x8_t zv;
    int32_t far, pairs, odd; /* pairs, odd: of the strip's columns inside the input */
} edgec_mve_dw_strip;

/* The predicate of the 16-bit lanes of two columns whose tile rows are in [lo, hi) (0 <= lo < hi <= 4), from a table:
 * 2 bits a lane (a byte a row), for lane j: column j / 4, row j % 4. */
static const uint16_t edgec_mve_dw_rows_table[4][4] = { /* [lo][hi - lo - 1] */
    {0x0303, 0x0F0F, 0x3F3F, 0xFFFF}, {0x0C0C, 0x3C3C, 0xFCFC, 0}, {0x3030, 0xF0F0, 0, 0}, {0xC0C0, 0, 0, 0}};

EDGEC_INLINE mve_pred16_t edgec_mve_dw_rows(int32_t lo, int32_t hi)
{
    return (mve_pred16_t)edgec_mve_dw_rows_table[lo][hi - lo - 1];
}

/* Strip columns [x0, x1) of channel ch into dst (the strip's column x0) from input rows r0..r0 + 3, the same for
 * every channel: `in`, the lanes of the tile rows inside the input (all, none, or some: edgec_mve_dw_rows; rows
 * outside hold the zero point), and at, the input address of column x0's row r0 of the channel (outside the input
 * where r0 < 0: the lanes of such rows load nothing). Two columns (8 bytes) per widening gather of the 4 rows, or
 * byte by byte where the gather's 16-bit offsets do not reach. */
static void edgec_mve_dw_tile_strip(const edgec_depthwise_conv2d_3x3_params *p, const edgec_mve_dw_strip *g,
                                    uintptr_t at, mve_pred16_t in, int32_t r0, int32_t x0, const int8_t *input,
                                    int32_t ch, int8_t *dst)
{
    const int32_t cs2 = 2 * p->in_col_step;
    const int8_t *src = (const int8_t *)at;
    int32_t n;
    if (g->far) { /* far apart: byte by byte */
        const int32_t rs = p->in_row_step, cs = p->in_col_step;
        const int32_t lo = r0 < 0 ? -r0 : 0, hi = p->rows - r0 < 4 ? p->rows - r0 : 4; /* tile rows [lo, hi) inside */
        int32_t x, r;
        for (x = x0 - p->pad_left; x < x0 - p->pad_left + 2 * g->pairs + g->odd; ++x) {
            for (r = 0; r < 4; ++r) {
                *dst++ = r >= lo && r < hi ? input[(r0 + r) * rs + x * cs + ch] : (int8_t)p->input_zp;
            }
        }
        return;
    }
    if (in == 0xFFFFu) {
        for (n = g->pairs; n > 0; --n, src += cs2, dst += 8) vstrbq_s16(dst, vldrbq_gather_offset_s16(src, g->offs));
        if (g->odd) vstrbq_p_s16(dst, vldrbq_gather_offset_z_s16(src, g->offs, vctp16q(4u)), vctp16q(4u));
    } else if (in == 0u) { /* no input row: the zero point */
        edgec_mve_fill(dst, (int8_t)p->input_zp, 8 * g->pairs + 4 * g->odd);
    } else {
        if (g->pairs > 0) { /* the predicate set once: 6 instructions a pair of columns (gcc: 7) */
            __asm__ volatile("vmsr p0, %[in]\n"
                             "dls lr, %[n]\n"
                             "1:\n"
                             "vpst\n"
                             "vldrbt.s16 q0, [%[src], %q[offs]]\n"
                             "vpsel q0, q0, %q[zv]\n"
                             "add %[src], %[cs2]\n"
                             "vstrb.16 q0, [%[dst]], #8\n"
                             "le lr, 1b\n"
                             : [src] "+r"(src), [dst] "+r"(dst)
                             : [in] "r"((uint32_t)in), [n] "r"(g->pairs), [cs2] "r"(cs2), [offs] "w"(g->offs),
                               [zv] "w"(g->zv)
                             : "q0", "lr", "memory");
        }
        if (g->odd) { /* the last column alone */
            const mve_pred16_t four = vctp16q(4u);
            vstrbq_p_s16(dst, vpselq_s16(vldrbq_gather_offset_z_s16(src, g->offs, in & four), g->zv, in), four);
        }
    }
}

/* The layer's and one channel's constants as the assembly below reads them (keep the offsets in step). */
typedef struct {
    int32x4_t ooffs;                                /* byte 0 */
    int32_t lo, hi;                                 /* bytes 16, 20: the activation range */
    int32_t bias, mult, khi, negneg, nshift, ostep; /* bytes 24, 28, ..., 44 */
    const int8_t *w;                                /* byte 48: the byte before the channel's 16 weights */
    int32_t n, nb;        /* bytes 52, 56: outputs a row, blocks of 4 a row */
    int32_t tstep, orow;  /* bytes 60, 64: from the strip's end of one step to the next step's, from o's */
    int32_t steps;        /* byte 68: steps left (the assembly counts it down) */
} edgec_mve_dw_k;

/* One block of 4 outputs (x, x + 1, x + 2, x + 3: S bytes apart in the strip from t) of one output row into q6:
 * outputs x and x + 2 first, then x + 1 and x + 3 (VMOV Q[2], Q[0], Rt, Rt2 puts Rt in lane 0 and Rt2 in lane 2:
 * QEMU's MVE, and clang's code for a vector of four registers); with B, the next output row's too (weights q1)
 * into q7. */
#define EDGEC_MVE_DW_HALF(hi, lo, ofs0, ofs1, B)                                                           \
    "vldrb.u8 q5, [%[t], #" ofs0 "]\n"                                                                     \
    "vmladav.s8 %[a0], q5, q0\n" B("vmladav.s8 %[a2], q5, q1\n")                                          \
    "vldrb.u8 q5, [%[t], #" ofs1 "]\n"                                                                     \
    "vmladav.s8 %[a1], q5, q0\n" B("vmladav.s8 %[a3], q5, q1\n")                                          \
    "vmov q6[" hi "], q6[" lo "], %[a0], %[a1]\n" B("vmov q7[" hi "], q7[" lo "], %[a2], %[a3]\n")
#define EDGEC_MVE_DW_ONE(x) ""
#define EDGEC_MVE_DW_TWO(x) x
/* (((2 * acc * mult + 2^31) >> 32) + khi + (acc < 0 ? neg : 0)) >> shift, clamped (edgec_mve_requant), acc in q6
 * (with B, q7 too; the bias added here), q5 free; N: EDGEC_MVE_DW_ANY (the record's neg loaded, its correction a
 * VMLA) or EDGEC_MVE_DW_ALL (neg -1: the correction acc >> 31 added, no load: an instruction a block fewer) */
#define EDGEC_MVE_DW_ANY(any, all) any
#define EDGEC_MVE_DW_ALL(any, all) all
#define EDGEC_MVE_DW_RQ(B, N)                                                                                 \
    "vadd.i32 q6, q6, %[bias]\n" B("vadd.i32 q7, q7, %[bias]\n")                                            \
    "vshr.s32 q5, q6, #31\n"                                                                                \
    "vqrdmulh.s32 q6, q6, %[mult]\n"                                                                        \
    "vadd.i32 q6, q6, %[khi]\n"                                                                             \
    N("ldr %[a0], [%[k], #36]\n" "vmla.s32 q6, q5, %[a0]\n", "vadd.i32 q6, q6, q5\n")                     \
    B("vshr.s32 q5, q7, #31\n" "vqrdmulh.s32 q7, q7, %[mult]\n" "vadd.i32 q7, q7, %[khi]\n"                 \
      N("vmla.s32 q7, q5, %[a0]\n", "vadd.i32 q7, q7, q5\n"))                                             \
    B("ldr %[a0], [%[k], #40]\n" "vshl.s32 q6, %[a0]\n" "vshl.s32 q7, %[a0]\n")                              \
    EDGEC_MVE_DW_NOT(B)("vshl.s32 q6, %[a2]\n") /* one row: the shift held in a2 (a2, a3 are free there) */   \
    "vmax.s32 q6, q6, q3\n" B("vmax.s32 q7, q7, q3\n")                                                      \
    "vmin.s32 q6, q6, q4\n" B("vmin.s32 q7, q7, q4\n")
/* k->steps steps of one channel from the strip t (a step's tiles 4 * width bytes apart): n outputs of one (B:
 * two) output rows a step, the strip columns S bytes apart (4 * stride), blocks of 4 outputs 4 * S apart, the
 * last block's stores predicated. q0, q1: weights, q2: the output offsets of 4 pixels, q3, q4: lo, hi. */
#define EDGEC_MVE_DW_LOOP(S, S2, S3, S4, B, N)                                                                \
    __asm__ volatile("ldr %[a0], [%[k], #48]\n"                                                             \
                     "vldrb.u8 q0, [%[a0], #1]\n"                                                           \
                     "vldrb.u8 q1, [%[a0]]\n"                                                               \
                     "vldrw.32 q2, [%[k]]\n"                                                                \
                     "ldr %[a1], [%[k], #16]\n"                                                             \
                     "vdup.32 q3, %[a1]\n"                                                                  \
                     "ldr %[a1], [%[k], #20]\n"                                                             \
                     "vdup.32 q4, %[a1]\n"                                                                  \
                     EDGEC_MVE_DW_NOT(B)("ldr %[a2], [%[k], #40]\n" "ldr %[a3], [%[k], #44]\n")             \
                     "2:\n"                                                                                 \
                     "ldr %[left], [%[k], #52]\n"                                                           \
                     "ldr lr, [%[k], #56]\n"                                                                \
                     "dls lr, lr\n"                                                                         \
                     "1:\n"                                                                                 \
                     EDGEC_MVE_DW_HALF("2", "0", "0", S2, B)                                                \
                     EDGEC_MVE_DW_HALF("3", "1", S, S3, B)                                                  \
                     "add %[t], #" S4 "\n"                                                                  \
                     EDGEC_MVE_DW_RQ(B, N)                                                                  \
                     "vctp.32 %[left]\n"                                                                    \
                     B("vpstt\n" "vstrbt.32 q7, [%[o2], q2]\n")                                              \
                     EDGEC_MVE_DW_NOT(B)("vpst\n")                                                          \
                     "vstrbt.32 q6, [%[o], q2]\n"                                                           \
                     B("ldr %[a0], [%[k], #44]\n")                                                          \
                     "subs %[left], #4\n"                                                                   \
                     B("add %[o], %[a0]\n" "add %[o2], %[a0]\n")                                           \
                     EDGEC_MVE_DW_NOT(B)("add %[o], %[a3]\n") /* one row: the step held in a3 */            \
                     "le lr, 1b\n"                                                                          \
                     "ldr %[a0], [%[k], #60]\n"                                                             \
                     "add %[t], %[a0]\n"                                                                    \
                     "ldr %[a0], [%[k], #64]\n"                                                             \
                     "add %[o], %[a0]\n"                                                                    \
                     B("add %[o2], %[a0]\n")                                                                \
                     "ldr %[a0], [%[k], #68]\n"                                                             \
                     "subs %[a0], #1\n"                                                                     \
                     "str %[a0], [%[k], #68]\n"                                                             \
                     "bne 2b\n"                                                                             \
                     : [t] "+&r"(t), [o] "+&r"(o), [o2] "+&r"(o2), [left] "=&r"(left), [a0] "=&Te"(a0),       \
                       [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3)                                    \
                     : [k] "r"(k), [bias] "r"(k->bias), [mult] "r"(k->mult), [khi] "r"(k->khi)                \
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "lr", "memory", "cc")
#define EDGEC_MVE_DW_NOT_EDGEC_MVE_DW_ONE(x) x
#define EDGEC_MVE_DW_NOT_EDGEC_MVE_DW_TWO(x) ""
#define EDGEC_MVE_DW_NOT(B) EDGEC_MVE_DW_NOT_##B

/* k->steps steps of one channel from the strip t: output rows o and o2 (two: stride 1, the next row), or one
 * output row a step. */
static EDGEC_NOINLINE void edgec_mve_dw_tile_outputs(const int8_t *t, int32_t s, edgec_mve_dw_k *k, int8_t *o,
                                                     int8_t *o2, int two)
{
    int32_t left, a0, a1, a2, a3;
    if (k->negneg == 1) { /* the record's neg -1 (the usual case) */
        if (two) {
            EDGEC_MVE_DW_LOOP("4", "8", "12", "16", EDGEC_MVE_DW_TWO, EDGEC_MVE_DW_ALL);
        } else if (s == 1) {
            EDGEC_MVE_DW_LOOP("4", "8", "12", "16", EDGEC_MVE_DW_ONE, EDGEC_MVE_DW_ALL);
        } else {
            EDGEC_MVE_DW_LOOP("8", "16", "24", "32", EDGEC_MVE_DW_ONE, EDGEC_MVE_DW_ALL);
        }
    } else if (two) {
        EDGEC_MVE_DW_LOOP("4", "8", "12", "16", EDGEC_MVE_DW_TWO, EDGEC_MVE_DW_ANY);
    } else if (s == 1) {
        EDGEC_MVE_DW_LOOP("4", "8", "12", "16", EDGEC_MVE_DW_ONE, EDGEC_MVE_DW_ANY);
    } else {
        EDGEC_MVE_DW_LOOP("8", "16", "24", "32", EDGEC_MVE_DW_ONE, EDGEC_MVE_DW_ANY);
    }
    (void)left;
    (void)a1;
    (void)a2;
    (void)a3;
}
#undef EDGEC_MVE_DW_NOT
#undef EDGEC_MVE_DW_NOT_EDGEC_MVE_DW_ONE
#undef EDGEC_MVE_DW_NOT_EDGEC_MVE_DW_TWO
#undef EDGEC_MVE_DW_LOOP
#undef EDGEC_MVE_DW_RQ
#undef EDGEC_MVE_DW_ANY
#undef EDGEC_MVE_DW_ALL
#undef EDGEC_MVE_DW_HALF

/* Steps a strip holds at most (the scratch: edgec_depthwise_conv2d_3x3_mve_s8_get_buffer_size). */
#define EDGEC_MVE_DW_STEPS 4

/* Weights: a zero byte, then [c][16] int8 (edgec/ops/conv/depthwise3x3.py mve_3x3): per channel the window at
 * tile rows 0..2 (byte 4 * kx + ky), zeros elsewhere, in the sweep orientation of the params; loaded one byte
 * early, the window at rows 1..3. Step j reads
 * input rows 2j - pad_top .. + 3 and writes output rows 2j, 2j + 1 (stride 1) or row j (stride 2); up to
 * EDGEC_MVE_DW_STEPS steps' strips are built, then computed in one call. scratch: the strips, 4 bytes a column. */
void edgec_depthwise_conv2d_3x3_mve_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                       const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                       int8_t *output)
{
    const int32_t s = p->stride, n = p->out_cols, pl = p->pad_left, rs2 = 2 * p->in_row_step;
    const int32_t width = ((n + 3) / 4 * 4 - 1) * s + 4; /* strip columns the loads read */
    /* strip columns [0, width) are input columns [-pl, width - pl); those in [x0, x1) are inside */
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = p->cols + pl < width ? (p->cols + pl < x0 ? x0 : p->cols + pl) : width;
    const uint16x8_t lane = vidupq_n_u16(0u, 1);
    const int32_t rows_per_step = s == 1 ? 2 : 1, steps = (p->out_rows + rows_per_step - 1) / rows_per_step;
    /* stride 1 with an odd number of output rows: the last step has one */
    const int32_t full = s == 1 && (p->out_rows & 1) ? steps - 1 : steps;
    const int32_t chunk = steps < EDGEC_MVE_DW_STEPS ? steps : EDGEC_MVE_DW_STEPS;
    const int8_t *w = (const int8_t *)(const void *)weights;
    edgec_mve_dw_k k;
    edgec_mve_dw_strip g;
    int32_t ch, j, i;
    g.offs = vaddq_u16(vmulq_n_u16(vshrq_n_u16(lane, 2), (uint16_t)p->in_col_step),
                       vmulq_n_u16(vandq_u16(lane, vdupq_n_u16(3u)), (uint16_t)p->in_row_step));
    g.zv = vdupq_n_s16((int16_t)p->input_zp);
    g.far = p->in_col_step + 3 * p->in_row_step > 65535;
    k.ooffs = vreinterpretq_s32_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)p->out_col_step));
    k.lo = p->act_min;
    k.hi = p->act_max;
    k.ostep = 4 * p->out_col_step;
    k.n = n;
    k.nb = (n + 3) / 4;
    k.tstep = 4 * width - k.nb * 16 * s;
    k.orow = rows_per_step * p->out_row_step - k.nb * k.ostep;
    g.pairs = (x1 - x0) / 2;
    g.odd = (x1 - x0) % 2;
    edgec_mve_fill(scratch, (int8_t)p->input_zp, chunk * 4 * width); /* the padding columns keep it */
    for (j = 0; j < steps; j += k.steps) {
        /* up to chunk steps alike: all full (two rows at stride 1), or the odd last one alone; their strips' rows
         * are the same for every channel */
        const int32_t end = j < full ? (full - j < chunk ? full : j + chunk) : steps;
        int8_t *o = output + j * rows_per_step * p->out_row_step;
        const int32_t r0j = 2 * j - p->pad_top; /* step i reads input rows from r0j + 2 * (i - j) */
        const uintptr_t at0 = (uintptr_t)input + (uintptr_t)(intptr_t)(r0j * p->in_row_step +
                                                                        (x0 - pl) * p->in_col_step);
        mve_pred16_t in[EDGEC_MVE_DW_STEPS];
        for (i = 0; i < end - j; ++i) {
            const int32_t r0 = r0j + 2 * i;
            const int32_t lo = r0 < 0 ? -r0 : 0, hi = p->rows - r0 < 4 ? p->rows - r0 : 4; /* tile rows inside */
            in[i] = hi <= lo ? 0u : lo == 0 && hi == 4 ? 0xFFFFu : edgec_mve_dw_rows(lo, hi);
        }
        for (ch = 0; ch < p->c; ++ch) {
            const edgec_rq *q = rq + ch;
            k.bias = q->bias;
            k.mult = q->mult;
            k.khi = q->khi;
            k.negneg = -q->neg;
            k.nshift = -q->shift;
            k.w = w + 16 * ch;
            if (x1 > x0) {
                uintptr_t at = at0 + (uintptr_t)ch;
                int8_t *dst = scratch + 4 * x0;
                for (i = 0; i < end - j; ++i, at += rs2, dst += 4 * width) {
                    edgec_mve_dw_tile_strip(p, &g, at, in[i], r0j + 2 * i, x0, input, ch, dst);
                }
            }
            k.steps = end - j;
            edgec_mve_dw_tile_outputs(scratch, s, &k, o + ch, o + ch + p->out_row_step, s == 1 && j < full);
        }
        k.steps = end - j; /* counted down to 0 by the assembly */
    }
}
#endif /* EDGEC_MVE */
