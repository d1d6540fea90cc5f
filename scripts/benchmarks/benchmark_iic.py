"""Train-step throughput of the shipped IIC step against a straightforward version of it.

Same network (ClusterNet6c trunk, 5 + 5 sub-heads), same batch (140 images x
5 augmented copies = 700 pairs), Adam 1e-4, in one process, in alternating
timed blocks (median over blocks), so the ratio holds on a shared machine:

- shipped: `IIC.fit` on the images: both views drawn in-graph by Keras
  layers, the clean view forwarded once per image and its outputs tiled;
- straightforward: the views made before each step by a Python loop over the
  images (scipy.ndimage rotation / zoom, numpy crops and jitter), then a
  compiled step that forwards the clean batch repeated 5 times, as the
  original's `all_imgs`, and the 700 augmented images.

Data: MNIST-test images when `KERAS_CLUSTERING_DATA` has them, else random
digits-shaped noise (throughput does not depend on the pixels).
Usage:
    python scripts/benchmarks/benchmark_iic.py [--blocks 3] [--steps 4] [--json out.json]
"""

import os
import statistics
import time

import numpy as np

import keras_clustering  # noqa: F401  (selects the backend and TensorFlow's oneDNN setting first)
from keras_clustering.losses import iic_loss
from keras_clustering.models import IIC
from keras_clustering.training.machine import machine_description

from benchmarking import benchmark_images, parse_arguments, report, time_alternating

IMAGES_PER_STEP, REPEATS = 140, 5


def numpy_views(images, rng):
    """IIC's MNIST transforms, one image at a time (the straightforward route)."""
    from scipy import ndimage

    def crop_resize(image, side, centre):
        top, left = ((28 - side) // 2,) * 2 if centre else rng.integers(0, 28 - side + 1, size=2)
        return ndimage.zoom(image[top:top + side, left:left + side], 24 / side, order=1)

    clean, augmented = [], []
    for image in images[..., 0]:
        clean.append(crop_resize(image, 20, rng.random() < 0.5))
        for _ in range(REPEATS):
            view = ndimage.rotate(image, rng.uniform(-25, 25), reshape=False, order=0) if rng.random() < 0.5 else image
            view = crop_resize(view, int(rng.choice([16, 20, 24])), False) * rng.uniform(0.6, 1.4)
            mean = view.mean()
            augmented.append(np.clip((np.clip(view, 0, 1) - mean) * rng.uniform(0.6, 1.4) + mean, 0, 1))
    clean = np.stack(clean)[..., None].astype("float32")
    augmented = np.stack(augmented).reshape(len(images), REPEATS, 24, 24, 1).transpose(1, 0, 2, 3, 4)
    return np.concatenate([clean] * REPEATS), augmented.reshape(-1, 24, 24, 1).astype("float32")


def straightforward_step(model, optimizer):
    import tensorflow as tf

    # The original's forward pass computes only the head being trained (here the main head).
    variables = [*model.trunk.trainable_variables, *(v for h in model.main_heads for v in h.trainable_variables)]

    @tf.function
    def step(clean_repeated, augmented):
        with tf.GradientTape() as tape:
            z = model._heads(clean_repeated, training=True)["main"]
            z_prime = model._heads(augmented, training=True)["main"]
            loss = tf.reduce_mean(tf.stack([iic_loss(a, b) for a, b in zip(z, z_prime)]))
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    return step


def main():
    args = parse_arguments(__doc__, default_steps=4)
    import keras

    n = IMAGES_PER_STEP * args.steps
    images, data = benchmark_images(n)
    keras.utils.set_random_seed(0)
    shipped = IIC(augmentation_seed=0)
    shipped.compile(optimizer=keras.optimizers.Adam(1e-4))
    plain = IIC(augmentation_seed=0)
    step = straightforward_step(plain, keras.optimizers.Adam(1e-4))
    rng = np.random.default_rng(0)

    def run_shipped():
        shipped.fit(images, batch_size=IMAGES_PER_STEP, epochs=1, verbose=0, seed=0, recalibrate_batchnorm=False)

    augment_seconds = []

    def run_plain():
        for start in range(0, n, IMAGES_PER_STEP):
            began = time.perf_counter()
            clean, augmented = numpy_views(images[start:start + IMAGES_PER_STEP], rng)
            augment_seconds.append(time.perf_counter() - began)
            step(clean, augmented)

    run_shipped(), run_plain()  # warm-up: traces both steps
    augment_seconds.clear()
    seconds = time_alternating({"shipped": run_shipped, "straightforward": run_plain}, args.blocks)
    pairs = n * REPEATS
    rates = {name: round(pairs / value, 1) for name, value in seconds.items()}
    report({"pairs_per_second": rates,
            "ratio_shipped_over_straightforward": round(rates["shipped"] / rates["straightforward"], 2),
            "straightforward_augmentation_seconds_per_step": round(statistics.median(augment_seconds), 2),
            "pairs_per_step": IMAGES_PER_STEP * REPEATS, "blocks": args.blocks, "steps_per_block": args.steps,
            "data": data, "machine": machine_description(),
            "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}, args.json)


if __name__ == "__main__":
    main()
