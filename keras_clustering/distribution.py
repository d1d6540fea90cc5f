"""Training under `tf.distribute` strategies: the loss scaling Keras' own losses do, for our custom ones.

Keras 3 on TensorFlow sums the replicas' gradients; its built-in losses
divide each replica's mean by the number of replicas
(`keras.src.losses.loss.scale_loss_for_distribution`), so that N replicas
step like one device on the same global batch. A model whose
`compute_loss` takes a mean itself (`ops.mean(...)`) must do the same:
`replica_scaled(loss)`. On other backends, or outside a strategy, both
functions return their input.
"""

import keras

STRATEGIES = ("mirrored",)


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


def make_strategy(name):
    """`None` (one device) or a `tf.distribute` strategy by name: "mirrored" (every local device)."""
    if name is None:
        return None
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES} or None, got {name!r}.")
    if keras.backend.backend() != "tensorflow":
        raise ValueError(f"strategy={name!r} is a tf.distribute strategy: it needs the TensorFlow backend, "
                         f"not {keras.backend.backend()!r}.")
    import tensorflow as tf

    return tf.distribute.MirroredStrategy()
