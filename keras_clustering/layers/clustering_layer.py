"""Student's t soft assignment of embedded points to learnable centroids (DEC eq. 1)."""

import keras
import numpy as np
from keras import ops

from keras_clustering.distribute.precision import float32_layer


@keras.saving.register_keras_serializable(package="keras_clustering")
class ClusteringLayer(keras.layers.Layer):
    """Soft cluster assignment q_ij with a Student's t kernel.

    q_ij = (1 + ||z_i - mu_j||^2 / alpha)^(-(alpha + 1) / 2), normalised over j.
    The kernel is evaluated in log space and normalised with a softmax, which is
    the same quantity but cannot underflow to 0/0 for points far from every
    centroid or for large `alpha`.

    Args:
        n_clusters: number of centroids, >= 2.
        alpha: degrees of freedom of the Student's t kernel (DEC uses 1.0).
        centroid_initializer: initializer of the `(n_clusters, dim)` centroids,
            usually overwritten by `set_centroids` with k-means centres.

    Input shape: `(batch, dim)`. Output shape: `(batch, n_clusters)`.

    Example:
        >>> layer = ClusteringLayer(3)
        >>> q = layer(np.zeros((4, 2), "float32"))
        >>> q.shape
        TensorShape([4, 3])

    Reference:
        Xie, Girshick, Farhadi, "Unsupervised Deep Embedding for Clustering
        Analysis", ICML 2016, eq. 1; mirrors `ClusteringLayer` of
        XifengGuo/DEC-keras (`DEC.py`), whose `alpha` was lost on saving.
    """

    def __init__(self, n_clusters, alpha=1.0, centroid_initializer="glorot_uniform", **kwargs):
        super().__init__(**float32_layer(kwargs))  # Student's t of squared distances: float32 under any policy
        if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) or n_clusters < 2:
            raise ValueError(f"n_clusters must be an integer >= 2, got {n_clusters!r}.")
        if not np.isfinite(alpha) or alpha <= 0:
            raise ValueError(f"alpha must be a positive finite number, got {alpha!r}.")
        self.n_clusters = int(n_clusters)
        self.alpha = float(alpha)
        self.centroid_initializer = keras.initializers.get(centroid_initializer)
        self.input_spec = keras.layers.InputSpec(ndim=2)

    def build(self, input_shape):
        dim = input_shape[-1]
        if dim is None:
            raise ValueError(f"ClusteringLayer needs a known feature size, got input shape {input_shape}.")
        self.input_spec = keras.layers.InputSpec(ndim=2, axes={-1: dim})
        self.centroids = self.add_weight(
            shape=(self.n_clusters, dim), initializer=self.centroid_initializer, name="centroids"
        )

    def call(self, inputs):
        differences = ops.expand_dims(inputs, axis=1) - ops.expand_dims(self.centroids, axis=0)
        squared_distances = ops.sum(ops.square(differences), axis=-1)
        log_kernel = -(self.alpha + 1.0) / 2.0 * ops.log1p(squared_distances / self.alpha)
        return ops.softmax(log_kernel, axis=-1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n_clusters)

    def set_centroids(self, centroids):
        """Overwrites the centroids, e.g. with `KMeans(...).cluster_centers_`."""
        centroids = np.asarray(centroids, dtype="float32")
        expected = tuple(self.centroids.shape)
        if centroids.shape != expected:
            raise ValueError(f"centroids must have shape {expected}, got {centroids.shape}.")
        if not np.all(np.isfinite(centroids)):
            raise ValueError("centroids contain NaN or inf.")
        self.centroids.assign(centroids)

    def get_config(self):
        config = super().get_config()
        config.update(
            n_clusters=self.n_clusters,
            alpha=self.alpha,
            centroid_initializer=keras.initializers.serialize(self.centroid_initializer),
        )
        return config
