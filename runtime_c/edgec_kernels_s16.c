/* edgec 16x8 kernels; see edgec_kernels_s16.h. */
#include "edgec_kernels_s16.h"

int32_t edgec_requantize64(int64_t acc, int32_t mult, int32_t shift)
{
    const int64_t reduced = mult < 0x7FFF0000 ? ((int64_t)mult + (1 << 15)) / ((int64_t)1 << 16) : 0x7FFF;
    const int32_t total = 15 - shift;
    const int64_t r = acc * reduced + ((int64_t)1 << (total - 1));
    /* floor division by 2^total, without right-shifting a negative value */
    return (int32_t)(r >= 0 ? r >> total : ~((~r) >> total));
}

static int32_t clamp16(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

static void conv_any(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                     const int64_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output,
                     int depthwise)
{
    int32_t oy, ox, oc, ky, kx, ic;
    for (oy = 0; oy < p->out_h; ++oy) {
        for (ox = 0; ox < p->out_w; ++ox) {
            for (oc = 0; oc < p->out_c; ++oc) {
                int64_t acc = 0;
                for (ky = 0; ky < p->k_h; ++ky) {
                    const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
                    if (iy < 0 || iy >= p->in_h) {
                        continue;
                    }
                    for (kx = 0; kx < p->k_w; ++kx) {
                        const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                        const int16_t *px;
                        if (ix < 0 || ix >= p->in_w) {
                            continue;
                        }
                        px = input + ((int64_t)iy * p->in_w + ix) * p->in_c;
                        if (depthwise) {
                            acc += (int64_t)px[oc / p->depth_multiplier] *
                                   weights[((int64_t)ky * p->k_w + kx) * p->out_c + oc];
                        } else {
                            const int8_t *pw = weights + (((int64_t)oc * p->k_h + ky) * p->k_w + kx) * p->in_c;
                            for (ic = 0; ic < p->in_c; ++ic) {
                                acc += (int64_t)px[ic] * pw[ic];
                            }
                        }
                    }
                }
                acc += bias[oc];
                *output++ = (int16_t)clamp16(edgec_requantize64(acc, mult[oc], shift[oc]), p->act_min, p->act_max);
            }
        }
    }
}

void edgec_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                      const int64_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output)
{
    conv_any(p, input, weights, bias, mult, shift, output, 0);
}

void edgec_depthwise_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                                const int64_t *bias, const int32_t *mult, const int32_t *shift,
                                int16_t *output)
{
    conv_any(p, input, weights, bias, mult, shift, output, 1);
}

void edgec_fully_connected_s16(const edgec_fc_params *p, const int16_t *input, const int8_t *weights,
                               const int64_t *bias, const int32_t *mult, const int32_t *shift,
                               int16_t *output)
{
    int32_t o, i;
    for (o = 0; o < p->out_features; ++o) {
        const int8_t *w = weights + (int64_t)o * p->in_features;
        int64_t acc = bias[o];
        for (i = 0; i < p->in_features; ++i) {
            acc += (int64_t)input[i] * w[i];
        }
        output[o] = (int16_t)clamp16(edgec_requantize64(acc, mult[o], shift[o]), p->act_min, p->act_max);
    }
}

void edgec_requantize_s8_s16(int32_t n, const int8_t *input, int32_t input_zp, int32_t mult, int32_t shift,
                             int16_t *output)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = (int16_t)clamp16(edgec_requantize((int32_t)input[i] - input_zp, mult, shift), -32768, 32767);
    }
}

void edgec_requantize_s16_s8(int32_t n, const int16_t *input, int32_t output_zp, int32_t mult, int32_t shift,
                             int8_t *output)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = (int8_t)clamp16(edgec_requantize(input[i], mult, shift) + output_zp, -128, 127);
    }
}
