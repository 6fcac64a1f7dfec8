"""Helpers the kernels' C calls share (`Kernel.call`, edgec/ops/kernel.py): struct initializers, int16 pointer
casts, a call with its own parameters, the calls of the weighted kernels."""
from __future__ import annotations

from edgec.cheader import field_names


def struct_init(params: dict, fields=None) -> str:
    """A C designated initializer of `params` (keys starting with '_' are Python-only)."""
    def v(x):
        return "{" + ", ".join(str(int(i)) for i in x) + "}" if isinstance(x, (list, tuple)) else str(int(x))
    keys = fields or [k for k in params if not k.startswith("_")]
    return "{" + ", ".join(f".{k} = {v(params[k])}" for k in keys) + "}"


def with_params(struct: str, params: dict, call: str, only_fields: bool = False) -> str:
    """A block declaring the call's own static const parameters, then the call. only_fields: initialize
    just the fields the struct has (edgec_nn.h), in its order, from a longer params dict."""
    fields = field_names(struct) if only_fields else None
    return "{ " + f"static const {struct} p = {struct_init(params, fields)};" + "\n      " + call + " }"


def i16(pointer: str, const: bool = False) -> str:
    """An arena pointer as int16 data."""
    c = "const " if const else ""
    return f"({c}int16_t *)({c}void *)({pointer})"


def weighted_call(kernel: str, prefix: str, x: str, arrays: dict, output: str) -> str:
    """The call of a reference weighted kernel: params, input, weights, bias, mult, shift, output."""
    return (f"{kernel}(&{prefix}_params, {x}, {arrays['weights']}, {arrays['bias']},\n"
            f"        {arrays['mult']}, {arrays['shift']}, {output});")


def weighted_call16(kernel: str, prefix: str, x: str, arrays: dict, output: str) -> str:
    """The same for a 16x8 kernel (int16 input and output)."""
    return (f"{kernel}(&{prefix}_params, {i16(x, const=True)}, {arrays['weights']}, "
            f"{arrays['bias']}, {arrays['mult']}, {arrays['shift']}, {i16(output)});")


def fast_weighted_call(kernel: str, prefix: str, x: str, scratch: str, output: str) -> str:
    """The call of a fast weighted kernel (packed weights `fw`, requantization records `rq`, scratch)."""
    return f"{kernel}(&{prefix}_params, {x}, {prefix}_fw, {prefix}_rq, {scratch}, {output});"


def weighted(op, low, site) -> str:
    """`Kernel.call` of a reference weighted kernel (its params struct at file scope, the op's own arrays)."""
    return weighted_call(low.kernel.name, site.prefix, site.inputs[0], site.arrays, site.output)


def weighted16(op, low, site) -> str:
    """`Kernel.call` of a 16x8 weighted kernel."""
    return weighted_call16(low.kernel.name, site.prefix, site.inputs[0], site.arrays, site.output)


def weighted4(op, low, site) -> str:
    """`Kernel.call` of an int4-weight reference kernel: the int8 kernel's arguments with the packed weights."""
    arrays = {**site.arrays, "weights": site.arrays["weights4"]}
    return weighted_call(low.kernel.name, site.prefix, site.inputs[0], arrays, site.output)


def fast_weighted(op, low, site) -> str:
    """`Kernel.call` of a fast weighted kernel (and of its speed variants and Helium kernel)."""
    return fast_weighted_call(low.kernel.name, site.prefix, site.inputs[0], site.scratch, site.output)
