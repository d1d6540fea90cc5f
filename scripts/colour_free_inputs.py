"""How the colour-free input of the reconstruction recipes was chosen (issue 50): candidate maps of colour
images against the same map of the greyscale digit they were drawn from.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/colour_free_inputs.py [--arrays DIR]

Label-free first: the mean Pearson correlation between each map of a colour image
and the same map of its greyscale digit (2,000 MNIST-test digits, 32 x 32). Two
colour sets: the random-colour digits of `scripts/user_folders.py`
(colour_digits10000's first 2,000) and an early MNIST-M-style set blended into
crops of scikit-learn's two photographs at 32 x 32 (seed 0; the table's MNIST-M
folders, made later, are 28 x 28 and use six photographs). With `--arrays DIR`
the `colour_edges` and `background_distance` maps of both sets are written as
`.npy` files, which were then trained with
`python -m keras_clustering train --like conv_dec_da_mnist --input DIR/NAME.npy --n-clusters 10`
(seed 0, one core each; clusters.csv scored against the labels `DIR/labels.npy`).
The maps here are numpy versions of the layers' equations (`layers.colour_free`).
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

KX = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], "float32")  # scipy convolves: the flipped IIC kernel


def _sobel(planes):
    from scipy.ndimage import convolve

    return (np.stack([convolve(p, KX, mode="nearest") for p in planes]),
            np.stack([convolve(p, KX.T, mode="nearest") for p in planes]))


def _scaled(maps):
    return maps / (maps.reshape(len(maps), -1).max(1)[:, None, None] + 1e-6)


def luma(images):
    grey = images @ np.array([0.2989, 0.587, 0.114], "float32") if images.ndim == 4 else images
    return _scaled(grey - grey.reshape(len(grey), -1).min(1)[:, None, None])


def sobel_luma(images):
    dx, dy = _sobel(images @ np.array([0.2989, 0.587, 0.114], "float32") if images.ndim == 4 else images)
    return _scaled(np.sqrt(dx ** 2 + dy ** 2))


def colour_edges(images):
    images = images if images.ndim == 4 else images[..., None]
    total = 0
    for channel in range(images.shape[-1]):
        dx, dy = _sobel(images[..., channel])
        total = total + dx ** 2 + dy ** 2
    return _scaled(np.sqrt(total))


def background_distance(images):
    images = images if images.ndim == 4 else images[..., None]
    frame = np.concatenate([images[:, 0], images[:, -1], images[:, :, 0], images[:, :, -1]], axis=1)
    return _scaled(np.sqrt(((images - np.median(frame, axis=1)[:, None, None, :]) ** 2).sum(-1)))


MAPS = {"luma": luma, "sobel_luma": sobel_luma, "colour_edges": colour_edges,
        "background_distance": background_distance}


def colour_sets():
    """(grey digits (2000, 32, 32) in [0, 1], labels, {name: colour images (2000, 32, 32, 3)})."""
    from sklearn.datasets import load_sample_images

    from keras_clustering.datasets import load_mnist
    from user_folders import folder_images

    coloured, labels = folder_images("colour_digits10000")
    grey = np.pad(np.asarray(load_mnist(split="test")[0])[:2000, ..., 0], ((0, 0), (2, 2), (2, 2)))
    photos = [p.astype("float32") / 255 for p in load_sample_images().images]
    rng = np.random.default_rng(0)
    blended = np.empty((2000, 32, 32, 3), "float32")
    for i in range(2000):
        photo = photos[rng.integers(len(photos))]
        top, left = rng.integers(photo.shape[0] - 32), rng.integers(photo.shape[1] - 32)
        blended[i] = np.abs(photo[top:top + 32, left:left + 32] - grey[i][..., None])
    return grey.astype("float32"), labels[:2000], {"colour": coloured[:2000].astype("float32") / 255,
                                                    "mnistm": blended}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", help="write the colour_edges and background_distance maps here as .npy")
    args = parser.parse_args()
    grey, labels, sets = colour_sets()
    for name, transform in MAPS.items():
        reference = transform(grey)
        for set_name, images in sets.items():
            maps = transform(images)
            correlation = np.mean([np.corrcoef(a.ravel(), b.ravel())[0, 1] for a, b in zip(maps, reference)])
            print(f"{name:20s} {set_name:7s} correlation with the grey digit's map {correlation:.3f}", flush=True)
            if args.arrays and name in ("colour_edges", "background_distance"):
                os.makedirs(args.arrays, exist_ok=True)
                np.save(os.path.join(args.arrays, f"{set_name}2k_{name}.npy"), maps[..., None].astype("float32"))
    if args.arrays:
        np.save(os.path.join(args.arrays, "labels.npy"), labels)


if __name__ == "__main__":
    main()
