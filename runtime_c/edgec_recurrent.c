/* edgec LSTM and GRU (ONNX LSTM, GRU; one direction), portable C99. Bit-exact with edgec/ops/recurrent.py.
 * int8 input and output, int8 weights per row, gate pre-activations int16 Q3.12, gate activations and hidden
 * state int16 Q0.15 (TFLite's 513-entry int16 tables with interpolation), LSTM cell state int16 Q4.11. */
#include "edgec_nn_support.h"

#define EDGEC_GATE_BITS 12
#define EDGEC_STATE_BITS 15
#define EDGEC_CELL_BITS 11

/* floor((v + 2^(bits-1)) / 2^bits), without right-shifting a negative value */
static int64_t rshift_round(int64_t v, int32_t bits)
{
    const int64_t r = v + ((int64_t)1 << (bits - 1));
    return r >= 0 ? r >> bits : ~((~r) >> bits);
}

/* the same in 32 bits, for products of two int16 values (|v| < 2^31 - 2^(bits-1)) */
static int32_t rshift_round32(int32_t v, int32_t bits)
{
    const int32_t r = v + ((int32_t)1 << (bits - 1));
    return r >= 0 ? r >> bits : ~((~r) >> bits);
}

static int32_t sat16(int64_t v)
{
    return v < -32768 ? -32768 : (v > 32767 ? 32767 : (int32_t)v);
}

/* the same for an int32 (one SSAT on Arm) */
static int32_t sat16_32(int32_t v)
{
    return v < -32768 ? -32768 : (v > 32767 ? 32767 : v);
}

/* TFLite lut_lookup_with_interpolation (int16): entry (v >> 7) + 256 and the next, by the low 7 bits (v in
 * int16; the result lies between the two entries, so TFLite's final saturation never acts and is left out) */
static int32_t lookup16(const int16_t *table, int32_t v)
{
    const int32_t u = v + 32768;
    const int32_t base = table[u >> 7];
    return base + rshift_round32((table[(u >> 7) + 1] - base) * (u & 0x7F), 7);
}

/* gate g's (0 i, 1 o, 2 f) pre-activation of unit j + its peephole term rq(p * c), saturated to int16 (|p|, |c| <=
 * 32768: the product fits 32 bits; the multiplier is under 1, so the sum does too) */
static int32_t peeped(const edgec_recurrent_params *p, const int16_t *peep, int32_t g, int32_t hid, int32_t j,
                      int32_t pre, int32_t cell)
{
    return sat16_32(pre + edgec_requantize(peep[g * hid + j] * cell, p->peep_mult[g], p->peep_shift[g]));
}

/* The portable matrix products, requantized: rows [row0, row0 + rows) of rq(bias + wm . v, mult, shift), v the
 * int8 x or (x null) the int16 h; weights int8, or int4 packed two per byte (mv->packed). */
static void rows_portable(const edgec_recurrent_weights *w, const void *wm, int32_t stride, int32_t n, const int8_t *x,
                          const int16_t *h, const int32_t *bias, const int32_t *mult, const int32_t *shift, int32_t row0,
                          int32_t rows, int32_t *out)
{
    const int packed = w->mv->packed;
    int32_t r, k;
    for (r = 0; r < rows; ++r) {
        const int32_t j = row0 + r, base = j * stride;
        int32_t acc = bias ? bias[j] : 0;
        for (k = 0; k < n; ++k) acc += edgec_weight_at((const int8_t *)wm, base + k, packed) * (x ? x[k] : h[k]);
        out[r] = edgec_requantize(acc, mult[j], shift[j]);
    }
}

static void mv_x_portable(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int8_t *x,
                          int32_t *out)
{
    rows_portable(w, w->w_x, w->x_stride, w->input_size, x, (const int16_t *)0, w->bias_x, w->mult_x, w->shift_x,
                  row0, rows, out);
}

static void mv_h_portable(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *h,
                          int32_t *out)
{
    rows_portable(w, w->w_h, w->h_stride, w->hidden, (const int8_t *)0, h, (const int32_t *)0, w->mult_h, w->shift_h,
                  row0, rows, out);
}

static void mv_x16_portable(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *x,
                            int32_t *out)
{
    rows_portable(w, w->w_x, w->x_stride, w->input_size, (const int8_t *)0, x, w->bias_x, w->mult_x, w->shift_x,
                  row0, rows, out);
}

static int32_t clamp32(int64_t v)
{
    return (int32_t)(v < INT32_MIN ? INT32_MIN : (v > INT32_MAX ? INT32_MAX : v));
}

/* One step of one sequence of the batch: h, c updated in place from input x, or the int16 x16 (x null)
 * (scratch: pre, hn, rh). */
#if defined(__GNUC__)
__attribute__((always_inline)) static inline /* as recurrent_sequence, its one caller */
#else
static
#endif
void recurrent_step(const edgec_recurrent_params *p, const edgec_recurrent_weights *w, const int8_t *x,
                           const int16_t *x16, int32_t *pre, int32_t *hn, int16_t *rh, int16_t *h, int16_t *c)
{
    const int32_t hid = p->hidden;
    const int32_t gates = p->gru ? 3 : 4;
    const int16_t *sigmoid = w->sigmoid, *tanh_table = w->tanh_table;
    int32_t j, q;
    if (x) {
        w->mv->mv_x(w, 0, gates * hid, x, pre);           /* rq(bias_x + w_x . x), every gate row */
    } else {
        w->mv->mv_x16(w, 0, gates * hid, x16, pre);       /* rq(bias_x + w_x . x16) */
    }
    for (q = 0; q < gates; ++q) {                     /* + the h part, gate by gate (GRU: z and r) */
        int32_t *g = pre + q * hid;
        const int32_t *wb = w->wb + q * hid, *rb = w->rb + q * hid;
        if (p->gru && q == 2) {                       /* (GRU's n gate: its h part comes below) */
            for (j = 0; j < hid; ++j) g[j] = clamp32((int64_t)g[j] + wb[j]);
            break;
        }
        w->mv->mv_h(w, q * hid, hid, h, hn);
        for (j = 0; j < hid; ++j) g[j] = sat16((int64_t)g[j] + wb[j] + hn[j] + rb[j]);
    }
    if (!p->gru) {
        /* the peephole weights after the initial cell state (null: none) */
        const int16_t *peep = p->peephole ? w->init_c + p->batch * hid : (const int16_t *)0;
        for (j = 0; j < hid; ++j) {
            /* gates in [0, 32767] or [-32768, 32767], states int16: every product fits 32 bits */
            const int32_t i_g = lookup16(sigmoid, peep ? peeped(p, peep, 0, hid, j, pre[j], c[j]) : pre[j]);
            const int32_t f_g =
                lookup16(sigmoid, peep ? peeped(p, peep, 2, hid, j, pre[2 * hid + j], c[j]) : pre[2 * hid + j]);
            const int32_t g_g = lookup16(tanh_table, pre[3 * hid + j]);
            const int32_t cell = sat16_32(rshift_round32(f_g * c[j], EDGEC_STATE_BITS) +
                                          rshift_round32(i_g * g_g, 2 * EDGEC_STATE_BITS - EDGEC_CELL_BITS));
            const int32_t o_g =
                lookup16(sigmoid, peep ? peeped(p, peep, 1, hid, j, pre[hid + j], cell) : pre[hid + j]);
            const int32_t tc = lookup16(tanh_table, sat16_32(cell * (1 << (EDGEC_GATE_BITS - EDGEC_CELL_BITS))));
            c[j] = (int16_t)cell;
            h[j] = (int16_t)rshift_round32(o_g * tc, EDGEC_STATE_BITS);
        }
        return;
    }
    if (p->linear_before_reset) w->mv->mv_h(w, 2 * hid, hid, h, hn);
    for (j = 0; j < hid; ++j) {
        const int32_t r = lookup16(sigmoid, pre[hid + j]);
        const int32_t row = 2 * hid + j;
        if (p->linear_before_reset) {
            const int64_t v = (int64_t)hn[j] + w->rb[row];
            hn[j] = (int32_t)rshift_round((int64_t)r * clamp32(v), EDGEC_STATE_BITS);
        } else {
            rh[j] = (int16_t)rshift_round32(r * h[j], EDGEC_STATE_BITS);
        }
    }
    if (!p->linear_before_reset) w->mv->mv_h(w, 2 * hid, hid, rh, hn);
    for (j = 0; j < hid; ++j) {
        const int32_t row = 2 * hid + j;
        const int32_t z = lookup16(sigmoid, pre[j]);      /* (32768 - z) * n + z * h: |.| <= 2^30 */
        int64_t v = pre[row];
        if (p->linear_before_reset) {
            v += hn[j];
        } else {
            v += (int64_t)hn[j] + w->rb[row];
        }
        h[j] = (int16_t)rshift_round32((32768 - z) * lookup16(tanh_table, sat16(v)) + z * h[j], EDGEC_STATE_BITS);
    }
}

/* input and output int8, or (wide) int16 with zero point 0 (edgec_recurrent_s16) */
#if defined(__GNUC__)
__attribute__((always_inline)) static inline /* its one caller is inlined into three entries (below) */
#else
static
#endif
void recurrent_sequence(const edgec_recurrent_params *p, const edgec_recurrent_weights *w,
                               const void *input, void *scratch, void *output, int wide)
{
    const int32_t hid = p->hidden, steps = p->steps, batch = p->batch;
    const int32_t gates = p->gru ? 3 : 4;
    int32_t *pre = (int32_t *)scratch;             /* [gates * hid] */
    int32_t *hn = pre + gates * hid;               /* [hid] */
    int16_t *h = (int16_t *)(void *)(hn + hid);    /* [batch][hid] */
    int16_t *c = h + batch * hid;                  /* [batch][hid] */
    int16_t *rh = c + batch * hid;                 /* [hid] */
    int32_t step, b, j;
    for (j = 0; j < batch * hid; ++j) {
        h[j] = w->init_h[j];
        c[j] = w->init_c[j];
    }
    for (step = 0; step < steps; ++step) {
        const int32_t t = p->reverse ? steps - 1 - step : step;
        for (b = 0; b < batch; ++b) {
            int16_t *hb = h + b * hid;
            const int32_t at = (t * batch + b) * p->input_size;
            recurrent_step(p, w, wide ? (const int8_t *)0 : (const int8_t *)input + at,
                           wide ? (const int16_t *)input + at : (const int16_t *)0, pre, hn, rh, hb, c + b * hid);
            if (p->output == 0 || step == steps - 1) {     /* every step's h, or the last h or c */
                const int16_t *state = p->output == 2 ? c + b * hid : hb;
                const int32_t y0 = (p->output == 0 ? t * batch * hid : 0) + b * hid;
                for (j = 0; j < hid; ++j) {
                    const int32_t q = edgec_requantize(state[j], p->out_mult, p->out_shift) + p->output_zp;
                    if (wide) {
                        ((int16_t *)output)[y0 + j] = (int16_t)edgec_clamp(q, -32768, 32767);
                    } else {
                        ((int8_t *)output)[y0 + j] = (int8_t)edgec_clamp(q, -128, 127);
                    }
                }
            }
        }
    }
}

static const edgec_recurrent_products PORTABLE_S8 = {mv_x_portable, mv_h_portable, mv_x16_portable, 1, 0};
static const edgec_recurrent_products PORTABLE_S4 = {mv_x_portable, mv_h_portable, mv_x16_portable, 1, 1};

/* Inlined into its three entries (each a firmware links one of: the int8 run, the int16 run, the portable int16):
 * called, the entries' 21 arguments (17 on the stack) were a frame of their own under it, 80 B of stack more than
 * the int8 recurrence had before the int16 one shared this body (an LSTM's measured stack 776 -> 816 B). */
#if defined(__GNUC__)
__attribute__((always_inline)) static inline
#else
static
#endif
void recurrent_run(const edgec_recurrent_params *p, const edgec_recurrent_products *mv, const void *w_x,
                          const void *w_h, const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                          const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                          const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                          const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, const void *input,
                          void *scratch, void *output, int wide)
{
    const int32_t hid = p->hidden, gates = p->gru ? 3 : 4;
    edgec_recurrent_weights w;
    w.mv = mv;
    w.w_x = w_x;
    w.w_h = w_h;
    w.x_stride = (p->input_size + mv->pad - 1) / mv->pad * mv->pad;
    w.h_stride = (hid + mv->pad - 1) / mv->pad * mv->pad;
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
    /* after the recurrence's own scratch, edgec_recurrent_s8_get_buffer_size(p) rounded up to 4, written out: the
     * call would make gcc stop inlining recurrent_sequence here (200 bytes more code on the Cortex-M4) */
    w.work = (int8_t *)scratch + ((4 * (gates + 1) * hid + 2 * (2 * p->batch + 1) * hid + 3) & ~3);
    recurrent_sequence(p, &w, input, scratch, output, wide);
}

void edgec_recurrent_run(const edgec_recurrent_params *p, const edgec_recurrent_products *mv, const void *w_x,
                         const void *w_h, const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                         const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                         const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                         const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, const int8_t *input,
                         void *scratch, int8_t *output)
{
    recurrent_run(p, mv, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h, init_c, sigmoid,
                  tanh_table, rq_x, rq_h, input, scratch, output, 0);
}

void edgec_recurrent_s8(const edgec_recurrent_params *p, const int8_t *input, const int8_t *w_x, const int8_t *w_h,
                        const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                        const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                        const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                        const int16_t *tanh_table, void *scratch, int8_t *output)
{
    edgec_recurrent_run(p, &PORTABLE_S8, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h, init_c,
                        sigmoid, tanh_table, (const int32_t *)0, (const int32_t *)0, input, scratch, output);
}

void edgec_recurrent_s4(const edgec_recurrent_params *p, const int8_t *input, const int8_t *w_x, const int8_t *w_h,
                        const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                        const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                        const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                        const int16_t *tanh_table, void *scratch, int8_t *output)
{
    edgec_recurrent_run(p, &PORTABLE_S4, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h, init_c,
                        sigmoid, tanh_table, (const int32_t *)0, (const int32_t *)0, input, scratch, output);
}

void edgec_recurrent_run16(const edgec_recurrent_params *p, const edgec_recurrent_products *mv, const void *w_x,
                           const void *w_h, const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                           const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                           const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                           const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, const int16_t *input,
                           void *scratch, int16_t *output)
{
    recurrent_run(p, mv, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h, init_c, sigmoid,
                  tanh_table, rq_x, rq_h, input, scratch, output, 1);
}

void edgec_recurrent_s16(const edgec_recurrent_params *p, const int16_t *input, const int8_t *w_x, const int8_t *w_h,
                         const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                         const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                         const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                         const int16_t *tanh_table, void *scratch, int16_t *output)
{
    recurrent_run(p, &PORTABLE_S8, w_x, w_h, bias_x, mult_x, shift_x, mult_h, shift_h, wb, rb, init_h, init_c,
                  sigmoid, tanh_table, (const int32_t *)0, (const int32_t *)0, input, scratch, output, 1);
}
