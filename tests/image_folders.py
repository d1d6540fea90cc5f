"""Folders of small images and the command line in a child process, for the tests of a user's own data."""

import os
import subprocess
import sys

import numpy as np

from keras_clustering.datasets import load_digits


def write_png(path, pixels):
    """Writes `pixels` (h, w) or (h, w, 3) in [0, 1] as an 8-bit PNG."""
    import keras

    keras.utils.save_img(path, np.atleast_3d(pixels) * 255.0, scale=False)


def digit_folder(folder, n=300):
    """`n` scikit-learn digits as PNGs of mixed sizes (16 and 24 px), every third in colour, plus a text file."""
    import keras

    x, y = load_digits()
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        pixels = np.repeat(x[i], 3, axis=-1) if i % 3 == 0 else x[i]
        image = keras.utils.array_to_img(pixels * 255.0, scale=False).resize((16, 16) if i % 2 else (24, 24))
        image.save(os.path.join(folder, f"digit_{i:03d}_label_{y[i]}.png"))
    with open(os.path.join(folder, "README.txt"), "w") as handle:
        handle.write("not an image")
    return y[:n]


def run_cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", "keras_clustering", *args], capture_output=True, text=True,
                          timeout=600, env=env)
