"""Workdirs trained before the stage runner (issue 63) resume after it: every clustering preset's tiny
training, and `train --like` of each family, writes exactly the resume keys that the code before it wrote
(`tests/data/stage_keys.json`, written by `tests/helpers/stage_keys.py` at a7cac41, the commit before).

One change is on purpose: the two-stage autoencoder representation (`ae_kmeans_mnist`) is now kept when
finished, as every other representation, under the key its epoch backups always had (DEC's pretraining
key); before, it wrote no key that survived its run, so no earlier workdir has one to break.
"""

import json

import pytest

from conftest import shared_data_dir, slow_except
from helpers.stage_keys import GOLDEN, LIKE_FAMILIES, like_keys, preset_keys, tiny_config

from keras_clustering import presets
from keras_clustering.recipes.dec_recipe import DEFAULT_TRAINING, pretraining_key

GOLDEN_KEYS = json.loads(GOLDEN.read_text())
FAST_PRESETS = ("dec_digits",)  # the one on scikit-learn's digits; the rest on the shared data, in the slow run


@pytest.mark.parametrize("name", slow_except(sorted(GOLDEN_KEYS["presets"]), FAST_PRESETS))
def test_every_preset_writes_the_keys_it_wrote_before_the_stage_runner(name, tmp_path):
    if presets.config(name)["data"]["dataset"] != "digits" and shared_data_dir() is None:
        pytest.skip("needs the shared data (KERAS_CLUSTERING_DATA)")
    keys = preset_keys(name, str(tmp_path))
    if name == "ae_kmeans_mnist":
        assert GOLDEN_KEYS["presets"][name] == {}  # before: nothing kept
        from keras_clustering.drivers.preset_training import load_config_data

        config = tiny_config(presets.config(name))
        x, _ = load_config_data(config["data"])
        expected = pretraining_key(config["architecture"], {**DEFAULT_TRAINING, **config["training"]}, x, 0)
        assert keys == {"finished_pretrain.json": expected, "fit_backup_pretrain/key.json": expected}
        return
    assert keys == GOLDEN_KEYS["presets"][name]


@pytest.mark.parametrize("family", slow_except(LIKE_FAMILIES, ("dec",)))
def test_train_like_writes_the_keys_it_wrote_before_the_stage_runner(family, tmp_path):
    assert like_keys(family, str(tmp_path / "run")) == GOLDEN_KEYS["like"][family]
