/* edgec layer normalization over the last axis, portable C99, one pass of integer statistics per row, and
 * TFLite's L2 normalization. Bit-exact with edgec/ops/norm.py (the arithmetic is described there). */
#include "edgec_nn_support.h"

/* floor(sqrt(v)) for v in [2^28, 2^30): 15 steps of the bit-by-bit method */
static uint32_t edgec_isqrt30(uint32_t v)
{
    uint32_t root = 0, bit = 1u << 28;
    while (bit != 0) {
        if (v >= root + bit) {
            v -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return root;
}

/* 2^31 // floor(sqrt(V)), V = max(v, 1) scaled by 4^e into [2^28, 2^30) (*e gets that e): the inverse square root
 * the three normalizations below share (edgec/ops/norm.py) */
static uint32_t edgec_inv_root30(int64_t v, int32_t *e)
{
    if (v < 1) v = 1;
    while (v < ((int64_t)1 << 28)) {
        v <<= 2;
        ++*e;
    }
    while (v >= ((int64_t)1 << 30)) {
        v >>= 2;
        --*e;
    }
    return 0x80000000u / edgec_isqrt30((uint32_t)v);
}

void edgec_layer_norm_s8(const edgec_layer_norm_params *p, const int8_t *input, const int16_t *gamma,
                         const int32_t *beta, int8_t *output)
{
    const int32_t cols = p->cols, zp = p->input_zp;
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *x = input + r * cols;
        int8_t *y = output + r * cols;
        int32_t s1 = 0, s2 = 0, e = 0, sh;
        int64_t v, step, base;
        uint32_t inv;
        for (i = 0; i < cols; ++i) {
            const int32_t d = x[i] - zp;
            s1 += d;
            s2 += d * d;
        }
        if (p->rms) s1 = 0;
        v = (int64_t)cols * s2 - (int64_t)s1 * s1 + p->eps_q;
        inv = edgec_inv_root30(v, &e);
        sh = 31 - p->frac_bits - e;
        /* (cols * d - s1) * inv + 2^(sh-1) as d * step + base: one 32x32 -> 64-bit multiply-add per value */
        step = (int64_t)cols * inv;
        base = ((int64_t)1 << (sh - 1)) - (int64_t)(s1 + cols * zp) * inv;
        for (i = 0; i < cols; ++i) {
            const int64_t t = x[i] * step + base;
            /* floor division by 2^sh, without right-shifting a negative value */
            const int64_t q = t >= 0 ? t >> sh : ~((~t) >> sh);
            const int32_t n = (int32_t)(q < -32768 ? -32768 : (q > 32767 ? 32767 : q));
            const int32_t acc = edgec_requantize(n * gamma[i] + beta[i], p->mult, p->shift) + p->output_zp;
            y[i] = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
        }
    }
}

void edgec_layer_norm_s16(const edgec_layer_norm_params *p, const int16_t *input, const int16_t *gamma,
                          const int32_t *beta, int16_t *output)
{
    const int32_t cols = p->cols;
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int16_t *x = input + r * cols;
        int16_t *y = output + r * cols;
        int64_t s1 = 0, s2 = 0, v, step, base;
        int32_t e = 0, sh;
        uint32_t inv;
        for (i = 0; i < cols; ++i) {
            s1 += x[i];
            s2 += (int32_t)x[i] * x[i];
        }
        if (p->rms) s1 = 0;
        v = (int64_t)cols * s2 - s1 * s1 + (int64_t)((uint64_t)p->eps_q << (2 * p->eps_shift));
        inv = edgec_inv_root30(v, &e);
        sh = 31 - p->frac_bits - e;
        step = (int64_t)cols * inv;
        base = ((int64_t)1 << (sh - 1)) - s1 * (int64_t)inv;
        for (i = 0; i < cols; ++i) {
            const int64_t t = x[i] * step + base;
            const int64_t q = t >= 0 ? t >> sh : ~((~t) >> sh);
            const int32_t n = (int32_t)(q < -32768 ? -32768 : (q > 32767 ? 32767 : q));
            const int32_t acc = edgec_requantize(n * gamma[i] + beta[i], p->mult, p->shift);
            y[i] = (int16_t)edgec_clamp(acc, p->act_min, p->act_max);
        }
    }
}

/* TFLite's GetInvSqrtQuantizedMultiplierExp(v, reverse_shift -1): 1 / sqrt(v) as a Q31 multiplier and a left
 * shift, by gemmlowp's Newton-Raphson iteration in Q3.28 (edgec/ops/lut/tflite.py's inv_sqrt_multiplier). */
static void edgec_inv_sqrt(int32_t v, int32_t *mult, int32_t *shift)
{
    int32_t s = 11, bits = 0, pairs, half, x, k;
    if (v <= 1) {
        *mult = INT32_MAX;
        *shift = 0;
        return;
    }
    while (v >= ((int32_t)1 << 29)) {
        v /= 4;
        ++s;
    }
    while (bits < 31 && (v >> bits) != 0) {
        ++bits;
    }
    pairs = (32 - bits - 1) / 2 - 1;      /* (CountLeadingZeros(v) - 1) / 2 - 1 */
    s -= pairs;
    v <<= 2 * pairs;
    half = ((v >> 1) >> 1) + ((v >> 1) & 1); /* RoundingDivideByPOT(v >> 1, 1), v >= 0 */
    x = (int32_t)1 << 28;
    for (k = 0; k < 5; ++k) {
        const int32_t x3 = edgec_sat_shl(edgec_srdhm(edgec_srdhm(x, x), x), 6);
        x = edgec_sat_shl(edgec_add32(edgec_srdhm((1 << 28) + (1 << 27), x), -edgec_srdhm(half, x3)), 3);
    }
    x = edgec_srdhm(x, 1518500250);
    if (s < 0) {
        x = (int32_t)((uint32_t)x << -s);
        s = 0;
    }
    *mult = x;
    *shift = -s;
}

void edgec_l2_norm_s8(const edgec_l2_norm_params *p, const int8_t *input, int8_t *output)
{
    int32_t r, c;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *row = input + r * p->cols;
        int32_t acc = 0, mult, shift;
        for (c = 0; c < p->cols; ++c) {
            const int32_t d = (int32_t)row[c] - p->input_zp;
            acc += d * d;
        }
        edgec_inv_sqrt(acc, &mult, &shift);
        for (c = 0; c < p->cols; ++c) {
            const int32_t d = (int32_t)row[c] - p->input_zp;
            int32_t y;
            if (p->out_mult) {
                const int32_t n = edgec_requantize(d, mult, shift + 15);
                y = p->output_zp + edgec_requantize(n, p->out_mult, p->out_shift);
            } else {
                y = edgec_requantize(d, mult, shift + 7);
            }
            output[r * p->cols + c] = (int8_t)edgec_clamp(y, -128, 127);
        }
    }
}

/* edgec/ops/norm.py l2_norm_s16: S = sum x^2 scaled by 4^e into [2^28, 2^30), inv = 2^31 / floor(sqrt(.)),
 * y = round(x * inv / 2^(16 - e)) = x / sqrt(S) in Q0.15 */
void edgec_l2_norm_s16(const edgec_l2_norm16_params *p, const int16_t *input, int16_t *output)
{
    const int32_t cols = p->cols;
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int16_t *x = input + r * cols;
        int16_t *y = output + r * cols;
        int64_t s = 0;
        int32_t e = 0, sh;
        uint32_t inv;
        for (i = 0; i < cols; ++i) {
            s += (int32_t)x[i] * x[i];
        }
        inv = edgec_inv_root30(s, &e);
        sh = 16 - e;
        for (i = 0; i < cols; ++i) {
            const int64_t t = (int64_t)x[i] * inv + ((int64_t)1 << (sh - 1));
            /* floor division by 2^sh, without right-shifting a negative value */
            const int64_t q = t >= 0 ? t >> sh : ~((~t) >> sh);
            y[i] = (int16_t)(q < -32768 ? -32768 : (q > 32767 ? 32767 : q));
        }
    }
}
