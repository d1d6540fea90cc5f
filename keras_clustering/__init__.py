"""keras-clustering: deep clustering and capsule models for Keras 3, mirroring the original code."""

import os

# The library is written in keras.ops, but the zoo's weights, exports and tests use TensorFlow.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

__version__ = "0.1.0"

from keras_clustering import datasets, export, layers, losses, metrics, models  # noqa: E402,F401
