/* edgec's TFLite integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM: int8 input, hidden state and output, int16 cell
 * state), portable C99, computed as TFLite Micro's lstm_eval computes it. Bit-exact with
 * edgec/ops/recurrent_tflite.py (whose doc gives the arithmetic). */
#include "edgec_nn_support.h"

/* floor(v / 2^s), without right-shifting a negative value */
static int32_t asr32(int32_t v, int32_t s)
{
    return v >= 0 ? v >> s : ~((~v) >> s);
}

/* an int32 sum kept modulo 2^32 (TFLite Micro's int32 accumulators wrap on overflow; here without the undefined
 * behaviour), back to int32 */
static int32_t wrap32(uint32_t v)
{
    return v < 0x80000000u ? (int32_t)v : -(int32_t)(~v) - 1;
}

static int32_t clamp16(int32_t v)
{
    return v < -32768 ? -32768 : (v > 32767 ? 32767 : v);
}

/* TFLite's sigmoid_table_uint16: sigmoid(k / 24) in unsigned 0.16 (tensorflow/lite/kernels/internal/common.h) */
static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535};

/* TFLite's int16 Logistic of a Q3.12 value (input multiplier 3, no shift) -> Q0.15 */
static int16_t sigmoid16(int32_t v)
{
    const int32_t x = v * 3;
    const uint32_t a = (uint32_t)(x < 0 ? -x : x), uh = a >> 9;
    uint32_t r;
    if (uh >= 255) {
        r = 0x7FFFu << 10;
    } else {
        const uint32_t ua = sigmoid_table[uh], ub = sigmoid_table[uh + 1];
        r = (ua << 9) + (a & 0x1FFu) * (ub - ua);
    }
    r = x >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(r >> 10);
}

/* TFLite's int16 Tanh of v * mult / 2^shift (rounded) -> Q0.15 */
static int16_t tanh16(int32_t v, int32_t mult, int32_t shift)
{
    const int32_t x = asr32(v * mult + (shift > 0 ? (int32_t)1 << (shift - 1) : 0), shift);
    const uint32_t a = (uint32_t)(x < 0 ? -x : x), uh = a >> 8;
    int32_t r;
    if (uh >= 255) {
        r = (int32_t)(0xFFFFu << 8);
    } else {
        const uint32_t ua = sigmoid_table[uh], ub = sigmoid_table[uh + 1];
        r = (int32_t)((ua << 8) + (a & 0xFFu) * (ub - ua));
    }
    r = x >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)asr32(r, 8);
}

/* tanh's (multiplier, shift) of an int16 input of scale 2^power (TFLM's lstm_internal::Tanh) */
static void tanh_params(int32_t power, int32_t *mult, int32_t *shift)
{
    int32_t s = 15 + power - 3, m = 0;
    if (s < 0) {
        s = -s;
        m = 3;
    }
    if (m == 0) {
        m = 3 << s;
        s = 0;
    }
    *mult = m;
    *shift = s;
}

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
