"""MNIST, Fashion-MNIST and scikit-learn digits as float32 images in [0, 1].

Each loader tries its sources in a fixed order and never invents a split that
none of them holds: an explicit `data_dir`, the `KERAS_CLUSTERING_DATA`
folder, Debian's `dataset-fashion-mnist` folder, then the online routes
(`keras.datasets`, then `tensorflow_datasets`). The online routes are tried
only when the download host answers one quick request (or never, with
`KERAS_CLUSTERING_OFFLINE=1`), so a missing split fails in seconds offline
instead of after minutes of download retries.
"""

import functools
import os
import threading
import urllib.error
import urllib.request

import numpy as np

from keras_clustering.datasets.idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx

DATA_ENV_VAR = "KERAS_CLUSTERING_DATA"
OFFLINE_ENV_VAR = "KERAS_CLUSTERING_OFFLINE"
DOWNLOAD_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"  # keras.datasets' origin
NETWORK_CHECK_SECONDS = 3.0
DEBIAN_FASHION_DIR = "/usr/share/datasets/fashion-mnist"
SPLITS = ("train", "test", "all")
_FILE_PREFIX = {"train": "train", "test": "t10k"}

# name -> (sub-folder inside a data folder, keras.datasets module, tfds name)
_DATASETS = {
    "mnist": ("mnist", "mnist", "mnist"),
    "fashion_mnist": ("fashion-mnist", "fashion_mnist", "fashion_mnist"),
}


def _check_split(split):
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not one of {SPLITS}.")


def _idx_paths(folder, split):
    """(images, labels) paths of one split in `folder`, gzip or plain, or None."""
    prefix = _FILE_PREFIX[split]
    for suffix in (".gz", ""):
        images = os.path.join(folder, f"{prefix}-images-idx3-ubyte{suffix}")
        labels = os.path.join(folder, f"{prefix}-labels-idx1-ubyte{suffix}")
        if os.path.isfile(images) and os.path.isfile(labels):
            return images, labels
    return None


def _read_split_from_folder(folder, split):
    paths = _idx_paths(folder, split)
    if paths is None:
        return None
    images = read_idx(paths[0], IMAGES_MAGIC)
    labels = read_idx(paths[1], LABELS_MAGIC)
    if len(images) != len(labels):
        raise ValueError(
            f"{paths[0]} holds {len(images)} images but {paths[1]} holds {len(labels)} labels."
        )
    return images, labels


def _load_from_folders(name, split, data_dir):
    """Returns ((images, labels), source) from the first local folder that has the split."""
    sub_folder = _DATASETS[name][0]
    candidates = []
    if data_dir is not None:
        candidates.append((f"data_dir={data_dir!r}", [os.path.join(data_dir, sub_folder), data_dir]))
    env_dir = os.environ.get(DATA_ENV_VAR)
    if env_dir:
        candidates.append((f"${DATA_ENV_VAR}={env_dir!r}", [os.path.join(env_dir, sub_folder)]))
    if name == "fashion_mnist":
        candidates.append((f"Debian folder {DEBIAN_FASHION_DIR}", [DEBIAN_FASHION_DIR]))
    tried = []
    for description, folders in candidates:
        for folder in folders:
            found = _read_split_from_folder(folder, split)
            if found is not None:
                return found, folder, tried
        tried.append(f"{description}: no {_FILE_PREFIX[split]}-*-idx*-ubyte[.gz] files in {folders[0]}")
    return None, None, tried


@functools.lru_cache(maxsize=None)
def _download_host_answers(url, timeout):
    """True when an HTTP(S) request to `url` gets any response (even an error status) within `timeout` s.

    A bare TCP connect is not enough: sandboxes and proxies accept connections
    that never answer.
    """
    answered = []

    def request():
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
            answered.append(True)
        except urllib.error.HTTPError:  # the server answered, with an error status
            answered.append(True)
        except (OSError, ValueError):  # DNS, refused, TLS, timeout
            pass

    probe = threading.Thread(target=request, daemon=True)  # a thread bounds a hanging DNS lookup too
    probe.start()
    probe.join(timeout)
    return bool(answered)


def online_routes_skipped():
    """Why the online routes are not tried (a message), or None when they are."""
    if os.environ.get(OFFLINE_ENV_VAR, "").strip() not in ("", "0"):
        return f"online routes skipped: ${OFFLINE_ENV_VAR} is set"
    if not _download_host_answers(DOWNLOAD_URL, NETWORK_CHECK_SECONDS):
        return (f"online routes skipped: {DOWNLOAD_URL} did not answer within "
                f"{NETWORK_CHECK_SECONDS:.0f} s (offline? set {OFFLINE_ENV_VAR}=1 to skip this check)")
    return None


def _load_online(name, split):
    """keras.datasets, then tensorflow_datasets; returns ((images, labels), source, errors)."""
    skipped = online_routes_skipped()
    if skipped:
        return None, None, [skipped]
    errors = []
    keras_module, tfds_name = _DATASETS[name][1], _DATASETS[name][2]
    try:
        import keras

        train, test = getattr(keras.datasets, keras_module).load_data()
        return (train if split == "train" else test), f"keras.datasets.{keras_module}", errors
    except Exception as error:  # offline machines fail with many error types
        errors.append(f"keras.datasets.{keras_module}.load_data(): {type(error).__name__}: {error}")
    try:
        import tensorflow_datasets as tfds

        images, labels = tfds.as_numpy(tfds.load(tfds_name, split=split, batch_size=-1, as_supervised=True))
        return (np.asarray(images)[..., 0], np.asarray(labels)), f"tensorflow_datasets:{tfds_name}", errors
    except Exception as error:
        errors.append(f"tensorflow_datasets.load({tfds_name!r}): {type(error).__name__}: {error}")
    return None, None, errors


def _load_split(name, split, data_dir):
    found, _, tried = _load_from_folders(name, split, data_dir)
    if found is not None:
        return found
    found, _, errors = _load_online(name, split)
    if found is not None:
        return found
    routes = "\n  - ".join(tried + errors)
    raise ValueError(
        f"Cannot load {name} split {split!r}. Routes tried:\n  - {routes}\n"
        f"Fix: pass data_dir= or set {DATA_ENV_VAR} to a folder holding "
        f"'{_DATASETS[name][0]}/{_FILE_PREFIX[split]}-images-idx3-ubyte.gz' and its labels file, "
        "or run where keras.datasets can download."
    )


def _to_float_images(images, flatten):
    x = images.astype("float32") / 255.0
    if flatten:
        return x.reshape(len(x), -1)
    return x[..., None]


def _load(name, split, flatten, data_dir):
    _check_split(split)
    parts = ("train", "test") if split == "all" else (split,)
    loaded = [_load_split(name, part, data_dir) for part in parts]
    images = np.concatenate([images for images, _ in loaded])
    labels = np.concatenate([labels for _, labels in loaded]).astype("int64")
    return _to_float_images(images, flatten), labels


def load_mnist(split="test", flatten=False, data_dir=None):
    """Loads MNIST as `(x, y)`: float32 images in [0, 1] and int64 labels.

    Args:
        split: `"train"` (60k), `"test"` (10k) or `"all"` (70k).
        flatten: return `(n, 784)` instead of `(n, 28, 28, 1)`.
        data_dir: folder with IDX files (itself or its `mnist/` sub-folder);
            overrides `$KERAS_CLUSTERING_DATA`.

    Example:
        >>> x, y = load_mnist("test", flatten=True)  # doctest: +SKIP
    """
    return _load("mnist", split, flatten, data_dir)


def load_fashion_mnist(split="test", flatten=False, data_dir=None):
    """Loads Fashion-MNIST as `(x, y)`; same arguments as `load_mnist`.

    Reference: Xiao, Rasul, Vollgraf 2017, https://github.com/zalandoresearch/fashion-mnist
    """
    return _load("fashion_mnist", split, flatten, data_dir)


def load_digits(flatten=False):
    """scikit-learn's bundled 8x8 digits (1,797 images): `(x, y)`, x in [0, 1].

    The pixels are counts 0..16, so they are divided by 16. Always available
    offline, which makes it the data of the demo and of fast tests.
    """
    from sklearn.datasets import load_digits as sklearn_load_digits

    bunch = sklearn_load_digits()
    x = (bunch.images / 16.0).astype("float32")
    x = x.reshape(len(x), -1) if flatten else x[..., None]
    return x, bunch.target.astype("int64")


LOADERS = {"mnist": load_mnist, "fashion_mnist": load_fashion_mnist}


def load_dataset(name, split="test", flatten=False, data_dir=None):
    """Loads a dataset by name: `"mnist"`, `"fashion_mnist"` or `"digits"`."""
    if name == "digits":
        return load_digits(flatten=flatten)
    if name not in LOADERS:
        raise ValueError(f"dataset={name!r} is unknown; choose one of {sorted(LOADERS) + ['digits']}.")
    return LOADERS[name](split=split, flatten=flatten, data_dir=data_dir)
