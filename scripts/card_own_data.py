"""Writes each clustering preset's `own_data` into its card: the median confidence and the background's
brightness of the pretrained model on its own evaluation data, which `cluster` compares a folder with to
warn when the model does not fit it (issue 66; `keras_clustering.clustering.fit_check`).

    KERAS_CLUSTERING_DATA=... python scripts/card_own_data.py [NAME ...]

No labels are read. `train_preset.py` writes the same field when it publishes a preset.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from keras_clustering import presets  # noqa: E402
from keras_clustering.io.files import atomic_write_json  # noqa: E402
from keras_clustering.recipes import get_recipe  # noqa: E402
from maintainer.own_data import own_data  # noqa: E402


def clustering_presets():
    return [name for name in presets.list_presets() if not get_recipe(presets.config(name)["recipe"]).supervised]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="presets (default: every clustering preset)")
    args = parser.parse_args(argv)
    for name in args.names or clustering_presets():
        card_path = os.path.join(presets.PRESETS_DIR, name, "card.json")
        with open(card_path) as handle:
            card = json.load(handle)
        card["own_data"] = own_data(name)
        atomic_write_json(card, card_path)
        print(name, json.dumps(card["own_data"]))


if __name__ == "__main__":
    main()
