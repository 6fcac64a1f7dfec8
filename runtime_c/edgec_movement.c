/* edgec data movement, portable C99: transpose, index maps (slice, pad, gather, ...), concatenation.
 * Bit-exact with edgec/ops/movement.py and concat.py. */
#include "edgec_nn_support.h"

#include <string.h>

/* The output's dims (od) and, for each output axis, the input stride it walks (s). */
static void transpose_walk(const edgec_transpose_params *p, int32_t od[4], int32_t s[4])
{
    int32_t in_stride[4], k;
    in_stride[3] = 1;
    for (k = 2; k >= 0; --k) {
        in_stride[k] = in_stride[k + 1] * p->dims[k + 1];
    }
    for (k = 0; k < 4; ++k) {
        od[k] = p->dims[p->perm[k]];
        s[k] = in_stride[p->perm[k]];
    }
}

/* The bodies of transpose and remap for one element type T: int8, and int16 between two int16 layers (the same
 * loops on 2-byte elements). A remap's negative offset is padding. The functions are written out below
 * (edgec/cheader.py finds a runtime file's kernels by their definitions). */
#define EDGEC_TRANSPOSE_BODY(T)                                                                                  \
    {                                                                                                            \
        int32_t s[4], od[4], i0, i1, i2, i3;                                                                     \
        transpose_walk(p, od, s);                                                                                \
        for (i0 = 0; i0 < od[0]; ++i0) {                                                                         \
            for (i1 = 0; i1 < od[1]; ++i1) {                                                                     \
                for (i2 = 0; i2 < od[2]; ++i2) {                                                                 \
                    const T *src = input + i0 * s[0] + i1 * s[1] + i2 * s[2];                                    \
                    for (i3 = 0; i3 < od[3]; ++i3) {                                                             \
                        *output++ = src[i3 * s[3]];                                                              \
                    }                                                                                            \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
    }

/* `bytes` bytes from src to dst, a word at a time where unaligned words may be read (memcpy of 4 bytes:
 * one LDR / STR on the Cortex-M3 and up). */
static void copy_run(void *dst, const void *src, int32_t bytes)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    for (; bytes >= 8; bytes -= 8, d += 8, s += 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + 4, &b, 4);
    }
    for (; bytes > 0; --bytes) {
        *d++ = *s++;
    }
}

/* A remap whose innermost table reads its input in a row (t5[i] = t5[0] + i: the channels of a PAD, a SLICE or a
 * nearest resize in NHWC) moves whole runs: the output elements of consecutive i4 whose t4 steps by d[5] are one
 * run of the input (copied), those of a padded i4 (a negative sum) one run of the pad value. */
#define EDGEC_REMAP_BODY(T)                                                                                      \
    {                                                                                                            \
        const int32_t *d = p->dims;                                                                              \
        const int32_t *t0 = offsets + p->start[0], *t1 = offsets + p->start[1], *t2 = offsets + p->start[2];     \
        const int32_t *t3 = offsets + p->start[3], *t4 = offsets + p->start[4], *t5 = offsets + p->start[5];     \
        const T pad = (T)p->pad_value;                                                                           \
        int32_t i0, i1, i2, i3, i4, i5, rows = t5[0] >= 0;                                                       \
        for (i5 = 1; i5 < d[5] && rows; ++i5) {                                                                  \
            rows = t5[i5] == t5[0] + i5;                                                                         \
        }                                                                                                        \
        for (i0 = 0; i0 < d[0]; ++i0) {                                                                          \
            for (i1 = 0; i1 < d[1]; ++i1) {                                                                      \
                const int32_t s1 = t0[i0] + t1[i1];                                                              \
                for (i2 = 0; i2 < d[2]; ++i2) {                                                                  \
                    const int32_t s2 = s1 + t2[i2];                                                              \
                    for (i3 = 0; i3 < d[3]; ++i3) {                                                              \
                        const int32_t s3 = s2 + t3[i3];                                                          \
                        for (i4 = 0; i4 < d[4] && rows;) {                                                       \
                            const int32_t s4 = s3 + t4[i4];                                                      \
                            int32_t run = 1, k;                                                                  \
                            if (s4 >= 0) {                                                                       \
                                while (i4 + run < d[4] && t4[i4 + run] == t4[i4] + run * d[5]) ++run;            \
                                copy_run(output, input + s4 + t5[0], run * d[5] * (int32_t)sizeof(T));           \
                            } else {                                                                             \
                                while (i4 + run < d[4] && s3 + t4[i4 + run] < 0) ++run;                          \
                                for (k = 0; k < run * d[5]; ++k) output[k] = pad;                                \
                            }                                                                                    \
                            output += run * d[5];                                                                \
                            i4 += run;                                                                           \
                        }                                                                                        \
                        for (i4 = 0; i4 < d[4] && !rows; ++i4) {                                                 \
                            const int32_t s4 = s3 + t4[i4];                                                      \
                            for (i5 = 0; i5 < d[5]; ++i5) {                                                      \
                                const int32_t s = s4 + t5[i5];                                                   \
                                *output++ = s >= 0 ? input[s] : pad;                                             \
                            }                                                                                    \
                        }                                                                                        \
                    }                                                                                            \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
    }

void edgec_transpose_s8(const edgec_transpose_params *p, const int8_t *input, int8_t *output)
{
    EDGEC_TRANSPOSE_BODY(int8_t)
}

void edgec_remap_s8(const edgec_remap_params *p, const int8_t *input, const int32_t *offsets, int8_t *output)
{
    EDGEC_REMAP_BODY(int8_t)
}

void edgec_transpose_s16(const edgec_transpose_params *p, const int16_t *input, int16_t *output)
{
    EDGEC_TRANSPOSE_BODY(int16_t)
}

void edgec_remap_s16(const edgec_remap_params *p, const int16_t *input, const int32_t *offsets, int16_t *output)
{
    EDGEC_REMAP_BODY(int16_t)
}

void edgec_concat_part_s8(const edgec_concat_params *p, const int8_t *input, const int8_t *table,
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

void edgec_concat_part_s16(const edgec_concat_params *p, const int16_t *input, int32_t mult, int32_t shift,
                           int16_t *output)
{
    int32_t o, j;
    for (o = 0; o < p->outer; ++o) {
        int16_t *dst = output + o * p->out_stride + p->out_offset;
        const int16_t *src = input + o * p->chunk;
        for (j = 0; j < p->chunk; ++j) {
            dst[j] = mult ? (int16_t)edgec_clamp(edgec_requantize(src[j], mult, shift), -32768, 32767) : src[j];
        }
    }
}

void edgec_constant_s8(const int8_t *values, int8_t *output, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = values[i];
    }
}
