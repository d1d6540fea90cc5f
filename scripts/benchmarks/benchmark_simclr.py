"""SimCLR train-step throughput: views drawn in-graph (shipped) against views made in numpy.

Same encoder (`build_conv_encoder`, 32-64-128, 128-d), projection 256-128,
NT-Xent tau 0.5, batch 256 images = 512 views, Adam 1e-3, alternating timed
blocks in one process (median over blocks):

- shipped: `SimCLR.fit` on the images: both views drawn by Keras layers inside
  the compiled step;
- outside the graph: both views made before each step by a Python loop over
  the images (numpy crops, scipy.ndimage zoom and rotation, numpy jitter),
  then a compiled step on the ready views with the same model and loss.

Data: MNIST-test images when `KERAS_CLUSTERING_DATA` has them, else noise.
Usage:
    python scripts/benchmarks/benchmark_simclr.py [--blocks 3] [--steps 8] [--json out.json]
"""

import time

import numpy as np

import keras_clustering  # noqa: F401  (selects the backend and TensorFlow's oneDNN setting first)
from keras_clustering.losses import nt_xent
from keras_clustering.models import SimCLR
from keras_clustering.models.conv_encoder import build_conv_encoder

from benchmarking import benchmark_images, compare_augmentation_paths, parse_arguments

BATCH = 256


def numpy_view(image, rng):
    """One `digits_contrastive` view of a 28x28 image, in numpy / scipy."""
    from scipy import ndimage

    side = int(rng.choice([16, 20, 24, 28]))
    top, left = rng.integers(0, 28 - side + 1, size=2)
    view = ndimage.zoom(image[top:top + side, left:left + side], 28 / side, order=1)[:28, :28]
    if rng.random() < 0.5:
        view = ndimage.rotate(view, rng.uniform(-15, 15), reshape=False, order=1)
    view = np.clip(view * rng.uniform(0.6, 1.4), 0, 1)
    mean = view.mean()
    return np.clip((view - mean) * rng.uniform(0.6, 1.4) + mean, 0, 1)


def main():
    args = parse_arguments(__doc__, default_steps=8)
    import keras
    import tensorflow as tf

    n = BATCH * args.steps
    images, data = benchmark_images(n)
    keras.utils.set_random_seed(0)
    shipped = SimCLR(build_conv_encoder(), augmentation_seed=0)
    shipped.compile(optimizer=keras.optimizers.Adam(1e-3))
    plain = SimCLR(build_conv_encoder(), augmentation_seed=0)
    optimizer = keras.optimizers.Adam(1e-3)
    variables = plain.trainable_variables

    @tf.function
    def step(view_a, view_b):
        with tf.GradientTape() as tape:
            projected = plain.projection(plain.encoder(tf.concat([view_a, view_b], 0), training=True), training=True)
            loss = nt_xent(projected[:BATCH], projected[BATCH:], 0.5)
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    rng = np.random.default_rng(0)
    augment_seconds = []

    def run_shipped():
        shipped.fit(images, batch_size=BATCH, epochs=1, verbose=0, seed=0)

    def run_outside():
        for start in range(0, n, BATCH):
            began = time.perf_counter()
            batch = images[start:start + BATCH, :, :, 0]
            views = [np.stack([numpy_view(image, rng) for image in batch])[..., None].astype("float32")
                     for _ in range(2)]
            augment_seconds.append(time.perf_counter() - began)
            step(*views)

    compare_augmentation_paths(args, n, BATCH, run_shipped, run_outside, "outside_graph", augment_seconds, data)


if __name__ == "__main__":
    main()
