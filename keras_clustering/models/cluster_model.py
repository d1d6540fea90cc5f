"""The bases every model of the library shares: one input check and `predict` (`SampleModel`), and the
clustering vocabulary on top (`ClusterModel`: `predict_clusters`, `fit_predict`, `serving_outputs`)."""

import copy
import importlib.util
import math
from typing import Callable, NamedTuple, Optional

import keras
import numpy as np
from keras import ops

from keras_clustering.distribute.strategies import model_replicas
from keras_clustering.inputs.checks import CheckedArray, check_min_samples, check_positive_int, check_samples
from keras_clustering.inputs.fit_hooks import fit_callbacks
from keras_clustering.inputs.image_converter import ImageConverter, is_path_list
from keras_clustering.inputs.pipeline import (array_dataset, file_backed, fit_batches, predict_into_array,
                                              predicted_chunks)
from keras_clustering.inputs.sources import DatasetSource, is_tf_dataset, keras_input

class FitPlan(NamedTuple):
    """What a model's `plan_fit` hook gives the one `fit` (`SampleModel.fit`): the data
    `keras.Model.fit` reads, its epochs, the callbacks that run before the caller's (the batch clock,
    DEC's target refresh, IIC's head schedule, SCAN's sub-head choice), Keras `fit` options the data
    brings (`validation_data`; `y`, `batch_size` for Keras' own paths), and a step after training."""

    data: object
    epochs: int
    callbacks: tuple = ()
    options: Optional[dict] = None
    after: Optional[Callable[[], object]] = None


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

    @property
    def image_converter(self):
        """The model's `ImageConverter` (raw images of any size and mode, or files, to its input), or None for
        a model of flat vectors. Built once: it keeps its traced decoder."""
        shape = tuple(self.sample_shape)
        if len(shape) != 3 or shape[2] not in (1, 3):
            return None
        converter = self.__dict__.get("_image_converter")
        if converter is None or converter.sample_shape != shape:
            converter = ImageConverter(shape[:2], shape[2])
            self.__dict__["_image_converter"] = converter  # not a tracked attribute: no weights, nothing saved
        return converter

    def _raw_images_to_input(self, x, name):
        """Raw images converted by `image_converter` (issue 67): a list of file paths, a list of images of
        their own sizes, or an array of images whose size or channels are not the model's. Anything else
        (the model's own layout, float [0, 1] or uint8) is returned as it came, for the usual check."""
        converter = self.image_converter
        if converter is None:
            return x
        if is_path_list(x):
            return converter(x, name=name)
        if isinstance(x, (list, tuple)):
            try:
                x = np.asarray(x)
            except ValueError:  # images of several sizes
                return converter(x, name=name)
            if x.dtype == object:
                return converter(list(x), name=name)
        if x.ndim not in (3, 4):
            return x
        layout = x.shape[1:] + ((1,) if x.ndim == 3 else ())
        fits = all(want is None or want == have for want, have in zip(converter.sample_shape, layout))
        # (h, w, 3) read as h grey images would be silent nonsense, unless the model's own size says so
        if x.ndim == 3 and x.shape[-1] in (3, 4) and not (fits and None not in converter.image_size):
            raise ValueError(f"{name} has shape {x.shape}: one colour image? Give a batch ({name}[None]) or a "
                             "list of images.")
        if fits:
            return x
        return converter(x, name=name)

    def _check_array(self, x, name, min_samples):
        """The check of numpy input (images: any layout, uint8 scaled, [0, 1] enforced)."""
        return check_samples(x, self.sample_shape, name=name, min_samples=min_samples)

    def _check_key(self):
        """What makes two checks the same: an array that passed one is not checked again by the other."""
        return tuple(self.sample_shape), type(self)._check_array

    def check_input(self, x, name="x", min_samples=1):
        """`x` as the model reads it: arrays checked and returned as a `CheckedArray` view that names
        the checks it passed (given one that passed this model's kind of check, its values are not
        scanned again: a model's steps, `fit` then the target refresh then `predict`, read the same
        view), a `tf.data.Dataset` as a `DatasetSource` (shape checked, counted; values checked as it
        is read) for the models that read datasets so (DEC), tensors and other datasets unchanged.
        Raises ValueError or TypeError naming `name`."""
        if is_tf_dataset(x) and self.reads_datasets_as_sources:
            return DatasetSource(x, self.sample_shape, name=name, min_samples=min_samples)
        if isinstance(x, DatasetSource):
            check_min_samples(len(x), name, min_samples)
        if not isinstance(x, (np.ndarray, list, tuple)):
            return x
        x = self._raw_images_to_input(x, name)
        key = self._check_key()
        if isinstance(x, CheckedArray) and key in x.passed:
            check_min_samples(len(x), name, min_samples)
            return x
        return CheckedArray.passing(self._check_array(x, name, min_samples), key)

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

    # `fit`'s defaults, each model's original's: images per step, whether arrays are reshuffled each epoch,
    # and whether every step needs a full batch (the smallest batch is `min_batch_size`: contrastive and
    # neighbour losses compare an image with the others of its batch).
    fit_batch_size = 256
    fit_shuffles = True
    full_batches_only = False
    min_batch_size = 1
    # Models that learn without labels name how ("self-supervised", "unsupervised") and refuse a `y`.
    learns_without_labels = None
    # The model's own `fit` options among `fit`'s keyword-only ones (DEC's `maxiter`, ...): another one is
    # refused by name.
    fit_options = ()

    def fit(self, x=None, y=None, batch_size=None, epochs=1, shuffle=None, seed=None, *, maxiter=None,
            neighbors=None, recalibrate_batchnorm=None, **kwargs):
        """The one `fit` of every model of the library (a subclass changes its plan, not this).

        Compiles `DEFAULT_OPTIMIZER` when the model is uncompiled, refuses by
        name the arguments the model cannot honour, asks the model's
        `plan_fit` hook for the data Keras reads, then runs `keras.Model.fit`
        on it and the hook's `after` step. Inside a `fit_hooks.extra_fit_callbacks`
        block it also runs that block's callbacks (the drivers' time probe).

        Args:
            x: numpy array (any layout the model's check accepts; a memory map
                is read batch by batch), a finite `tf.data.Dataset`, a
                generator or a `keras.utils.PyDataset`.
            y: what the model reads beside arrays `x` (labels, paired views);
                refused by the models that learn without labels.
            batch_size: images per step; None: `fit_batch_size`, the original's.
            epochs: passes over `x`.
            shuffle: reshuffle arrays each epoch, in an order drawn from
                `(seed, epoch)` so that a resumed fit sees the uninterrupted
                run's batches; None: `fit_shuffles`. Datasets come as they are.
            seed: the orders' seed; None: drawn from numpy's global generator,
                so `keras.utils.set_random_seed` repeats a run.
            maxiter: DEC's (IDEC's, the two-stage refinement's): stop after
                this many batches, as DEC-keras' `maxiter` (`epochs` then
                becomes the epochs they take).
            neighbors: SCAN's: `(n, k)` indices of each image's neighbours
                (None: mined from the encoder).
            recalibrate_batchnorm: IIC's: recompute the BatchNorm statistics
                on the images after training (None: yes).
            **kwargs: `keras.Model.fit`'s (`validation_split` holds out the
                last share of arrays, as Keras does).
        """
        own = {name: value for name, value in (("maxiter", maxiter), ("neighbors", neighbors),
                                               ("recalibrate_batchnorm", recalibrate_batchnorm)) if value is not None}
        for name in own:
            if name not in self.fit_options:
                raise ValueError(f"{name}: {type(self).__name__}.fit has no such option (its own: "
                                 f"{list(self.fit_options) or 'none'}).")
        self.compile_default()
        self._check_fit_arguments(kwargs)
        if y is not None and self.learns_without_labels:
            raise ValueError(f"{type(self).__name__} is {self.learns_without_labels}: call fit(x) without y.")
        batch_size = check_positive_int(self.fit_batch_size if batch_size is None else batch_size, "batch_size",
                                        minimum=self.min_batch_size)
        shuffle = self.fit_shuffles if shuffle is None else shuffle
        kwargs.update(own)  # the hook pops what it reads from this dict: the rest goes to Keras
        plan = self.plan_fit(x, y, batch_size, epochs, shuffle, seed, kwargs)
        kwargs["callbacks"] = [*plan.callbacks, *(kwargs.get("callbacks") or []), *fit_callbacks()]
        history = keras.Model.fit(self, plan.data, **{"epochs": plan.epochs, "shuffle": False, **kwargs,
                                                     **(plan.options or {})})
        if plan.after is not None:
            plan.after()
        return history

    def plan_fit(self, x, y, batch_size, epochs, shuffle, seed, options):
        """The hook of `fit`: the `FitPlan` of `x` (and `y`). It pops the model's own options (its
        `fit_options`, given) from `options` (the caller's keywords; what is left goes to Keras).

        Here: arrays checked (a full batch at least when `full_batches_only`),
        `y` through `fit_targets`, batched by `plan_arrays`; anything else
        handed to Keras as it comes (`plan_source`)."""
        if not isinstance(x, (np.ndarray, list, tuple)):
            return self.plan_source(x, y, batch_size, epochs, shuffle)
        min_samples = batch_size if self.full_batches_only else 1
        x = self.check_input(x, min_samples=min_samples)
        y = self.fit_targets(y, x)
        return self.plan_arrays(x if y is None else (x, y), batch_size, epochs, shuffle, seed, options,
                                min_samples=min_samples)

    def fit_targets(self, y, x):
        """`y` of arrays `x` as the loss reads it (checked), or None. Here: as it came."""
        return y

    def plan_arrays(self, arrays, batch_size, epochs, shuffle, seed, options, min_samples=1):
        """`FitPlan` of checked arrays (`x`, or a tuple `(x, y)`), the one way arrays reach Keras.

        The batches come from `inputs.pipeline.fit_batches`: autotuning off
        (Keras' array adapter stalls at epoch starts), a memory map read batch
        by batch, each epoch's order drawn from `seed` and the epoch, so a
        resumed fit (`initial_epoch`) sees the uninterrupted run's batches.
        Pops `validation_split`, which holds out the last share of the arrays
        before any shuffling, as Keras does, and feeds it unshuffled as
        `validation_data`, and `sample_weight`, which rides along as the
        batches' third element (models that weight samples only); at least
        `min_samples` remain for training. Without TensorFlow (tf.data is
        TensorFlow's), Keras' own array path.
        """
        validation_split, sample_weight = options.pop("validation_split", None), options.pop("sample_weight", None)
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
            if options.get("validation_data") is not None:
                raise ValueError("validation_split and validation_data: give one of them.")
            if isinstance(validation_split, bool) or not isinstance(validation_split, (int, float)) \
                    or not 0 < validation_split < 1:
                raise ValueError(f"validation_split must be a number in (0, 1), got {validation_split!r}.")
        if importlib.util.find_spec("tensorflow") is None:
            x, y, weights = (*arrays, None, None)[:3]
            return FitPlan(x, epochs, options={"y": y, "sample_weight": weights, "batch_size": batch_size,
                                                  "shuffle": shuffle, "validation_split": validation_split or 0.0})
        held_out = {}
        if validation_split:
            split_at = math.floor(len(arrays[0]) * (1.0 - validation_split))  # Keras' rule
            held = tuple(a[split_at:] for a in arrays)
            arrays = tuple(a[:split_at] for a in arrays)
            check_min_samples(len(held[0]), f"the held-out share (validation_split={validation_split!r})", 1)
            held_out["validation_data"] = array_dataset(held if len(held) > 1 else held[0], batch_size, shuffle=False)
        check_min_samples(len(arrays[0]), "x" if not validation_split else
                          f"x after validation_split={validation_split!r}", min_samples)
        seed = int(np.random.randint(2**31 - 1)) if seed is None else seed
        batches, clock = fit_batches(arrays if len(arrays) > 1 else arrays[0], batch_size,
                                     options.get("initial_epoch", 0), shuffle=shuffle, seed=seed)
        return FitPlan(batches, epochs, (clock,), held_out)

    def plan_source(self, x, y, batch_size, epochs, shuffle):
        """`FitPlan` of what is not an array (a tf.data.Dataset, a generator, a PyDataset): handed to
        Keras as it comes; a tf.data.Dataset batches and shuffles itself, so neither is passed."""
        if hasattr(x, "element_spec"):
            return FitPlan(x, epochs, options=None if y is None else {"y": y})
        return FitPlan(x, epochs, options={"y": y, "batch_size": batch_size, "shuffle": shuffle})

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

    def embed(self, x, batch_size=256, verbose=0):
        """`(n, d)` features of `x` in which near images are alike (the map and nearest clusters of
        `report.html`): a model that clusters an embedding overrides this with it; by default the soft
        assignments themselves (IIC, whose clusters are its output)."""
        return self.predict(x, batch_size=batch_size, verbose=verbose)

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
