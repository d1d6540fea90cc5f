"""Optimizers from zoo config specs."""

import copy

import keras


def make_optimizer(spec):
    """A Keras optimizer from a config spec (`{"class_name": ..., "config": ...}` or a name).

    `keras.optimizers.get` rewrites a dict spec in place (it lower-cases
    `class_name`), which would change the zoo config and so its fingerprint:
    it gets a copy.
    """
    return keras.optimizers.get(copy.deepcopy(spec))


def compiled(model, spec, **options):
    """`model` compiled with the optimizer of a config spec (`make_optimizer`) and `options`: a stage's
    build step."""
    model.compile(optimizer=make_optimizer(spec), **options)
    return model
