"""TFLite's fixed-point arithmetic, below every operator: the INT8 quantization scheme (`scheme`: scales and
zero points, Q31 multipliers and shifts, requantization, int4 packing) and gemmlowp's fixed-point functions
(`gemmlowp`: the building blocks of TFLite's softmax and logistic/tanh). The operator families (edgec/ops/),
the quantizer (edgec/quant/) and the bench use it; it imports nothing of edgec but the IR and the errors."""
