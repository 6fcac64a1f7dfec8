"""The cost model of the fast fully connected kernels (edgec/ops/dense.py's packed, rows8 and wide records):
instructions of one call, flash bytes read, cycles per instruction."""
from __future__ import annotations


# The selector's cost model (edgec/ops/select.py `cheapest`): instructions of one call, fitted (least squares,
# within 6 %) to exact emulated counts of each kernel alone on 31 shapes (8..4000 inputs, 1..128 outputs;
# arm-none-eabi-gcc -O2, qemu-cortex-m4 with the Arm DSP path, qemu-cortex-m3-large without), as
# c0 + c_in * k4 + c_block * blocks * k4 + c_pass * blocks + c_out * outputs + c_tail * tail rows * k4 (blocks of
# 4 rows, rows8: of 8 with a partial last one run whole; tail: the rows after the last whole block of 4).
FC_COSTS = {  # kernel: {dsp: (c0, c_in, c_block, c_pass, c_out, c_tail)}
    "packed": {True: (84, 2.0, 5.0, -46, 29.5, 2.25), False: (86, 4.0, 11.8, -41.5, 42.4, 4.24)},
    # rows8 with the DSP extension re-fitted (within 3 % but 7 % on 36 -> 13; each layer's count in a chain of 18
    # shapes, 2..1000 inputs, 2..1000 outputs) after its assembly passes (pairs of groups, one LDM of the input;
    # k4 rounded up to 8 there: its zero-weight padding group runs)
    "rows8": {True: (144, 1.67, 5.32, 171, -12.4, 0), False: (68, 4.0, 17.57, 320, -12.5, 0)},
    "wide": {True: (85, 11.75, 3.75, -58, 31.5, 2.0), False: (86, 12.76, 10.5, -18.8, 32.9, 4.24)},
    # pairs (edgec/ops/dense_pairs.py; blocks of 4 rows, a partial last one run whole): with the DSP extension only;
    # fitted (within 1.1 %) to AD's 10 layers on qemu-cortex-m4 (8..640 inputs, 8..640 outputs), the uniform stage's
    # assembly (18 instructions a group of 4 inputs and 4 rows, the biases in the weight stream); AD leaves c0 free,
    # 80 from VWW's 24 -> 2 classifier (a partial block through the buffer: 66 more than the packed kernel's count)
    "pairs": {True: (80, 5.05, 4.54, 40.3, 0, 0), False: (70, 8.0, 10.0, 70, 0, 0)},
}


def fc_cost(kernel: str):
    """`Kernel.cost` of a fully connected kernel (its FC_COSTS row), of the packed lowering's params."""
    rows = 8 if kernel == "rows8" else 4
    whole = kernel in ("rows8", "pairs")        # a partial last block run whole

    def cost(params, dsp: bool) -> float:
        c0, c_in, c_block, c_pass, c_out, c_tail = FC_COSTS[kernel][dsp]
        k4, n_out = params["k4"], params["out_features"]
        if rows == 8 and dsp:
            k4 = (k4 + 7) // 8 * 8
        blocks = -(-n_out // rows) if whole else n_out // rows
        tail = 0 if whole else n_out % rows
        return c0 + c_in * k4 + (c_block * k4 + c_pass) * blocks + c_out * n_out + c_tail * tail * k4
    return cost


def fc_flash(kernel: str):
    """`Kernel.flash_bytes` of a fully connected kernel: each weight read once a call, int8 (packed) or int16
    (rows8, in whole blocks of 8 rows of k4 rounded up to 8 taps; wide), k4 taps a row (pairs: and a bias a row)."""
    def flash_bytes(params) -> int:
        rows, k = params["out_features"], params["k4"]
        if kernel == "rows8":
            rows, k = -(-rows // 8) * 8, (k + 7) // 8 * 8
        if kernel == "pairs":
            rows = -(-rows // 4) * 4
            return rows * (k + 4)
        return rows * k * (1 if kernel == "packed" else 2)
    return flash_bytes


# cycles per instruction at zero wait states, each kernel alone on qemu-cortex-m4 under the cycle plugin (640 -> 128):
# Kernel.cycles_per_instruction (packed widens int8 in registers; rows8 and wide load twice the weight words)
FC_CPI = {"packed": 1.33, "rows8": 1.95, "wide": 1.69, "pairs": 1.10}     # rows8: 1.89 before its assembly passes (LDM of 4 words)
