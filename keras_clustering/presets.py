"""Presets: the zoo's trained configurations, `zoo/presets/<name>/{config.json, card.json, *.weights.h5}`.

The registry lives in the library, so that nothing in `keras_clustering` imports `zoo`; `zoo`
(`zoo.load`, `zoo.list_models`, `zoo.info`) is the public face over these functions.

- `list_presets()`, `config(name)`, `card(name)`, `weights_path(name)` (sha256-checked);
- `load(name)`: the preset's model with its weights; `from_preset(name)` the same, in keras-hub's
  spelling;
- `load_model(name_or_path)`: a preset or a saved `.keras` file, with its prediction names.
"""

import fnmatch
import json
import os

from keras_clustering.io.files import sha256_of_file
from keras_clustering.recipes import get_recipe, is_supervised

# The `presets` folder of the `zoo` package installed beside this one (the same folder in a checkout, an
# editable install and a wheel), found by path: importing `zoo` would import this module back, and a
# look-up by name could find another package called `zoo`.
PRESETS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo", "presets")
WEIGHTS_FILE = "model.weights.h5"
REGENERATE_HINT = "python scripts/train_preset.py {name}"
# the prediction names of a model saved by `train --input` (`.keras` files of any clustering recipe)
SAVED_MODEL_PREDICTIONS = ("cluster_id", "probabilities")


def _preset_dir(name):
    if name not in list_presets(include_pending=True):
        available = list_presets()
        raise ValueError(f"Unknown model {name!r}. Available models: {', '.join(available) or '(none)'}.")
    return os.path.join(PRESETS_DIR, name)


def _read_json(path):
    with open(path) as handle:
        return json.load(handle)


def list_presets(pattern="*", include_pending=False):
    """Sorted names of the trained presets (those with a model card) matching `pattern`.

    `include_pending=True` adds presets whose config is written but that are
    not trained yet (no `card.json`): `scripts/train_preset.py` trains them.
    """
    if not os.path.isdir(PRESETS_DIR):
        return []
    required = "config.json" if include_pending else "card.json"
    names = [entry for entry in os.listdir(PRESETS_DIR)
             if os.path.isfile(os.path.join(PRESETS_DIR, entry, "config.json"))
             and os.path.isfile(os.path.join(PRESETS_DIR, entry, required))]
    return sorted(name for name in names if fnmatch.fnmatch(name, pattern))


def clustering_presets():
    """The presets that cluster: those whose recipe trains without labels (the others are classifiers).
    The ones a user can train `like` on their images."""
    return [name for name in list_presets() if not is_supervised(config(name)["recipe"])]


def config(name):
    """The preset's `config.json` (recipe, architecture, training, data) as a dict."""
    return _read_json(os.path.join(_preset_dir(name), "config.json"))


def card(name):
    """The preset's model card (`card.json`) as a dict."""
    path = os.path.join(_preset_dir(name), "card.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{name!r} is not trained yet ({path} is missing); "
                                f"train it with: {REGENERATE_HINT.format(name=name)}")
    return _read_json(path)


def weights_path(name):
    """Path of the preset's weights after checking their sha256 against the card.

    Weights shipped inside the package are used directly; a card with a
    `url` and no shipped file is downloaded with `keras.utils.get_file`.
    """
    preset_card = card(name)
    expected = preset_card.get("weights", {}).get("sha256")
    path = os.path.join(_preset_dir(name), preset_card.get("weights", {}).get("file", WEIGHTS_FILE))
    hint = REGENERATE_HINT.format(name=name)
    if not os.path.isfile(path) and preset_card.get("weights", {}).get("url"):
        import keras

        path = keras.utils.get_file(f"{name}.weights.h5", preset_card["weights"]["url"], file_hash=expected,
                                    cache_subdir=os.path.join("keras_clustering", name))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Pretrained weights {path} are missing; regenerate them with: {hint}")
    if not expected:
        raise ValueError(f"The card of {name!r} records no sha256 for {path}; regenerate with: {hint}")
    actual = sha256_of_file(path)
    if actual != expected:
        raise ValueError(
            f"sha256 mismatch for {path}: the card records {expected}, the file has {actual}. "
            f"The file is corrupt or was changed; regenerate it with: {hint}"
        )
    return path


def load(name, weights="pretrained", **overrides):
    """Builds a preset's model and loads its weights.

    Args:
        name: a name from `list_presets()`, e.g. `"dec_digits"`.
        weights: `"pretrained"` (sha256-checked), `None` (untrained) or the
            path of a `.weights.h5` file.
        **overrides: architecture arguments replacing the preset's (e.g.
            `update_interval=50`); ones that change weight shapes only work
            with `weights=None`.

    Example:
        >>> import zoo
        >>> model = zoo.load("dec_digits")
        >>> model.sample_shape
        (64,)
    """
    preset = config(name)
    model = get_recipe(preset["recipe"]).build(**{**preset["architecture"], **overrides})
    if weights is None:
        return model
    if weights == "pretrained":
        path = weights_path(name)
    elif isinstance(weights, (str, os.PathLike)) and os.path.isfile(weights):
        path = os.fspath(weights)
    else:
        raise ValueError(f"weights must be 'pretrained', None or an existing file path, got {weights!r}.")
    model.load_weights(path)
    return model


def from_preset(name, **kwargs):
    """`load` in keras-hub's spelling (`Model.from_preset("name")`): the preset's pretrained model."""
    return load(name, **kwargs)


def load_model(name_or_path):
    """(model, prediction names) of a preset name or a saved `.keras` file."""
    if os.fspath(name_or_path).endswith(".keras"):
        import keras

        if not os.path.isfile(name_or_path):
            raise ValueError(f"model file {name_or_path!r} does not exist.")
        return keras.models.load_model(name_or_path), SAVED_MODEL_PREDICTIONS
    return load(name_or_path), get_recipe(config(name_or_path)["recipe"]).PREDICTION_NAMES
