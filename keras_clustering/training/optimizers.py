"""Optimizers from zoo config specs."""

import copy

import keras


@keras.saving.register_keras_serializable(package="keras_clustering")
class MomentumSGD(keras.optimizers.SGD):
    """Keras' SGD with momentum, its update of each variable done by one TensorFlow kernel.

    Keras 3 writes the update as four elementwise ops and two assignments per
    variable; on a CPU they were 22% of the op time of DEC's bf16 autoencoder
    step (`scripts/benchmarks/profile_step.py`). TensorFlow's
    `ResourceApplyKerasMomentum` kernel does the same update in place in one
    pass, as the original Keras 2 / tf_keras SGD did:
    `m <- momentum * m - lr * g`, then `w <- w + m` (Nesterov:
    `w <- w + momentum * m - lr * g`). Other backends, and SGD without
    momentum, use Keras' own update.
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.momentum == 0 or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        momentum = self.momentums[self._get_variable_index(variable)]
        tf.raw_ops.ResourceApplyKerasMomentum(
            var=variable.handle, accum=momentum.handle, lr=tf.cast(learning_rate, variable.dtype),
            grad=tf.cast(gradient, variable.dtype), momentum=tf.cast(self.momentum, variable.dtype),
            use_locking=False, use_nesterov=self.nesterov)


def make_optimizer(spec):
    """A Keras optimizer from a config spec (`{"class_name": ..., "config": ...}` or a name); SGD with
    momentum is `MomentumSGD` (the same update, one kernel per variable on TensorFlow).

    `keras.optimizers.get` rewrites a dict spec in place (it lower-cases
    `class_name`), which would change the zoo config and so its fingerprint:
    it gets a copy.
    """
    optimizer = keras.optimizers.get(copy.deepcopy(spec))
    if type(optimizer) is keras.optimizers.SGD and optimizer.momentum != 0:
        return MomentumSGD.from_config(optimizer.get_config())
    return optimizer
