/* edgec fast integer SVDF (declared in edgec_nn.h; edgec/ops/svdf.py lower_svdf_fast packs its constants):
 * the reference kernel's arithmetic (runtime_c/edgec_svdf.c, bit for bit) with
 * - the feature weights widened to int16 at build time, 4 filters at a time (fast/edgec_rows16.h), the input
 *   zero point folded into a per-filter constant (fbias = -input_zp * sum w, modulo 2^32);
 * - each filter's state row shifted while its time dot product reads it (one pass, no separate shift of the whole
 *   state), the state zero point folded into the unit's bias (tbias = bias - state_zp * sum wt, modulo 2^32);
 * - TFLite's requantization of any int32 sum (edgec_rq_any: TFLite files' SVDF biases take the whole range). */
#include "edgec_rows16.h"

/* s[0 .. memory-2] = s[1 .. memory-1], s[memory-1] = v, and the time weights w of the row . the new row,
 * modulo 2^32 (state and weights int16: SMLAD pairs) */
static uint32_t edgec_svdf_row(int16_t *s, const int16_t *w, int32_t memory, int32_t v)
{
    const int32_t old = memory - 1;
    uint32_t acc = 0;
    int32_t j = 0;
    for (; j + 4 <= old; j += 4) {
        const uint32_t a = edgec_r16_load(s + j + 1), c = edgec_r16_load(s + j + 3);
        edgec_r16_store(s + j, a);
        edgec_r16_store(s + j + 2, c);
        acc = EDGEC_R16_MAC(a, edgec_r16_load(w + j), acc);
        acc = EDGEC_R16_MAC(c, edgec_r16_load(w + j + 2), acc);
    }
    if (j + 2 <= old) {
        const uint32_t a = edgec_r16_load(s + j + 1);
        edgec_r16_store(s + j, a);
        acc = EDGEC_R16_MAC(a, edgec_r16_load(w + j), acc);
        j += 2;
    }
    if (j < old) { /* the last old entry and the new one: one pair */
        const uint32_t a = (uint32_t)(uint16_t)s[j + 1] | (uint32_t)(uint16_t)(int16_t)v << 16;
        edgec_r16_store(s + j, a);
        return EDGEC_R16_MAC(a, edgec_r16_load(w + j), acc);
    }
    s[j] = (int16_t)v;
    return acc + (uint32_t)(w[j] * v);
}

void edgec_svdf_fast_s8(const edgec_svdf_fast_params *p, const int8_t *input, const uint32_t *w_feature,
                        const int32_t *fbias, const int16_t *w_time, const int32_t *tbias, int16_t *state,
                        int8_t *output)
{
    /* every parameter in a local: the state's stores (memcpy) may alias anything, the struct included */
    const int32_t rank = p->rank, memory = p->memory, n_in = p->input_size, filters = p->units * rank;
    const int32_t lo = p->state_min, hi = p->state_max, wrap = hi - lo, state_zp = p->state_zp;
    const int32_t m1 = p->mult1, l1 = p->left1, r1 = p->right1, h1 = r1 > 0 ? 1 << (r1 - 1) : 0, n1 = r1 > 0;
    const int32_t m2 = p->mult2, l2 = p->left2, r2 = p->right2, h2 = r2 > 0 ? 1 << (r2 - 1) : 0, n2 = r2 > 0;
    const int32_t out_zp = p->output_zp, step = 8 * ((n_in + 3) >> 2); /* weight words of a block of 4 filters */
    int32_t b, f0, r;
    for (b = 0; b < p->batch; ++b) {
        const int8_t *x = input + b * n_in;
        int16_t *s = state + b * filters * memory;
        const int16_t *wt = w_time;
        const int32_t *tb = tbias;
        int8_t *out = output + b * p->units;
        uint32_t unit = 0;
        int32_t k = 0; /* the next filter's place in its unit */
        for (f0 = 0; f0 < filters; f0 += 4) {
            uint32_t acc[4];
            const int32_t n = filters - f0 < 4 ? filters - f0 : 4;
            acc[0] = (uint32_t)fbias[f0];
            acc[1] = (uint32_t)fbias[f0 + 1];
            acc[2] = (uint32_t)fbias[f0 + 2];
            acc[3] = (uint32_t)fbias[f0 + 3];
            edgec_r16_dot4(x, n_in, (const edgec_w32 *)w_feature + (f0 >> 2) * step, acc);
            for (r = 0; r < n; ++r, s += memory, wt += memory) {
                int32_t v = edgec_clamp(edgec_rq_any(acc[r], m1, l1, r1, h1, n1), lo, hi) + state_zp;
                v = ((v - lo) & wrap) + lo; /* stored as the state's type: wraps, as TFLite Micro's cast does */
                if (k == 0) unit = (uint32_t)*tb++;
                unit += edgec_svdf_row(s, wt, memory, v);
                if (++k == rank) {
                    k = 0;
                    *out++ = (int8_t)EDGEC_SAT8(edgec_rq_any(unit, m2, l2, r2, h2, n2) + out_zp);
                }
            }
        }
    }
}
