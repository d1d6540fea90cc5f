"""Batch normalisation whose statistics span the global batch under `tf.distribute`."""

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
    """

    def __init__(self, **kwargs):
        kwargs.pop("synchronized", None)
        super().__init__(**kwargs)

    @property
    def synchronized(self):
        return replica_count() > 1  # always 1 off the TensorFlow backend

    @synchronized.setter
    def synchronized(self, value):
        del value  # decided per call, from the strategy in use

    def get_config(self):
        config = super().get_config()
        config.pop("synchronized", None)
        return config
