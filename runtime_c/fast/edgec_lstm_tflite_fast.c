/* edgec's fast TFLite integer LSTM (declared in edgec_nn.h; edgec/ops/recurrent_tflite.py lower_lstm_tflite packs
 * its constants): the arithmetic of edgec_lstm_tflite_s8 (../edgec_recurrent_tflite.c), bit for bit, with
 *  - the weights pre-widened to int16 at build time and laid out per hidden unit j: its four gate rows (forget,
 *    input, cell, output) interleaved by groups of 4 inputs, each row's group as the int16 pairs (w0, w2),
 *    (w1, w3) that meet the vector widened by SXTB16 (edgec_widen): one SMLAD per 2 MACs, each vector word
 *    loaded once for the four rows; rows zero-padded to whole groups;
 *  - the zero points folded into the biases at build time (bias - zp * row sum, modulo 2^32 as TFLM's int32
 *    sums wrap), so the products read the raw int8 input and hidden state;
 *  - no gate buffer: unit j's four gates are computed together, then its cell and hidden state at once (the
 *    products of the step read the widened copy of the previous hidden state, so h is updated in place);
 *  - the requantization of each product by an edgec_rq record (field 0: the left shift of a multiplier over 1)
 *    where the accumulator bound allows (rq_x / rq_h non-null), else TFLite's reference requantization. */
#include "edgec_fast_support.h"
#include "../edgec_lstm_tflite_act.h"

#define LSTM_GATES 4

/* acc[g] += row g . v over `groups` groups of 4 (8 int16 pairs a group: row 0's two words, row 1's, ...) */
static EDGEC_HOT void edgec_lstm_dot4(const edgec_w32 *w, const edgec_w32 *v, int32_t groups, int32_t *acc)
{
#ifdef EDGEC_DSP
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (; groups >= 2; groups -= 2, w += 16, v += 4) {
        uint32_t x0, x1, p, q;
        E_LDRD(x0, x1, v, 0);
        E_LDRD(p, q, w, 0);
        a0 = E_SMLAD(p, x0, a0);
        a0 = E_SMLAD(q, x1, a0);
        E_LDRD(p, q, w, 2);
        a1 = E_SMLAD(p, x0, a1);
        a1 = E_SMLAD(q, x1, a1);
        E_LDRD(p, q, w, 4);
        a2 = E_SMLAD(p, x0, a2);
        a2 = E_SMLAD(q, x1, a2);
        E_LDRD(p, q, w, 6);
        a3 = E_SMLAD(p, x0, a3);
        a3 = E_SMLAD(q, x1, a3);
        E_LDRD(x0, x1, v, 2);
        E_LDRD(p, q, w, 8);
        a0 = E_SMLAD(p, x0, a0);
        a0 = E_SMLAD(q, x1, a0);
        E_LDRD(p, q, w, 10);
        a1 = E_SMLAD(p, x0, a1);
        a1 = E_SMLAD(q, x1, a1);
        E_LDRD(p, q, w, 12);
        a2 = E_SMLAD(p, x0, a2);
        a2 = E_SMLAD(q, x1, a2);
        E_LDRD(p, q, w, 14);
        a3 = E_SMLAD(p, x0, a3);
        a3 = E_SMLAD(q, x1, a3);
    }
    if (groups) {
        uint32_t x0, x1, p, q;
        E_LDRD(x0, x1, v, 0);
        E_LDRD(p, q, w, 0);
        a0 = E_SMLAD(p, x0, a0);
        a0 = E_SMLAD(q, x1, a0);
        E_LDRD(p, q, w, 2);
        a1 = E_SMLAD(p, x0, a1);
        a1 = E_SMLAD(q, x1, a1);
        E_LDRD(p, q, w, 4);
        a2 = E_SMLAD(p, x0, a2);
        a2 = E_SMLAD(q, x1, a2);
        E_LDRD(p, q, w, 6);
        a3 = E_SMLAD(p, x0, a3);
        a3 = E_SMLAD(q, x1, a3);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
#else
    /* the same int16 sequences (x0, x2, x1, x3 against w0, w2, w1, w3), summed modulo 2^32 */
    const edgec_h16 *wh = (const edgec_h16 *)(const void *)w, *vh = (const edgec_h16 *)(const void *)v;
    uint32_t s[LSTM_GATES];
    int32_t g, k;
    for (g = 0; g < LSTM_GATES; ++g) s[g] = (uint32_t)acc[g];
    for (; groups > 0; --groups, wh += 16, vh += 4) {
        for (g = 0; g < LSTM_GATES; ++g) {
            for (k = 0; k < 4; ++k) s[g] += (uint32_t)((int32_t)wh[4 * g + k] * vh[k]);
        }
    }
    for (g = 0; g < LSTM_GATES; ++g) acc[g] = wrap32(s[g]);
#endif
}

/* n int8 values as groups of 4 widened to the two int16-pair words edgec_widen gives; those past n are 0 */
static void edgec_lstm_widen(const int8_t *src, int32_t n, edgec_w32 *dst)
{
    int32_t k = 0;
    for (; k + 4 <= n; k += 4, dst += 2) {
        const uint32_t v = (uint32_t)(uint8_t)src[k] | (uint32_t)(uint8_t)src[k + 1] << 8 |
                           (uint32_t)(uint8_t)src[k + 2] << 16 | (uint32_t)(uint8_t)src[k + 3] << 24;
        edgec_widen(v, dst);
    }
    if (k < n) {
        uint32_t v = 0;
        int32_t r;
        for (r = 0; k + r < n; ++r) v |= (uint32_t)(uint8_t)src[k + r] << (8 * r);
        edgec_widen(v, dst);
    }
}

/* a gate product's int16 value: its record's requantization, or TFLite's reference one (of the wrapped sum) */
EDGEC_INLINE int32_t edgec_lstm_rq(int32_t acc, const int32_t *rq, const int32_t *mult, const int32_t *shift,
                                   int32_t g)
{
    const int32_t *q = rq + 5 * g;
    return clamp16(rq ? edgec_rq_value(acc * (1 << q[0]), q[1], q[2], q[3], q[4])
                      : edgec_requantize(acc, mult[g], shift[g]));
}

void edgec_lstm_tflite_fast_s8(const edgec_lstm_tflite_params *p, const int8_t *input, const uint32_t *w_x,
                               const uint32_t *w_h, const int32_t *bias, const int32_t *mult_x,
                               const int32_t *shift_x, const int32_t *mult_h, const int32_t *shift_h,
                               const int32_t *rq_x, const int32_t *rq_h, int16_t *c, int8_t *h, void *scratch,
                               int8_t *output)
{
    const int32_t hid = p->hidden, n_in = p->input_size, gx = (n_in + 3) >> 2, gh = (hid + 3) >> 2;
    edgec_w32 *xv = (edgec_w32 *)scratch, *hv = xv + 2 * gx;     /* the widened input and hidden state */
    int32_t cm, cs, t, b, j, g;
    tanh_params(p->cell_power, &cm, &cs);
    for (t = 0; t < p->steps; ++t) {
        for (b = 0; b < p->batch; ++b) {
            const int32_t row = p->time_major ? (t * p->batch + b) : (b * p->steps + t);
            const edgec_w32 *wx = (const edgec_w32 *)w_x, *wh = (const edgec_w32 *)w_h;
            const int32_t *bj = bias;
            int16_t *cb = c + b * hid;
            int8_t *hb = h + b * hid, *y = output + row * hid;
            edgec_lstm_widen(input + row * n_in, n_in, xv);
            edgec_lstm_widen(hb, hid, hv);
            for (j = 0; j < hid; ++j, wx += 8 * gx, wh += 8 * gh, bj += 2 * LSTM_GATES) {
                int32_t ax[LSTM_GATES], ah[LSTM_GATES], gate[LSTM_GATES], cn, hn;
                for (g = 0; g < LSTM_GATES; ++g) {
                    ax[g] = bj[g];
                    ah[g] = bj[LSTM_GATES + g];
                }
                edgec_lstm_dot4(wx, xv, gx, ax);
                edgec_lstm_dot4(wh, hv, gh, ah);
                for (g = 0; g < LSTM_GATES; ++g) {
                    const int32_t pre = clamp16(edgec_lstm_rq(ax[g], rq_x, mult_x, shift_x, g) +
                                                edgec_lstm_rq(ah[g], rq_h, mult_h, shift_h, g));
                    gate[g] = (g == 2 && !p->cell_sigmoid) ? tanh16(pre, 3, 0) : sigmoid16(pre);
                }
                cn = clamp16(clamp16(edgec_requantize(gate[0] * cb[j], p->fc_mult, p->fc_shift)) +
                             clamp16(edgec_requantize(gate[1] * gate[2], p->ig_mult, p->ig_shift)));
                if (p->cell_clip > 0) cn = edgec_clamp(cn, -p->cell_clip, p->cell_clip);
                cb[j] = (int16_t)cn;
                hn = edgec_clamp(edgec_requantize(tanh16(cn, cm, cs) * gate[3], p->oh_mult, p->oh_shift) +
                                     p->hidden_zp, -128, 127);
                hb[j] = (int8_t)hn;
                y[j] = (int8_t)hn;
            }
        }
    }
}
