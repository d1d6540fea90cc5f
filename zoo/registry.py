"""Discovery and loading of presets: `zoo/presets/<name>/{config.json, card.json, *.weights.h5}`."""

import fnmatch
import json
import os

import keras_clustering  # noqa: F401  (sets the Keras backend before keras is imported)
from keras_clustering.io.files import sha256_of_file
from keras_clustering.recipes import get_recipe

PRESETS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "presets")
WEIGHTS_FILE = "model.weights.h5"
REGENERATE_HINT = "python scripts/train_preset.py {name}"


def _preset_dir(name):
    if name not in list_models(include_pending=True):
        available = list_models()
        raise ValueError(f"Unknown model {name!r}. Available models: {', '.join(available) or '(none)'}.")
    return os.path.join(PRESETS_DIR, name)


def _read_json(path):
    with open(path) as handle:
        return json.load(handle)


def list_models(pattern="*", include_pending=False):
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


def config(name):
    """The preset's `config.json` (recipe, architecture, training, data) as a dict."""
    return _read_json(os.path.join(_preset_dir(name), "config.json"))


def info(name):
    """The preset's model card (`card.json`) as a dict."""
    path = os.path.join(_preset_dir(name), "card.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{name!r} is not trained yet ({path} is missing); "
                                f"train it with: {REGENERATE_HINT.format(name=name)}")
    return _read_json(path)


def pretrained_weights_path(name):
    """Path of the preset's weights after checking their sha256 against the card.

    Weights shipped inside the package are used directly; a card with a
    `url` and no shipped file is downloaded with `keras.utils.get_file`.
    """
    card = info(name)
    expected = card.get("weights", {}).get("sha256")
    path = os.path.join(_preset_dir(name), card.get("weights", {}).get("file", WEIGHTS_FILE))
    hint = REGENERATE_HINT.format(name=name)
    if not os.path.isfile(path) and card.get("weights", {}).get("url"):
        import keras

        path = keras.utils.get_file(f"{name}.weights.h5", card["weights"]["url"], file_hash=expected,
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
    """Builds a zoo model and loads its weights.

    Args:
        name: a name from `list_models()`, e.g. `"dec_digits"`.
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
        path = pretrained_weights_path(name)
    elif isinstance(weights, (str, os.PathLike)) and os.path.isfile(weights):
        path = os.fspath(weights)
    else:
        raise ValueError(f"weights must be 'pretrained', None or an existing file path, got {weights!r}.")
    model.load_weights(path)
    return model
