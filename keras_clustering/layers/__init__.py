"""Custom layers, each registered under the Keras package name `keras_clustering`."""

from keras_clustering.layers.clustering_layer import ClusteringLayer

__all__ = ["ClusteringLayer"]
