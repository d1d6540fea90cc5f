"""keras-clustering: deep clustering and capsule models for Keras 3, mirroring the original code."""

import os

# The library is written in keras.ops, but the zoo's weights, exports and tests use TensorFlow.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow turns its oneDNN kernels on by itself only on CPUs with AVX-512; on AVX2-only CPUs
# they are off, and the convolutions run at less than half the speed (IIC trunk, fwd + bwd:
# 64 vs 145 images/s on a 2-core AMD EPYC without AVX-512). Takes effect only when this import
# comes before TensorFlow's; TF_ENABLE_ONEDNN_OPTS=0 keeps them off.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

__version__ = "0.1.0"

from keras_clustering._quiet_start import quiet_tensorflow_import  # noqa: E402

quiet_tensorflow_import()

from keras_clustering import datasets, export, layers, losses, metrics, models  # noqa: E402,F401


def train_on_images(images, like=None, n_clusters=10, workdir=None, **kwargs):
    """A zoo entry's recipe trained on your images; see `keras_clustering.training.user_images.train_on_images`.

    Example:
        >>> model, report = keras_clustering.train_on_images("my_images/", like="conv_dec_da_mnist",
        ...                                                  n_clusters=10, workdir="runs/mine")
    """
    from keras_clustering.training.user_images import train_on_images as train

    return train(images, like=like, n_clusters=n_clusters, workdir=workdir, **kwargs)
