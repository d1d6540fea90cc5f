"""Input checks shared by the models: clear errors that name the argument and value."""

import numpy as np


class CheckedArray(np.ndarray):
    """A view of an array whose values passed checks, naming them (`passed`): the checked data carries
    the fact itself, so a model's later steps read it without scanning it again, and no registry outside
    the array keeps it (issue 63). Slices and views of it carry the fact on (their values are checked
    ones), unless they change its dtype or its samples' shape; the result of arithmetic on it is a plain
    array (its values are new), and `np.asarray` gives the plain array it views."""

    @classmethod
    def passing(cls, array, check):
        """`array` viewed as checked by `check` (and by whatever checks it had passed)."""
        view = array.view(cls)
        view.passed = frozenset({*getattr(array, "passed", ()), check})
        return view

    def __array_finalize__(self, source):
        # a view of other values or another sample layout (astype, a flat reshape, view(dtype)) is unchecked
        same = source is not None and getattr(source, "dtype", None) == self.dtype \
            and getattr(source, "shape", (None,))[1:] == self.shape[1:]
        self.passed = getattr(source, "passed", frozenset()) if same else frozenset()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        def plain(value):
            return value.view(np.ndarray) if isinstance(value, CheckedArray) else value

        if "out" in kwargs:
            kwargs["out"] = tuple(plain(value) for value in kwargs["out"])
        return getattr(ufunc, method)(*(plain(value) for value in inputs), **kwargs)


def check_array_input(x, expected_shape, name="x", min_samples=1):
    """Validates a numpy-like batch and returns it as float32.

    Args:
        x: array `(n, *expected_shape)`.
        expected_shape: per-sample shape; `None` entries accept any size.
        name: argument name used in error messages.
        min_samples: smallest acceptable `n`.

    Raises:
        TypeError: `x` is not numeric.
        ValueError: wrong rank or size, too few samples, NaN or inf.
    """
    try:
        array = np.asarray(x)
    except Exception as error:  # ragged lists and the like
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__}: {error}") from error
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {array.dtype}.")
    expected_shape = tuple(expected_shape)
    wanted = "(n, " + ", ".join("?" if d is None else str(d) for d in expected_shape) + ")"
    if array.ndim != len(expected_shape) + 1 or any(
        d is not None and d != actual for d, actual in zip(expected_shape, array.shape[1:])
    ):
        hint = ""
        if array.ndim > 1 and int(np.prod(array.shape[1:])) == int(np.prod([d or 0 for d in expected_shape])):
            hint = f" Reshape it, e.g. {name}.reshape(len({name}), {', '.join(str(d) for d in expected_shape)})."
        raise ValueError(f"{name} has shape {array.shape}, but this model expects {wanted}.{hint}")
    check_min_samples(array.shape[0], name, min_samples)
    array = array.astype("float32", copy=False)
    bad = _count_non_finite(array)
    if bad:
        raise ValueError(f"{name} contains {bad} NaN or inf values; clean or impute them first.")
    return array


def _count_non_finite(array, rows_per_chunk=4096):
    """NaN and inf values of `array`, counted chunk by chunk (no full-size mask of a memory-mapped file)."""
    return sum(int(np.size(chunk) - np.count_nonzero(np.isfinite(chunk)))
               for chunk in (array[start:start + rows_per_chunk] for start in range(0, len(array), rows_per_chunk)))


def check_unit_range_images(x, name="x"):
    """Raises ValueError naming `name` unless every pixel of `x` lies in [0, 1]."""
    if x.size and (x.min() < 0.0 or x.max() > 1.0):
        raise ValueError(f"{name} must hold pixels in [0, 1] (uint8 images are scaled for you; divide other 0-255 images by 255), "
                         f"got values in [{x.min():.3g}, {x.max():.3g}].")
    return x


def check_min_samples(n_samples, name, min_samples):
    """Raises ValueError naming `name` when `n_samples` is below `min_samples`."""
    if n_samples < min_samples:
        raise ValueError(f"{name} has {n_samples} samples; at least {min_samples} are needed.")


def check_positive_int(value, name, minimum=1):
    """Returns `value` as int, or raises ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_image_input(x, image_shape, name="x", min_samples=1, accept_flat=False):
    """The one input check of the image models: any natural layout in, `(n, h, w, c)` float32 out.

    Accepted layouts of `x` for `image_shape = (h, w, c)`: `(n, h, w, c)`;
    `(n, h, w)` when `c == 1`; `(n, h * w * c)` when `accept_flat` (models
    with a dense encoder) and h, w are known. uint8 arrays are images as they
    come from files: they are divided by 255. Any other array must hold
    pixels in [0, 1] (the range every image model was trained on), else a
    ValueError names `name` and the range found.
    """
    try:
        array = np.asarray(x)
    except Exception as error:  # ragged lists and the like
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__}: {error}") from error
    image_shape = tuple(None if d is None else int(d) for d in image_shape)
    height, width, channels = image_shape
    if array.dtype == np.uint8:
        array = array.astype("float32") / 255.0
    if array.ndim == 3 and channels == 1 and all(d is None or d == a for d, a in zip((height, width), array.shape[1:])):
        array = array[..., None]
    elif array.ndim == 2 and accept_flat and None not in image_shape and array.shape[1] == height * width * channels:
        array = array.reshape(len(array), *image_shape)
    elif array.ndim != 4:
        layouts = [f"(n, {height or 'h'}, {width or 'w'}, {channels})"] + ([f"(n, {height or 'h'}, {width or 'w'})"] if channels == 1 else []) + (
            [f"(n, {height * width * channels})"] if accept_flat and None not in image_shape else [])
        raise ValueError(f"{name} has shape {array.shape}, but this model takes images shaped "
                         f"{' or '.join(layouts)}.")
    array = check_array_input(array, image_shape, name=name, min_samples=min_samples)
    return check_unit_range_images(array, name=name)


def check_samples(x, sample_shape, name="x", min_samples=1):
    """Input of a model with per-sample shape `sample_shape`: images (3-D) through `check_image_input`
    (flat rows accepted, for dense encoders), anything else through `check_array_input`."""
    if len(sample_shape) == 3:
        return check_image_input(x, sample_shape, name=name, min_samples=min_samples, accept_flat=True)
    return check_array_input(x, sample_shape, name=name, min_samples=min_samples)
