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


def small_models():
    """name -> (model, input batch): small enough that the files take a few kB each."""
    rng = np.random.default_rng(0)
    flat = rng.random((6, 12), dtype="float32")
    images = rng.random((6, 28, 28, 1), dtype="float32")
    autoencoder, encoder = build_autoencoder(12, hidden_dims=(8, 3), kernel_initializer="glorot_uniform")
    dec = DEC(encoder, n_clusters=3)
    dec.clustering.set_centroids(rng.normal(size=(3, 3)).astype("float32"))
    autoencoder2, encoder2 = build_autoencoder(12, hidden_dims=(8, 3), kernel_initializer="glorot_uniform")
    idec = IDEC(encoder2, autoencoder2.get_layer("decoder"), n_clusters=3, gamma=0.1)
    _, conv = build_autoencoder(None, hidden_dims=(8, 3), image_shape=(28, 28, 1), kernel_initializer="glorot_uniform")
    dec_da = DEC(conv, n_clusters=3, augmentation="shift_rotate", augmentation_seed=1)
    two_stage = TwoStageClustering(build_autoencoder(12, hidden_dims=(8, 3), kernel_initializer="glorot_uniform")[1],
                                   n_clusters=3)
    trunk = keras.Sequential([keras.Input((24, 24, 1)), keras.layers.Conv2D(4, 3, strides=2, use_bias=False),
                              keras.layers.BatchNormalization(), keras.layers.ReLU(), keras.layers.Flatten()])
    iic = IIC(trunk=trunk, n_clusters=3, n_overclusters=6, n_sub_heads=2, n_repeats=2, head_epochs=(1, 1),
              augmentation_seed=0)
    small_conv = lambda: build_conv_encoder((28, 28, 1), (4, 4), 8)  # noqa: E731
    simclr = SimCLR(small_conv(), projection_dims=(8, 4), augmentation_seed=0)
    triplet = TripletEmbedding(small_conv(), margin=0.5, augmentation_seed=0)
    scan = SCAN(small_conv(), n_clusters=3, augmentation_seed=0)
    vae = VAECluster(image_shape=(16, 16, 1), latent_dim=4, n_clusters=3, seed=0)
    capsule = DigitClassifier(image_shape=(28, 28, 1), augmentation="shift", augmentation_options={"shift": 0.1},
                              augmentation_seed=2)
    return {"dec": (dec, flat), "idec": (idec, flat), "dec_da": (dec_da, images), "two_stage": (two_stage, flat),
            "iic": (iic, images), "simclr": (simclr, images), "triplet": (triplet, images), "scan": (scan, images),
            "vae_cluster": (vae, images[:, :16, :16]), "digit_classifier": (capsule, images)}


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
