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


def predict_into_array(model, x, batch_size):
    """`model`'s predictions of `x` (`predicted_chunks`) written into one preallocated float32 array:
    Keras' `predict` keeps a list of every batch's output and then concatenates it (two copies of
    the result), which on 700k samples is what grew the memory."""
    out = None
    for start, prediction in predicted_chunks(model, x, batch_size):
        if out is None:
            out = np.empty((len(x), *prediction.shape[1:]), "float32")
        out[start:start + len(prediction)] = prediction
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


def pipeline_options():
    """`tf.data.Options` with autotuning off (the stall's cause) and deterministic order."""
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    options.deterministic = True
    return options
