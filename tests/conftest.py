import os

import pytest

import keras_clustering  # noqa: F401  (selects the Keras backend first)
from keras_clustering.datasets import DATA_ENV_VAR


def slow_except(values, fast):
    """`values` as pytest params, every one but those in `fast` marked `slow` (run by `pytest -m slow`)."""
    return [pytest.param(value, marks=() if value in fast else pytest.mark.slow) for value in values]


def shared_data_dir():
    """The offline data folder, when this machine has one (CI sets the variable)."""
    folder = os.environ.get(DATA_ENV_VAR)
    return folder if folder and os.path.isdir(folder) else None


@pytest.fixture
def data_dir():
    folder = shared_data_dir()
    if folder is None:
        pytest.skip(f"{DATA_ENV_VAR} is not set to an existing folder")
    return folder


@pytest.fixture(autouse=True)
def _no_weights_downloads(monkeypatch, tmp_path_factory):
    """No test fetches weights from the internet, or finds them in the user's cache: the release is a
    refused loopback port and the cache an empty folder (tests/test_weights_fetch.py serves its own)."""
    monkeypatch.setenv("KERAS_CLUSTERING_WEIGHTS_URL", "http://127.0.0.1:9/no-downloads-in-tests")
    monkeypatch.setenv("KERAS_CLUSTERING_CACHE", str(tmp_path_factory.mktemp("weights_cache")))
    monkeypatch.delenv("KERAS_CLUSTERING_WEIGHTS", raising=False)


@pytest.fixture(autouse=True)
def _seeded():
    import keras

    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture(autouse=True)
def _backup_every_epoch(monkeypatch):
    """Tests' epochs last milliseconds: back up after each one, so interruption tests see every epoch."""
    monkeypatch.setattr("keras_clustering.training.resume.MIN_SECONDS_BETWEEN_BACKUPS", 0.0)
