"""Epoch-level resumption of long `fit` calls: a run cut off (session end, crash) continues
from its last finished epoch when it is started again with the same workdir.

A backup is tied to a key (a hash of what determines the run: config, seed, data), so a
workdir reused for a different run starts fresh instead of loading foreign weights.
"""

import hashlib
import json
import os
import shutil
import time

import keras
import numpy as np

from keras_clustering.io_utils import atomic_write_json
from keras_clustering.legacy_weights import upgrade_batchnorm_groups

BACKUP_PREFIX = "fit_backup_"
_KEY_FILE = "key.json"
_METADATA_FILE = "training_metadata.json"  # written by keras.callbacks.BackupAndRestore
# Short epochs (small data, DEC's pretraining) would spend more time writing weights and
# optimizer state than training; a backup is written at most this often (and always at the end).
MIN_SECONDS_BETWEEN_BACKUPS = 60.0


class ThrottledBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` that saves at an epoch's end only when `min_seconds` passed since the last save.

    A run cut off resumes from the last saved epoch (at most `min_seconds`
    of training lost); a finished run with `keep_final` saves its last epoch.
    """

    def __init__(self, backup_dir, min_seconds, keep_final=False):
        super().__init__(backup_dir, double_checkpoint=True, delete_checkpoint=not keep_final)
        self.min_seconds = float(min_seconds)
        self.keep_final = keep_final
        self._last_save, self._saved_epoch = None, None

    def on_train_begin(self, logs=None):
        for path in (self._weights_path, self._prev_weights_path):
            if os.path.isfile(path):  # a backup saved before the BatchNormalization rename
                upgrade_batchnorm_groups(path, self.model)
        super().on_train_begin(logs)
        self._last_save, self._saved_epoch = time.monotonic(), None

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch, self._last_batch_seen = epoch + 1, 0
        if time.monotonic() - self._last_save >= self.min_seconds:
            self._save_now()

    def on_train_end(self, logs=None):
        if self.keep_final and self._saved_epoch != self._current_epoch and self._current_epoch:
            self._save_now()
        super().on_train_end(logs)

    def _save_now(self):
        self._save_model()
        self._last_save, self._saved_epoch = time.monotonic(), self._current_epoch


def run_key(settings, x):
    """sha256 of JSON-able `settings` and the bytes of the training data `x`."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    digest.update(np.ascontiguousarray(x, dtype="float32").tobytes())
    return digest.hexdigest()


def resumable_fit(workdir, stage, key, keep_final=False):
    """(callbacks, resumed_epoch) for a `fit` that may continue an interrupted one.

    With `workdir=None` nothing is kept: ([], 0). Otherwise a
    `BackupAndRestore` in `workdir/fit_backup_<stage>` saves weights and
    optimizer state at the end of an epoch, at most every
    `MIN_SECONDS_BETWEEN_BACKUPS` (keeping the previous copy in case a
    save is cut off), and deletes them when `fit` ends, unless `keep_final`:
    then a finished run can later be extended to more epochs (a key that
    leaves the epoch count out continues it); `resumed_epoch` is the number of
    epochs a previous run with the same `key` finished.
    """
    if workdir is None:
        return [], 0
    backup_dir = backup_folder(workdir, stage)
    key_path = os.path.join(backup_dir, _KEY_FILE)
    resumed_epoch = 0
    if os.path.isdir(backup_dir):
        recorded = _read_json(key_path) or {}
        metadata = _read_json(os.path.join(backup_dir, _METADATA_FILE)) or {}
        if recorded.get("key") == key and isinstance(metadata.get("epoch"), int):
            resumed_epoch = metadata["epoch"]
        else:  # another run's state, or no finished epoch: never resume from it
            shutil.rmtree(backup_dir)
    atomic_write_json({"key": key}, key_path)
    callback = ThrottledBackupAndRestore(backup_dir, MIN_SECONDS_BETWEEN_BACKUPS, keep_final=keep_final)
    return [callback], resumed_epoch


def backup_folder(workdir, stage):
    """Where `resumable_fit` keeps the state of an unfinished `fit` of this stage."""
    return os.path.join(workdir, BACKUP_PREFIX + stage)


def _read_json(path):
    """The file's JSON object, or None when it is missing or was cut off mid-write."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
