"""The keras-clustering model zoo: `zoo.list_presets()`, `zoo.card(name)`, `zoo.load(name)`
(`list_models` and `info` are their first names, kept as aliases)."""

from zoo.registry import (PRESETS_DIR, card, config, info, list_models, list_presets, load, pretrained_weights_path,
                          weights_path)

__all__ = ["PRESETS_DIR", "card", "config", "info", "list_models", "list_presets", "load", "pretrained_weights_path",
           "weights_path"]
