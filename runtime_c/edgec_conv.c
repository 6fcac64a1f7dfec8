/* edgec convolutions, portable C99: conv2d, depthwise and grouped, int8 and 16x8. Bit-exact with
 * edgec/ops/conv/. Accumulation is int32 (int8) or int64 (16x8) as
 * in the TFLite reference kernels. */
#include "edgec_nn_support.h"

static void edgec_conv2d_any(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                             const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output,
                             int packed)
{
    const int32_t in_w = p->in_w, in_c = p->in_c, out_c = p->out_c;
    const int32_t k_h = p->k_h, k_w = p->k_w, dil_h = p->dil_h, dil_w = p->dil_w;
    const int32_t input_zp = p->input_zp;
    int32_t oy, ox, oc, ky, kx, ic;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, dil_h);
        const int32_t ky1 = edgec_tap_end(iy0, dil_h, p->in_h, k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, dil_w);
            const int32_t kx1 = edgec_tap_end(ix0, dil_w, in_w, k_w);
            for (oc = 0; oc < out_c; ++oc) {
                const int32_t w_oc = oc * k_h * k_w * in_c;       /* index of the channel's first weight */
                int32_t acc = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    const int32_t iy = iy0 + ky * dil_h;
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int32_t ix = ix0 + kx * dil_w;
                        const int8_t *x = input + (iy * in_w + ix) * in_c;
                        const int32_t w = w_oc + (ky * k_w + kx) * in_c;
                        for (ic = 0; ic < in_c; ++ic) {
                            acc += ((int32_t)x[ic] - input_zp) * edgec_weight_at(weights, w + ic, packed);
                        }
                    }
                }
                acc += bias[oc];
                acc = edgec_requantize(acc, mult[oc], shift[oc]) + p->output_zp;
                *output++ = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
            }
        }
    }
}

static void edgec_depthwise_conv2d_any(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                                       const int32_t *bias, const int32_t *mult, const int32_t *shift,
                                       int8_t *output, int packed)
{
    const int32_t in_w = p->in_w, in_c = p->in_c, out_c = p->out_c, dm = p->depth_multiplier;
    const int32_t k_w = p->k_w, dil_h = p->dil_h, dil_w = p->dil_w;
    const int32_t input_zp = p->input_zp;
    int32_t oy, ox, oc, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, dil_h);
        const int32_t ky1 = edgec_tap_end(iy0, dil_h, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, dil_w);
            const int32_t kx1 = edgec_tap_end(ix0, dil_w, in_w, k_w);
            for (oc = 0; oc < out_c; ++oc) {
                const int32_t ic = oc / dm;
                int32_t acc = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    const int32_t iy = iy0 + ky * dil_h;
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int32_t ix = ix0 + kx * dil_w;
                        const int32_t xv = (int32_t)input[(iy * in_w + ix) * in_c + ic] - input_zp;
                        acc += xv * edgec_weight_at(weights, (ky * k_w + kx) * out_c + oc, packed);
                    }
                }
                acc += bias[oc];
                acc = edgec_requantize(acc, mult[oc], shift[oc]) + p->output_zp;
                *output++ = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
            }
        }
    }
}

void edgec_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output)
{
    edgec_conv2d_any(p, input, weights, bias, mult, shift, output, 0);
}

void edgec_depthwise_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                               int8_t *output)
{
    edgec_depthwise_conv2d_any(p, input, weights, bias, mult, shift, output, 0);
}

void edgec_conv2d_s4(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output)
{
    edgec_conv2d_any(p, input, weights, bias, mult, shift, output, 1);
}

void edgec_depthwise_conv2d_s4(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                               int8_t *output)
{
    edgec_depthwise_conv2d_any(p, input, weights, bias, mult, shift, output, 1);
}

void edgec_group_conv2d_s8(const edgec_group_conv2d_params *p, const int8_t *input, const int8_t *weights,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output)
{
    const int32_t in_w = p->in_w, in_c = p->in_c, out_c = p->out_c, groups = p->groups;
    const int32_t gic = in_c / groups, goc = out_c / groups;
    const int32_t k_h = p->k_h, k_w = p->k_w, dil_h = p->dil_h, dil_w = p->dil_w;
    int32_t oy, ox, oc, ky, kx, ic;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            for (oc = 0; oc < out_c; ++oc) {
                const int8_t *w_oc = weights + oc * k_h * k_w * gic;
                const int32_t c0 = (oc / goc) * gic;
                int32_t acc = 0;
                for (ky = 0; ky < k_h; ++ky) {
                    const int32_t iy = iy0 + ky * dil_h;
                    if (iy < 0 || iy >= p->in_h) {
                        continue;
                    }
                    for (kx = 0; kx < k_w; ++kx) {
                        const int32_t ix = ix0 + kx * dil_w;
                        const int8_t *x, *w;
                        if (ix < 0 || ix >= in_w) {
                            continue;
                        }
                        x = input + (iy * in_w + ix) * in_c + c0;
                        w = w_oc + (ky * k_w + kx) * gic;
                        for (ic = 0; ic < gic; ++ic) {
                            acc += ((int32_t)x[ic] - p->input_zp) * (int32_t)w[ic];
                        }
                    }
                }
                acc += bias[oc];
                acc = edgec_requantize(acc, mult[oc], shift[oc]) + p->output_zp;
                *output++ = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
            }
        }
    }
}

/* The loop nest of the 16x8 convolutions: for every output (oy, ox, oc) `acc` (ACC_T) starts at 0, TAP runs for
 * each tap inside the image (`px`: the input pixel, `ky`, `kx`, `ic` free for the tap's own loop), then STORE
 * writes the output. */
#define EDGEC_CONV_S16_NEST(ACC_T, TAP, STORE)                                                          \
    do {                                                                                                \
        int32_t oy, ox, oc, ky, kx, ic;                                                                 \
        for (oy = 0; oy < p->out_h; ++oy) {                                                             \
            for (ox = 0; ox < p->out_w; ++ox) {                                                         \
                for (oc = 0; oc < p->out_c; ++oc) {                                                     \
                    ACC_T acc = 0;                                                                      \
                    for (ky = 0; ky < p->k_h; ++ky) {                                                   \
                        const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;               \
                        if (iy < 0 || iy >= p->in_h) {                                                  \
                            continue;                                                                   \
                        }                                                                               \
                        for (kx = 0; kx < p->k_w; ++kx) {                                               \
                            const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;          \
                            const int16_t *px;                                                          \
                            if (ix < 0 || ix >= p->in_w) {                                              \
                                continue;                                                               \
                            }                                                                           \
                            px = input + ((int64_t)iy * p->in_w + ix) * p->in_c;                        \
                            TAP                                                                         \
                        }                                                                               \
                    }                                                                                   \
                    STORE                                                                               \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
        (void)ic;                                                                                       \
    } while (0)

static void edgec_conv_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                           const int64_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output,
                           int depthwise)
{
    EDGEC_CONV_S16_NEST(
        int64_t,
        if (depthwise) {
            acc += (int64_t)px[oc / p->depth_multiplier] * weights[((int64_t)ky * p->k_w + kx) * p->out_c + oc];
        } else {
            const int8_t *pw = weights + (((int64_t)oc * p->k_h + ky) * p->k_w + kx) * p->in_c;
            for (ic = 0; ic < p->in_c; ++ic) {
                acc += (int64_t)px[ic] * pw[ic];
            }
        },
        acc += bias[oc];
        *output++ = (int16_t)edgec_clamp(edgec_requantize64(acc, mult[oc], shift[oc]), p->act_min, p->act_max););
}

void edgec_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                      const int64_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output)
{
    edgec_conv_s16(p, input, weights, bias, mult, shift, output, 0);
}

void edgec_depthwise_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                                const int64_t *bias, const int32_t *mult, const int32_t *shift,
                                int16_t *output)
{
    edgec_conv_s16(p, input, weights, bias, mult, shift, output, 1);
}

/* 16x8 with an int32 bias (TFLite's ConvPerChannel<int32_t>): the sum in int32 (wrapping, as two's complement),
 * the 32-bit requantization. */
void edgec_conv2d_s16_b32(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                          const int32_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output)
{
    EDGEC_CONV_S16_NEST(
        uint32_t,
        const int8_t *pw = weights + (((int64_t)oc * p->k_h + ky) * p->k_w + kx) * p->in_c;
        for (ic = 0; ic < p->in_c; ++ic) {
            acc += (uint32_t)((int32_t)px[ic] * pw[ic]);
        },
        acc += (uint32_t)bias[oc];
        *output++ = (int16_t)edgec_clamp(edgec_requantize((int32_t)acc, mult[oc], shift[oc]), p->act_min,
                                         p->act_max););
}
