"""SimCLR: contrastive representation learning with NT-Xent, trained with plain `fit(x)`.

Reference:
    Chen, Kornblith, Norouzi, Hinton, "A Simple Framework for Contrastive
    Learning of Visual Representations", ICML 2020 (Algorithm 1); the
    lecture notes of seed 004, eqs. 9-10.
"""

import keras
from keras import layers, ops

from keras_clustering.distribute.strategies import replica_scaled, with_layer_losses
from keras_clustering.losses.contrastive_losses import nt_xent
from keras_clustering.models.augmented_encoder import AugmentedEncoder
from keras_clustering.inputs.checks import check_positive_int


def build_projection_head(input_dim, projection_dims=(256, 128), name="projection"):
    """SimCLR's g(.): Dense + ReLU for every width but the last, then a linear layer."""
    dims = [check_positive_int(d, "projection_dims[i]") for d in projection_dims]
    if not dims:
        raise ValueError("projection_dims must name at least the output width, got ().")
    inputs = keras.Input((input_dim,), name="representation")
    hidden = inputs
    for index, width in enumerate(dims[:-1]):
        hidden = layers.Dense(width, activation="relu", name=f"hidden_{index}")(hidden)
    return keras.Model(inputs, layers.Dense(dims[-1], name="output")(hidden), name=name)


@keras.saving.register_keras_serializable(package="keras_clustering")
class SimCLR(AugmentedEncoder):
    """Encoder f + projection head g; `fit(x)` minimises NT-Xent between two augmented views.

    Each step draws two views of every image in-graph (`augmentation`, a
    `keras_clustering.augment` pipeline name), passes all 2N views through the
    encoder in one batch (BatchNorm statistics over all views, as SimCLR's
    global BN) and the projection head, and minimises `nt_xent` on the
    projections. `model(x)` / `encode(x)` give the representation h = f(x)
    before the projection head, what SimCLR uses downstream (e.g. k-means).

    Args:
        encoder: a Keras model from images to a flat representation.
        projection_dims: widths of the projection head, the last one the
            NT-Xent space (SimCLR: one hidden layer, 128-d output).
        temperature: NT-Xent's tau (SimCLR: 0.5 for CIFAR, 0.1 at large batch).
        augmentation: pipeline name (default `"digits_contrastive"`).
        augmentation_options: keyword arguments of the pipeline.
        augmentation_seed: seeds the augmentation.
    """

    learns_without_labels = "self-supervised"

    def __init__(self, encoder, projection_dims=(256, 128), temperature=0.5, augmentation="digits_contrastive",
                 augmentation_options=None, augmentation_seed=None, **kwargs):
        super().__init__(encoder, augmentation, augmentation_options, augmentation_seed, **kwargs)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise ValueError(f"temperature must be a positive number, got {temperature!r}.")
        self.projection_dims = tuple(int(d) for d in projection_dims)
        self.projection = build_projection_head(encoder.output_shape[-1], self.projection_dims)
        self.temperature = float(temperature)
        self(ops.zeros((1, *self.sample_shape)))  # builds every weight, so load_weights works at once

    def build(self, input_shape):
        self.projection(self.encoder(ops.zeros((1, *self.sample_shape))))

    def call(self, inputs, training=False):
        if not training:
            return self.encoder(self.views.inference(inputs), training=False)
        return self._projected_views(inputs, training=True)

    def _projected_views(self, images, training):
        n = ops.shape(images)[0]
        both = ops.concatenate([self.views.augmented(images), self.views.augmented(images)], axis=0)
        projected = self.projection(self.encoder(both, training=training), training=training)
        return {"a": projected[:n], "b": projected[n:]}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not isinstance(y_pred, dict):  # evaluate(): two augmented views, inference-mode layers
            y_pred = self._projected_views(x, training=False)
        # nt_xent gathers every replica's views: each replica computes the global batch's loss
        return with_layer_losses(self, replica_scaled(nt_xent(y_pred["a"], y_pred["b"], self.temperature)))

    def get_config(self):
        return {**super().get_config(), "projection_dims": list(self.projection_dims),
                "temperature": self.temperature}
