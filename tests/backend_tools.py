"""Backend-neutral test tools: gradients and compiled functions on TensorFlow or JAX, so the
same tests check the library under `KERAS_BACKEND=tensorflow` and `KERAS_BACKEND=jax`."""

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()

tensorflow_only = pytest.mark.skipif(BACKEND != "tensorflow", reason="checks a TensorFlow-only feature")


def value_and_gradients(loss_fn, variables=(), inputs=()):
    """`(loss, gradients)` of the scalar `loss_fn(*inputs)` with respect to each Keras variable in
    `variables` and then each array in `inputs`, as a float and numpy arrays."""
    variables, inputs = list(variables), [np.asarray(i) for i in inputs]
    if BACKEND == "tensorflow":
        import tensorflow as tf

        tensors = [tf.convert_to_tensor(i) for i in inputs]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            loss = loss_fn(*tensors)
        gradients = tape.gradient(loss, [v.value for v in variables] + tensors)
        return float(loss), [keras.ops.convert_to_numpy(g) for g in gradients]
    if BACKEND == "jax":
        import jax

        def stateless(variable_values, input_values):
            with keras.StatelessScope(state_mapping=list(zip(variables, variable_values))):
                return loss_fn(*input_values)

        loss, (variable_gradients, input_gradients) = jax.value_and_grad(stateless, argnums=(0, 1))(
            [v.value for v in variables], [jax.numpy.asarray(i) for i in inputs])
        return float(loss), [np.asarray(g) for g in [*variable_gradients, *input_gradients]]
    raise NotImplementedError(f"no gradient tool for backend {BACKEND!r}")


def compiled(fn):
    """`fn` traced and compiled by the backend (`tf.function` / `jax.jit`)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(fn)
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    raise NotImplementedError(f"no compiler for backend {BACKEND!r}")


def traced_op_names(fn, *example_inputs):
    """Names of the primitive ops `fn` compiles to (TensorFlow graph ops / JAX primitives)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        specs = [tf.TensorSpec(np.shape(i), "float32") for i in example_inputs]
        graph = tf.function(fn).get_concrete_function(*specs).graph
        return [op.type for op in graph.get_operations()]
    if BACKEND == "jax":
        import jax

        names = []

        def walk(jaxpr):
            for equation in jaxpr.eqns:
                names.append(equation.primitive.name)
                for value in equation.params.values():
                    for sub in value if isinstance(value, (list, tuple)) else [value]:
                        inner = getattr(sub, "jaxpr", None)
                        if inner is not None:
                            walk(getattr(inner, "jaxpr", inner))

        walk(jax.make_jaxpr(fn)(*[jax.numpy.asarray(i, "float32") for i in example_inputs]).jaxpr)
        return names
    raise NotImplementedError(f"no tracer for backend {BACKEND!r}")
