"""TFLite's 16x8 mode in the `.tflite` importers: int16 activations (zero point 0) with int8 weights, as
TFLiteConverter writes them with `OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8`.

The operators TFLite Micro runs in 16x8 and edgec's int16 kernels follow bit for bit take their input and output
here or in their family (docs/tflite-operators.md, "int16 activations (16x8)"): CONV_2D, DEPTHWISE_CONV_2D and
FULLY_CONNECTED of one row or several (an int64 bias, TFLM's 64-bit MultiplyByQuantizedMultiplier; or an int32 one),
TRANSPOSE_CONV (conv/importers.py), BATCH_MATMUL (matmul.py), ADD / SUB / MUL
/ MAXIMUM / MINIMUM / SQUARED_DIFFERENCE / PRELU (binary/add16.py, binary/int16.py), LOGISTIC / TANH / RELU / RELU6
/ LEAKY_RELU / ABS (lut/int16.py), SOFTMAX (softmax.py), MAX_POOL_2D / AVERAGE_POOL_2D, MEAN and SUM, QUANTIZE,
UNIDIRECTIONAL_SEQUENCE_LSTM (recurrent_tflite.py: int64 gate sums), and
the data movement (RESHAPE, CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, SLICE, STRIDED_SLICE, PAD / PADV2,
TRANSPOSE, REVERSE_V2, BROADCAST_TO, RESIZE_NEAREST_NEIGHBOR: `moved`; SELECT_V2 and DYNAMIC_UPDATE_SLICE:
where.py). Every other operator given an int16 activation is refused by its importer (`tx.input` takes int8 there),
naming the operator and the type.
"""
from __future__ import annotations

ACTIVATIONS = ("int8", "int16")
INT16 = 7                   # tflite.TensorType


def activations(tx, op, k: int = 0, shape: tuple[int, ...] | None = None) -> tuple[str, str]:
    """(input k, output) of an operator taking int8 or, in 16x8, int16 activations: the output of the input's
    type; int16 ones with zero point 0, as TFLite Micro's 16x8 kernels require."""
    x = tx.input(op, k, ACTIVATIONS)
    if tx.tensor(x).dtype == "int8":
        return x, tx.output(op, shape)
    if tx.sg.Tensors(op.Outputs(0)).Type() != INT16:
        raise tx.unsupported(f"{tx.op_name(op)} of an int16 input into a non-int16 output (edgec takes 16x8 "
                             "operators int16 in and out)")
    out = tx.output(op, shape, ("int16",))
    check_zero_points(tx, op, [x, out])
    return x, out


def check_zero_points(tx, op, tensors: list[str]) -> None:
    """An error unless every int16 one of `tensors` has zero point 0 (TFLite's 16x8 scheme)."""
    for t in tensors:
        if tx.tensor(t).dtype == "int16" and tx.tensor(t).zero_point != 0:
            raise tx.unsupported(f"{tx.op_name(op)} with int16 tensor '{t}' of zero point "
                                 f"{tx.tensor(t).zero_point} (TFLite's 16x8 operators take zero point 0)")


def moved(tx, op, k: int = 0) -> str:
    """Input k of a data-movement operator TFLite Micro runs on int16 too (SLICE, STRIDED_SLICE, SPLIT, SPLIT_V,
    PACK, UNPACK, REVERSE_V2, BROADCAST_TO: a copy of the bytes, the output quantized like the input)."""
    return tx.input(op, k, ACTIVATIONS)


def like(tx, x: str) -> tuple[str, ...]:
    """The output dtypes a data-movement operator of input x takes: x's own."""
    return (tx.tensor(x).dtype,)
