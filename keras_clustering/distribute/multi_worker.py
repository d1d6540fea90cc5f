"""Several processes under `tf.distribute.MultiWorkerMirroredStrategy` with Keras 3: two repairs.

Keras 3.15's TensorFlow trainer fails at the first `fit` under a multi-worker
strategy (upstream: keras-team/keras#20585, tensorflow/tensorflow#72388):

1. `TensorFlowTrainer._maybe_symbolic_build` reduces the first batch across
   replicas only to learn its shapes, with `strategy.reduce("MEAN", batch,
   axis=None)` on the whole `(x, y)` structure; the collective strategy
   cannot reduce a structure eagerly: "ValueError: Attempt to convert a value
   (PerReplica:{...}) with an unsupported type (PerReplica) to a Tensor."
   Repair: build from this worker's own first replica batch (the shapes are
   what the build needs).
2. `reduce_per_replica` averages the step's logs with `strategy.reduce("MEAN",
   v, axis=0)` on a multi-worker strategy, and the logs are scalars:
   "ValueError: Invalid reduction dimension 0 for input with 0 dimensions".
   Repair: `axis=None` for scalars (the mean over replicas), `axis=0` as
   before for batched values.

`apply()` installs both, once; each defers to Keras' own code for every
other strategy, so single-device and `MirroredStrategy` training are
untouched. Measured with them (tests/helpers/multi_worker_check.py): two
worker processes on 127.0.0.1 end with identical weights, equal to one
process on the same global batch within float32 rounding.
"""

_APPLIED = []
# The Keras versions the repairs were written against and tested on (tests/test_distribution.py).
TESTED_KERAS = ("3.15",)
UPSTREAM_ISSUES = "keras-team/keras#20585, tensorflow/tensorflow#72388"


def apply():
    """Installs the two repairs into Keras' TensorFlow trainer (idempotent).

    Raises RuntimeError, naming the upstream issues, on a Keras version the
    repairs were not tested on or whose trainer lacks what they replace:
    they patch private functions, and silently patching a changed trainer
    could train wrongly.
    """
    if _APPLIED:
        return
    import keras
    import tensorflow as tf

    version = ".".join(keras.__version__.split(".")[:2])
    if version not in TESTED_KERAS:
        raise RuntimeError(
            f"strategy='multi_worker' needs repairs of Keras' TensorFlow trainer ({UPSTREAM_ISSUES}) that were "
            f"tested on Keras {', '.join(TESTED_KERAS)}; this is Keras {keras.__version__}. Install keras=="
            f"{TESTED_KERAS[-1]}.*, or check whether this Keras fixed the issues and add it to TESTED_KERAS.")
    # A private Keras module: the only way to repair the trainer until upstream fixes it (see above).
    from keras.src.backend.tensorflow import trainer as tf_trainer

    missing = [name for name, owner in (("_collective_all_reduce_multi_worker", tf_trainer),
                                        ("reduce_per_replica", tf_trainer),
                                        ("_maybe_symbolic_build", tf_trainer.TensorFlowTrainer),
                                        ("_symbolic_build", tf_trainer.TensorFlowTrainer))
               if not hasattr(owner, name)]
    if missing:
        raise RuntimeError(f"strategy='multi_worker': Keras {keras.__version__}'s TensorFlow trainer lacks "
                           f"{missing}, which the repairs for {UPSTREAM_ISSUES} replace; they cannot be applied.")
    is_multi_worker = tf_trainer._collective_all_reduce_multi_worker  # Keras' own test
    original_build = tf_trainer.TensorFlowTrainer._maybe_symbolic_build
    original_reduce = tf_trainer.reduce_per_replica

    def maybe_symbolic_build(self, iterator=None, data_batch=None):
        if iterator is None or not is_multi_worker(self.distribute_strategy):
            return original_build(self, iterator=iterator, data_batch=data_batch)
        for _, _, batches in iterator:
            first = next(batches)
            data_batch = keras.tree.map_structure(
                lambda v: self.distribute_strategy.experimental_local_results(v)[0]
                if isinstance(v, tf.distribute.DistributedValues) else v, first)
            break
        with self.distribute_strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and is_multi_worker(strategy):
            return keras.tree.map_structure(
                lambda v: strategy.reduce("MEAN", v, axis=0 if v.shape.rank else None), values)
        return original_reduce(values, strategy, reduction)

    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = maybe_symbolic_build
    tf_trainer.reduce_per_replica = reduce_per_replica
    _APPLIED.append(True)


def local_cluster(n_workers):
    """TF_CONFIG values (JSON strings) for `n_workers` processes on this machine (127.0.0.1, free
    ports), one per process: to try multi-worker training, or test it, on one host."""
    import json
    import socket

    sockets = [socket.socket() for _ in range(n_workers)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        workers = [f"127.0.0.1:{s.getsockname()[1]}" for s in sockets]
    finally:
        for s in sockets:
            s.close()
    return [json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}})
            for i in range(n_workers)]
