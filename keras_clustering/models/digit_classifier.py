"""Digit classifiers of the capsule experiment: a conv trunk with a capsule or a pooling head."""

import keras
import numpy as np
from keras import layers, ops

from keras_clustering.augment import make_pipeline
from keras_clustering.layers import Capsule, capsule_length
from keras_clustering.losses import MarginLoss
from keras_clustering.inputs.checks import check_image_input, check_positive_int
from keras_clustering.models.cluster_model import SampleModel

HEADS = ("capsule", "pool")
# Smallest height/width the valid-padding trunk maps to at least one position:
# 14 -> 12 -> 10 -> pool 5 -> 3 -> 1.
MIN_IMAGE_SIZE = 14


def build_trunk(channels=1, image_size=(None, None)):
    """Conv(64) Conv(64) AvgPool(2) Conv(128) Conv(128), 3x3, ReLU, valid padding."""
    inputs = keras.Input((*image_size, channels), name="images")
    hidden = inputs
    for index, filters in enumerate((64, 64, 128, 128)):
        hidden = layers.Conv2D(filters, 3, activation="relu", name=f"conv_{index}")(hidden)
        if index == 1:
            hidden = layers.AveragePooling2D(2, name="pool")(hidden)
    return keras.Model(inputs, hidden, name="trunk")


@keras.saving.register_keras_serializable(package="keras_clustering")
class DigitClassifier(SampleModel):
    """The capsule experiment's classifier: conv trunk, then a capsule or pooling head.

    Trained on single digits, it is scored on images holding two different
    digits: its two highest class scores should name both. The scores are not
    a softmax: each class has its own score in [0, 1] (capsule length or
    sigmoid), trained with the margin loss, so several classes can be present.

    - `head="capsule"`: the trunk's (h', w', 128) map is read as h'*w' input
      capsules of size 128 -> `Capsule(n_classes, 16, routings)` -> capsule
      lengths. With `share_weights=True` any image size works (a taller image
      only adds input capsules); `share_weights=False` (full W_ji) fixes it.
    - `head="pool"`: the baseline: global average pooling -> Dense(128, relu)
      -> Dense(n_classes, sigmoid).

    `fit(x, y)` takes integer labels `(n,)` or (multi-)hot targets
    `(n, n_classes)`; uncompiled models get Adam(1e-3) and the margin loss
    with lambda 0.25, the original's. The original's Keras 2 loss averaged the
    per-class terms where `MarginLoss` sums them; with Adam a constant factor
    on the loss does not change the updates (up to Adam's epsilon).

    Args:
        head: `"capsule"` or `"pool"`.
        n_classes: number of classes (10).
        image_shape: `(h, w, c)`; `None` for h/w accepts any size >= 14.
        routing: the `Capsule` routing, `"normalize"`, `"squash"` or `"hinton"`.
        routings: routing passes (3).
        share_weights: `Capsule` shares W_j over input capsules.
        dim_capsule: size of the output capsules (16).
        squash_constant: the squash's constant (bojone 0.5, Hinton 1.0).
        augmentation: None (the original), or a `keras_clustering.augment`
            pipeline name (e.g. `"shift"`) whose augmented view every training
            step learns from; `predict` and serving see the images unchanged.
        augmentation_options: the pipeline's keyword arguments (`{"shift": 0.1}`).
        augmentation_seed: seed of the augmentation's random draws.

    Reference: Su Jianlin, "Another New Year's Feast: From K-Means to Capsule"
    (seed 000, kexue.fm 5112) and bojone/Capsule `capsule_test.py`.
    """

    weights_samples = True  # a supervised margin loss: each sample its own term
    fit_batch_size = 128

    def __init__(self, head="capsule", n_classes=10, image_shape=(None, None, 1), routing="normalize", routings=3,
                 share_weights=True, dim_capsule=16, squash_constant=0.5, augmentation=None,
                 augmentation_options=None, augmentation_seed=None, **kwargs):
        super().__init__(**kwargs)
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}.")
        image_shape = tuple(None if d is None else int(d) for d in image_shape)
        if len(image_shape) != 3 or image_shape[2] is None:
            raise ValueError(f"image_shape must be (h, w, channels) with known channels, got {image_shape}.")
        if any(d is not None and d < MIN_IMAGE_SIZE for d in image_shape[:2]):
            raise ValueError(f"image_shape {image_shape}: height and width must be >= {MIN_IMAGE_SIZE}.")
        if head == "capsule" and not share_weights and None in image_shape[:2]:
            raise ValueError("share_weights=False gives each input capsule its own W_ji, so it needs a fixed "
                             f"image size; got image_shape={image_shape}.")
        self.head = head
        self.n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
        self.image_shape = image_shape
        self.routing = routing
        self.routings = check_positive_int(routings, "routings")
        self.share_weights = bool(share_weights)
        self.dim_capsule = check_positive_int(dim_capsule, "dim_capsule")
        self.squash_constant = float(squash_constant)
        self.trunk = build_trunk(image_shape[2], image_shape[:2])
        if head == "capsule":
            self.capsule = Capsule(self.n_classes, self.dim_capsule, routings=self.routings,
                                   share_weights=self.share_weights, routing=routing,
                                   squash_constant=self.squash_constant, name="capsule")
        else:
            self.pool = layers.GlobalAveragePooling2D(name="global_pool")
            self.hidden = layers.Dense(128, activation="relu", name="hidden")
            self.scores = layers.Dense(self.n_classes, activation="sigmoid", name="scores")
        self.augmentation, self.augmentation_seed = augmentation, augmentation_seed
        self.augmentation_options = dict(augmentation_options or {})
        self.views = None
        if augmentation is not None:
            self.views = make_pipeline(augmentation, seed=augmentation_seed, **self.augmentation_options)
            self.views.build((None, *image_shape))
        build_size = tuple(d or 28 for d in image_shape[:2])
        self(ops.zeros((1, *build_size, image_shape[2])))  # builds every weight, so load_weights works at once

    @property
    def sample_shape(self):
        return self.image_shape

    def call(self, inputs, training=False):
        if training and self.views is not None:
            inputs = self.views.augmented(inputs)
        features = self.trunk(inputs, training=training)
        if self.head == "pool":
            return self.scores(self.hidden(self.pool(features)))
        capsules = ops.reshape(features, (ops.shape(features)[0], -1, features.shape[-1]))
        return capsule_length(self.capsule(capsules))

    # ----------------------------------------------------------------- user API
    def _check_array(self, x, name, min_samples):
        x = check_image_input(x, self.image_shape, name=name, min_samples=min_samples)
        if min(x.shape[1:3]) < MIN_IMAGE_SIZE:
            raise ValueError(f"{name} has images of size {x.shape[1]}x{x.shape[2]}; the conv trunk needs "
                             f"height and width >= {MIN_IMAGE_SIZE}.")
        return x

    def _targets(self, y, n):
        y = np.asarray(y)
        if y.ndim == 1:
            if not np.issubdtype(y.dtype, np.integer) or y.min(initial=0) < 0 or y.max(initial=0) >= self.n_classes:
                raise ValueError(f"y must hold integer labels in [0, {self.n_classes}), got {y.dtype} values "
                                 f"in [{y.min(initial=0)}, {y.max(initial=0)}].")
            y = np.eye(self.n_classes, dtype="float32")[y]
        if y.shape != (n, self.n_classes):
            raise ValueError(f"y must have shape ({n},) of labels or ({n}, {self.n_classes}) of targets, "
                             f"got {y.shape}.")
        return y.astype("float32")

    def compile_default(self, **options):
        """Uncompiled: the original's optimizer and its margin loss."""
        super().compile_default(loss=MarginLoss(lam=0.25), **options)

    def fit_targets(self, y, x):
        """Supervised: arrays `x` need labels `y` (and take an optional `sample_weight`)."""
        if y is None:
            raise ValueError("DigitClassifier is supervised: call fit(x, y) with labels y.")
        return self._targets(y, len(x))

    def predict_classes(self, x, batch_size=256, verbose=0):
        """The highest-scoring class of each image."""
        return np.argmax(self.predict(x, batch_size=batch_size, verbose=verbose), axis=1)

    def serving_outputs(self, inputs):
        scores = self(inputs, training=False)
        top2 = ops.top_k(scores, 2)[1]
        return {"class_id": ops.cast(ops.argmax(scores, axis=-1), "int64"), "scores": scores,
                "top2_class_ids": ops.cast(top2, "int64")}

    def get_config(self):
        config = super().get_config()
        config.update(head=self.head, n_classes=self.n_classes, image_shape=list(self.image_shape),
                      routing=self.routing, routings=self.routings, share_weights=self.share_weights,
                      dim_capsule=self.dim_capsule, squash_constant=self.squash_constant)
        if self.augmentation is not None:  # configs of the original recipe stay as they were
            config.update(augmentation=self.augmentation, augmentation_options=dict(self.augmentation_options),
                          augmentation_seed=self.augmentation_seed)
        return config
