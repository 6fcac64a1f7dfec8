/* edgec fast integer SVDF (declared in edgec_nn.h; edgec/ops/svdf.py lower_svdf_fast packs its constants):
 * the reference kernel's arithmetic (runtime_c/edgec_svdf.c, bit for bit) with
 * - the state a ring: nothing shifted; each row's new entry overwrites its oldest at the ring position `pos` (a word
 *   of the op's state, 0 after reset), which then moves on by one. The time weights are stored twice in a row
 *   ([filters][wt wt]), so that a row's entries in ring order meet one contiguous window of them: entry j (oldest
 *   first) sits at (pos + j) mod memory, and sum_j wt[j] s[(pos + j) mod memory] = sum_i s[i] wt2[memory - pos + i];
 * - an int8 state kept as int8 (TFLite Micro's arena holds it so: half the RAM), its time weights int8 too, both
 *   widened in registers (SXTB16: entries 0, 2 and 1, 3 of a word meet weights 0, 2 and 1, 3 of theirs);
 * - the feature weights widened to int16 at build time, 4 filters at a time (fast/edgec_rows16.h), the input
 *   zero point folded into a per-filter constant (fbias = -input_zp * sum w, modulo 2^32);
 * - each unit's rank rows meet their windows of time weights, the state zero point folded into the unit's bias
 *   (tbias = bias - state_zp * sum wt, modulo 2^32);
 * - TFLite's requantization of any int32 sum (edgec_rq_right: TFLite files' SVDF biases take the whole range;
 *   multipliers below 1; the output's a right shift of 1 or more, or the reference kernel runs the op; the
 *   feature sum's also a left shift or none, edgec_rq_any: an int16 state's scale makes that multiplier 1 or more). */
#include "edgec_rows16.h"

/* acc + s . w over n (even) int16 entries, modulo 2^32: s starts on a word (the arena's alignment and an even
 * memory), w anywhere on int16 (the window moves one entry a call: words read unaligned) */
EDGEC_INLINE uint32_t edgec_svdf_dot(const int16_t *s, const int16_t *w, int32_t n, uint32_t acc)
{
    const edgec_w32 *sw = (const edgec_w32 *)(const void *)s;
    int32_t j;
    uint32_t a, b, c, d;
    for (j = n >> 3; j > 0; --j, sw += 4, w += 8) {
        E_LDRD(a, b, sw, 0);
        E_LDRD(c, d, sw, 2);
        acc = EDGEC_R16_MAC(a, edgec_r16_load(w), acc);
        acc = EDGEC_R16_MAC(b, edgec_r16_load(w + 2), acc);
        acc = EDGEC_R16_MAC(c, edgec_r16_load(w + 4), acc);
        acc = EDGEC_R16_MAC(d, edgec_r16_load(w + 6), acc);
    }
    if (n & 4) {
        E_LDRD(a, b, sw, 0);
        acc = EDGEC_R16_MAC(a, edgec_r16_load(w), acc);
        acc = EDGEC_R16_MAC(b, edgec_r16_load(w + 2), acc);
        sw += 2;
        w += 4;
    }
    if (n & 2) acc = EDGEC_R16_MAC(*sw, edgec_r16_load(w), acc);
    return acc;
}

/* acc + s . w over n (a multiple of 4) int8 entries, modulo 2^32: s starts on a word (memory a multiple of 4), w
 * anywhere */
EDGEC_INLINE uint32_t edgec_svdf_dot8(const int8_t *s, const int8_t *w, int32_t n, uint32_t acc)
{
    const edgec_w32 *sw = (const edgec_w32 *)(const void *)s;
    int32_t j;
    uint32_t a, b, u, v;
    for (j = n >> 3; j > 0; --j, sw += 2, w += 8) {
        E_LDRD(a, b, sw, 0);
        u = edgec_r16_load(w);
        v = edgec_r16_load(w + 4);
        acc = EDGEC_R16_MAC(EDGEC_R16_LO(a), EDGEC_R16_LO(u), acc);
        acc = EDGEC_R16_MAC(EDGEC_R16_HI(a), EDGEC_R16_HI(u), acc);
        acc = EDGEC_R16_MAC(EDGEC_R16_LO(b), EDGEC_R16_LO(v), acc);
        acc = EDGEC_R16_MAC(EDGEC_R16_HI(b), EDGEC_R16_HI(v), acc);
    }
    if (n & 4) {
        a = *sw;
        u = edgec_r16_load(w);
        acc = EDGEC_R16_MAC(EDGEC_R16_LO(a), EDGEC_R16_LO(u), acc);
        acc = EDGEC_R16_MAC(EDGEC_R16_HI(a), EDGEC_R16_HI(u), acc);
    }
    return acc;
}

/* the new entry of a filter from its sum: requantized, clamped to the state's range, plus the state's zero point,
 * stored as the state's type (wrapping as TFLite Micro's cast does) */
#define EDGEC_SVDF_NEW8(a) ((int8_t)(uint8_t)(EDGEC_SAT8(edgec_rq_right((a), m1, r1, h1)) + zp))
#define EDGEC_SVDF_NEW16(a) ((int16_t)(uint16_t)(edgec_clamp(edgec_rq_right((a), m1, r1, h1), -32768, 32767) + zp))

/* every filter's new state entry (the feature dot product) into its row's entry at `s` (the ring's oldest; int8
 * entries where the state's type is int8, else int16) */
EDGEC_INLINE void edgec_svdf_features_at(const edgec_svdf_fast_params *p, const int8_t *x, const uint32_t *w_feature,
                                         const int32_t *fbias, void *s, const int32_t any)
{
    const int32_t memory = p->memory, n_in = p->input_size, filters = p->units * p->rank, zp = p->state_zp;
    const int32_t m1 = p->mult1, r1 = p->right1, h1 = !any || r1 > 0 ? 1 << (r1 - 1) : 0;
    const int32_t l1 = any ? p->left1 : 0, neg1 = r1 > 0;
    const int32_t step = 8 * ((n_in + 3) >> 2); /* weight words of a block of 4 filters */
    const edgec_w32 *w = (const edgec_w32 *)w_feature;
    int8_t *s8 = (int8_t *)s;
    int16_t *s16 = (int16_t *)s;
    int32_t f0, r;
    for (f0 = 0; f0 < filters; f0 += 4, w += step, fbias += 4, s8 += 4 * memory, s16 += 4 * memory) {
        uint32_t acc[4];
        acc[0] = (uint32_t)fbias[0];
        acc[1] = (uint32_t)fbias[1];
        acc[2] = (uint32_t)fbias[2];
        acc[3] = (uint32_t)fbias[3];
        edgec_r16_dot4(x, n_in, w, acc);
        if (any) { /* a left shift or none at all (an int16 state's scale is small: TFLite's keyword model) */
            for (r = 0; r < 4 && r < filters - f0; ++r) {
                const int32_t v = edgec_rq_any(acc[r], m1, l1, r1, h1, neg1);
                if (p->state_max != 127) {
                    s16[r * memory] = (int16_t)(uint16_t)(edgec_clamp(v, -32768, 32767) + zp);
                } else {
                    s8[r * memory] = (int8_t)(uint8_t)(EDGEC_SAT8(v) + zp);
                }
            }
        } else if (p->state_max != 127) {
            for (r = 0; r < 4 && r < filters - f0; ++r) s16[r * memory] = EDGEC_SVDF_NEW16(acc[r]);
        } else if (filters - f0 >= 4) {
            s8[0] = EDGEC_SVDF_NEW8(acc[0]);
            s8[memory] = EDGEC_SVDF_NEW8(acc[1]);
            s8[2 * memory] = EDGEC_SVDF_NEW8(acc[2]);
            s8[3 * memory] = EDGEC_SVDF_NEW8(acc[3]);
        } else {
            for (r = 0; r < filters - f0; ++r) s8[r * memory] = EDGEC_SVDF_NEW8(acc[r]);
        }
    }
}
#undef EDGEC_SVDF_NEW8
#undef EDGEC_SVDF_NEW16

/* the feature sums requantized with a right shift and no left one (edgec_rq_right) */
static EDGEC_NOINLINE void edgec_svdf_features(const edgec_svdf_fast_params *p, const int8_t *x,
                                               const uint32_t *w_feature, const int32_t *fbias, void *s)
{
    edgec_svdf_features_at(p, x, w_feature, fbias, s, 0);
}

/* with a left shift or none at all (edgec_rq_any): a function of its own, so that the other keeps its registers */
static EDGEC_NOINLINE void edgec_svdf_features_any(const edgec_svdf_fast_params *p, const int8_t *x,
                                                   const uint32_t *w_feature, const int32_t *fbias, void *s)
{
    edgec_svdf_features_at(p, x, w_feature, fbias, s, 1);
}

/* rank 1 with 8 entries a row (the keyword models' shape): each unit's row . its window, unrolled */
static EDGEC_NOINLINE void edgec_svdf_units8(const edgec_svdf_fast_params *p, const int16_t *s, const int16_t *wt,
                                             const int32_t *tbias, int8_t *out)
{
    const int32_t m2 = p->mult2, r2 = p->right2, h2 = 1 << (r2 - 1), out_zp = p->output_zp;
    int8_t *const end = out + p->units;
    for (; out < end; s += 8, wt += 16) {
        const edgec_w32 *sw = (const edgec_w32 *)(const void *)s;
        uint32_t a, b, c, d, acc = (uint32_t)*tbias++;
        E_LDRD(a, b, sw, 0);
        E_LDRD(c, d, sw, 2);
        acc = EDGEC_R16_MAC(a, edgec_r16_load(wt), acc);
        acc = EDGEC_R16_MAC(b, edgec_r16_load(wt + 2), acc);
        acc = EDGEC_R16_MAC(c, edgec_r16_load(wt + 4), acc);
        acc = EDGEC_R16_MAC(d, edgec_r16_load(wt + 6), acc);
        *out++ = (int8_t)EDGEC_SAT8(edgec_rq_right(acc, m2, r2, h2) + out_zp);
    }
}

/* edgec_svdf_units8 with an int8 state and int8 time weights */
static EDGEC_NOINLINE void edgec_svdf_units8_s8(const edgec_svdf_fast_params *p, const int8_t *s, const int8_t *wt,
                                                const int32_t *tbias, int8_t *out)
{
    const int32_t m2 = p->mult2, r2 = p->right2, h2 = 1 << (r2 - 1), out_zp = p->output_zp;
    int8_t *const end = out + p->units;
    for (; out < end; s += 8, wt += 16) {
        const uint32_t acc = edgec_svdf_dot8(s, wt, 8, (uint32_t)*tbias++);
        *out++ = (int8_t)EDGEC_SAT8(edgec_rq_right(acc, m2, r2, h2) + out_zp);
    }
}

/* each unit's rank rows (in ring order) . their windows of time weights (wt: row 0's window), plus its folded
 * bias, requantized: a function of its own, its few constants kept in registers */
static EDGEC_NOINLINE void edgec_svdf_units(const edgec_svdf_fast_params *p, const void *s, const void *wt,
                                            const int32_t *tbias, int8_t *out)
{
    const int32_t memory = p->memory, rank = p->rank;
    const int16_t *s16 = (const int16_t *)s, *wt16 = (const int16_t *)wt;
    const int32_t m2 = p->mult2, r2 = p->right2, h2 = 1 << (r2 - 1), out_zp = p->output_zp;
    int8_t *const end = out + p->units;
    const int32_t eight = p->state_max == 127;
    const int8_t *s8 = (const int8_t *)s, *wt8 = (const int8_t *)wt;
    for (; out < end;) {
        uint32_t acc = (uint32_t)*tbias++;
        int32_t r;
        for (r = 0; r < rank; ++r) {
            if (eight) {
                acc = edgec_svdf_dot8(s8, wt8, memory, acc);
                s8 += memory;
                wt8 += 2 * memory;
            } else {
                acc = edgec_svdf_dot(s16, wt16, memory, acc);
                s16 += memory;
                wt16 += 2 * memory;
            }
        }
        *out++ = (int8_t)EDGEC_SAT8(edgec_rq_right(acc, m2, r2, h2) + out_zp);
    }
}

void edgec_svdf_fast_s8(const edgec_svdf_fast_params *p, const int8_t *input, const uint32_t *w_feature,
                        const int32_t *fbias, const uint32_t *w_time, const int32_t *tbias, void *state,
                        int32_t *pos, int8_t *output)
{
    const int32_t units = p->units, memory = p->memory, rows = units * p->rank, eight = p->state_max == 127;
    const int32_t at = *pos, next = at + 1 == memory ? 0 : at + 1; /* the oldest entry; the next call's */
    const int32_t size = eight ? 1 : 2;                              /* bytes of an entry and of a weight */
    const uint8_t *window = (const uint8_t *)w_time + (memory - next) * size;
    int32_t b;
    *pos = next;
    for (b = 0; b < p->batch; ++b) {
        uint8_t *s = (uint8_t *)state + b * rows * memory * size;
        if (p->path & 4) { /* (edgec/ops/svdf.py lower_svdf_fast: the functions this op takes, decided once) */
            edgec_svdf_features_any(p, input + b * p->input_size, w_feature, fbias, s + at * size);
        } else {
            edgec_svdf_features(p, input + b * p->input_size, w_feature, fbias, s + at * size);
        }
        if ((p->path & 3) == 1) {
            edgec_svdf_units8_s8(p, (const int8_t *)s, (const int8_t *)window, tbias, output + b * units);
        } else if ((p->path & 3) == 2) {
            edgec_svdf_units8(p, (const int16_t *)(const void *)s, (const int16_t *)(const void *)window, tbias,
                              output + b * units);
        } else {
            edgec_svdf_units(p, s, window, tbias, output + b * units);
        }
    }
}
