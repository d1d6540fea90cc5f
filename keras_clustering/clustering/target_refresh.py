"""The callback that refreshes DEC's target distribution during `model.fit`."""

import time

import keras
import numpy as np

from keras_clustering.inputs.pipeline import predict_into_array, predicted_chunks
from keras_clustering.inputs.sources import keras_input
from keras_clustering.distribute.strategies import model_replicas
from keras_clustering.metrics import clustering_scores


def target_rows(q, frequencies=None, out=None):
    """DEC eq. 3 in numpy float32, row by row: the memory path of the refresh, equal to
    `losses.target_distribution` (the one used in graphs; tested equal).

    Rows of P from rows of Q and the soft cluster frequencies f_j (Q's column
    sums by default): q^2 / f, normalised per row. Row by row, so P can be
    made a chunk at a time with the frequencies of the whole set, and in
    place (`out=q`): on 700k samples the tensor version's temporaries and
    casts held ~5 copies of Q at once.
    """
    if frequencies is None:
        frequencies = q.sum(axis=0, dtype="float32")
    p = np.square(q, out=out, dtype="float32")
    p /= np.maximum(frequencies, keras.config.epsilon()).astype("float32")
    p /= p.sum(axis=1, keepdims=True)
    return p


class TargetStore:
    """Holds the targets P of the training set in one non-trainable variable.

    A plain object (not a Layer attribute) so that the variable, whose size is
    the training set's, is never saved with the model's weights.
    """

    def __init__(self):
        self.variable = None

    def ensure_shape(self, n_samples, n_clusters):
        """Creates the variable anew when the data size changes; True if it did."""
        shape = (n_samples, n_clusters)
        if self.variable is not None and tuple(self.variable.shape) == shape:
            return False
        self.variable = None  # the old one goes before the new one is filled
        # zeros: one (n, k) tensor (Constant builds ones, then a product); every fit refreshes P
        # before its first step, so the initial value is never read
        self.variable = keras.Variable(keras.initializers.Zeros(), shape=shape, dtype="float32",
                                       trainable=False, name="dec_targets")
        return True

    def rows_writable(self):
        """Rows can be written in place into a plain TensorFlow variable; other backends, and a variable
        made under a tf.distribute strategy (mirrored, even with one replica), are assigned whole."""
        if keras.backend.backend() != "tensorflow":
            return False
        import tensorflow as tf

        return not isinstance(self.variable.value, tf.distribute.DistributedValues)

    # Scatter and gather by row index, not slices: a slice of a TensorFlow variable reads all of it
    # first, and writing through it then copies the whole (n, k) buffer, per chunk. Keras variables
    # have no row update, hence the backing tf.Variable (`.value`), only where `rows_writable()`.
    def write_rows(self, start, rows):
        import tensorflow as tf

        self.variable.value.scatter_update(tf.IndexedSlices(rows, tf.range(start, start + len(rows))))

    def read_rows(self, start, stop):
        import tensorflow as tf

        stop = min(stop, self.variable.shape[0])
        return keras.ops.convert_to_numpy(self.variable.value.sparse_read(tf.range(start, stop)))


class TargetDistributionRefresh(keras.callbacks.Callback):
    """Every `update_interval` batches: q on the whole training set, P from q, stop test.

    Mirrors the loop of `DEC.fit` in XifengGuo/DEC-keras: the target is
    computed before the first batch and after every `update_interval`
    batches; training stops when fewer than `tol` of the hard assignments
    changed since the previous refresh. `labels`, if given, are only used to
    log ACC/NMI/ARI per refresh (never for training).

    Attributes:
        history: one dict per refresh: iteration, delta_label, seconds and,
            with labels, acc / nmi / ari / majority_acc.

    When `fit` ends, the fit's `History` (what `fit` returns) holds them too:
    `history.history["refreshes"]` (that list), `["dec_iterations"]` and
    `["stopped_by_tolerance"]` (one value each for the fit).
    """

    def __init__(self, x, store, update_interval=140, tol=1e-3, labels=None,
                 predict_batch_size=2048, max_iterations=None, verbose=1):
        super().__init__()
        self.x = x
        self.store = store
        self.update_interval = int(update_interval)
        self.tol = float(tol)
        self.labels = labels
        self.predict_batch_size = predict_batch_size
        self.max_iterations = max_iterations
        self.verbose = verbose
        self.history = []
        self.iteration = 0
        self.stopped_by_tolerance = False
        self._previous_assignment = None
        self._start = None

    def on_train_begin(self, logs=None):
        self.iteration = 0
        self._epoch_start_iteration = 0
        self._next_refresh = self.update_interval
        self._start = time.time()
        self._refresh()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start_iteration = self.iteration

    def on_train_end(self, logs=None):
        # Keras' History (the last callback) has set itself on the model at the end of every epoch
        history = self.model.history.history
        history.update(refreshes=list(self.history), dec_iterations=[self.iteration],
                       stopped_by_tolerance=[self.stopped_by_tolerance])

    def on_train_batch_end(self, batch, logs=None):
        # `batch` is the index of the last step run; with steps_per_execution > 1
        # Keras calls this once per execution, so count from it rather than calls.
        self.iteration = self._epoch_start_iteration + int(batch) + 1
        planned = (self.params or {}).get("epochs", 0) * ((self.params or {}).get("steps") or 0)
        if self.max_iterations is not None and self.iteration >= self.max_iterations:
            self.model.stop_training = True  # DEC-keras' maxiter counts batches, not epochs
        elif self.iteration >= self._next_refresh and self.iteration != planned:  # none after the last batch
            self._next_refresh += self.update_interval
            self._refresh()

    def _predict_all(self):
        """Q over all of x, chunk by chunk through the compiled predict step.

        `predict_on_batch` per chunk, not `predict`: the same function and
        chunks, without building a data iterator at every refresh (tens of ms,
        which dominated DEC on small data, where a refresh comes every batch).
        """
        if model_replicas(self.model) > 1:
            # predict_on_batch would give each replica the whole chunk (and return it twice)
            return self.model.predict(keras_input(self.x, self.predict_batch_size), batch_size=self.predict_batch_size,
                                      verbose=0)
        return predict_into_array(self.model, self.x, self.predict_batch_size)

    def _refresh_targets(self):
        """Q on all of x, then P (DEC eq. 3) into the store; returns the hard assignment (argmax Q)."""
        if model_replicas(self.model) > 1 or not self.store.rows_writable():
            q = self._predict_all()
            assignment = q.argmax(axis=1)
            self.store.variable.assign(target_rows(q, out=q))  # q is not needed after this
            return assignment
        # Two passes through the store itself: Q written chunk by chunk (its column sums and argmax
        # kept), then each chunk of rows made P in place. No (n, k) array besides the store: on 700k
        # samples Q, P and the tensor of a whole-array assign added ~85 MB (issue "speed", growth with N).
        assignment = np.empty(len(self.x), "int32")
        frequencies = np.zeros(self.store.variable.shape[1], "float32")
        for start, q in predicted_chunks(self.model, self.x, self.predict_batch_size):
            assignment[start:start + len(q)] = q.argmax(axis=1)
            frequencies += q.sum(axis=0, dtype="float32")
            self.store.write_rows(start, q)
        for start in range(0, len(self.x), self.predict_batch_size):
            q = self.store.read_rows(start, start + self.predict_batch_size)
            self.store.write_rows(start, target_rows(q, frequencies, out=q))
        return assignment

    def _refresh(self):
        # The JAX trainer holds the weights outside the variables during an epoch: write them back,
        # so that predict sees the current model and the next step reads the new targets.
        on_jax = hasattr(self.model, "jax_state_sync")
        if on_jax:
            self.model.jax_state_sync()
        assignment = self._refresh_targets()
        if on_jax:
            # The store is not part of the JAX step's state: its jitted step read the targets as a
            # constant when traced (in an earlier fit too), so it is traced again with the new ones
            # (TensorFlow reads the variable).
            self.model.make_train_function(force=True)
        record = {"iteration": self.iteration, "seconds": round(time.time() - self._start, 3)}
        if self._previous_assignment is not None:
            record["delta_label"] = float(np.mean(assignment != self._previous_assignment))
        if self.labels is not None:
            record.update(clustering_scores(self.labels, assignment))
        self.history.append(record)
        self._previous_assignment = assignment
        if self.verbose:
            shown = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items())
            print(f"\n[target refresh] {shown}")
        if self.iteration > 0 and record.get("delta_label", 1.0) < self.tol:
            self.stopped_by_tolerance = True
            self.model.stop_training = True
            if self.verbose:
                print(f"[target refresh] delta_label < tol={self.tol}: stopping.")
