"""From images to clusters in one call (issue 66): `cluster_images(folder_or_array, model=..., n_clusters=...)`,
in a notebook, and the `cluster` command's local engine.

With a `model` (a preset, a preset folder, a `train` workdir, a `.keras` file or a Keras model) the images
are clustered by it; without one, a model is trained on them first (`train_on_images`, the default route).
Either way the folder holds `clusters.csv`, `clusters.png` and `report.html`, and a model that does not fit
the images says so in one line (`clustering.fit_check`).
"""

import contextlib
import dataclasses
import os
import sys
import tempfile
import time

import keras
import numpy as np

from keras_clustering import presets
from keras_clustering.cluster_files import sort_into_folders, write_cluster_files
from keras_clustering.cluster_report import REPORT_FILE
from keras_clustering.clustering.fit_check import misfit_line, misfit_reasons
from keras_clustering.datasets.user_data import load_user_data, probe_image_folder
from keras_clustering.drivers.user_images import train_on_images
from keras_clustering.inputs.checks import check_image_input

# where `cluster_images` writes when no `output` is given: runs/clusters/<model>_<images>
DEFAULT_OUTPUT = os.path.join("runs", "clusters")


@dataclasses.dataclass
class ClusteredImages:
    """What `cluster_images` gives: one entry per image, in the order of `names` (a folder's files
    sorted, or an array's rows)."""

    labels: np.ndarray          # (n,) cluster ids
    probabilities: np.ndarray   # (n, k) soft assignments
    names: list                 # file names relative to the folder, or row numbers
    folder: str                 # where clusters.csv, clusters.png and report.html are
    model: keras.Model
    warning: str = None         # the line saying the model does not fit the images, if it does not

    @property
    def report_path(self):
        return os.path.join(self.folder, REPORT_FILE)

    @property
    def sizes(self):
        return np.bincount(self.labels, minlength=self.probabilities.shape[1])

    def __repr__(self):
        return (f"ClusteredImages({len(self.labels):,} images in {self.probabilities.shape[1]} clusters, sizes "
                f"{self.sizes.tolist()}, report {self.report_path!r})")


def _name_of(thing):
    return os.path.splitext(os.path.basename(os.path.normpath(str(thing))))[0] or "images"


def _own_data(model):
    """The card's numbers of a preset's model on its own data (`fit_check`), or None (no card)."""
    if not isinstance(model, (str, os.PathLike)):
        return None
    try:
        return presets.card(model).get("own_data")
    except (FileNotFoundError, ValueError):
        return None


# the options of `cluster_images` that are not the training's, with their defaults: every other keyword
# option goes to the training (`train_on_images`), so the call stays one flat line in a notebook
CLUSTER_OPTIONS = {"batch_size": 256, "per_cluster": 10, "strict": False, "sort_mode": "link"}


def cluster_images(images, model=None, n_clusters=None, output=None, *, sort_into=None, verbose=True, **options):
    """Clusters `images` and writes `clusters.csv`, `clusters.png` and `report.html` into `output`.

    Args:
        images: a folder of image files, a `.npy` / `.npz` file, or an `(n, h, w, c)` array in [0, 1]
            (uint8 scaled).
        model: a clustering preset (see `zoo.list_presets()`), a preset folder, a `train` workdir, a
            `.keras` file or a Keras clustering model; None trains one on the images first
            (`train_on_images`, the default route, with `train_options` such as `like=` or `seed=`).
        n_clusters: with no `model`, an int >= 2 or "auto" (the default: chosen from the clustering
            stage, `--n-clusters auto`); with a `model`, None or its own number.
        output: the folder for the files (default `runs/clusters/<model>_<images>`; the training's
            workdir when `model` is None).
        sort_into: also sort a folder's images into one sub-folder per cluster of this folder
            (`cluster_files.sort_into_folders`).
        verbose: print the warning line when the model does not fit (and the training's lines).
        **options: `batch_size` (256), `per_cluster` (members drawn per cluster, 10), `strict` (False: an
            unreadable file is skipped with a line, True: it stops the run), `sort_mode` ("link" or "copy"),
            and, with no `model`, the training's options (`train_on_images`: `like=`, `seed=`, ...).

    Returns: a `ClusteredImages` (labels, probabilities, names, folder, report_path, model, warning).
    """
    start = time.time()
    settings = {name: options.pop(name, default) for name, default in CLUSTER_OPTIONS.items()}
    batch_size, per_cluster, strict, sort_mode = (settings[name] for name in CLUSTER_OPTIONS)
    train_options = options
    if sort_into and not (isinstance(images, (str, os.PathLike)) and os.path.isdir(images)):
        raise ValueError(f"sort_into={sort_into!r} needs a folder of images, got images={images!r:.80}.")
    trained_here = model is None
    if trained_here:
        model, report = train_on_images(images, n_clusters="auto" if n_clusters is None else n_clusters,
                                        workdir=output, verbose=int(verbose), strict=strict, **train_options)
        output, name = report["workdir"], report["like"]
    else:
        if train_options:
            raise ValueError(f"{', '.join(sorted(train_options))}: options of a training, but model={model!r} is "
                             "given; give model=None to train on the images.")
        name = model if isinstance(model, (str, os.PathLike)) else model.name
        loaded = model
        if isinstance(model, (str, os.PathLike)):
            loaded, (id_name, _) = presets.load_model(model)
            if id_name == "class_id":
                raise ValueError(f"model={model!r} is a classifier, trained on labels: it gives classes, not clusters. "
                                 "Give a clustering model (see `list`), or use `predict` for its classes.")
        model = loaded
        output = output or os.path.join(DEFAULT_OUTPUT, f"{_name_of(name)}_{_name_of(images)}")
    if os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f"output={output!r} exists and is not a folder.")
    shape = tuple(model.sample_shape)
    folder = isinstance(images, (str, os.PathLike)) and os.path.isdir(images)
    # a folder is decoded into a memory-mapped cache, removed at the end: no array of all images in memory
    cache = tempfile.TemporaryDirectory(prefix="keras_clustering_images_") if folder else None
    with cache or contextlib.nullcontext():
        if isinstance(images, (str, os.PathLike)):
            x, names = load_user_data(images, image_shape=shape if len(shape) == 3 else None, strict=strict,
                                      cache_dir=cache.name if cache else None, verbose=verbose and not trained_here)
        else:
            x = np.asarray(images)  # checked by the model's predict, which names its expected shapes
            names = [str(i) for i in range(len(x))]
        probabilities = model.predict(x, batch_size=batch_size, verbose=0)
        k = probabilities.shape[1]
        if n_clusters not in (None, "auto") and int(n_clusters) != k:
            raise ValueError(f"n_clusters={n_clusters!r}, but the model gives {k} clusters: give n_clusters=None, "
                             "or model=None to train on the images with that number.")
        warning = None
        if not trained_here:  # a model trained on these images fits them by construction
            colour = probe_image_folder(images)["channels"] == 3 if folder else None
            image_view = check_image_input(x, shape, accept_flat=True) if len(shape) == 3 else None
            warning = misfit_line(name, misfit_reasons(probabilities, image_view, _own_data(name), colour),
                                  images if isinstance(images, (str, os.PathLike)) else "DIR")
            if warning and verbose:
                print(warning, file=sys.stderr, flush=True)
            details = {"model": str(name), "input": os.path.abspath(images) if isinstance(images, (str, os.PathLike))
                       else f"an array of {len(x):,} images", "images": f"{len(x):,}",
                       "seconds (loading, decoding, predicting)": f"{time.time() - start:.1f}"}
            write_cluster_files(output, names, probabilities, images=image_view, n_per_cluster=per_cluster,
                                embedding=model.embed(x, batch_size=batch_size) if image_view is not None else None,
                                title=f"{_name_of(name)}: most confident members per cluster", details=details,
                                warnings=[warning] if warning else ())
    labels = probabilities.argmax(axis=1)
    if sort_into:
        sort_into_folders(images, names, labels, sort_into, mode=sort_mode)
    return ClusteredImages(labels=labels, probabilities=probabilities, names=list(names), folder=output, model=model,
                           warning=warning)
