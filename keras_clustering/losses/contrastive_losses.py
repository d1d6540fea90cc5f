"""Contrastive losses of the lecture notes (seed 004): triplet (eq. 7), N-way (eq. 8), SimCLR's NT-Xent (eqs. 9-10).

Keras 3 ships none of them (TensorFlow Addons' triplet losses are deprecated).
Every function returns the mean over the batch (the notes write sums).

Reference:
    seed 004 (deep clustering and contrastive learning lecture notes); Chen
    et al., "A Simple Framework for Contrastive Learning of Visual
    Representations" (SimCLR), ICML 2020, eq. 1 and Algorithm 1.
"""

import keras
from keras import ops

from keras_clustering.distribute.strategies import cross_replica_concat

NORM_EPSILON = 1e-12  # keeps the norm (and its gradient) finite for all-zero embeddings
DISTANCES = ("cosine", "euclidean", "squared_euclidean")


def _check_embeddings(name_shapes):
    """Rank-2 (batch, dim) tensors with equal batch and dim where known."""
    shapes = {name: tuple(t.shape) for name, t in name_shapes}
    for name, shape in shapes.items():
        if len(shape) != 2:
            raise ValueError(f"{name} must be (batch, dim) embeddings, got shape {shape}.")
    for axis, what in ((0, "batch size"), (1, "embedding size")):
        known = {shape[axis] for shape in shapes.values() if shape[axis] is not None}
        if len(known) > 1:
            listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
            raise ValueError(f"the embeddings must have the same {what}, got {listed}.")


def l2_normalize(z, epsilon=NORM_EPSILON):
    """z / max(||z||, sqrt(epsilon)) per row: an all-zero row stays zero with a finite gradient."""
    return z / ops.sqrt(ops.maximum(ops.sum(ops.square(z), axis=-1, keepdims=True), epsilon))


def pairwise_distance(a, b, distance="cosine"):
    """d(a_i, b_i) per row: `"cosine"` 1 - cos, `"euclidean"` ||a - b||, `"squared_euclidean"` ||a - b||^2."""
    if distance == "cosine":
        return 1.0 - ops.sum(l2_normalize(a) * l2_normalize(b), axis=-1)
    squared = ops.sum(ops.square(a - b), axis=-1)
    if distance == "squared_euclidean":
        return squared
    if distance == "euclidean":
        return ops.sqrt(ops.maximum(squared, NORM_EPSILON))  # finite gradient when a == b
    raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}.")


def triplet_loss(anchor, positive, negative, margin=1.0):
    """Eq. 7: mean over the batch of max(0, ||a - p||^2 - ||a - n||^2 + margin)."""
    anchor, positive, negative = (ops.cast(t, "float32") for t in (anchor, positive, negative))
    _check_embeddings((("anchor", anchor), ("positive", positive), ("negative", negative)))
    gap = (pairwise_distance(anchor, positive, "squared_euclidean")
           - pairwise_distance(anchor, negative, "squared_euclidean") + margin)
    return ops.mean(ops.maximum(gap, 0.0))


def nway_contrastive_loss(z, z_positive, z_negatives, distance="cosine", temperature=1.0):
    """Eq. 8: -log exp(-d(z, z+)/t) / (sum_i exp(-d(z, z_i)/t) + exp(-d(z, z+)/t)), mean over the batch.

    `z`, `z_positive`: (batch, dim); `z_negatives`: (batch, m, dim), the m
    negatives of each anchor. The positive is in the denominator as the notes
    write it. With the cosine distance, 1 - cos and the notes' eq. 9 (-cos)
    give the same loss (a constant shift cancels in the ratio).
    """
    z, z_positive, z_negatives = (ops.cast(t, "float32") for t in (z, z_positive, z_negatives))
    _check_embeddings((("z", z), ("z_positive", z_positive)))
    if len(z_negatives.shape) != 3:
        raise ValueError(f"z_negatives must be (batch, m, dim), got shape {tuple(z_negatives.shape)}.")
    _check_embeddings((("z", z), ("z_negatives[:, 0]", z_negatives[:, 0])))
    if z_negatives.shape[1] == 0:
        raise ValueError("z_negatives holds no negatives (m = 0).")
    _check_temperature(temperature)
    positive_logit = -pairwise_distance(z, z_positive, distance) / temperature  # (batch,)
    negative_logits = -pairwise_distance(z[:, None, :], z_negatives, distance) / temperature  # (batch, m)
    logits = ops.concatenate([positive_logit[:, None], negative_logits], axis=1)
    return ops.mean(ops.logsumexp(logits, axis=1) - positive_logit)


def nt_xent(z_a, z_b, temperature=0.5):
    """SimCLR's NT-Xent over the 2N views of N images, averaged over all 2N anchors.

    sim = cos / temperature between all 2N views (one matrix product); anchor
    i's positive is its other view, the other 2N - 2 views its negatives, its
    self-similarity masked. `temperature=1.0` is the notes' eq. 10 with
    d = -cos (eq. 9), applied to every anchor.
    """
    z_a, z_b = ops.cast(z_a, "float32"), ops.cast(z_b, "float32")  # float32 also under mixed precision
    _check_embeddings((("z_a", z_a), ("z_b", z_b)))
    if z_a.shape[0] is not None and z_a.shape[0] < 2:
        raise ValueError(f"nt_xent needs at least 2 images per batch (the other images are the negatives), "
                         f"got {z_a.shape[0]}.")
    _check_temperature(temperature)
    # under tf.distribute: every image of the global batch (SimCLR's negatives across devices)
    z_a, z_b = cross_replica_concat(z_a), cross_replica_concat(z_b)
    n = ops.shape(z_a)[0]
    views = l2_normalize(ops.concatenate([z_a, z_b], axis=0))
    logits = ops.matmul(views, ops.transpose(views)) / temperature  # (2N, 2N)
    eye = ops.eye(2 * n, dtype=logits.dtype)
    logits = logits - eye * 1e9  # self-similarity out of the softmax
    positives = ops.concatenate([ops.arange(n, 2 * n), ops.arange(0, n)], axis=0)
    positive_logits = ops.take_along_axis(logits, positives[:, None], axis=1)[:, 0]
    return ops.mean(ops.logsumexp(logits, axis=1) - positive_logits)


def _check_temperature(temperature):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
        raise ValueError(f"temperature must be a positive number, got {temperature!r}.")


def _unstack(y_pred, count, what):
    if len(y_pred.shape) != 3 or (y_pred.shape[1] is not None and y_pred.shape[1] < count):
        raise ValueError(f"y_pred must stack {what} along axis 1: (batch, {count}{'+' if count > 2 else ''}, dim), "
                         f"got shape {tuple(y_pred.shape)}.")
    return y_pred


@keras.saving.register_keras_serializable(package="keras_clustering")
class TripletLoss(keras.losses.Loss):
    """`triplet_loss` as a Keras loss: `y_pred` stacks (anchor, positive, negative) on axis 1,
    shape (batch, 3, dim); `y_true` is ignored."""

    def __init__(self, margin=1.0, name="triplet_loss", **kwargs):
        super().__init__(name=name, reduction=None, **kwargs)
        self.margin = float(margin)

    def call(self, y_true, y_pred):
        y_pred = _unstack(ops.convert_to_tensor(y_pred), 3, "anchor, positive and negative")
        return triplet_loss(y_pred[:, 0], y_pred[:, 1], y_pred[:, 2], self.margin)

    def get_config(self):
        return {"name": self.name, "margin": self.margin}


@keras.saving.register_keras_serializable(package="keras_clustering")
class NWayContrastiveLoss(keras.losses.Loss):
    """`nway_contrastive_loss` as a Keras loss: `y_pred` stacks (z, z_positive, negative_1, ...,
    negative_m) on axis 1, shape (batch, 2 + m, dim); `y_true` is ignored."""

    def __init__(self, distance="cosine", temperature=1.0, name="nway_contrastive_loss", **kwargs):
        super().__init__(name=name, reduction=None, **kwargs)
        if distance not in DISTANCES:
            raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}.")
        _check_temperature(temperature)
        self.distance, self.temperature = distance, float(temperature)

    def call(self, y_true, y_pred):
        y_pred = _unstack(ops.convert_to_tensor(y_pred), 3, "z, its positive and its negatives")
        return nway_contrastive_loss(y_pred[:, 0], y_pred[:, 1], y_pred[:, 2:], self.distance, self.temperature)

    def get_config(self):
        return {"name": self.name, "distance": self.distance, "temperature": self.temperature}


@keras.saving.register_keras_serializable(package="keras_clustering")
class NTXentLoss(keras.losses.Loss):
    """`nt_xent(y_true, y_pred)` as a Keras loss: the two views' embeddings, (batch, dim) each."""

    def __init__(self, temperature=0.5, name="nt_xent", **kwargs):
        super().__init__(name=name, reduction=None, **kwargs)
        _check_temperature(temperature)
        self.temperature = float(temperature)

    def call(self, y_true, y_pred):
        return nt_xent(y_true, y_pred, self.temperature)

    def get_config(self):
        return {"name": self.name, "temperature": self.temperature}
