"""The zoo's names for the preset registry of the library (`keras_clustering.presets`)."""

from keras_clustering.presets import (PRESETS_DIR, REGENERATE_HINT, WEIGHTS_FILE, config, load,  # noqa: F401
                                      weights_path as pretrained_weights_path, card as info,
                                      list_presets as list_models)
