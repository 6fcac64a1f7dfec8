/* edgec speed-optimized convolution (declared in edgec_nn.h; chosen by `--optimize speed`, the default): the
 * im2col convolution with 2 output pixels x 2 output channels in registers. Each input word is loaded once
 * for two channels and each weight word once for two pixels; the weights are widened to int16 at build time
 * in the order the inner loop reads them (edgec/codegen/specialize.py), so the loop is loads and SMLADs only:
 * per 4 input channels of the 2x2 block, 4 LDRD and 8 SMLAD (16 MACs). A 1x1, stride-1, unpadded
 * convolution widens the input pixels themselves (no im2col copy). The requantization follows each block
 * directly, from registers. */
#include "edgec_fast_support.h"

/* Weights: for each pair of output channels (c, c + 1; an odd last channel paired with zeros), for each
 * group of 4 taps (t0..t3), the int16 words (w0, w2) (w1, w3) of channel c then of channel c + 1.
 * Columns: for each group, pixel 0's words (x0, x2) (x1, x3), then pixel 1's. acc: pixel-major. */
#ifdef EDGEC_DSP
static EDGEC_HOT void edgec_blocked_macs(const edgec_w32 *x, int32_t groups, const edgec_w32 *w, int32_t *acc)
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const edgec_w32 *const end = x + 4 * groups;
    uint32_t xa, xb, xc, xd, wa, wb;
    for (; x < end; x += 4, w += 4) {
        E_LDRD(xa, xb, x, 0);
        E_LDRD(wa, wb, w, 0);
        E_LDRD(xc, xd, x, 2);
        a00 = E_SMLAD(xa, wa, a00);
        a00 = E_SMLAD(xb, wb, a00);
        a10 = E_SMLAD(xc, wa, a10);
        a10 = E_SMLAD(xd, wb, a10);
        E_LDRD(wa, wb, w, 2);
        a01 = E_SMLAD(xa, wa, a01);
        a01 = E_SMLAD(xb, wb, a01);
        a11 = E_SMLAD(xc, wa, a11);
        a11 = E_SMLAD(xd, wb, a11);
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#else
static EDGEC_HOT void edgec_blocked_macs(const edgec_w32 *xw, int32_t groups, const edgec_w32 *ww, int32_t *acc)
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3], i;
    const edgec_h16 *x = (const edgec_h16 *)(const void *)xw, *w = (const edgec_h16 *)(const void *)ww;
    for (; groups > 0; --groups, x += 8, w += 8) {
        for (i = 0; i < 4; ++i) {
            const int32_t p = x[i], q = x[4 + i], u = w[i], v = w[4 + i];
            a00 += p * u;
            a10 += q * u;
            a01 += p * v;
            a11 += q * v;
        }
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#endif

void edgec_conv2d_blocked_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                             const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, out_c = p->out_c, out_w = p->out_w, in_c = p->in_c;
    const int32_t n = p->out_h * out_w, lo = p->act_min, hi = p->act_max;
    const int full = lo == -128 && hi == 127;
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 4 * k4;
    int32_t *acc = (int32_t *)(void *)(scratch + 5 * k4);
    int32_t pix, j, oc, g;
    for (pix = 0; pix < n; pix += 2) {
        const int two = n - pix > 1;
        for (j = 0; j < 2; ++j) { /* a short last block repeats its pixel */
            const int32_t q = pix + (two ? j : 0);
            const edgec_w32 *t = (const edgec_w32 *)(const void *)(pointwise ? input + q * in_c
                                                                             : edgec_conv_taps(p, input, q / out_w, q % out_w, row));
            edgec_w32 *c = cols + 2 * j;
            for (g = groups; g > 0; --g, c += 4) edgec_widen(*t++, c);
        }
        for (oc = 0; oc < out_c; oc += 2) {
            const edgec_rq *q0 = rq + oc, *q1 = oc + 1 < out_c ? q0 + 1 : q0;
            int8_t *o = output + pix * out_c + oc;
            acc[0] = acc[2] = q0->bias;
            acc[1] = acc[3] = q1->bias;
            edgec_blocked_macs(cols, groups, (const edgec_w32 *)weights + 2 * oc * groups, acc);
            o[0] = edgec_out(acc[0], q0, full, lo, hi);
            if (two) o[out_c] = edgec_out(acc[2], q0, full, lo, hi);
            if (q1 != q0) {
                o[1] = edgec_out(acc[1], q1, full, lo, hi);
                if (two) o[out_c + 1] = edgec_out(acc[3], q1, full, lo, hi);
            }
        }
    }
}
