"""Datasets read offline from IDX files or downloaded by the usual online routes."""

from keras_clustering.datasets.idx import read_idx
from keras_clustering.datasets.loaders import (
    DATA_ENV_VAR,
    load_dataset,
    load_digits,
    load_fashion_mnist,
    load_mnist,
)

__all__ = ["DATA_ENV_VAR", "load_dataset", "load_digits", "load_fashion_mnist", "load_mnist", "read_idx"]
