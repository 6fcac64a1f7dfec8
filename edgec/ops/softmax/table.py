"""The exp table of edgec's LUT softmax (edgec/ops/softmax/__init__.py) and of its masked form (masked.py)."""
from __future__ import annotations

import math

import numpy as np


def softmax_table(input_scale: float, beta: float = 1.0) -> np.ndarray:
    """Build-time exp LUT: entry d = round(exp(-d*scale*beta) * 2**24)."""
    t = [max(0, int(round(math.exp(-d * input_scale * beta) * (1 << 24)))) for d in range(256)]
    return np.asarray(t, dtype=np.uint32)
