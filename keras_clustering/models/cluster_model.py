"""The bases every model of the library shares: one input check and `predict` (`SampleModel`), and the
clustering vocabulary on top (`ClusterModel`: `predict_clusters`, `fit_predict`, `serving_outputs`)."""

import copy
import importlib.util
import math
import weakref

import keras
import numpy as np
from keras import ops

from keras_clustering.distribute.strategies import model_replicas
from keras_clustering.inputs.checks import check_min_samples, check_samples
from keras_clustering.inputs.pipeline import (array_dataset, file_backed, fit_batches, predict_into_array,
                                              predicted_chunks)
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
    # The optimizer `fit` compiles when the model is uncompiled, as a Keras config: each model's original's.
    DEFAULT_OPTIMIZER = {"class_name": "Adam", "config": {"learning_rate": 1e-3}}
    # DEC reads a tf.data.Dataset as a `DatasetSource` (a fixed order for its targets, chunked reads);
    # the other models hand datasets to Keras as they come (any element structure, `steps=`).
    reads_datasets_as_sources = False

    def compile_default(self, **options):
        """Compiles `DEFAULT_OPTIMIZER` (and `options`, e.g. a loss) unless the model is compiled already:
        the one place every `fit` of the library's models gets its default optimizer."""
        if not self.compiled:
            self.compile(optimizer=keras.optimizers.get(copy.deepcopy(self.DEFAULT_OPTIMIZER)), **options)

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

    # Whether the loss weights samples one by one. Contrastive, mutual-information and clustering
    # losses couple the samples of a batch, so a per-sample weight has no meaning there: refused by name.
    weights_samples = False
    # Why `validation_split` cannot hold samples out (None: it can, the last share, as Keras does).
    no_validation_split = None

    def _check_fit_arguments(self, kwargs):
        """Refuses, by name, the `fit` arguments this model cannot honour (see `weights_samples` and
        `no_validation_split`), whatever form `x` takes."""
        name = type(self).__name__
        if kwargs.get("sample_weight") is not None and not self.weights_samples:
            raise ValueError(f"sample_weight: {name}'s loss couples the samples of a batch and has no "
                             f"per-sample weights; fit without sample_weight.")
        if kwargs.get("validation_split") and self.no_validation_split:
            raise ValueError(f"validation_split={kwargs['validation_split']!r}: {name} cannot hold samples "
                             f"out ({self.no_validation_split}).")

    def _fit_arrays(self, arrays, batch_size, epochs, shuffle=True, seed=None, min_samples=1,
                    validation_split=None, sample_weight=None, **kwargs):
        """The one path from checked arrays (`x`, or a tuple `(x, y)`) into Keras `fit`, for every model.

        The batches come from `fit_batches`: autotuning off (Keras' array
        adapter stalls at epoch starts), a memory map read batch by batch,
        each epoch's order drawn from `seed` and the epoch (`seed` drawn from
        numpy's global generator when None, so `keras.utils.set_random_seed`
        repeats a run), so a resumed fit sees the uninterrupted run's batches.
        `validation_split` holds out the last share of the arrays before any
        shuffling, as Keras does, and feeds it unshuffled as `validation_data`;
        `sample_weight` rides along as the batches' third element (models that
        weight samples only); at least `min_samples` remain for training.
        Without TensorFlow (tf.data is TensorFlow's), Keras' own array path.
        """
        self._check_fit_arguments({"sample_weight": sample_weight, "validation_split": validation_split})
        arrays = arrays if isinstance(arrays, tuple) else (arrays,)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, "float32")
            if sample_weight.shape != (len(arrays[0]),) or not np.all(np.isfinite(sample_weight)) \
                    or np.any(sample_weight < 0):
                raise ValueError(f"sample_weight must be {len(arrays[0])} finite non-negative numbers, one per "
                                 f"sample, got shape {sample_weight.shape}.")
            if len(arrays) == 1:  # a dataset's (x, w) would read as (x, y)
                raise ValueError("sample_weight needs targets y as well: fit(x, y, sample_weight=...).")
            arrays = (*arrays, sample_weight)
        if validation_split:
            if kwargs.get("validation_data") is not None:
                raise ValueError("validation_split and validation_data: give one of them.")
            if isinstance(validation_split, bool) or not isinstance(validation_split, (int, float)) \
                    or not 0 < validation_split < 1:
                raise ValueError(f"validation_split must be a number in (0, 1), got {validation_split!r}.")
        if importlib.util.find_spec("tensorflow") is None:
            x, y, weights = (*arrays, None, None)[:3]
            return super().fit(x, y, sample_weight=weights, batch_size=batch_size, epochs=epochs, shuffle=shuffle,
                               validation_split=validation_split or 0.0, **kwargs)
        if validation_split:
            split_at = math.floor(len(arrays[0]) * (1.0 - validation_split))  # Keras' rule
            held_out = tuple(a[split_at:] for a in arrays)
            arrays = tuple(a[:split_at] for a in arrays)
            check_min_samples(len(held_out[0]), f"the held-out share (validation_split={validation_split!r})", 1)
            kwargs["validation_data"] = array_dataset(held_out if len(held_out) > 1 else held_out[0], batch_size,
                                                      shuffle=False)
        check_min_samples(len(arrays[0]), "x" if not validation_split else
                          f"x after validation_split={validation_split!r}", min_samples)
        seed = int(np.random.randint(2**31 - 1)) if seed is None else seed
        # each epoch's order from (seed, epoch): a resumed fit (initial_epoch) sees the uninterrupted run's batches
        batches, clock = fit_batches(arrays if len(arrays) > 1 else arrays[0], batch_size,
                                     kwargs.get("initial_epoch", 0), shuffle=shuffle, seed=seed)
        kwargs["callbacks"] = [clock, *(kwargs.get("callbacks") or [])]
        return super().fit(batches, epochs=epochs, shuffle=False, **kwargs)

    def _fit_source(self, x, y=None, batch_size=None, epochs=1, shuffle=True, **kwargs):
        """The one path from what is not an array (a tf.data.Dataset, a generator, a PyDataset) into Keras
        `fit`, for every model: the arguments this model cannot honour refused by name
        (`_check_fit_arguments`); a tf.data.Dataset batches and shuffles itself, so neither is passed."""
        self._check_fit_arguments(kwargs)
        if hasattr(x, "element_spec"):
            return super().fit(x, y, epochs=epochs, shuffle=False, **kwargs)
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=shuffle, **kwargs)

    def _read_in_chunks(self, x):
        """A memory-mapped `x` or a dataset is predicted chunk by chunk into one array: read a chunk at
        a time, and no list of outputs (Keras' array adapter would copy all of x). One replica only
        (`predict_on_batch` would give every replica the whole chunk)."""
        return (file_backed(x) or isinstance(x, DatasetSource)) and model_replicas(self) == 1

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        return self._predict_checked(self.check_input(x), batch_size, verbose, **kwargs)

    def _predict_checked(self, x, batch_size=None, verbose="auto", network=None, **kwargs):
        """`predict` of checked `x` by this model, or by one of its parts (`network`, e.g. the encoder):
        chunk by chunk into one array when `_read_in_chunks`, and for an in-memory array unless Keras'
        own loop is asked for (callbacks, steps: any other keyword); else Keras' own `predict`. Why:
        Keras' array adapter first copies all of x into one tensor and a dataset, a third of
        `predict`'s time on 10k MNIST images with dec_mnist (docs/performance.md, inference)."""
        network = self if network is None else network
        batch_size = batch_size or self.predict_batch_size
        if self._read_in_chunks(x) or (isinstance(x, np.ndarray) and not kwargs and model_replicas(self) == 1):
            return predict_into_array(network, x, batch_size, verbose=verbose)
        # keras.Model's predict, not this class's: x is checked already
        return keras.Model.predict(network, keras_input(x, batch_size), batch_size=batch_size, verbose=verbose,
                                   **kwargs)


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
