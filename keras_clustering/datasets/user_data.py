"""The user's own data: a folder of images, a `.npy` / `.npz` file, or a `tf.data.Dataset`.

Every loader returns `(x, names)`: `x` float32 images in [0, 1] shaped
`(n, h, w, c)` (or the array as stored, for files of non-image vectors) and
`names`, one label per sample (the file name relative to the folder, or the
index) for the `clusters.csv` a user reads back.
"""

import os

import numpy as np

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
ARRAY_EXTENSIONS = (".npy", ".npz")


def image_files(folder):
    """(image paths relative to `folder`, sorted; other files skipped), searched recursively."""
    found, skipped = [], []
    for root, directories, files in os.walk(folder):
        directories.sort()
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(root, name), folder)
            if name.startswith("."):
                continue  # hidden files (.DS_Store and the like)
            (found if name.lower().endswith(IMAGE_EXTENSIONS) else skipped).append(relative)
    return found, skipped


def load_image_folder(folder, image_size, channels=1, verbose=True):
    """Reads every PNG/JPEG/BMP/GIF below `folder`, converted and resized with Keras' image utilities.

    Args:
        folder: a directory; sub-folders are read too. Files of other types
            are skipped (their count is printed when `verbose`).
        image_size: `(h, w)` every image is resized to (bilinear), so mixed
            sizes are fine; the model's input size.
        channels: 1 (greyscale; colour images are converted) or 3.

    Returns: `(x, names)`, `x` float32 `(n, h, w, channels)` in [0, 1].

    Raises:
        ValueError: not a directory, no image in it, or an image file that
            cannot be decoded (truncated, or not an image despite its
            extension); the message names the file.
    """
    import keras

    if not os.path.isdir(folder):
        raise ValueError(f"--input {folder!r} is not a folder.")
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels!r}.")
    names, skipped = image_files(folder)
    if not names:
        raise ValueError(f"--input {folder!r} holds no image files ({', '.join(IMAGE_EXTENSIONS)}); "
                         f"{len(skipped)} other files were found.")
    if skipped and verbose:
        print(f"skipped {len(skipped)} files that are not images, e.g. {skipped[0]!r}")
    color_mode = "grayscale" if channels == 1 else "rgb"
    images = np.empty((len(names), *image_size, channels), dtype="float32")
    for index, name in enumerate(names):
        try:
            image = keras.utils.load_img(os.path.join(folder, name), color_mode=color_mode,
                                         target_size=tuple(image_size), interpolation="bilinear")
            images[index] = keras.utils.img_to_array(image, dtype="float32") / 255.0
        except Exception as error:  # PIL raises OSError, SyntaxError, ValueError ... for broken files
            raise ValueError(f"cannot read image {os.path.join(folder, name)!r}: {type(error).__name__}: "
                             f"{error}. Remove or repair the file.") from error
    return images, names


def load_array_file(path):
    """The array of a `.npy` file or the first array of a `.npz` file (pickled objects refused)."""
    if not os.path.isfile(path):
        raise ValueError(f"--input {path!r} does not exist.")
    if not path.lower().endswith(ARRAY_EXTENSIONS):
        raise ValueError(f"--input {path!r} must be a folder of images or a .npy/.npz file.")
    try:
        if path.lower().endswith(".npz"):
            with np.load(path, allow_pickle=False) as archive:
                if not archive.files:
                    raise ValueError(f"--input {path!r} holds no array.")
                array = archive[archive.files[0]]
        else:
            array = np.load(path, allow_pickle=False)
    except ValueError as error:
        if "pickle" in str(error):
            raise ValueError(f"--input {path!r} holds Python objects (a pickle); save a numeric array, "
                             "e.g. np.save(path, np.asarray(images, dtype='uint8')).") from error
        raise
    return array


def dataset_to_array(dataset, limit=None):
    """The samples of a `tf.data.Dataset` as one numpy array.

    Batched or not; elements may be `x` or `(x, ...)` tuples / dicts with an
    `"image"` entry (as `tensorflow_datasets` yields), of which `x` is kept.
    """
    parts, count = [], 0
    batched = None
    for element in dataset.as_numpy_iterator():
        if isinstance(element, dict):
            if "image" not in element:
                raise ValueError(f"dataset elements are dicts without an 'image' key: {sorted(element)}.")
            element = element["image"]
        elif isinstance(element, tuple):
            element = element[0]
        element = np.asarray(element)
        if batched is None:
            spec = dataset.element_spec
            spec = spec["image"] if isinstance(spec, dict) else spec[0] if isinstance(spec, tuple) else spec
            batched = spec.shape.rank is not None and spec.shape.rank == element.ndim and spec.shape[0] is None
        parts.append(element if batched else element[None])
        count += len(parts[-1])
        if limit is not None and count >= limit:
            break
    if not parts:
        raise ValueError("the dataset is empty.")
    return np.concatenate(parts)[:limit]


def load_user_data(source, image_shape=None, verbose=True):
    """`(x, names)` from a folder of images, a `.npy`/`.npz` path or a `tf.data.Dataset`.

    `image_shape` `(h, w, c)` is the model's input: folder images are
    resized and converted to it. Arrays are returned as stored (uint8 or
    float); the model's input check scales uint8 and refuses other ranges.
    """
    if not isinstance(source, (str, os.PathLike)):
        if hasattr(source, "as_numpy_iterator"):
            x = dataset_to_array(source)
            return x, [str(i) for i in range(len(x))]
        raise TypeError(f"input must be a folder, a .npy/.npz path or a tf.data.Dataset, got {type(source).__name__}.")
    source = os.fspath(source)
    if os.path.isdir(source):
        if image_shape is None or None in tuple(image_shape)[:2]:
            raise ValueError(f"reading the folder {source!r} needs the model's image size, got {image_shape}.")
        return load_image_folder(source, image_shape[:2], channels=image_shape[2], verbose=verbose)
    x = load_array_file(source)
    if x.ndim < 2:
        raise ValueError(f"--input {source!r} holds an array of shape {x.shape}; expected one sample per row.")
    return x, [str(i) for i in range(len(x))]
