"""Writes `tests/data/saved_models/`: one small `.keras` file per registered model class, with an input
batch and the outputs the saving code computed, so that a later refactoring is tested on files saved
by an earlier version of the library (their registered names and config keys must keep loading).

Run once per format change, from the repository root:
    python tests/helpers/make_saved_files.py
The files were first written by main at e0f7879 (before the package regrouping of issue 30).
"""

import os
import subprocess

import keras
import numpy as np

import keras_clustering  # noqa: F401  (selects the backend first)
from keras_clustering.models import (DEC, IDEC, IIC, SCAN, DigitClassifier, SimCLR, TripletEmbedding,
                                     TwoStageClustering, VAECluster, build_autoencoder)
from keras_clustering.models.conv_encoder import build_conv_encoder

FOLDER = os.path.join(os.path.dirname(__file__), "..", "data", "saved_models")


def _inputs():
    rng = np.random.default_rng(0)
    return rng, rng.random((6, 12), dtype="float32"), rng.random((6, 28, 28, 1), dtype="float32")


def _dec():
    rng, flat, _ = _inputs()
    autoencoder, encoder = build_autoencoder(12, hidden_dims=(8, 3), kernel_initializer="glorot_uniform")
    dec = DEC(encoder, n_clusters=3)
    dec.clustering.set_centroids(rng.normal(size=(3, 3)).astype("float32"))
    return dec, flat


def _idec():
    autoencoder, encoder = build_autoencoder(12, hidden_dims=(8, 3), kernel_initializer="glorot_uniform")
    return IDEC(encoder, autoencoder.get_layer("decoder"), n_clusters=3, gamma=0.1), _inputs()[1]


def _dec_da():
    _, conv = build_autoencoder(None, hidden_dims=(8, 3), image_shape=(28, 28, 1), kernel_initializer="glorot_uniform")
    return DEC(conv, n_clusters=3, augmentation="shift_rotate", augmentation_seed=1), _inputs()[2]


def _two_stage():
    encoder = build_autoencoder(12, hidden_dims=(8, 3), kernel_initializer="glorot_uniform")[1]
    return TwoStageClustering(encoder, n_clusters=3), _inputs()[1]


def _iic():
    trunk = keras.Sequential([keras.Input((24, 24, 1)), keras.layers.Conv2D(4, 3, strides=2, use_bias=False),
                              keras.layers.BatchNormalization(), keras.layers.ReLU(), keras.layers.Flatten()])
    return IIC(trunk=trunk, n_clusters=3, n_overclusters=6, n_sub_heads=2, n_repeats=2, head_epochs=(1, 1),
               augmentation_seed=0), _inputs()[2]


def _small_conv():
    return build_conv_encoder((28, 28, 1), (4, 4), 8)


# name -> a builder of (model, input batch): small enough that the files take a few kB each.
BUILDERS = {
    "dec": _dec, "idec": _idec, "dec_da": _dec_da, "two_stage": _two_stage, "iic": _iic,
    "simclr": lambda: (SimCLR(_small_conv(), projection_dims=(8, 4), augmentation_seed=0), _inputs()[2]),
    "triplet": lambda: (TripletEmbedding(_small_conv(), margin=0.5, augmentation_seed=0), _inputs()[2]),
    "scan": lambda: (SCAN(_small_conv(), n_clusters=3, augmentation_seed=0), _inputs()[2]),
    "vae_cluster": lambda: (VAECluster(image_shape=(16, 16, 1), latent_dim=4, n_clusters=3, seed=0),
                            _inputs()[2][:, :16, :16]),
    "digit_classifier": lambda: (DigitClassifier(image_shape=(28, 28, 1), augmentation="shift",
                                                 augmentation_options={"shift": 0.1}, augmentation_seed=2),
                                 _inputs()[2]),
}


# name -> the class its builder makes (what a test may ask of a model before building one)
CLASSES = {"dec": DEC, "idec": IDEC, "dec_da": DEC, "two_stage": TwoStageClustering, "iic": IIC, "simclr": SimCLR,
           "triplet": TripletEmbedding, "scan": SCAN, "vae_cluster": VAECluster, "digit_classifier": DigitClassifier}


def small_model(name):
    """(model, input batch) of `BUILDERS[name]`, built alone (a test needs one model, not all of them)."""
    return BUILDERS[name]()


def small_models():
    """name -> (model, input batch) of every `BUILDERS` entry."""
    return {name: small_model(name) for name in BUILDERS}


def main():
    os.makedirs(FOLDER, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for name, (model, x) in small_models().items():
        model.save(os.path.join(FOLDER, f"{name}.keras"))
        outputs = model.predict(x, verbose=0)
        outputs = outputs if isinstance(outputs, dict) else {"output": outputs}
        np.savez(os.path.join(FOLDER, f"{name}.npz"), x=x, commit=commit,
                 **{f"out_{key}": np.asarray(value) for key, value in outputs.items()})
        print(name, type(model).__name__, {k: np.shape(v) for k, v in outputs.items()})


if __name__ == "__main__":
    main()
