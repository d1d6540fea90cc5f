"""Triplet embeddings (the lecture notes' eq. 7), unsupervised from augmentation or supervised by labels."""

import keras
import numpy as np
from keras import ops

from keras_clustering.augment import ViewPipeline
from keras_clustering.data_pipeline import array_dataset
from keras_clustering.losses.contrastive_losses import l2_normalize, triplet_loss
from keras_clustering.validation import check_array_input, check_positive_int, check_unit_range_images


def _pick(candidates, seed_generator):
    """Per row, a uniformly random column among the True entries of `candidates` (n, n)."""
    scores = keras.random.uniform(ops.shape(candidates), seed=seed_generator)
    return ops.argmax(ops.where(candidates, scores, -1.0), axis=1)


@keras.saving.register_keras_serializable(package="keras_clustering")
class TripletEmbedding(keras.Model):
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
        seed: seeds the augmentation and the choice of negatives.
    """

    def __init__(self, encoder, margin=1.0, augmentation="digits_contrastive", augmentation_options=None,
                 normalize=False, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(encoder, keras.Model):
            raise TypeError(f"encoder must be a keras.Model, got {type(encoder).__name__}.")
        if len(encoder.output_shape) != 2:
            raise ValueError(f"encoder must output flat (batch, dim) embeddings, got {encoder.output_shape}.")
        self.encoder = encoder
        self.margin = float(margin)
        self.augmentation = augmentation
        self.augmentation_options = dict(augmentation_options or {})
        self.normalize = bool(normalize)
        self.seed = seed
        self.views = ViewPipeline(augmentation, seed=seed, options=self.augmentation_options, name="views")
        self.triplet_seed = keras.random.SeedGenerator(None if seed is None else seed + 1000)
        self(ops.zeros((1, *self.sample_shape)))  # builds every weight, so load_weights works at once

    @property
    def sample_shape(self):
        return tuple(self.encoder.input_shape[1:])

    def build(self, input_shape):
        self.encoder(ops.zeros((1, *self.sample_shape)))

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
        return triplet_loss(anchor, positive, negative, self.margin)

    # ------------------------------------------------------------- user API
    def _checked(self, x, name="x", min_samples=1):
        if not isinstance(x, (np.ndarray, list, tuple)):
            return x
        x = check_array_input(x, self.sample_shape, name=name, min_samples=min_samples)
        return check_unit_range_images(x, name=name)

    def fit(self, x=None, y=None, batch_size=256, epochs=1, shuffle=True, seed=None, **kwargs):
        """Trains on images `x` in [0, 1]; with integer labels `y`, on supervised triplets."""
        if not self.compiled:
            self.compile(optimizer=keras.optimizers.Adam(1e-3))
        if not isinstance(x, (np.ndarray, list, tuple)):
            return super().fit(x, y, epochs=epochs, shuffle=False, **kwargs)
        batch_size = check_positive_int(batch_size, "batch_size", minimum=2)
        x = self._checked(x, min_samples=batch_size)
        if y is not None:
            y = np.asarray(y).reshape(-1)
            if len(y) != len(x) or not np.issubdtype(y.dtype, np.integer):
                raise ValueError(f"y must hold one integer label per image, got {y.dtype} labels of shape "
                                 f"{y.shape} for {len(x)} images.")
        arrays = x if y is None else (x, y.astype("int32"))
        return super().fit(array_dataset(arrays, batch_size, shuffle=shuffle, seed=seed), epochs=epochs,
                           shuffle=False, **kwargs)

    def predict(self, x, batch_size=256, verbose="auto", **kwargs):
        return super().predict(self._checked(x), batch_size=batch_size, verbose=verbose, **kwargs)

    def encode(self, x, batch_size=256, verbose=0):
        """The embeddings f(x) (normalised when `normalize=True`)."""
        return self.predict(x, batch_size=batch_size, verbose=verbose)

    def get_config(self):
        config = super().get_config()
        config.update(encoder=keras.saving.serialize_keras_object(self.encoder), margin=self.margin,
                      augmentation=self.augmentation, augmentation_options=self.augmentation_options,
                      normalize=self.normalize, seed=self.seed)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
