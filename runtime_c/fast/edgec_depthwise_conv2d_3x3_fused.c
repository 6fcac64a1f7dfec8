/* edgec speed-optimized depthwise 3x3 convolution (declared in edgec_nn.h; the `fused` variant of
 * `--optimize speed`, edgec/ops/conv/depthwise3x3.py; machinery in edgec_fast_support.h and
 * edgec_depthwise_conv2d_3x3_window.h): edgec_depthwise_conv2d_3x3_fused_s8. */
#include "edgec_depthwise_conv2d_3x3_window.h"
#include "edgec_fast_support.h"

/* The window and rotation of edgec_depthwise_conv2d_3x3_s8, but the weights are packed at build time for each
 * of the three rotations (edgec/ops/conv/depthwise3x3.py): per channel and rotation 6 words p0, p1, p2, q01, q2,
 * 2 * bias (3 LDRD), and each output is requantized from its register and stored as soon as its 9 taps are summed
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
