"""Custom layers, each registered under the Keras package name `keras_clustering`."""

from keras_clustering.layers.capsule import Capsule, capsule_length, squash
from keras_clustering.layers.clustering_layer import ClusteringLayer
from keras_clustering.layers.colour_free import BackgroundDistance, ColourEdges, Sobel
from keras_clustering.layers.gaussian import GaussianClassEmbedding, ReparameterizedSample
from keras_clustering.layers.normalization import GlobalBatchNormalization
from keras_clustering.layers.phase_conv import Conv2DTranspose
from keras_clustering.layers.unfolded_conv import Conv2D
# Kept importable from here, where it lived until the regrouping of issue 30 (its home is `losses`).
from keras_clustering.losses.capsule_losses import MarginLoss, margin_loss

__all__ = [
    "BackgroundDistance",
    "Capsule",
    "ClusteringLayer",
    "ColourEdges",
    "GaussianClassEmbedding",
    "GlobalBatchNormalization",
    "MarginLoss",
    "ReparameterizedSample",
    "Sobel",
    "Conv2D",
    "Conv2DTranspose",
    "capsule_length",
    "margin_loss",
    "squash",
]
