"""edgec/bench/detection_metrics.py: IoU, COCOeval-style matching, all-point AP, mAP@0.5 and @0.5:0.95, and the
agreement of two detectors' boxes, on cases small enough to check by hand (the expected numbers are worked out in
the comments)."""
from __future__ import annotations

import numpy as np
import pytest

from edgec.bench.detection_metrics import (IOU_THRESHOLDS, Detections, agreement, average_precision, iou_matrix,
                                           match_image, match_pairs, mean_average_precision)

D = Detections.of


def test_iou_of_overlapping_nested_disjoint_and_empty_boxes():
    a = [[0, 0, 2, 2]]
    b = [[1, 1, 3, 3], [0, 0, 1, 1], [5, 5, 6, 6], [0, 0, 0, 2], [0, 0, 2, 2]]
    # 1x1 overlap of two 2x2 boxes: 1 / (4 + 4 - 1); a quarter inside; none; an empty box; the same box
    np.testing.assert_allclose(iou_matrix(a, b), [[1 / 7, 1 / 4, 0, 0, 1]])
    assert iou_matrix([[0, 0, 0, 0]], [[0, 0, 0, 0]])[0, 0] == 0       # an empty union: 0, not NaN
    assert iou_matrix(np.zeros((0, 4)), b).shape == (0, 5)


def test_all_point_ap_of_a_worked_example():
    # 3 ground-truth boxes; detections by score: TP, FP, TP, FP -> recall 1/3, 1/3, 2/3, 2/3, precision
    # 1, 1/2, 2/3, 1/2; envelope 1, 2/3, 2/3, 1/2; AP = 1/3 * 1 + 1/3 * 2/3 = 5/9
    assert average_precision([True, False, True, False], 3) == pytest.approx(5 / 9)
    assert average_precision([True, True], 2) == 1.0
    assert average_precision([False, True], 1) == pytest.approx(0.5)      # precision 1/2 at recall 1
    assert average_precision([], 4) == 0.0
    with pytest.raises(ValueError):
        average_precision([True], 0)


def test_greedy_matching_takes_the_best_unmatched_box_and_counts_a_duplicate_as_false():
    truth = D([[0, 0, 10, 10], [0, 20, 10, 30]], [0, 0])
    # the first detection overlaps the second box (IoU 80 / 120); the exact copy of that box comes after it in
    # score order: at IoU 0.5 a false positive (its box is taken), at 0.7 the first one misses and it matches
    det = D([[0, 18, 10, 28], [0, 20, 10, 30], [0, 0, 10, 10]], [0, 0, 0], [0.9, 0.8, 0.7])
    ious = iou_matrix(det.boxes, truth.boxes)
    assert ious[0, 1] == pytest.approx(80 / 120) and ious[0, 0] == 0
    assert match_image(det, truth, 0.5).tolist() == [True, False, True]
    assert match_image(det, truth, 0.7).tolist() == [False, True, True]


def test_map_averages_classes_with_ground_truth_and_matches_within_a_class():
    truths = [D([[0, 0, 10, 10], [20, 20, 30, 30]], [0, 1]), D([[0, 0, 10, 10]], [0])]
    dets = [D([[0, 0, 10, 10], [20, 20, 30, 30], [50, 50, 60, 60]], [1, 1, 2], [0.9, 0.8, 0.95]),
            D([[0, 0, 10, 10]], [0], [0.5])]
    # class 0: 2 truths, one detection (image 1, exact): AP = 1/2; class 1: its box found (0.8) after a false
    # one (0.9, class 0's box): precision 1/2 at recall 1 -> AP 1/2; class 2 has no truth: left out
    r = mean_average_precision(dets, truths)
    assert r["classes"] == 2
    assert r["ap50_per_class"] == {"0": pytest.approx(0.5), "1": pytest.approx(0.5)}
    assert r["map50"] == pytest.approx(0.5) and r["map50_95"] == pytest.approx(0.5)    # exact boxes: every IoU


def test_map50_95_counts_the_thresholds_a_box_passes():
    # IoU 0.78 (78 / 100) passes 0.50 ... 0.75 (6 of 10 thresholds): mAP@0.5:0.95 = 0.6, mAP@0.5 = 1
    r = mean_average_precision([D([[0, 0, 10, 7.8]], [3], [0.4])], [D([[0, 0, 10, 10]], [3])])
    assert len(IOU_THRESHOLDS) == 10 and r["map50"] == 1.0 and r["map50_95"] == pytest.approx(0.6)


def test_map_orders_detections_of_all_images_by_score():
    truths = [D([[0, 0, 1, 1]], [0]), D([[0, 0, 1, 1]], [0])]
    # image 0: a false positive scored 0.9; image 1: a true one scored 0.95, image 0's true one 0.1
    dets = [D([[5, 5, 6, 6], [0, 0, 1, 1]], [0, 0], [0.9, 0.1]), D([[0, 0, 1, 1]], [0], [0.95])]
    # by score: TP, FP, TP -> recall 1/2, 1/2, 1; precision 1, 1/2, 2/3 -> AP = 1/2 * 1 + 1/2 * 2/3 = 5/6
    assert mean_average_precision(dets, truths)["map50"] == pytest.approx(5 / 6)


def test_map_without_ground_truth_or_detections():
    assert mean_average_precision([D(np.zeros((0, 4)), [], [])], [D(np.zeros((0, 4)), [])])["map50"] is None
    r = mean_average_precision([D(np.zeros((0, 4)), [], [])], [D([[0, 0, 1, 1]], [0])])
    assert r["map50"] == 0.0 and r["map50_95"] == 0.0
    with pytest.raises(ValueError):
        mean_average_precision([], [D([[0, 0, 1, 1]], [0])])


def test_agreement_counts_matched_missed_extra_and_identical_boxes():
    base = [D([[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], [0, 0, 1], [0.9, 0.8, 0.7]),
            D([[0, 0, 10, 10]], [2], [0.6])]
    other = [D([[0, 0, 10, 10], [20, 20, 30, 28], [40, 40, 50, 50]], [0, 0, 0], [0.9, 0.75, 0.7]),
             D([[0, 0, 10, 10]], [2], [0.6])]
    r = agreement(base, other)
    # image 0: the first box identical, the second IoU 0.8, the third of another class (missed and extra);
    # image 1: identical
    assert (r["matched"], r["missed"], r["extra"], r["identical_boxes"]) == (3, 1, 1, 2)
    assert r["images_all_matched"] == 1 and r["images"] == 2
    assert r["iou"]["min"] == pytest.approx(0.8) and r["iou"]["median"] == 1.0
    assert r["max_abs_score_diff"] == pytest.approx(0.05)
    assert agreement([D(np.zeros((0, 4)), [], [])], [D(np.zeros((0, 4)), [], [])])["iou"] is None


def test_match_pairs_prefers_the_higher_iou():
    a = D([[0, 0, 10, 10], [0, 2, 10, 12]], [0, 0])
    b = D([[0, 2, 10, 12]], [0])
    assert match_pairs(a, b, 0.5) == [(1, 0, 1.0)]
