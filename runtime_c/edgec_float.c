/* edgec's float tail (edgec/ops/float_tail): a DEQUANTIZE inside a .tflite graph and the float32 operators after
 * it, as TensorFlow Lite Micro's reference kernels compute them (neg.cc, floor.cc, ceil.cc, round.cc,
 * elementwise.cc, exp.cc, floor_div.cc, floor_mod.cc, softmax.cc, log_softmax.cc, l2_pool_2d.cc) and its
 * EMBEDDING_LOOKUP (embedding_lookup.cc). The same float and double operations in the same order, one
 * operation per statement where a product meets a sum (no contraction into a fused multiply-add). Portable
 * C99, no allocation. exp, log, sin, cos are the C library's (their last bit may differ between libraries). */
#include <math.h>
#include <stddef.h>

#include "edgec_nn_support.h"

static float round_to_nearest(float v)                /* TFLM's RoundToNearest: half to even, through floor */
{
    const float f = floorf(v);
    const float d = v - f;
    if (d < 0.5f || (d == 0.5f && fmodf(f, 2.0f) == 0.0f)) return f;
    return f + 1.0f;
}

void edgec_float_dequantize(int32_t n, int32_t in_code, int32_t zero_point, float scale, const void *x, float *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        int32_t v = in_code == 0 ? (int32_t)((const int8_t *)x)[i]
                  : in_code == 1 ? (int32_t)((const int16_t *)x)[i] : (int32_t)((const uint8_t *)x)[i];
        y[i] = (float)(v - zero_point) * scale;
    }
}

void edgec_float_quantize(int32_t n, int32_t out_code, int32_t zero_point, float scale, const float *x, void *y)
{
    const int32_t lo = out_code == 0 ? -128 : out_code == 1 ? -32768 : 0;
    const int32_t hi = out_code == 0 ? 127 : out_code == 1 ? 32767 : 255;
    int32_t i;
    for (i = 0; i < n; ++i) {
        float v = roundf(x[i] / scale);                /* TFLM's AffineQuantize: TfLiteRound of the quotient */
        int32_t q;
        if (!(v >= -65536.0f)) v = -65536.0f;          /* NaN too (undefined in TFLM) */
        if (v > 65536.0f) v = 65536.0f;
        q = (int32_t)v + zero_point;
        q = q < lo ? lo : (q > hi ? hi : q);
        if (out_code == 0) ((int8_t *)y)[i] = (int8_t)q;
        else if (out_code == 1) ((int16_t *)y)[i] = (int16_t)q;
        else ((uint8_t *)y)[i] = (uint8_t)q;
    }
}

void edgec_float_unary(int32_t n, int32_t code, const float *x, float *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        const float v = x[i];
        float r;
        switch (code) {
        case EDGEC_FLOAT_NEG: r = -v; break;
        case EDGEC_FLOAT_FLOOR: r = floorf(v); break;
        case EDGEC_FLOAT_CEIL: r = ceilf(v); break;
        case EDGEC_FLOAT_ROUND: r = round_to_nearest(v); break;
        case EDGEC_FLOAT_SQRT: r = sqrtf(v); break;
        case EDGEC_FLOAT_EXP: r = expf(v); break;
        case EDGEC_FLOAT_LOG: r = logf(v); break;
        case EDGEC_FLOAT_SIN: r = sinf(v); break;
        case EDGEC_FLOAT_COS: r = cosf(v); break;
        default: r = v * v; break;                     /* EDGEC_FLOAT_SQUARE */
        }
        y[i] = r;
    }
}

static float binary_one(int32_t code, float a, float b)
{
    float m;
    if (code == EDGEC_FLOAT_FLOOR_DIV) return (float)floor((double)a / (double)b);
    m = fmodf(a, b);                                   /* FLOOR_MOD: toward the divisor's sign */
    return (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) ? m + b : m;
}

void edgec_float_binary(int32_t code, const int32_t *dims, const int32_t *a_strides, const int32_t *b_strides,
                        const float *a, const float *b, float *y)
{
    int32_t idx[EDGEC_FLOAT_RANK] = {0, 0, 0, 0, 0, 0};
    int32_t total = 1, i, d;
    for (d = 0; d < EDGEC_FLOAT_RANK; ++d) total *= dims[d];
    for (i = 0; i < total; ++i) {
        int32_t ia = 0, ib = 0;
        for (d = 0; d < EDGEC_FLOAT_RANK; ++d) {
            ia += idx[d] * a_strides[d];
            ib += idx[d] * b_strides[d];
        }
        y[i] = binary_one(code, a[ia], b[ib]);
        for (d = EDGEC_FLOAT_RANK - 1; d >= 0; --d) {  /* the next output index, last dimension fastest */
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
    }
}

void edgec_float_softmax(int32_t rows, int32_t cols, int32_t log_softmax, float beta, const float *x, float *y)
{
    int32_t r, c;
    for (r = 0; r < rows; ++r) {
        const float *xr = x + (size_t)r * (size_t)cols;
        float *yr = y + (size_t)r * (size_t)cols;
        float max = xr[0], sum = 0.0f;
        for (c = 1; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
        if (log_softmax) {
            float log_sum;
            for (c = 0; c < cols; ++c) sum += expf(xr[c] - max);
            log_sum = logf(sum);
            for (c = 0; c < cols; ++c) {
                const float d = xr[c] - max;
                yr[c] = d - log_sum;
            }
        } else {
            for (c = 0; c < cols; ++c) {
                const float d = xr[c] - max;
                const float t = d * beta;
                const float e = expf(t);
                yr[c] = e;
                sum += e;
            }
            for (c = 0; c < cols; ++c) yr[c] = yr[c] / sum;
        }
    }
}

void edgec_float_l2_pool(int32_t batch, int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                         int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t pad_h, int32_t pad_w,
                         float lo, float hi, const float *x, float *y)
{
    int32_t n, oy, ox, ch, fy, fx;
    for (n = 0; n < batch; ++n)
        for (oy = 0; oy < out_h; ++oy)
            for (ox = 0; ox < out_w; ++ox)
                for (ch = 0; ch < channels; ++ch) {
                    const int32_t y0 = oy * stride_h - pad_h, x0 = ox * stride_w - pad_w;
                    const int32_t fy0 = y0 < 0 ? -y0 : 0, fx0 = x0 < 0 ? -x0 : 0;
                    const int32_t fy1 = k_h < in_h - y0 ? k_h : in_h - y0, fx1 = k_w < in_w - x0 ? k_w : in_w - x0;
                    float sum = 0.0f, r;
                    int32_t count = 0;
                    for (fy = fy0; fy < fy1; ++fy)
                        for (fx = fx0; fx < fx1; ++fx) {
                            const float v = x[(((size_t)n * (size_t)in_h + (size_t)(y0 + fy)) * (size_t)in_w
                                               + (size_t)(x0 + fx)) * (size_t)channels + (size_t)ch];
                            const float sq = v * v;
                            sum += sq;
                            ++count;
                        }
                    r = sqrtf(sum / (float)count);
                    r = r < lo ? lo : r;
                    y[(((size_t)n * (size_t)out_h + (size_t)oy) * (size_t)out_w + (size_t)ox) * (size_t)channels
                      + (size_t)ch] = r > hi ? hi : r;
                }
}

void edgec_float_slice(int32_t outer, int32_t row, int32_t start, int32_t n, const float *x, float *y)
{
    int32_t o, i;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < n; ++i) y[(size_t)o * (size_t)n + (size_t)i] = x[(size_t)o * (size_t)row + (size_t)(start + i)];
    }
}

int edgec_float_embedding_lookup(int32_t ids, int32_t rows, int32_t cols, int32_t hybrid, float scale,
                                 const int32_t *id, const int8_t *table, void *y)
{
    int32_t i, c;
    int outside = 0;
    for (i = 0; i < ids; ++i) {
        const int32_t k = id[i];
        const int ok = k >= 0 && k < rows;                /* (TFLM's Invoke fails: a row of zeros, then the status) */
        outside += !ok;
        for (c = 0; c < cols; ++c) {
            const int8_t v = ok ? table[(size_t)k * (size_t)cols + (size_t)c] : (int8_t)0;
            if (hybrid) ((float *)y)[(size_t)i * (size_t)cols + (size_t)c] = (float)v * scale;
            else ((int8_t *)y)[(size_t)i * (size_t)cols + (size_t)c] = v;
        }
    }
    return outside;
}
