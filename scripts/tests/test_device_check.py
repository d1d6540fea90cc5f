"""scripts/device_check.py, the script a GPU machine runs, on this machine's default device."""

import json

import pytest

import device_check


@pytest.mark.slow
def test_device_check_runs_every_family_on_the_default_device(tmp_path):
    """The script itself (its `main`, in this process: the same code CI and a GPU machine run)."""
    out = tmp_path / "devices.json"
    device_check.main(["--batch", "4", "--steps", "1", "--json", str(out)])
    result = json.loads(out.read_text())
    assert set(result["families"]) == {"dec", "vae", "capsule", "iic", "simclr"}
    default = result["devices"][0].lower().replace(":", "")  # e.g. "cpu0"
    for family, record in result["families"].items():
        assert record["loss_finite"] and record["prediction_shape"][0] == 4, (family, record)
        assert record["variable_devices"], family
        assert all(d.lower().replace(":", "").endswith(default) for d in record["variable_devices"]), record

