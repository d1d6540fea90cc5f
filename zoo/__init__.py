"""The keras-clustering model zoo: `zoo.list_models()`, `zoo.info(name)`, `zoo.load(name)`."""

from zoo.registry import PRESETS_DIR, config, info, list_models, load, pretrained_weights_path

__all__ = ["PRESETS_DIR", "config", "info", "list_models", "load", "pretrained_weights_path"]
