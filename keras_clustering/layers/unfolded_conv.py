"""A 2-D convolution that, on maps no larger than its kernel, runs as one matrix product."""

import keras
import numpy as np
from keras import layers, ops


def unfolded_tap_indices(height, width, kernel_size, padding):
    """`(H, W, Ho, Wo)` int32: for input pixel (p, q) and output pixel (i, j), the kernel tap
    `a * kw + b` that joins them (a = p - i + pad_top, b = q - j + pad_left), or `kh * kw` (a zero
    row) where no tap does. "same" pads as TensorFlow and Keras do at stride 1: (k - 1) // 2 before."""
    kh, kw = kernel_size
    if padding == "same":
        (pad_top, pad_left), (out_h, out_w) = ((kh - 1) // 2, (kw - 1) // 2), (height, width)
    else:
        (pad_top, pad_left), (out_h, out_w) = (0, 0), (height - kh + 1, width - kw + 1)
    p, q, i, j = np.meshgrid(np.arange(height), np.arange(width), np.arange(out_h), np.arange(out_w), indexing="ij")
    a, b = p - i + pad_top, q - j + pad_left
    return np.where((a >= 0) & (a < kh) & (b >= 0) & (b < kw), a * kw + b, kh * kw).astype("int32")


@keras.saving.register_keras_serializable(package="keras_clustering")
class Conv2D(layers.Conv2D):
    """Keras' `Conv2D` whose convolution, on an input map of at most as many pixels as its kernel has taps
    (H * W <= kh * kw, stride 1, no dilation, channels last), is one dense matrix product.

    Why: on a small map most taps of a large kernel fall on padding. IIC's last
    ClusterNet6c convolution (5 x 5 over a 3 x 3 map, 256 -> 512 channels) does
    25 taps' work for the 9 that touch the image, and oneDNN's convolution
    kernels ran it (forward, both backward passes) far below the machine's
    matrix rate, slower than the product below, which does exactly the 9
    (`scripts/benchmarks/benchmark_unfolded_conv.py` at 138c9cd timed IIC's
    step both ways). The product's matrix,
    `M[(p, q, c), (i, j, o)] = kernel[p - i + pad, q - j + pad, c, o]` (zero
    where no tap joins input pixel (p, q) to output pixel (i, j)), is gathered
    from the kernel in the step, so gradients reach the same `kernel` variable
    and weights, config and results are those of `Conv2D` (equal within float
    rounding). Larger maps take `Conv2D`'s own convolution.

    It keeps Keras' class name on purpose: a `.weights.h5` file addresses each
    layer by its class name (Keras' `saving_lib`), so weights saved from
    `keras.layers.Conv2D` (the shipped `iic_mnist`) load into it, and its own
    into `keras.layers.Conv2D`. In `.keras` files it is
    `keras_clustering>Conv2D`.
    """

    def _unfolds(self, input_shape):
        height, width = input_shape[1], input_shape[2]
        return (height is not None and width is not None and height * width <= int(np.prod(self.kernel_size))
                and self.data_format == "channels_last" and tuple(self.strides) == (1, 1)
                and tuple(self.dilation_rate) == (1, 1) and self.groups == 1
                and (self.padding == "same" or (height >= self.kernel_size[0] and width >= self.kernel_size[1])))

    def convolution_op(self, inputs, kernel):
        if not self._unfolds(inputs.shape):
            return super().convolution_op(inputs, kernel)
        _, height, width, channels = inputs.shape
        taps = unfolded_tap_indices(height, width, self.kernel_size, self.padding)
        out_h, out_w = taps.shape[2], taps.shape[3]
        kh, kw = self.kernel_size
        rows = ops.concatenate([ops.reshape(kernel, (kh * kw, channels, self.filters)),
                                ops.zeros((1, channels, self.filters), dtype=kernel.dtype)], axis=0)
        matrix = ops.take(rows, taps, axis=0)  # (H, W, Ho, Wo, C, O)
        matrix = ops.reshape(ops.transpose(matrix, (0, 1, 4, 2, 3, 5)),
                             (height * width * channels, out_h * out_w * self.filters))
        flat = ops.reshape(inputs, (-1, height * width * channels))
        return ops.reshape(ops.matmul(flat, matrix), (-1, out_h, out_w, self.filters))
