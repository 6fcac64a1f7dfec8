/* edgec fast depthwise 3x3 convolution, int8 and int4 weights (declared in edgec_nn.h, machinery in
 * edgec_fast_support.h and edgec_depthwise_conv2d_3x3_window.h): edgec_depthwise_conv2d_3x3_s8,
 * edgec_depthwise_conv2d_3x3_s4. */
#include "edgec_depthwise_conv2d_3x3_window.h"
#include "edgec_fast_support.h"

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
