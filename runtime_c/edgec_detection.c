/* edgec detection post-processing (TFLite's TFLite_Detection_PostProcess), portable C99. Bit-identical with
 * TFLite Micro's kernel (tensorflow/lite/micro/kernels/detection_postprocess.cc) and with edgec/ops/detection.py:
 * the same float and double operations in the same order, one operation per statement where a product meets a
 * sum (no contraction into a fused multiply-add by any compiler), the same stable orders of equal scores. */
#include <math.h>
#include <string.h>

#include "edgec_nn_support.h"

/* C99's exp(), declared again: some small C libraries' math.h leave it out (Zephyr's minimal libc), and the
 * exports compile this file with the whole runtime there. A model that calls this kernel links it from libm. */
extern double exp(double x);

static float iou(const float *boxes, int32_t i, int32_t j)
{
    const float *a = boxes + 4 * i, *b = boxes + 4 * j;
    const float dya = a[2] - a[0], dxa = a[3] - a[1], dyb = b[2] - b[0], dxb = b[3] - b[1];
    const float area_a = dya * dxa, area_b = dyb * dxb;
    float ymin, xmin, ymax, xmax, dy, dx, inter, sum, uni;
    if (area_a <= 0 || area_b <= 0) {
        return 0.0f;
    }
    ymin = a[0] > b[0] ? a[0] : b[0];
    xmin = a[1] > b[1] ? a[1] : b[1];
    ymax = a[2] < b[2] ? a[2] : b[2];
    xmax = a[3] < b[3] ? a[3] : b[3];
    dy = ymax - ymin;
    dx = xmax - xmin;
    dy = dy > 0.0f ? dy : 0.0f;
    dx = dx > 0.0f ? dx : 0.0f;
    inter = dy * dx;
    sum = area_a + area_b;
    uni = sum - inter;
    return inter / uni;
}

typedef struct {
    float *decoded, *scores, *class_scores, *keep_scores, *after_scores, *sorted_values;
    int32_t *keep_indices, *selected, *tmp, *sorted, *box_idx;
    uint8_t *active;
} work;

/* TFLM's NonMaxSuppressionSingleClassHelper: the boxes whose score reaches the threshold, by score, each kept
 * unless it overlaps a kept one by more than the IoU threshold; at most max_out of them, in selected */
static int32_t nms_one_class(const edgec_detection_postprocess_params *p, const float *fparams, const work *w,
                             const float *scores, int32_t max_out)
{
    const float threshold = fparams[2], iou_threshold = fparams[3];
    int32_t kept = 0, i, j, out_size, count = 0, active = 0;
    for (i = 0; i < p->num_boxes; ++i) {
        if (scores[i] >= threshold) {
            w->keep_scores[kept] = scores[i];
            w->keep_indices[kept] = i;
            kept++;
        }
    }
    for (i = 0; i < kept; ++i) {
        w->sorted[i] = i;
    }
    edgec_sort_decreasing(w->keep_scores, w->sorted, w->tmp, kept);
    out_size = kept < max_out ? kept : max_out;
    for (i = 0; i < kept; ++i) {
        w->active[i] = 1;
    }
    active = kept;
    for (i = 0; i < kept; ++i) {
        if (active == 0 || count >= out_size) {
            break;
        }
        if (!w->active[i]) {
            continue;
        }
        w->selected[count++] = w->keep_indices[w->sorted[i]];
        w->active[i] = 0;
        active--;
        for (j = i + 1; j < kept; ++j) {
            if (w->active[j] &&
                iou(w->decoded, w->keep_indices[w->sorted[i]], w->keep_indices[w->sorted[j]]) > iou_threshold) {
                w->active[j] = 0;
                active--;
            }
        }
    }
    return count;
}

static void put(const edgec_detection_postprocess_params *p, const work *w, float *output, int32_t row,
                int32_t box, int32_t cls, float score)
{
    const int32_t d = p->max_detections;
    memcpy(output + 4 * row, w->decoded + 4 * box, 4 * sizeof(float));
    output[4 * d + row] = (float)cls;
    output[5 * d + row] = score;
}

static int32_t fast_nms(const edgec_detection_postprocess_params *p, const float *fparams, const work *w,
                        float *output)
{
    const int32_t offset = p->score_stride - p->num_classes;
    int32_t row, c, n, i;
    for (row = 0; row < p->num_boxes; ++row) {
        const float *s = w->scores + row * p->score_stride + offset;
        int32_t best = 0;
        for (c = 1; c < p->num_classes; ++c) {
            if (s[c] > s[best]) {
                best = c;
            }
        }
        w->box_idx[row] = best;
        w->class_scores[row] = s[best];
    }
    n = nms_one_class(p, fparams, w, w->class_scores, p->max_detections);
    for (i = 0; i < n; ++i) {
        const int32_t box = w->selected[i], cls = w->box_idx[box];
        put(p, w, output, i, box, cls, w->scores[box * p->score_stride + offset + cls]);
    }
    return n;
}

static int32_t regular_nms(const edgec_detection_postprocess_params *p, const float *fparams, const work *w,
                           float *output)
{
    const int32_t offset = p->score_stride - p->num_classes, d = p->max_detections;
    int32_t total = 0, col, row, i;
    for (col = 0; col < p->num_classes; ++col) {
        int32_t n, count, keep;
        for (row = 0; row < p->num_boxes; ++row) {
            w->class_scores[row] = w->scores[row * p->score_stride + col + offset];
        }
        n = nms_one_class(p, fparams, w, w->class_scores, p->detections_per_class);
        count = total;
        for (i = 0; i < n; ++i) {
            w->box_idx[count] = w->selected[i] * p->score_stride + col + offset;
            w->after_scores[count] = w->class_scores[w->selected[i]];
            count++;
        }
        keep = count < d ? count : d;
        for (i = 0; i < count; ++i) {
            w->sorted[i] = i;
        }
        edgec_sort_decreasing(w->after_scores, w->sorted, w->tmp, count);
        for (i = 0; i < keep; ++i) {
            const int32_t at = w->sorted[i];
            w->sorted[i] = w->box_idx[at];
            w->sorted_values[i] = w->after_scores[at];
        }
        for (i = 0; i < keep; ++i) {
            w->box_idx[i] = w->sorted[i];
            w->after_scores[i] = w->sorted_values[i];
        }
        total = keep;
    }
    for (i = 0; i < total; ++i) {
        const int32_t box = w->box_idx[i] / p->score_stride;
        put(p, w, output, i, box, w->box_idx[i] - box * p->score_stride - offset, w->after_scores[i]);
    }
    return total;
}

int edgec_detection_postprocess_s8(const edgec_detection_postprocess_params *p, const int8_t *boxes,
                                   const int8_t *scores, const float *anchors, const float *fparams, void *scratch,
                                   float *output)
{
    const int32_t nb = p->num_boxes, d = p->max_detections, m = d + nb;
    const float box_scale = fparams[0], score_scale = fparams[1];
    const double sy = (double)fparams[4], sx = (double)fparams[5], sh = (double)fparams[6], sw = (double)fparams[7];
    float *f = (float *)scratch;
    int32_t i, n;
    work w;
    w.decoded = f;
    w.scores = w.decoded + 4 * nb;
    w.class_scores = w.scores + nb * p->score_stride;
    w.keep_scores = w.class_scores + nb;
    w.after_scores = w.keep_scores + nb;
    w.sorted_values = w.after_scores + m;
    w.keep_indices = (int32_t *)(void *)(w.sorted_values + m);
    w.selected = w.keep_indices + nb;
    w.tmp = w.selected + nb;
    w.sorted = w.tmp + m;
    w.box_idx = w.sorted + m;
    w.active = (uint8_t *)(void *)(w.box_idx + m);

    /* TFLM's DEQUANTIZE: (float)(scale * (q - zero point)) in double, the same as this float product (exact in
     * double, then rounded once) */
    for (i = 0; i < nb * p->score_stride; ++i) {
        w.scores[i] = (float)((int32_t)scores[i] - p->score_zp) * score_scale;
    }
    for (i = 0; i < nb; ++i) {
        const int8_t *e = boxes + i * p->box_stride;
        const float *a = anchors + 4 * i;
        const float ey = (float)((int32_t)e[0] - p->box_zp) * box_scale;
        const float ex = (float)((int32_t)e[1] - p->box_zp) * box_scale;
        const float eh = (float)((int32_t)e[2] - p->box_zp) * box_scale;
        const float ew = (float)((int32_t)e[3] - p->box_zp) * box_scale;
        const double ty = (double)ey / sy * (double)a[2];
        const double tx = (double)ex / sx * (double)a[3];
        const float yc = (float)(ty + (double)a[0]);
        const float xc = (float)(tx + (double)a[1]);
        const float hh = (float)(0.5 * exp((double)eh / sh) * (double)a[2]);
        const float hw = (float)(0.5 * exp((double)ew / sw) * (double)a[3]);
        float *box = w.decoded + 4 * i;
        box[0] = yc - hh;
        box[1] = xc - hw;
        box[2] = yc + hh;
        box[3] = xc + hw;
        if (box[0] >= box[2] || box[1] >= box[3]) {
            return -1;
        }
    }
    for (i = 0; i < 6 * d + 1; ++i) {
        output[i] = 0.0f;
    }
    n = p->regular_nms ? regular_nms(p, fparams, &w, output) : fast_nms(p, fparams, &w, output);
    output[6 * d] = (float)n;
    return 0;
}
