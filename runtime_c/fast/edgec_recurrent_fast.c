/* edgec fast LSTM / GRU (declared in edgec_nn.h, machinery in edgec_fast_support.h): the portable recurrence
 * (edgec_recurrent_run, ../edgec_recurrent.c) with its gate matrix products on SMLAD. Weight rows are
 * zero-padded at build time (edgec/ops/recurrent.py lower_recurrent): int8 rows to whole words, int4 rows to
 * whole words of 8 nibbles (edgec/ops/fast.py PERM8 order). The vector (x, or the int16 hidden state) is laid
 * out once per product as int16 pairs (v0, v2), (v1, v3) per group of 4, which meet SXTB16's (w0, w2) and its
 * rotated (w1, w3), or the nibble pairs of EDGEC_NIBBLES_LO / _HI; each row requantized by its edgec_rq
 * record. */
#include "edgec_fast_support.h"

/* acc + row . vector over `words` words of int8 weights, 4 a word (the vector laid out as above) */
EDGEC_INLINE int32_t edgec_rnn_dot8(const edgec_w32 *w, const edgec_w32 *v, int32_t words, int32_t acc)
{
    for (; words > 0; --words, v += 2) {
        const uint32_t wv = *w++;
#ifdef EDGEC_DSP
        acc = E_SMLAD(E_SXTB16(wv), v[0], acc);
        acc = E_SMLAD(E_SXTB16_ROR8(wv), v[1], acc);
#else
        const edgec_h16 *s = (const edgec_h16 *)(const void *)v;
        acc += s[0] * (int32_t)(int8_t)(uint8_t)(wv & 0xffu) + s[1] * (int32_t)(int8_t)(uint8_t)((wv >> 16) & 0xffu) +
               s[2] * (int32_t)(int8_t)(uint8_t)((wv >> 8) & 0xffu) + s[3] * (int32_t)(int8_t)(uint8_t)(wv >> 24);
#endif
    }
    return acc;
}

/* two rows at once (w0 and w1 = w0 + words), each vector word loaded once for both */
static EDGEC_HOT void edgec_rnn_dot8x2(const edgec_w32 *w0, const edgec_w32 *v, int32_t words, int32_t *acc)
{
    const edgec_w32 *w1 = w0 + words;
    int32_t a0 = acc[0], a1 = acc[1];
#ifdef EDGEC_DSP
    for (; words > 0; --words, v += 2) {
        const uint32_t x0 = v[0], x1 = v[1], p = *w0++, q = *w1++;
        a0 = E_SMLAD(E_SXTB16(p), x0, a0);
        a1 = E_SMLAD(E_SXTB16(q), x0, a1);
        a0 = E_SMLAD(E_SXTB16_ROR8(p), x1, a0);
        a1 = E_SMLAD(E_SXTB16_ROR8(q), x1, a1);
    }
#else
    a0 = edgec_rnn_dot8(w0, v, words, a0);
    a1 = edgec_rnn_dot8(w1, v, words, a1);
#endif
    acc[0] = a0;
    acc[1] = a1;
}

/* the same over words of int4 weights, 8 nibbles a word in PERM8 order (as edgec_fully_connected_packed_s4).
 * The DSP path multiplies each nibble in place, 16 times its value (SXTB16 of (v << 4) & 0xf0f0f0f0 and of
 * v & 0xf0f0f0f0: nibbles 0, 4 and 1, 5; of v ror 8 likewise 2, 6 and 3, 7), so the sum is 16 times the dot product, exactly
 * (lower_recurrent checks it stays in int32). */
static EDGEC_HOT int32_t edgec_rnn_dot4(const edgec_w32 *w, const edgec_w32 *v, int32_t words, int32_t acc)
{
#ifdef EDGEC_DSP
    int32_t dot16 = 0;
    for (; words > 0; --words, v += 4) {
        const uint32_t a = *w++, b = edgec_ror(a, 8);
        dot16 = E_SMLAD(E_SXTB16((a << 4) & 0xf0f0f0f0u), v[0], dot16);
        dot16 = E_SMLAD(E_SXTB16(a & 0xf0f0f0f0u), v[1], dot16);
        dot16 = E_SMLAD(E_SXTB16((b << 4) & 0xf0f0f0f0u), v[2], dot16);
        dot16 = E_SMLAD(E_SXTB16(b & 0xf0f0f0f0u), v[3], dot16);
    }
    return acc + (dot16 >> 4);
#else
    for (; words > 0; --words, v += 4) acc = edgec_dot_nibbles(*w++, v, acc);
    return acc;
#endif
}

/* row j's requantization: by its record (q[0]: a left shift for a multiplier over 1, q[1..4] as edgec_rq's) or,
 * without records, the reference requantization */
EDGEC_INLINE int32_t edgec_rnn_rq(int32_t acc, const int32_t *rq, const int32_t *mult, const int32_t *shift, int32_t j)
{
    const int32_t *q = rq + 5 * j;
    return rq ? edgec_rq_value(acc * (1 << q[0]), q[1], q[2], q[3], q[4]) : edgec_requantize(acc, mult[j], shift[j]);
}

/* rows [row0, row0 + rows) of rq(bias + w . v), v laid out in `vec`, rows of `stride` weights (int8, two rows
 * at a time, or int4 when packed) */
static void edgec_rnn_rows(const edgec_w32 *wrows, int32_t stride, int packed, const edgec_w32 *vec,
                           const int32_t *bias, const int32_t *rq, const int32_t *mult, const int32_t *shift,
                           int32_t row0, int32_t rows, int32_t *out)
{
    const int32_t words = packed ? stride >> 3 : stride >> 2;
    const edgec_w32 *w = wrows + row0 * words;
    int32_t r = 0;
    if (!packed) {
        for (; r + 1 < rows; r += 2, w += 2 * words) {
            int32_t acc[2];
            const int32_t j = row0 + r;
            acc[0] = bias ? bias[j] : 0;
            acc[1] = bias ? bias[j + 1] : 0;
            edgec_rnn_dot8x2(w, vec, words, acc);
            out[r] = edgec_rnn_rq(acc[0], rq, mult, shift, j);
            out[r + 1] = edgec_rnn_rq(acc[1], rq, mult, shift, j + 1);
        }
    }
    for (; r < rows; ++r, w += words) {
        const int32_t j = row0 + r, b = bias ? bias[j] : 0;
        const int32_t acc = packed ? edgec_rnn_dot4(w, vec, words, b) : edgec_rnn_dot8(w, vec, words, b);
        out[r] = edgec_rnn_rq(acc, rq, mult, shift, j);
    }
}

static void edgec_rnn_mv_x(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int8_t *x,
                           int32_t *out)
{
    const int32_t n = w->input_size;
    edgec_w32 *xv = (edgec_w32 *)w->work;
    int32_t g, r;
    for (g = 0; 4 * g < w->x_stride; ++g) { /* x widened 4 at a time; those past n are 0 */
        uint32_t v = 0;
        for (r = 0; r < 4 && 4 * g + r < n; ++r) v |= (uint32_t)(uint8_t)x[4 * g + r] << (8 * r);
        edgec_widen(v, xv + 2 * g);
    }
    edgec_rnn_rows((const edgec_w32 *)w->w_x, w->x_stride, w->mv->packed, xv, w->bias_x, w->rq_x, w->mult_x,
                   w->shift_x, row0, rows, out);
}

static void edgec_rnn_mv_h(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *h,
                           int32_t *out)
{
    const int32_t n = w->hidden;
    edgec_w32 *hv = (edgec_w32 *)w->work + (w->x_stride >> 1);
    int32_t g, r;
    for (g = 0; 4 * g < w->h_stride; ++g) { /* (h0, h2), (h1, h3); those past n are 0 */
        uint32_t e[4] = {0, 0, 0, 0};
        for (r = 0; r < 4 && 4 * g + r < n; ++r) e[r] = (uint16_t)h[4 * g + r];
        hv[2 * g] = e[0] | e[2] << 16;
        hv[2 * g + 1] = e[1] | e[3] << 16;
    }
    edgec_rnn_rows((const edgec_w32 *)w->w_h, w->h_stride, w->mv->packed, hv, (const int32_t *)0, w->rq_h, w->mult_h,
                   w->shift_h, row0, rows, out);
}

/* an int16 x (edgec_recurrent_fast_s16): laid out as h is, in x's part of the work buffer */
static void edgec_rnn_mv_x16(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *x,
                             int32_t *out)
{
    const int32_t n = w->input_size;
    edgec_w32 *xv = (edgec_w32 *)w->work;
    int32_t g, r;
    for (g = 0; 4 * g < w->x_stride; ++g) { /* (x0, x2), (x1, x3); those past n are 0 */
        uint32_t e[4] = {0, 0, 0, 0};
        for (r = 0; r < 4 && 4 * g + r < n; ++r) e[r] = (uint16_t)x[4 * g + r];
        xv[2 * g] = e[0] | e[2] << 16;
        xv[2 * g + 1] = e[1] | e[3] << 16;
    }
    edgec_rnn_rows((const edgec_w32 *)w->w_x, w->x_stride, w->mv->packed, xv, w->bias_x, w->rq_x, w->mult_x,
                   w->shift_x, row0, rows, out);
}

static const edgec_recurrent_products EDGEC_RNN_FAST_S8 = {edgec_rnn_mv_x, edgec_rnn_mv_h, edgec_rnn_mv_x16, 4, 0};
static const edgec_recurrent_products EDGEC_RNN_FAST_S4 = {edgec_rnn_mv_x, edgec_rnn_mv_h, edgec_rnn_mv_x16, 8, 1};

void edgec_recurrent_fast_s8(const edgec_recurrent_params *p, const int8_t *input, const uint32_t *w_x,
                             const uint32_t *w_h, const int32_t *bias_x, const int32_t *mult_x,
                             const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb,
                             const int32_t *rb, const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                             const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, void *scratch,
                             int8_t *output)
{
    edgec_recurrent_run(p, &EDGEC_RNN_FAST_S8, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h,
                        init_c, sigmoid, tanh_table, rq_x, rq_h, input, scratch, output);
}

void edgec_recurrent_fast_s4(const edgec_recurrent_params *p, const int8_t *input, const uint32_t *w_x,
                             const uint32_t *w_h, const int32_t *bias_x, const int32_t *mult_x,
                             const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb,
                             const int32_t *rb, const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                             const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, void *scratch,
                             int8_t *output)
{
    edgec_recurrent_run(p, &EDGEC_RNN_FAST_S4, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h,
                        init_c, sigmoid, tanh_table, rq_x, rq_h, input, scratch, output);
}

void edgec_recurrent_fast_s16(const edgec_recurrent_params *p, const int16_t *input, const uint32_t *w_x,
                              const uint32_t *w_h, const int32_t *bias_x, const int32_t *mult_x,
                              const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb,
                              const int32_t *rb, const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                              const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, void *scratch,
                              int16_t *output)
{
    edgec_recurrent_run16(p, &EDGEC_RNN_FAST_S8, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h,
                          init_c, sigmoid, tanh_table, rq_x, rq_h, input, scratch, output);
}
