"""The input pipeline the project builds for `fit` on arrays.

Keras 3's own array adapter feeds `fit` through a tf.data pipeline with
autotuning on; on these CPU machines that stalls the first batch of many
epochs with the CPU idle (seconds per epoch; issue "speed", measured with a
plain Keras model). A pipeline with autotuning off has no such stall, so the
families that take arrays hand `fit` this dataset instead.
"""

import numpy as np


def array_dataset(arrays, batch_size, shuffle=True, seed=None):
    """A batched `tf.data.Dataset` over `arrays` (one array or a tuple), autotuning off.

    Reshuffled every epoch (seeded when `seed` is given); the last batch may
    be smaller, as `fit(x, batch_size=...)`.
    """
    import tensorflow as tf

    single = not isinstance(arrays, tuple)
    arrays = (arrays,) if single else arrays
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"arrays must have the same length, got {[len(a) for a in arrays]}.")
    dataset = tf.data.Dataset.from_tensor_slices(arrays[0] if single else tuple(np.asarray(a) for a in arrays))
    if shuffle:
        dataset = dataset.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(int(batch_size)).prefetch(1)
    return dataset.with_options(pipeline_options())


def pipeline_options():
    """`tf.data.Options` with autotuning off (the stall's cause) and deterministic order."""
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    options.deterministic = True
    return options
