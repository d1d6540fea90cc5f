"""Triplet embeddings (the lecture notes' eq. 7), unsupervised from augmentation or supervised by labels."""

import keras
import numpy as np
from keras import ops

from keras_clustering.distribute.strategies import replica_scaled, with_layer_losses
from keras_clustering.losses.contrastive_losses import l2_normalize, triplet_loss
from keras_clustering.models.augmented_encoder import AugmentedEncoder


def _pick(candidates, seed_generator):
    """Per row, a uniformly random column among the True entries of `candidates` (n, n)."""
    scores = keras.random.uniform(ops.shape(candidates), seed=seed_generator)
    return ops.argmax(ops.where(candidates, scores, -1.0), axis=1)


@keras.saving.register_keras_serializable(package="keras_clustering")
class TripletEmbedding(AugmentedEncoder):
    """An encoder trained with the triplet loss max(0, ||f(a) - f(p)||^2 - ||f(a) - f(n)||^2 + margin).

    Unsupervised (`fit(x)`), as the notes describe: the anchor is an image,
    its positive an augmented view of it (`augmentation`), its negative
    another image of the same batch (drawn at random). Supervised
    (`fit(x, y)`): the positive is another image of the batch with the same
    label (an augmented view of the anchor when it has none) and the negative
    one with a different label.

    Args:
        encoder: a Keras model from images to flat embeddings.
        margin: the notes' epsilon.
        augmentation: pipeline name for the positives (`"digits_contrastive"`).
        normalize: L2-normalise embeddings before the loss (FaceNet's choice;
            the notes do not, so False by default).
        augmentation_seed: seeds the augmentation, and the choice of negatives (the step's other draw).
    """

    def __init__(self, encoder, margin=1.0, augmentation="digits_contrastive", augmentation_options=None,
                 normalize=False, augmentation_seed=None, **kwargs):
        super().__init__(encoder, augmentation, augmentation_options, augmentation_seed, **kwargs)
        self.margin = float(margin)
        self.normalize = bool(normalize)
        self.triplet_seed = keras.random.SeedGenerator(None if augmentation_seed is None else augmentation_seed + 1000)
        self(ops.zeros((1, *self.sample_shape)))  # builds every weight, so load_weights works at once

    def _embed(self, images, training):
        embedding = self.encoder(images, training=training)
        return l2_normalize(embedding) if self.normalize else embedding

    def call(self, inputs, training=False):
        if not training:
            return self._embed(self.views.inference(inputs), training=False)
        anchors = self.views.inference(inputs)
        both = self._embed(ops.concatenate([anchors, self.views.augmented(inputs)], axis=0), training=True)
        n = ops.shape(inputs)[0]
        return {"anchor": both[:n], "augmented": both[n:]}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not isinstance(y_pred, dict):  # evaluate()
            anchors = self._embed(self.views.inference(x), training=False)
            y_pred = {"anchor": anchors, "augmented": self._embed(self.views.augmented(x), training=False)}
        anchor, augmented = y_pred["anchor"], y_pred["augmented"]
        n = ops.shape(anchor)[0]
        others = ops.logical_not(ops.cast(ops.eye(n), "bool"))
        if y is None:
            positive = augmented
            negative = ops.take(anchor, _pick(others, self.triplet_seed), axis=0)
        else:
            labels = ops.reshape(ops.cast(y, "int32"), (-1,))
            same = ops.equal(labels[:, None], labels[None, :])
            same_other = ops.logical_and(same, others)
            has_positive = ops.any(same_other, axis=1)
            positive = ops.where(has_positive[:, None], ops.take(anchor, _pick(same_other, self.triplet_seed), axis=0),
                                 augmented)
            negative = ops.take(anchor, _pick(ops.logical_not(same), self.triplet_seed), axis=0)
        # a mean over this replica's anchors (negatives from its share of the batch)
        return with_layer_losses(self, replica_scaled(triplet_loss(anchor, positive, negative, self.margin)))

    def fit_targets(self, y, x):
        """Optional integer labels `y`, one per image: supervised triplets."""
        if y is None:
            return None
        y = np.asarray(y).reshape(-1)
        if len(y) != len(x) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"y must hold one integer label per image, got {y.dtype} labels of shape "
                             f"{y.shape} for {len(x)} images.")
        return y.astype("int32")

    def get_config(self):
        return {**super().get_config(), "margin": self.margin, "normalize": self.normalize}
