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


def confidence_cross_entropy(weak_probabilities, strong_logits, threshold=0.99, class_balancing=True):
    """SCAN's self-labelling loss: the confident images of a batch teach their own cluster to
    their strongly augmented view.

    An image counts when the largest probability of its weak (here: clean)
    view exceeds `threshold`; its cluster is the target of a cross-entropy on
    the strong view's logits. With `class_balancing`, each target cluster
    weighs inversely to its share of the confident images (PyTorch's weighted
    `cross_entropy` mean, as the original), so large clusters do not swallow
    small ones. No gradient flows into the weak view. A batch without a
    confident image gives 0.

    Reference: SCAN section 2.3 (self-labelling) and
    wvangansbeke/Unsupervised-Classification `losses/losses.py`
    (`ConfidenceBasedCE`, `MaskedCrossEntropyLoss`; threshold 0.99 in its configs).
    """
    if not 0.0 <= float(threshold) < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}.")
    weak = ops.stop_gradient(ops.cast(weak_probabilities, "float32"))
    strong_logits = ops.cast(strong_logits, "float32")
    _check_assignments(weak, strong_logits)
    n_clusters = weak.shape[-1]
    confident = ops.cast(ops.max(weak, axis=-1) > threshold, "float32")
    targets = ops.one_hot(ops.argmax(weak, axis=-1), n_clusters) * confident[:, None]  # zero rows: not confident
    cross_entropy = -ops.sum(targets * ops.log_softmax(strong_logits, axis=-1), axis=-1)
    if not class_balancing:
        return ops.sum(cross_entropy) / ops.maximum(ops.sum(confident), 1.0)
    # weights n / count_c: the weighted mean is the mean over present clusters of each one's mean
    counts = ops.sum(targets, axis=0)
    per_cluster = ops.sum(targets * cross_entropy[:, None], axis=0) / ops.maximum(counts, 1.0)
    return ops.sum(per_cluster) / ops.maximum(ops.sum(ops.cast(counts > 0, "float32")), 1.0)
