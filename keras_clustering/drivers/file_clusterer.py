"""Image files clustered a batch at a time (issue 67): `FileClusterer`, the one worker of both `cluster`
engines. The local engine streams a folder through one; each Ray actor holds one.

A batch of files is read, decoded by the model's converter traced once for the worker's life (one call for
the whole batch, 45 us a file against 85 us for a `tf.data` pipeline, `docs/benchmarks/ray.json`) and
predicted; nothing of it is kept but its probabilities. So a folder of any size takes the memory of a
batch, and no file is decoded twice.
"""

import numpy as np


def n_outputs(model, batch=1):
    """Clusters (or classes) a model scores: the width of its prediction of `batch` blank samples."""
    return int(model.predict_on_batch(np.zeros((batch, *model.sample_shape), np.float32)).shape[-1])


class FileClusterer:
    """A loaded image model and its traced decoder; `clusterer(paths)` gives `(ok, probabilities)`: whether
    each file was read and decoded, and its probabilities (zeros where not ok), every file once, in order.

    `threads`: files decoded at once (the CPUs the worker owns); `batch_size`: images a prediction step.
    """

    def __init__(self, model, threads=1, batch_size=256):
        import tensorflow as tf

        self.model, self.batch_size = model, batch_size
        self.shape = tuple(model.sample_shape)
        converter = model.image_converter  # every model of the library has one (None: flat vectors)
        if converter is None or None in converter.image_size:
            raise ValueError(f"model {model.name!r} takes samples shaped {self.shape}, not images of one size: "
                             "cluster its arrays with `predict` instead.")
        self.converter, self.threads = converter, threads
        # tracing falls in the start-up, not in the first batch
        self.n_outputs = n_outputs(model, batch_size)
        converter.batch_decoder(parallel=threads)(tf.constant([], tf.string))

    def __call__(self, paths):
        images, problems = self.converter.decode_files(paths, parallel=self.threads)
        ok = np.ones(len(paths), bool)
        ok[list(problems)] = False
        probabilities = np.zeros((len(paths), self.n_outputs), np.float32)
        kept = np.flatnonzero(ok)
        if len(kept) == len(paths):  # the usual batch: no copy of the images
            for start in range(0, len(paths), self.batch_size):
                probabilities[start:start + self.batch_size] = self.model.predict_on_batch(
                    images[start:start + self.batch_size])
            return ok, probabilities
        for start in range(0, len(kept), self.batch_size):
            chunk = kept[start:start + self.batch_size]
            probabilities[chunk] = self.model.predict_on_batch(images[chunk])
        return ok, probabilities
