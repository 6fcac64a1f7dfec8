/* edgec's TFLite integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM: int8 input, hidden state and output, int16 cell
 * state), portable C99, computed as TFLite Micro's lstm_eval computes it. Bit-exact with
 * edgec/ops/recurrent_tflite.py (whose doc gives the arithmetic). */
#include "edgec_lstm_tflite_act.h"

void edgec_lstm_tflite_s8(const edgec_lstm_tflite_params *p, const int8_t *input, const int8_t *w_x,
                          const int8_t *w_h, const int32_t *bias, const int32_t *mult_x, const int32_t *shift_x,
                          const int32_t *mult_h, const int32_t *shift_h, int16_t *c, int8_t *h, void *scratch,
                          int8_t *output)
{
    const int32_t hid = p->hidden, n_in = p->input_size, state = p->batch * hid;
    int16_t *gate = (int16_t *)scratch;         /* [4][batch][hidden]: forget, input, cell, output */
    int32_t cm, cs, t, b, g, j, k;
    tanh_params(p->cell_power, &cm, &cs);
    for (t = 0; t < p->steps; ++t) {
        for (b = 0; b < p->batch; ++b) {
            const int8_t *x = input + (p->time_major ? (t * p->batch + b) : (b * p->steps + t)) * n_in;
            const int8_t *hb = h + b * hid;
            for (g = 0; g < 4; ++g) {
                for (j = 0; j < hid; ++j) {
                    const int8_t *wx = w_x + (g * hid + j) * n_in, *wh = w_h + (g * hid + j) * hid;
                    uint32_t ax = (uint32_t)bias[g * hid + j], ah = 0;
                    int32_t pre;
                    for (k = 0; k < n_in; ++k) ax += (uint32_t)(wx[k] * ((int32_t)x[k] - p->input_zp));
                    for (k = 0; k < hid; ++k) ah += (uint32_t)(wh[k] * ((int32_t)hb[k] - p->hidden_zp));
                    pre = clamp16(clamp16(edgec_requantize(wrap32(ax), mult_x[g], shift_x[g])) +
                                  clamp16(edgec_requantize(wrap32(ah), mult_h[g], shift_h[g])));
                    gate[g * state + b * hid + j] = (g == 2 && !p->cell_sigmoid) ? tanh16(pre, 3, 0) : sigmoid16(pre);
                }
            }
        }
        for (k = 0; k < state; ++k) {     /* the gates read every h of the step before: then update the states */
            const int32_t f = gate[k], i = gate[state + k], cg = gate[2 * state + k], o = gate[3 * state + k];
            int32_t cn = clamp16(clamp16(edgec_requantize(f * c[k], p->fc_mult, p->fc_shift)) +
                                 clamp16(edgec_requantize(i * cg, p->ig_mult, p->ig_shift)));
            if (p->cell_clip > 0) cn = edgec_clamp(cn, -p->cell_clip, p->cell_clip);
            c[k] = (int16_t)cn;
            h[k] = (int8_t)edgec_clamp(edgec_requantize(tanh16(cn, cm, cs) * o, p->oh_mult, p->oh_shift) +
                                           p->hidden_zp, -128, 127);
        }
        for (b = 0; b < p->batch; ++b) {
            int8_t *y = output + (p->time_major ? (t * p->batch + b) : (b * p->steps + t)) * hid;
            for (j = 0; j < hid; ++j) y[j] = h[b * hid + j];
        }
    }
}
