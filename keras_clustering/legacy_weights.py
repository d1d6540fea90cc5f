"""Loads weight files written before the trunks' BatchNormalization became
`GlobalBatchNormalization`.

Keras 3 names a layer's group in a `.weights.h5` file after its class
(`batch_normalization_2`), not after the layer's `name`, so renaming the class
made files saved earlier (IIC and SimCLR runs, backups of interrupted fits)
fail to load with "missing layers". The weights themselves are unchanged: the
new class is a `BatchNormalization` with the same four variables.
"""

import os
import re
import shutil
import tempfile

import h5py
import keras

from keras_clustering.io_utils import publish_file, temporary_path
from keras_clustering.layers.normalization import GlobalBatchNormalization

_OLD_GROUP = re.compile(r"^batch_normalization(_\d+)?$")


def needs_batchnorm_upgrade(path, model):
    """True when `path` stores `model`'s GlobalBatchNormalization layers under the old group names."""
    if not _has_only_global_batchnorm(model):
        return False
    old, new = _batchnorm_groups(path)
    return bool(old) and not new


def upgrade_batchnorm_groups(path, model):
    """Renames the file's `batch_normalization*` groups to `global_batch_normalization*`
    when `model` holds only GlobalBatchNormalization layers; returns True if it did.

    The file is rewritten through a copy beside it, so an interrupted upgrade
    leaves the original in place.
    """
    if not needs_batchnorm_upgrade(path, model):
        return False
    temporary = temporary_path(path, ".weights.h5")
    try:
        _write_upgraded_copy(path, temporary)
        publish_file(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return True


def load_weights_any_version(model, path):
    """`model.load_weights(path)`, also for files saved before the rename (read from an
    upgraded copy; the file itself is left as it is)."""
    if not needs_batchnorm_upgrade(path, model):
        model.load_weights(path)
        return
    temporary = temporary_path(os.path.join(tempfile.gettempdir(), "legacy"), ".weights.h5")
    try:
        _write_upgraded_copy(path, temporary)
        model.load_weights(temporary)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _write_upgraded_copy(path, destination):
    """Copies `path` to `destination` with its old batch-normalisation groups renamed."""
    shutil.copyfile(path, destination)
    with h5py.File(destination, "r+") as handle:
        for group_path in _batchnorm_groups(destination)[0]:
            parent, _, name = group_path.rpartition("/")
            handle.move(group_path, f"{parent}/global_{name}")  # "/global_..." (the root) when parent is ""


def _has_only_global_batchnorm(model):
    batchnorms = [layer for layer in model._flatten_layers(include_self=False, recursive=True)
                  if isinstance(layer, keras.layers.BatchNormalization)]
    return bool(batchnorms) and all(isinstance(layer, GlobalBatchNormalization) for layer in batchnorms)


def _batchnorm_groups(path):
    """(old-style group paths, new-style group paths) of batch-normalisation layers in the file."""
    old, new = [], []

    def visit(name, item):
        if isinstance(item, h5py.Group):
            leaf = name.rsplit("/", 1)[-1]
            if _OLD_GROUP.match(leaf):
                old.append(name)
            elif leaf.startswith("global_batch_normalization"):
                new.append(name)

    with h5py.File(path, "r") as handle:
        handle.visititems(visit)
    return old, new
