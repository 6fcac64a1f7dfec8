/* edgec fast integer SVDF (declared in edgec_nn.h; edgec/ops/svdf.py lower_svdf_fast packs its constants):
 * the reference kernel's arithmetic (runtime_c/edgec_svdf.c, bit for bit) with
 * - the feature weights widened to int16 at build time, 4 filters at a time (fast/edgec_rows16.h), the input
 *   zero point folded into a per-filter constant (fbias = -input_zp * sum w, modulo 2^32);
 * - the whole state shifted by one entry in one loop (two entries a word), then the feature pass writes every
 *   row's new last entry, then each unit's rank rows (one run of rank * memory entries) meet its time weights in
 *   one dot product, the state zero point folded into the unit's bias (tbias = bias - state_zp * sum wt, modulo
 *   2^32);
 * - TFLite's requantization of any int32 sum (edgec_rq_right: TFLite files' SVDF biases take the whole range;
 *   multipliers below 1, a right shift of 1 or more, or the reference kernel runs the op). */
#include "edgec_rows16.h"

/* s[j] = s[j + 1] for j < n - 1 (each word read before the one below it is written) */
static void edgec_svdf_shift(int16_t *s, int32_t n)
{
    int32_t j = 0;
    for (; j + 9 <= n; j += 8) {
        const uint32_t a = edgec_r16_load(s + j + 1), b = edgec_r16_load(s + j + 3);
        const uint32_t c = edgec_r16_load(s + j + 5), d = edgec_r16_load(s + j + 7);
        edgec_r16_store(s + j, a);
        edgec_r16_store(s + j + 2, b);
        edgec_r16_store(s + j + 4, c);
        edgec_r16_store(s + j + 6, d);
    }
    for (; j + 1 < n; ++j) s[j] = s[j + 1];
}

/* s . w over n int16 entries, modulo 2^32; both start on a word (the state: the arena's alignment and an even
 * run; the time weights: words) */
EDGEC_INLINE uint32_t edgec_svdf_dot(const int16_t *s, const int16_t *w, int32_t n)
{
    const edgec_w32 *sw = (const edgec_w32 *)(const void *)s, *ww = (const edgec_w32 *)(const void *)w;
    uint32_t acc = 0;
    int32_t j;
    for (j = n >> 3; j > 0; --j, sw += 4, ww += 4) {
        uint32_t a, b, c, d;
        E_LDRD(a, b, sw, 0);
        E_LDRD(c, d, ww, 0);
        acc = EDGEC_R16_MAC(a, c, acc);
        acc = EDGEC_R16_MAC(b, d, acc);
        E_LDRD(a, b, sw, 2);
        E_LDRD(c, d, ww, 2);
        acc = EDGEC_R16_MAC(a, c, acc);
        acc = EDGEC_R16_MAC(b, d, acc);
    }
    for (j = (n & 7) >> 1; j > 0; --j) acc = EDGEC_R16_MAC(*sw++, *ww++, acc);
    if (n & 1) acc += (uint32_t)(s[n - 1] * w[n - 1]);
    return acc;
}

/* every filter's new state entry (the feature dot product, requantized, clamped to the state's range, plus its
 * zero point, wrapped to its type as TFLite Micro's cast) into its row's last entry */
static void edgec_svdf_features(const edgec_svdf_fast_params *p, const int8_t *x, const uint32_t *w_feature,
                                const int32_t *fbias, int16_t *s)
{
    const int32_t memory = p->memory, n_in = p->input_size, filters = p->units * p->rank;
    const int32_t lo = p->state_min, hi = p->state_max, wrap = hi - lo, state_zp = p->state_zp;
    const int32_t m1 = p->mult1, r1 = p->right1, h1 = 1 << (r1 - 1);
    const int32_t step = 8 * ((n_in + 3) >> 2); /* weight words of a block of 4 filters */
    const edgec_w32 *w = (const edgec_w32 *)w_feature;
    int32_t f0, r;
    s += memory - 1;
    /* the new entry of filter row `row` from its sum `a` */
#define EDGEC_SVDF_NEW(a, row)                                                                     \
    do {                                                                                           \
        const int32_t v_ = edgec_clamp(edgec_rq_right((a), m1, r1, h1), lo, hi) + state_zp;  \
        s[(row) * memory] = (int16_t)(((v_ - lo) & wrap) + lo);                                    \
    } while (0)
    for (f0 = 0; f0 < filters; f0 += 4, w += step, fbias += 4, s += 4 * memory) {
        uint32_t acc[4];
        acc[0] = (uint32_t)fbias[0];
        acc[1] = (uint32_t)fbias[1];
        acc[2] = (uint32_t)fbias[2];
        acc[3] = (uint32_t)fbias[3];
        edgec_r16_dot4(x, n_in, w, acc);
        if (filters - f0 >= 4) {
            EDGEC_SVDF_NEW(acc[0], 0);
            EDGEC_SVDF_NEW(acc[1], 1);
            EDGEC_SVDF_NEW(acc[2], 2);
            EDGEC_SVDF_NEW(acc[3], 3);
        } else {
            for (r = 0; r < filters - f0; ++r) EDGEC_SVDF_NEW(acc[r], r);
        }
    }
#undef EDGEC_SVDF_NEW
}

/* each unit's rank * memory state entries (one run) . its time weights, plus its folded bias, requantized: a
 * function of its own, its few constants kept in registers */
static EDGEC_NOINLINE void edgec_svdf_units(const edgec_svdf_fast_params *p, const int16_t *s, const int16_t *wt,
                                            const int32_t *tbias, int8_t *out)
{
    const int32_t run = p->rank * p->memory, m2 = p->mult2, r2 = p->right2, h2 = 1 << (r2 - 1), out_zp = p->output_zp;
    int8_t *const end = out + p->units;
    for (; out < end; s += run, wt += run) {
        const uint32_t acc = (uint32_t)*tbias++ + edgec_svdf_dot(s, wt, run);
        *out++ = (int8_t)EDGEC_SAT8(edgec_rq_right(acc, m2, r2, h2) + out_zp);
    }
}

void edgec_svdf_fast_s8(const edgec_svdf_fast_params *p, const int8_t *input, const uint32_t *w_feature,
                        const int32_t *fbias, const uint32_t *w_time, const int32_t *tbias, int16_t *state,
                        int8_t *output)
{
    const int32_t units = p->units, run = p->rank * p->memory; /* a unit's entries */
    int32_t b;
    edgec_svdf_shift(state, p->batch * units * run);
    for (b = 0; b < p->batch; ++b) {
        int16_t *s = state + b * units * run;
        edgec_svdf_features(p, input + b * p->input_size, w_feature, fbias, s);
        edgec_svdf_units(p, s, (const int16_t *)(const void *)w_time, tbias, output + b * units);
    }
}
