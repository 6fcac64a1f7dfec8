/* edgec reductions, portable C99. Bit-exact with edgec/ops/reduce.py. */
#include "edgec_nn_support.h"

/* The body for int8, and int16 (TFLite's 16x8 MEAN: the same sums and requantization, the int16 clamp). The
 * functions are written out below (edgec/cheader.py finds a runtime file's kernels by their definitions). */
#define EDGEC_REDUCE_BODY(T)                                                                                     \
    {                                                                                                            \
        const int32_t n = p->n, inner = p->inner;                                                                \
        int32_t o, i, k;                                                                                         \
        for (o = 0; o < p->outer; ++o) {                                                                         \
            for (i = 0; i < inner; ++i) {                                                                        \
                const T *x = input + o * n * inner + i;                                                          \
                int32_t v;                                                                                       \
                if (p->kind == 0) { /* the values summed four a pass, the zero point taken off once */           \
                    const T *q = x;                                                                              \
                    int32_t acc = 0;                                                                             \
                    for (k = n; k >= 4; k -= 4, q += 4 * inner) {                                                \
                        acc += (int32_t)q[0] + (int32_t)q[inner] + (int32_t)q[2 * inner] + (int32_t)q[3 * inner]; \
                    }                                                                                            \
                    for (; k > 0; --k, q += inner) {                                                             \
                        acc += (int32_t)q[0];                                                                    \
                    }                                                                                            \
                    acc -= n * p->input_zp;                                                                      \
                    v = edgec_requantize(acc, p->mult, p->shift) + p->output_zp;                                 \
                } else if (p->kind <= 2) { /* max or min: the kind chosen outside the loop */                     \
                    const T *q = x + inner;                                                                      \
                    int32_t m = x[0];                                                                            \
                    if (p->kind == 1) {                                                                          \
                        for (k = 1; k < n; ++k, q += inner) m = *q > m ? *q : m;                                 \
                    } else {                                                                                     \
                        for (k = 1; k < n; ++k, q += inner) m = *q < m ? *q : m;                                 \
                    }                                                                                            \
                    v = edgec_requantize(m - p->input_zp, p->mult, p->shift) + p->output_zp;                     \
                } else {                                                                                         \
                    const int32_t sign = p->kind == 3 ? 1 : -1;                                                  \
                    int32_t best = sign * x[0], arg = 0;                                                         \
                    for (k = 1; k < n; ++k) {                                                                    \
                        const int32_t xv = sign * x[k * inner];                                                  \
                        if (xv > best || (p->select_last && xv == best)) {                                       \
                            best = xv;                                                                           \
                            arg = k;                                                                             \
                        }                                                                                        \
                    }                                                                                            \
                    v = arg;                                                                                     \
                }                                                                                                \
                *output++ = (T)edgec_clamp(v, p->act_min, p->act_max);                                           \
            }                                                                                                    \
        }                                                                                                        \
    }

void edgec_reduce_s8(const edgec_reduce_params *p, const int8_t *input, int8_t *output)
{
    EDGEC_REDUCE_BODY(int8_t)
}

void edgec_reduce_s16(const edgec_reduce_params *p, const int16_t *input, int16_t *output)
{
    EDGEC_REDUCE_BODY(int16_t)
}

void edgec_reduce_index32_s8(const edgec_reduce_params *p, const int8_t *input, int32_t *output)
{
    const int32_t n = p->n, inner = p->inner, sign = p->kind == 3 ? 1 : -1;
    int32_t o, i, k;
    for (o = 0; o < p->outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const int8_t *x = input + o * n * inner + i;
            int32_t best = sign * x[0], arg = 0;
            for (k = 1; k < n; ++k) {
                if (sign * x[k * inner] > best) {
                    best = sign * x[k * inner];
                    arg = k;
                }
            }
            *output++ = arg;
        }
    }
}
