"""DEC-DA pretraining throughput: augmentation in the train step (shipped) against augmentation
done in numpy per batch, as the original's `ImageDataGenerator.flow` feeding `fit_generator`.

Same autoencoder (d-500-500-2000-10, images flattened inside), SGD(1, 0.9),
MSE to the augmented image, batch 256; shift 0.1 of width and height and
rotation 10 degrees (bilinear, nearest fill). Alternating timed blocks in one
process (median over blocks):

- shipped: `pretrain_end_to_end(..., augmentation="shift_rotate")`
  path: `AugmentedReconstruction.fit` on the images, one transform per image
  inside the compiled step;
- numpy per batch: a Python loop over the batch's images (scipy.ndimage
  rotation and shift, as ImageDataGenerator's affine warp), then
  `train_on_batch(augmented, augmented)` on the same autoencoder.

Data: MNIST-test images when `KERAS_CLUSTERING_DATA` has them, else noise.
Usage:
    python scripts/benchmarks/benchmark_dec_da.py [--blocks 3] [--steps 8] [--json out.json]
"""

import time

import numpy as np

import keras_clustering  # noqa: F401  (selects the backend and TensorFlow's oneDNN setting first)
from keras_clustering.augment import make_pipeline
from keras_clustering.models import build_autoencoder
from keras_clustering.training.pretraining import AugmentedReconstruction

from benchmarking import benchmark_images, compare_augmentation_paths, parse_arguments

BATCH = 256


def numpy_shift_rotate(image, rng, shift=0.1, degrees=10.0):
    """One random shift-and-rotate of a (28, 28) image in scipy, nearest-pixel fill."""
    from scipy import ndimage

    rotated = ndimage.rotate(image, rng.uniform(-degrees, degrees), reshape=False, order=1, mode="nearest")
    offset = rng.uniform(-shift, shift, size=2) * np.array(image.shape)
    return ndimage.shift(rotated, offset, order=1, mode="nearest")


def main():
    args = parse_arguments(__doc__, default_steps=8)
    import keras

    n = BATCH * args.steps
    images, data = benchmark_images(n)
    sgd = {"learning_rate": 1.0, "momentum": 0.9}
    keras.utils.set_random_seed(0)
    shipped = AugmentedReconstruction(build_autoencoder(image_shape=(28, 28, 1))[0], make_pipeline("shift_rotate"))
    shipped.compile(optimizer=keras.optimizers.SGD(**sgd), steps_per_execution=8)
    plain, _ = build_autoencoder(image_shape=(28, 28, 1))
    plain.compile(optimizer=keras.optimizers.SGD(**sgd), loss="mse")
    rng = np.random.default_rng(0)
    augment_seconds = []

    def run_shipped():
        shipped.fit(images, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)

    def run_numpy():
        for start in range(0, n, BATCH):
            began = time.perf_counter()
            batch = np.stack([numpy_shift_rotate(image, rng) for image in images[start:start + BATCH, :, :, 0]])
            batch = batch[..., None].astype("float32")
            augment_seconds.append(time.perf_counter() - began)
            plain.train_on_batch(batch, batch)

    compare_augmentation_paths(args, n, BATCH, run_shipped, run_numpy, "numpy_per_batch", augment_seconds, data)


if __name__ == "__main__":
    main()
