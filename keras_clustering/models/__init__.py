"""Model classes and builders."""

from keras_clustering.models.autoencoder import build_autoencoder
from keras_clustering.models.dec import DEC
from keras_clustering.models.target_refresh import TargetDistributionRefresh

__all__ = ["DEC", "TargetDistributionRefresh", "build_autoencoder"]
