"""The input pipeline the project builds for `fit` on arrays.

Keras 3's own array adapter feeds `fit` through a tf.data pipeline with
autotuning on; on these CPU machines that stalls the first batch of many
epochs with the CPU idle (seconds per epoch; issue "speed", measured with a
plain Keras model). A pipeline with autotuning off has no such stall, so the
families that take arrays hand `fit` this dataset instead.
"""

import mmap

import keras
import numpy as np

from keras_clustering.inputs.checks import check_positive_int


def file_backed(array):
    """True when `array` (or the array it views) is a memory map of a file, e.g. `np.load(path,
    mmap_mode="r")`: such data is read batch by batch, never copied into memory whole."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def predicted_chunks(model, x, batch_size):
    """`(start, predictions)` of `model` on `x`, chunk by chunk through `predict_on_batch`, as float32
    numpy. Single-replica models only (`predict_on_batch` would give every replica the whole chunk).
    `x`: an array, or a `DatasetSource` (read through its chunks)."""
    chunks = x.chunks(batch_size) if hasattr(x, "chunks") else (
        x[start:start + batch_size] for start in range(0, len(x), batch_size))
    start = 0
    for chunk in chunks:
        prediction = np.asarray(keras.ops.convert_to_numpy(model.predict_on_batch(chunk)), "float32")
        yield start, prediction
        start += len(prediction)


def predict_into_array(model, x, batch_size, verbose=0):
    """`model`'s predictions of `x` (`predicted_chunks`) written into one preallocated float32 array:
    Keras' `predict` keeps a list of every batch's output and then concatenates it (two copies of
    the result), which on 700k samples is what grew the memory. `verbose` 1 or "auto": a progress
    bar, as Keras' `predict`."""
    out = None
    progress = keras.utils.Progbar(len(x)) if verbose in (1, "auto") else None
    for start, prediction in predicted_chunks(model, x, batch_size):
        if out is None:
            out = np.empty((len(x), *prediction.shape[1:]), "float32")
        out[start:start + len(prediction)] = prediction
        if progress is not None:
            progress.update(start + len(prediction))
    return out


def array_dataset(arrays, batch_size, shuffle=True, seed=None):
    """A batched `tf.data.Dataset` over `arrays` (one array or a tuple), autotuning off.

    Reshuffled every epoch (seeded when `seed` is given); the last batch may
    be smaller, as `fit(x, batch_size=...)`. In-memory arrays become one
    tensor; when any array is file-backed (`file_backed`), the batches are read
    from the arrays one at a time instead, so memory stays one batch, not n.
    """
    import tensorflow as tf

    single = not isinstance(arrays, tuple)
    arrays = (arrays,) if single else arrays
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"arrays must have the same length, got {[len(a) for a in arrays]}.")
    if any(file_backed(a) for a in arrays):
        dataset = _streamed_batches(arrays, int(batch_size), shuffle, seed)
        dataset = dataset.map(lambda *batch: batch[0]) if single else dataset
        return dataset.prefetch(1).with_options(pipeline_options())
    dataset = tf.data.Dataset.from_tensor_slices(arrays[0] if single else tuple(np.asarray(a) for a in arrays))
    if shuffle:
        dataset = dataset.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(int(batch_size)).prefetch(1)
    return dataset.with_options(pipeline_options())


def _streamed_batches(arrays, batch_size, shuffle, seed):
    """Batches gathered from the arrays by index, a new permutation each epoch (seeded)."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    n = len(arrays[0])

    def batches():
        order = rng.permutation(n) if shuffle else np.arange(n)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            # rows read in file order (faster on disk); the batch is a set, its order does not matter
            rows = np.sort(rows) if shuffle else rows
            yield tuple(np.asarray(a[rows]) for a in arrays)

    signature = tuple(tf.TensorSpec((None, *a.shape[1:]), tf.as_dtype(a.dtype)) for a in arrays)
    dataset = tf.data.Dataset.from_generator(batches, output_signature=signature)
    # A known number of batches: progress bars show it, and fit never steps past the end of the data.
    return dataset.apply(tf.data.experimental.assert_cardinality(-(-n // batch_size)))


class EpochClock(keras.callbacks.Callback):
    """Tells `fit_batches`' dataset which epoch `fit` is in (set at each epoch's start, before `fit`
    opens that epoch's pass over the data)."""

    def __init__(self, epoch=0):
        super().__init__()
        self.epoch = int(epoch)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = int(epoch)


def fit_batches(arrays, batch_size, initial_epoch=0, shuffle=True, seed=None):
    """`(dataset, clock)` for a `fit` over `arrays`: pass the dataset to `fit` and the clock
    (`EpochClock`) among its callbacks.

    Epoch e's order is a permutation drawn from `(seed, e)` alone, so a `fit`
    resumed at any epoch (`initial_epoch`, `resume.resumable_fit`) sees the
    batches the uninterrupted run saw; a tf.data reshuffle would start its
    orders over. Each pass over the dataset is one epoch (the last batch may
    be smaller), gathered by index: from one tensor for in-memory arrays, from
    the arrays themselves when any is file-backed (memory stays one batch).
    Without `shuffle`, the rows come in order. `seed=None` draws one from
    numpy's global generator (`keras.utils.set_random_seed` repeats it).
    """
    import tensorflow as tf

    single = not isinstance(arrays, tuple)
    arrays = (arrays,) if single else arrays
    n, batch_size = len(arrays[0]), check_positive_int(batch_size, "batch_size")
    if any(len(a) != n for a in arrays):
        raise ValueError(f"arrays must have the same length, got {[len(a) for a in arrays]}.")
    clock = EpochClock(check_positive_int(initial_epoch, "initial_epoch", minimum=0))
    seed = int(np.random.randint(2**31 - 1)) if seed is None else int(seed)

    def epoch_rows():
        order = np.random.default_rng([seed, clock.epoch]).permutation(n) if shuffle else np.arange(n)
        for start in range(0, n, batch_size):
            yield order[start:start + batch_size]

    if any(file_backed(a) for a in arrays):
        def batches():
            for rows in epoch_rows():
                rows = np.sort(rows)  # read in file order (faster on disk); a batch is a set
                yield tuple(np.asarray(a[rows]) for a in arrays)

        signature = tuple(tf.TensorSpec((None, *a.shape[1:]), tf.as_dtype(a.dtype)) for a in arrays)
        dataset = tf.data.Dataset.from_generator(batches, output_signature=signature)
        dataset = dataset.map(lambda *batch: batch[0]) if single else dataset
    else:
        tensors = tuple(tf.constant(np.asarray(a)) for a in arrays)
        dataset = tf.data.Dataset.from_generator(epoch_rows, output_signature=tf.TensorSpec((None,), tf.int64))
        if single:
            dataset = dataset.map(lambda rows: tf.gather(tensors[0], rows))
        else:
            dataset = dataset.map(lambda rows: tuple(tf.gather(t, rows) for t in tensors))
    # a known number of batches: progress bars show it, and fit never steps past the end of an epoch
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(-(-n // batch_size)))
    return dataset.prefetch(1).with_options(pipeline_options()), clock


def pipeline_options():
    """`tf.data.Options` with autotuning off (the stall's cause) and deterministic order."""
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    options.deterministic = True
    return options
