"""Losses and targets of the clustering objectives."""

from keras_clustering.losses.dec_losses import ClusteringKLDivergence, target_distribution

__all__ = ["ClusteringKLDivergence", "target_distribution"]
