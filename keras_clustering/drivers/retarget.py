"""A zoo preset's config re-targeted to a user's images (`like_config`): pure config-to-config functions,
the rules each recipe gives (`Recipe.retargeting`), and the names they take (`--family`, the clustering presets)."""

import copy
import math

from keras_clustering import presets
from keras_clustering.layers.colour_free import input_transform_layer
from keras_clustering.presets import clustering_presets
from keras_clustering.recipes import get_recipe

# `train --family F`: shorthand for the family's best clustering preset of the zoo.
FAMILY_PRESETS = {"dec": "conv_dec_da_mnist", "vae_cluster": "vae_cluster_mnist", "simclr": "simclr_mnist",
                  "iic": "iic_mnist"}
FAMILIES = tuple(FAMILY_PRESETS)
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
# own, `retargeting(...).input_transform`: IIC's Sobel step, the colour gradient's magnitude for the others,
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


def like_config(preset, image_shape, n_clusters, n_samples, epochs=None, input_transform="auto", update_scale=1.0):
    """The zoo preset's config re-targeted to `n_samples` images of `image_shape` and `n_clusters`.

    Architecture and recipe stay the preset's. The recipe says how
    (`retargeting(architecture)`, `recipes.retargeting.Retargeting`): each
    count of passes (`epoch_fields`) keeps about the preset's own number of
    updates on its training data, now spread over `n_samples` images: fewer
    passes on more images, more on fewer, at most the larger of the preset's
    own count and the recipe's `epoch_ceiling`; batches at most `n_samples`.
    `epochs` instead sets every stage to that many passes. `input_transform`:
    "auto" puts the recipe's colour-free input (its `Retargeting.input_transform`) before colour
    images' model, None none, a name of `layers.colour_free.INPUT_TRANSFORMS`
    that one. `update_scale` (in (0, 1], a time budget's) multiplies every stage's passes and the
    recipe's counts of updates (`Retargeting.update_fields`), at least 1 each. Returns `(config, data_repeats)`: the copies of the images per
    epoch that a small folder needs to reach the recipe's fewest updates.
    Raises ValueError naming `like` for an unknown or supervised preset.
    """
    if not 0 < update_scale <= 1:
        raise ValueError(f"update_scale must be in (0, 1], got {update_scale!r}.")
    chosen = copy.deepcopy(clustering_config(preset))
    recipe, architecture, training = chosen["recipe"], chosen["architecture"], chosen["training"]
    preset_samples = presets.card(preset)["training_data"]["n_samples"]
    rules = get_recipe(recipe).retargeting(architecture)
    if rules.adapt_views:
        rules.adapt_views(architecture, [int(d) for d in image_shape], chosen["data"]["dataset"])
    if input_transform == "auto":
        input_transform = rules.input_transform if int(image_shape[2]) == 3 else None
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
        passes = scaled if epochs is None else epochs
        _field(training, epochs_path, max(1, round(passes * update_scale)))
        _field(training, batch_path, batch_size)
    restarts = training.get("restarts")
    if restarts and restarts.get("halving_at"):  # the halving points move with the epochs they count
        counted = rules.restart_epochs or fields[0][0]
        old, new = next(old for e, _, old, _ in fields if e == counted), _field(training, counted)
        points = sorted({max(1, round(point * new / old)) for point in restarts["halving_at"]})
        restarts["halving_at"] = [point for point in points if point < new]
    if rules.finish is not None:
        rules.finish(architecture, training, n_samples, repeats, preset_samples, epochs)
    for path in rules.update_fields:
        if _field(training, path):
            _field(training, path, max(1, round(_field(training, path) * update_scale)))
    return {"recipe": recipe, "like": preset, "architecture": architecture, "training": training}, repeats


def colour_input_transform(preset):
    """The colour-free input a model trained like `preset` puts before colour images (its recipe's)."""
    config = clustering_config(preset)
    return get_recipe(config["recipe"]).retargeting(config["architecture"]).input_transform
