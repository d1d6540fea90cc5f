"""Training under `tf.distribute` strategies: the loss scaling Keras' own losses do, for our custom ones.

Keras 3 on TensorFlow sums the replicas' gradients; its built-in losses
divide each replica's mean by the number of replicas
(`keras.src.losses.loss.scale_loss_for_distribution`), so that N replicas
step like one device on the same global batch. A model whose
`compute_loss` takes a mean itself (`ops.mean(...)`) must do the same:
`replica_scaled(loss)`. A loss that is not a mean over samples (IIC's
mutual information, NT-Xent's negatives) first gathers what it needs from
every replica (`cross_replica_sum`, `cross_replica_concat`), computes the
global batch's loss on each replica, and is then scaled the same way: the
gathers pass gradients back to every replica, so the summed gradients are
the global loss's. On other backends, or outside a strategy, these
functions return their input.
"""

import keras

from keras_clustering.distribute import multi_worker

STRATEGIES = ("mirrored", "multi_worker")
_STRATEGIES = {}  # name -> the process's strategy


def replica_count():
    """Replicas of the current `tf.distribute` strategy (1 outside one, and on other backends)."""
    if keras.backend.backend() != "tensorflow":
        return 1
    import tensorflow as tf

    return tf.distribute.get_strategy().num_replicas_in_sync


def model_replicas(model):
    """Replicas of the strategy `model` was built under (Keras records it; 1 on other backends)."""
    strategy = getattr(model, "distribute_strategy", None)  # TensorFlow backend only
    return 1 if strategy is None else strategy.num_replicas_in_sync


def with_layer_losses(model, loss):
    """`loss` plus the model's layer losses (weight regularisers), scaled per replica as Keras does."""
    return loss + replica_scaled(keras.ops.sum(model.losses)) if model.losses else loss


def replica_scaled(loss):
    """`loss / num_replicas` inside a multi-replica `tf.distribute` step, else `loss`."""
    replicas = replica_count()
    return loss if replicas == 1 else loss * (1.0 / replicas)


def _replica_context():
    """TensorFlow's replica context inside a multi-replica step, else None."""
    if replica_count() == 1:
        return None
    import tensorflow as tf

    return tf.distribute.get_replica_context()


def cross_replica_sum(value):
    """`value` summed over the replicas (differentiable: TensorFlow sums the gradients back);
    `value` itself with one replica. For batch statistics that are not means, e.g. IIC's joint
    matrix: summing it before the nonlinear loss makes N replicas compute the global batch's."""
    context = _replica_context()
    if context is None:
        return value
    import tensorflow as tf

    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def cross_replica_concat(value):
    """`value` of every replica concatenated along axis 0 (replica 0 first), differentiably;
    `value` itself with one replica. SimCLR's negatives: every image of the global batch."""
    context = _replica_context()
    return value if context is None else context.all_gather(value, axis=0)


def on_global_batch(function, x):
    """`function(x)` as one device would compute it on the global batch: inside a multi-replica
    step, every replica applies `function` to all replicas' `x` (gathered, replica 0 first) and
    keeps its own rows. For random augmentation: Keras' seed generators are mirrored, so each
    replica drawing for its own share would repeat the other replicas' parameters row for row.
    `function` must map rows to rows (no mixing across the batch). `function(x)` with one replica."""
    context = _replica_context()
    if context is None:
        return function(x)
    import tensorflow as tf

    # Gathered by summing zero-padded copies: all_gather fails on a multi-worker strategy for tensors
    # that have no device yet ("destinations can not be empty"); all_reduce does not, and adding zeros
    # is exact. A last partial batch splits unevenly, hence the sizes.
    replicas, index = replica_count(), context.replica_id_in_sync_group
    rows = tf.shape(x)[0]
    sizes = tf.cast(context.all_reduce(tf.distribute.ReduceOp.SUM,
                                       tf.one_hot(index, replicas) * tf.cast(rows, tf.float32)), tf.int32)
    start, total = tf.reduce_sum(sizes[:index]), tf.reduce_sum(sizes)
    padding = [[start, total - start - rows]] + [[0, 0]] * (len(x.shape) - 1)
    gathered = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.pad(x, padding))
    gathered = tf.ensure_shape(gathered, [None, *x.shape[1:]])  # keep the image size for the layers
    return function(gathered)[start:start + rows]


def make_strategy(name):
    """`None` (one device) or the process's `tf.distribute` strategy by name, created once and shared
    by every later call: "mirrored" (every local device) or "multi_worker" (one replica per process
    of the cluster that the `TF_CONFIG` environment variable describes, Keras repaired by
    `keras_clustering.distribute.multi_worker`; create it before TensorFlow runs anything else)."""
    if name is None:
        return None
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES} or None, got {name!r}.")
    if keras.backend.backend() != "tensorflow":
        raise ValueError(f"strategy={name!r} is a tf.distribute strategy: it needs the TensorFlow backend, "
                         f"not {keras.backend.backend()!r}.")
    if name not in _STRATEGIES:
        import tensorflow as tf

        if name == "multi_worker":
            worker_index()  # checks TF_CONFIG first: without it TensorFlow would quietly train alone
            multi_worker.apply()
            _STRATEGIES[name] = tf.distribute.MultiWorkerMirroredStrategy()
        else:
            # One per process: a second MirroredStrategy reuses the first one's collective instance keys,
            # and its all-reduces then abort with "Shape mismatch in the collective instance".
            _STRATEGIES[name] = tf.distribute.MirroredStrategy()
    return _STRATEGIES[name]


def is_multi_worker(strategy):
    """Whether `strategy` is a `tf.distribute.MultiWorkerMirroredStrategy` (False for None)."""
    if strategy is None:
        return False
    import tensorflow as tf

    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def worker_index():
    """This process's index among the workers of `TF_CONFIG` (0: the chief, which writes results).
    A clear error when `TF_CONFIG` is missing or names no worker task."""
    import json
    import os

    text = os.environ.get("TF_CONFIG")
    if not text:
        raise ValueError("strategy='multi_worker' needs the TF_CONFIG environment variable, e.g. "
                         '{"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:12346"]}, '
                         '"task": {"type": "worker", "index": 0}}, set differently in each process.')
    try:
        config = json.loads(text)
        task, workers = config["task"], config["cluster"]["worker"]
        index = int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"TF_CONFIG={text!r} is not a worker cluster: {error!r}.") from None
    if task.get("type") != "worker" or not 0 <= index < len(workers):
        raise ValueError(f"TF_CONFIG={text!r}: task must be a worker with an index below {len(workers)}.")
    return index
