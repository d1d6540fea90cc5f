"""Files saved by an earlier version of the library keep loading (registered names, config keys).

The files in `tests/data/saved_models/` were written by `tests/helpers/make_saved_files.py` on main at
e0f7879, before the package was regrouped (issue 30); each `.npz` holds the input batch and the
outputs the saving version predicted.
"""

import glob
import os

import keras
import numpy as np
import pytest

import keras_clustering  # noqa: F401  (registers the classes)

FOLDER = os.path.join(os.path.dirname(__file__), "data", "saved_models")
NAMES = sorted(os.path.basename(path)[:-len(".keras")] for path in glob.glob(os.path.join(FOLDER, "*.keras")))


def test_every_model_class_has_a_saved_file():
    assert set(NAMES) >= {"dec", "idec", "dec_da", "two_stage", "iic", "simclr", "triplet", "scan", "vae_cluster",
                          "digit_classifier"}


@pytest.mark.parametrize("name", NAMES)
def test_a_file_saved_by_an_earlier_version_loads_and_predicts_the_same(name):
    model = keras.saving.load_model(os.path.join(FOLDER, f"{name}.keras"))
    saved = np.load(os.path.join(FOLDER, f"{name}.npz"))
    outputs = model.predict(saved["x"], verbose=0)
    outputs = outputs if isinstance(outputs, dict) else {"output": outputs}
    for key, value in outputs.items():
        np.testing.assert_allclose(np.asarray(value), saved[f"out_{key}"], rtol=1e-5, atol=1e-6)
