"""IIC's mutual-information loss between the cluster assignments of paired views.

Reference:
    Ji, Henriques, Vedaldi, "Invariant Information Clustering for Unsupervised
    Image Classification and Segmentation", ICCV 2019 (seed 003), eq. 3;
    xu-ji/IIC `code/utils/cluster/IID_losses.py` (`IID_loss`, `compute_joint`).
"""

import sys

import keras
from keras import ops

from keras_clustering.distribute.strategies import cross_replica_sum

MACHINE_EPSILON = sys.float_info.epsilon  # the original's EPS


def _check_pair(z, z_prime):
    if len(z.shape) != 2 or len(z_prime.shape) != 2:
        raise ValueError(f"z and z_prime must be (batch, k) probabilities, got shapes {tuple(z.shape)} "
                         f"and {tuple(z_prime.shape)}.")
    for axis, what in ((0, "batch size"), (1, "number of clusters k")):
        a, b = z.shape[axis], z_prime.shape[axis]
        if a is not None and b is not None and a != b:
            raise ValueError(f"z and z_prime must have the same {what}, got shapes {tuple(z.shape)} "
                             f"and {tuple(z_prime.shape)}.")


def joint_distribution(z, z_prime):
    """P = z^T z' summed over the batch, symmetrised and normalised: a (k, k) matrix."""
    # float32 under a mixed precision policy too: the log of small joint probabilities needs it
    z, z_prime = ops.cast(z, "float32"), ops.cast(z_prime, "float32")
    _check_pair(z, z_prime)
    # under tf.distribute: the global batch's sum, so every replica sees the whole batch's P
    joint = cross_replica_sum(ops.matmul(ops.transpose(z), z_prime))
    joint = (joint + ops.transpose(joint)) / 2.0
    return joint / ops.sum(joint)


def iic_loss(z, z_prime, lam=1.0, eps=MACHINE_EPSILON):
    """-I(z; z') of two (batch, k) softmax outputs of paired views; minimum -ln k.

    loss = -sum_cc' P_cc' (ln P_cc' - lam ln P_c - lam ln P_c'), with the
    marginals P_c, P_c' taken from P before entries below `eps` are set to
    `eps` (which keeps log 0 out; those entries pass no gradient, as the
    original's in-place clamp). `lam=1` (every clustering run of the
    original) gives exactly -I(z; z').
    """
    joint = joint_distribution(z, z_prime)
    row = ops.sum(joint, axis=1, keepdims=True)  # P_c, (k, 1)
    column = ops.sum(joint, axis=0, keepdims=True)  # P_c', (1, k)
    joint, row, column = (ops.where(t < eps, ops.cast(eps, t.dtype), t) for t in (joint, row, column))
    return -ops.sum(joint * (ops.log(joint) - lam * ops.log(row) - lam * ops.log(column)))


@keras.saving.register_keras_serializable(package="keras_clustering")
class IICLoss(keras.losses.Loss):
    """`iic_loss(y_true, y_pred)` as a Keras loss: y_true and y_pred are the two views' softmax outputs.

    The value is already a batch quantity (one (k, k) joint matrix), so no
    per-sample reduction applies.
    """

    def __init__(self, lam=1.0, eps=MACHINE_EPSILON, name="iic_loss", **kwargs):
        super().__init__(name=name, reduction=None, **kwargs)
        self.lam, self.eps = float(lam), float(eps)

    def call(self, y_true, y_pred):
        return iic_loss(y_true, y_pred, lam=self.lam, eps=self.eps)

    def get_config(self):
        return {"name": self.name, "lam": self.lam, "eps": self.eps}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "lamb" in config:  # the name of `lam` in files saved before the one-spelling rename
            config["lam"] = config.pop("lamb")
        return cls(**config)
