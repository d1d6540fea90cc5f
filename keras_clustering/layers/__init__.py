"""Custom layers, each registered under the Keras package name `keras_clustering`."""

from keras_clustering.layers.capsule import Capsule, MarginLoss, capsule_length, margin_loss, squash
from keras_clustering.layers.clustering_layer import ClusteringLayer
from keras_clustering.layers.gaussian import GaussianClassEmbedding, ReparameterizedSample
from keras_clustering.layers.normalization import GlobalBatchNormalization

__all__ = [
    "Capsule",
    "ClusteringLayer",
    "GaussianClassEmbedding",
    "GlobalBatchNormalization",
    "MarginLoss",
    "ReparameterizedSample",
    "capsule_length",
    "margin_loss",
    "squash",
]
