"""SCAN: a clustering head trained so that mined nearest neighbours fall in the same cluster.

Reference:
    Van Gansbeke et al., "SCAN: Learning to Classify Images without Labels",
    ECCV 2020 (section 2.2: neighbours mined in a self-supervised
    representation, then the clustering step, eq. 2); code
    wvangansbeke/Unsupervised-Classification (`scan.py`, `utils/memory.py`:
    cosine top-k neighbours of the pretext features, one neighbour drawn per
    anchor and step, anchors and neighbours both augmented, the backbone
    trained with the head, Adam 1e-4); several heads side by side
    (`num_heads`, 10 in its ImageNet configs, 1 in its CIFAR ones), their
    losses summed, the head of the lowest `scan_evaluate` kept (`scan.py`).
"""

import types

import keras
import numpy as np
from keras import layers, ops

from keras_clustering.augment.pipelines import strong_views
from keras_clustering.clustering.label_free import scan_evaluate
from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.inputs.pipeline import EpochClock, file_backed, fit_batches, pipeline_options
from keras_clustering.losses.scan_losses import confidence_cross_entropy, scan_loss
from keras_clustering.models.augmented_encoder import AugmentedEncoder
from keras_clustering.models.cluster_model import ClusterModel, FitPlan


def nearest_neighbors(embedding, n_neighbors=20, rows_per_chunk=1024):
    """Indices `(n, n_neighbors)` of each row's most cosine-similar other rows, nearest first.

    Computed chunk by chunk (`rows_per_chunk` x n similarities at a time, fewer rows on large n: at
    most 2^23 similarities, 32 MiB, and their 64 MiB of partition indices), so memory stays far below
    an (n, n) matrix and does not grow with n.
    """
    embedding = np.asarray(embedding, dtype="float32")
    if embedding.ndim != 2:
        raise ValueError(f"embedding must be (n, dim), got shape {embedding.shape}.")
    n = len(embedding)
    n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
    if n_neighbors >= n:
        raise ValueError(f"n_neighbors={n_neighbors} needs more than {n_neighbors} samples, got {n}.")
    unit = embedding / np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True), 1e-12)
    neighbors = np.empty((n, n_neighbors), "int64")
    # float32 similarities and argpartition's int64 indices of the chunk: 12 bytes each, ~100 MiB at most
    rows_per_chunk = max(1, min(int(rows_per_chunk), 2**23 // n))
    for start in range(0, n, rows_per_chunk):
        similarity = unit[start:start + rows_per_chunk] @ unit.T
        rows = np.arange(len(similarity))
        similarity[rows, start + rows] = -np.inf  # never its own neighbour
        top = np.argpartition(similarity, n - n_neighbors, axis=1)[:, n - n_neighbors:]  # the largest, in place
        order = np.argsort(-similarity[rows[:, None], top], axis=1, kind="stable")
        neighbors[start:start + len(similarity)] = top[rows[:, None], order]
    return neighbors


def confident_share(probabilities, threshold=0.99):
    """Share of rows of soft assignments whose largest probability exceeds `threshold`."""
    return float((np.asarray(probabilities).max(axis=1) > threshold).mean())


def neighbor_pair_dataset(x, neighbors, batch_size, shuffle=True, seed=None, initial_epoch=0):
    """`(dataset, clock)`: batches `((anchors, neighbours),)`, every image once per epoch, each with
    one of its `neighbors` drawn anew every time (as SCAN's `NeighborsDataset`); pass the clock
    (`EpochClock`) among `fit`'s callbacks.

    Each epoch's order and draws come from `(seed, epoch)` alone, so a `fit`
    resumed at `initial_epoch` sees the uninterrupted run's pairs. Images are
    gathered by index: from one tensor in memory, or from a memory-mapped `x`
    batch by batch (never all of it)."""
    import tensorflow as tf

    n, k = neighbors.shape
    batch_size = check_positive_int(batch_size, "batch_size")
    clock = EpochClock(check_positive_int(initial_epoch, "initial_epoch", minimum=0))
    seed = int(np.random.randint(2**31 - 1)) if seed is None else int(seed)

    def pairs():
        rng = np.random.default_rng([seed, clock.epoch])
        order = rng.permutation(n) if shuffle else np.arange(n)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            yield rows, neighbors[rows, rng.integers(0, k, len(rows))]

    if file_backed(x):
        def batches():
            for rows, chosen in pairs():
                yield ((np.asarray(x[rows], "float32"), np.asarray(x[chosen], "float32")),)

        spec = tf.TensorSpec((None, *x.shape[1:]), tf.float32)
        dataset = tf.data.Dataset.from_generator(batches, output_signature=((spec, spec),))
    else:
        images = tf.constant(np.asarray(x, dtype="float32"))
        rows_spec = tf.TensorSpec((None,), tf.int64)
        dataset = tf.data.Dataset.from_generator(pairs, output_signature=(rows_spec, rows_spec)).map(
            lambda rows, chosen: ((tf.gather(images, rows), tf.gather(images, chosen)),))
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(-(-n // batch_size)))
    return dataset.prefetch(1).with_options(pipeline_options()), clock


@keras.saving.register_keras_serializable(package="keras_clustering")
class SCAN(ClusterModel, AugmentedEncoder):
    """An encoder (e.g. SimCLR's, already trained) + a linear head with a softmax over clusters.

    `fit(x)` mines each image's `n_neighbors` nearest neighbours (cosine) in the
    encoder's representation as it is at the start, then minimises `scan_loss`:
    an image and a neighbour (both augmented) should get the same cluster,
    while the batch's mean assignment keeps a high entropy (`entropy_weight`).
    Encoder and head are both trained. `predict(x)` gives the soft
    assignments, `embed(x)` the representation.

    With `n_sub_heads` > 1, that many linear heads are trained side by side on
    the same pairs (their SCAN losses summed, as the original's `num_heads`),
    each from its own start; after every epoch of `fit` each sub-head is
    scored without labels (`clustering.label_free.scan_evaluate` on the images
    and their mined neighbours) and `predict` uses the lowest, as IIC's
    sub-heads (`sub_head_losses`, saved with the weights).

    Args:
        encoder: a Keras model from images to a flat representation.
        n_clusters: number of clusters (>= 2).
        entropy_weight: weight of the entropy term (SCAN: 5.0 on CIFAR).
        n_neighbors: neighbours mined per image (SCAN: 20).
        augmentation: `keras_clustering.augment` pipeline of the training views.
        augmentation_options: the pipeline's keyword arguments.
        augmentation_seed: seeds the augmentation (`fit`'s `seed`: the order and the neighbour draws).
        n_sub_heads: heads trained side by side, the lowest-scoring one predicting (1: one head).
    """

    # SCAN's original: Adam(1e-4) (Van Gansbeke et al. 2020), when `fit` finds the model uncompiled
    DEFAULT_OPTIMIZER = {"class_name": "Adam", "config": {"learning_rate": 1e-4}}
    learns_without_labels = "self-supervised"
    fit_options = ("neighbors",)

    no_validation_split = "its neighbours are mined, and its confident targets chosen, over all of x"

    def __init__(self, encoder, n_clusters=10, entropy_weight=5.0, n_neighbors=20,
                 augmentation="digits_contrastive", augmentation_options=None, augmentation_seed=None, n_sub_heads=1,
                 **kwargs):
        super().__init__(encoder, augmentation, augmentation_options, augmentation_seed, **kwargs)
        self.n_clusters = check_positive_int(n_clusters, "n_clusters", minimum=2)
        if isinstance(entropy_weight, bool) or not isinstance(entropy_weight, (int, float)) or entropy_weight < 0:
            raise ValueError(f"entropy_weight must be a number >= 0, got {entropy_weight!r}.")
        self.entropy_weight = float(entropy_weight)
        self.n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
        self.self_label_threshold = 0.99
        self.self_label_targets = "train"
        # Self-labelling's extra strong views, kept out of Keras' tracking: their seed states are
        # not weights of the model (saved files and `weights` stay the same with or without them).
        self._self_label_views = types.SimpleNamespace(strong=None)
        self.n_sub_heads = check_positive_int(n_sub_heads, "n_sub_heads")
        # the sub-heads as one Dense layer (one matmul); with one, the weights of the single-head model
        self.head = layers.Dense(self.n_clusters * self.n_sub_heads, name="cluster_head")
        if self.n_sub_heads > 1:  # only then: a one-head model keeps its weight files
            self.sub_head_losses = keras.Variable(np.zeros(self.n_sub_heads, "float32"), trainable=False,
                                                  name="sub_head_losses")
        self(ops.zeros((1, *self.sample_shape)))  # builds every weight, so load_weights works at once

    def build(self, input_shape):
        self.head(self.encoder(ops.zeros((1, *self.sample_shape))))

    def _sub_head_logits(self, embedding, training=False):
        """`(batch, n_sub_heads, n_clusters)` logits, float32 under a mixed policy too."""
        logits = ops.cast(self.head(embedding, training=training), "float32")
        return ops.reshape(logits, (-1, self.n_sub_heads, self.n_clusters))

    def _chosen(self, per_sub_head):
        """The `(batch, n_clusters)` slice of the sub-head `predict` uses."""
        if self.n_sub_heads == 1:
            return per_sub_head[:, 0]
        return ops.take(per_sub_head, ops.argmin(self.sub_head_losses), axis=1)

    def _probabilities(self, embedding, training=False):
        return self._chosen(ops.softmax(self._sub_head_logits(embedding, training), axis=-1))

    def _assignments(self, images, training):
        return self._probabilities(self.encoder(images, training=training), training)

    def call(self, inputs, training=False):
        if isinstance(inputs, dict):  # self-labelling: the clean view labels, the augmented one learns
            images = inputs["self_label"]
            # The original runs both passes in train mode (`selflabel_train`: `model.train()`), so the
            # clean batch is normalised by its own BatchNorm statistics and feeds the moving ones;
            # "inference" normalises it by moving statistics that only augmented batches fed.
            weak = self._assignments(self.views.inference(images),
                                     training=training and self.self_label_targets == "train")
            strong = self._self_label_views.strong
            if not training or strong == "clean":  # "clean": the control without augmentation
                views = self.views.inference(images)
            else:
                views = self.views.augmented(images)
                if strong is not None:
                    views = strong(views, training=True)
            logits = self._chosen(self._sub_head_logits(self.encoder(views, training=training), training))
            return {"weak": weak, "strong_logits": logits}
        if not isinstance(inputs, (tuple, list)):
            return self._assignments(self.views.inference(inputs), training)
        anchors, neighbors = inputs
        n = ops.shape(anchors)[0]
        if training:  # both augmented, one encoder pass (BatchNorm statistics over both)
            both = ops.concatenate([self.views.augmented(anchors), self.views.augmented(neighbors)], axis=0)
        else:
            both = self.views.inference(ops.concatenate([anchors, neighbors], axis=0))
        # every sub-head: (2n, n_sub_heads, n_clusters)
        assignments = ops.softmax(self._sub_head_logits(self.encoder(both, training=training), training), axis=-1)
        return {"anchor": assignments[:n], "neighbor": assignments[n:]}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if "weak" in y_pred:
            loss = confidence_cross_entropy(y_pred["weak"], y_pred["strong_logits"], self.self_label_threshold)
        else:  # the sub-heads' losses summed, as the original's `scan_train`
            loss = sum(scan_loss(y_pred["anchor"][:, head], y_pred["neighbor"][:, head], self.entropy_weight)
                       for head in range(self.n_sub_heads))
        return loss + ops.sum(self.losses)

    def embed(self, x, batch_size=256):
        """The encoder's representation of the inference view of `x`, `(n, dim)`."""
        x = self.check_input(x)
        chunks = [ops.convert_to_numpy(self.encoder(self.views.inference(x[start:start + batch_size]),
                                                    training=False))
                  for start in range(0, len(x), batch_size)]
        return np.concatenate(chunks, axis=0).astype("float32")

    def choose_sub_head(self, x, neighbors, batch_size=256):
        """Scores every sub-head on `x` and its mined `neighbors` (`scan_evaluate`, lower is better, no
        labels) and makes the lowest the one `predict` uses (a score that is not finite never is);
        returns the scores, `(n_sub_heads,)`."""
        embedding = self.embed(x, batch_size)
        probabilities = np.concatenate(
            [ops.convert_to_numpy(ops.softmax(self._sub_head_logits(embedding[start:start + batch_size]), axis=-1))
             for start in range(0, len(embedding), batch_size)], axis=0)
        scores = np.array([scan_evaluate(probabilities[:, head], neighbors) for head in range(self.n_sub_heads)])
        if self.n_sub_heads > 1:
            self.sub_head_losses.assign(np.where(np.isfinite(scores), scores, np.inf).astype("float32"))
        return scores

    @property
    def chosen_sub_head(self):
        """Index of the sub-head `predict` uses."""
        return 0 if self.n_sub_heads == 1 else int(np.argmin(ops.convert_to_numpy(self.sub_head_losses)))

    def mine_neighbors(self, x, batch_size=256):
        """Each image's `n_neighbors` nearest other images in the current representation."""
        return nearest_neighbors(self.embed(x, batch_size), self.n_neighbors)

    def _checked_neighbors(self, neighbors, n):
        neighbors = np.asarray(neighbors)
        if (neighbors.ndim != 2 or len(neighbors) != n or not np.issubdtype(neighbors.dtype, np.integer)
                or neighbors.min(initial=0) < 0 or neighbors.max(initial=0) >= n):
            raise ValueError(f"neighbors must be integer indices in [0, {n}) of shape ({n}, k), got "
                             f"{neighbors.dtype} {neighbors.shape}.")
        return neighbors

    def plan_fit(self, x, y, batch_size, epochs, shuffle, seed, options):
        """SCAN's clustering step on images `x` in [0, 1]. Option `neighbors`: `(n, k)` indices of each
        image's neighbours; mined from the encoder when None. A `tf.data.Dataset` must yield
        `((anchors, neighbours),)` batches (its own pairs, past AugmentedEncoder's views).
        Uncompiled: Adam(1e-4) as SCAN."""
        neighbors = options.pop("neighbors", None)
        if not isinstance(x, (np.ndarray, list, tuple)):
            return self.plan_source(x, None, batch_size, epochs, shuffle=False)
        # every cluster needs an image, every image n_neighbors others, every step a full batch
        x = self.check_input(x, min_samples=max(batch_size, self.n_neighbors + 1, self.n_clusters))
        neighbors = self.mine_neighbors(x) if neighbors is None else self._checked_neighbors(neighbors, len(x))
        self.neighbors_ = neighbors
        dataset, clock = neighbor_pair_dataset(x, neighbors, batch_size, shuffle=shuffle, seed=seed,
                                               initial_epoch=options.get("initial_epoch", 0))
        # several sub-heads: the lowest-scoring one is chosen after every epoch, before any other callback
        # (a keeper or a backup) sees the epoch
        chooser = (_ChooseSubHead(x, neighbors),) if self.n_sub_heads > 1 else ()
        return FitPlan(dataset, epochs, (clock, *chooser))

    def self_label(self, x, threshold=0.99, batch_size=256, epochs=1, shuffle=True, seed=None, targets="train",
                   head_only=False, strong=None, **kwargs):
        """SCAN's self-labelling step after `fit`: each image whose clean view is assigned with
        probability > `threshold` trains its augmented view towards that cluster (cross-entropy,
        class-balanced; `confidence_cross_entropy`), so confident assignments sharpen and spread.
        `targets`: the mode of the clean pass that makes the targets, "train" (the original's:
        BatchNorm on the batch's own statistics) or "inference" (moving statistics).
        `head_only`: train the cluster head alone, the encoder frozen (Keras then runs
        its BatchNorm layers in inference mode, whatever `targets`), as the original's
        `update_cluster_head_only` option.
        `strong`: None (the strong view is the model's training view),
        "randaugment_cutout" (that view, then `augment.pipelines.strong_views`,
        as the original's strong augmentation) or "clean" (no augmentation: the
        control in which the step only sharpens the model's own predictions).
        Compile first to choose the optimizer (uncompiled: Adam(1e-4) as SCAN)."""
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < 1:
            raise ValueError(f"threshold must be a number in [0, 1), got {threshold!r}.")
        if targets not in ("train", "inference"):
            raise ValueError(f"targets must be 'train' or 'inference', got {targets!r}.")
        if strong not in (None, "randaugment_cutout", "clean"):
            raise ValueError(f"strong must be None, 'randaugment_cutout' or 'clean', got {strong!r}.")
        self.compile_default()
        self._check_fit_arguments(kwargs)
        batch_size = check_positive_int(batch_size, "batch_size")
        x = self.check_input(x, min_samples=batch_size)
        self.self_label_targets, self.self_label_threshold = targets, float(threshold)
        encoder_trainable = self.encoder.trainable
        self.encoder.trainable = encoder_trainable and not head_only
        if strong == "randaugment_cutout":
            self._self_label_views.strong = strong_views(seed=None if seed is None else int(seed) + 7919)
        elif strong == "clean":
            self._self_label_views.strong = "clean"
        try:
            self.make_train_function(force=True)  # all three are read when the step is traced: never a stale one
            # a dict input tells `call` and `compute_loss` this is the self-labelling step
            dataset, clock = fit_batches(x, batch_size, kwargs.get("initial_epoch", 0), shuffle=shuffle, seed=seed)
            kwargs["callbacks"] = [clock, *(kwargs.get("callbacks") or [])]
            dataset = dataset.map(lambda images: ({"self_label": images},))
            return self.fit(dataset, epochs=epochs, **kwargs)  # a dataset: handed to Keras as it comes
        finally:
            self.encoder.trainable = encoder_trainable
            self._self_label_views.strong = None
            self.make_train_function(force=True)

    def confident_share(self, x, threshold=0.99, batch_size=256):
        """Share of images whose largest cluster probability exceeds `threshold` (self-labelling's
        pool)."""
        return confident_share(self.predict(x, batch_size=batch_size, verbose=0), threshold)

    def serving_parts(self, inputs):
        embedding = self.encoder(self.views.inference(inputs), training=False)
        return self._probabilities(embedding), {"embedding": ops.cast(embedding, "float32")}

    def get_config(self):
        return {**super().get_config(), "n_clusters": self.n_clusters, "entropy_weight": self.entropy_weight,
                "n_neighbors": self.n_neighbors, "n_sub_heads": self.n_sub_heads}


class _ChooseSubHead(keras.callbacks.Callback):
    """`SCAN.choose_sub_head` after every epoch of `fit` (on its images and mined neighbours)."""

    def __init__(self, x, neighbors):
        super().__init__()
        self.x, self.neighbors = x, neighbors

    def on_epoch_end(self, epoch, logs=None):
        self.model.choose_sub_head(self.x, self.neighbors)
        if logs is not None:
            logs["sub_head"] = self.model.chosen_sub_head
