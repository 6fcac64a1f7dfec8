/* edgec INT8 kernels, portable C99. Bit-exact with edgec/kernels_ref.py.
 * Accumulation is int32 as in the TFLite reference kernels. */
#include "edgec_kernels.h"

/* First tap index k in [0, k_max) with 0 <= origin + k*dil, and one past the last with origin + k*dil < size. */
static int32_t edgec_tap_begin(int32_t origin, int32_t dil)
{
    return origin >= 0 ? 0 : (-origin + dil - 1) / dil;
}

static int32_t edgec_tap_end(int32_t origin, int32_t dil, int32_t size, int32_t k_max)
{
    int32_t end;
    if (size - origin <= 0) {
        return 0;
    }
    end = (size - origin + dil - 1) / dil;
    return end < k_max ? end : k_max;
}

void edgec_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output)
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
                const int8_t *w_oc = weights + (int32_t)oc * k_h * k_w * in_c;
                int32_t acc = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    const int32_t iy = iy0 + ky * dil_h;
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int32_t ix = ix0 + kx * dil_w;
                        const int8_t *x = input + (iy * in_w + ix) * in_c;
                        const int8_t *w = w_oc + (ky * k_w + kx) * in_c;
                        for (ic = 0; ic < in_c; ++ic) {
                            acc += ((int32_t)x[ic] - input_zp) * (int32_t)w[ic];
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

void edgec_depthwise_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                               int8_t *output)
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
                        acc += xv * (int32_t)weights[(ky * k_w + kx) * out_c + oc];
                    }
                }
                acc += bias[oc];
                acc = edgec_requantize(acc, mult[oc], shift[oc]) + p->output_zp;
                *output++ = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
            }
        }
    }
}

void edgec_fully_connected_s8(const edgec_fc_params *p, const int8_t *input, const int8_t *weights,
                              const int32_t *bias, const int32_t *mult, const int32_t *shift,
                              int8_t *output)
{
    const int32_t n_in = p->in_features, input_zp = p->input_zp;
    int32_t o, i;
    for (o = 0; o < p->out_features; ++o) {
        const int8_t *w = weights + o * n_in;
        int32_t acc = 0;
        for (i = 0; i < n_in; ++i) {
            acc += ((int32_t)input[i] - input_zp) * (int32_t)w[i];
        }
        acc += bias[o];
        acc = edgec_requantize(acc, mult[o], shift[o]) + p->output_zp;
        output[o] = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
    }
}

void edgec_max_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output)
{
    const int32_t in_w = p->in_w, c = p->c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, 1);
        const int32_t ky1 = edgec_tap_end(iy0, 1, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, 1);
            const int32_t kx1 = edgec_tap_end(ix0, 1, in_w, p->k_w);
            for (ch = 0; ch < c; ++ch) {
                int32_t m = -128;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int32_t v = input[((iy0 + ky) * in_w + (ix0 + kx)) * c + ch];
                        m = v > m ? v : m;
                    }
                }
                *output++ = (int8_t)edgec_clamp(m, p->act_min, p->act_max);
            }
        }
    }
}

void edgec_avg_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output)
{
    const int32_t in_w = p->in_w, c = p->c;
    int32_t oy, ox, ch, ky, kx;
    for (oy = 0; oy < p->out_h; ++oy) {
        const int32_t iy0 = oy * p->stride_h - p->pad_top;
        const int32_t ky0 = edgec_tap_begin(iy0, 1);
        const int32_t ky1 = edgec_tap_end(iy0, 1, p->in_h, p->k_h);
        for (ox = 0; ox < p->out_w; ++ox) {
            const int32_t ix0 = ox * p->stride_w - p->pad_left;
            const int32_t kx0 = edgec_tap_begin(ix0, 1);
            const int32_t kx1 = edgec_tap_end(ix0, 1, in_w, p->k_w);
            const int32_t count = (ky1 > ky0 && kx1 > kx0) ? (ky1 - ky0) * (kx1 - kx0) : 0;
            for (ch = 0; ch < c; ++ch) {
                int32_t sum = 0, avg = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        sum += input[((iy0 + ky) * in_w + (ix0 + kx)) * c + ch];
                    }
                }
                if (count > 0) { /* no valid tap (degenerate padding): average 0 */
                    avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                }
                *output++ = (int8_t)edgec_clamp(avg, p->act_min, p->act_max);
            }
        }
    }
}

void edgec_add_s8(const edgec_add_params *p, const int8_t *input1, const int8_t *input2,
                  int8_t *output)
{
    const int32_t scale = (int32_t)1 << p->left_shift;
    int32_t i;
    for (i = 0; i < p->n; ++i) {
        const int32_t v1 = ((int32_t)input1[i] - p->input1_zp) * scale;
        const int32_t v2 = ((int32_t)input2[i] - p->input2_zp) * scale;
        const int32_t s1 = edgec_requantize(v1, p->input1_mult, p->input1_shift);
        const int32_t s2 = edgec_requantize(v2, p->input2_mult, p->input2_shift);
        const int32_t out = edgec_requantize(s1 + s2, p->output_mult, p->output_shift) + p->output_zp;
        output[i] = (int8_t)edgec_clamp(out, p->act_min, p->act_max);
    }
}

void edgec_softmax_s8(int32_t rows, int32_t cols, const uint32_t *exp_table, const int8_t *input,
                      int8_t *output)
{
    int32_t r, i;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + r * cols;
        int8_t *y = output + r * cols;
        int32_t m = -128;
        uint64_t sum = 0, two_sum;
        for (i = 0; i < cols; ++i) {
            m = x[i] > m ? x[i] : m;
        }
        for (i = 0; i < cols; ++i) {
            sum += exp_table[m - x[i]];
        }
        two_sum = 2u * sum;
        for (i = 0; i < cols; ++i) {
            const uint64_t e = exp_table[m - x[i]];
            const int32_t q = (int32_t)((e * 512u + sum) / two_sum) - 128;
            y[i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}

void edgec_transpose_s8(const int32_t dims[4], const int32_t perm[4], const int8_t *input,
                        int8_t *output)
{
    int32_t in_stride[4], s[4], od[4];
    int32_t k, i0, i1, i2, i3;
    in_stride[3] = 1;
    for (k = 2; k >= 0; --k) {
        in_stride[k] = in_stride[k + 1] * dims[k + 1];
    }
    for (k = 0; k < 4; ++k) {
        od[k] = dims[perm[k]];
        s[k] = in_stride[perm[k]];
    }
    for (i0 = 0; i0 < od[0]; ++i0) {
        for (i1 = 0; i1 < od[1]; ++i1) {
            for (i2 = 0; i2 < od[2]; ++i2) {
                const int8_t *src = input + i0 * s[0] + i1 * s[1] + i2 * s[2];
                for (i3 = 0; i3 < od[3]; ++i3) {
                    *output++ = src[i3 * s[3]];
                }
            }
        }
    }
}
