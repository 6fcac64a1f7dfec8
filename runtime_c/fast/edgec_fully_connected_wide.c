/* edgec speed-optimized fully connected layer (declared in edgec_nn.h; chosen by `--optimize speed`, the default):
 * the packed kernel's layout with every group of 4 weights widened to int16 at build time in the order SMLAD
 * pairs them with the widened input (w0, w2) (w1, w3) (edgec/ops/dense.py): per group of 4 inputs and
 * 4 rows, 5 LDRD and 8 SMLAD, no sign extension at run time. */
#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
#define EDGEC_FCW_ROW(acc, off)                                                                    \
    do {                                                                                           \
        uint32_t wl_, wh_;                                                                         \
        E_LDRD(wl_, wh_, w, (off));                                                                \
        (acc) = E_SMLAD(wl_, xl, (acc));                                                           \
        (acc) = E_SMLAD(wh_, xh, (acc));                                                           \
    } while (0)
#define EDGEC_FCW_X(g)                                                                             \
    uint32_t xl, xh;                                                                               \
    E_LDRD(xl, xh, x, 2 * (g))
#else
#define EDGEC_FCW_ROW(acc, off)                                                                    \
    do {                                                                                           \
        const edgec_h16 *ws_ = (const edgec_h16 *)(const void *)(w + (off));                       \
        (acc) += xs[0] * ws_[0] + xs[1] * ws_[1] + xs[2] * ws_[2] + xs[3] * ws_[3];                \
    } while (0)
#define EDGEC_FCW_X(g) const edgec_h16 *xs = (const edgec_h16 *)(const void *)(x + 2 * (g))
#endif
/* group `g` (4 inputs) of 4 rows: x words 2g, 2g + 1; weight words 8g .. 8g + 7 */
#define EDGEC_FCW_GROUP(g)                                                                         \
    do {                                                                                           \
        EDGEC_FCW_X(g);                                                                            \
        EDGEC_FCW_ROW(a0, 8 * (g));                                                                \
        EDGEC_FCW_ROW(a1, 8 * (g) + 2);                                                            \
        EDGEC_FCW_ROW(a2, 8 * (g) + 4);                                                            \
        EDGEC_FCW_ROW(a3, 8 * (g) + 6);                                                            \
    } while (0)

static EDGEC_HOT void edgec_fcw_blocks(const edgec_w32 *xw, int32_t groups, int32_t blocks, const edgec_w32 *w,
                                       const edgec_rq *rq, int8_t *out, int32_t lo, int32_t hi)
{
    const int full = lo == -128 && hi == 127;
    for (; blocks > 0; --blocks, rq += 4, out += 4) {
        const edgec_w32 *x = xw;
        int32_t a0 = rq[0].bias, a1 = rq[1].bias, a2 = rq[2].bias, a3 = rq[3].bias, g;
        for (g = groups >> 1; g > 0; --g, x += 4, w += 16) {
            EDGEC_FCW_GROUP(0);
            EDGEC_BARRIER();
            EDGEC_FCW_GROUP(1);
        }
        if (groups & 1) {
            EDGEC_FCW_GROUP(0);
            w += 8;
        }
        out[0] = edgec_out(a0, rq, full, lo, hi);
        out[1] = edgec_out(a1, rq + 1, full, lo, hi);
        out[2] = edgec_out(a2, rq + 2, full, lo, hi);
        out[3] = edgec_out(a3, rq + 3, full, lo, hi);
    }
}

void edgec_fully_connected_wide_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                   const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, n_out = p->out_features, groups = p->k4 >> 2;
    const int32_t blocks = n_out >> 2, lo = p->act_min, hi = p->act_max;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    const edgec_w32 *w = (const edgec_w32 *)weights + blocks * 8 * groups;
    int32_t g, r, i;
    for (g = 0; g < groups; ++g) { /* missing inputs of a partial last group are 0 (their weights are 0 too) */
        uint32_t v = 0;
        for (i = 0; i < 4 && 4 * g + i < n_in; ++i) v |= (uint32_t)(uint8_t)input[4 * g + i] << (8 * i);
        edgec_widen(v, xw + 2 * g);
    }
    edgec_fcw_blocks(xw, groups, blocks, (const edgec_w32 *)weights, rq, output, lo, hi);
    for (r = 4 * blocks; r < n_out; ++r) {
        const edgec_w32 *x = xw;
        int32_t a0 = rq[r].bias;
        for (g = groups; g > 0; --g, x += 2, w += 2) {
            EDGEC_FCW_X(0);
            EDGEC_FCW_ROW(a0, 0);
        }
        output[r] = edgec_out(a0, rq + r, lo == -128 && hi == 127, lo, hi);
    }
}
