/* edgec's TFLite integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM: int8 input, hidden state and output, or in 16x8 int16
 * ones; an int16 cell state), portable C99, computed as TFLite Micro's lstm_eval computes it. Bit-exact with
 * edgec/ops/recurrent_tflite.py (whose doc gives the arithmetic). */
#include "edgec_lstm_tflite_act.h"

/* The two kernels' one body: ACT the activations' type (input, hidden state, output), ACC the gate products'
 * accumulator (int8: uint32_t, TFLite Micro's int32 sum wrapping; 16x8: int64_t), RQ its requantization (int8:
 * TFLite's 32-bit MultiplyByQuantizedMultiplier; 16x8: its 64-bit one), LO / HI the hidden state's range. */
#define EDGEC_LSTM_TFLITE_BODY(ACT, ACC, RQ, LO, HI)                                                              \
    const int32_t hid = p->hidden, n_in = p->input_size, state = p->batch * hid;                                 \
    int16_t *gate = (int16_t *)scratch;         /* [4][batch][hidden]: forget, input, cell, output */            \
    int32_t cm, cs, t, b, g, j, k;                                                                              \
    tanh_params(p->cell_power, &cm, &cs);                                                                       \
    for (t = 0; t < p->steps; ++t) {                                                                            \
        for (b = 0; b < p->batch; ++b) {                                                                        \
            const ACT *x = input + (p->time_major ? (t * p->batch + b) : (b * p->steps + t)) * n_in;             \
            const ACT *hb = h + b * hid;                                                                        \
            for (g = 0; g < 4; ++g) {                                                                           \
                for (j = 0; j < hid; ++j) {                                                                     \
                    const int8_t *wx = w_x + (g * hid + j) * n_in, *wh = w_h + (g * hid + j) * hid;              \
                    ACC ax = (ACC)bias[g * hid + j], ah = 0;                                                    \
                    int32_t pre;                                                                                \
                    for (k = 0; k < n_in; ++k) ax += (ACC)((int32_t)wx[k] * ((int32_t)x[k] - p->input_zp));      \
                    for (k = 0; k < hid; ++k) ah += (ACC)((int32_t)wh[k] * ((int32_t)hb[k] - p->hidden_zp));     \
                    pre = clamp16(clamp16(RQ(ax, mult_x[g], shift_x[g])) + clamp16(RQ(ah, mult_h[g], shift_h[g]))); \
                    gate[g * state + b * hid + j] = (g == 2 && !p->cell_sigmoid) ? tanh16(pre, 3, 0) : sigmoid16(pre); \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
        for (k = 0; k < state; ++k) {     /* the gates read every h of the step before: then update the states */ \
            const int32_t f = gate[k], i = gate[state + k], cg = gate[2 * state + k], o = gate[3 * state + k];  \
            int32_t cn = clamp16(clamp16(edgec_requantize(f * c[k], p->fc_mult, p->fc_shift)) +                 \
                                 clamp16(edgec_requantize(i * cg, p->ig_mult, p->ig_shift)));                   \
            if (p->cell_clip > 0) cn = edgec_clamp(cn, -p->cell_clip, p->cell_clip);                            \
            c[k] = (int16_t)cn;                                                                                 \
            h[k] = (ACT)edgec_clamp(edgec_requantize(tanh16(cn, cm, cs) * o, p->oh_mult, p->oh_shift) +          \
                                        p->hidden_zp, LO, HI);                                                  \
        }                                                                                                       \
        for (b = 0; b < p->batch; ++b) {                                                                        \
            ACT *y = output + (p->time_major ? (t * p->batch + b) : (b * p->steps + t)) * hid;                   \
            for (j = 0; j < hid; ++j) y[j] = h[b * hid + j];                                                    \
        }                                                                                                       \
    }

#define EDGEC_LSTM_RQ32(acc, mult, shift) edgec_requantize(wrap32(acc), (mult), (shift))

void edgec_lstm_tflite_s8(const edgec_lstm_tflite_params *p, const int8_t *input, const int8_t *w_x,
                          const int8_t *w_h, const int32_t *bias, const int32_t *mult_x, const int32_t *shift_x,
                          const int32_t *mult_h, const int32_t *shift_h, int16_t *c, int8_t *h, void *scratch,
                          int8_t *output)
{
    EDGEC_LSTM_TFLITE_BODY(int8_t, uint32_t, EDGEC_LSTM_RQ32, -128, 127)
}

/* 16x8: int16 input, hidden state (zero point 0) and output, int64 gate biases and sums (TFLite Micro's
 * FullyConnected<int16_t, int8_t, int64_t>) */
void edgec_lstm_tflite_s16(const edgec_lstm_tflite_params *p, const int16_t *input, const int8_t *w_x,
                           const int8_t *w_h, const int64_t *bias, const int32_t *mult_x, const int32_t *shift_x,
                           const int32_t *mult_h, const int32_t *shift_h, int16_t *c, int16_t *h, void *scratch,
                           int16_t *output)
{
    EDGEC_LSTM_TFLITE_BODY(int16_t, int64_t, edgec_requantize64, -32768, 32767)
}
