/* Depthwise 3x3 on small images (`--optimize speed`): edgec_depthwise_conv2d_3x3_small_s8.
 *
 * The generic kernel and its fused variant sweep a rolling window of three input rows, so every output row of every
 * channel pays for a window rotation, a call and its weights' setup; on the 6x6 and 3x3 images of a MobileNet's last
 * layers that is most of the work. Here the 4 channels of a group are widened to int16 once, the whole padded image,
 * as records of four input rows:
 *     tile[m][j][k] = (x[2m], x[2m + 1]), (x[2m + 2], x[2m + 3])     input rows 2m - pad_top .. of column
 *                                                                    j - pad_left, channel cg + k (the zero point
 *                                                                    outside the image), 32 bytes a column
 * and each channel then runs all its outputs with its weights in registers, per kernel column kx the doubled int16
 * pairs ab[kx] = (w[0][kx], w[1][kx]) and bc[kx] = (w[1][kx], w[2][kx]), one LDRD a kernel column. With stride 1
 * record m gives output rows 2m and 2m + 1:
 *     out[2m]     += SMLAD((x0, x1), ab) + x2 * w[2]     (x2: the low half of (x2, x3); w[2]: the high one of bc)
 *     out[2m + 1] += SMLAD((x2, x3), bc) + w[0] * x1     (w[0]: the low half of ab; x1: the high one of (x0, x1))
 * and with stride 2 it gives output row m by the first line.
 *
 * Weights (small_3x3 in edgec/ops/conv/depthwise3x3.py): per channel 7 words ab[0..2], bc[0..2], 2 * bias, the
 * generic lowering's doubled weights (the sums are the doubled ones the requantization records take).
 * Scratch: the records and a spare row on either side, 32 * ((out_cols - 1) * stride + 3) * (records + 2) bytes
 * with records = (out_rows * stride + 1) / 2: (out_rows + 1) / 2 for stride 1, out_rows for stride 2
 * (edgec_depthwise_conv2d_3x3_small_s8_get_buffer_size). */
#include "edgec_fast_support.h"

/* record rows of the tile */
static int32_t edgec_dws_records(const edgec_depthwise_conv2d_3x3_params *p)
{
    return (p->out_rows * p->stride + 1) >> 1;
}

#if !(defined(EDGEC_DSP_NATIVE) && defined(__thumb2__)) /* the Arm build widens with edgec_dws_tile_s */
#ifdef EDGEC_DSP_NATIVE
/* (low half of a, low half of b) and (high half of a, high half of b) in one instruction each */
EDGEC_INLINE uint32_t edgec_dws_lows(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
EDGEC_INLINE uint32_t edgec_dws_highs(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
#else
#define edgec_dws_lows(a, b) (((a) & 0xffffu) | (b) << 16)
#define edgec_dws_highs(a, b) ((a) >> 16 | ((b) & 0xffff0000u))
#endif

/* The words (x[r], x[r + 1]) of 4 channels, n columns, from input rows a and b (a row outside the image: a
 * zero-point word, stepping 0), into word 0 of each column record at lo and word 1 of each at hi. */
static EDGEC_NOINLINE void edgec_dws_widen(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int32_t n,
                                           edgec_w32 *lo, edgec_w32 *hi)
{
    for (; n > 0; --n, a += sa, b += sb, lo += 8, hi += 8) {
        const uint32_t va = *(const edgec_w32 *)(const void *)a, vb = *(const edgec_w32 *)(const void *)b;
        uint32_t w;
#ifdef EDGEC_DSP
        const uint32_t ea = E_SXTB16(va), eb = E_SXTB16(vb);           /* channels 0, 2 */
        const uint32_t oa = E_SXTB16_ROR8(va), ob = E_SXTB16_ROR8(vb); /* channels 1, 3 */
        w = edgec_dws_lows(ea, eb);
        lo[0] = hi[1] = w;
        w = edgec_dws_lows(oa, ob);
        lo[2] = hi[3] = w;
        w = edgec_dws_highs(ea, eb);
        lo[4] = hi[5] = w;
        w = edgec_dws_highs(oa, ob);
        lo[6] = hi[7] = w;
#else
        int32_t k;
        for (k = 0; k < 4; ++k) {
            w = (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(va >> 8 * k) |
                (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(vb >> 8 * k) << 16;
            lo[2 * k] = hi[2 * k + 1] = w;
        }
#endif
    }
}

#endif

/* tile columns [x0, x1) hold the image, the others its zero point */
#define EDGEC_DWS_COLUMNS(p, width)                                                                \
    const int32_t x0 = (p)->pad_left < (width) ? (p)->pad_left : (width);                          \
    const int32_t x1 = (p)->cols + (p)->pad_left < (width)                                         \
                           ? ((p)->cols + (p)->pad_left < x0 ? x0 : (p)->cols + (p)->pad_left)     \
                           : (width)

/* The padded columns of record rows 0 .. records - 1, once for all channel groups: the widening writes only
 * columns [x0, x1) (of these rows and of the spare rows), so they keep the zero point from group to group. */
static void edgec_dws_pad(const edgec_depthwise_conv2d_3x3_params *p, edgec_w32 *tile)
{
    const int32_t width = (p->out_cols - 1) * p->stride + 3, records = edgec_dws_records(p);
    const uint32_t zz = ((uint32_t)(uint16_t)(int16_t)p->input_zp) * 0x00010001u;
    int32_t i, j;
    EDGEC_DWS_COLUMNS(p, width);
    for (i = 0; i < records; ++i) {
        edgec_w32 *t = tile + 8 * width * i;
        for (j = 0; j < 8 * x0; ++j) t[j] = zz;
        for (j = 8 * x1; j < 8 * width; ++j) t[j] = zz;
    }
}

#if !(defined(EDGEC_DSP_NATIVE) && defined(__thumb2__))
/* The tile of channels cg .. cg + 3 (input: channel cg's first byte; the padded columns set by edgec_dws_pad):
 * record rows 0 .. records - 1 from `tile` on, a spare row on either side (the halves no record reads); pair i of
 * input rows is word 0 of record i and word 1 of record i - 1 */
static void edgec_dws_tile(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input, edgec_w32 *tile)
{
    const int32_t width = (p->out_cols - 1) * p->stride + 3, records = edgec_dws_records(p), cs = p->in_col_step;
    const uint32_t z = (uint32_t)(uint8_t)p->input_zp * 0x01010101u; /* 4 zero-point bytes */
    const int8_t *const pad = (const int8_t *)(const void *)&z;
    int32_t i;
    EDGEC_DWS_COLUMNS(p, width);
    for (i = 0; i <= records; ++i) {
        const int32_t r = 2 * i - p->pad_top;
        const int in_a = r >= 0 && r < p->rows, in_b = r + 1 >= 0 && r + 1 < p->rows;
        const int8_t *a = in_a ? input + r * p->in_row_step + (x0 - p->pad_left) * cs : pad;
        const int8_t *b = in_b ? input + (r + 1) * p->in_row_step + (x0 - p->pad_left) * cs : pad;
        edgec_dws_widen(a, in_a ? cs : 0, b, in_b ? cs : 0, x1 - x0, tile + 8 * (width * i + x0),
                        tile + 8 * (width * (i - 1) + x0));
    }
}
#endif

/* the requantized doubled sum t, clamped by `clamp` of v_, stored at *o; `fix` the correction for a negative t */
#define EDGEC_DWS_STORE(t, o, clamp, fix)                                                          \
    do {                                                                                           \
        const int32_t v_ = (E_SMMLAR((t), mult, khi) + fix(t)) >> shift;                           \
        *(o) = (int8_t)(clamp);                                                                    \
    } while (0)
#define EDGEC_DWS_NEG(t) ((t) >> 31)             /* the record's neg is -1 (the usual case: shift > 0) */
#define EDGEC_DWS_ANYNEG(t) ((t) >> 31 & neg)    /* the record's own */
#define EDGEC_DWS_FULL EDGEC_SAT8(v_)            /* the activation range is all of int8 */
#define EDGEC_DWS_CLAMP (v_ < lo ? lo : (v_ > hi ? hi : v_))

#ifdef EDGEC_DSP
#define EDGEC_DWS_WEIGHTS                                                                          \
    const uint32_t ab0 = wk[0], ab1 = wk[1], ab2 = wk[2], bc0 = wk[3], bc1 = wk[4], bc2 = wk[5];   \
    uint32_t a_, b_;
/* kernel column kx (its record at x + 8 kx words) into output row 2m (t0) and, stride 1, 2m + 1 (t1) */
#define EDGEC_DWS_TOP(kx) (t0 = E_SMLABT(b_, bc##kx, E_SMLAD(a_, ab##kx, t0)))
#define EDGEC_DWS_LOW(kx) (t1 = E_SMLABT(ab##kx, a_, E_SMLAD(b_, bc##kx, t1)))
#define EDGEC_DWS_SUM2                                                                             \
    do {                                                                                           \
        E_LDRD(a_, b_, x, 0);                                                                      \
        EDGEC_DWS_TOP(0);                                                                          \
        EDGEC_DWS_LOW(0);                                                                          \
        E_LDRD(a_, b_, x, 8);                                                                      \
        EDGEC_DWS_TOP(1);                                                                          \
        EDGEC_DWS_LOW(1);                                                                          \
        E_LDRD(a_, b_, x, 16);                                                                     \
        EDGEC_DWS_TOP(2);                                                                          \
        EDGEC_DWS_LOW(2);                                                                          \
    } while (0)
#define EDGEC_DWS_SUM1                                                                             \
    do {                                                                                           \
        E_LDRD(a_, b_, x, 0);                                                                      \
        EDGEC_DWS_TOP(0);                                                                          \
        E_LDRD(a_, b_, x, 8);                                                                      \
        EDGEC_DWS_TOP(1);                                                                          \
        E_LDRD(a_, b_, x, 16);                                                                     \
        EDGEC_DWS_TOP(2);                                                                          \
    } while (0)
/* two horizontally adjacent outputs of one row (t0 at x, t1 `8 * stride` words on: stride 1 shares kernel columns 1
 * and 2, stride 2 column 2) */
#define EDGEC_DWS_RIGHT(kx) (t1 = E_SMLABT(b_, bc##kx, E_SMLAD(a_, ab##kx, t1)))
#define EDGEC_DWS_ROW2_S1                                                                          \
    do {                                                                                           \
        E_LDRD(a_, b_, x, 0);                                                                      \
        EDGEC_DWS_TOP(0);                                                                          \
        E_LDRD(a_, b_, x, 8);                                                                      \
        EDGEC_DWS_TOP(1);                                                                          \
        EDGEC_DWS_RIGHT(0);                                                                        \
        E_LDRD(a_, b_, x, 16);                                                                     \
        EDGEC_DWS_TOP(2);                                                                          \
        EDGEC_DWS_RIGHT(1);                                                                        \
        E_LDRD(a_, b_, x, 24);                                                                     \
        EDGEC_DWS_RIGHT(2);                                                                        \
    } while (0)
#define EDGEC_DWS_ROW2_S2                                                                          \
    do {                                                                                           \
        E_LDRD(a_, b_, x, 0);                                                                      \
        EDGEC_DWS_TOP(0);                                                                          \
        E_LDRD(a_, b_, x, 8);                                                                      \
        EDGEC_DWS_TOP(1);                                                                          \
        E_LDRD(a_, b_, x, 16);                                                                     \
        EDGEC_DWS_TOP(2);                                                                          \
        EDGEC_DWS_RIGHT(0);                                                                        \
        E_LDRD(a_, b_, x, 24);                                                                     \
        EDGEC_DWS_RIGHT(1);                                                                        \
        E_LDRD(a_, b_, x, 32);                                                                     \
        EDGEC_DWS_RIGHT(2);                                                                        \
    } while (0)
#else
#define EDGEC_DWS_WEIGHTS                                                                          \
    const edgec_h16 *h_ = (const edgec_h16 *)(const void *)wk; /* ab0 ab1 ab2 bc0 bc1 bc2 as int16 */ \
    const int32_t w00 = h_[0], w10 = h_[1], w01 = h_[2], w11 = h_[3], w02 = h_[4], w12 = h_[5];    \
    const int32_t w20 = h_[7], w21 = h_[9], w22 = h_[11];
/* output row 2m + d of one output column from its kernel columns' records at x */
#define EDGEC_DWS_AT(t, d)                                                                         \
    do {                                                                                           \
        const edgec_h16 *x_ = (const edgec_h16 *)(const void *)x + (d);                            \
        (t) += x_[0] * w00 + x_[1] * w10 + x_[2] * w20 + x_[16] * w01 + x_[17] * w11 + x_[18] * w21 + \
               x_[32] * w02 + x_[33] * w12 + x_[34] * w22;                                         \
    } while (0)
#define EDGEC_DWS_SUM2                                                                             \
    do {                                                                                           \
        EDGEC_DWS_AT(t0, 0);                                                                       \
        EDGEC_DWS_AT(t1, 1);                                                                       \
    } while (0)
#define EDGEC_DWS_SUM1 EDGEC_DWS_AT(t0, 0)
#define EDGEC_DWS_ROW2(s)                                                                          \
    do {                                                                                           \
        EDGEC_DWS_AT(t0, 0);                                                                       \
        x += 8 * (s);                                                                              \
        EDGEC_DWS_AT(t1, 0);                                                                       \
        x -= 8 * (s);                                                                              \
    } while (0)
#define EDGEC_DWS_ROW2_S1 EDGEC_DWS_ROW2(1)
#define EDGEC_DWS_ROW2_S2 EDGEC_DWS_ROW2(2)
#endif

/* Every output of one channel: record row m at x0 + m * span words (the channel's record of tile column 0), output
 * column ox of a record row reads the columns from 8 * stride * ox words on; stride 1 and `two` record rows first:
 * each gives output rows 2m and 2m + 1; then single output rows (stride 2: every record row; stride 1: the last of an
 * odd count). */
#define EDGEC_DWS_CHANNEL(name, clamp, fix)                                                        \
    static EDGEC_HOT void name(const edgec_depthwise_conv2d_3x3_params *p, const edgec_w32 *x0, int32_t span, \
                               const edgec_w32 *wk, const edgec_rq *q, int8_t *out)                \
    {                                                                                              \
        const int32_t mult = q->mult, khi = q->khi, neg = q->neg, shift = q->shift;                \
        const int32_t bias = (int32_t)wk[6], rs = p->out_row_step, cs = p->out_col_step;           \
        const int32_t lo = p->act_min, hi = p->act_max, cstep = 8 * p->stride, n = p->out_cols;    \
        const int32_t two = p->stride == 1 ? p->out_rows >> 1 : 0, rows = p->out_rows - two;       \
        int32_t m;                                                                                 \
        EDGEC_DWS_WEIGHTS                                                                          \
        for (m = 0; m < two; ++m, x0 += span, out += 2 * rs) {                                     \
            const edgec_w32 *x = x0, *const end = x0 + n * cstep;                                  \
            int8_t *o = out;                                                                       \
            for (; x < end; x += cstep, o += cs) {                                                 \
                int32_t t0 = bias, t1 = bias;                                                      \
                EDGEC_DWS_SUM2;                                                                    \
                EDGEC_DWS_STORE(t0, o, clamp, fix);                                                \
                EDGEC_DWS_STORE(t1, o + rs, clamp, fix);                                           \
            }                                                                                      \
        }                                                                                          \
        for (; m < rows; ++m, x0 += span, out += rs) {                                             \
            const edgec_w32 *x = x0, *const end = x0 + (n & ~1) * cstep;                           \
            int8_t *o = out;                                                                       \
            if (cstep == 8) {                                                                      \
                for (; x < end; x += 16, o += 2 * cs) {                                            \
                    int32_t t0 = bias, t1 = bias;                                                  \
                    EDGEC_DWS_ROW2_S1;                                                             \
                    EDGEC_DWS_STORE(t0, o, clamp, fix);                                            \
                    EDGEC_DWS_STORE(t1, o + cs, clamp, fix);                                       \
                }                                                                                  \
            } else {                                                                               \
                for (; x < end; x += 32, o += 2 * cs) {                                            \
                    int32_t t0 = bias, t1 = bias;                                                  \
                    EDGEC_DWS_ROW2_S2;                                                             \
                    EDGEC_DWS_STORE(t0, o, clamp, fix);                                            \
                    EDGEC_DWS_STORE(t1, o + cs, clamp, fix);                                       \
                }                                                                                  \
            }                                                                                      \
            if (n & 1) {                                                                           \
                int32_t t0 = bias;                                                                 \
                EDGEC_DWS_SUM1;                                                                    \
                EDGEC_DWS_STORE(t0, o, clamp, fix);                                                \
            }                                                                                      \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
        (void)neg;                                                                                 \
    }
EDGEC_DWS_CHANNEL(edgec_dws_full, EDGEC_DWS_FULL, EDGEC_DWS_NEG)
EDGEC_DWS_CHANNEL(edgec_dws_full_anyneg, EDGEC_DWS_FULL, EDGEC_DWS_ANYNEG)
EDGEC_DWS_CHANNEL(edgec_dws_clamped, EDGEC_DWS_CLAMP, EDGEC_DWS_NEG)
EDGEC_DWS_CHANNEL(edgec_dws_clamped_anyneg, EDGEC_DWS_CLAMP, EDGEC_DWS_ANYNEG)

/* The Arm build runs a group whose 4 channels all have a right shift (neg == -1), with the whole int8 range, stride 1
 * and at least two output rows as one block of assembly: all 4 channels and all record rows in one call (the C
 * channel function spends about 190 instructions a channel on its setup and row loops, as much as 6 output pairs on a
 * 6x6 image), then, for an odd number of output rows, the last row one output at a time from its record's first line
 * (20 instructions an output; 3x3 images ran at 35 in C). Registers: r0 x, r1 the channel's right shift, r2 out, r3
 * the output column step, r4-r9 ab0 ab1 ab2 bc0 bc1 bc2, r10/r11 a column record (then multiplier, khi, row step),
 * r12 and lr the two accumulators (rows 2m and 2m + 1); the bias, multiplier, khi, row step and the row's end on the
 * stack. 33.5 instructions a pair of outputs, the loop's test every other pair (an odd count enters at the second).
 * geo: bytes of a record row's n columns, record rows, bytes from a row's end to the next row, output row step,
 * output column step, output bytes from a row pair's end to the next, whether the output rows are odd. */
#if defined(EDGEC_DSP_NATIVE) && defined(__thumb2__)
#define EDGEC_DWS_ASM 1
extern void edgec_dws_pairs_s1(const edgec_w32 *x0, const edgec_w32 *wk, const edgec_rq *q, int8_t *out,
                               const int32_t *geo);
/* one pair of outputs (rows 2m and 2m + 1 of a column): the 3 column records' 12 MACs, both requantized and stored
 * (the loop below runs two a pass). The output pointer r2 runs one column behind and is advanced among the MACs,
 * so that the pair ends on its store and the loop's test loads right after it (a load after a store pipelines:
 * a cycle a pass on the M4) */
#define EDGEC_DWS_ASM_PAIR \
        "ldrd r12, lr, [sp, #8]\n\t"     \
        "ldrd r10, r11, [r0], #32\n\t"   \
        "smlad r12, r10, r4, r12\n\t"    \
        "add r2, r2, r3\n\t"             \
        "smlabt r12, r11, r7, r12\n\t"   \
        "smlad lr, r11, r7, lr\n\t"      \
        "smlabt lr, r4, r10, lr\n\t"     \
        "ldrd r10, r11, [r0]\n\t"        \
        "smlad r12, r10, r5, r12\n\t"    \
        "smlabt r12, r11, r8, r12\n\t"   \
        "smlad lr, r11, r8, lr\n\t"      \
        "smlabt lr, r5, r10, lr\n\t"     \
        "ldrd r10, r11, [r0, #32]\n\t"   \
        "smlad r12, r10, r6, r12\n\t"    \
        "smlabt r12, r11, r9, r12\n\t"   \
        "smlad lr, r11, r9, lr\n\t"      \
        "smlabt lr, r6, r10, lr\n\t"     \
        "ldrd r10, r11, [sp]\n\t"        \
        "add r11, r11, r12, asr #31\n\t" \
        "smmlar r12, r12, r10, r11\n\t"  \
        "asr r12, r12, r1\n\t"           \
        "ssat r12, #8, r12\n\t"          \
        "strb r12, [r2]\n\t"             \
        "ldr r11, [sp, #4]\n\t"          \
        "add r11, r11, lr, asr #31\n\t"  \
        "smmlar lr, lr, r10, r11\n\t"    \
        "asr lr, lr, r1\n\t"             \
        "ssat lr, #8, lr\n\t"            \
        "ldr r11, [sp, #16]\n\t"         \
        "strb lr, [r2, r11]\n\t"
/* one output of the odd last row 2m (its record's first line alone: the loop runs one a pass) */
#define EDGEC_DWS_ASM_ONE \
        "ldr r12, [sp, #8]\n\t"         \
        "ldrd r10, r11, [r0], #32\n\t"   \
        "smlad r12, r10, r4, r12\n\t"    \
        "add r2, r2, r3\n\t"             \
        "smlabt r12, r11, r7, r12\n\t"   \
        "ldrd r10, r11, [r0]\n\t"        \
        "smlad r12, r10, r5, r12\n\t"    \
        "smlabt r12, r11, r8, r12\n\t"   \
        "ldrd r10, r11, [r0, #32]\n\t"   \
        "smlad r12, r10, r6, r12\n\t"    \
        "smlabt r12, r11, r9, r12\n\t"   \
        "ldrd r10, r11, [sp]\n\t"        \
        "add r11, r11, r12, asr #31\n\t" \
        "smmlar r12, r12, r10, r11\n\t"  \
        "asr r12, r12, r1\n\t"           \
        "ssat r12, #8, r12\n\t"          \
        "strb r12, [r2]\n\t"
/* frame: [sp] multiplier, khi, bias, bias, row step, the row's end, then the next channel's x, wk, q, out, channels left,
 * record rows left; geo at sp + 84 */
__asm__(".syntax unified\n\t.pushsection .text.edgec_dws_pairs_s1,\"ax\",%progbits\n\t.align 2\n\t.global edgec_dws_pairs_s1\n\t"
        ".type edgec_dws_pairs_s1, %function\n\t.thumb_func\n"
        "edgec_dws_pairs_s1:\n\t"
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
        "sub sp, sp, #48\n\t"
        "strd r0, r1, [sp, #24]\n\t"
        "strd r2, r3, [sp, #32]\n\t"
        "movs r4, #4\n\t"
        "str r4, [sp, #40]\n"
        "1:\n\t"
        "ldr r2, [sp, #32]\n\t"
        "ldrd r4, r5, [r2, #4]\n\t"
        "strd r4, r5, [sp]\n\t"
        "ldr r1, [r2, #16]\n\t"
        "adds r2, r2, #20\n\t"
        "str r2, [sp, #32]\n\t"
        "ldr r11, [sp, #28]\n\t"
        "ldmia r11!, {r4, r5, r6, r7, r8, r9, r10}\n\t"
        "str r11, [sp, #28]\n\t"
        "strd r10, r10, [sp, #8]\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r3, [r11, #16]\n\t"
        "ldr r12, [r11, #12]\n\t"
        "str r12, [sp, #16]\n\t"
        "ldr r12, [r11, #4]\n\t"
        "str r12, [sp, #44]\n\t"
        "ldr r0, [sp, #24]\n\t"
        "adds r12, r0, #8\n\t"
        "str r12, [sp, #24]\n\t"
        "ldr r2, [sp, #36]\n\t"
        "adds r12, r2, #1\n\t"
        "str r12, [sp, #36]\n"
        "2:\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r10, [r11]\n\t"
        "add r12, r10, r0\n\t"
        "str r12, [sp, #20]\n\t"
        "tst r10, #32\n\t"
        "bne 5f\n"
        "3:\n\t" EDGEC_DWS_ASM_PAIR
        "5:\n\t" EDGEC_DWS_ASM_PAIR
        "ldr r10, [sp, #20]\n\t"
        "cmp r0, r10\n\t"
        "bne 3b\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r10, [r11, #8]\n\t"
        "add r0, r0, r10\n\t"
        "ldr r10, [r11, #20]\n\t"
        "add r2, r2, r10\n\t"
        "ldr r10, [sp, #44]\n\t"
        "subs r10, r10, #1\n\t"
        "str r10, [sp, #44]\n\t"
        "bne 2b\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r10, [r11, #24]\n\t"
        "cmp r10, #0\n\t"
        "beq 7f\n\t"
        "ldr r10, [r11]\n\t"
        "add r10, r10, r0\n\t"
        "str r10, [sp, #20]\n"
        "6:\n\t" EDGEC_DWS_ASM_ONE
        "ldr r10, [sp, #20]\n\t"
        "cmp r0, r10\n\t"
        "bne 6b\n"
        "7:\n\t"
        "ldr r10, [sp, #40]\n\t"
        "subs r10, r10, #1\n\t"
        "str r10, [sp, #40]\n\t"
        "bne 1b\n\t"
        "add sp, sp, #48\n\t"
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"
        ".size edgec_dws_pairs_s1, .-edgec_dws_pairs_s1\n\t.popsection\n");

/* Stride 2 (the small images' downsampling layers: VWW's 12x12 -> 6x6 and 6x6 -> 3x3), the groups edgec_dws_pairs_s1
 * takes at stride 1: all 4 channels and all output rows in one call. Record row m gives output row m from its first
 * line (EDGEC_DWS_TOP); two horizontally adjacent outputs a step share kernel column 2 (5 column records, 12
 * multiplies: EDGEC_DWS_ROW2_S2), an odd last column one output (EDGEC_DWS_ASM_ONE). The C channel function ran these
 * layers at 50-80 cycles an output with about 190 instructions a channel of set-up; here the pair's body is 31
 * instructions. Registers and frame as edgec_dws_pairs_s1's ([sp + 16], [sp + 20]: unused, the pairs' end).
 * geo (edgec_dws_pairs_s1's 7 words, for stride 2): bytes of a row's pairs (128 a pair), output rows, record-row bytes
 * from a row's end to the next row, (unused), output column step, output bytes from a row's end to the next, whether
 * the output columns are odd. */
extern void edgec_dws_rows_s2(const edgec_w32 *x0, const edgec_w32 *wk, const edgec_rq *q, int8_t *out,
                              const int32_t *geo);
/* (stride 2) one output of an odd last column: EDGEC_DWS_ASM_ONE with the output advanced after its store */
#define EDGEC_DWS_ASM_ONE_S2 \
        "ldr r12, [sp, #8]\n\t"         \
        "ldrd r10, r11, [r0], #32\n\t"   \
        "smlad r12, r10, r4, r12\n\t"    \
        "smlabt r12, r11, r7, r12\n\t"   \
        "ldrd r10, r11, [r0]\n\t"        \
        "smlad r12, r10, r5, r12\n\t"    \
        "smlabt r12, r11, r8, r12\n\t"   \
        "ldrd r10, r11, [r0, #32]\n\t"   \
        "smlad r12, r10, r6, r12\n\t"    \
        "smlabt r12, r11, r9, r12\n\t"   \
        "ldrd r10, r11, [sp]\n\t"        \
        "add r11, r11, r12, asr #31\n\t" \
        "smmlar r12, r12, r10, r11\n\t"  \
        "asr r12, r12, r1\n\t"           \
        "ssat r12, #8, r12\n\t"          \
        "strb r12, [r2]\n\t"             \
        "add r2, r2, r3\n\t"
/* outputs at tile columns 0-2 (r12) and 2-4 (lr), requantized and stored at [r2] and [r2 + r3]; x past them */
#define EDGEC_DWS_ASM_PAIR_S2 \
        "ldrd r12, lr, [sp, #8]\n\t"     \
        "ldrd r10, r11, [r0], #128\n\t"  \
        "smlad r12, r10, r4, r12\n\t"    \
        "smlabt r12, r11, r7, r12\n\t"   \
        "ldrd r10, r11, [r0, #-96]\n\t"  \
        "smlad r12, r10, r5, r12\n\t"    \
        "smlabt r12, r11, r8, r12\n\t"   \
        "ldrd r10, r11, [r0, #-64]\n\t"  \
        "smlad r12, r10, r6, r12\n\t"    \
        "smlabt r12, r11, r9, r12\n\t"   \
        "smlad lr, r10, r4, lr\n\t"      \
        "smlabt lr, r11, r7, lr\n\t"     \
        "ldrd r10, r11, [r0, #-32]\n\t"  \
        "smlad lr, r10, r5, lr\n\t"      \
        "smlabt lr, r11, r8, lr\n\t"     \
        "ldrd r10, r11, [r0]\n\t"        \
        "smlad lr, r10, r6, lr\n\t"      \
        "smlabt lr, r11, r9, lr\n\t"     \
        "ldrd r10, r11, [sp]\n\t"        \
        "add r11, r11, r12, asr #31\n\t" \
        "smmlar r12, r12, r10, r11\n\t"  \
        "asr r12, r12, r1\n\t"           \
        "ssat r12, #8, r12\n\t"          \
        "strb r12, [r2]\n\t"             \
        "ldr r11, [sp, #4]\n\t"          \
        "add r11, r11, lr, asr #31\n\t"  \
        "smmlar lr, lr, r10, r11\n\t"    \
        "asr lr, lr, r1\n\t"             \
        "ssat lr, #8, lr\n\t"            \
        "strb lr, [r2, r3]\n\t"          \
        "add r2, r2, r3, lsl #1\n\t"
__asm__(".syntax unified\n\t.pushsection .text.edgec_dws_rows_s2,\"ax\",%progbits\n\t.align 2\n\t.global edgec_dws_rows_s2\n\t"
        ".type edgec_dws_rows_s2, %function\n\t.thumb_func\n"
        "edgec_dws_rows_s2:\n\t"
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
        "sub sp, sp, #48\n\t"
        "strd r0, r1, [sp, #24]\n\t"
        "strd r2, r3, [sp, #32]\n\t"
        "movs r4, #4\n\t"
        "str r4, [sp, #40]\n"
        "1:\n\t"
        "ldr r2, [sp, #32]\n\t"
        "ldrd r4, r5, [r2, #4]\n\t"
        "strd r4, r5, [sp]\n\t"
        "ldr r1, [r2, #16]\n\t"
        "adds r2, r2, #20\n\t"
        "str r2, [sp, #32]\n\t"
        "ldr r11, [sp, #28]\n\t"
        "ldmia r11!, {r4, r5, r6, r7, r8, r9, r10}\n\t"
        "str r11, [sp, #28]\n\t"
        "strd r10, r10, [sp, #8]\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r3, [r11, #16]\n\t"
        "ldr r12, [r11, #4]\n\t"
        "str r12, [sp, #44]\n\t"
        "ldr r0, [sp, #24]\n\t"
        "adds r12, r0, #8\n\t"
        "str r12, [sp, #24]\n\t"
        "ldr r2, [sp, #36]\n\t"
        "adds r12, r2, #1\n\t"
        "str r12, [sp, #36]\n"
        "2:\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r10, [r11]\n\t"
        "add r12, r10, r0\n\t"
        "str r12, [sp, #20]\n\t"
        "cmp r10, #0\n\t"
        "beq 4f\n\t"
        "tst r10, #128\n\t"
        "bne 5f\n"
        "3:\n\t" EDGEC_DWS_ASM_PAIR_S2
        "5:\n\t" EDGEC_DWS_ASM_PAIR_S2
        "ldr r10, [sp, #20]\n\t"
        "cmp r0, r10\n\t"
        "bne 3b\n"
        "4:\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r10, [r11, #24]\n\t"
        "cmp r10, #0\n\t"
        "beq 6f\n\t" EDGEC_DWS_ASM_ONE_S2
        "6:\n\t"
        "ldr r11, [sp, #84]\n\t"
        "ldr r10, [r11, #8]\n\t"
        "add r0, r0, r10\n\t"
        "ldr r10, [r11, #20]\n\t"
        "add r2, r2, r10\n\t"
        "ldr r10, [sp, #44]\n\t"
        "subs r10, r10, #1\n\t"
        "str r10, [sp, #44]\n\t"
        "bne 2b\n\t"
        "ldr r10, [sp, #40]\n\t"
        "subs r10, r10, #1\n\t"
        "str r10, [sp, #40]\n\t"
        "bne 1b\n\t"
        "add sp, sp, #48\n\t"
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"
        ".size edgec_dws_rows_s2, .-edgec_dws_rows_s2\n\t.popsection\n");

/* The tile of a group in one call (edgec_dws_tile's work): for each pair i of input rows (rows 2i - pad_top and the
 * next; a row outside the image reads the zero-point word geo[8], stepping 0), its words into word 0 of record i's
 * columns and word 1 of record i - 1's, two tile columns a pass. edgec_dws_tile (C) paid about 45 instructions and a
 * call for each pair of rows and 24 a column; here about 26 a pair of rows and 21 a column. in: the group's input
 * (channel cg) at tile column x0; lo: tile column x0 of record 0; geo: pairs, columns (at least 1), bytes of a
 * record row, input row step, input column step, input rows, the first pair's first row (-pad_top), unused, the 4
 * zero-point bytes. Registers in the column loop: r0/r2 the two rows' bytes, r1/r3 their column steps, r4 record
 * i's column, r5 record i - 1's, r6 columns left, r7-r12 the words. */
extern void edgec_dws_tile_s(const int8_t *in, edgec_w32 *lo, const int32_t *geo);
/* one tile column from the input words r7 (row a) and r8 (row b), `off` bytes into the records at r4 and r5 */
#define EDGEC_DWS_ASM_COLUMN(o0, o1, o2, o3, o4, o5, o6, o7) \
        "sxtb16 r9, r7\n\t"                  \
        "sxtb16 r10, r7, ror #8\n\t"         \
        "sxtb16 r11, r8\n\t"                 \
        "sxtb16 r12, r8, ror #8\n\t"         \
        "pkhbt r7, r9, r11, lsl #16\n\t"     \
        "str r7, [r4, #" o0 "]\n\t"          \
        "str r7, [r5, #" o1 "]\n\t"          \
        "pkhbt r8, r10, r12, lsl #16\n\t"    \
        "str r8, [r4, #" o2 "]\n\t"          \
        "str r8, [r5, #" o3 "]\n\t"          \
        "pkhtb r9, r11, r9, asr #16\n\t"     \
        "str r9, [r4, #" o4 "]\n\t"          \
        "str r9, [r5, #" o5 "]\n\t"          \
        "pkhtb r10, r12, r10, asr #16\n\t"   \
        "str r10, [r4, #" o6 "]\n\t"         \
        "str r10, [r5, #" o7 "]\n\t"
/* frame: [sp] the pair's first row, record i's column x0, pairs left, in, geo */
__asm__(".syntax unified\n\t.pushsection .text.edgec_dws_tile_s,\"ax\",%progbits\n\t.align 2\n\t.global edgec_dws_tile_s\n\t"
        ".type edgec_dws_tile_s, %function\n\t.thumb_func\n"
        "edgec_dws_tile_s:\n\t"
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
        "sub sp, sp, #20\n\t"
        "ldr r4, [r2, #24]\n\t"
        "str r4, [sp]\n\t"
        "str r1, [sp, #4]\n\t"
        "ldr r4, [r2]\n\t"
        "str r4, [sp, #8]\n\t"
        "strd r0, r2, [sp, #12]\n"
        "1:\n\t"
        "ldr lr, [sp, #16]\n\t"
        "ldr r12, [sp]\n\t"
        "ldr r7, [lr, #20]\n\t"
        "ldr r8, [lr, #12]\n\t"
        "ldr r9, [sp, #12]\n\t"
        "cmp r12, r7\n\t"
        "ittee lo\n\t"
        "mlalo r0, r12, r8, r9\n\t"
        "ldrlo r1, [lr, #16]\n\t"
        "addhs r0, lr, #32\n\t"
        "movhs r1, #0\n\t"
        "add r12, r12, #1\n\t"
        "cmp r12, r7\n\t"
        "ittee lo\n\t"
        "mlalo r2, r12, r8, r9\n\t"
        "ldrlo r3, [lr, #16]\n\t"
        "addhs r2, lr, #32\n\t"
        "movhs r3, #0\n\t"
        "add r12, r12, #1\n\t"
        "str r12, [sp]\n\t"
        "ldr r4, [sp, #4]\n\t"
        "ldr r6, [lr, #8]\n\t"
        "sub r5, r4, r6\n\t"
        "add r6, r4, r6\n\t"
        "str r6, [sp, #4]\n\t"
        "ldr r6, [lr, #4]\n\t"
        "tst r6, #1\n\t"
        "beq 2f\n\t"
        "ldr r7, [r0]\n\t"
        "ldr r8, [r2]\n\t"
        "add r0, r0, r1\n\t"
        "add r2, r2, r3\n\t"
        EDGEC_DWS_ASM_COLUMN("0", "4", "8", "12", "16", "20", "24", "28")
        "adds r4, r4, #32\n\t"
        "adds r5, r5, #32\n\t"
        "subs r6, r6, #1\n\t"
        "beq 3f\n"
        "2:\n\t"
        "ldr r7, [r0]\n\t"
        "ldr r8, [r2]\n\t"
        EDGEC_DWS_ASM_COLUMN("0", "4", "8", "12", "16", "20", "24", "28")
        "ldr r7, [r0, r1]\n\t"
        "ldr r8, [r2, r3]\n\t"
        EDGEC_DWS_ASM_COLUMN("32", "36", "40", "44", "48", "52", "56", "60")
        "add r0, r0, r1, lsl #1\n\t"
        "add r2, r2, r3, lsl #1\n\t"
        "adds r4, r4, #64\n\t"
        "adds r5, r5, #64\n\t"
        "subs r6, r6, #2\n\t"
        "bne 2b\n"
        "3:\n\t"
        "ldr r6, [sp, #8]\n\t"
        "subs r6, r6, #1\n\t"
        "str r6, [sp, #8]\n\t"
        "bne 1b\n\t"
        "add sp, sp, #20\n\t"
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"
        ".size edgec_dws_tile_s, .-edgec_dws_tile_s\n\t.popsection\n");
#endif

/* The code a call runs on, named by the entry the generated code calls (edgec/ops/conv/depthwise3x3.py small_entry,
 * from the layer's stride, output rows, range and records): the assembly of stride 1 with at least two output rows
 * (`PAIRS`) or of stride 2 (`ROWS_S2`) where the range is int8's and every record's neg is -1 (the C channels on a
 * build without it), the full range's C channels (every neg -1: stride 1 with one output row), the full range with
 * some neg 0 (the assembly for the groups whose 4 negs are -1, the C channels for the others), a clamped range's
 * C channels (every neg -1, or `_ANYNEG`). A constant where edgec_dws_run is inlined, so a firmware links only the
 * code its layers name; EDGEC_DWS_L_CHOOSE: chosen at run time (edgec_depthwise_conv2d_3x3_small_s8). */
enum { EDGEC_DWS_L_CHOOSE, EDGEC_DWS_L_PAIRS, EDGEC_DWS_L_ROWS_S2, EDGEC_DWS_L_FULL, EDGEC_DWS_L_FULL_ANYNEG,
       EDGEC_DWS_L_CLAMPED, EDGEC_DWS_L_CLAMPED_ANYNEG };
EDGEC_INLINE void edgec_dws_run(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output,
                                const int loop)
{
    const int32_t span = 8 * ((p->out_cols - 1) * p->stride + 3); /* words of one record row */
    const int full = loop == EDGEC_DWS_L_CHOOSE ? p->act_min == -128 && p->act_max == 127 : loop < EDGEC_DWS_L_CLAMPED;
    const int allneg = loop == EDGEC_DWS_L_PAIRS || loop == EDGEC_DWS_L_ROWS_S2 || loop == EDGEC_DWS_L_FULL ||
                       loop == EDGEC_DWS_L_CLAMPED;
    edgec_w32 *tile = (edgec_w32 *)(void *)scratch + span; /* (the spare row before) */
    int32_t cg, k;
#ifdef EDGEC_DWS_ASM
    /* the assembly runs the groups of at least two stride-1 output rows (two-row records, then an odd last row) */
    const int32_t two = p->out_rows >> 1, n = p->out_cols;
    const int pairs = loop == EDGEC_DWS_L_CHOOSE || loop == EDGEC_DWS_L_FULL_ANYNEG ? full && p->stride == 1 && two > 0
                                                                               : loop == EDGEC_DWS_L_PAIRS;
    const int halves = loop == EDGEC_DWS_L_CHOOSE || loop == EDGEC_DWS_L_FULL_ANYNEG ? full && p->stride == 2
                                                                                : loop == EDGEC_DWS_L_ROWS_S2;
    const int32_t h = n >> 1, s1 = p->stride == 1;
    const int32_t geo[7] = {s1 ? 32 * n : 128 * h, s1 ? two : p->out_rows,
                            4 * span - (s1 ? 32 * n : 128 * h + 32 * (n & 1)), p->out_row_step, p->out_col_step,
                            (s1 ? 2 * p->out_row_step : p->out_row_step) - n * p->out_col_step,
                            s1 ? p->out_rows & 1 : n & 1};
    const int32_t width = (p->out_cols - 1) * p->stride + 3;
    EDGEC_DWS_COLUMNS(p, width);
    const int32_t tgeo[9] = {edgec_dws_records(p) + 1, x1 - x0, 4 * span, p->in_row_step, p->in_col_step, p->rows,
                             -p->pad_top, 0, (int32_t)((uint32_t)(uint8_t)p->input_zp * 0x01010101u)};
#endif
    edgec_dws_pad(p, tile);
    for (cg = 0; cg < p->c; cg += 4) {
#ifdef EDGEC_DWS_ASM
        if (x1 > x0) edgec_dws_tile_s(input + cg + (x0 - p->pad_left) * p->in_col_step, tile + 8 * x0, tgeo);
#else
        edgec_dws_tile(p, input + cg, tile);
#endif
#ifdef EDGEC_DWS_ASM
        if ((pairs || halves) && (allneg || rq[cg].neg + rq[cg + 1].neg + rq[cg + 2].neg + rq[cg + 3].neg == -4)) {
            if (pairs) { /* its output pointer one column behind (the assembly advances it before each store) */
                edgec_dws_pairs_s1(tile, (const edgec_w32 *)weights + 7 * cg, rq + cg,
                                   (int8_t *)((uintptr_t)(output + cg) - (uintptr_t)p->out_col_step), geo);
            } else {
                edgec_dws_rows_s2(tile, (const edgec_w32 *)weights + 7 * cg, rq + cg, output + cg, geo);
            }
            continue;
        }
#endif
        for (k = 0; k < 4; ++k) {
            const edgec_rq *q = rq + cg + k;
            const edgec_w32 *wk = (const edgec_w32 *)weights + 7 * (cg + k);
            if (allneg || q->neg == -1) {
                (full ? edgec_dws_full : edgec_dws_clamped)(p, tile + 2 * k, span, wk, q, output + cg + k);
            } else {
                (full ? edgec_dws_full_anyneg : edgec_dws_clamped_anyneg)(p, tile + 2 * k, span, wk, q,
                                                                          output + cg + k);
            }
        }
    }
}

void edgec_depthwise_conv2d_3x3_small_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                         const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_dws_run(p, input, weights, rq, scratch, output, EDGEC_DWS_L_CHOOSE);
}

/* The entries the generated code calls (edgec/ops/conv/depthwise3x3.py small_entry), each linking only its code */
#define EDGEC_DWS_ARGS \
    const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq, \
        int8_t *scratch, int8_t *output
#define EDGEC_DWS_ENTRY_RUN(loop) edgec_dws_run(p, input, weights, rq, scratch, output, loop)
void edgec_depthwise_conv2d_3x3_small_pairs_s8(EDGEC_DWS_ARGS) { EDGEC_DWS_ENTRY_RUN(EDGEC_DWS_L_PAIRS); }
void edgec_depthwise_conv2d_3x3_small_rows_s2_s8(EDGEC_DWS_ARGS) { EDGEC_DWS_ENTRY_RUN(EDGEC_DWS_L_ROWS_S2); }
void edgec_depthwise_conv2d_3x3_small_full_s8(EDGEC_DWS_ARGS) { EDGEC_DWS_ENTRY_RUN(EDGEC_DWS_L_FULL); }
void edgec_depthwise_conv2d_3x3_small_full_anyneg_s8(EDGEC_DWS_ARGS) { EDGEC_DWS_ENTRY_RUN(EDGEC_DWS_L_FULL_ANYNEG); }
void edgec_depthwise_conv2d_3x3_small_clamped_s8(EDGEC_DWS_ARGS) { EDGEC_DWS_ENTRY_RUN(EDGEC_DWS_L_CLAMPED); }
void edgec_depthwise_conv2d_3x3_small_clamped_anyneg_s8(EDGEC_DWS_ARGS)
{
    EDGEC_DWS_ENTRY_RUN(EDGEC_DWS_L_CLAMPED_ANYNEG);
}
