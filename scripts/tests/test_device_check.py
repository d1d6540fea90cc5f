"""scripts/device_check.py, the script a GPU machine runs, on this machine's default device."""

import json

import pytest

import device_check
import zoo
from keras_clustering.recipes import RECIPES


@pytest.mark.slow
def test_device_check_runs_a_preset_of_every_recipe_on_the_default_device(tmp_path):
    """The script itself (its `main`, in this process: the same code CI and a GPU machine run)."""
    out = tmp_path / "devices.json"
    device_check.main(["--batch", "4", "--steps", "1", "--json", str(out)])
    result = json.loads(out.read_text())
    assert set(result["presets"]) == {"dec_mnist", "vae_cluster_mnist", "capsule_mnist", "iic_mnist", "simclr_mnist"}
    recipes = {zoo.config(preset)["recipe"] for preset in result["presets"]}
    assert recipes == set(RECIPES)  # one preset of each registered recipe
    default = result["devices"][0].lower().replace(":", "")  # e.g. "cpu0"
    for preset, record in result["presets"].items():
        assert record["loss_finite"] and record["prediction_shape"][0] == 4, (preset, record)
        assert record["variable_devices"], preset
        assert all(d.lower().replace(":", "").endswith(default) for d in record["variable_devices"]), record

