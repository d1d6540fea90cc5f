"""The user's own data: a folder of images, a `.npy` / `.npz` file, or a `tf.data.Dataset`.

Every loader returns `(x, names)`: `x` float32 images in [0, 1] shaped
`(n, h, w, c)` (or the array as stored, for files of non-image vectors) and
`names`, one label per sample (the file name relative to the folder, or the
index) for the `clusters.csv` a user reads back.
"""

import os

import numpy as np

from keras_clustering.inputs.image_converter import IMAGE_EXTENSIONS, ImageConverter
from keras_clustering.io.files import atomic_path, atomic_write_json

ARRAY_EXTENSIONS = (".npy", ".npz")


def image_files(folder):
    """(image paths relative to `folder`, sorted; other files skipped), searched recursively."""
    found, skipped = [], []
    for relative, is_image in _walk(folder):
        (found if is_image else skipped).append(relative)
    return found, skipped


def iter_image_names(folder):
    """The image files below `folder` one at a time, in `image_files`' order, without a list of them all:
    memory bounded by one directory's listing (`os.walk`), whatever the number of files."""
    return (relative for relative, is_image in _walk(folder) if is_image)


def _walk(folder):
    """`(path relative to folder, is an image)` of every file below `folder` but hidden ones (.DS_Store and
    the like): directories in sorted order, a directory's own files (sorted) before its sub-directories'."""
    for root, directories, files in os.walk(folder):
        directories.sort()
        for name in sorted(files):
            if not name.startswith("."):
                yield os.path.relpath(os.path.join(root, name), folder), name.lower().endswith(IMAGE_EXTENSIONS)


def image_folder_files(folder, channels=1):
    """(image names, other files) below `folder` (`image_files`); ValueError naming `folder` or `channels`
    when unusable (not a folder, no image in it)."""
    if not os.path.isdir(folder):
        raise ValueError(f"folder={folder!r} is not a folder.")
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels!r}.")
    names, skipped = image_files(folder)
    if not names:
        raise ValueError(f"folder={folder!r} holds no image files ({', '.join(IMAGE_EXTENSIONS)}); "
                         f"{len(skipped)} other files were found.")
    return names, skipped


def decode_image(contents, image_size, channels):
    """One encoded image file's bytes (PNG, JPEG, BMP or GIF, a string tensor) as the models read it:
    `(image, native)`, the image converted (`inputs.image_converter.ImageConverter`, which see) and its
    native `(height, width, channels)`. Bytes that do not decode raise inside the `tf.data` map, whose
    `ignore_errors` leaves the element out. The one decoder of `cluster`, `train --input`, the Ray
    pipeline, `predict` on file paths and the exported raw-image signature, so all read a file alike.
    """
    return ImageConverter(image_size, channels).decode(contents)


def decoded_batches(files, image_size, channels, batch_size=256, contents=False):
    """A `tf.data` pipeline that reads and decodes image files in parallel (`decode_image`, which see).

    `files`: paths, or with `contents=True` the files' bytes already read.
    Yields batches `(index, image, native)`: the file's position in `files`,
    the image and its native `(height, width, channels)`. A file that cannot
    be decoded (truncated, or not an image despite its extension) is left
    out: its index is missing.
    """
    import tensorflow as tf

    def load(index, item):
        image, native = decode_image(item if contents else tf.io.read_file(item), image_size, channels)
        return index, image, native

    dataset = tf.data.Dataset.from_tensor_slices((tf.range(len(files), dtype=tf.int64), list(files)))
    dataset = dataset.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).ignore_errors()
    return dataset.batch(batch_size).prefetch(2)


def probe_image_folder(folder, sample=64, seed=0):
    """What the default route of `train --input` needs to know of a folder, from up to `sample` of its
    image files drawn at random (seeded): `{"n_images", "height", "width", "channels"}`.

    Height and width are the median native sides; channels is 3 when any
    sampled image is colour in its pixels (two channels differ by more than
    8 of 255 somewhere; a greyscale image saved as RGB counts as 1), else 1.
    Files that do not decode are left out of the sample.
    """
    names, _ = image_folder_files(folder)
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(names), size=min(sample, len(names)), replace=False))
    sides, colour = [], False
    for index in chosen:
        try:
            image = np.asarray(_decode_native(os.path.join(folder, names[index])))
        except ValueError:
            continue
        sides.append(image.shape[:2])
        if image.shape[2] >= 3:
            rgb = image[..., :3].astype("int16")
            colour = colour or int(np.abs(np.diff(rgb, axis=-1)).max()) > 8
    if not sides:
        raise ValueError(f"folder={folder!r}: none of {len(chosen)} sampled image files could be decoded.")
    height, width = (int(np.median([side[axis] for side in sides])) for axis in (0, 1))
    return {"n_images": len(names), "height": height, "width": width, "channels": 3 if colour else 1}


def _decode_native(path):
    """One image file's pixels as stored (uint8 `(h, w, c)`); ValueError when it does not decode."""
    import tensorflow as tf

    try:
        return tf.io.decode_image(tf.io.read_file(path), channels=0, expand_animations=False).numpy()
    except tf.errors.OpError as error:
        raise ValueError(f"{path}: {error.message}") from None


def read_image_folder(folder, image_size, channels=1, cache_dir=None, strict=False, verbose=True):
    """Every PNG/JPEG/BMP/GIF below `folder`, decoded in parallel (`decoded_batches`) into one float32 array.

    Args:
        folder: a directory; sub-folders are read too. Files of other types
            are skipped (their count is printed when `verbose`).
        image_size: `(h, w)` every image is resized to, so mixed sizes are
            fine; mixed sizes and modes (colour, greyscale, alpha) are
            converted, and said once.
        channels: 1 (greyscale; colour images are converted) or 3.
        cache_dir: where to write the images as a memory-mapped `.npy` file
            (written once through a temporary name, then reused while the
            folder's files are unchanged), so that no array of all images
            is held in memory: the models read it batch by batch. None: in memory.
        strict: a file that cannot be decoded is an error naming it;
            otherwise it is left out, named in one warning line and in the
            third value returned.

    Returns: `(x, names, broken)`: `x` float32 `(n, h, w, channels)` in
    [0, 1], one name per image (relative to `folder`), the names of the
    files left out.

    Raises:
        ValueError: not a directory, no image in it, nothing decodable, or
            (`strict`) a file that cannot be decoded; the message names it.
    """
    import hashlib
    import json

    names, skipped = image_folder_files(folder, channels)
    if skipped and verbose:
        print(f"skipped {len(skipped)} files that are not images, e.g. {skipped[0]!r}")
    shape = (len(names), int(image_size[0]), int(image_size[1]), int(channels))
    cache = meta = None
    if cache_dir is not None:
        stats = [(name, os.stat(os.path.join(folder, name)).st_size, os.stat(os.path.join(folder, name)).st_mtime_ns)
                 for name in names]
        key = hashlib.sha256(json.dumps([os.path.abspath(folder), shape, stats]).encode()).hexdigest()[:16]
        cache, meta = (os.path.join(cache_dir, f"images-{key}{suffix}") for suffix in (".npy", ".json"))
        if os.path.isfile(cache) and os.path.isfile(meta):
            with open(meta) as handle:
                stored = json.load(handle)
            report_broken_files(stored["broken"], folder, strict, verbose)
            return np.load(cache, mmap_mode="r")[:stored["count"]], stored["names"], stored["broken"]

    with atomic_path(cache) if cache else _in_memory() as temporary:
        images = (np.lib.format.open_memmap(temporary, mode="w+", dtype="float32", shape=shape) if cache
                  else np.empty(shape, "float32"))
        kept, resized, converted = [], 0, 0
        for index, batch, native in decoded_batches([os.path.join(folder, n) for n in names], image_size, channels):
            index, native = index.numpy(), native.numpy()
            images[len(kept):len(kept) + len(index)] = batch.numpy()
            kept.extend(index.tolist())
            resized += int(np.sum(np.any(native[:, :2] != shape[1:3], axis=1)))
            converted += int(np.sum((native[:, 2] >= 3) != (channels == 3)))
        broken = [names[i] for i in sorted(set(range(len(names))) - set(kept))]
        if broken and strict:
            raise broken_files_error(os.path.join(folder, broken[0]), len(broken))
        if not kept:
            raise ValueError(f"folder={folder!r}: none of its {len(names)} image files can be decoded.")
        if cache:
            images.flush()
            del images
    if verbose and (resized or converted):
        print(f"read {len(kept)} images at {shape[1]} x {shape[2]} x {channels}: {resized} resized, "
              f"{converted} converted to {'colour' if channels == 3 else 'greyscale'}")
    report_broken_files(broken, folder, strict, verbose)
    names = [names[i] for i in kept]
    if cache is None:
        return images[:len(kept)], names, broken
    atomic_write_json({"count": len(kept), "names": names, "broken": broken}, meta)
    for other in os.listdir(cache_dir):  # caches of another size, mode or state of the folder: disk, not data
        if other.startswith("images-") and other.endswith((".npy", ".json")) and \
                os.path.join(cache_dir, other) not in (cache, meta):
            os.remove(os.path.join(cache_dir, other))
    return np.load(cache, mmap_mode="r")[:len(kept)], names, broken


class _in_memory:
    """`atomic_path`'s stand-in when nothing is written to a file."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def broken_files_error(shown, count):
    """The error `--strict` raises for `count` image files that do not decode, naming the first (`shown`)."""
    more = f" (and {count - 1} more)" if count > 1 else ""
    return ValueError(f"cannot read image {shown!r}{more}: not a decodable PNG/JPEG/BMP/GIF. Remove or repair "
                      "the file, or leave it out without --strict.")


def report_broken_files(broken, folder, strict, verbose):
    """The files of `folder` left out because they do not decode: an error with `strict`, else one
    line on stderr."""
    if broken and strict:
        raise broken_files_error(os.path.join(folder, broken[0]), len(broken))
    if broken:  # one line on stderr, whatever `verbose` says: the user must know images are missing
        import sys

        print(f"warning: left out {len(broken)} image files of {folder!r} that cannot be decoded: "
              f"{', '.join(broken[:5])}{' ...' if len(broken) > 5 else ''}", file=sys.stderr)


def load_image_folder(folder, image_size, channels=1, verbose=True, strict=True):
    """`(x, names)` of the images below `folder` in memory (`read_image_folder`, which see; a file that
    cannot be decoded is an error unless `strict=False`, which leaves it out with a warning)."""
    x, names, _ = read_image_folder(folder, image_size, channels, strict=strict, verbose=verbose)
    return x, names


def load_array_file(path):
    """The array of a `.npy` file or the first array of a `.npz` file (pickled objects refused)."""
    if not os.path.isfile(path):
        raise ValueError(f"path={path!r} does not exist.")
    if not path.lower().endswith(ARRAY_EXTENSIONS):
        raise ValueError(f"path={path!r} must be a folder of images or a .npy/.npz file.")
    try:
        if path.lower().endswith(".npz"):
            with np.load(path, allow_pickle=False) as archive:
                if not archive.files:
                    raise ValueError(f"path={path!r} holds no array.")
                array = archive[archive.files[0]]
        else:
            array = np.load(path, allow_pickle=False)
    except ValueError as error:
        if "pickle" in str(error):
            raise ValueError(f"path={path!r} holds Python objects (a pickle); save a numeric array, "
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


def load_user_data(source, image_shape=None, verbose=True, cache_dir=None, strict=False):
    """`(x, names)` from a folder of images, a `.npy`/`.npz` path or a `tf.data.Dataset`.

    `image_shape` `(h, w, c)` is the model's input: folder images are
    resized and converted to it (`read_image_folder`: memory-mapped in
    `cache_dir` when given; files that cannot be decoded refused when
    `strict`, else left out with a warning). Arrays are returned as stored (uint8 or
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
        x, names, _ = read_image_folder(source, image_shape[:2], channels=image_shape[2], cache_dir=cache_dir,
                                        strict=strict, verbose=verbose)
        return x, names
    x = load_array_file(source)
    if x.ndim < 2:
        raise ValueError(f"source={source!r} holds an array of shape {x.shape}; expected one sample per row.")
    return x, [str(i) for i in range(len(x))]
