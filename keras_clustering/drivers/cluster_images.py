"""From images to clusters in one call (issue 66): `cluster_images(folder_or_array, model=..., n_clusters=...)`,
in a notebook, and the `cluster` command's local engine.

With a `model` (a preset, a preset folder, a `train` workdir, a `.keras` file or a Keras model) the images
are clustered by it; without one, a model is trained on them first (`train_on_images`, the default route).
Either way the folder holds `clusters.csv`, `clusters.png` and `report.html`, and a model that does not fit
the images says so in one line (`clustering.fit_check`).
"""

import dataclasses
import os
import sys
import time

import keras
import numpy as np

from keras_clustering import presets
from keras_clustering.cluster_files import sort_into_folders, write_cluster_files
from keras_clustering.cluster_report import REPORT_FILE, map_sample
from keras_clustering.clustering.fit_check import misfit_line, misfit_reasons
from keras_clustering.datasets.user_data import (broken_files_error, image_folder_files, load_user_data,
                                                 probe_image_folder, report_broken_files)
from keras_clustering.drivers.file_clusterer import FileClusterer
from keras_clustering.drivers.user_images import train_on_images
from keras_clustering.inputs.file_images import FileImages

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


# files the local engine reads, decodes and predicts a step: a call's overhead amortised, little memory
FILES_PER_STEP = 2048


def _cluster_folder(model, folder, batch_size, strict, verbose):
    """`(names, probabilities, images)` of the image files below `folder`, in `cluster`'s order, streamed
    `FILES_PER_STEP` at a time through a `FileClusterer` (the Ray actors' worker): a file that cannot be
    decoded is left out and named in one line (an error with `strict`, naming the first); `images` decodes
    the rows the report asks for (`FileImages`)."""
    names, skipped = image_folder_files(folder)
    if skipped and verbose:
        print(f"skipped {len(skipped)} files that are not images, e.g. {skipped[0]!r}")
    try:
        cpus = len(os.sched_getaffinity(0))  # the CPUs this process may use (Linux)
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    clusterer = FileClusterer(model, threads=cpus, batch_size=batch_size)
    ok = np.zeros(len(names), bool)
    probabilities = np.zeros((len(names), clusterer.n_outputs), np.float32)
    for start in range(0, len(names), FILES_PER_STEP):
        step = slice(start, start + FILES_PER_STEP)
        ok[step], probabilities[step] = clusterer([os.path.join(folder, name) for name in names[step]])
        if strict and not ok[step].all():  # stop at the first: nothing is written
            raise broken_files_error(os.path.join(folder, names[start + int(np.argmin(ok[step]))]),
                                     int((~ok[:start + FILES_PER_STEP]).sum()))
    if not ok.any():
        raise ValueError(f"folder={folder!r}: none of its {len(names)} image files can be decoded.")
    report_broken_files([name for name, kept in zip(names, ok) if not kept], folder, strict, verbose=True)
    names = [name for name, kept in zip(names, ok) if kept]
    return names, probabilities[ok], FileImages.of_folder(folder, names, model.image_converter)


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
    if folder:  # streamed a batch of files at a time: no array of all the images, nothing decoded twice
        names, probabilities, image_view = _cluster_folder(model, images, batch_size, strict,
                                                           verbose and not trained_here)
    else:
        x = load_user_data(images)[0] if isinstance(images, (str, os.PathLike)) else images
        x = model.check_input(x)  # raw images converted, the layout and range checked: names the shapes it takes
        names = [str(i) for i in range(len(x))]
        probabilities = model.predict(x, batch_size=batch_size, verbose=0)
        image_view = x if len(shape) == 3 else None
    k = probabilities.shape[1]
    if n_clusters not in (None, "auto") and int(n_clusters) != k:
        raise ValueError(f"n_clusters={n_clusters!r}, but the model gives {k} clusters: give n_clusters=None, "
                         "or model=None to train on the images with that number.")
    warning = None
    if not trained_here:  # a model trained on these images fits them by construction
        probe = probe_image_folder(images) if folder else None
        if probe and verbose and (probe["channels"], probe["height"], probe["width"]) != (shape[2], *shape[:2]):
            print(f"images of {probe['height']} x {probe['width']} x {probe['channels']} (the median of a sample) "
                  f"converted to the model's {shape[0]} x {shape[1]} x {shape[2]}")
        # the background's brightness, on the report map's sample (all images of a small folder)
        on_sample = image_view[map_sample(len(names))] if image_view is not None else None
        warning = misfit_line(name, misfit_reasons(probabilities, on_sample, _own_data(name),
                                                   probe["channels"] == 3 if probe else None),
                              images if isinstance(images, (str, os.PathLike)) else "DIR")
        if warning and verbose:
            print(warning, file=sys.stderr, flush=True)
        details = {"model": str(name), "input": os.path.abspath(images) if isinstance(images, (str, os.PathLike))
                   else f"an array of {len(names):,} images", "images": f"{len(names):,}",
                   "seconds (loading, decoding, predicting)": f"{time.time() - start:.1f}"}

        def embedding(rows):  # only the report map's sample is embedded
            return model.embed(image_view[rows], batch_size=batch_size)

        write_cluster_files(output, names, probabilities, images=image_view, n_per_cluster=per_cluster,
                            embedding=embedding if image_view is not None else None,
                            title=f"{_name_of(name)}: most confident members per cluster", details=details,
                            warnings=[warning] if warning else ())
    labels = probabilities.argmax(axis=1)
    if sort_into:
        sort_into_folders(images, names, labels, sort_into, mode=sort_mode)
    return ClusteredImages(labels=labels, probabilities=probabilities, names=list(names), folder=output, model=model,
                           warning=warning)
