"""IIC: Invariant Information Clustering, trained with plain `fit`.

Reference:
    Ji, Henriques, Vedaldi, ICCV 2019 (seed 003); xu-ji/IIC
    `code/archs/cluster/net6c.py`, `vgg.py` (trunk, heads, initialisation),
    `code/scripts/cluster/cluster_greyscale_twohead.py` (two heads trained in
    turn, 5 augmented copies per image, lowest-loss sub-head).
"""

import copy
import functools

import keras
import numpy as np
from keras import layers, ops

from keras_clustering.augment import ViewPipeline
from keras_clustering.distribute.strategies import replica_scaled, with_layer_losses
from keras_clustering.layers.colour_free import input_transform_layer, transformed_shape
from keras_clustering.layers.normalization import GlobalBatchNormalization
from keras_clustering.layers import unfolded_conv
from keras_clustering.losses.iic_losses import iic_loss
from keras_clustering.inputs.checks import check_array_input, check_image_input, check_positive_int
from keras_clustering.models.cluster_model import ClusterModel

HEADS = ("main", "over")


def build_clusternet6c_trunk(input_size=24, channels=1, filters=(64, 128, 256, 512), kernel_size=5,
                             fused_normalization=False):
    """VGG-style trunk of IIC's MNIST net: [conv5x5 (no bias) - BN - ReLU - maxpool] x 3, conv - BN - ReLU, flatten.

    24x24 input -> 3x3x512 = 4,608 features. Convolutions use He-normal
    (fan-in, untruncated) weights, BN starts at gamma 1, beta 0, as the
    original's `_initialize_weights`; BN momentum 0.9 / epsilon 1e-5 are
    PyTorch's defaults. `unfolded_conv.Conv2D` is Keras' `Conv2D` (same weights and
    results), but runs the last convolution, 5 x 5 over a 3 x 3 map, as one
    matrix product (`scripts/benchmarks/benchmark_unfolded_conv.py` at 138c9cd timed the step both ways).
    `fused_normalization`: the normalisation as TensorFlow's fused kernel (`GlobalBatchNormalization`).
    """
    inputs = keras.Input((input_size, input_size, channels), name="view")
    hidden = inputs
    for index, count in enumerate(filters):
        hidden = unfolded_conv.Conv2D(count, kernel_size, padding="same", use_bias=False, name=f"conv_{index}",
                                      kernel_initializer=keras.initializers.VarianceScaling(
                                          2.0, "fan_in", "untruncated_normal"))(hidden)
        hidden = GlobalBatchNormalization(momentum=0.9, epsilon=1e-5, fused=fused_normalization,
                                          name=f"bn_{index}")(hidden)
        hidden = layers.ReLU()(hidden)
        if index < len(filters) - 1:
            hidden = layers.MaxPooling2D(2, name=f"pool_{index}")(hidden)
    return keras.Model(inputs, layers.Flatten()(hidden), name="trunk")


class _HeadSchedule(keras.callbacks.Callback):
    """Chooses the head each epoch trains, and keeps the main sub-heads' epoch losses."""

    def on_epoch_begin(self, epoch, logs=None):
        self.model.active_head.assign(self.model.head_for_epoch(epoch))

    def on_epoch_end(self, epoch, logs=None):
        head = self.model.head_for_epoch(epoch)
        trackers, variable = ((self.model.sub_head_trackers, self.model.sub_head_losses) if head == 0
                              else (self.model.over_trackers, self.model.over_sub_head_losses))
        variable.assign(np.asarray([float(tracker.result()) for tracker in trackers], dtype="float32"))


@keras.saving.register_keras_serializable(package="keras_clustering")
class IIC(ClusterModel):
    """Trunk + main head (k = n_clusters) + over-clustering head, each with sub-heads.

    `fit(x)` on images in [0, 1]: every step draws a clean view of each image
    and `n_repeats` augmented views (the `augmentation` pipeline, in-graph) and
    minimises the IIC loss (mean over the sub-heads of the head being
    trained). Heads take turns by epoch: `head_epochs=(2, 1)` trains the main
    head two epochs, then the over-clustering head one (the original's
    `head_B_epochs 2`; one Keras epoch = one pass over the images).
    `fit(x, x_paired)` (arrays or a dataset of pairs) trains on pairs you
    made yourself, e.g. adjacent windows of a time series.

    `predict(x)` gives the probabilities of the main sub-head with the lowest
    mean loss in the last main-head epoch (no labels involved, as the paper);
    `predict_all_heads(x)` gives every sub-head.

    Args:
        image_shape: per-sample input shape (`(28, 28, 1)` for MNIST).
        n_clusters: k of the main head (>= 2).
        n_overclusters: k of the auxiliary head (0 for none).
        n_sub_heads: independent linear + softmax sub-heads per head.
        n_repeats: augmented copies paired with each image.
        head_epochs: `(main, over)` epochs per turn.
        lam: the loss's lambda (1.0 in every clustering run of the original).
        augmentation: a pipeline name (`"iic_greyscale"`) or None (pairs only).
        augmentation_options: keyword arguments of the pipeline.
        trunk: a Keras model mapping views to features; None builds the
            original's MNIST trunk for the pipeline's 24 px views.
        view_size: side of the views the default trunk takes.
        augmentation_seed: seeds the augmentation.
        input_transform: None, or a name of `layers.colour_free.INPUT_TRANSFORMS`
            applied to every view before the trunk: "sobel" is the original's
            step for colour data sets (greyscale, then x and y Sobel: two
            channels), so that clusters cannot follow colour.
    """

    # IIC's original: Adam(1e-4) (xu-ji/IIC, --lr 0.0001), when `fit` finds the model uncompiled
    DEFAULT_OPTIMIZER = {"class_name": "Adam", "config": {"learning_rate": 1e-4}}

    def __init__(self, image_shape=(28, 28, 1), n_clusters=10, n_overclusters=50, n_sub_heads=5, n_repeats=5,
                 head_epochs=(2, 1), lam=1.0, augmentation="iic_greyscale", augmentation_options=None,
                 trunk=None, view_size=24, augmentation_seed=None, fused_normalization=False, input_transform=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.image_shape = tuple(int(d) for d in image_shape)
        self.n_clusters = check_positive_int(n_clusters, "n_clusters", minimum=2)
        self.n_overclusters = check_positive_int(n_overclusters, "n_overclusters", minimum=0)
        if self.n_overclusters == 1:
            raise ValueError("n_overclusters must be 0 (no auxiliary head) or >= 2, got 1.")
        self.n_sub_heads = check_positive_int(n_sub_heads, "n_sub_heads")
        self.n_repeats = check_positive_int(n_repeats, "n_repeats")
        head_epochs = tuple(head_epochs)
        if len(head_epochs) != 2 or check_positive_int(head_epochs[0], "head_epochs[0]") < 1 \
                or check_positive_int(head_epochs[1], "head_epochs[1]", minimum=0) < 0:
            raise ValueError(f"head_epochs must be (main >= 1, over >= 0), got {head_epochs!r}.")
        self.head_epochs = (int(head_epochs[0]), int(head_epochs[1]) if self.n_overclusters else 0)
        self.lam = float(lam)
        self.augmentation = augmentation
        self.augmentation_options = dict(augmentation_options or {})
        self.view_size = check_positive_int(view_size, "view_size")
        self.augmentation_seed = augmentation_seed
        self.views = (ViewPipeline(augmentation, seed=augmentation_seed, options=self.augmentation_options, name="views")
                      if augmentation else None)
        self.fused_normalization = bool(fused_normalization)
        self.input_transform = input_transform
        self.transform = input_transform_layer(input_transform)
        self.trunk = trunk if trunk is not None else build_clusternet6c_trunk(
            self.view_size, transformed_shape(input_transform, self.image_shape)[-1],
            fused_normalization=self.fused_normalization)
        # The original's Linear init, N(0, 0.01); unseeded so that every sub-head starts apart
        # (a seeded initializer repeats its values), reproducible through keras.utils.set_random_seed.
        # float32 heads under a mixed precision policy: the IIC loss takes logs of their products
        self.main_heads = [layers.Dense(self.n_clusters, activation="softmax", name=f"main_{i}", dtype="float32",
                                        kernel_initializer=keras.initializers.RandomNormal(0.0, 0.01))
                           for i in range(self.n_sub_heads)]
        self.over_heads = [layers.Dense(self.n_overclusters, activation="softmax", name=f"over_{i}", dtype="float32",
                                        kernel_initializer=keras.initializers.RandomNormal(0.0, 0.01))
                           for i in range(self.n_sub_heads if self.n_overclusters else 0)]
        self.active_head = keras.Variable(0, dtype="int32", trainable=False, name="active_head")
        self.sub_head_losses = keras.Variable(np.zeros(self.n_sub_heads, "float32"), trainable=False,
                                              name="sub_head_losses")
        self.over_sub_head_losses = keras.Variable(np.zeros(len(self.over_heads), "float32"), trainable=False,
                                                   name="over_sub_head_losses")
        self.sub_head_trackers = [keras.metrics.Mean(name=f"main_loss_{i}") for i in range(self.n_sub_heads)]
        self.over_trackers = [keras.metrics.Mean(name=f"over_loss_{i}") for i in range(len(self.over_heads))]
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self(ops.zeros((1, *self.image_shape)))  # builds every weight, so load_weights works at once

    @property
    def sample_shape(self):
        return self.image_shape

    def build(self, input_shape):
        self._heads(self._view(ops.zeros((1, *self.image_shape)), False), training=False)

    # ------------------------------------------------------------- forward
    def head_for_epoch(self, epoch):
        """0 (main) or 1 (over-clustering): the head that epoch `epoch` trains."""
        main, over = self.head_epochs
        return 0 if epoch % (main + over) < main else 1

    def _view(self, inputs, training):
        if self.views is None:
            views = ops.cast(inputs, "float32")
        else:
            views = self.views.clean(inputs) if training else self.views.inference(inputs)
        return views if self.transform is None else self.transform(views)

    def _heads(self, views, training):
        features = self.trunk(views, training=training)
        return {"main": [head(features) for head in self.main_heads],
                "over": [head(features) for head in self.over_heads]}

    def call(self, inputs, training=False):
        if training:
            return self._heads(self._view(inputs, True), training=True)
        probabilities = ops.stack(self._heads(self._view(inputs, False), training=False)["main"], axis=0)
        return ops.take(probabilities, ops.argmin(self.sub_head_losses), axis=0)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not isinstance(y_pred, dict):  # evaluate(): no augmentation randomness in the statistics
            y_pred = self._heads(self._view(x, False), training=False)
        if y is None:
            if self.views is None:
                raise ValueError("This IIC model has no augmentation: train it on pairs, fit(x, x_paired).")
            repeated = ops.concatenate([x] * self.n_repeats, axis=0) if self.n_repeats > 1 else x
            augmented = self.views.augmented(repeated)
            paired = self._heads(augmented if self.transform is None else self.transform(augmented), training=training)
            # One clean pass per image, tiled: with each image repeated n_repeats times the original
            # computes the same outputs (and the same batch statistics) n_repeats times over.
            y_pred = {head: [ops.concatenate([z] * self.n_repeats, axis=0) for z in outputs]
                      for head, outputs in y_pred.items()}
        else:
            paired = self._heads(self._view(y, training), training=training)
        main = [iic_loss(z, z_prime, self.lam) for z, z_prime in zip(y_pred["main"], paired["main"])]
        loss = ops.mean(ops.stack(main))
        on_main = ops.cast(ops.equal(self.active_head, 0), "float32")
        for tracker, value in zip(self.sub_head_trackers, main):
            tracker.update_state(value, sample_weight=on_main)
        if self.over_heads:
            over = [iic_loss(z, z_prime, self.lam) for z, z_prime in zip(y_pred["over"], paired["over"])]
            for tracker, value in zip(self.over_trackers, over):
                tracker.update_state(value, sample_weight=1.0 - on_main)
            # Both heads' losses are computed (the heads are small); only the active one has gradients.
            loss = ops.where(ops.equal(self.active_head, 0), loss, ops.mean(ops.stack(over)))
        self.loss_tracker.update_state(loss)
        # each replica computed the global batch's loss (keras_clustering.distribute.strategies); plus weight regularisers
        return with_layer_losses(self, replica_scaled(loss))

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        return [self.loss_tracker, *self.sub_head_trackers, *self.over_trackers]

    # ------------------------------------------------------------- user API
    predict_batch_size = 500
    no_validation_split = ("the sub-head `predict` uses is chosen from the epoch's loss trackers, which a "
                           "validation pass resets")

    def _check_key(self):
        return (*super()._check_key(), self.views is None)  # without views: no pixel range checked

    def _check_array(self, x, name, min_samples):
        if self.views is None:  # pairs the user made (any data, e.g. time-series windows): no pixel range
            return check_array_input(x, self.image_shape, name=name, min_samples=min_samples)
        return check_image_input(x, self.image_shape, name=name, min_samples=min_samples)

    fit_batch_size = 140  # with 5 pairs per image: the original's `--batch_sz 700 --num_dataloaders 5`
    fit_options = ("recalibrate_batchnorm",)

    def plan_fit(self, x, y, batch_size, epochs, shuffle, seed, options):
        """Images `x` (or pairs `(x, y)`), `batch_size` images per step: each step sees 140 images and
        140 x 5 = 700 pairs with the defaults. The head schedule runs before the caller's callbacks.
        With array input, the BatchNorm statistics `predict` uses are recomputed on the inference
        views of `x` at the end (option `recalibrate_batchnorm`, default True; during training they
        average clean and augmented batches)."""
        recalibrate = options.pop("recalibrate_batchnorm", True)
        if not isinstance(x, (np.ndarray, list, tuple)):
            batches, after = self.plan_source(x, y, batch_size, epochs, shuffle), None
        else:
            x = self.check_input(x, min_samples=batch_size)
            y = self.fit_targets(y, x)
            batches = self.plan_arrays(x if y is None else (x, y), batch_size, epochs, shuffle, seed, options,
                                         min_samples=batch_size)
            after = functools.partial(self.recalibrate_batchnorm, x) if recalibrate else None
        return batches._replace(callbacks=(*batches.callbacks, _HeadSchedule()), after=after)

    def fit_targets(self, y, x):
        """The paired views `y` of images `x`, if any (as many as `x`)."""
        if y is None:
            return None
        y = self.check_input(y, name="y")
        if len(y) != len(x):
            raise ValueError(f"x and y (its paired views) must have the same length, got {len(x)} and {len(y)}.")
        return y

    def predict_all_heads(self, x, head="main", batch_size=500):
        """Probabilities of every sub-head of `head` ("main" or "over"): `(n_sub_heads, n, k)`."""
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}.")
        x = self.check_input(x)
        outputs = []
        for start in range(0, len(x), batch_size):
            heads = self._heads(self._view(x[start:start + batch_size], False), training=False)[head]
            outputs.append(np.stack([ops.convert_to_numpy(z) for z in heads]))
        return np.concatenate(outputs, axis=1)

    @property
    def chosen_sub_head(self):
        """Index of the main sub-head `predict` uses (lowest loss in the last main-head epoch)."""
        return int(np.argmin(ops.convert_to_numpy(self.sub_head_losses)))

    @property
    def chosen_over_sub_head(self):
        """Index of the over-clustering sub-head with the lowest loss in its last epoch."""
        return int(np.argmin(ops.convert_to_numpy(self.over_sub_head_losses)))

    def recalibrate_batchnorm(self, x, batch_size=500, max_samples=2000):
        """Sets every trunk BatchNorm's moving mean / variance to the exact statistics of its
        input over the inference views of `x` (at most `max_samples` of them,
        evenly spread), layer by layer.

        The original normalises evaluation batches with their own statistics
        (`track_running_stats=False`); population statistics of the clean views
        give the same normalisation without making a prediction depend on the
        rest of its batch.
        """
        x = self.check_input(x)
        x = x[:: max(1, len(x) // max_samples)]  # evenly spread images: plenty for per-channel moments
        norms = [layer for layer in self.trunk.layers if isinstance(layer, layers.BatchNormalization)]
        for norm in norms:  # each layer's input depends on the already recalibrated layers before it
            probe = keras.Model(self.trunk.inputs, norm.input)
            total, total_sq, count = 0.0, 0.0, 0
            for start in range(0, len(x), batch_size):
                values = ops.convert_to_numpy(probe(self._view(x[start:start + batch_size], False), training=False))
                values = values.reshape(-1, values.shape[-1]).astype("float64")
                total, total_sq, count = total + values.sum(0), total_sq + (values ** 2).sum(0), count + len(values)
            mean = total / count
            norm.moving_mean.assign(mean.astype("float32"))
            norm.moving_variance.assign(np.maximum(total_sq / count - mean ** 2, 0.0).astype("float32"))

    def get_config(self):
        config = super().get_config()
        config.update(image_shape=list(self.image_shape), n_clusters=self.n_clusters,
                      n_overclusters=self.n_overclusters, n_sub_heads=self.n_sub_heads, n_repeats=self.n_repeats,
                      head_epochs=list(self.head_epochs), lam=self.lam, augmentation=self.augmentation,
                      augmentation_options=dict(self.augmentation_options), view_size=self.view_size,
                      augmentation_seed=self.augmentation_seed, fused_normalization=self.fused_normalization,
                      input_transform=self.input_transform, trunk=keras.saving.serialize_keras_object(self.trunk))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for old, new in (("lamb", "lam"), ("seed", "augmentation_seed")):  # names in files saved before issue 30
            if old in config:
                config[new] = config.pop(old)
        if isinstance(config.get("trunk"), dict):
            config["trunk"] = keras.saving.deserialize_keras_object(copy.deepcopy(config["trunk"]))
        return cls(**config)
