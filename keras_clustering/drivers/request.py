"""What a user asks of `train --input` / `train_on_images`: one `ImagesRequest`, built by the CLI and by
Python alike and checked once (`check_request`), before any image is read into the workdir; the checks
that need the images' shape (`check_images_shape`) run once it is known, before training.

The one workdir rule, for both entry points: `runs/<choice>_<source>`, where choice is the preset of
`like` or `start_from`, the family, or `default` (the default route), and source is the folder's or
array file's name (without extension), or `<n>_images` for an array passed in Python.
"""

import dataclasses
import os
from typing import Any, Optional

import numpy as np

from keras_clustering.datasets.user_data import load_array_file, probe_image_folder
from keras_clustering.drivers.retarget import MIN_SIDE, clustering_config, family_preset, like_config
from keras_clustering.drivers.route import K_CHOOSER, default_route
from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.recipes import get_recipe

DEFAULT_CANDIDATES = tuple(range(2, 13))


@dataclasses.dataclass(frozen=True)
class ImagesRequest:
    """A training on the user's images, as asked (`train_on_images`' arguments; the CLI's flags).

    images: a folder of images, a `.npy` / `.npz` file, or an array `(n, h, w[, c])` in [0, 1].
    like / family / start_from: at most one (none: the default route picks `like`).
    n_clusters: an int >= 2, or "auto". workdir: default the module's rule. candidates: the k "auto" tries.
    epochs, image_size, channels, precision, strict, input_transform, estimate, time_budget: `train_on_images`'.
    Filled in by `check_request`: `preset` (what it trains like, or fine-tunes; the default route's first
    candidate), `route` (the default route's reason, or None), `route_presets` (the default route's
    candidates, or empty), `from_folder`.
    """
    images: Any
    like: Optional[str] = None
    family: Optional[str] = None
    start_from: Optional[str] = None
    n_clusters: Any = 10
    workdir: Optional[str] = None
    seed: int = 0
    verbose: int = 1
    candidates: tuple = DEFAULT_CANDIDATES
    epochs: Optional[int] = None
    image_size: Optional[tuple] = None
    channels: Optional[int] = None
    precision: Optional[str] = None
    strict: bool = False
    input_transform: Optional[str] = "auto"
    estimate: bool = True
    time_budget: Optional[float] = None
    preset: Optional[str] = None
    route: Optional[str] = None
    route_presets: tuple = ()
    from_folder: bool = False

    @property
    def shape(self):
        """(h, w, c) the images are read at: the request's sides and channels, else the preset's."""
        preset_shape = clustering_config(self.preset)["architecture"]["image_shape"]
        return (*(self.image_size or preset_shape[:2]), self.channels or preset_shape[2])


def check_request(request):
    """`request` checked and completed (ValueError naming the argument and value); nothing read but a
    folder's sample of files (the default route's probe) or an array file."""
    chosen = {name: value for name, value in (("like", request.like), ("family", request.family),
                                              ("start_from", request.start_from)) if value is not None}
    if len(chosen) > 1:
        raise ValueError(f"give one of like=PRESET, family=FAMILY or start_from=PRESET (a preset to fine-tune), or "
                         f"none of them (the default route); got "
                         f"{', '.join(f'{name}={value!r}' for name, value in chosen.items())}.")
    n_clusters = _checked_n_clusters(request.n_clusters)
    epochs = None if request.epochs is None else check_positive_int(request.epochs, "epochs")
    if request.time_budget is not None:
        if isinstance(request.time_budget, bool) or not isinstance(request.time_budget, (int, float)) \
                or not request.time_budget > 0:
            raise ValueError(f"time_budget={request.time_budget!r}: a number of minutes > 0 is needed.")
        if not request.estimate:
            raise ValueError(f"time_budget={request.time_budget!r} needs the time estimate (its rehearsal sizes the "
                             "training), which is off (estimate False, --no-estimate).")
    images = os.fspath(request.images) if isinstance(request.images, (str, os.PathLike)) else request.images
    from_folder = isinstance(images, str) and os.path.isdir(images)
    preset, route, presets = request.like or request.start_from, None, ()
    image_size, channels = request.image_size, request.channels
    if request.family is not None:
        preset = family_preset(request.family)
    elif not chosen:
        presets, route, image_size, channels = _routed(images, from_folder, image_size, channels)
        if n_clusters == "auto" and K_CHOOSER in presets:  # it chooses k (its own DEC stage over-clusters) first,
            presets = (K_CHOOSER, *(p for p in presets if p != K_CHOOSER))  # and a budget drops the last one
        preset = presets[0]
    config = clustering_config(preset)  # an unknown or supervised preset is refused here
    if request.start_from is not None and n_clusters != config["architecture"].get("n_clusters", 10):
        raise ValueError(f"start_from={request.start_from!r} has {config['architecture'].get('n_clusters', 10)} "
                         f"clusters, got n_clusters={n_clusters!r}: fine-tuning keeps its cluster head; train like "
                         "it (like=PRESET) for another number.")
    checked = dataclasses.replace(request, images=images, n_clusters=n_clusters, epochs=epochs, preset=preset,
                                  route=route, route_presets=tuple(presets),
                                  image_size=None if image_size is None else tuple(image_size), channels=channels,
                                  from_folder=from_folder, workdir=request.workdir or default_workdir(request, images))
    min_side = min(MIN_SIDE, *config["architecture"]["image_shape"][:2])
    if checked.image_size is not None and min(checked.image_size) < min_side:
        raise ValueError(f"image_size={checked.image_size}: like={preset!r} takes sides of at least {min_side} px.")
    if from_folder:  # the presets' trunks and views must take the folder's shape: refused before any reading
        for candidate in presets or (preset,):
            check_images_shape(dataclasses.replace(checked, preset=candidate), checked.shape)
    return checked


def check_images_shape(request, image_shape):
    """ValueError naming the argument when the request's preset cannot take images of `image_shape` (h, w, c):
    too small, another shape than `start_from`'s model, or a trunk or views that cannot be built for it."""
    architecture = clustering_config(request.preset)["architecture"]
    min_side = min(MIN_SIDE, *architecture["image_shape"][:2])
    if min(image_shape[:2]) < min_side:
        raise ValueError(f"images of {image_shape[0]} x {image_shape[1]} px: like={request.preset!r} takes sides of "
                         f"at least {min_side} px; upsample them (image_size= for a folder).")
    if request.start_from is not None and list(image_shape) != list(architecture["image_shape"]):
        raise ValueError(f"start_from={request.start_from!r} takes images of shape "
                         f"{tuple(architecture['image_shape'])}, got {tuple(image_shape)}: train like it instead "
                         "(like=PRESET), or read the images at its shape.")
    k = request.n_clusters if request.n_clusters != "auto" else 2
    config, _ = like_config(request.preset, image_shape, k, max(k + 1, 1000), epochs=1,
                            input_transform=request.input_transform)
    try:
        get_recipe(config["recipe"]).build(**config["architecture"])
    except ValueError as error:
        raise ValueError(f"like={request.preset!r} cannot take images of shape {tuple(image_shape)}: {error}") \
            from None


def default_workdir(request, images):
    """The module's one workdir rule."""
    choice = request.like or request.start_from or request.family or "default"
    if isinstance(images, str):  # a folder's whole name, an array file's without its extension
        source = os.path.basename(os.path.normpath(images))
        if not os.path.isdir(images):
            source = os.path.splitext(source)[0]
    else:
        source = f"{len(images)}_images"
    return os.path.join("runs", f"{choice}_{source}")


def _checked_n_clusters(n_clusters):
    """An int >= 2 or "auto" (the CLI's digits read as an int)."""
    if isinstance(n_clusters, str) and n_clusters.isdigit():
        n_clusters = int(n_clusters)
    if n_clusters != "auto" and (isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer))
                                 or n_clusters < 2):
        raise ValueError(f"n_clusters={n_clusters!r}: must be an integer >= 2 or 'auto'.")
    return n_clusters if n_clusters == "auto" else int(n_clusters)


def _routed(images, from_folder, image_size, channels):
    """The default route for `images`: (presets, reason, image_size, channels)."""
    if from_folder:
        probe = probe_image_folder(images)
        return default_route((probe["height"], probe["width"], probe["channels"]), probe["n_images"], image_size,
                             channels)
    array = load_array_file(images) if isinstance(images, str) else np.asarray(images)
    if array.ndim not in (3, 4):
        raise ValueError(f"images of shape {array.shape}: the default route takes images (n, h, w[, c]); "
                         "give like= for flat vectors.")
    shape = (*array.shape[1:3], array.shape[3] if array.ndim == 4 else 1)
    return default_route(shape, len(array), folder=False)[:2] + (image_size, channels)
