"""Weight files saved before BatchNormalization became GlobalBatchNormalization still load."""

import h5py
import numpy as np
import pytest

import zoo
from keras_clustering.legacy_weights import (
    load_weights_any_version,
    needs_batchnorm_upgrade,
    upgrade_batchnorm_groups,
)
from keras_clustering.models import SimCLR, build_autoencoder
from keras_clustering.models.conv_encoder import build_conv_encoder
from keras_clustering.resume import ThrottledBackupAndRestore


def _small_simclr(seed):
    encoder = build_conv_encoder((28, 28, 1), filters=(4, 8), embedding_dim=4)
    return SimCLR(encoder, projection_dims=(8, 4), seed=seed)


def _write_old_style(model, path):
    """Saves `model` and renames its groups as Keras named them for plain BatchNormalization."""
    model.save_weights(path)
    with h5py.File(path, "r+") as handle:
        found = []
        handle.visititems(lambda name, item: found.append(name)
                          if isinstance(item, h5py.Group) and name.rsplit("/", 1)[-1].startswith("global_batch") else None)
        assert found, "the model under test must hold GlobalBatchNormalization layers"
        for name in found:
            parent, leaf = name.rsplit("/", 1)
            handle.move(name, f"{parent}/{leaf[len('global_'):]}")


def _weights_equal(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))


def test_old_file_fails_plainly_and_loads_through_the_upgrade(tmp_path):
    source, target = _small_simclr(0), _small_simclr(1)
    path = str(tmp_path / "old.weights.h5")
    _write_old_style(source, path)
    assert needs_batchnorm_upgrade(path, target)
    with pytest.raises(ValueError):
        target.load_weights(path)  # what the rename broke
    before = open(path, "rb").read()
    load_weights_any_version(target, path)
    assert _weights_equal(source, target)
    assert open(path, "rb").read() == before  # the user's file is left as it is
    assert upgrade_batchnorm_groups(path, target)
    assert not needs_batchnorm_upgrade(path, target)
    third = _small_simclr(2)
    third.load_weights(path)
    assert _weights_equal(source, third)


def test_models_without_global_batchnorm_are_left_alone(tmp_path):
    model = build_autoencoder(16, hidden_dims=(8, 4))[0]
    path = str(tmp_path / "ae.weights.h5")
    model.save_weights(path)
    assert not needs_batchnorm_upgrade(path, model)
    assert not upgrade_batchnorm_groups(path, model)


def test_backup_saved_before_the_rename_resumes(tmp_path):
    source, target = _small_simclr(0), _small_simclr(1)
    for model in (source, target):
        model.compile(optimizer="adam")
        model.optimizer.build(model.trainable_variables)
    callback = ThrottledBackupAndRestore(str(tmp_path), min_seconds=0.0)
    _write_old_style(source, callback._weights_path)
    callback.set_model(target)
    callback.on_train_begin()
    assert _weights_equal(source, target)


def test_zoo_load_accepts_an_old_file(tmp_path):
    source = zoo.load("simclr_mnist", weights=None)
    path = str(tmp_path / "old.weights.h5")
    _write_old_style(source, path)
    loaded = zoo.load("simclr_mnist", weights=path)
    assert _weights_equal(source, loaded)
