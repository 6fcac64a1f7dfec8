/* edgec softmax and log-softmax, portable C99. Bit-exact with edgec/ops/softmax/__init__.py. */
#include <limits.h>

#include "edgec_nn_support.h"

/* The largest value m of one row of cols values and the sum of exp_table[m - x[i]] over the row
 * (at most cols * 2^24): what softmax and log-softmax both start from. */
static inline uint64_t edgec_exp_sum(const int8_t *x, int32_t cols, const uint32_t *exp_table, int32_t *max)
{
    int32_t i, m = -128;
    uint64_t sum = 0;
    for (i = 0; i < cols; ++i) {
        m = x[i] > m ? x[i] : m;
    }
    if (cols < 256) {      /* entries are at most 2^24: the sum fits 32 bits */
        uint32_t sum32 = 0;
        for (i = 0; i < cols; ++i) {
            sum32 += exp_table[m - x[i]];
        }
        sum = sum32;
    } else {
        for (i = 0; i < cols; ++i) {
            sum += exp_table[m - x[i]];
        }
    }
    *max = m;
    return sum;
}

void edgec_softmax_s8(const edgec_softmax_params *p, const int8_t *input, const uint32_t *exp_table,
                      int8_t *output)
{
    const int32_t rows = p->rows, cols = p->cols;
    int32_t r, i;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + r * cols;
        int8_t *y = output + r * cols;
        int32_t m;
        const uint64_t sum = edgec_exp_sum(x, cols, exp_table, &m), two_sum = 2u * sum;
        /* q = floor(num / two_sum), num = e * 512 + sum, without a division per element: recip <= 2^48 /
         * two_sum (one 32-bit division per row) is close enough, when the table's entry 0 is 2^24 (so
         * two_sum >= 2^25) and none is larger, that (num * recip) >> 48 is q or q - 1; one multiply tells
         * which. The same q as the division, bit for bit. A sum below 2^32 does it with recip32 <= 2^40 / sum:
         * q = round(256 e / sum) is (e * recip32 + 2^31) >> 32 or one more, when (2q + 1) sum <= 512 e. */
        for (i = 0; i < cols && two_sum < (1u << 25); ++i) {      /* a table without exp(0) = 2^24 */
            const int32_t q = (int32_t)(((uint64_t)exp_table[m - x[i]] * 512u + sum) / two_sum) - 128;
            y[i] = (int8_t)(q > 127 ? 127 : q);
        }
        if (sum >> 32 == 0) {     /* rows of up to 255 values: the same in 32-bit words (mostly) */
            const uint32_t s32 = (uint32_t)sum, recip32 = 0xffffffffu / ((s32 >> 8) + 1u);
            for (; i < cols; ++i) {
                const uint32_t e = exp_table[m - x[i]];
                uint32_t q = (uint32_t)(((uint64_t)e * recip32 + 0x80000000u) >> 32);
                q += (uint64_t)(2u * q + 1u) * s32 <= (uint64_t)e << 9;
                y[i] = (int8_t)(q > 255u ? 127 : (int32_t)q - 128);
            }
        }
        if (i < cols) {
            const uint32_t recip = 0xffffffffu / ((uint32_t)(two_sum >> 16) + 1u);
            const uint64_t base = sum * recip;
            for (; i < cols; ++i) {
                const uint32_t e = exp_table[m - x[i]];
                const uint64_t num = (uint64_t)e * 512u + sum;
                uint32_t q = (uint32_t)((((uint64_t)e * recip << 9) + base) >> 48);
                q += (uint64_t)(q + 1u) * two_sum <= num;
                y[i] = (int8_t)(q > 255u ? 127 : (int32_t)q - 128);
            }
        }
    }
}

/* Q15 exp of the difference d (0..65535) from the row's max: the product of the two tables' entries. */
/* Masked positions are skipped in the max and the sum and written as -128 (e = 0: q = floor(sum / two_sum) = 0).
 * A kept position's exp is at most exp_table[0] = 2^24 and the row's max gives exactly that, so two_sum >= 2^25
 * and q = floor((e * 512 + sum) / two_sum) comes from one 32-bit reciprocal per row as in edgec_softmax_s8 (its
 * last loop): the estimate is q or q - 1, one multiply tells which. No kept position: all -128, no division. */
void edgec_masked_softmax_s8(const edgec_masked_softmax_params *p, const int8_t *input, const int8_t *keep,
                             const uint32_t *exp_table, int8_t *output)
{
    const int32_t rows = p->rows, cols = p->cols, mask_rows = p->mask_rows;
    int32_t r, i;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + r * cols, *k = keep + (r % mask_rows) * cols;
        int8_t *y = output + r * cols;
        int32_t m = -128, any = 0;
        uint64_t sum = 0;
        for (i = 0; i < cols; ++i) {
            if (k[i] && (!any || x[i] > m)) m = x[i];
            any |= k[i];
        }
        for (i = 0; i < cols; ++i)
            if (k[i]) sum += exp_table[m - x[i]];
        if (sum == 0) {
            for (i = 0; i < cols; ++i) y[i] = -128;
            continue;
        }
        {
            const uint64_t two_sum = 2u * sum;
            const uint32_t recip = 0xffffffffu / ((uint32_t)(two_sum >> 16) + 1u);
            const uint64_t base = sum * recip;
            for (i = 0; i < cols; ++i) {
                const uint32_t e = k[i] ? exp_table[m - x[i]] : 0u;
                const uint64_t num = (uint64_t)e * 512u + sum;
                uint32_t q = (uint32_t)((((uint64_t)e * recip << 9) + base) >> 48);
                q += (uint64_t)(q + 1u) * two_sum <= num;
                y[i] = (int8_t)(q > 255u ? 127 : (int32_t)q - 128);
            }
        }
    }
}

static inline uint32_t edgec_exp16(uint32_t d, const uint16_t *exp_hi, const uint16_t *exp_lo)
{
    return ((uint32_t)exp_hi[d >> 8] * exp_lo[d & 255u] + (1u << 14)) >> 15;
}

/* The row's exps are computed twice (for the sum, then for the outputs) rather than kept: the output may be
 * the input (in place), and no scratch is needed. The max's exp is 2^15, so sum >= 2^15 and recip <= 2^31;
 * cols <= 65536 keeps sum <= 2^31. */
void edgec_softmax_s16(const edgec_softmax_params *p, const int16_t *input, const uint16_t *exp_hi,
                       const uint16_t *exp_lo, int16_t *output)
{
    const int32_t rows = p->rows, cols = p->cols;
    int32_t r, i;
    for (r = 0; r < rows; ++r) {
        const int16_t *x = input + r * cols;
        int16_t *y = output + r * cols;
        int32_t m = -32768;
        uint32_t sum = 0, recip;
        for (i = 0; i < cols; ++i) {
            m = x[i] > m ? x[i] : m;
        }
        for (i = 0; i < cols; ++i) {
            sum += edgec_exp16((uint32_t)(m - x[i]), exp_hi, exp_lo);
        }
        recip = (uint32_t)(((uint64_t)1 << 46) / sum);
        for (i = 0; i < cols; ++i) {
            const uint32_t q = (uint32_t)(((uint64_t)edgec_exp16((uint32_t)(m - x[i]), exp_hi, exp_lo) * recip
                                           + (1u << 30)) >> 31);
            y[i] = (int16_t)(q > 32767u ? 32767 : q);
        }
    }
}

void edgec_log_softmax_s8(const edgec_log_softmax_params *p, const int8_t *input, const uint32_t *exp_table,
                          const int32_t *log_table, int8_t *output)
{
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *x = input + r * p->cols;
        int32_t m, e = 0;
        const int64_t sum = (int64_t)edgec_exp_sum(x, p->cols, exp_table, &m);
        int64_t l2, ln;
        while ((sum >> (e + 1)) != 0) {
            ++e;
        }
        l2 = (int64_t)(e - 24) * 65536 + log_table[(sum >> (e - 8)) - 256];
        ln = (l2 * 45426) >> 16;
        for (i = 0; i < p->cols; ++i) {
            const int64_t y16 = (int64_t)(x[i] - m) * p->k_in - ((ln * p->k_ln) >> 16);
            const int64_t q = edgec_round_pot64(y16, 16) + p->output_zp;
            *output++ = (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
        }
    }
}

/* ---- TFLite's softmax (gemmlowp's fixed point: edgec_nn_support.h) */
/* The table holds 0 where a difference is below diff_min: such an element adds nothing to the sum and
 * outputs the type's lowest value, as TFLite's skipped ones (so no test of diff_min here). Exps and the
 * reciprocal are >= 0. Softmax<int8_t, OutputT>: y8 (int8 output, scale 1/256) or y16 (int16, 1/65536). */
static inline void edgec_softmax_tflite_rows(const edgec_softmax_tflite_params *p, const int8_t *input,
                                             const int32_t *exp_table, int8_t *y8, int16_t *y16)
{
    const int32_t out_bits = y16 != 0 ? 16 : 8, low = y16 != 0 ? -32768 : -128, high = -low - 1;
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *x = input + r * p->cols;
        int32_t m = -128, sum = 0, headroom = 0, recip, e, mask, half;
        for (i = 0; i < p->cols; ++i) {
            m = x[i] > m ? x[i] : m;
        }
        for (i = 0; i < p->cols; ++i) {
            const int32_t v = exp_table[m - x[i]];
            sum = edgec_add32(sum, (v >> 12) + ((v & 4095) > 2047 ? 1 : 0));    /* RoundingDivideByPOT(v, 12) */
        }
#if defined(__GNUC__) && UINT_MAX == 0xFFFFFFFFu
        headroom = sum > 0 ? __builtin_clz((unsigned int)sum) : 0; /* one CLZ instruction on Arm */
#else
        {
            uint32_t u;
            for (u = (uint32_t)sum; u != 0u && !(u & 0x80000000u); u <<= 1) {
                ++headroom;
            }
        }
#endif
        e = 12 - headroom + 31 - out_bits;                        /* num_bits_over_unit + 31 - bits of OutputT */
        mask = (int32_t)(((uint32_t)1 << e) - 1u);
        half = mask >> 1;
        recip = edgec_one_over_one_plus_x((int32_t)(((uint32_t)sum << headroom) - 0x80000000u));
        for (i = 0; i < p->cols; ++i) {
            const int32_t v = edgec_rdhm(recip, exp_table[m - x[i]]);
            const int32_t q = (v >> e) + ((v & mask) > half ? 1 : 0) + low;
            if (y16 != 0) {
                y16[r * p->cols + i] = (int16_t)(q > high ? high : q);
            } else {
                y8[r * p->cols + i] = (int8_t)(q > high ? high : q);
            }
        }
    }
}

void edgec_softmax_tflite_s8(const edgec_softmax_tflite_params *p, const int8_t *input, const int32_t *exp_table,
                             int8_t *output)
{
    edgec_softmax_tflite_rows(p, input, exp_table, output, 0);
}

void edgec_softmax_tflite_s8_s16(const edgec_softmax_tflite_params *p, const int8_t *input,
                                 const int32_t *exp_table, int16_t *output)
{
    edgec_softmax_tflite_rows(p, input, exp_table, 0, output);
}

/* ---- TFLite's log-softmax */
static inline int32_t edgec_rdivpot(int32_t x, int32_t e) /* RoundingDivideByPOT, e in 0..31 */
{
    const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + ((x & mask) > threshold ? 1 : 0);
}

static inline int32_t edgec_clz32(uint32_t v)
{
    int32_t n = 32;
    while (v != 0u) {
        v >>= 1;
        --n;
    }
    return n;
}

static inline int32_t edgec_sat_pot(int32_t x, int32_t e) /* SaturatingRoundingMultiplyByPOTParam, e >= 0 */
{
    return e == 0 ? x : edgec_sat_shl(x, e);
}

static inline int32_t edgec_sat_add64(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : (int32_t)v);
}

/* log_x_for_x_greater_than_or_equal_to_1_impl<5, 12>: ln of a Q12.19 value >= 1, in Q5.26 (gemmlowp.log_x_ge_1) */
static int32_t edgec_log_q12_to_q5(int32_t z_a)
{
    const int32_t quarter = edgec_rdivpot(536870912, 6);
    const int32_t a_hp1 = edgec_clz32((uint32_t)z_a);
    const int32_t r_a = edgec_sat_pot(edgec_srdhm(edgec_sat_pot(z_a, a_hp1 - 1), 1518500250), 1);
    const int32_t a_adj = edgec_sat_add64((int64_t)edgec_sat_pot(12 - a_hp1, 25) + quarter);
    const int32_t b_h = edgec_clz32((uint32_t)edgec_srdhm(z_a, 1518500250)) - 1;
    const int32_t r_b = edgec_sat_pot(z_a, b_h);
    const int32_t b_adj = edgec_sat_add64((int64_t)edgec_sat_pot(12 - b_h, 25) - quarter);
    const int32_t r = r_a < r_b ? r_a : r_b, adj = a_adj > b_adj ? a_adj : b_adj;
    const int64_t half = (int64_t)r + 1805811301;
    const int32_t p = (int32_t)((half + (half >= 0 ? 1 : -1)) / 2);
    const int32_t q = edgec_add32(edgec_add32(r, -1805811301), edgec_add32(r, -1805811301));
    const int32_t sq = edgec_srdhm(q, q);
    const int32_t num = edgec_add32(edgec_srdhm(q, r), edgec_srdhm(edgec_srdhm(q, sq), 117049297));
    const int32_t denom = edgec_add32(edgec_srdhm(p, edgec_add32(edgec_add32(1057819769, q), edgec_srdhm(127690142, sq))),
                                      edgec_srdhm(638450708, q));
    const int32_t total = edgec_add32(edgec_srdhm(adj, 1488522236),
                                      edgec_srdhm(edgec_rdivpot(num, 6), edgec_one_over_one_plus_x(denom)));
    return edgec_sat_pot(total, 1);
}

void edgec_log_softmax_tflite_s8(const edgec_log_softmax_tflite_params *p, const int8_t *input,
                                 const int32_t *q5_table, const int32_t *exp_table, int8_t *output)
{
    int32_t r, c;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *x = input + r * p->cols;
        int32_t max = -128, log_sum, floor, adjusted;
        uint32_t sum = 0;
        for (c = 0; c < p->cols; ++c) {
            max = x[c] > max ? x[c] : max;
        }
        for (c = 0; c < p->cols; ++c) {
            sum += (uint32_t)exp_table[max - x[c]];
        }
        log_sum = edgec_log_q12_to_q5((int32_t)sum);
        floor = edgec_requantize(edgec_add32(log_sum, INT32_MIN), p->rev_mult, p->rev_shift);
        adjusted = floor > p->diff_min - 1 ? floor : p->diff_min - 1;
        for (c = 0; c < p->cols; ++c) {
            const int32_t d = max - x[c];
            int32_t out = -128;
            if (-d > adjusted) {
                out = edgec_clamp(edgec_rdivpot(edgec_add32(q5_table[d], -log_sum), 22) + 127, -128, 127);
            }
            output[r * p->cols + c] = (int8_t)out;
        }
    }
}

/* ---- TFLite's int16 softmax (reference_ops::SoftmaxInt16; edgec/ops/softmax/__init__.py softmax_tflite_s16) */
static int32_t edgec_lut16_lookup(int32_t v, const int16_t *lut) /* TFLite's LUTLookup of an int16 value */
{
    const int32_t idx = 256 + (v >> 7);
    const int32_t slope = (int32_t)lut[idx + 1] - lut[idx];
    return (int16_t)(lut[idx] + ((slope * (v & 0x7F) + 64) >> 7));
}

void edgec_softmax_tflite_s16(const edgec_softmax_tflite16_params *p, const int16_t *input, const int16_t *exp_lut,
                              const int16_t *recip_lut, int16_t *output)
{
    int32_t r, c;
    for (r = 0; r < p->rows; ++r) {
        const int16_t *x = input + r * p->cols;
        int16_t *y = output + r * p->cols;
        int32_t max = -32768, sum = 0, clz, shifted, recip, rs;
        for (c = 0; c < p->cols; ++c) {
            max = x[c] > max ? x[c] : max;
        }
        for (c = 0; c < p->cols; ++c) { /* the exps kept in the output, as TFLite keeps them */
            const int32_t scaled = edgec_requantize(x[c] - max, p->input_mult, p->input_shift) + 32767;
            y[c] = (int16_t)edgec_lut16_lookup(edgec_clamp(scaled, -32768, 32767), exp_lut);
            sum += y[c];
        }
        clz = edgec_clz32((uint32_t)sum);
        shifted = (int32_t)((((int64_t)sum << (clz - 1)) + (1 << 13)) >> 14);
        recip = edgec_lut16_lookup(edgec_clamp(shifted - ((1 << 15) + (1 << 16)), -32768, 32767), recip_lut);
        rs = 31 - clz;
        for (c = 0; c < p->cols; ++c) {
            const int32_t v = (int32_t)(((int64_t)y[c] * recip + ((int64_t)1 << (rs - 1))) >> rs);
            y[c] = (int16_t)edgec_clamp(v, 0, 32767);
        }
    }
}

/* edgec/ops/softmax/log_softmax16.py log_softmax_s16: the Q30 exps of d = max - x summed, ln(S / 2^30) in Q5.26 from S >> 11
 * (Q12.19), y = -round((d k_in + (ln k_ln >> 26)) / 2^16) */
void edgec_log_softmax_s16(const edgec_log_softmax16_params *p, const int16_t *input, const uint16_t *exp_hi,
                           const uint16_t *exp_lo, int16_t *output)
{
    const int32_t cols = p->cols;
    int32_t r, c;
    for (r = 0; r < p->rows; ++r) {
        const int16_t *x = input + r * cols;
        int16_t *y = output + r * cols;
        int32_t m = x[0], ln;
        uint64_t s = 0;
        int64_t lnq;
        for (c = 1; c < cols; ++c) {
            if (x[c] > m) m = x[c];
        }
        for (c = 0; c < cols; ++c) {
            const uint32_t d = (uint32_t)(m - x[c]);
            s += (uint32_t)exp_hi[d >> 8] * exp_lo[d & 255u];
        }
        ln = edgec_log_q12_to_q5((int32_t)(s >> 11));
        if (ln < 0) ln = 0;     /* ln(1) approximated below 0 */
        lnq = ((int64_t)ln * p->k_ln) >> 26;
        for (c = 0; c < cols; ++c) {
            const int64_t t = (int64_t)(m - x[c]) * p->k_in + lnq;     /* -y / s_out in Q16, >= 0 */
            const int64_t q = (t + ((int64_t)1 << 15)) >> 16;
            y[c] = (int16_t)(q > 32768 ? -32768 : -q);
        }
    }
}
