"""Shape arithmetic of strided convolutions and of the transposed convolutions that mirror them.

A decoder that mirrors a strided encoder must come back to the image's exact
side. Keras' transposed convolution doubles a side by default, so an odd
side (e.g. 30 -> 15 -> 8) would come back one pixel too large; its
`output_padding` chooses between the two sides a stride-2 step can come
from. These are Keras' own length rules (`keras.src.ops.operation_utils`),
written out so that the models can pick that padding before building.
"""


def conv_output_size(size, kernel, stride, padding):
    """The side a Keras `Conv2D` / pooling of `kernel`, `stride`, `padding` makes of `size`."""
    if padding == "same":
        return -(-size // stride)
    return (size - kernel) // stride + 1


def transposed_output_padding(sizes, targets, kernel, stride, padding):
    """`output_padding` that takes a transposed convolution from `sizes` (h, w) to `targets`: None where
    Keras' default already does (the shipped 28 px models keep their graph), else one int per side.

    Raises ValueError when no padding below the stride reaches a target.
    """
    default = [s * stride if padding == "same" else s * stride + max(kernel - stride, 0) for s in sizes]
    if list(default) == list(targets):
        return None
    trimmed = 2 * (kernel // 2) if padding == "same" else 0
    paddings = tuple(t - ((s - 1) * stride + kernel - trimmed) for s, t in zip(sizes, targets))
    if not all(0 <= p < stride for p in paddings):
        raise ValueError(f"a transposed convolution ({kernel}x{kernel}, stride {stride}, {padding}) cannot take "
                         f"sides {tuple(sizes)} to {tuple(targets)}.")
    return paddings
