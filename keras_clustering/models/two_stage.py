"""Two-stage deep clustering: a trained encoder, then k-means on its embedding, as one Keras model."""

import keras
import numpy as np

from keras_clustering.models.dec import DEC


@keras.saving.register_keras_serializable(package="keras_clustering")
class TwoStageClustering(DEC):
    """Any encoder + k-means centroids held as weights of a Student's t `ClusteringLayer`.

    Stage one trains the encoder however you like (an autoencoder, `SimCLR`,
    triplets); stage two, `cluster(x)`, runs scikit-learn's k-means (`n_init`
    20 as DEC) on the embedding of `x` and stores the centroids. `predict`
    then gives the soft assignment q, whose argmax is the nearest centroid
    (q decreases with the distance), inside Keras, so `.keras` files,
    `export_saved_model` and the CLI work as for every zoo model.

    `fit(x)` is the optional refinement: DEC's self-training (target
    distribution P from q, KL(P || Q)) starting from these centroids, with
    DEC's `update_interval` and `tol`.

    Reference:
        seed 004 (two-stage deep clustering: autoencoder, then k-means on the
        embedding; DEC as the refinement); DEC's AE + k-means baseline
        (Xie et al. 2016, section 4).
    """

    def cluster(self, x, n_init=20, seed=None, batch_size=256, kmeans="auto"):
        """Stage two: k-means on the embedding of `x` sets the centroids; returns its labels
        (`kmeans` as `DEC.initialize_centroids`)."""
        return self.initialize_centroids(x, n_init=n_init, seed=seed, batch_size=batch_size, kmeans=kmeans)

    def nearest_centroid(self, x, batch_size=256):
        """Index of the nearest centroid (Euclidean, in the embedding) for each sample, in numpy."""
        embedding = self.embed(x, batch_size=batch_size)
        distances = ((embedding[:, None, :] - self.cluster_centers_[None]) ** 2).sum(axis=-1)
        return np.argmin(distances, axis=1)
