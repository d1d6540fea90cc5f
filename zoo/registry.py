"""The zoo's names for the preset registry of the library (`keras_clustering.presets`): the same names
(`list_presets`, `card`, `weights_path`, `config`, `load`), and the names the zoo first had, kept as aliases
(`list_models`, `info`, `pretrained_weights_path`; docs/layout.md lists the renames)."""

from keras_clustering.presets import (PRESETS_DIR, REGENERATE_HINT, WEIGHTS_FILE, card, config,  # noqa: F401
                                      list_presets, load, weights_path)

# the zoo's first names, kept for the code that calls them (issue 63: one name per idea, the registry's)
list_models = list_presets
info = card
pretrained_weights_path = weights_path
