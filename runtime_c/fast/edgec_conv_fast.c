/* edgec fast convolutions (declared in edgec_nn.h, machinery in edgec_fast_support.h): im2col convolution and
 * depthwise 3x3. */
#include "edgec_conv_taps.h"
#include "edgec_fast_support.h"

/* Widen k4 int8 taps into pixel slot j of the 4-pixel im2col: [group][pixel][2 words]. */
static void edgec_conv_cols(const int8_t *taps, int32_t groups, edgec_w32 *cols)
{
    const edgec_w32 *t = (const edgec_w32 *)(const void *)taps;
    for (; groups > 0; --groups, cols += 8) edgec_widen(*t++, cols);
}

#ifdef EDGEC_DSP
#define EDGEC_CONV_PIX(acc, x, off)                                                                \
    do {                                                                                           \
        uint32_t l_, h_;                                                                           \
        E_LDRD(l_, h_, x, off);                                                                    \
        (acc) = E_SMLAD(wl_, l_, (acc));                                                           \
        (acc) = E_SMLAD(wh_, h_, (acc));                                                           \
    } while (0)
#define EDGEC_CONV_GROUP(w, x, off)                                                                \
    do {                                                                                           \
        const uint32_t wl_ = E_SXTB16(w), wh_ = E_SXTB16_ROR8(w);                                  \
        EDGEC_CONV_PIX(a0, x, (off));                                                              \
        EDGEC_CONV_PIX(a1, x, (off) + 2);                                                          \
        EDGEC_CONV_PIX(a2, x, (off) + 4);                                                          \
        EDGEC_CONV_PIX(a3, x, (off) + 6);                                                          \
    } while (0)
#else
#define EDGEC_CONV_PIX(acc, xs) (acc) += (xs)[0] * w0 + (xs)[1] * w2 + (xs)[2] * w1 + (xs)[3] * w3
#define EDGEC_CONV_GROUP(w, x, off)                                                                \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)((x) + (off));                     \
        const int32_t w0 = (int8_t)(uint8_t)((w) & 0xffu), w1 = (int8_t)(uint8_t)(((w) >> 8) & 0xffu); \
        const int32_t w2 = (int8_t)(uint8_t)(((w) >> 16) & 0xffu), w3 = (int8_t)(uint8_t)((w) >> 24); \
        EDGEC_CONV_PIX(a0, xs_);                                                                   \
        EDGEC_CONV_PIX(a1, xs_ + 4);                                                               \
        EDGEC_CONV_PIX(a2, xs_ + 8);                                                               \
        EDGEC_CONV_PIX(a3, xs_ + 12);                                                              \
    } while (0)
#endif

/* The accumulators of one block of 4 pixels for output channels [0, m): acc[4 * oc + pixel]. */
static EDGEC_HOT void edgec_conv_macs(const edgec_w32 *cols, int32_t groups, const edgec_w32 *w, const edgec_rq *q,
                                      int32_t m, int32_t *acc)
{
    for (; m > 0; --m, ++q, acc += 4) {
        const edgec_w32 *x = cols;
        int32_t a0 = q->bias, a1 = a0, a2 = a0, a3 = a0, g;
        for (g = groups >> 1; g > 0; --g, w += 2, x += 16) {
            const uint32_t wa = w[0], wb = w[1];
            EDGEC_CONV_GROUP(wa, x, 0);
            EDGEC_CONV_GROUP(wb, x, 8);
        }
        if (groups & 1) {
            const uint32_t wa = *w++;
            EDGEC_CONV_GROUP(wa, x, 0);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

/* o[pixel * out_c + oc] = the requantized acc[4 * oc + pixel], pixel < valid, oc < m. */
static EDGEC_NOINLINE void edgec_conv_requant(const int32_t *acc, int32_t m, const edgec_rq *q, int8_t *o,
                                              int32_t out_c, int32_t valid, int32_t lo, int32_t hi)
{
    int32_t i, j;
    if (valid == 4 && lo == -128 && hi == 127) {
        for (i = m; i > 0; --i, ++q, ++o, acc += 4) {
            const int32_t mult = q->mult, khi = q->khi, neg = q->neg, shift = q->shift;
            o[0] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[0], mult, khi, neg, shift));
            o[out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[1], mult, khi, neg, shift));
            o[2 * out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[2], mult, khi, neg, shift));
            o[3 * out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[3], mult, khi, neg, shift));
        }
        return;
    }
    for (i = 0; i < m; ++i) {
        for (j = 0; j < valid; ++j) o[i + j * out_c] = edgec_out(acc[4 * i + j], q + i, lo == -128 && hi == 127, lo, hi);
    }
}

void edgec_conv2d_im2col_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, out_c = p->out_c, out_w = p->out_w, in_c = p->in_c;
    const int32_t n = p->out_h * out_w;
    /* a 1x1, stride-1, unpadded convolution reads its taps straight from the input pixel */
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 8 * k4;
    int32_t *acc = (int32_t *)(void *)(scratch + 9 * k4);
    int32_t pix, j, oc;
    for (pix = 0; pix < n; pix += 4) {
        const int32_t valid = n - pix < 4 ? n - pix : 4;
        for (j = 0; j < 4; ++j) { /* a short last block repeats its last pixel */
            const int32_t q = pix + (j < valid ? j : valid - 1);
            edgec_conv_cols(pointwise ? input + q * in_c : edgec_conv_taps(p, input, q / out_w, q % out_w, row),
                            groups, cols + 2 * j);
        }
        for (oc = 0; oc < out_c; oc += EDGEC_CONV_CHUNK) {
            const int32_t m = out_c - oc < EDGEC_CONV_CHUNK ? out_c - oc : EDGEC_CONV_CHUNK;
            edgec_conv_macs(cols, groups, (const edgec_w32 *)weights + oc * groups, rq + oc, m, acc);
            edgec_conv_requant(acc, m, rq + oc, output + pix * out_c + oc, out_c, valid, p->act_min, p->act_max);
        }
    }
}

/* ---------------------------------------------------------------- depthwise 3x3 */
/* The window: for each strip column j and each of 4 channels, a record of four int16 values
 * (slot 0, slot 1, slot 2, unused), 8 bytes; column j's records are 32 bytes at 32 * j. Input row r
 * lives in slot r % 3 (a rolling window: going down one output row loads only the new rows), so the
 * kernel row each slot holds rotates, and the weights are packed for the rotation once per channel
 * and output row: P[kx] = (w[ky of slot 0][kx], w[ky of slot 1][kx]) for SMLAD on the word
 * (slot 0, slot 1), Q = w[ky of slot 2][kx] for SMLABB/SMLABT on the word (slot 2, unused). */

/* Input row r (or the zero point for a padded row) into slot `slot` of strip columns [x0, x1). */
static EDGEC_NOINLINE void edgec_dw_load_row(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *src, int32_t x0,
                                             int32_t x1, int32_t slot, int16_t *win, int valid)
{
    edgec_h16 *d = (edgec_h16 *)win + 16 * x0 + slot;
    const int32_t cs = p->in_col_step;
    int32_t j;
    if (!valid) {
        const int16_t zp = (int16_t)p->input_zp;
        for (j = x0; j < x1; ++j, d += 16) d[0] = d[4] = d[8] = d[12] = zp;
        return;
    }
    for (j = x0; j < x1; ++j, d += 16, src += cs) {
        d[0] = src[0];
        d[4] = src[1];
        d[8] = src[2];
        d[12] = src[3];
    }
}

/* The accumulators of one output row of one channel into acc[0..n), doubled (the weights are stored
 * times two, so requantization skips its doubling); x: the channel's record in strip column 0. */
#ifdef EDGEC_DSP
/* tap kx of one output from the column record (a_, b_) = ((slot 0, slot 1), (slot 2, -)) */
#define EDGEC_DW_K0(acc) ((acc) = E_SMLABB(b_, q01, E_SMLAD(a_, p0, (acc))))
#define EDGEC_DW_K1(acc) ((acc) = E_SMLABT(b_, q01, E_SMLAD(a_, p1, (acc))))
#define EDGEC_DW_K2(acc) ((acc) = E_SMLABB(b_, q2, E_SMLAD(a_, p2, (acc))))
#define EDGEC_DW_COL(col) E_LDRD(a_, b_, x, 8 * (col))

static EDGEC_HOT void edgec_dw_macs(const edgec_w32 *x, int32_t n, int32_t stride, const int16_t *wa, const int16_t *wb,
                                    const int16_t *wc, int32_t bias, int32_t *acc)
{
    const uint32_t p0 = (uint16_t)wa[0] | (uint32_t)(uint16_t)wb[0] << 16;
    const uint32_t p1 = (uint16_t)wa[1] | (uint32_t)(uint16_t)wb[1] << 16;
    const uint32_t p2 = (uint16_t)wa[2] | (uint32_t)(uint16_t)wb[2] << 16;
    const uint32_t q01 = (uint16_t)wc[0] | (uint32_t)(uint16_t)wc[1] << 16, q2 = (uint16_t)wc[2];
    int32_t *const end = acc + (n & ~1);
    uint32_t a_, b_;
    if (stride == 1) {
        for (; acc < end; x += 16, acc += 2) {
            int32_t a0 = bias, a1 = bias;
            EDGEC_DW_COL(0);
            EDGEC_DW_K0(a0);
            EDGEC_DW_COL(1);
            EDGEC_DW_K1(a0);
            EDGEC_DW_K0(a1);
            EDGEC_DW_COL(2);
            EDGEC_DW_K2(a0);
            EDGEC_DW_K1(a1);
            EDGEC_DW_COL(3);
            EDGEC_DW_K2(a1);
            acc[0] = a0;
            acc[1] = a1;
        }
    } else {
        for (; acc < end; x += 32, acc += 2) {
            int32_t a0 = bias, a1 = bias;
            EDGEC_DW_COL(0);
            EDGEC_DW_K0(a0);
            EDGEC_DW_COL(1);
            EDGEC_DW_K1(a0);
            EDGEC_DW_COL(2);
            EDGEC_DW_K2(a0);
            EDGEC_DW_K0(a1);
            EDGEC_DW_COL(3);
            EDGEC_DW_K1(a1);
            EDGEC_DW_COL(4);
            EDGEC_DW_K2(a1);
            acc[0] = a0;
            acc[1] = a1;
        }
    }
    if (n & 1) {
        int32_t a0 = bias;
        EDGEC_DW_COL(0);
        EDGEC_DW_K0(a0);
        EDGEC_DW_COL(1);
        EDGEC_DW_K1(a0);
        EDGEC_DW_COL(2);
        EDGEC_DW_K2(a0);
        acc[0] = a0;
    }
}
#else
static EDGEC_HOT void edgec_dw_macs(const edgec_w32 *xw, int32_t n, int32_t stride, const int16_t *wa, const int16_t *wb,
                                    const int16_t *wc, int32_t bias, int32_t *acc)
{
    const int32_t a0w = wa[0], a1w = wa[1], a2w = wa[2], b0w = wb[0], b1w = wb[1], b2w = wb[2];
    const int32_t c0w = wc[0], c1w = wc[1], c2w = wc[2], step = 16 * stride;
    const edgec_h16 *x = (const edgec_h16 *)(const void *)xw;
    for (; n > 0; --n, x += step) {
        *acc++ = bias + x[0] * a0w + x[1] * b0w + x[2] * c0w + x[16] * a1w + x[17] * b1w + x[18] * c1w +
                 x[32] * a2w + x[33] * b2w + x[34] * c2w;
    }
}
#endif

/* out[i * step] = the requantized, clamped t[i] (doubled accumulators), i < n. */
#define EDGEC_RQ_LOOP(fix, clamp)                                                                  \
    for (; n > 0; --n, out += step) {                                                              \
        const int32_t t_ = *t++;                                                                   \
        const int32_t v_ = (E_SMMLAR(t_, mult, khi) fix) >> shift;                                 \
        *out = (int8_t)(clamp);                                                                    \
    }
static EDGEC_NOINLINE void edgec_requant_doubled(const int32_t *t, int32_t n, const edgec_rq *q, int8_t *out, int32_t step,
                                                 int32_t lo, int32_t hi)
{
    const int32_t mult = q->mult, khi = q->khi, shift = q->shift;
    if (lo == -128 && hi == 127) {
        if (q->neg) {
            EDGEC_RQ_LOOP(+(t_ >> 31), EDGEC_SAT8(v_))
        } else {
            EDGEC_RQ_LOOP(, EDGEC_SAT8(v_))
        }
    } else {
        EDGEC_RQ_LOOP(+(t_ >> 31 & q->neg), v_ < lo ? lo : (v_ > hi ? hi : v_))
    }
}

void edgec_depthwise_conv2d_3x3_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c = p->c, rows = p->rows, cols = p->cols, s = p->stride, n = p->out_cols;
    const int32_t width = (n - 1) * s + 3, pl = p->pad_left;
    /* strip columns [0, width) are input columns [-pl, width - pl); those in [x0, x1) are inside */
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = cols + pl < width ? (cols + pl < x0 ? x0 : cols + pl) : width;
    int16_t *win = (int16_t *)(void *)scratch;
    int32_t *acc = (int32_t *)(void *)(scratch + 32 * width);
    const edgec_h16 *w16 = (const edgec_h16 *)(const void *)weights;
    int32_t cg, oy, r, k;
    for (cg = 0; cg < c; cg += 4) {
        int32_t next = -p->pad_top; /* the next input row the window does not hold yet */
        for (k = 0; k < 3; ++k) {   /* padded columns hold the zero point */
            edgec_dw_load_row(p, input, 0, x0, k, win, 0);
            edgec_dw_load_row(p, input, x1, width, k, win, 0);
        }
        for (oy = 0; oy < p->out_rows; ++oy) {
            const int32_t r0 = oy * s - p->pad_top, rot = (r0 % 3 + 3) % 3;
            for (r = next > r0 ? next : r0; r < r0 + 3; ++r) {
                const int valid = r >= 0 && r < rows;
                const int8_t *src = valid ? input + r * p->in_row_step + (x0 - pl) * p->in_col_step + cg : input;
                edgec_dw_load_row(p, src, x0, x1, (r % 3 + 3) % 3, win, valid);
            }
            next = r0 + 3;
            for (k = 0; k < 4; ++k) {
                /* slot i holds kernel row (i - rot) mod 3 */
                const int16_t *wk = w16 + 9 * (cg + k);
                edgec_dw_macs((const edgec_w32 *)(const void *)win + 2 * k, n, s, wk + 3 * ((3 - rot) % 3),
                              wk + 3 * ((4 - rot) % 3), wk + 3 * ((5 - rot) % 3), 2 * rq[cg + k].bias, acc);
                edgec_requant_doubled(acc, n, rq + cg + k, output + oy * p->out_row_step + cg + k,
                                      p->out_col_step, p->act_min, p->act_max);
            }
        }
    }
}

/* ---------------------------------------------------------------- depthwise 3x3, fused (`--optimize speed`) */
/* The same window and rotation as above, but the weights are packed at build time for each of the three
 * rotations (edgec/codegen/specialize.py): per channel and rotation 6 words p0, p1, p2, q01, q2, 2 * bias
 * (3 LDRD), and each output is requantized from its register and stored as soon as its 9 taps are summed
 * (no accumulator row, no per-row weight packing, one call per channel and output row). */
#ifdef EDGEC_DSP
#define EDGEC_DWF_DECL                                                                             \
    uint32_t p0, p1, p2, q01, q2, a_, b_;                                                          \
    int32_t bias;                                                                                  \
    E_LDRD(p0, p1, wk, 0);                                                                         \
    E_LDRD(p2, q01, wk, 2);                                                                        \
    E_LDRD(q2, a_, wk, 4);                                                                         \
    bias = (int32_t)a_;
#define EDGEC_DWF_K0(acc) ((acc) = E_SMLABB(b_, q01, E_SMLAD(a_, p0, (acc))))
#define EDGEC_DWF_K1(acc) ((acc) = E_SMLABT(b_, q01, E_SMLAD(a_, p1, (acc))))
#define EDGEC_DWF_K2(acc) ((acc) = E_SMLABB(b_, q2, E_SMLAD(a_, p2, (acc))))
#define EDGEC_DWF_COL(col) E_LDRD(a_, b_, x, 8 * (col))
#define EDGEC_DWF_ONE(acc)                                                                         \
    do {                                                                                           \
        EDGEC_DWF_COL(0);                                                                          \
        EDGEC_DWF_K0(acc);                                                                         \
        EDGEC_DWF_COL(1);                                                                          \
        EDGEC_DWF_K1(acc);                                                                         \
        EDGEC_DWF_COL(2);                                                                          \
        EDGEC_DWF_K2(acc);                                                                         \
    } while (0)
#else
#define EDGEC_DWF_DECL                                                                             \
    const edgec_h16 *h_ = (const edgec_h16 *)(const void *)wk;                                     \
    const int32_t a0w = h_[0], b0w = h_[1], a1w = h_[2], b1w = h_[3], a2w = h_[4], b2w = h_[5];    \
    const int32_t c0w = h_[6], c1w = h_[7], c2w = h_[8], bias = (int32_t)wk[5];
#define EDGEC_DWF_AT(acc, o)                                                                       \
    do {                                                                                           \
        const edgec_h16 *x_ = (const edgec_h16 *)(const void *)x + 4 * (o);                        \
        (acc) += x_[0] * a0w + x_[1] * b0w + x_[2] * c0w + x_[16] * a1w + x_[17] * b1w +           \
                 x_[18] * c1w + x_[32] * a2w + x_[33] * b2w + x_[34] * c2w;                        \
    } while (0)
#define EDGEC_DWF_ONE(acc) EDGEC_DWF_AT(acc, 0)
#endif

/* requantize the doubled accumulator t and store it at *o; `clamp` of v_, `fix` the correction for a negative t
 * (the record's neg: one row function per value). The record's fields are read where they are used (the int8
 * stores may alias them, so the compiler reloads them anyway: no registers held for them). */
#define EDGEC_DWF_STORE(t, o, clamp, fix)                                                          \
    do {                                                                                           \
        int32_t v_ = (E_SMMLAR((t), q->mult, q->khi) + fix(t)) >> q->shift;                        \
        *(o) = (int8_t)(clamp);                                                                    \
    } while (0)

/* One output row of the 4 channels of a group: n outputs each; x: channel 0's record in strip column 0 (channel k's
 * is 2 words further per k), wk: channel 0's 6 words for this row's rotation (channel k's 18 * k further), out:
 * channel 0's first output. Two outputs per step (stride 1 shares columns 1 and 2 between them, stride 2 column 2). */
#define EDGEC_DWF_ROW(name, clamp, fix)                                                            \
    static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, int32_t stride, const edgec_w32 *wk, \
                               const edgec_rq *q, int8_t *out0, int32_t step, int32_t lo, int32_t hi) \
    {                                                                                              \
        const int32_t span = 8 * stride * (n & ~1); /* 8 words a column */                         \
        int32_t k;                                                                                 \
        for (k = 0; k < 4; ++k, x0 += 2, wk += 18, ++q, ++out0) {                                  \
            const edgec_w32 *x = x0, *const end = x0 + span;                                       \
            int8_t *out = out0;                                                                    \
            EDGEC_DWF_DECL                                                                         \
            if (stride == 1) {                                                                     \
                for (; x < end; x += 16) {                                                         \
                    int32_t a0 = bias, a1 = bias;                                                  \
                    EDGEC_DWF_PAIR1(a0, a1);                                                       \
                    EDGEC_DWF_STORE(a0, out, clamp, fix);                                          \
                    out += step;                                                                   \
                    EDGEC_DWF_STORE(a1, out, clamp, fix);                                          \
                    out += step;                                                                   \
                }                                                                                  \
            } else {                                                                               \
                for (; x < end; x += 32) {                                                         \
                    int32_t a0 = bias, a1 = bias;                                                  \
                    EDGEC_DWF_PAIR2(a0, a1);                                                       \
                    EDGEC_DWF_STORE(a0, out, clamp, fix);                                          \
                    out += step;                                                                   \
                    EDGEC_DWF_STORE(a1, out, clamp, fix);                                          \
                    out += step;                                                                   \
                }                                                                                  \
            }                                                                                      \
            if (n & 1) {                                                                           \
                int32_t a0 = bias;                                                                 \
                EDGEC_DWF_ONE(a0);                                                                 \
                EDGEC_DWF_STORE(a0, out, clamp, fix);                                              \
            }                                                                                      \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
#ifdef EDGEC_DSP
#define EDGEC_DWF_PAIR1(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_COL(0);                                                                          \
        EDGEC_DWF_K0(a0);                                                                          \
        EDGEC_DWF_COL(1);                                                                          \
        EDGEC_DWF_K1(a0);                                                                          \
        EDGEC_DWF_K0(a1);                                                                          \
        EDGEC_DWF_COL(2);                                                                          \
        EDGEC_DWF_K2(a0);                                                                          \
        EDGEC_DWF_K1(a1);                                                                          \
        EDGEC_DWF_COL(3);                                                                          \
        EDGEC_DWF_K2(a1);                                                                          \
    } while (0)
#define EDGEC_DWF_PAIR2(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_COL(0);                                                                          \
        EDGEC_DWF_K0(a0);                                                                          \
        EDGEC_DWF_COL(1);                                                                          \
        EDGEC_DWF_K1(a0);                                                                          \
        EDGEC_DWF_COL(2);                                                                          \
        EDGEC_DWF_K2(a0);                                                                          \
        EDGEC_DWF_K0(a1);                                                                          \
        EDGEC_DWF_COL(3);                                                                          \
        EDGEC_DWF_K1(a1);                                                                          \
        EDGEC_DWF_COL(4);                                                                          \
        EDGEC_DWF_K2(a1);                                                                          \
    } while (0)
#else
#define EDGEC_DWF_PAIR1(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_AT(a0, 0);                                                                       \
        EDGEC_DWF_AT(a1, 4);                                                                       \
    } while (0)
#define EDGEC_DWF_PAIR2(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_AT(a0, 0);                                                                       \
        EDGEC_DWF_AT(a1, 8);                                                                       \
    } while (0)
#endif
#define EDGEC_DWF_NEG(t) ((t) >> 31)       /* every neg of the group == -1 (the usual case: shift > 0) */
#define EDGEC_DWF_ANYNEG(t) ((t) >> 31 & q->neg) /* the record's own */
EDGEC_DWF_ROW(edgec_dwf_row_full, EDGEC_SAT8(v_), EDGEC_DWF_NEG)
EDGEC_DWF_ROW(edgec_dwf_row_full_anyneg, EDGEC_SAT8(v_), EDGEC_DWF_ANYNEG)
EDGEC_DWF_ROW(edgec_dwf_row_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_DWF_NEG)
EDGEC_DWF_ROW(edgec_dwf_row_clamped_anyneg, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_DWF_ANYNEG)
typedef void (*edgec_dwf_row)(const edgec_w32 *, int32_t, int32_t, const edgec_w32 *, const edgec_rq *, int8_t *,
                              int32_t, int32_t, int32_t);

/* Input row `src` into slot `slot` of strip columns [x0, x1), as edgec_dw_load_row does, two columns a step. */
static EDGEC_NOINLINE void edgec_dwf_load_row(const int8_t *src, int32_t cs, int32_t x0, int32_t x1, int32_t slot,
                                              int16_t *win)
{
    edgec_h16 *d = (edgec_h16 *)win + 16 * x0 + slot;
    edgec_h16 *const end = d + 16 * ((x1 - x0) & ~1);
    for (; d < end; d += 32, src += 2 * cs) {
        const int8_t *s2 = src + cs;
        d[0] = src[0];
        d[4] = src[1];
        d[8] = src[2];
        d[12] = src[3];
        d[16] = s2[0];
        d[20] = s2[1];
        d[24] = s2[2];
        d[28] = s2[3];
    }
    if ((x1 - x0) & 1) {
        d[0] = src[0];
        d[4] = src[1];
        d[8] = src[2];
        d[12] = src[3];
    }
}

void edgec_depthwise_conv2d_3x3_fused_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                         const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c = p->c, rows = p->rows, cols = p->cols, s = p->stride, n = p->out_cols;
    const int32_t width = (n - 1) * s + 3, pl = p->pad_left, lo = p->act_min, hi = p->act_max;
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = cols + pl < width ? (cols + pl < x0 ? x0 : cols + pl) : width;
    int16_t *win = (int16_t *)(void *)scratch;
    const int full = lo == -128 && hi == 127;
    const edgec_dwf_row row_neg = full ? edgec_dwf_row_full : edgec_dwf_row_clamped;
    const edgec_dwf_row row_anyneg = full ? edgec_dwf_row_full_anyneg : edgec_dwf_row_clamped_anyneg;
    int32_t cg, oy, r, k;
    for (cg = 0; cg < c; cg += 4) {
        const int negs = rq[cg].neg + rq[cg + 1].neg + rq[cg + 2].neg + rq[cg + 3].neg != -4;
        int32_t next = -p->pad_top;
        for (k = 0; k < 3; ++k) {
            edgec_dw_load_row(p, input, 0, x0, k, win, 0);
            edgec_dw_load_row(p, input, x1, width, k, win, 0);
        }
        for (oy = 0; oy < p->out_rows; ++oy) {
            const int32_t r0 = oy * s - p->pad_top, rot = (r0 % 3 + 3) % 3;
            for (r = next > r0 ? next : r0; r < r0 + 3; ++r) {
                const int valid = r >= 0 && r < rows;
                if (valid) {
                    edgec_dwf_load_row(input + r * p->in_row_step + (x0 - pl) * p->in_col_step + cg, p->in_col_step,
                                       x0, x1, (r % 3 + 3) % 3, win);
                } else {
                    edgec_dw_load_row(p, input, x0, x1, (r % 3 + 3) % 3, win, 0);
                }
            }
            next = r0 + 3;
            (negs ? row_anyneg : row_neg)((const edgec_w32 *)(const void *)win, n, s,
                                          (const edgec_w32 *)weights + 18 * cg + 6 * rot, rq + cg,
                                          output + oy * p->out_row_step + cg, p->out_col_step, lo, hi);
        }
    }
}

/* ---------------------------------------------------------------- int4 weights (edgec/ops/int4.py) */
/* im2col convolution with int4 weights: the s8 kernel's 4-pixel im2col, each output channel's weights
 * (k4 + 4) / 8 words of 8 nibbles in PERM8 order, so that one word meets two column groups: (n0, n4) and
 * (n1, n5) the (x0, x2) and (x1, x3) words of the first, the word rotated by 8 bits the second (a short last
 * group: its low half only). */
#ifdef EDGEC_DSP
#define EDGEC_CONV4_GROUP(v, x, off)                                                               \
    do {                                                                                           \
        const uint32_t wl_ = EDGEC_NIBBLES_LO(v), wh_ = EDGEC_NIBBLES_HI(v);                       \
        EDGEC_CONV_PIX(a0, x, (off));                                                              \
        EDGEC_CONV_PIX(a1, x, (off) + 2);                                                          \
        EDGEC_CONV_PIX(a2, x, (off) + 4);                                                          \
        EDGEC_CONV_PIX(a3, x, (off) + 6);                                                          \
    } while (0)
#else
#define EDGEC_CONV4_GROUP(v, x, off)                                                               \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)((x) + (off));                     \
        const int32_t w0 = EDGEC_NIBBLE(v, 0), w2 = EDGEC_NIBBLE(v, 4);                            \
        const int32_t w1 = EDGEC_NIBBLE(v, 1), w3 = EDGEC_NIBBLE(v, 5);                            \
        EDGEC_CONV_PIX(a0, xs_);                                                                   \
        EDGEC_CONV_PIX(a1, xs_ + 4);                                                               \
        EDGEC_CONV_PIX(a2, xs_ + 8);                                                               \
        EDGEC_CONV_PIX(a3, xs_ + 12);                                                              \
    } while (0)
#endif

static EDGEC_HOT void edgec_conv_macs_s4(const edgec_w32 *cols, int32_t groups, const uint32_t *w,
                                         const edgec_rq *q, int32_t m, int32_t *acc)
{
    for (; m > 0; --m, ++q, acc += 4) {
        const edgec_w32 *x = cols;
        int32_t a0 = q->bias, a1 = a0, a2 = a0, a3 = a0, g;
        for (g = groups >> 1; g > 0; --g, x += 16) {
            const uint32_t v = *w++, u = edgec_ror(v, 8);
            EDGEC_CONV4_GROUP(v, x, 0);
            EDGEC_CONV4_GROUP(u, x, 8);
        }
        if (groups & 1) {
            const uint32_t v = *w++;
            EDGEC_CONV4_GROUP(v, x, 0);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

void edgec_conv2d_im2col_s4(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, words = (groups + 1) >> 1, out_c = p->out_c, out_w = p->out_w;
    const int32_t in_c = p->in_c, n = p->out_h * out_w;
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 8 * k4;
    int32_t *acc = (int32_t *)(void *)(scratch + 9 * k4);
    int32_t pix, j, oc;
    for (pix = 0; pix < n; pix += 4) {
        const int32_t valid = n - pix < 4 ? n - pix : 4;
        for (j = 0; j < 4; ++j) {
            const int32_t q = pix + (j < valid ? j : valid - 1);
            edgec_conv_cols(pointwise ? input + q * in_c : edgec_conv_taps(p, input, q / out_w, q % out_w, row),
                            groups, cols + 2 * j);
        }
        for (oc = 0; oc < out_c; oc += EDGEC_CONV_CHUNK) {
            const int32_t m = out_c - oc < EDGEC_CONV_CHUNK ? out_c - oc : EDGEC_CONV_CHUNK;
            edgec_conv_macs_s4(cols, groups, weights + oc * words, rq + oc, m, acc);
            edgec_conv_requant(acc, m, rq + oc, output + pix * out_c + oc, out_c, valid, p->act_min, p->act_max);
        }
    }
}

/* depthwise 3x3 with int4 weights: the c * 9 weights (the s8 kernel's [c][3][3] order, two per byte, low
 * nibble first) are widened once per call into the first 18 * c bytes of scratch, doubled as the s8 kernel
 * takes them; the s8 kernel runs on the rest of scratch. */
void edgec_depthwise_conv2d_3x3_s4(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t taps = 9 * p->c;
    edgec_h16 *w16 = (edgec_h16 *)(void *)scratch;
    int32_t i;
    for (i = 0; i < taps; ++i) w16[i] = (int16_t)(2 * EDGEC_NIBBLE(weights[i >> 3], i & 7));
    edgec_depthwise_conv2d_3x3_s8(p, input, (const uint32_t *)(const void *)w16, rq, scratch + 2 * taps, output);
}
