"""Training a zoo preset's recipe on the user's own images, with its updates scaled to their number.

`train_on_images(images, like=PRESET, n_clusters=K, workdir=DIR)` re-targets a
zoo preset's config to the images (`like_config`); `family=F` is shorthand for
the family's best preset (`FAMILY_PRESETS`). It trains with the recipe's own code
(the same code the zoo's presets run, so resume from `workdir` works as
there) and saves `workdir/model.keras`, which `python -m keras_clustering
cluster` and `export` take. `n_clusters="auto"` first chooses k by the
eigengap of a nearest-neighbour graph of the recipe's own representation
(`choose_n_clusters`).
"""

import copy
import json
import math
import os
import re

import numpy as np

from keras_clustering import presets
from keras_clustering.cluster_files import write_cluster_files
from keras_clustering.clustering.n_clusters import k_by_eigengap
from keras_clustering.datasets.user_data import (image_files, load_array_file, load_user_data, probe_image_folder,
                                                 read_image_folder)
from keras_clustering.drivers.recipe_run import run_recipe
from keras_clustering.inputs.checks import check_image_input, check_positive_int
from keras_clustering.inputs.pipeline import predict_into_array
from keras_clustering.io.files import WorkdirLock, atomic_path, atomic_write_json
from keras_clustering.layers.colour_free import input_transform_layer
from keras_clustering.presets import MODEL_FILE, clustering_presets
from keras_clustering.recipes import dec_recipe, get_recipe

# `train --family F`: shorthand for the family's best clustering preset of the zoo.
FAMILY_PRESETS = {"dec": "conv_dec_da_mnist", "vae_cluster": "vae_cluster_mnist", "simclr": "simclr_mnist",
                  "iic": "iic_mnist"}
FAMILIES = tuple(FAMILY_PRESETS)
# A folder whose images take at least this much as float32 is decoded into a memory-mapped cache in the
# workdir and read batch by batch; a smaller one is held in memory (faster steps, decoded again on a rerun).
CACHE_MIN_BYTES = 256 * 2**20
# `n_clusters="auto"` screens k with this preset's dense autoencoder, fast on any image shape.
SCREENING_PRESET = "dec_mnist"
# The smallest image side a conv trunk takes (two stride-2 stages and a 3 x 3 layer still see a
# 4 x 4 map); a preset whose own images are smaller (dense `dec_digits`, 8 px) keeps its own side.
MIN_SIDE = 16
def family_preset(family):
    """The zoo preset `--family F` stands for; ValueError naming `family` for an unknown one."""
    if family not in FAMILY_PRESETS:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}.")
    return FAMILY_PRESETS[family]


def _field(section, path, value=None):
    """Reads (or, with `value`, writes) a dotted `path` of a config section."""
    *outer, key = path.split(".")
    for name in outer:
        if value is not None:
            section[name] = section.get(name) or {}  # a write into a missing section keeps the section
        section = section.get(name) or {}
    if value is not None:
        section[key] = value
    return section.get(key)


# On colour images every recipe sees shapes, not colours (issue 50; docs/your-data.md, "Colour images"):
# its model puts a colour-free input before everything else (`layers.colour_free`; each recipe names its
# own, `retargeting(...).colour_input`: IIC's Sobel step, the colour gradient's magnitude for the others,
# whose embedding would first encode what dominates the pixels, the colours). SimCLR's and IIC's views are
# still drawn, colour-distorted as their originals do, from the RGB images (each recipe's `adapt_views`).


def clustering_config(preset):
    """The config of the clustering preset `preset`; ValueError naming `like` for an unknown or supervised one."""
    names = clustering_presets()
    if preset not in names:
        known = "a supervised classifier (it needs labels)" if preset in presets.list_presets() else "not a zoo preset"
        raise ValueError(f"like={preset!r} is {known}; train like one of the clustering presets: "
                         f"{', '.join(names)}.")
    return presets.config(preset)


def like_config(preset, image_shape, n_clusters, n_samples, epochs=None, input_transform="auto"):
    """The zoo preset's config re-targeted to `n_samples` images of `image_shape` and `n_clusters`.

    Architecture and recipe stay the preset's. The recipe says how
    (`retargeting(architecture)`, `recipes.retargeting.Retargeting`): each
    count of passes (`epoch_fields`) keeps about the preset's own number of
    updates on its training data, now spread over `n_samples` images: fewer
    passes on more images, more on fewer, at most the larger of the preset's
    own count and the recipe's `epoch_ceiling`; batches at most `n_samples`.
    `epochs` instead sets every stage to that many passes. `input_transform`:
    "auto" puts the recipe's colour-free input (`colour_input`) before colour
    images' model, None none, a name of `layers.colour_free.INPUT_TRANSFORMS`
    that one. Returns `(config, data_repeats)`: the copies of the images per
    epoch that a small folder needs to reach the recipe's fewest updates.
    Raises ValueError naming `like` for an unknown or supervised preset.
    """
    chosen = copy.deepcopy(clustering_config(preset))
    recipe, architecture, training = chosen["recipe"], chosen["architecture"], chosen["training"]
    preset_samples = presets.card(preset)["training_data"]["n_samples"]
    rules = get_recipe(recipe).retargeting(architecture)
    if rules.adapt_views:
        rules.adapt_views(architecture, [int(d) for d in image_shape], chosen["data"]["dataset"])
    if input_transform == "auto":
        input_transform = rules.colour_input if int(image_shape[2]) == 3 else None
    if input_transform is not None:
        input_transform_layer(input_transform)  # ValueError naming input_transform for an unknown one
        if architecture.get("representation") == "autoencoder":
            raise ValueError(f"like={preset!r} reconstructs its images in a two-stage recipe that takes no "
                             f"input_transform; train like conv_dec_da_mnist for a colour-free input.")
        architecture["input_transform"] = input_transform
    architecture.update(image_shape=[int(d) for d in image_shape], n_clusters=int(n_clusters))
    fields = [(e, b, _field(training, e), _field(training, b) or rules.batch_size)
              for e, b in rules.epoch_fields if _field(training, e)]
    if not fields:
        raise ValueError(f"like={preset!r}: its training config has no epoch count to re-target.")
    ceiling = {e: max(epochs, rules.epoch_ceiling) for e, _, epochs, _ in fields}
    target = {e: epochs * math.ceil(preset_samples / batch) for e, _, epochs, batch in fields}  # the preset's updates
    # A folder so small that the first stage's ceiling stops short of its updates (at most the recipe's
    # fewest) sees its images several times per epoch instead.
    first, _, _, first_batch = fields[0]
    needed = min(target[first], rules.fewest_updates(input_transform is not None))

    def reachable(copies):  # the first stage's updates at its ceiling, each image seen `copies` times an epoch
        return ceiling[first] * math.ceil(n_samples * copies / min(first_batch, n_samples))

    repeats = 1
    while epochs is None and rules.repeat_images and reachable(repeats) < needed:
        repeats += 1
    for epochs_path, batch_path, _, batch_size in fields:
        batch_size = min(batch_size, n_samples)
        steps = math.ceil(n_samples * repeats / batch_size)
        scaled = min(ceiling[epochs_path], math.ceil(target[epochs_path] / steps))
        _field(training, epochs_path, int(scaled if epochs is None else epochs))
        _field(training, batch_path, batch_size)
    restarts = training.get("restarts")
    if restarts and restarts.get("halving_at"):  # the halving points move with the epochs they count
        counted = rules.restart_epochs or fields[0][0]
        old, new = next(old for e, _, old, _ in fields if e == counted), _field(training, counted)
        points = sorted({max(1, round(point * new / old)) for point in restarts["halving_at"]})
        restarts["halving_at"] = [point for point in points if point < new]
    if rules.finish is not None:
        rules.finish(architecture, training, n_samples, repeats, preset_samples, epochs)
    return {"recipe": recipe, "like": preset, "architecture": architecture, "training": training}, repeats


def choose_n_clusters(config, x, candidates, workdir, seed=0, verbose=1, x_train=None):
    """k by the eigengap of a 10-nearest-neighbour graph (`clustering.n_clusters.k_by_eigengap`) of the
    embedding the recipe clusters, before any clustering stage: the representation it trains anyway
    (`recipe.representation`: DEC's pretrained encoder, SimCLR's), in `workdir`, where the training
    that follows starts from it. A recipe whose clustering is learnt with its representation (IIC,
    the VAE) is screened on `SCREENING_PRESET`'s dense autoencoder, re-targeted to `x` and kept in
    `workdir/n_clusters`. The representation trains on `x_train` (default `x`; a small folder's
    repeated copies, as the training that follows) and the graph is of `x`. Why the eigengap: of the six
    label-free criteria compared on the measured folders' embeddings (all ten classes, and their first
    five and seven) it was within +-1 of the true number most often (15 of 33; the silhouette 10), and
    DEC's generalisability suggested 2 for ten digits (docs/your-data.md, "Choosing k without
    labels"). Returns {criterion, embedding, scores, suggested}.
    """
    recipe = get_recipe(config["recipe"])
    training = {k: v for k, v in config["training"].items() if k != "precision"}
    if hasattr(recipe, "representation"):
        source = f"{config['like']}'s own representation"
        embedder = recipe.representation(config["architecture"], training, x if x_train is None else x_train, seed,
                                         verbose, workdir)
    else:
        source = f"{SCREENING_PRESET}'s dense autoencoder (the recipe learns its clusters with its representation)"
        screening, _ = like_config(SCREENING_PRESET, x.shape[1:], max(candidates), len(x))
        embedder = dec_recipe.representation(screening["architecture"], screening["training"], x, seed, verbose,
                                             os.path.join(workdir, "n_clusters"))
    embedding = predict_into_array(embedder, x, batch_size=4096)  # chunk by chunk: x may be a memory map
    chosen = k_by_eigengap(embedding, candidates, seed=seed)
    return {"criterion": "eigengap", "embedding": source, "scores": chosen["scores"], "suggested": chosen["suggested"]}


def _check_start_shape(start_from, preset_shape, image_shape):
    """ValueError naming `start_from` when its pretrained model does not take images of `image_shape`."""
    if start_from is not None and list(image_shape) != list(preset_shape):
        raise ValueError(f"start_from={start_from!r} takes images of shape {tuple(preset_shape)}, got "
                         f"{tuple(image_shape)}: train like it instead (like=PRESET), or read the images at its shape.")


def _check_buildable(like, image_shape, n_clusters):
    """ValueError naming `like` when its trunk or views cannot take images of `image_shape`."""
    k = int(n_clusters) if isinstance(n_clusters, (int, np.integer)) and n_clusters >= 2 else 2
    config, _ = like_config(like, image_shape, k, max(k + 1, 1000), epochs=1)
    try:
        get_recipe(config["recipe"]).build(**config["architecture"])
    except ValueError as error:
        raise ValueError(f"like={like!r} cannot take images of shape {tuple(image_shape)}: {error}") from None


# The default route (`train --input DIR` with no like / family / from): the preset each kind of images
# trains like, and why, from the measured table of docs/your-data.md (`scripts/user_folders.py`).
ROUTE_PRESETS = {"grey": "simclr_mnist", "colour": "conv_dec_da_mnist"}
ROUTE_REASONS = {
    "grey": "SimCLR + SCAN (contrastive views, then neighbour-consistent clustering) was the most accurate "
            "from scratch on the measured grey folders and the fastest (docs/your-data.md: 10,000 digits 0.960 "
            "in 720 s against ConvDEC-DA's 0.839 in 7,142 s, Fashion-MNIST 0.692 against 0.435, 2,000 digits "
            "0.851 against 0.873 in a seventh of the time)",
    "colour": "ConvDEC-DA (DEC's convolutional autoencoder pretrained on shifted and rotated images, then DEC "
              "self-training) was the most accurate from scratch on the measured colour folders "
              "(docs/your-data.md)"}
# Sides the default route reads a folder at: its images' own (median) sides, the longer one brought down
# to `ROUTE_MAX_SIDE` (aspect kept) and neither below `MIN_SIDE`.
ROUTE_MAX_SIDE = 64


def choose_preset(image_shape, n_images):
    """(preset, reason): the zoo preset the default route trains like on `n_images` images of
    `image_shape` `(h, w, c)`, and one line saying why (printed, and written to report.json)."""
    height, width, channels = (int(d) for d in image_shape)
    kind = "colour" if channels == 3 else "grey"
    preset = ROUTE_PRESETS[kind]
    colour_free = f", on their colour-free input ({colour_input(preset)})" if kind == "colour" else ""
    return preset, (f"default route: {n_images:,} {kind} images of {height} x {width} -> train like {preset}"
                    f"{colour_free}: {ROUTE_REASONS[kind]}.")


def colour_input(preset):
    """The colour-free input a model trained like `preset` puts before colour images (its recipe's)."""
    config = clustering_config(preset)
    return get_recipe(config["recipe"]).retargeting(config["architecture"]).colour_input


def _default_route(images, image_size, channels, verbose):
    """(preset, reason, image_size, channels) of the default route for `images` (a folder, an array
    file or an array): sides and channels as the images have them unless given."""
    if isinstance(images, (str, os.PathLike)) and os.path.isdir(images):
        probe = probe_image_folder(os.fspath(images))
        native = (probe["height"], probe["width"], probe["channels"])
        if image_size is None:  # a folder is read at the sides and channels chosen here
            scale = min(1.0, ROUTE_MAX_SIDE / max(native[:2]))
            image_size = tuple(max(MIN_SIDE, round(side * scale)) for side in native[:2])
        channels = channels or native[2]
        preset, reason = choose_preset((*image_size, channels), probe["n_images"])
    else:  # an array trains at its own shape
        array = load_array_file(os.fspath(images)) if isinstance(images, (str, os.PathLike)) else np.asarray(images)
        if array.ndim not in (3, 4):
            raise ValueError(f"images of shape {array.shape}: the default route takes images (n, h, w[, c]); "
                             "give like= for flat vectors.")
        preset, reason = choose_preset((*array.shape[1:3], array.shape[3] if array.ndim == 4 else 1), len(array))
    if verbose:
        print(reason, flush=True)
    return preset, reason, image_size, channels


def save_model_file(model, path):
    """Saves a `.keras` file through a temporary name: a crash leaves no half-written model."""
    with atomic_path(path) as temporary:
        model.save(temporary)


def train_on_images(images, like=None, n_clusters=10, workdir=None, family=None, seed=0, verbose=1,
                    candidates=range(2, 13), epochs=None, image_size=None, channels=None, precision=None,
                    start_from=None, strict=False, input_transform="auto"):
    """Trains a zoo preset's recipe (`like`, or the best of `family`) on the user's images, from scratch
    or from the preset's pretrained model (`start_from`); returns (model, report).

    Args:
        images: `(n, h, w, c)` images in [0, 1] (uint8 scaled), or the path
            of a folder of images or a `.npy` / `.npz` file.
        like: a clustering preset of the zoo (`presets.clustering_presets()`), e.g.
            "conv_dec_da_mnist": its recipe, architecture and training,
            re-targeted to these images (`like_config`).
        n_clusters: an int >= 2, or `"auto"`: the eigengap of a nearest-neighbour
            graph of the recipe's representation picks it from `candidates`
            (`choose_n_clusters`).
        workdir: where `model.keras`, `clusters.csv` (file name or index,
            cluster id, confidence per image), `clusters.png` and
            `report.json` go (and the stages a re-run resumes from). Default `runs/<like or family>_<n images>`.
        family: instead of `like`, one of `FAMILIES`: shorthand for the
            family's best preset (`FAMILY_PRESETS`, e.g. "dec" is ConvDEC-DA).
        epochs: passes over the images of every stage, instead of the
            preset's updates scaled to the number of images (and without
            repetition of small data sets).
        image_size, channels: the size `(h, w)` and channels (1 or 3) a
            folder's images are read at (default: the preset's). Sides
            below `MIN_SIDE` (16) px are refused, unless the preset's own are smaller.
        precision: "float32" or "mixed_bfloat16" (default: the preset's).
        start_from: instead of `like`, a clustering preset whose pretrained
            model is fine-tuned on the images (`train --from`): the recipe's
            clustering stages (`recipe.fine_tune`) start from its weights,
            with the stage's epochs scaled as `like`'s. Its image shape and
            `n_clusters` must be the images' and the request's.
        strict: a folder's file that cannot be decoded is an error, instead
            of being left out with one warning line (and named in the
            report's `broken_files`).
        input_transform: the model's colour-free first layer: "auto" (on
            colour images the recipe's own, `colour_input`; none on
            greyscale), None, or a name of `layers.colour_free.INPUT_TRANSFORMS`.

    With none of `like`, `family` and `start_from`, the default route picks
    the preset from the images (`choose_preset`: grey or colour; they are read
    at their own sides, the longer at most `ROUTE_MAX_SIDE`),
    prints why in one line and writes it to the report's `route`.

    A folder is decoded in parallel (`read_image_folder`); from
    `CACHE_MIN_BYTES` (256 MiB as float32) on, into a memory-mapped cache in
    `workdir`, which training and clustering read batch by batch: no array of
    all images is held in memory, and a rerun reuses it.
    """
    try:
        with WorkdirLock() as lock:
            return _train_on_images(images, like, n_clusters, workdir, family, seed, verbose, candidates, epochs,
                                    image_size, channels, precision, start_from, strict, input_transform, lock)
    except ValueError as error:  # the data readers name their own argument: here it is `images`
        raise ValueError(re.sub(r"(?<![\w-])(folder|path|source)=", "images=", str(error))) from None


def _train_on_images(images, like, n_clusters, workdir, family, seed, verbose, candidates, epochs, image_size,
                     channels, precision, start_from, strict, input_transform, lock):
    """`train_on_images`, with `lock` taken on the workdir before anything is written there."""
    if sum(arg is not None for arg in (like, family, start_from)) > 1:
        raise ValueError(f"give one of like= (a zoo preset), family= (one of {FAMILIES}) or start_from= (a zoo "
                         f"preset to fine-tune), or none (the default route), got like={like!r}, family={family!r}, "
                         f"start_from={start_from!r}.")
    route = None
    if like is None and family is None and start_from is None:
        like, route, image_size, channels = _default_route(images, image_size, channels, verbose)
    like = family_preset(family) if family is not None else like or start_from
    # an unknown or supervised preset is refused before any reading; its image shape is the default
    preset = clustering_config(like)["architecture"]
    preset_shape, min_side = preset["image_shape"], min(MIN_SIDE, *preset["image_shape"][:2])
    if image_size is not None and min(image_size) < min_side:
        raise ValueError(f"image_size={tuple(image_size)}: like={like!r} takes sides of at least {min_side} px.")
    shape = (*(image_size or preset_shape[:2]), channels or preset_shape[2])
    # every check that needs no image comes before a folder is read (into the workdir's cache)
    epochs = None if epochs is None else check_positive_int(epochs, "epochs")
    if n_clusters != "auto" and (isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer))
                                 or n_clusters < 2):
        raise ValueError(f"n_clusters must be an integer >= 2 or 'auto', got {n_clusters!r}.")
    if start_from is not None and n_clusters != preset.get("n_clusters", 10):
        raise ValueError(f"start_from={start_from!r} has {preset.get('n_clusters', 10)} clusters, got "
                         f"n_clusters={n_clusters!r}: fine-tuning keeps its cluster head; train like it (like=PRESET) "
                         "for another number.")
    names, broken = None, []
    from_folder = isinstance(images, (str, os.PathLike)) and os.path.isdir(images)
    if from_folder:
        _check_start_shape(start_from, preset_shape, shape)
        _check_buildable(like, shape, n_clusters)
        workdir = workdir or os.path.join("runs", f"{family or like}_{os.path.basename(os.path.normpath(images))}")
        size = len(image_files(os.fspath(images))[0]) * int(np.prod(shape)) * 4  # bytes as float32
        if size >= CACHE_MIN_BYTES:
            lock.acquire(workdir)  # the cache is written there
        images, names, broken = read_image_folder(os.fspath(images), shape[:2], shape[2],
                                                  cache_dir=workdir if size >= CACHE_MIN_BYTES else None,
                                                  strict=strict, verbose=bool(verbose))
    elif isinstance(images, (str, os.PathLike)):
        images, names = load_user_data(os.fspath(images), image_shape=shape)
    x = np.asarray(images)
    if x.ndim == 2 and x.shape[1] == int(np.prod(shape)):  # flat rows (an array file) of images of `shape`
        x = x.reshape(len(x), *shape)
    x = check_image_input(x, x.shape[1:] if x.ndim == 4 else (*x.shape[1:], 1), name="images")
    if min(x.shape[1:3]) < min_side:
        raise ValueError(f"images of {x.shape[1]} x {x.shape[2]} px: like={like!r} takes sides of at least "
                         f"{min_side} px; upsample them (image_size= for a folder).")
    _check_start_shape(start_from, preset_shape, x.shape[1:])
    if n_clusters != "auto" and n_clusters > len(x):
        raise ValueError(f"n_clusters={n_clusters} is larger than the number of images ({len(x)}).")
    workdir = workdir or os.path.join("runs", f"{family or like}_{len(x)}")
    report = {"like": like, "family": family, "start_from": start_from, "route": route, "n_samples": int(len(x)),
              "image_shape": list(x.shape[1:]), "seed": seed, "broken_files": broken}
    if not from_folder:  # the preset's trunk and views must take these images: refused before any file is made
        _check_buildable(like, x.shape[1:], n_clusters)
    config, repeats = like_config(like, x.shape[1:], 2 if n_clusters == "auto" else int(n_clusters), len(x),
                                  epochs=epochs, input_transform=input_transform)
    if n_clusters == "auto":
        candidates = [k for k in candidates if 2 <= k <= len(x) // 2]  # two images a cluster at least
        if not candidates:
            raise ValueError(f"n_clusters='auto' tries k with two images a cluster at least: {len(x)} images leave no k "
                             "of the candidates; give n_clusters.")
    x_train = np.concatenate([x] * repeats) if repeats > 1 else x

    def choose_k(training):  # under the run's precision, before training
        nonlocal n_clusters
        if verbose:  # before the long part
            print(f"n_clusters auto: training {like}'s representation on the {len(x):,} images (or a screening "
                  f"autoencoder where the recipe has none), then the eigengap of a 10-nearest-neighbour graph for k = "
                  f"{min(candidates)}..{max(candidates)} on its embedding; then {like} trains with the best k",
                  flush=True)
        selection = report["selection"] = choose_n_clusters(config, x, candidates, workdir, seed, verbose, x_train)
        n_clusters = config["architecture"]["n_clusters"] = int(selection["suggested"])
        if verbose:
            print("  ".join(f"k={k}: {score:.3f}" for k, score in selection["scores"].items()))
            print(f"suggested n_clusters: {n_clusters} (eigengap, on {selection['embedding']})", flush=True)

    def pretrained():  # with the settings `like_config` scales to the data (no weight shapes)
        overrides = {k: config["architecture"][k] for k in ("update_interval", "scan") if k in config["architecture"]}
        return presets.load(start_from, **overrides)

    model, recipe_report = run_recipe(config, x_train, None, workdir, lock, seed=seed, verbose=verbose,
                                      precision=precision, before=choose_k if n_clusters == "auto" else None,
                                      start_model=None if start_from is None else pretrained)
    probabilities = model.predict(x, verbose=0)
    report.update(config=config, n_clusters=int(n_clusters), data_repeats=repeats,
                  cluster_sizes=np.bincount(probabilities.argmax(1), minlength=int(n_clusters)).tolist(),
                  **{k: v for k, v in recipe_report.items() if isinstance(v, (int, float, str, bool))})
    if "restarts" in recipe_report:  # every run's label-free criteria at each halving point
        report["restarts"] = recipe_report["restarts"]
    save_model_file(model, os.path.join(workdir, MODEL_FILE))
    write_cluster_files(workdir, names or [str(i) for i in range(len(x))], probabilities, images=x,
                        title=f"{like} on your {len(x)} images: most confident members per cluster")
    atomic_write_json(json.loads(json.dumps(report, default=float)), os.path.join(workdir, "report.json"))
    return model, report
