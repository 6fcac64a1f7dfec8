/* edgec fast LSTM / GRU (declared in edgec_nn.h, machinery in edgec_fast_support.h): the portable recurrence
 * (edgec_recurrent_run, ../edgec_recurrent.c) with its gate matrix products on SMLAD. Weight rows are
 * zero-padded to whole words at build time (edgec/ops/recurrent.py lower_recurrent) and stay int8; the vector
 * (x, or the int16 hidden state) is laid out once per product as int16 pairs (v0, v2), (v1, v3) per group of
 * 4, which meet SXTB16's (w0, w2) and its rotated (w1, w3); each row requantized by its edgec_rq record. */
#include "edgec_fast_support.h"

/* acc + row . vector over `groups` groups of 4 (the vector laid out as above) */
static EDGEC_HOT int32_t edgec_rnn_dot(const edgec_w32 *w, const edgec_w32 *v, int32_t groups, int32_t acc)
{
    for (; groups > 0; --groups, v += 2) {
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

static void edgec_rnn_mv_x(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int8_t *x,
                           int32_t *out)
{
    const int32_t n = w->input_size, groups = w->x_stride >> 2;
    edgec_w32 *xv = (edgec_w32 *)w->work;
    const edgec_w32 *wx = (const edgec_w32 *)w->w_x + row0 * groups;
    int32_t g, r;
    for (g = 0; g < groups; ++g) { /* x widened 4 at a time; those past n are 0 */
        uint32_t v = 0;
        for (r = 0; r < 4 && 4 * g + r < n; ++r) v |= (uint32_t)(uint8_t)x[4 * g + r] << (8 * r);
        edgec_widen(v, xv + 2 * g);
    }
    for (r = 0; r < rows; ++r, wx += groups) {
        const int32_t j = row0 + r, acc = edgec_rnn_dot(wx, xv, groups, w->bias_x[j]);
        const int32_t *q = w->rq_x + 5 * j;       /* (no records: a multiplier over 1, the reference's) */
        out[r] = w->rq_x ? edgec_rq_value(acc, q[1], q[2], q[3], q[4]) : edgec_requantize(acc, w->mult_x[j], w->shift_x[j]);
    }
}

static void edgec_rnn_mv_h(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *h,
                           int32_t *out)
{
    const int32_t n = w->hidden, groups = w->h_stride >> 2;
    edgec_w32 *hv = (edgec_w32 *)w->work + 2 * (w->x_stride >> 2);
    const edgec_w32 *wh = (const edgec_w32 *)w->w_h + row0 * groups;
    int32_t g, r;
    for (g = 0; g < groups; ++g) { /* (h0, h2), (h1, h3); those past n are 0 */
        uint32_t e[4] = {0, 0, 0, 0};
        for (r = 0; r < 4 && 4 * g + r < n; ++r) e[r] = (uint16_t)h[4 * g + r];
        hv[2 * g] = e[0] | e[2] << 16;
        hv[2 * g + 1] = e[1] | e[3] << 16;
    }
    for (r = 0; r < rows; ++r, wh += groups) {
        const int32_t j = row0 + r, acc = edgec_rnn_dot(wh, hv, groups, 0);
        const int32_t *q = w->rq_h + 5 * j;
        out[r] = w->rq_h ? edgec_rq_value(acc, q[1], q[2], q[3], q[4]) : edgec_requantize(acc, w->mult_h[j], w->shift_h[j]);
    }
}

void edgec_recurrent_fast_s8(const edgec_recurrent_params *p, const uint32_t *w_x, const uint32_t *w_h,
                             const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                             const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                             const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                             const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h,
                             const int8_t *input, void *scratch, int8_t *output)
{
    const int32_t hid = p->hidden, gates = p->gru ? 3 : 4;
    const int32_t own = (4 * (gates + 1) * hid + 2 * (2 * p->batch + 1) * hid + 3) & ~3;
    edgec_recurrent_weights w;
    w.w_x = w_x;
    w.w_h = w_h;
    w.x_stride = (p->input_size + 3) & ~3;
    w.h_stride = (hid + 3) & ~3;
    w.input_size = p->input_size;
    w.hidden = hid;
    w.bias_x = bias_x;
    w.mult_x = mult_x;
    w.shift_x = shift_x;
    w.mult_h = mult_h;
    w.shift_h = shift_h;
    w.wb = wb;
    w.rb = rb;
    w.init_h = init_h;
    w.init_c = init_c;
    w.sigmoid = sigmoid;
    w.tanh_table = tanh_table;
    w.rq_x = rq_x;
    w.rq_h = rq_h;
    w.work = (int8_t *)scratch + own;
    w.mv_x = edgec_rnn_mv_x;
    w.mv_h = edgec_rnn_mv_h;
    edgec_recurrent_run(p, &w, input, scratch, output);
}
