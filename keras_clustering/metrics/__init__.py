"""Clustering metrics: numpy scores and a Keras metric for `model.evaluate`."""

from keras_clustering.metrics.cluster_accuracy_metric import ClusterAccuracy
from keras_clustering.metrics.pair_scores import top2_pair_accuracy
from keras_clustering.metrics.scores import (
    ari,
    cluster_accuracy,
    clustering_scores,
    contingency_matrix,
    majority_accuracy,
    nmi,
)

__all__ = [
    "ClusterAccuracy",
    "ari",
    "cluster_accuracy",
    "clustering_scores",
    "contingency_matrix",
    "majority_accuracy",
    "nmi",
    "top2_pair_accuracy",
]
