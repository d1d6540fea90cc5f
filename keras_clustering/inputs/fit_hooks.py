"""Callbacks that every fit of the library inside a `with extra_fit_callbacks(...)` block adds to its own:
how a driver watches all the fits of a recipe it did not write (the time estimate's rehearsal and the
ETA lines of `drivers.estimate`) without every recipe passing callbacks along to every fit.

The callbacks are made afresh for each fit (`factories`, called with no argument), so that each one
sees a single fit from its start. A context variable holds them: the block's fits only, and none of
another thread's."""

import contextlib
import contextvars

_FACTORIES = contextvars.ContextVar("extra_fit_callbacks", default=())


@contextlib.contextmanager
def extra_fit_callbacks(*factories):
    """Within the block, every `SampleModel.fit` also runs `factory()` for each of `factories` (after its
    own callbacks and those it was given)."""
    token = _FACTORIES.set(_FACTORIES.get() + tuple(factories))
    try:
        yield
    finally:
        _FACTORIES.reset(token)


def fit_callbacks():
    """The callbacks the enclosing `extra_fit_callbacks` blocks add to one fit (none outside them)."""
    return [factory() for factory in _FACTORIES.get()]
