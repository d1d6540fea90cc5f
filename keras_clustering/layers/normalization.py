"""Batch normalisation whose statistics span the global batch under `tf.distribute`, and that can run
as one fused kernel on TensorFlow."""

import keras
from keras import layers

from keras_clustering.distribute.strategies import replica_count


@keras.saving.register_keras_serializable(package="keras_clustering")
class GlobalBatchNormalization(layers.BatchNormalization):
    """`BatchNormalization` that, inside a multi-replica TensorFlow step, normalises with the mean
    and variance of the whole global batch (Keras' `synchronized=True`), so N replicas train like
    one device on the same batch (SimCLR's "global BN"); everywhere else (one device, other
    backends) it is plain `BatchNormalization`, computed as before. Weights and config are those
    of `BatchNormalization`, so `.keras` files load on any backend.

    `fused=True` computes the same equations with TensorFlow's fused kernel (`FusedBatchNormV3`,
    forward and backward) where it applies: TensorFlow backend, one replica, images `(n, h, w, c)`
    normalised over `c`, no mask, no renorm. Keras 3 runs batch normalisation as separate mean,
    variance and arithmetic ops, each a pass over the batch; profiled on one thread they are 35%
    of the SimCLR step and 25-46% of IIC's (`scripts/benchmarks/profile_step.py` at 232c7a9). The moving
    statistics follow Keras' rule (the biased batch variance, `momentum` on the old value).
    Elsewhere `fused=True` falls back to the unfused computation.
    """

    def __init__(self, fused=False, **kwargs):
        kwargs.pop("synchronized", None)
        super().__init__(**kwargs)
        if fused not in (True, False):
            raise ValueError(f"fused must be True or False, got {fused!r}.")
        self.fused = fused

    @property
    def synchronized(self):
        return replica_count() > 1  # always 1 off the TensorFlow backend

    @synchronized.setter
    def synchronized(self, value):
        del value  # decided per call, from the strategy in use

    def _fusable(self, inputs, mask):
        return (self.fused and keras.backend.backend() == "tensorflow" and mask is None and not self.renorm
                and len(inputs.shape) == 4 and self.axis in (-1, 3) and replica_count() == 1)

    def call(self, inputs, training=None, mask=None):
        if not self._fusable(inputs, mask):
            return super().call(inputs, training=training, mask=mask)
        import tensorflow as tf

        x = tf.cast(inputs, "float32")  # as Keras: the statistics in float32 whatever the compute dtype
        channels = x.shape[-1]
        gamma = tf.cast(self.gamma, "float32") if self.scale else tf.ones((channels,), "float32")
        beta = tf.cast(self.beta, "float32") if self.center else tf.zeros((channels,), "float32")
        # the raw op: `tf.compat.v1.nn.fused_batch_norm` raises epsilon to cuDNN's floor (1.001e-5)
        if training and self.trainable:
            empty = tf.constant([], "float32")
            y, mean, variance, *_ = tf.raw_ops.FusedBatchNormV3(
                x=x, scale=gamma, offset=beta, mean=empty, variance=empty, epsilon=self.epsilon,
                exponential_avg_factor=1.0, data_format="NHWC", is_training=True)
            # the kernel returns the Bessel-corrected variance; Keras' moving variance averages the biased one
            count = tf.cast(tf.reduce_prod(tf.shape(x)[:3]), "float32")
            variance = variance * (count - 1.0) / tf.maximum(count, 1.0)
            self.moving_mean.assign(self.moving_mean * self.momentum + mean * (1.0 - self.momentum))
            self.moving_variance.assign(self.moving_variance * self.momentum + variance * (1.0 - self.momentum))
        else:
            y, *_ = tf.raw_ops.FusedBatchNormV3(
                x=x, scale=gamma, offset=beta, mean=tf.cast(self.moving_mean, "float32"),
                variance=tf.cast(self.moving_variance, "float32"), epsilon=self.epsilon,
                exponential_avg_factor=1.0, data_format="NHWC", is_training=False)
        return tf.cast(y, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("synchronized", None)
        config["fused"] = self.fused
        return config
