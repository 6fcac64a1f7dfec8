/* edgec NonMaxSuppression (ONNX, static bounds), portable C99. Bit-identical with ONNX Runtime's CPU kernel
 * (onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc) and with edgec/ops/nms.py: the same
 * float operations in the same order, one operation per statement (no contraction into a fused multiply-add),
 * candidates best score first and equal scores by box index. */
#include <string.h>

#include "edgec_nn_support.h"

/* ONNX Runtime's BoxInfo: (ymin, xmin, ymax, xmax) and the area */
static void normalize(const float *b, int32_t center_point_box, float *out, float *area)
{
    if (center_point_box == 0) {
        float dy, dx;
        if (b[0] >= b[2]) { out[0] = b[2]; out[2] = b[0]; } else { out[0] = b[0]; out[2] = b[2]; }
        if (b[1] >= b[3]) { out[1] = b[3]; out[3] = b[1]; } else { out[1] = b[1]; out[3] = b[3]; }
        dy = out[2] - out[0];
        dx = out[3] - out[1];
        *area = dy * dx;
    } else {
        const float hw = b[2] / 2.0f, hh = b[3] / 2.0f;
        out[0] = b[1] - hh;
        out[1] = b[0] - hw;
        out[2] = b[1] + hh;
        out[3] = b[0] + hw;
        *area = b[2] * b[3];
    }
}

/* BoxInfo::SuppressByIOU of candidate c (area ca) against kept box k (area ka) */
static int suppresses(const float *c, float ca, const float *k, float ka, float iou_threshold)
{
    const float x0 = c[1] < k[1] ? k[1] : c[1], x1 = k[3] < c[3] ? k[3] : c[3];
    float y0, y1, dx, dy, inter, sum, uni, iou;
    if (x1 <= x0) {
        return 0;
    }
    y0 = c[0] < k[0] ? k[0] : c[0];
    y1 = k[2] < c[2] ? k[2] : c[2];
    if (y1 <= y0) {
        return 0;
    }
    dx = x1 - x0;
    dy = y1 - y0;
    inter = dx * dy;
    if (inter <= 0.0f) {
        return 0;
    }
    sum = ca + ka;
    uni = sum - inter;
    iou = inter / uni;
    return iou > iou_threshold;
}

void edgec_nms_s8(const edgec_nms_params *p, const int8_t *boxes, const int8_t *scores, const float *fparams,
                  void *scratch, float *output)
{
    const int32_t n = p->num_boxes, cap = p->max_per_class;
    const int32_t total = p->num_batches * p->num_classes * cap;
    float *norm = (float *)scratch;               /* [n][4] */
    float *area = norm + 4 * n;                   /* [n] */
    float *s = area + n;                          /* [n] one class's scores */
    int32_t *idx = (int32_t *)(void *)(s + n);    /* [n] */
    int32_t *tmp = idx + n;                       /* [n] */
    int32_t *kept = tmp + n;                      /* [cap] */
    int32_t b, c, i, count = 0;
    memset(output, 0, (size_t)(3 * total + 1) * sizeof(float));
    for (b = 0; b < p->num_batches; ++b) {
        for (i = 0; i < n; ++i) {
            float raw[4];
            int32_t j;
            for (j = 0; j < 4; ++j) {
                raw[j] = (float)((int32_t)boxes[(b * n + i) * 4 + j] - p->boxes_zp) * fparams[0];
            }
            normalize(raw, p->center_point_box, norm + 4 * i, area + i);
        }
        for (c = 0; c < p->num_classes; ++c) {
            const int8_t *sq = scores + (b * p->num_classes + c) * n;
            int32_t m = 0, nk = 0, k;
            for (i = 0; i < n; ++i) {
                s[i] = (float)((int32_t)sq[i] - p->scores_zp) * fparams[1];
                if (!p->has_score_threshold || s[i] > fparams[3]) {
                    idx[m++] = i;
                }
            }
            edgec_sort_decreasing(s, idx, tmp, m);
            for (k = 0; k < m && nk < cap; ++k) {
                const int32_t cand = idx[k];
                int32_t q, keep = 1;
                for (q = 0; q < nk && keep; ++q) {
                    keep = !suppresses(norm + 4 * cand, area[cand], norm + 4 * kept[q], area[kept[q]], fparams[2]);
                }
                if (keep) {
                    kept[nk++] = cand;
                    output[3 * count] = (float)b;
                    output[3 * count + 1] = (float)c;
                    output[3 * count + 2] = (float)cand;
                    ++count;
                }
            }
        }
    }
    output[3 * total] = (float)count;
}
