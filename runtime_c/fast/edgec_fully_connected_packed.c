/* edgec fast fully connected layer (declared in edgec_nn.h, machinery in edgec_fast_support.h). */
#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
#define EDGEC_FC_ROW(acc, w)                                                                       \
    do {                                                                                           \
        (acc) = E_SMLAD(E_SXTB16(w), xl, (acc));                                                   \
        (acc) = E_SMLAD(E_SXTB16_ROR8(w), xh, (acc));                                              \
    } while (0)
/* group `g` (4 inputs) of 4 rows: x words 2g, 2g + 1; weight words 4g .. 4g + 3 */
#define EDGEC_FC_GROUP(g)                                                                          \
    do {                                                                                           \
        uint32_t xl, xh, wa, wb;                                                                   \
        E_LDRD(xl, xh, x, 2 * (g));                                                                \
        E_LDRD(wa, wb, w, 4 * (g));                                                                \
        EDGEC_FC_ROW(a0, wa);                                                                      \
        EDGEC_FC_ROW(a1, wb);                                                                      \
        E_LDRD(wa, wb, w, 4 * (g) + 2);                                                            \
        EDGEC_FC_ROW(a2, wa);                                                                      \
        EDGEC_FC_ROW(a3, wb);                                                                      \
    } while (0)
#define EDGEC_FC_ONE(g)                                                                            \
    do {                                                                                           \
        uint32_t xl, xh;                                                                           \
        const uint32_t wa = w[g];                                                                  \
        E_LDRD(xl, xh, x, 2 * (g));                                                                \
        EDGEC_FC_ROW(a0, wa);                                                                      \
    } while (0)
#else
#define EDGEC_FC_ROW(acc, w)                                                                       \
    (acc) += xs[0] * (int8_t)(uint8_t)((w) & 0xffu) + xs[1] * (int8_t)(uint8_t)(((w) >> 16) & 0xffu) + \
             xs[2] * (int8_t)(uint8_t)(((w) >> 8) & 0xffu) + xs[3] * (int8_t)(uint8_t)((w) >> 24)
#define EDGEC_FC_GROUP(g)                                                                          \
    do {                                                                                           \
        const edgec_h16 *xs = (const edgec_h16 *)(const void *)(x + 2 * (g));                      \
        const uint32_t wa = w[4 * (g)], wb = w[4 * (g) + 1], wc = w[4 * (g) + 2], wd = w[4 * (g) + 3]; \
        EDGEC_FC_ROW(a0, wa);                                                                      \
        EDGEC_FC_ROW(a1, wb);                                                                      \
        EDGEC_FC_ROW(a2, wc);                                                                      \
        EDGEC_FC_ROW(a3, wd);                                                                      \
    } while (0)
#define EDGEC_FC_ONE(g)                                                                            \
    do {                                                                                           \
        const edgec_h16 *xs = (const edgec_h16 *)(const void *)(x + 2 * (g));                      \
        const uint32_t wa = w[g];                                                                  \
        EDGEC_FC_ROW(a0, wa);                                                                      \
    } while (0)
#endif

#define EDGEC_MIN_I32(a, b) ((a) < (b) ? (a) : (b))

/* Blocks of 4 rows: out[r .. r+3] for every full block (weights in block layout, see edgec_nn.h). */
static EDGEC_HOT void edgec_fc_blocks(const edgec_w32 *xw, int32_t groups, int32_t blocks, const edgec_w32 *w,
                                      const edgec_rq *rq, int8_t *out, int32_t lo, int32_t hi)
{
    const int full = lo == -128 && hi == 127;
    for (; blocks > 0; --blocks, rq += 4, out += 4) {
        const edgec_w32 *x = xw;
        int32_t a0 = rq[0].bias, a1 = rq[1].bias, a2 = rq[2].bias, a3 = rq[3].bias, g;
        for (g = groups >> 2; g > 0; --g, x += 8, w += 16) {
            EDGEC_FC_GROUP(0);
            EDGEC_BARRIER();
            EDGEC_FC_GROUP(1);
            EDGEC_BARRIER();
            EDGEC_FC_GROUP(2);
            EDGEC_BARRIER();
            EDGEC_FC_GROUP(3);
        }
        for (g = groups & 3; g > 0; --g, x += 2, w += 4) EDGEC_FC_GROUP(0);
        out[0] = edgec_out(a0, rq, full, lo, hi);
        out[1] = edgec_out(a1, rq + 1, full, lo, hi);
        out[2] = edgec_out(a2, rq + 2, full, lo, hi);
        out[3] = edgec_out(a3, rq + 3, full, lo, hi);
    }
}

/* inputs [4 * g0, 4 * (g0 + n)) widened into xw (those past n_in are 0: their weights are 0 too) */
static void edgec_fc_widen(const int8_t *input, int32_t n_in, int32_t g0, int32_t n, edgec_w32 *xw)
{
    const int32_t whole = EDGEC_MIN_I32(n_in >> 2, g0 + n);
    int32_t g, r;
    if (((uintptr_t)input & 3u) == 0) {
        const edgec_w32 *in = (const edgec_w32 *)(const void *)input;
        for (g = g0; g < whole; ++g) edgec_widen(in[g], xw + 2 * (g - g0));
    } else {
        for (g = g0; g < whole; ++g) {
            const int8_t *b = input + 4 * g;
            edgec_widen((uint32_t)(uint8_t)b[0] | (uint32_t)(uint8_t)b[1] << 8 | (uint32_t)(uint8_t)b[2] << 16 |
                        (uint32_t)(uint8_t)b[3] << 24, xw + 2 * (g - g0));
        }
    }
    for (g = EDGEC_MAX(whole, g0); g < g0 + n; ++g) { /* the last, partial group */
        uint32_t v = 0;
        for (r = 0; 4 * g + r < n_in; ++r) v |= (uint32_t)(uint8_t)input[4 * g + r] << (8 * r);
        edgec_widen(v, xw + 2 * (g - g0));
    }
}

/* acc[0..3] += the 4 rows of a block (w) . x over `groups` groups (edgec_fc_blocks' loop) */
static EDGEC_HOT void edgec_fc_acc4(const edgec_w32 *x, int32_t groups, const edgec_w32 *w, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], g;
    for (g = groups >> 2; g > 0; --g, x += 8, w += 16) {
        EDGEC_FC_GROUP(0);
        EDGEC_BARRIER();
        EDGEC_FC_GROUP(1);
        EDGEC_BARRIER();
        EDGEC_FC_GROUP(2);
        EDGEC_BARRIER();
        EDGEC_FC_GROUP(3);
    }
    for (g = groups & 3; g > 0; --g, x += 2, w += 4) EDGEC_FC_GROUP(0);
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* in_features over 4 * EDGEC_FC_WIDEN_GROUPS: the input widened a chunk at a time (the scratch bounded, see
 * edgec_nn.h), again for each block of 4 rows: the accumulators of a block kept over its chunks. An entry of its
 * own, which the generated code names for such a layer only (edgec/ops/dense.py packed_entry): a firmware whose
 * layers are all shorter does not link it nor edgec_fc_acc4 (1.3 kB); its locals stay out of the one-pass
 * entry's frame (inlined there: 128 B instead of 72, TFLite Micro's hello_world 36 B more measured stack). */
void edgec_fully_connected_packed_chunked_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                             const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                             int8_t *output)
{
    const int32_t groups = p->k4 >> 2, n_out = p->out_features, lo = p->act_min, hi = p->act_max;
    const int full = lo == -128 && hi == 127;
    const edgec_w32 *wts = (const edgec_w32 *)weights;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    int32_t r = 0, g0;
    for (; r + 4 <= n_out; r += 4) {
        int32_t acc[4];
        acc[0] = rq[r].bias;
        acc[1] = rq[r + 1].bias;
        acc[2] = rq[r + 2].bias;
        acc[3] = rq[r + 3].bias;
        for (g0 = 0; g0 < groups; g0 += EDGEC_FC_WIDEN_GROUPS) {
            const int32_t n = EDGEC_MIN_I32(EDGEC_FC_WIDEN_GROUPS, groups - g0);
            edgec_fc_widen(input, p->in_features, g0, n, xw);
            edgec_fc_acc4(xw, n, wts + r * groups + 4 * g0, acc);
        }
        output[r] = edgec_out(acc[0], rq + r, full, lo, hi);
        output[r + 1] = edgec_out(acc[1], rq + r + 1, full, lo, hi);
        output[r + 2] = edgec_out(acc[2], rq + r + 2, full, lo, hi);
        output[r + 3] = edgec_out(acc[3], rq + r + 3, full, lo, hi);
    }
    for (; r < n_out; ++r) {
        const edgec_w32 *w = wts + r * groups;
        int32_t a0 = rq[r].bias;
        for (g0 = 0; g0 < groups; g0 += EDGEC_FC_WIDEN_GROUPS) {
            const int32_t n = EDGEC_MIN_I32(EDGEC_FC_WIDEN_GROUPS, groups - g0);
            const edgec_w32 *x = xw;
            int32_t g;
            edgec_fc_widen(input, p->in_features, g0, n, xw);
            for (g = n; g > 0; --g, x += 2, ++w) EDGEC_FC_ONE(0);
        }
        output[r] = edgec_out(a0, rq + r, full, lo, hi);
    }
}

/* in_features up to 4 * EDGEC_FC_WIDEN_GROUPS: the input widened once, then every block of 4 rows over it */
void edgec_fully_connected_packed_onepass_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                             const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                             int8_t *output)
{
    /* p's fields read after the calls, not kept live across them: a frame of 72 B, not 80 (the tail rows' act_min /
     * act_max read again per row: at most 3 rows) */
    const int32_t groups = p->k4 >> 2;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    int32_t g, r;
    edgec_fc_widen(input, p->in_features, 0, groups, xw);
    edgec_fc_blocks(xw, groups, p->out_features >> 2, (const edgec_w32 *)weights, rq, output, p->act_min,
                    p->act_max);
    {
        const int32_t n_out = p->out_features;
        const edgec_w32 *w = (const edgec_w32 *)weights + (n_out & ~3) * groups;
        for (r = n_out & ~3; r < n_out; ++r) {
            const edgec_w32 *x = xw;
            const int32_t lo = p->act_min, hi = p->act_max;
            int32_t a0 = rq[r].bias;
            for (g = groups; g > 0; --g, x += 2, ++w) EDGEC_FC_ONE(0);
            output[r] = edgec_out(a0, rq + r, lo == -128 && hi == 127, lo, hi);
        }
    }
}

/* the entry that chooses at run time (edgec_fully_connected_packed_rows_s8's rows, a caller outside the generated
 * code); either path entered by a tail call */
void edgec_fully_connected_packed_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                     const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    if ((p->k4 >> 2) > EDGEC_FC_WIDEN_GROUPS) {
        edgec_fully_connected_packed_chunked_s8(p, input, weights, rq, scratch, output);
        return;
    }
    edgec_fully_connected_packed_onepass_s8(p, input, weights, rq, scratch, output);
}

/* int4 weights (edgec/ops/dense.py lower_fc4): row r is k4 / 8 words of 8 nibbles; the nibbles of a word, low
 * first, are the weights of inputs 0, 1, 4, 5, 2, 3, 6, 7 of its group of 8, so that the int16 pairs of
 * edgec_widen ((x0, x2), (x1, x3), (x4, x6), (x5, x7)) meet (n0, n4), (n1, n5), (n2, n6), (n3, n7). */
/* (EDGEC_NIBBLES_LO / _HI: edgec_fast_support.h) */

void edgec_fully_connected_packed_s4(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                     const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, groups = p->k4 >> 3, lo = p->act_min, hi = p->act_max;
    const int full = lo == -128 && hi == 127;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    int32_t g, r;
    for (g = 0; 4 * g < p->k4; ++g) { /* inputs widened 4 at a time; those past n_in are 0 */
        uint32_t v = 0;
        for (r = 0; r < 4 && 4 * g + r < n_in; ++r) v |= (uint32_t)(uint8_t)input[4 * g + r] << (8 * r);
        edgec_widen(v, xw + 2 * g);
    }
    for (r = 0; r < p->out_features; ++r) {
        const uint32_t *w = weights + r * groups;
        const edgec_w32 *x = xw;
        int32_t acc = rq[r].bias;
        for (g = 0; g < groups; ++g, x += 4) acc = edgec_dot_nibbles(w[g], x, acc);
        output[r] = edgec_out(acc, rq + r, full, lo, hi);
    }
}

void edgec_fully_connected_packed_rows_s8(const edgec_fully_connected_packed_rows_params *p, const int8_t *input,
                                          const uint32_t *weights, const edgec_rq *rq, int8_t *scratch,
                                          int8_t *output)
{
    const edgec_fully_connected_packed_params row = {p->in_features, p->out_features, p->output_zp, p->act_min,
                                                     p->act_max, p->k4};
    int32_t r;
    for (r = 0; r < p->rows; ++r) {
        edgec_fully_connected_packed_s8(&row, input + r * row.in_features, weights, rq, scratch,
                                        output + r * row.out_features);
    }
}
