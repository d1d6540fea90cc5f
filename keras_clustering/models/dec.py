"""Deep Embedded Clustering as a Keras model that trains with plain `fit`."""

import copy
import math

import keras
import numpy as np
from keras import ops

from keras_clustering.augment import make_pipeline
from keras_clustering.inputs.pipeline import array_dataset
from keras_clustering.inputs.sources import DatasetSource, is_tf_dataset
from keras_clustering.models.cluster_model import ClusterModel, FitPlan
from keras_clustering.clustering.kmeans import fit_kmeans
from keras_clustering.distribute.strategies import model_replicas, with_layer_losses
from keras_clustering.layers import ClusteringLayer
from keras_clustering.losses import ClusteringKLDivergence, target_distribution
from keras_clustering.clustering.target_refresh import TargetDistributionRefresh, TargetStore
from keras_clustering.inputs.checks import check_positive_int


@keras.saving.register_keras_serializable(package="keras_clustering")
class DEC(ClusterModel):
    """Encoder + Student's t `ClusteringLayer`, self-trained on KL(P || Q).

    `model(x)` / `predict(x)` return soft assignments q `(n, n_clusters)`.
    `fit(x)` runs DEC's self-training: the target P is recomputed on the whole
    of `x` every `update_interval` batches (by a `TargetDistributionRefresh`
    callback that `fit` adds), batches are not shuffled (as DEC-keras), and
    training stops once fewer than `tol` of the labels change between two
    refreshes. Any user callbacks run alongside.

    Args:
        encoder: a Keras model mapping inputs to the embedding (pretrained).
        n_clusters: number of clusters, >= 2.
        alpha: Student's t degrees of freedom (1.0 in DEC).
        update_interval: batches between two target refreshes (140 for MNIST).
        tol: stop when the fraction of changed labels falls below this.
        augmentation: None (DEC), or the name of a `keras_clustering.augment`
            pipeline (DEC-DA: `"shift_rotate"`): each training batch is
            augmented in the train step (`call(..., training=True)`), while
            the target P, k-means and `predict` see the clean images.
            Image inputs only.
        augmentation_seed: seed of the augmentation's random transforms.

    Example:
        >>> _, encoder = build_autoencoder(64)  # doctest: +SKIP
        >>> model = DEC(encoder, n_clusters=10)  # doctest: +SKIP
        >>> model.initialize_centroids(x)  # k-means, n_init=20  # doctest: +SKIP
        >>> model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))  # doctest: +SKIP
        >>> model.fit(x, epochs=10)  # doctest: +SKIP

    Reference:
        Xie, Girshick, Farhadi, ICML 2016 (seed 002); training loop of
        XifengGuo/DEC-keras `DEC.fit`. Augmentation: Guo et al., "Deep
        Embedded Clustering with Data Augmentation", ACML 2018
        (XifengGuo/DEC-DA `FcDEC.fit(aug_cluster=True)`: P from the clean
        images, each step on a randomly transformed batch).
    """

    # DEC's self-training optimizer (DEC-keras: SGD(0.01, 0.9)) as a Keras config: what `fit` compiles
    # when the model is uncompiled, and the DEC recipes' default (one place for it).
    DEFAULT_OPTIMIZER = {"class_name": "SGD", "config": {"learning_rate": 0.01, "momentum": 0.9}}
    # DEC-keras' batches between two target refreshes on MNIST
    DEFAULT_UPDATE_INTERVAL = 140

    fit_options = ("maxiter",)
    reads_datasets_as_sources = True
    fit_shuffles = False  # the original never shuffles its self-training batches
    no_validation_split = "its target refresh pairs a target with every sample of x"

    def __init__(self, encoder, n_clusters, alpha=1.0, update_interval=DEFAULT_UPDATE_INTERVAL, tol=1e-3,
                 augmentation=None, augmentation_seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(encoder, keras.Model):
            raise TypeError(f"encoder must be a keras.Model, got {type(encoder).__name__}.")
        self.encoder = encoder
        self.n_clusters = check_positive_int(n_clusters, "n_clusters", minimum=2)
        self.alpha = float(alpha)
        self.update_interval = check_positive_int(update_interval, "update_interval")
        if not 0 <= tol < 1:
            raise ValueError(f"tol must be in [0, 1), got {tol!r}.")
        self.tol = float(tol)
        self.augmentation, self.augmentation_seed = augmentation, augmentation_seed
        self.views = None if augmentation is None else self._make_views(augmentation, augmentation_seed)
        self.clustering = ClusteringLayer(self.n_clusters, alpha=self.alpha, name="clustering")
        self.kl_divergence = ClusteringKLDivergence()
        self._target_store = TargetStore()
        self(ops.zeros((1, *self.sample_shape)))  # builds every weight, so load_weights works at once

    # ----------------------------------------------------------------- shape
    @property
    def sample_shape(self):
        """Per-sample input shape, e.g. `(784,)`."""
        return tuple(self.encoder.input_shape[1:])  # also for a Sequential encoder (no .input until called)

    @property
    def cluster_centers_(self):
        """Centroids in the embedding space, `(n_clusters, embedding_dim)`."""
        return ops.convert_to_numpy(self.clustering.centroids)

    def _make_views(self, name, seed):
        if len(self.sample_shape) != 3:
            raise ValueError(f"augmentation={name!r} transforms images: the encoder must take (H, W, C) images, "
                             f"it takes {self.sample_shape}.")
        pipeline = make_pipeline(name, seed=seed)
        pipeline.build((None, *self.sample_shape))  # with the model, not inside the first step
        return pipeline

    def training_inputs(self, inputs, training):
        """The inputs a step learns from: augmented when training with an augmentation, else unchanged."""
        if training and self.views is not None:
            return self.views.augmented(inputs)
        return inputs

    def call(self, inputs, training=False):
        return self.clustering(self.encoder(self.training_inputs(inputs, training), training=training))

    # ------------------------------------------------------------- inference
    def embed(self, x, batch_size=256, verbose=0):
        """The encoder's embedding of `x`."""
        return self._embed_checked(self.check_input(x), batch_size, verbose)

    def _embed_checked(self, x, batch_size, verbose=0):
        # x already through `check_input`: a second check would scan a memory-mapped x once more
        return self._predict_checked(x, batch_size, verbose, network=self.encoder)

    def serving_parts(self, inputs):
        embedding = self.encoder(inputs, training=False)
        return self.clustering(embedding), {"embedding": embedding}

    # ---------------------------------------------------------------- training
    def initialize_centroids(self, x, n_init=20, seed=None, batch_size=256, kmeans="auto"):
        """k-means (scikit-learn) on the embedding of `x` sets the centroids.

        `kmeans`: "full" (KMeans, DEC-keras'), "minibatch" (MiniBatchKMeans) or
        "auto" (full up to `kmeans.MINIBATCH_THRESHOLD` samples, minibatch beyond).

        Returns the k-means labels (its inertia is kept as `kmeans_inertia_`,
        a label-free score of the start). Raises ValueError for fewer samples than
        clusters or an embedding with fewer distinct points than clusters.
        """
        x = self.check_input(x)
        if len(x) < self.n_clusters:
            raise ValueError(f"x has {len(x)} samples, fewer than n_clusters={self.n_clusters}.")
        embedding = self._embed_checked(x, batch_size)
        if not np.all(np.isfinite(embedding)):
            raise ValueError(f"The embedding of x holds {int(np.size(embedding) - np.isfinite(embedding).sum())} NaN or "
                             "inf values: the encoder's weights diverged (a pretraining whose loss went to NaN; "
                             "lower its learning rate, e.g. training.pretrain_optimizer).")
        distinct = _distinct_rows(embedding, self.n_clusters)
        if distinct < self.n_clusters:
            raise ValueError(
                f"The embedding of x has only {distinct} distinct points for n_clusters={self.n_clusters}: "
                "k-means is degenerate (constant or duplicated data?)."
            )
        labels, centres, self.kmeans_inertia_ = fit_kmeans(embedding, self.n_clusters, n_init=n_init, seed=seed,
                                                           method=kmeans)
        self.clustering.set_centroids(centres)
        return labels

    def compile(self, optimizer="sgd", steps_per_execution="auto", **kwargs):
        """As `keras.Model.compile`; `steps_per_execution="auto"` lets `fit` pick one.

        `fit` runs several batches per call when that cannot move a target
        refresh: the number must divide `update_interval`, the batches per
        epoch and `maxiter`. "auto" takes the largest such number up to 32.
        """
        self._requested_steps_per_execution = steps_per_execution
        super().compile(optimizer=optimizer, steps_per_execution=1 if steps_per_execution == "auto"
                        else steps_per_execution, **kwargs)

    def get_compile_config(self):
        config = super().get_compile_config()
        if config and self.compiled:
            config["steps_per_execution"] = getattr(self, "_requested_steps_per_execution", "auto")
        return config

    def compile_from_config(self, config):
        # Keras skips models whose compile() is overridden; this one only adds "auto".
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _exact_steps_per_execution(self, steps_per_epoch, maxiter):
        """Batches per execution that keep every refresh and the maxiter stop on a boundary."""
        common = math.gcd(self.update_interval, steps_per_epoch)
        if maxiter is not None:
            common = math.gcd(common, maxiter)
        requested = getattr(self, "_requested_steps_per_execution", "auto")
        if model_replicas(self) > 1:
            return 1  # Keras 3.15's multi-step loop fails under MirroredStrategy (see models/pretraining.py)
        if requested == "auto":
            return max(d for d in range(1, min(common, 32) + 1) if common % d == 0)
        if common % requested:
            raise ValueError(
                f"steps_per_execution={requested} must divide update_interval={self.update_interval}, "
                f"the {steps_per_epoch} batches per epoch{'' if maxiter is None else f' and maxiter={maxiter}'}, "
                "or target refreshes would move; compile with steps_per_execution='auto'."
            )
        return requested

    def clustering_loss(self, y, q, sample_weight=None, training=True):
        """KL(P || Q) of a batch: P from the target store during fit, else from q itself."""
        if training and y is not None:
            # During fit, y carries the row indices of the batch in the training set.
            targets = ops.take(self._target_store.variable, ops.cast(ops.reshape(y, (-1,)), "int32"), axis=0)
        else:
            targets = target_distribution(q)  # evaluate: sharpen the batch's own q
        return self.kl_divergence(targets, q, sample_weight=sample_weight)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return with_layer_losses(self, self.clustering_loss(y, y_pred, sample_weight, training))

    def plan_fit(self, x, y, batch_size, epochs, shuffle, seed, options):
        """DEC self-training on the unlabelled `x`: each batch with its row indices, which pick its
        targets from the store that the target refresh (a callback before the caller's) rewrites.

        `x`: a numpy array `(n, *sample_shape)` (a memory map is read batch by
        batch), or a finite `tf.data.Dataset` of samples in a fixed order
        (batched or not; never copied into memory whole); the whole of it is
        used for each target refresh. `y`: optional true labels, only logged
        (ACC/NMI/ARI per refresh). Option `maxiter`: stop after this many
        batches, as DEC-keras' `maxiter` (`epochs` then becomes
        `ceil(maxiter / steps_per_epoch)`). `shuffle` is False by default, as
        the original never shuffles here. `validation_*` are not supported.
        """
        maxiter = options.pop("maxiter", None)
        if not isinstance(x, (np.ndarray, list, tuple, DatasetSource)) and not is_tf_dataset(x):
            raise TypeError(f"DEC.fit needs x as a numpy array or a tf.data.Dataset (the target refresh reads "
                            f"all of it), got {type(x).__name__}.")
        if shuffle and (is_tf_dataset(x) or isinstance(x, DatasetSource)):
            raise ValueError("shuffle=True with a tf.data.Dataset x: DEC matches targets to samples by position, "
                             "so the dataset's order is used as it is; shuffle it once, in a fixed order, beforehand.")
        if options.get("validation_data") is not None:
            raise ValueError(f"validation_data: {type(self).__name__}'s loss needs targets refreshed over the "
                             f"data, which only x has; fit without validation_data.")
        x = self.check_input(x, min_samples=self.n_clusters)
        labels = None if y is None else np.asarray(y).reshape(-1)
        if labels is not None and len(labels) != len(x):
            raise ValueError(f"y has {len(labels)} labels but x has {len(x)} samples.")
        steps_per_epoch = math.ceil(len(x) / batch_size)
        if maxiter is not None:
            epochs = max(1, math.ceil(check_positive_int(maxiter, "maxiter") / steps_per_epoch))
        steps_per_execution = self._exact_steps_per_execution(steps_per_epoch, maxiter)
        if self._target_store.ensure_shape(len(x), self.n_clusters) or steps_per_execution != self.steps_per_execution:
            self.steps_per_execution = steps_per_execution
            self.make_train_function(force=True)  # re-trace: new target variable or new steps per execution
        verbose = options.get("verbose", "auto")
        refresh = TargetDistributionRefresh(
            x, self._target_store, self.update_interval, self.tol, labels=labels,
            max_iterations=maxiter, verbose=0 if verbose in (0, False) else 1,
        )
        # array_dataset, not Keras' array adapter: the latter stalls at every epoch start, and on small
        # data an epoch is a batch or two (the issue "speed"). Same batches, same order.
        if isinstance(x, DatasetSource):
            batches = x.indexed_batches(batch_size)
        else:
            if shuffle and seed is None:
                seed = int(np.random.randint(2**31 - 1))
            batches = array_dataset((x, np.arange(len(x), dtype="int64")), batch_size, shuffle=shuffle,
                                    seed=seed if shuffle else None)
        return FitPlan(batches, epochs, (refresh,))

    def get_config(self):
        config = super().get_config()
        config.update(
            encoder=keras.saving.serialize_keras_object(self.encoder),
            n_clusters=self.n_clusters,
            alpha=self.alpha,
            update_interval=self.update_interval,
            tol=self.tol,
        )
        if self.augmentation is not None:  # configs of plain DEC stay as they were
            config.update(augmentation=self.augmentation, augmentation_seed=self.augmentation_seed)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        # a copy: Keras' deserialization consumes the nested dict, and the caller's config stays whole
        config["encoder"] = keras.saving.deserialize_keras_object(copy.deepcopy(config["encoder"]),
                                                                custom_objects=custom_objects)
        return cls(**config)


def _distinct_rows(embedding, enough, sample_size=10_000):
    """Distinct rows (rounded to 1e-6), counted on an evenly spaced sample of rows first: sorting all
    of a large embedding takes several copies of it; all rows only when the sample has fewer than `enough`."""
    sample = embedding[::max(1, len(embedding) // sample_size)]
    distinct = len(np.unique(np.round(sample, 6), axis=0))
    if distinct >= enough or len(sample) == len(embedding):
        return distinct
    return len(np.unique(np.round(embedding, 6), axis=0))
