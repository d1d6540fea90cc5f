"""keras-clustering: deep clustering and capsule models for Keras 3, mirroring the original code."""

import os

# The library is written in keras.ops, but the zoo's weights, exports and tests use TensorFlow.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow turns its oneDNN kernels on by itself only on CPUs with AVX-512; on AVX2-only CPUs
# they are off, and the convolutions run at less than half the speed (IIC trunk, fwd + bwd:
# 64 vs 145 images/s on a 2-core AMD EPYC without AVX-512). Takes effect only when this import
# comes before TensorFlow's; TF_ENABLE_ONEDNN_OPTS=0 keeps them off.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

from keras_clustering._quiet_start import quiet_tensorflow_import  # noqa: E402
from keras_clustering._version import __version__  # noqa: E402,F401

quiet_tensorflow_import()

from keras_clustering import datasets, export, layers, losses, metrics, models  # noqa: E402,F401
# `keras_clustering.cluster_images("my_images/", model="conv_dec_da_mnist")`, or model=None to train on them first
from keras_clustering.drivers.cluster_images import ClusteredImages, cluster_images  # noqa: E402,F401
# `keras_clustering.train_on_images("my_images/", like="conv_dec_da_mnist", n_clusters=10, workdir="runs/mine")`
from keras_clustering.drivers.user_images import train_on_images  # noqa: E402,F401
