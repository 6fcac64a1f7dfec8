/* edgec extended INT8 kernels, portable C99. Bit-exact with edgec/kernels_ext.py. */
#include "edgec_kernels_ext.h"

void edgec_lut_s8(const edgec_lut_params *p, const int8_t *table, const int8_t *input, int8_t *output)
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

static int32_t edgec_binary_one(const edgec_binary_params *p, int32_t a, int32_t b)
{
    int32_t raw;
    const int32_t va = a - p->a_zp, vb = b - p->b_zp;
    if (p->op <= 3) {
        const int32_t ls = (int32_t)1 << p->left_shift;
        const int32_t sa = edgec_requantize(va * ls, p->a_mult, p->a_shift);
        const int32_t sb = edgec_requantize(vb * ls, p->b_mult, p->b_shift);
        raw = p->op == 0 ? sa + sb : p->op == 1 ? sa - sb : p->op == 2 ? (sa > sb ? sa : sb) : (sa < sb ? sa : sb);
    } else if (p->op == 4) {
        raw = va * vb;
    } else {
        raw = edgec_div_round(va * 65536, vb);
    }
    raw = edgec_requantize(raw, p->out_mult, p->out_shift) + p->out_zp;
    return edgec_clamp(raw, p->act_min, p->act_max);
}

void edgec_binary_s8(const edgec_binary_params *p, const int8_t *a, const int8_t *b, int8_t *output)
{
    const int32_t *d = p->dims, *sa = p->a_stride, *sb = p->b_stride;
    int32_t i0, i1, i2, i3, i4, i5;
    for (i0 = 0; i0 < d[0]; ++i0) {
        for (i1 = 0; i1 < d[1]; ++i1) {
            for (i2 = 0; i2 < d[2]; ++i2) {
                for (i3 = 0; i3 < d[3]; ++i3) {
                    for (i4 = 0; i4 < d[4]; ++i4) {
                        const int8_t *pa = a + i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3] + i4 * sa[4];
                        const int8_t *pb = b + i0 * sb[0] + i1 * sb[1] + i2 * sb[2] + i3 * sb[3] + i4 * sb[4];
                        for (i5 = 0; i5 < d[5]; ++i5) {
                            *output++ = (int8_t)edgec_binary_one(p, pa[i5 * sa[5]], pb[i5 * sb[5]]);
                        }
                    }
                }
            }
        }
    }
}

void edgec_remap_s8(const edgec_remap_params *p, const int32_t *offsets, const int8_t *input,
                    int8_t *output)
{
    const int32_t *d = p->dims;
    const int32_t *t0 = offsets + p->start[0], *t1 = offsets + p->start[1], *t2 = offsets + p->start[2];
    const int32_t *t3 = offsets + p->start[3], *t4 = offsets + p->start[4], *t5 = offsets + p->start[5];
    const int8_t pad = (int8_t)p->pad_value;
    int32_t i0, i1, i2, i3, i4, i5;
    for (i0 = 0; i0 < d[0]; ++i0) {
        for (i1 = 0; i1 < d[1]; ++i1) {
            const int32_t s1 = t0[i0] + t1[i1];
            for (i2 = 0; i2 < d[2]; ++i2) {
                const int32_t s2 = s1 + t2[i2];
                for (i3 = 0; i3 < d[3]; ++i3) {
                    const int32_t s3 = s2 + t3[i3];
                    for (i4 = 0; i4 < d[4]; ++i4) {
                        const int32_t s4 = s3 + t4[i4];
                        for (i5 = 0; i5 < d[5]; ++i5) {
                            const int32_t s = s4 + t5[i5];
                            *output++ = s >= 0 ? input[s] : pad;
                        }
                    }
                }
            }
        }
    }
}

void edgec_concat_part_s8(const edgec_concat_params *p, const int8_t *table, const int8_t *input,
                          int8_t *output)
{
    int32_t o, j;
    for (o = 0; o < p->outer; ++o) {
        int8_t *dst = output + o * p->out_stride + p->out_offset;
        const int8_t *src = input + o * p->chunk;
        for (j = 0; j < p->chunk; ++j) {
            dst[j] = table ? table[src[j] + 128] : src[j];
        }
    }
}

void edgec_reduce_s8(const edgec_reduce_params *p, const int8_t *input, int8_t *output)
{
    const int32_t n = p->n, inner = p->inner;
    int32_t o, i, k;
    for (o = 0; o < p->outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const int8_t *x = input + o * n * inner + i;
            int32_t v;
            if (p->kind == 0) {
                int32_t acc = 0;
                for (k = 0; k < n; ++k) {
                    acc += (int32_t)x[k * inner] - p->input_zp;
                }
                v = edgec_requantize(acc, p->mult, p->shift) + p->output_zp;
            } else if (p->kind <= 2) {
                int32_t m = x[0];
                for (k = 1; k < n; ++k) {
                    const int32_t xv = x[k * inner];
                    m = p->kind == 1 ? (xv > m ? xv : m) : (xv < m ? xv : m);
                }
                v = edgec_requantize(m - p->input_zp, p->mult, p->shift) + p->output_zp;
            } else {
                const int32_t sign = p->kind == 3 ? 1 : -1;
                int32_t best = sign * x[0], arg = 0;
                for (k = 1; k < n; ++k) {
                    const int32_t xv = sign * x[k * inner];
                    if (xv > best || (p->select_last && xv == best)) {
                        best = xv;
                        arg = k;
                    }
                }
                v = arg;
            }
            *output++ = (int8_t)edgec_clamp(v, p->act_min, p->act_max);
        }
    }
}

void edgec_group_conv2d_s8(const edgec_conv_params *p, int32_t groups, const int8_t *input,
                           const int8_t *weights, const int32_t *bias, const int32_t *mult,
                           const int32_t *shift, int8_t *output)
{
    const int32_t in_w = p->in_w, in_c = p->in_c, out_c = p->out_c;
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

void edgec_fully_connected_rows_s8(const edgec_fc_params *p, int32_t rows, const int8_t *input,
                                   const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                   const int32_t *shift, int8_t *output)
{
    int32_t r;
    for (r = 0; r < rows; ++r) {
        edgec_fully_connected_s8(p, input + r * p->in_features, weights, bias, mult, shift,
                                 output + r * p->out_features);
    }
}

void edgec_matmul_s8(const edgec_matmul_params *p, const int8_t *a, const int8_t *b, int8_t *output)
{
    int32_t bt, i, j, k;
    for (bt = 0; bt < p->batch; ++bt) {
        const int8_t *am = a + bt * p->a_batch_stride, *bm = b + bt * p->b_batch_stride;
        for (i = 0; i < p->m; ++i) {
            for (j = 0; j < p->n; ++j) {
                int32_t acc = 0;
                for (k = 0; k < p->k; ++k) {
                    acc += ((int32_t)am[i * p->k + k] - p->a_zp) * ((int32_t)bm[k * p->n + j] - p->b_zp);
                }
                acc = edgec_requantize(acc, p->mult, p->shift) + p->output_zp;
                *output++ = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
            }
        }
    }
}

/* Round half away from zero of v / 2^bits. */
static int64_t edgec_round_pot64(int64_t v, int32_t bits)
{
    const int64_t half = (int64_t)1 << (bits - 1);
    return v >= 0 ? (v + half) >> bits : -((-v + half) >> bits);
}

void edgec_log_softmax_s8(const edgec_log_softmax_params *p, const uint32_t *exp_table,
                          const int32_t *log_table, const int8_t *input, int8_t *output)
{
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *x = input + r * p->cols;
        int32_t m = -128, e = 0;
        int64_t sum = 0, l2, ln;
        for (i = 0; i < p->cols; ++i) {
            m = x[i] > m ? x[i] : m;
        }
        for (i = 0; i < p->cols; ++i) {
            sum += exp_table[m - x[i]];
        }
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

void edgec_resize_linear_s8(const edgec_resize_params *p, const int32_t *idx, const int32_t *frac,
                            const int8_t *input, int8_t *output)
{
    const int32_t c = p->c, in_w = p->in_w, oh = p->out_h, ow = p->out_w;
    const int32_t *y0 = idx, *y1 = idx + oh, *x0 = idx + 2 * oh, *x1 = idx + 2 * oh + ow;
    int32_t oy, ox, ch;
    for (oy = 0; oy < oh; ++oy) {
        const int64_t fy = frac[oy];
        for (ox = 0; ox < ow; ++ox) {
            const int64_t fx = frac[oh + ox];
            const int8_t *a = input + (y0[oy] * in_w + x0[ox]) * c, *b = input + (y0[oy] * in_w + x1[ox]) * c;
            const int8_t *cc = input + (y1[oy] * in_w + x0[ox]) * c, *d = input + (y1[oy] * in_w + x1[ox]) * c;
            for (ch = 0; ch < c; ++ch) {
                const int64_t top = a[ch] * (1024 - fx) + b[ch] * fx;
                const int64_t bot = cc[ch] * (1024 - fx) + d[ch] * fx;
                const int64_t v = edgec_round_pot64(top * (1024 - fy) + bot * fy, 20);
                *output++ = (int8_t)(v < -128 ? -128 : (v > 127 ? 127 : v));
            }
        }
    }
}
