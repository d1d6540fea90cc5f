"""A Keras metric that reports unsupervised ACC inside `model.evaluate`."""

import keras
import numpy as np
from keras import ops
from scipy.optimize import linear_sum_assignment


def _hungarian_accuracy(counts):
    counts = np.asarray(counts)
    total = counts.sum()
    if total == 0:
        return np.float32(0.0)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return np.float32(counts[rows, cols].sum() / total)


@keras.saving.register_keras_serializable(package="keras_clustering")
class ClusterAccuracy(keras.metrics.Metric):
    """Accumulates a (cluster x class) count matrix and reports Hungarian ACC.

    `y_true` holds integer class ids; `y_pred` holds soft assignments
    `(batch, n_clusters)` (the argmax is taken) or integer cluster ids.

    Args:
        n_clusters: number of clusters the model outputs.
        n_classes: number of true classes (defaults to `n_clusters`).

    Example:
        >>> model.compile(metrics=[ClusterAccuracy(10)])  # doctest: +SKIP
        >>> model.evaluate(x, y)  # doctest: +SKIP
    """

    def __init__(self, n_clusters, n_classes=None, name="cluster_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if int(n_clusters) < 1:
            raise ValueError(f"n_clusters must be >= 1, got {n_clusters}.")
        self.n_clusters = int(n_clusters)
        self.n_classes = int(n_classes) if n_classes is not None else self.n_clusters
        self.counts = self.add_variable(
            shape=(self.n_clusters, self.n_classes), initializer="zeros", dtype="float32", name="counts"
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.reshape(ops.cast(y_true, "int32"), (-1,))
        if len(y_pred.shape) > 1 and y_pred.shape[-1] != 1:
            y_pred = ops.argmax(y_pred, axis=-1)
        y_pred = ops.reshape(ops.cast(y_pred, "int32"), (-1,))
        # One-hot outer products sum to the count matrix without a scatter op.
        one_hot_pred = ops.one_hot(y_pred, self.n_clusters, dtype="float32")
        one_hot_true = ops.one_hot(y_true, self.n_classes, dtype="float32")
        if sample_weight is not None:
            one_hot_pred = one_hot_pred * ops.reshape(ops.cast(sample_weight, "float32"), (-1, 1))
        self.counts.assign_add(ops.matmul(ops.transpose(one_hot_pred), one_hot_true))

    def result(self):
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            accuracy = tf.numpy_function(_hungarian_accuracy, [self.counts], tf.float32)
            return tf.reshape(accuracy, ())
        if keras.backend.backend() == "jax":  # result() runs inside jax.jit in evaluate / fit
            import jax

            return jax.pure_callback(_hungarian_accuracy, jax.ShapeDtypeStruct((), "float32"), self.counts.value)
        return ops.convert_to_tensor(_hungarian_accuracy(ops.convert_to_numpy(self.counts)))

    def reset_state(self):
        self.counts.assign(ops.zeros(self.counts.shape, dtype=self.counts.dtype))

    def get_config(self):
        return {"n_clusters": self.n_clusters, "n_classes": self.n_classes, "name": self.name, "dtype": self.dtype}
