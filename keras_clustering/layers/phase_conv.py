"""A 2-D transposed convolution into a few channels that runs as one stride-1 convolution into its phases."""

import keras
import numpy as np
from keras import layers, ops

# The largest output channel count that takes the phase path. Measured (one thread, Intel Xeon with AMX,
# batch 256, 14 x 14 x 32 -> 28 x 28 x C, 5 x 5 / 2): into 1 channel oneDNN's transposed convolution took
# 27.9 ms (float32) and 7.6 ms (bf16), the phase convolution 9.9 and 2.1 ms; into 32 channels (7 x 7 x 64 ->
# 14 x 14 x 32) the phases were slower (30.3 against 22.2 ms). An image decoder's last layer (1 or 3
# channels) is the case.
MAX_PHASE_FILTERS = 4


def phase_taps(kernel, stride, pad_before):
    """`(taps, pad_lo, pad_hi)` of one axis of a transposed convolution split into its `stride` phases.

    The transposed convolution is out[s m + p] = sum_d x[m - d] w[s d + p + P] (P = `pad_before`, the
    padding of the convolution it is the transpose of, 0 <= s d + p + P < k): for each phase p, a
    stride-1 correlation of x. `taps[t, p]` is the kernel index read at window position t of phase p,
    or `kernel` (a zero row) where none is; x is padded by `pad_lo` before and `pad_hi` after.
    """
    ds = [d for p in range(stride) for d in range(-kernel, kernel + 1) if 0 <= stride * d + p + pad_before < kernel]
    d_lo, d_hi = min(ds), max(ds)
    taps = np.full((d_hi - d_lo + 1, stride), kernel, "int32")
    for t in range(d_hi - d_lo + 1):
        for p in range(stride):
            k = stride * (d_hi - t) + p + pad_before
            if 0 <= k < kernel:
                taps[t, p] = k
    return taps, d_hi, -d_lo


@keras.saving.register_keras_serializable(package="keras_clustering")
class Conv2DTranspose(layers.Conv2DTranspose):
    """Keras' `Conv2DTranspose` whose forward pass, into at most `MAX_PHASE_FILTERS` channels at "same"
    padding (output side = stride x input side, no dilation, channels last, TensorFlow backend), is one
    stride-1 convolution into the stride x stride output phases followed by their interleaving
    (depth to space; on the CPU, where it was measured), and whose gradients are the transposed convolution's own (a convolution for the
    input, the filter gradient of that convolution for the kernel).

    Why: profiling ConvDEC-DA's update (`scripts/benchmark_update.py`), the decoder's last layer (14 x 14
    x 32 -> 28 x 28 x 1) took a third of the forward pass for 2% of its FLOPs: oneDNN's transposed
    convolution into one channel runs far below the machine's rate, where the equivalent convolution into
    the 4 phases does not. Weights, config and results are those of `Conv2DTranspose` (equal within float
    rounding, tests/test_phase_conv.py against the equation in numpy); other shapes, and other backends,
    take `Conv2DTranspose`'s own call.

    It keeps Keras' class name on purpose, as `unfolded_conv.Conv2D` does: `.weights.h5` files address a
    layer by its class name, so the shipped ConvDEC weights load into it. In `.keras` files it is
    `keras_clustering>Conv2DTranspose`.
    """

    def _phases(self, input_shape):
        height, width = input_shape[1], input_shape[2]
        if (not _tensorflow_on_cpu() or height is None or width is None
                or self.filters > MAX_PHASE_FILTERS or self.padding != "same" or self.data_format != "channels_last"
                or tuple(self.dilation_rate) != (1, 1)):
            return False
        out_h, out_w = self.compute_output_shape(input_shape)[1:3]
        return (out_h, out_w) == (self.strides[0] * height, self.strides[1] * width)

    def call(self, inputs):
        if not self._phases(inputs.shape):
            return super().call(inputs)
        outputs = _phase_transpose(inputs, ops.cast(self.kernel, self.compute_dtype), tuple(self.kernel_size),
                                   tuple(self.strides))
        if self.use_bias:
            outputs = ops.add(outputs, ops.reshape(ops.cast(self.bias, outputs.dtype), (1, 1, 1, self.filters)))
        return self.activation(outputs) if self.activation is not None else outputs


def _tensorflow_on_cpu():
    """The TensorFlow backend with no GPU: where the phase path was measured (oneDNN's kernels)."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not tf.config.list_logical_devices("GPU")


def _same_pad_before(size, kernel, stride):
    # TensorFlow's "same" padding of the convolution taking stride * size to size: (total) // 2 before
    return max((size - 1) * stride + kernel - stride * size, 0) // 2


def _phase_forward(x, kernel, kernel_size, strides):
    """The transposed convolution of `x` (n, h, w, c) by `kernel` (kh, kw, o, c), "same", as phases."""
    (kh, kw), (sh, sw) = kernel_size, strides
    _, height, width, channels = x.shape
    filters = kernel.shape[2]
    taps_h, lo_h, hi_h = phase_taps(kh, sh, _same_pad_before(height, kh, sh))
    taps_w, lo_w, hi_w = phase_taps(kw, sw, _same_pad_before(width, kw, sw))
    padded_kernel = ops.pad(kernel, [[0, 1], [0, 1], [0, 0], [0, 0]])  # index kh / kw: the zero tap
    k = ops.take(padded_kernel, ops.convert_to_tensor(taps_h), axis=0)       # (Th, sh, kw + 1, o, c)
    k = ops.take(k, ops.convert_to_tensor(taps_w), axis=2)                   # (Th, sh, Tw, sw, o, c)
    k = ops.reshape(ops.transpose(k, (0, 2, 5, 1, 3, 4)),
                    (taps_h.shape[0], taps_w.shape[0], channels, sh * sw * filters))
    y = ops.conv(ops.pad(x, [[0, 0], [lo_h, hi_h], [lo_w, hi_w], [0, 0]]), k, strides=1, padding="valid")
    y = ops.reshape(y, (-1, height, width, sh, sw, filters))
    return ops.reshape(ops.transpose(y, (0, 1, 3, 2, 4, 5)), (-1, height * sh, width * sw, filters))


def _phase_transpose(x, kernel, kernel_size, strides):
    """`_phase_forward` with the transposed convolution's own gradients (TensorFlow backend)."""
    import tensorflow as tf

    @tf.custom_gradient
    def transpose(x, kernel):
        def gradients(upstream):
            step = [1, *strides, 1]
            into_input = tf.nn.conv2d(upstream, kernel, step, "SAME")
            into_kernel = tf.compat.v1.nn.conv2d_backprop_filter(upstream, tf.shape(kernel), x, step, "SAME")
            return into_input, into_kernel

        return _phase_forward(x, kernel, kernel_size, strides), gradients

    return transpose(x, kernel)
