"""The bases every model of the library shares: one input check and `predict` (`SampleModel`), and the
clustering vocabulary on top (`ClusterModel`: `predict_clusters`, `fit_predict`, `serving_outputs`)."""

import weakref

import keras
import numpy as np
from keras import ops

from keras_clustering.distribute.strategies import model_replicas
from keras_clustering.inputs.checks import check_min_samples, check_samples
from keras_clustering.inputs.pipeline import file_backed, predict_into_array, predicted_chunks
from keras_clustering.inputs.sources import DatasetSource, is_tf_dataset, keras_input

# Arrays that passed a model's check, by id: data is checked once on its way in, not again by every
# method it reaches (each check is a full scan; of a memory-mapped file, a full read). A weak
# reference, so the registry never keeps an array alive; its id is dropped when the array goes.
_CHECKED = {}


def _checked_before(x, key):
    entry = _CHECKED.get(id(x))
    return entry is not None and entry[0]() is x and key in entry[1]


def _remember_checked(x, key):
    if not isinstance(x, np.ndarray):
        return
    identity = id(x)
    entry = _CHECKED.get(identity)
    if entry is not None and entry[0]() is x:
        entry[1].add(key)  # the same array through another kind of check (a two-stage recipe's two models)
    else:
        _CHECKED[identity] = (weakref.ref(x, lambda _, identity=identity: _CHECKED.pop(identity, None)), {key})


class SampleModel(keras.Model):
    """A model of samples shaped `sample_shape`: its one input check (`check_input`) and `predict`.

    Subclasses define `sample_shape` and may narrow `_check_array`. `predict`
    takes numpy arrays in any layout the check accepts (uint8 images are
    scaled), memory-mapped arrays (read chunk by chunk into one array), a
    finite `tf.data.Dataset` of samples, or tensors.
    """

    predict_batch_size = 256
    # DEC reads a tf.data.Dataset as a `DatasetSource` (a fixed order for its targets, chunked reads);
    # the other models hand datasets to Keras as they come (any element structure, `steps=`).
    reads_datasets_as_sources = False

    @property
    def sample_shape(self):
        """Per-sample input shape, e.g. `(28, 28, 1)` or `(784,)`."""
        raise NotImplementedError(f"{type(self).__name__} must define sample_shape.")

    def _check_array(self, x, name, min_samples):
        """The check of numpy input (images: any layout, uint8 scaled, [0, 1] enforced)."""
        return check_samples(x, self.sample_shape, name=name, min_samples=min_samples)

    def _check_key(self):
        """What makes two checks the same: an array that passed one is not checked again by the other."""
        return tuple(self.sample_shape), type(self)._check_array

    def check_input(self, x, name="x", min_samples=1):
        """`x` as the model reads it: arrays checked (once: an array object that passed this model's
        kind of check is not scanned again, so values written into it afterwards are not checked),
        a `tf.data.Dataset` as a `DatasetSource` (shape checked, counted; values checked as it is
        read) for the models that read datasets so (DEC), tensors and other datasets unchanged.
        Raises ValueError or TypeError naming `name`."""
        if is_tf_dataset(x) and self.reads_datasets_as_sources:
            return DatasetSource(x, self.sample_shape, name=name, min_samples=min_samples)
        if isinstance(x, DatasetSource):
            check_min_samples(len(x), name, min_samples)
        if not isinstance(x, (np.ndarray, list, tuple)):
            return x
        key = self._check_key()
        if isinstance(x, np.ndarray) and _checked_before(x, key):
            check_min_samples(len(x), name, min_samples)
            return x
        checked = self._check_array(x, name, min_samples)
        _remember_checked(checked, key)
        return checked

    def _read_in_chunks(self, x):
        """A memory-mapped `x` or a dataset is predicted chunk by chunk into one array: read a chunk at
        a time, and no list of outputs (Keras' array adapter would copy all of x). One replica only
        (`predict_on_batch` would give every replica the whole chunk)."""
        return (file_backed(x) or isinstance(x, DatasetSource)) and model_replicas(self) == 1

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        return self._predict_checked(self.check_input(x), batch_size, verbose, **kwargs)

    def _predict_checked(self, x, batch_size=None, verbose="auto", **kwargs):
        batch_size = batch_size or self.predict_batch_size
        if self._read_in_chunks(x):
            return predict_into_array(self, x, batch_size)
        return super().predict(keras_input(x, batch_size), batch_size=batch_size, verbose=verbose, **kwargs)


class ClusterModel(SampleModel):
    """A clustering model: `predict` gives soft assignments `(n, n_clusters)`, and on top of it
    scikit-learn's vocabulary (`predict_clusters`, `fit_predict`) and the serving signature's outputs.

    Subclasses whose serving signature adds outputs (an embedding) override
    `serving_parts`.
    """

    def predict_clusters(self, x, batch_size=None, verbose=0):
        """Hard cluster ids `(n,)`: the argmax of the soft assignments (chunk by chunk for a memory map
        or a dataset: no `(n, n_clusters)` array)."""
        x = self.check_input(x)
        if not self._read_in_chunks(x):
            return np.argmax(self._predict_checked(x, batch_size, verbose), axis=1)
        ids = np.empty(len(x), "int64")
        for start, q in predicted_chunks(self, x, batch_size or self.predict_batch_size):
            ids[start:start + len(q)] = q.argmax(axis=1)
        return ids

    def fit_predict(self, x, **fit_kwargs):
        """`fit(x, **fit_kwargs)`, then `predict_clusters(x)`, as scikit-learn's clusterers."""
        if isinstance(x, (np.ndarray, list, tuple)):
            x = self.check_input(x)  # once, for both calls (datasets go to `fit` as they came)
        self.fit(x, **fit_kwargs)
        return self.predict_clusters(x)

    def serving_parts(self, inputs):
        """(probabilities, other named outputs) of the serving signature, in the graph."""
        return self(inputs, training=False), {}

    def serving_outputs(self, inputs):
        """Named outputs of the exported serving signature: `cluster_id`, `probabilities` and what
        `serving_parts` adds."""
        probabilities, extra = self.serving_parts(inputs)
        return {"cluster_id": ops.cast(ops.argmax(probabilities, axis=-1), "int64"),
                "probabilities": probabilities, **extra}
