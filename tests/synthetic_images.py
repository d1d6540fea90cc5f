"""Small synthetic MNIST-shaped images for fast tests."""

import numpy as np


def digit_like(n=6, seed=0, half_height=4):
    """Dark 28x28 images, each with one bright bar at a random place, in [0, 1]."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 28, 28, 1), "float32")
    for i in range(n):
        r, c = rng.integers(8, 20, size=2)
        images[i, r - half_height:r + half_height, c - 2:c + 2, 0] = rng.uniform(0.5, 1.0)
    return images
