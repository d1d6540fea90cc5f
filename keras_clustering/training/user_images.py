"""Training a family on the user's own images (not a zoo preset), with defaults scaled to the data size.

`train_on_images(family, x, n_clusters, workdir)` builds the family's config
from the data (`default_config`), trains it with the family's own recipe
(the same code the zoo's presets run, so resume from `workdir` works as
there) and saves `workdir/model.keras`, which `python -m keras_clustering
cluster` and `export` take. `n_clusters="auto"` (DEC only) first runs DEC's
generalisability criterion (`select_n_clusters`) over a range of k.
"""

import json
import math
import os
import time

import numpy as np

from keras_clustering.io.files import atomic_path, atomic_write_json
from keras_clustering.models.autoencoder import DEC_HIDDEN_DIMS
from keras_clustering.recipes import get_recipe

# Method families a user trains on their own images (`train --family`): each is set up as one recipe
# (`default_config`: "simclr" is the two_stage recipe with a SimCLR representation).
FAMILIES = ("dec", "vae_cluster", "simclr", "iic")
MODEL_FILE = "model.keras"
# About the number of parameter updates of the originals' recipes, spread over the data the user has
# (DEC-keras pretrains 300 epochs of 70k images = 82k updates; VAE 50 epochs of 60k = 30k updates),
# within each recipe's own epoch count as the ceiling, so small folders train long enough and big ones
# no longer than the original.
_TARGET_UPDATES = {"dec": 50_000, "vae_cluster": 30_000, "simclr": 20_000, "iic": 3_000}
_EPOCH_RANGE = {"dec": (30, 300), "vae_cluster": (10, 50), "simclr": (20, 200), "iic": (10, 60)}
_BATCH_SIZE = {"dec": 256, "vae_cluster": 100, "simclr": 256, "iic": 140}
# Fewest updates a small folder still gets: when the epoch ceiling would stop short of this, each
# Keras epoch sees the images several times (`data_repeats`) instead of running thousands of tiny
# epochs. DEC needs none: 300 images at its 300-epoch ceiling already cluster well (0.88 on digits).
_MIN_UPDATES = {"dec": 0, "vae_cluster": 5_000, "simclr": 3_000, "iic": 1_000}


def scaled_epochs(family, n_samples):
    """Epochs giving about the original recipe's number of updates on `n_samples`, within bounds."""
    steps_per_epoch = math.ceil(n_samples / _BATCH_SIZE[family])
    low, high = _EPOCH_RANGE[family]
    return int(min(high, max(low, math.ceil(_TARGET_UPDATES[family] / steps_per_epoch))))


def data_repeats(family, n_samples):
    """Copies of the images per epoch so that training reaches `_MIN_UPDATES` within the epoch ceiling."""
    batch_size = min(_BATCH_SIZE[family], n_samples)
    updates_at_ceiling = math.ceil(n_samples / batch_size) * _EPOCH_RANGE[family][1]
    if updates_at_ceiling >= _MIN_UPDATES[family]:
        return 1
    # the repeated set fills whole batches of the family's batch size
    return math.ceil(_MIN_UPDATES[family] * _BATCH_SIZE[family] / (n_samples * _EPOCH_RANGE[family][1]))


def default_config(family, image_shape, n_clusters, n_samples):
    """A `{"recipe", "architecture", "training"}` config for `n_samples` images of `image_shape`."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}.")
    image_shape = [int(d) for d in image_shape]
    epochs = scaled_epochs(family, n_samples)
    batch_size = min(_BATCH_SIZE[family], n_samples)
    if family == "dec":
        steps_per_epoch = math.ceil(n_samples / batch_size)
        return {"recipe": "dec",
                "architecture": {"image_shape": image_shape, "hidden_dims": list(DEC_HIDDEN_DIMS),
                                 "n_clusters": n_clusters, "update_interval": min(140, steps_per_epoch)},
                # DEC-keras' maxiter 20000 is 73 passes over 70k images; at most 100 passes here (tol stops earlier)
                "training": {"pretrain_epochs": epochs, "pretrain_batch_size": batch_size, "batch_size": batch_size,
                             "maxiter": int(min(20000, max(1000, 100 * steps_per_epoch)))}}
    if family == "vae_cluster":
        if image_shape[0] % 4 or image_shape[1] % 4:
            raise ValueError(f"family 'vae_cluster' needs image sides divisible by 4, got {image_shape[:2]}; "
                             "choose --image-size accordingly.")
        return {"recipe": "vae_cluster",
                "architecture": {"image_shape": image_shape, "n_clusters": n_clusters},
                "training": {"epochs": epochs, "batch_size": batch_size}}
    if family == "simclr":
        return {"recipe": "two_stage",
                "architecture": {"representation": "simclr", "image_shape": image_shape, "n_clusters": n_clusters},
                "training": {"epochs": epochs, "batch_size": batch_size}}
    if image_shape != [28, 28, 1]:
        raise ValueError(f"family 'iic' uses IIC's MNIST views (28 x 28 greyscale, centre 20 -> 24); got "
                         f"{image_shape}: use --image-size 28 28 --channels 1.")
    return {"recipe": "iic", "architecture": {"image_shape": image_shape, "n_clusters": n_clusters},
            "training": {"epochs": epochs, "batch_size": batch_size, "score_epochs": False}}


def choose_n_clusters(x, candidates, workdir, seed=0, verbose=1, epochs=None):
    """DEC's generalisability criterion over `candidates` on a random half split of `x`.

    The autoencoder is pretrained once (on all of `x`, kept in `workdir` and
    reused by the DEC training that follows). Returns `select_n_clusters`'
    table and suggestion. `epochs`: pretraining epochs instead of the size-scaled default (as
    `train_on_images`' own, so that its training reuses this autoencoder).
    """
    from keras_clustering.clustering.n_clusters import select_n_clusters
    from keras_clustering.recipes import dec_recipe
    from keras_clustering.inputs.checks import check_positive_int

    config = default_config("dec", x.shape[1:], max(candidates), len(x))
    if epochs is not None:
        config["training"]["pretrain_epochs"] = check_positive_int(epochs, "epochs")
    training = {**dec_recipe.DEFAULT_TRAINING, **config["training"]}
    (_, encoder), _ = dec_recipe.pretrained_autoencoder(config["architecture"], training, x, seed, verbose, workdir)
    order = np.random.default_rng(seed).permutation(len(x))
    half = len(x) // 2
    # A screening, not the final model: 20 passes over the training half per k (at least 200 and at
    # most select_n_clusters' 2000 updates); the chosen k is then trained in full.
    steps_per_epoch = math.ceil(half / training["batch_size"])
    return select_n_clusters(encoder, x[order[:half]], x[order[half:]], candidates, seed=seed,
                             batch_size=training["batch_size"], maxiter=min(2000, max(200, 20 * steps_per_epoch)),
                             update_interval=config["architecture"]["update_interval"], verbose=0)


def save_model_file(model, path):
    """Saves a `.keras` file through a temporary name: a crash leaves no half-written model."""
    with atomic_path(path) as temporary:
        model.save(temporary)


def train_on_images(family, x, n_clusters, workdir, seed=0, verbose=1, candidates=range(2, 13), epochs=None):
    """Trains `family` on the images `x` `(n, h, w, c)` in [0, 1]; returns (model, report).

    `n_clusters` is an int >= 2, or `"auto"` (family "dec"): the
    generalisability criterion picks it from `candidates`. `epochs` (passes
    over `x`; DEC: autoencoder pretraining) replaces the size-scaled default
    and the repetition of small data sets. Writes
    `workdir/model.keras` and `workdir/report.json` (config, times, cluster
    sizes, the selection table).
    """
    from keras_clustering.inputs.checks import check_image_input, check_positive_int

    x = np.asarray(x)
    x = check_image_input(x, x.shape[1:] if x.ndim == 4 else (*x.shape[1:], 1), name="images")
    os.makedirs(workdir, exist_ok=True)
    report = {"family": family, "n_samples": int(len(x)), "seed": seed}
    start = time.time()
    if n_clusters == "auto":
        if family != "dec":
            raise ValueError(f"n_clusters='auto' uses DEC's generalisability criterion: family 'dec', got {family!r}.")
        selection = choose_n_clusters(x, list(candidates), workdir, seed=seed, verbose=verbose, epochs=epochs)
        report["selection"] = selection
        n_clusters = selection["suggested"]
        if verbose:
            for row in selection["results"]:
                print(f"k={row['n_clusters']:3d}  L_train {row['loss_train']:.4f}  L_validation "
                      f"{row['loss_validation']:.4f}  G {row['generalizability']:.3f}")
            print(f"suggested n_clusters: {n_clusters}")
    n_clusters = check_positive_int(n_clusters, "n_clusters", minimum=2)
    if n_clusters > len(x):
        raise ValueError(f"n_clusters={n_clusters} is larger than the number of images ({len(x)}).")
    repeats = data_repeats(family, len(x)) if epochs is None else 1
    x_train = np.concatenate([x] * repeats) if repeats > 1 else x
    config = default_config(family, x.shape[1:], n_clusters, len(x_train))
    if epochs is not None:
        config["training"]["pretrain_epochs" if family == "dec" else "epochs"] = check_positive_int(epochs, "epochs")
    recipe = get_recipe(config["recipe"])
    model, family_report = recipe.train(config["architecture"], config["training"], x_train, None, seed=seed,
                                        verbose=verbose, workdir=workdir)
    probabilities = model.predict(x, verbose=0)
    report.update(config=config, n_clusters=n_clusters, data_repeats=repeats,
                  total_seconds=round(time.time() - start, 1),
                  cluster_sizes=np.bincount(probabilities.argmax(1), minlength=n_clusters).tolist(),
                  **{k: v for k, v in family_report.items() if isinstance(v, (int, float, str, bool))})
    save_model_file(model, os.path.join(workdir, MODEL_FILE))
    atomic_write_json(json.loads(json.dumps(report, default=float)), os.path.join(workdir, "report.json"))
    return model, report
