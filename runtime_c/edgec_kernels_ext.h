/* edgec extended INT8 kernels (C99, no allocation, no I/O): the operators beyond first light.
 * Bit-exact with edgec/kernels_ext.py. Tensors are int8, contiguous, without a batch dimension. */
#ifndef EDGEC_KERNELS_EXT_H
#define EDGEC_KERNELS_EXT_H

#include <stdint.h>

#include "edgec_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EDGEC_RANK 6

/* Elementwise lookup: y[i] = table[((i / inner) % count) * 256 + x[i] + 128]. In place is fine. */
typedef struct {
    int32_t n, count, inner;
} edgec_lut_params;
void edgec_lut_s8(const edgec_lut_params *p, const int8_t *table, const int8_t *input, int8_t *output);

/* Broadcasting elementwise op over 6-D dims (input strides 0 where broadcast).
 * op 0..3 (add, sub, max, min): TFLite add scheme (inputs rescaled after << left_shift);
 * op 4 (mul): (a-za)*(b-zb) requantized; op 5 (div): round(((a-za) << 16) / (b-zb)) requantized. */
typedef struct {
    int32_t op, dims[EDGEC_RANK], a_stride[EDGEC_RANK], b_stride[EDGEC_RANK];
    int32_t a_zp, a_mult, a_shift, b_zp, b_mult, b_shift, left_shift, out_mult, out_shift, out_zp,
        act_min, act_max;
} edgec_binary_params;
void edgec_binary_s8(const edgec_binary_params *p, const int8_t *a, const int8_t *b, int8_t *output);

/* Separable index map: out[i0..i5] = in[sum_k offsets[start[k] + i_k]], or pad_value when the
 * sum is negative (an axis entry of -2^27 marks padding). */
typedef struct {
    int32_t dims[EDGEC_RANK], start[EDGEC_RANK], pad_value;
} edgec_remap_params;
void edgec_remap_s8(const edgec_remap_params *p, const int32_t *offsets, const int8_t *input,
                    int8_t *output);

/* One input of a concatenation: out[o * out_stride + out_offset + j] = in[o * chunk + j]
 * (through table[in + 128] when table is not NULL). */
typedef struct {
    int32_t outer, chunk, out_stride, out_offset;
} edgec_concat_params;
void edgec_concat_part_s8(const edgec_concat_params *p, const int8_t *table, const int8_t *input,
                          int8_t *output);

/* Reduce [outer][n][inner] over n. kind 0 sum (mean: 1/n in mult), 1 max, 2 min, 3 argmax, 4 argmin. */
typedef struct {
    int32_t outer, n, inner, kind, select_last, input_zp, mult, shift, output_zp, act_min, act_max;
} edgec_reduce_params;
void edgec_reduce_s8(const edgec_reduce_params *p, const int8_t *input, int8_t *output);

/* Grouped convolution: weights [out_c][k_h][k_w][in_c / groups]. */
void edgec_group_conv2d_s8(const edgec_conv_params *p, int32_t groups, const int8_t *input,
                           const int8_t *weights, const int32_t *bias, const int32_t *mult,
                           const int32_t *shift, int8_t *output);

/* `rows` rows through one fully connected layer. */
void edgec_fully_connected_rows_s8(const edgec_fc_params *p, int32_t rows, const int8_t *input,
                                   const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                   const int32_t *shift, int8_t *output);

/* [batch][m][k] x [batch][k][n] of two activations (a batch stride of 0 broadcasts). */
typedef struct {
    int32_t batch, m, k, n, a_batch_stride, b_batch_stride, a_zp, b_zp, mult, shift, output_zp,
        act_min, act_max;
} edgec_matmul_params;
void edgec_matmul_s8(const edgec_matmul_params *p, const int8_t *a, const int8_t *b, int8_t *output);

/* Log-softmax over the last axis of [rows][cols]; exp_table as softmax's, log_table[i] =
 * log2(1 + (i + 0.5) / 256) in Q16; k_in = s_in / s_out and k_ln = 1 / s_out in Q16. */
typedef struct {
    int32_t rows, cols, k_in, k_ln, output_zp;
} edgec_log_softmax_params;
void edgec_log_softmax_s8(const edgec_log_softmax_params *p, const uint32_t *exp_table,
                          const int32_t *log_table, const int8_t *input, int8_t *output);

/* Linear resize of [in_h][in_w][c] -> [out_h][out_w][c]: idx = y0[out_h], y1[out_h], x0[out_w],
 * x1[out_w]; frac = Q10 weight of y1 [out_h] then of x1 [out_w]. */
typedef struct {
    int32_t in_h, in_w, c, out_h, out_w;
} edgec_resize_params;
void edgec_resize_linear_s8(const edgec_resize_params *p, const int32_t *idx, const int32_t *frac,
                            const int8_t *input, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* EDGEC_KERNELS_EXT_H */
