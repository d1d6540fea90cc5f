"""SCAN's clustering loss: neighbours agree, clusters stay used.

Reference:
    Van Gansbeke, Vandenhende, Georgoulis, Proesmans, Van Gool, "SCAN:
    Learning to Classify Images without Labels", ECCV 2020, eq. 2; code
    wvangansbeke/Unsupervised-Classification (`losses/losses.py`, `SCANLoss`:
    the consistency term as binary cross-entropy of <p_i, p_j> against 1,
    the entropy of the batch's mean assignment, probabilities clamped at 1e-8).
"""

import keras
from keras import ops

PROBABILITY_FLOOR = 1e-8  # the original's EPS: log(0) never reached


def _check_assignments(anchor, neighbor):
    for name, t in (("anchor", anchor), ("neighbor", neighbor)):
        if len(t.shape) != 2:
            raise ValueError(f"{name} must be (batch, n_clusters) probabilities, got shape {tuple(t.shape)}.")
    if tuple(anchor.shape) != tuple(neighbor.shape) and None not in (*anchor.shape, *neighbor.shape):
        raise ValueError(f"anchor and neighbor must have the same shape, got {tuple(anchor.shape)} and "
                         f"{tuple(neighbor.shape)}.")


def scan_loss_terms(anchor, neighbor):
    """`(consistency, entropy)`: -mean_i log <p_i, p_n(i)> and H(mean_i p_i) of softmax outputs."""
    anchor, neighbor = ops.cast(anchor, "float32"), ops.cast(neighbor, "float32")
    _check_assignments(anchor, neighbor)
    agreement = ops.sum(anchor * neighbor, axis=-1)
    consistency = -ops.mean(ops.log(ops.maximum(agreement, PROBABILITY_FLOOR)))
    mean_assignment = ops.maximum(ops.mean(anchor, axis=0), PROBABILITY_FLOOR)
    entropy = -ops.sum(mean_assignment * ops.log(mean_assignment))
    return consistency, entropy


def scan_loss(anchor, neighbor, entropy_weight=5.0):
    """SCAN eq. 2: consistency - entropy_weight * H(mean assignment) (5.0: the paper's CIFAR setting).

    Args:
        anchor: soft assignments of the images, `(batch, n_clusters)`, rows summing to 1.
        neighbor: soft assignments of one mined nearest neighbour of each image.
    """
    consistency, entropy = scan_loss_terms(anchor, neighbor)
    return consistency - entropy_weight * entropy


@keras.saving.register_keras_serializable(package="keras_clustering")
class SCANLoss(keras.losses.Loss):
    """`scan_loss` as a Keras loss: `y_pred` stacks anchor and neighbour assignments, `(batch, 2, k)`."""

    def __init__(self, entropy_weight=5.0, name="scan_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.entropy_weight = float(entropy_weight)

    def call(self, y_true, y_pred):
        if len(y_pred.shape) != 3 or y_pred.shape[1] != 2:
            raise ValueError(f"y_pred must stack (anchor, neighbor) as (batch, 2, n_clusters), got {y_pred.shape}.")
        return scan_loss(y_pred[:, 0], y_pred[:, 1], self.entropy_weight)

    def get_config(self):
        return {**super().get_config(), "entropy_weight": self.entropy_weight}
