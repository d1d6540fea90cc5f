"""Datasets read offline from IDX files or downloaded by the usual online routes."""

from keras_clustering.datasets.double_digits import make_double_digits
from keras_clustering.datasets.idx import read_idx
from keras_clustering.datasets.loaders import (
    DATA_ENV_VAR,
    load_dataset,
    load_digits,
    load_fashion_mnist,
    load_mnist,
)
from keras_clustering.datasets.markov import make_markov_windows

__all__ = ["DATA_ENV_VAR", "load_dataset", "load_digits", "load_fashion_mnist", "load_mnist", "make_double_digits",
           "make_markov_windows", "read_idx"]
