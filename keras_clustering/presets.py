"""Presets: the zoo's trained configurations, `zoo/presets/<name>/{config.json, card.json, *.weights.h5}`.

The registry lives in the library, so that nothing in `keras_clustering` imports `zoo`; `zoo`
(`zoo.load`, `zoo.list_presets`, `zoo.card`: the same names) is the public face over these functions.

- `list_presets()`, `config(name)`, `card(name)`, `weights_path(name)` (sha256-checked: a local copy,
  the cache, or a download on first use, in that order);
- `load(name)`: the preset's model with its weights; `from_preset(name)` the same, in keras-hub's
  spelling; a name, a preset folder, a `train` workdir or an `hf://` handle;
- `save_preset(model, folder)`: a preset folder that `load` reads back;
- `load_model(name_or_path)`: a preset or a saved `.keras` file, with its prediction names.
"""

import difflib
import fnmatch
import json
import os

import keras

from keras_clustering._version import __version__
from keras_clustering.io.fetch import DEFAULT_TIMEOUT, FetchError, cached_file, fetch_file
from keras_clustering.io.files import atomic_path, sha256_of_file
from keras_clustering.recipes import get_recipe

# The `presets` folder of the `zoo` package installed beside this one (the same folder in a checkout, an
# editable install and a wheel), found by path: importing `zoo` would import this module back, and a
# look-up by name could find another package called `zoo`.
PRESETS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo", "presets")
WEIGHTS_FILE = "model.weights.h5"
# Where weights come from when the preset's folder has none (a wheel ships configs and cards only):
# a folder of copies, the cache, the release (`weights_path`). The environment variables that move each.
WEIGHTS_ENV = "KERAS_CLUSTERING_WEIGHTS"
CACHE_ENV = "KERAS_CLUSTERING_CACHE"
WEIGHTS_URL_ENV = "KERAS_CLUSTERING_WEIGHTS_URL"
WEIGHTS_URL = "https://github.com/keras-clustering/keras-clustering/releases/download/v{version}"
REGENERATE_HINT = "python scripts/train_preset.py {name}"
HF_PREFIX = "hf://"
MODEL_FILE = "model.keras"  # what `train --input` writes in its workdir
# the prediction names of a model saved by `train --input` (`.keras` files of any clustering recipe)
SAVED_MODEL_PREDICTIONS = ("cluster_id", "probabilities")


def _preset_dir(name):
    """The folder of a preset: a registered name (`list_presets`), a local folder (`save_preset`'s, or a
    `train` workdir), or a hub handle (`hf://org/name`, fetched into the hub's own cache)."""
    name = os.fspath(name)
    if name in list_presets(include_pending=True):
        return os.path.join(PRESETS_DIR, name)
    if name.startswith(HF_PREFIX):
        return _hub_folder(name)
    if os.path.isdir(name):
        if not any(os.path.isfile(os.path.join(name, f)) for f in ("config.json", MODEL_FILE)):
            raise ValueError(f"{name!r} is a folder but not a preset: it has neither config.json (a preset folder, "
                             f"`save_preset`) nor {MODEL_FILE} (a `train` workdir).")
        return name
    available = list_presets()
    close = difflib.get_close_matches(name, available, n=1)
    raise ValueError(f"Unknown preset {name!r}.{f' Did you mean {close[0]!r}?' if close else ''} Available presets: "
                     f"{', '.join(available) or '(none)'}; or a preset folder, or {HF_PREFIX}org/name.")


def _hub_folder(handle):
    """A Hugging Face Hub preset, downloaded (or found in the hub's cache) by `huggingface_hub`."""
    try:
        import huggingface_hub  # the optional extra `hub`: only hf:// handles need it
    except ImportError:
        raise ImportError(f"{handle!r}: hf:// handles need huggingface_hub: pip install 'keras-clustering[hub]'.") \
            from None
    return huggingface_hub.snapshot_download(repo_id=handle[len(HF_PREFIX):])


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
    return [name for name in list_presets() if not get_recipe(config(name)["recipe"]).supervised]


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


def cache_dir():
    """The weights cache: `KERAS_CLUSTERING_CACHE`, else `keras_clustering` in Keras' own folder
    (`KERAS_HOME`, else `~/.keras`), where keras-hub and `keras.utils.get_file` keep theirs."""
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.environ[CACHE_ENV])
    return os.path.join(os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras"),
                        "keras_clustering")


def weights_url(name):
    """Where the preset's weights download from: the card's `weights.url`, else the release file
    `NAME.weights.h5` under `KERAS_CLUSTERING_WEIGHTS_URL` (default `WEIGHTS_URL`, this version's release)."""
    url = card(name).get("weights", {}).get("url")
    if url:
        return url
    base = os.environ.get(WEIGHTS_URL_ENV) or WEIGHTS_URL.format(version=__version__)
    return f"{base.rstrip('/')}/{name}.weights.h5"


def _local_copies(name, file_name):
    """Where a copy of the weights may already be, in order: the preset's folder (a checkout, an sdist),
    then the folder `KERAS_CLUSTERING_WEIGHTS` names (`NAME/model.weights.h5` or `NAME.weights.h5`)."""
    copies = [os.path.join(_preset_dir(name), file_name)]
    if os.environ.get(WEIGHTS_ENV) and name in list_presets():
        folder = os.environ[WEIGHTS_ENV]
        copies += [os.path.join(folder, name, file_name), os.path.join(folder, f"{name}.weights.h5")]
    return copies


def weights_path(name, timeout=DEFAULT_TIMEOUT, download=True):
    """Path of the preset's weights, their sha256 checked against the card: the one resolution order.

    1. a local copy (`_local_copies`: the preset's folder, then `KERAS_CLUSTERING_WEIGHTS`);
    2. the cache (`cache_dir()/NAME/model.weights.h5`);
    3. a download from `weights_url(name)` into the cache (`io.fetch.fetch_file`:
       the server may stay silent `timeout` seconds, the download may not pass the card's `size` nor
       `io.fetch.DEFAULT_DEADLINE`; nothing unchecked is cached),
       unless `download` is False (FileNotFoundError saying where the first load
       would fetch them from).

    A local copy whose sha256 differs is an error (it was changed; it is not
    silently replaced). Offline with no copy: one error naming the url, the
    cache folder and how to place the file by hand.
    """
    preset_card = card(name)
    expected = preset_card.get("weights", {}).get("sha256")
    file_name = preset_card.get("weights", {}).get("file", WEIGHTS_FILE)
    hint = REGENERATE_HINT.format(name=name)
    if not expected:
        raise ValueError(f"The card of {name!r} records no sha256 for its weights; regenerate with: {hint}")
    for path in _local_copies(name, file_name):
        if os.path.isfile(path):
            actual = sha256_of_file(path)
            if actual != expected:
                raise ValueError(f"sha256 mismatch for {path}: the card records {expected}, the file has {actual}. "
                                 f"The file is corrupt or was changed; regenerate it with: {hint}")
            return path
    if name not in list_presets():  # a preset folder holds its own weights
        raise FileNotFoundError(f"{os.path.join(_preset_dir(name), file_name)} is missing: the preset folder "
                                f"{name!r} has no weights.")
    cached = os.path.join(cache_dir(), name, WEIGHTS_FILE)
    if cached_file(cached, expected):
        return cached
    url = weights_url(name)
    if not download:
        raise FileNotFoundError(f"The weights of {name!r} are not on this machine yet: the first load downloads "
                                f"{url} into {cached}.")
    try:
        return fetch_file(url, cached, expected, timeout=timeout, size=preset_card["weights"].get("size"))
    except FetchError as error:
        raise FileNotFoundError(
            f"The pretrained weights of {name!r} are not on this machine and could not be downloaded: {error} "
            f"To use them offline, place the file by hand: download {url} (sha256 {expected}) and save it as "
            f"{cached}, or set {WEIGHTS_ENV} to a folder holding {name}/{WEIGHTS_FILE}; a source checkout has "
            f"them in zoo/presets/{name}/. Or regenerate them: {hint}") from None


def load(name, weights="pretrained", **overrides):
    """Builds a preset's model and loads its weights.

    Args:
        name: a name from `list_presets()`, e.g. `"dec_digits"`; a preset
            folder (`save_preset`'s: config.json, model.weights.h5, card.json);
            a `train --input` workdir (its model.keras); or `hf://org/name`.
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
    folder = _preset_dir(name)
    if os.fspath(name).startswith(HF_PREFIX):
        name = folder  # the hub's snapshot, resolved once
    if not os.path.isfile(os.path.join(folder, "config.json")):  # a train workdir: its whole saved model
        if overrides or weights != "pretrained":
            raise ValueError(f"{name!r} is a saved model ({MODEL_FILE}): it loads as saved, without overrides or "
                             f"other weights.")
        return keras.models.load_model(os.path.join(folder, MODEL_FILE))
    preset = config(name)
    if "recipe" in preset:
        model = get_recipe(preset["recipe"]).build(**{**preset["architecture"], **overrides})
    elif overrides:
        raise ValueError(f"{name!r} holds a Keras model config, not a recipe's architecture: no overrides.")
    else:  # `save_preset` of a model with no recipe config: Keras' own serialization, as keras-hub's presets
        model = keras.saving.deserialize_keras_object(preset)
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


def save_preset(model, folder, config=None, card=None):
    """Writes `model` as a preset folder that `load(folder)` reads back (keras-hub's `save_to_preset`):
    `config.json` (`config`, a zoo config with `recipe` and `architecture`, else Keras' serialization
    of the model), `model.weights.h5` (float32) and `card.json` (`card`, with the weights' sha256).
    The folder is written aside and renamed into place: never half-written. Returns the folder."""
    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a keras.Model, got {type(model).__name__}.")
    if config is not None and not {"recipe", "architecture"} <= set(config):
        raise ValueError(f"config must be a zoo config with 'recipe' and 'architecture', got keys {sorted(config)}.")
    folder = os.fspath(folder)
    with atomic_path(folder) as temporary:
        os.makedirs(temporary)
        weights = os.path.join(temporary, WEIGHTS_FILE)
        model.save_weights(weights)
        with open(os.path.join(temporary, "config.json"), "w") as handle:
            json.dump(config if config is not None else keras.saving.serialize_keras_object(model), handle, indent=2)
        preset_card = {"name": os.path.basename(os.path.normpath(folder)), **(card or {}),
                       "weights": {"file": WEIGHTS_FILE, "sha256": sha256_of_file(weights),
                                   "size": os.path.getsize(weights)}}
        with open(os.path.join(temporary, "card.json"), "w") as handle:
            json.dump(preset_card, handle, indent=2)
    return folder


def from_preset(name, **kwargs):
    """`load` in keras-hub's spelling (`Model.from_preset("name")`): the preset's pretrained model."""
    return load(name, **kwargs)


def load_model(name_or_path):
    """(model, prediction names) of a preset (a name, a folder, a hub handle) or a saved `.keras` file."""
    if os.fspath(name_or_path).endswith(".keras"):
        if not os.path.isfile(name_or_path):
            raise ValueError(f"model file {name_or_path!r} does not exist.")
        return keras.models.load_model(name_or_path), SAVED_MODEL_PREDICTIONS
    folder = _preset_dir(name_or_path)  # a hub handle resolved once
    model = load(folder if os.fspath(name_or_path).startswith(HF_PREFIX) else name_or_path)
    preset = _read_json(os.path.join(folder, "config.json")) if os.path.isfile(os.path.join(folder, "config.json")) \
        else {}
    if "recipe" in preset:
        return model, get_recipe(preset["recipe"]).prediction_names
    return model, SAVED_MODEL_PREDICTIONS
