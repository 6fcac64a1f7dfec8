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
 *  - the requantization of each gate product and of the output gate x tanh(cell) by an edgec_rq record (field 0:
 *    the left shift of a multiplier over 1), the cell's two products (multipliers 2^30, power-of-two cell scale)
 *    by shifts; lower_lstm_tflite leaves LSTMs where these do not apply to the reference kernel. */
#include "edgec_fast_support.h"
#include "../edgec_lstm_tflite_act.h"

#define LSTM_GATES 4

/* one group of 4 inputs for the 4 rows: the vector's 2 words (LDRD), the rows' 8 words (two LDM), 8 SMLAD */
#define EDGEC_LSTM_GROUP                                                                                        \
    "ldrd r3, lr, [%[v]], #8\n\t"                                                                               \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"                                                                      \
    "smlad %[a0], r8, r3, %[a0]\n\t"                                                                           \
    "smlad %[a0], r9, lr, %[a0]\n\t"                                                                           \
    "smlad %[a1], r10, r3, %[a1]\n\t"                                                                          \
    "smlad %[a1], r11, lr, %[a1]\n\t"                                                                          \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"                                                                      \
    "smlad %[a2], r8, r3, %[a2]\n\t"                                                                           \
    "smlad %[a2], r9, lr, %[a2]\n\t"                                                                           \
    "smlad %[a3], r10, r3, %[a3]\n\t"                                                                          \
    "smlad %[a3], r11, lr, %[a3]\n\t"

/* acc[g] = init[g] + row g . v over `groups` groups of 4 (8 int16 pairs a group: row 0's two words, row 1's, ...) */
EDGEC_INLINE void edgec_lstm_dot4(const edgec_w32 *w, const edgec_w32 *v, int32_t groups, const int32_t *init,
                                  int32_t *acc)
{
#if defined(EDGEC_DSP_NATIVE) && defined(__thumb2__)
    /* 12 instructions a group of 16 MACs (two groups an iteration); registers named: r7 (the frame pointer of
     * an unoptimized build) is left alone */
    register const edgec_w32 *rw __asm__("r0") = w;
    register const edgec_w32 *rv __asm__("r1") = v;
    register int32_t n __asm__("r2") = groups;
    register int32_t a0 __asm__("r4") = init[0];
    register int32_t a1 __asm__("r5") = init[1];
    register int32_t a2 __asm__("r6") = init[2];
    register int32_t a3 __asm__("r12") = init[3];
    __asm__ volatile("tst %[n], #1\n\t"
                     "beq 2f\n\t" EDGEC_LSTM_GROUP
                     "2:\n\t"
                     "lsrs %[n], %[n], #1\n\t"
                     "beq 3f\n"
                     "1:\n\t" EDGEC_LSTM_GROUP EDGEC_LSTM_GROUP
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n"
                     "3:\n\t"
                     : [w] "+r"(rw), [v] "+r"(rv), [n] "+r"(n), [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2),
                       [a3] "+r"(a3)
                     :
                     : "r3", "r8", "r9", "r10", "r11", "lr", "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
#elif defined(EDGEC_DSP)
    int32_t a0 = init[0], a1 = init[1], a2 = init[2], a3 = init[3];
    for (; groups > 0; --groups, w += 8, v += 2) {
        const uint32_t x0 = v[0], x1 = v[1];
        a0 = E_SMLAD(w[0], x0, a0);
        a0 = E_SMLAD(w[1], x1, a0);
        a1 = E_SMLAD(w[2], x0, a1);
        a1 = E_SMLAD(w[3], x1, a1);
        a2 = E_SMLAD(w[4], x0, a2);
        a2 = E_SMLAD(w[5], x1, a2);
        a3 = E_SMLAD(w[6], x0, a3);
        a3 = E_SMLAD(w[7], x1, a3);
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
    for (g = 0; g < LSTM_GATES; ++g) s[g] = (uint32_t)init[g];
    for (; groups > 0; --groups, wh += 16, vh += 4) {
        for (g = 0; g < LSTM_GATES; ++g) {
            for (k = 0; k < 4; ++k) s[g] += (uint32_t)((int32_t)wh[4 * g + k] * vh[k]);
        }
    }
    for (g = 0; g < LSTM_GATES; ++g) acc[g] = wrap32(s[g]);
#endif
}

/* a hidden unit's 8 products: acc[0..3] its 4 gates' input products, acc[4..7] their recurrent ones, from the
 * unit's 8 biases */
static EDGEC_NOINLINE void edgec_lstm_products(const edgec_w32 *wx, const edgec_w32 *xv, int32_t gx,
                                               const edgec_w32 *wh, const edgec_w32 *hv, int32_t gh,
                                               const int32_t *bias, int32_t *acc)
{
    edgec_lstm_dot4(wx, xv, gx, bias, acc);
    edgec_lstm_dot4(wh, hv, gh, bias + LSTM_GATES, acc + LSTM_GATES);
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

#ifdef EDGEC_DSP_NATIVE
#define LSTM_SAT16(v) __ssat((v), 16)
#else
#define LSTM_SAT16(v) clamp16(v)
#endif

/* a gate product's int16 value by its record (field 0: the left shift of a multiplier over 1) */
EDGEC_INLINE int32_t edgec_lstm_rq(int32_t acc, const int32_t *q)
{
    return LSTM_SAT16(edgec_rq_value(acc * (1 << q[0]), q[1], q[2], q[3], q[4]));
}

/* TFLite's MultiplyByQuantizedMultiplier(x, 2^30, -right) for |x| < 2^30, right in 0..30 (the forget x cell and
 * input x cell-gate products: their multipliers are powers of two, the cell scale being one): the doubling high
 * multiply by 2^30 halves x rounding half up (x >= 0) or toward zero (x < 0, TFLite's nudge 1 - 2^30), then
 * the rounding right shift (half away from zero) */
EDGEC_INLINE int32_t edgec_lstm_rq_pow2(int32_t x, int32_t right)
{
    const int32_t y = x >= 0 ? (x + 1) >> 1 : -((-x) >> 1), mask = (int32_t)((1u << right) - 1u);
    return (y >> right) + ((y & mask) > (mask >> 1) + (y < 0));
}

void edgec_lstm_tflite_fast_s8(const edgec_lstm_tflite_params *p, const int8_t *input, const uint32_t *w_x,
                               const uint32_t *w_h, const int32_t *bias, const int32_t *rq_x, const int32_t *rq_h,
                               const int32_t *rq_oh, int16_t *c, int8_t *h, void *scratch, int8_t *output)
{
    const int32_t hid = p->hidden, n_in = p->input_size, gx = (n_in + 3) >> 2, gh = (hid + 3) >> 2;
    const int32_t fc = -p->fc_shift, ig = -p->ig_shift, clip = p->cell_clip, hzp = p->hidden_zp;
    const int32_t tanh_cell = !p->cell_sigmoid;
    edgec_w32 *xv = (edgec_w32 *)scratch, *hv = xv + 2 * gx;     /* the widened input and hidden state */
    int32_t cm, cs, t, b, j;
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
                int32_t acc[2 * LSTM_GATES], f, i, g, o, cn, hn;
                edgec_lstm_products(wx, xv, gx, wh, hv, gh, bj, acc);
                f = sigmoid16(LSTM_SAT16(edgec_lstm_rq(acc[0], rq_x) + edgec_lstm_rq(acc[4], rq_h)));
                i = sigmoid16(LSTM_SAT16(edgec_lstm_rq(acc[1], rq_x + 5) + edgec_lstm_rq(acc[5], rq_h + 5)));
                g = LSTM_SAT16(edgec_lstm_rq(acc[2], rq_x + 10) + edgec_lstm_rq(acc[6], rq_h + 10));
                g = tanh_cell ? tanh16(g, 3, 0) : sigmoid16(g);
                o = sigmoid16(LSTM_SAT16(edgec_lstm_rq(acc[3], rq_x + 15) + edgec_lstm_rq(acc[7], rq_h + 15)));
                cn = LSTM_SAT16(LSTM_SAT16(edgec_lstm_rq_pow2(f * cb[j], fc)) +
                                LSTM_SAT16(edgec_lstm_rq_pow2(i * g, ig)));
                if (clip > 0) cn = edgec_clamp(cn, -clip, clip);
                cb[j] = (int16_t)cn;
                hn = edgec_rq_value(tanh16(cn, cm, cs) * o, rq_oh[1], rq_oh[2], rq_oh[3], rq_oh[4]) + hzp;
                hn = EDGEC_SAT8(hn);
                hb[j] = (int8_t)hn;
                y[j] = (int8_t)hn;
            }
        }
    }
}
