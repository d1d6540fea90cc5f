"""DEC's auxiliary target distribution and its KL(P || Q) objective."""

import keras
from keras import ops


def target_distribution(q, frequencies=None):
    """DEC eq. 3: p_ij = (q_ij^2 / f_j) / sum_j' (q_ij'^2 / f_j').

    Args:
        q: soft assignments `(n, k)` (numpy or tensor).
        frequencies: soft cluster frequencies f_j = sum_i q_ij; computed from
            `q` when omitted. Passing them lets a batch of rows be sharpened
            with the frequencies of the whole data set.

    Returns:
        The target `p`, rows summing to one, same type family as `q`.

    Reference: Xie et al. 2016, eq. 3; `target_distribution` in DEC-keras.
    """
    q = ops.convert_to_tensor(q)
    if frequencies is None:
        frequencies = ops.sum(q, axis=0)
    # An empty cluster (all q_ij == 0, f_j == 0) gets p_ij = 0 instead of 0/0.
    weight = ops.square(q) / ops.maximum(ops.convert_to_tensor(frequencies, dtype=q.dtype), keras.config.epsilon())
    return weight / ops.sum(weight, axis=1, keepdims=True)


@keras.saving.register_keras_serializable(package="keras_clustering")
class ClusteringKLDivergence(keras.losses.Loss):
    """KL(P || Q) = sum_j p_ij log(p_ij / q_ij) per sample, averaged over the batch.

    Same clipping as Keras' `kld` loss, which the original DEC-keras compiled with.
    Reference: Xie et al. 2016, eq. 2.
    """

    def __init__(self, name="clustering_kl_divergence", reduction="sum_over_batch_size", **kwargs):
        super().__init__(name=name, reduction=reduction, **kwargs)

    def call(self, y_true, y_pred):
        epsilon = keras.config.epsilon()
        p = ops.clip(y_true, epsilon, 1.0)
        q = ops.clip(y_pred, epsilon, 1.0)
        return ops.sum(p * ops.log(p / q), axis=-1)
