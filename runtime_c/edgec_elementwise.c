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

/* A QDQ file's int16 Div (edgec/ops/binary/int16.py div16): a * 2^s / b in int64, rounded half away from zero,
 * saturated to int32 (a divisor of 0: +-INT32_MAX) */
static int32_t edgec_div16_quotient(int32_t num, int32_t den, int32_t shift)
{
    const int64_t n = (int64_t)num * ((int64_t)1 << shift);
    int64_t an, ad, q;
    if (den == 0) {
        return n > 0 ? INT32_MAX : (n < 0 ? -INT32_MAX : 0);
    }
    an = n < 0 ? -n : n;
    ad = den < 0 ? -(int64_t)den : (int64_t)den;
    q = (an + ad / 2) / ad;
    if (q > INT32_MAX) {
        q = INT32_MAX;
    }
    return (int32_t)(((n < 0) != (den < 0)) ? -q : q);
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
    if (p->op == 18) { /* TFLite's PRELU: x itself at or above 0, x * alpha below, each rescaled */
        raw = va >= 0 ? edgec_requantize(va, p->a_mult, p->a_shift)
                      : edgec_requantize(va * vb, p->b_mult, p->b_shift);
        return edgec_clamp(raw + p->out_zp, p->act_min, p->act_max);
    }
    if (p->op == 19) { /* a QDQ file's int16 Div */
        raw = edgec_requantize(edgec_div16_quotient(va, vb, p->left_shift), p->out_mult, p->out_shift);
        return edgec_clamp(raw + p->out_zp, p->act_min, p->act_max);
    }
    if (p->op == 20) { /* |a - b| (a Sub read by an Abs alone): the Sub's rescaling, the difference's magnitude */
        const int32_t ls = (int32_t)1 << p->left_shift;
        const int32_t sa = edgec_requantize(va * ls, p->a_mult, p->a_shift);
        const int32_t sb = edgec_requantize(vb * ls, p->b_mult, p->b_shift);
        raw = edgec_requantize(sa > sb ? sa - sb : sb - sa, p->out_mult, p->out_shift);
        return edgec_clamp(raw + p->out_zp, p->act_min, p->act_max);
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
 * edgec/ops/binary/int16.py); the functions are written out below. MAXIMUM / MINIMUM (ops 6, 7: of the values
 * themselves) over rows contiguous in both inputs take them in the loop, without a call per element (a
 * ShuffleNet-style block's MAXIMUM of two 8x8x64 tensors: 41 instructions an element through the call). */
#define EDGEC_BINARY_BODY(T)                                                                                     \
    {                                                                                                            \
        const int32_t *d = p->dims, *sa = p->a_stride, *sb = p->b_stride;                                        \
        const int32_t minmax = (p->op == 6 || p->op == 7) && sa[5] == 1 && sb[5] == 1, is_max = p->op == 6;     \
        int32_t i0, i1, i2, i3, i4, i5;                                                                          \
        for (i0 = 0; i0 < d[0]; ++i0)                                                                            \
            for (i1 = 0; i1 < d[1]; ++i1)                                                                        \
                for (i2 = 0; i2 < d[2]; ++i2)                                                                    \
                    for (i3 = 0; i3 < d[3]; ++i3)                                                                \
                        for (i4 = 0; i4 < d[4]; ++i4) {                                                          \
                            const T *pa = a + i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3] + i4 * sa[4];    \
                            const T *pb = b + i0 * sb[0] + i1 * sb[1] + i2 * sb[2] + i3 * sb[3] + i4 * sb[4];    \
                            if (minmax) {                                                                        \
                                for (i5 = 0; i5 < d[5]; ++i5) {                                                  \
                                    const T x = pa[i5], y = pb[i5];                                              \
                                    *output++ = is_max ? (x > y ? x : y) : (x < y ? x : y);                      \
                                }                                                                                \
                                continue;                                                                        \
                            }                                                                                    \
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

/* The SELECT_V2 loop for one element type T (int8; int16: TFLite's 16x8 SELECT_V2), written out below. */
#define EDGEC_WHERE_BODY(T)                                                                                      \
    {                                                                                                            \
        const int32_t *d = p->dims, *sc = p->c_stride, *sx = p->x_stride, *sy = p->y_stride;                     \
        int32_t i[EDGEC_RANK];                                                                                   \
        for (i[0] = 0; i[0] < d[0]; ++i[0])                                                                      \
            for (i[1] = 0; i[1] < d[1]; ++i[1])                                                                  \
                for (i[2] = 0; i[2] < d[2]; ++i[2])                                                              \
                    for (i[3] = 0; i[3] < d[3]; ++i[3])                                                          \
                        for (i[4] = 0; i[4] < d[4]; ++i[4])                                                      \
                            for (i[5] = 0; i[5] < d[5]; ++i[5]) {                                                \
                                int32_t oc = 0, ox = 0, oy = 0, k;                                               \
                                for (k = 0; k < EDGEC_RANK; ++k) {                                               \
                                    oc += i[k] * sc[k];                                                          \
                                    ox += i[k] * sx[k];                                                          \
                                    oy += i[k] * sy[k];                                                          \
                                }                                                                                \
                                *output++ = cond[oc] ? x[ox] : y[oy];                                            \
                            }                                                                                    \
    }

void edgec_where_s8(const edgec_where_params *p, const uint8_t *cond, const int8_t *x, const int8_t *y,
                    int8_t *output)
{
    EDGEC_WHERE_BODY(int8_t)
}

void edgec_where_s16(const edgec_where_params *p, const uint8_t *cond, const int16_t *x, const int16_t *y,
                     int16_t *output)
{
    EDGEC_WHERE_BODY(int16_t)
}

void edgec_lut_s8(const edgec_lut_params *p, const int8_t *input, const int8_t *table, int8_t *output)
{
    const int32_t count = p->count, inner = p->inner;
    int32_t n = p->n, c = 0, j;
    if (count == 1) { /* one table (every unary activation): one flat loop, four values a pass */
        const int8_t *t = table + 128;
        for (; n >= 4; n -= 4, input += 4, output += 4) {
            const int8_t v0 = t[input[0]], v1 = t[input[1]], v2 = t[input[2]], v3 = t[input[3]];
            output[0] = v0;
            output[1] = v1;
            output[2] = v2;
            output[3] = v3;
        }
        for (j = 0; j < n; ++j) output[j] = t[input[j]];
        return;
    }
    if (inner == 1) { /* a table per channel, channels innermost (a MUL / ADD by a per-channel constant): the
                         * tables are 256 B apart, one pointer step a value, no index kept */
        const int8_t *const end = table + count * 256 + 128;
        for (; n > 0; n -= count) {
            const int8_t *t;
            for (t = table + 128; t != end; t += 256) *output++ = t[*input++];
        }
        return;
    }
    for (; n > 0; n -= count * inner) { /* one run of `inner` values per table, the tables in turn */
        for (c = 0; c < count; ++c) {
            const int8_t *t = table + c * 256 + 128;
            for (j = 0; j < inner; ++j) *output++ = t[*input++];
        }
    }
}

/* TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h): sigmoid(i / 24) in 0.16 format, the
 * int16 LOGISTIC and TANH interpolate in it (edgec/ops/lut/int16.py holds the same table). */
static const uint16_t edgec_sigmoid_table_u16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064,
    42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464,
    50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503,
    56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666,
    62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968,
    64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687,
    64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291,
    65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404,
    65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465,
    65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530,
    65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65535};

/* TFLite's int16 Logistic (fn 0: 9 fraction bits) and Tanh (fn 1: 8) of reference_integer_ops */
static int32_t edgec_sigmoid_tanh16(const edgec_activation16_params *p, int32_t x)
{
    const int32_t rnd = p->input_shift > 0 ? (int32_t)1 << (p->input_shift - 1) : 0;
    const int32_t v = (x * p->input_mult + rnd) >> p->input_shift;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const int32_t bits = p->fn == 0 ? 9 : 8;
    const uint32_t uh = a >> bits;
    uint32_t r;
    if (uh >= 255u) {
        r = p->fn == 0 ? 0x7FFFu << 10 : 0xFFFFu << 8;
    } else {
        const uint32_t ua = edgec_sigmoid_table_u16[uh], ub = edgec_sigmoid_table_u16[uh + 1u];
        r = (ua << bits) + (a & ((1u << bits) - 1u)) * (ub - ua);
    }
    if (p->fn == 0) {
        r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
        return (int32_t)(r >> 10);
    }
    {
        const int32_t s = v >= 0 ? (int32_t)r - (1 << 23) + (1 << 7) : -(int32_t)r + (1 << 23) + (1 << 7) - 1;
        return s >> 8;
    }
}

void edgec_activation_s16(const edgec_activation16_params *p, const int16_t *input, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->n; ++i) {
        const int32_t x = input[i];
        int32_t y;
        if (p->fn <= 1) {
            y = edgec_sigmoid_tanh16(p, x);
        } else if (p->fn == 3) {
            y = x;
        } else if (p->fn == 5) {
            y = x < 0 ? -x : x;
            y = p->input_mult != 0 ? edgec_requantize(y, p->input_mult, p->input_shift) : y;
        } else if (p->fn == 4 && x < 0) {
            y = p->alpha_sign * edgec_requantize(x, p->alpha_mult, p->alpha_shift);
        } else {
            y = edgec_requantize(x, p->input_mult, p->input_shift);
        }
        output[i] = (int16_t)edgec_clamp(y, p->act_min, p->act_max);
    }
}

void edgec_lut16_s16(const edgec_lut16_params *p, const int16_t *input, const int16_t *table, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->n; ++i) {
        const int32_t u = (int32_t)input[i] + 32768;
        const int32_t base = table[u >> 7];
        const int32_t d = (table[(u >> 7) + 1] - base) * (u & 0x7F) + 64;
        /* floor(d / 128), also for d < 0 (no right shift of a negative value) */
        const int32_t step = d >= 0 ? d / 128 : -((-d + 127) / 128);
        output[i] = (int16_t)(base + step);
    }
}
