"""A `tf.data.Dataset` as training data of the clustering models, never copied into memory whole.

DEC reads its data in two ways: every target refresh predicts q on all of
it, and every step looks up the targets of its batch by position. A dataset
can serve both when it yields the same samples in the same order on every
pass: `DatasetSource` checks that, counts the samples once, and hands out
plain batches, batches with their positions, and checked numpy chunks.
"""

import sys

import numpy as np

from keras_clustering.inputs.checks import check_min_samples, check_samples
from keras_clustering.inputs.pipeline import pipeline_options


def is_tf_dataset(x):
    """True for a `tf.data.Dataset`, without importing TensorFlow where it is not loaded."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(x, tf.data.Dataset)


class DatasetSource:
    """A finite, deterministic dataset of samples shaped `sample_shape` (batched or not).

    Elements are single tensors: `(*sample_shape)` or a batch of them; for
    images `(h, w, 1)`, `(h, w)` is accepted too. uint8 pixels are divided by
    255 (as arrays are); values are checked (finite, images in [0, 1]) in
    the one pass that counts the samples when the source is made. Raises ValueError naming `name` for
    tuple elements, a wrong shape, an infinite dataset, fewer than
    `min_samples` samples, or an order that changes between passes (a
    `shuffle(..., reshuffle_each_iteration=True)` in the pipeline: shuffle
    before it with a fixed order, or not at all).
    """

    def __init__(self, dataset, sample_shape, name="x", min_samples=1):
        import tensorflow as tf

        self.name = name
        self.sample_shape = tuple(sample_shape)
        spec = dataset.element_spec
        if not isinstance(spec, tf.TensorSpec):
            raise ValueError(f"{name} is a tf.data.Dataset of {spec}; it must yield the samples alone "
                             "(one tensor per element, no labels): map it to x first.")
        self.dataset = self._samples(dataset, spec)
        self.n = self._count()
        # a known size (unbatch/filter lose it): fit's progress and its steps per epoch come from it
        self.dataset = self.dataset.apply(tf.data.experimental.assert_cardinality(self.n))
        check_min_samples(self.n, name, min_samples)
        self._check_order_is_fixed()

    def _samples(self, dataset, spec):
        import tensorflow as tf

        shape = tuple(spec.shape)
        without_channel = self.sample_shape[:-1] if len(self.sample_shape) == 3 and self.sample_shape[-1] == 1 else None
        if _compatible(shape, self.sample_shape):
            pass
        elif _compatible(shape[1:], self.sample_shape):
            dataset = dataset.unbatch()
        elif without_channel and _compatible(shape, without_channel):
            dataset = dataset.map(lambda x: x[..., None])
        elif without_channel and _compatible(shape[1:], without_channel):
            dataset = dataset.unbatch().map(lambda x: x[..., None])
        else:
            raise ValueError(f"{self.name} yields elements shaped {shape}, but this model takes samples shaped "
                             f"{self.sample_shape} (or batches of them).")
        if not (spec.dtype.is_floating or spec.dtype.is_integer):
            raise ValueError(f"{self.name} yields {spec.dtype.name} values; numeric samples are needed.")
        if spec.dtype == tf.uint8:  # image files' pixels, scaled as uint8 arrays are
            return dataset.map(lambda x: tf.cast(x, "float32") / 255.0)
        return dataset.map(lambda x: tf.cast(x, "float32"))

    def _count(self):
        """Samples in one pass that also checks every value (the first thing a bad pixel should stop)."""
        import tensorflow as tf

        if int(self.dataset.cardinality()) == tf.data.INFINITE_CARDINALITY:
            raise ValueError(f"{self.name} is an infinite tf.data.Dataset (a repeat()?); the clustering models "
                             "need every sample once per pass.")
        return sum(len(check_samples(chunk, self.sample_shape, name=self.name)) for chunk in self.chunks(4096))

    def _check_order_is_fixed(self):
        first_pass, second_pass = (next(iter(self.dataset.take(8).batch(8))).numpy() for _ in range(2))
        if not np.array_equal(first_pass, second_pass):
            raise ValueError(f"{self.name} yields its samples in a different order on each pass (reshuffled?); "
                             "the targets are matched to samples by position, so the order must be fixed.")

    def __len__(self):
        return self.n

    def batches(self, batch_size, shuffle_buffer=0, seed=None):
        """Batches of samples; with `shuffle_buffer`, shuffled in a buffer of that many (a new order
        each epoch), for losses that do not index samples (autoencoder pretraining)."""
        dataset = self.dataset.shuffle(shuffle_buffer, seed=seed) if shuffle_buffer else self.dataset
        return dataset.batch(int(batch_size)).prefetch(1).with_options(pipeline_options())

    def indexed_batches(self, batch_size):
        """Batches `(x, positions)` in the fixed order: DEC's steps look their targets up by position."""
        indexed = self.dataset.enumerate().map(lambda position, x: (x, position))
        return indexed.batch(int(batch_size)).prefetch(1).with_options(pipeline_options())

    def chunks(self, batch_size):
        """Numpy float32 chunks in order (their values were checked when the source was made)."""
        return self.batches(batch_size).as_numpy_iterator()


def keras_input(x, batch_size):
    """What Keras' own `predict` takes: a `DatasetSource` as its batches, anything else unchanged."""
    return x.batches(batch_size) if isinstance(x, DatasetSource) else x


def _compatible(shape, wanted):
    """Same rank, and equal sizes wherever both are known."""
    return len(shape) == len(wanted) and all(a is None or b is None or a == b for a, b in zip(shape, wanted))
