/* edgec elementwise kernels, portable C99: add, broadcasting binary ops, lookup tables. Bit-exact with
 * edgec/ops/binary/__init__.py and lut.py. */
#include "edgec_nn_support.h"

/* The body of TFLite's Add for one element type T: int8, and int16 (TFLite's 16x8 Add: zero points 0, left shift
 * 15; edgec/ops/binary/add16.py). The functions are written out below (edgec/cheader.py finds a runtime file's
 * kernels by their definitions). */
#define EDGEC_ADD_BODY(T)                                                                                        \
    {                                                                                                            \
        const int32_t scale = (int32_t)1 << p->left_shift;                                                       \
        int32_t i;                                                                                               \
        for (i = 0; i < p->n; ++i) {                                                                             \
            const int32_t v1 = ((int32_t)input1[i] - p->input1_zp) * scale;                                      \
            const int32_t v2 = ((int32_t)input2[i] - p->input2_zp) * scale;                                      \
            const int32_t s1 = edgec_requantize(v1, p->input1_mult, p->input1_shift);                            \
            const int32_t s2 = edgec_requantize(v2, p->input2_mult, p->input2_shift);                            \
            const int32_t out = edgec_requantize(s1 + s2, p->output_mult, p->output_shift) + p->output_zp;       \
            output[i] = (T)edgec_clamp(out, p->act_min, p->act_max);                                             \
        }                                                                                                        \
    }

void edgec_add_s8(const edgec_add_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    EDGEC_ADD_BODY(int8_t)
}

void edgec_add_s16(const edgec_add_params *p, const int16_t *input1, const int16_t *input2, int16_t *output)
{
    EDGEC_ADD_BODY(int16_t)
}

static int32_t edgec_div_round(int32_t num, int32_t den)
{
    int32_t q;
    if (den == 0) {
        return num > 0 ? INT32_MAX : (num < 0 ? -INT32_MAX : 0);
    }
    {
        const int32_t an = num < 0 ? -num : num, ad = den < 0 ? -den : den;
        q = (an + ad / 2) / ad;
    }
    return ((num < 0) != (den < 0)) ? -q : q;
}

static int32_t edgec_bit_length(uint32_t v)
{
    int32_t n = 0;
    while (n < 32 && (v >> n) != 0u) {
        ++n;
    }
    return n;
}

/* TFLite's DivElementwise of offset values a / b (see edgec/ops/binary/__init__.py's div_tflite) */
static int32_t edgec_div_tflite(const edgec_binary_params *p, int32_t a, int32_t b)
{
    int32_t clz, headroom, inv, unscaled, shift, out;
    uint32_t u;
    if (b < 0) {
        a = -a;
        b = -b;
    }
    u = (uint32_t)b;
    clz = 32 - edgec_bit_length(u);
    inv = edgec_one_over_one_plus_x((int32_t)((clz >= 32 ? u : u << clz) - 0x80000000u));
    headroom = 31 - edgec_bit_length(a < 0 ? (uint32_t)(-a - 1) : (uint32_t)a);
    unscaled = edgec_srdhm((int32_t)((uint32_t)a << headroom), inv);
    shift = p->out_shift - (31 - clz) - headroom;
    out = shift < -31 ? 0 : edgec_requantize(unscaled, p->out_mult, shift);
    return edgec_clamp(out + p->out_zp, p->act_min, p->act_max);
}

static int32_t edgec_binary_one(const edgec_binary_params *p, int32_t a, int32_t b)
{
    int32_t raw;
    const int32_t va = a - p->a_zp, vb = b - p->b_zp;
    if (p->op == 9) {
        return edgec_div_tflite(p, va, vb);
    }
    if (p->op >= 16) { /* TFLite's LOGICAL_AND / LOGICAL_OR of bool bytes */
        return p->op == 16 ? (a != 0 && b != 0) : (a != 0 || b != 0);
    }
    if (p->op >= 10) { /* TFLite's comparisons WithScaling: both rescaled, then compared */
        const int32_t ls = (int32_t)1 << p->left_shift;
        const int32_t sa = edgec_requantize(va * ls, p->a_mult, p->a_shift);
        const int32_t sb = edgec_requantize(vb * ls, p->b_mult, p->b_shift);
        switch (p->op) {
        case 10: return sa == sb;
        case 11: return sa != sb;
        case 12: return sa > sb;
        case 13: return sa >= sb;
        case 14: return sa < sb;
        default: return sa <= sb;
        }
    }
    if (p->op == 6 || p->op == 7) { /* TFLite's MAXIMUM / MINIMUM: of the int8 values themselves */
        return p->op == 6 ? (a > b ? a : b) : (a < b ? a : b);
    }
    if (p->op <= 3 || p->op == 8) {
        const int32_t ls = (int32_t)1 << p->left_shift;
        const int32_t sa = edgec_requantize(va * ls, p->a_mult, p->a_shift);
        const int32_t sb = edgec_requantize(vb * ls, p->b_mult, p->b_shift);
        raw = p->op == 0 ? sa + sb : p->op == 1 ? sa - sb : p->op == 2 ? (sa > sb ? sa : sb) :
              p->op == 3 ? (sa < sb ? sa : sb) : (sa - sb) * (sa - sb);
    } else if (p->op == 4) {
        raw = va * vb;
    } else {
        raw = edgec_div_round(va * 65536, vb);
    }
    raw = edgec_requantize(raw, p->out_mult, p->out_shift) + p->out_zp;
    return edgec_clamp(raw, p->act_min, p->act_max);
}

/* The broadcasting loop over [dims] for one element type T (int8; int16: TFLite's 16x8 binary operators,
 * edgec/ops/binary/int16.py); the functions are written out below. */
#define EDGEC_BINARY_BODY(T)                                                                                     \
    {                                                                                                            \
        const int32_t *d = p->dims, *sa = p->a_stride, *sb = p->b_stride;                                        \
        int32_t i0, i1, i2, i3, i4, i5;                                                                          \
        for (i0 = 0; i0 < d[0]; ++i0)                                                                            \
            for (i1 = 0; i1 < d[1]; ++i1)                                                                        \
                for (i2 = 0; i2 < d[2]; ++i2)                                                                    \
                    for (i3 = 0; i3 < d[3]; ++i3)                                                                \
                        for (i4 = 0; i4 < d[4]; ++i4) {                                                          \
                            const T *pa = a + i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3] + i4 * sa[4];    \
                            const T *pb = b + i0 * sb[0] + i1 * sb[1] + i2 * sb[2] + i3 * sb[3] + i4 * sb[4];    \
                            for (i5 = 0; i5 < d[5]; ++i5) {                                                      \
                                *output++ = (T)edgec_binary_one(p, pa[i5 * sa[5]], pb[i5 * sb[5]]);              \
                            }                                                                                    \
                        }                                                                                        \
    }

void edgec_binary_s8(const edgec_binary_params *p, const int8_t *a, const int8_t *b, int8_t *output)
{
    EDGEC_BINARY_BODY(int8_t)
}

void edgec_binary_s16(const edgec_binary_params *p, const int16_t *a, const int16_t *b, int16_t *output)
{
    EDGEC_BINARY_BODY(int16_t)
}

void edgec_add_n_s8(const edgec_add_n_params *p, const int8_t *const *inputs, int8_t *output)
{
    const int32_t scale = (int32_t)1 << p->left_shift;
    int32_t i, k;
    for (i = 0; i < p->n; ++i) {
        /* TFLite starts its sum from the rescaled -input_zp (its input1_offset) */
        uint32_t acc = (uint32_t)edgec_requantize(-p->input_zp * scale, p->input_mult, p->input_shift);
        int32_t out;
        for (k = 0; k < p->count; ++k) {
            const int32_t v = ((int32_t)inputs[k][i] - p->input_zp) * scale;
            acc += (uint32_t)edgec_requantize(v, p->input_mult, p->input_shift);
        }
        out = edgec_requantize((int32_t)acc, p->mult, p->shift) + p->output_zp;
        output[i] = (int8_t)edgec_clamp(out, p->act_min, p->act_max);
    }
}

void edgec_where_s8(const edgec_where_params *p, const uint8_t *cond, const int8_t *x, const int8_t *y,
                    int8_t *output)
{
    const int32_t *d = p->dims, *sc = p->c_stride, *sx = p->x_stride, *sy = p->y_stride;
    int32_t i[EDGEC_RANK];
    for (i[0] = 0; i[0] < d[0]; ++i[0])
        for (i[1] = 0; i[1] < d[1]; ++i[1])
            for (i[2] = 0; i[2] < d[2]; ++i[2])
                for (i[3] = 0; i[3] < d[3]; ++i[3])
                    for (i[4] = 0; i[4] < d[4]; ++i[4])
                        for (i[5] = 0; i[5] < d[5]; ++i[5]) {
                            int32_t oc = 0, ox = 0, oy = 0, k;
                            for (k = 0; k < EDGEC_RANK; ++k) {
                                oc += i[k] * sc[k];
                                ox += i[k] * sx[k];
                                oy += i[k] * sy[k];
                            }
                            *output++ = cond[oc] ? x[ox] : y[oy];
                        }
}

void edgec_lut_s8(const edgec_lut_params *p, const int8_t *input, const int8_t *table, int8_t *output)
{
    const int32_t count = p->count, inner = p->inner;
    const int32_t outer = p->n / (count * inner);
    int32_t o, c, j;
    for (o = 0; o < outer; ++o) {
        for (c = 0; c < count; ++c) {
            const int8_t *t = table + c * 256 + 128;
            for (j = 0; j < inner; ++j) {
                *output++ = t[*input++];
            }
        }
    }
}
