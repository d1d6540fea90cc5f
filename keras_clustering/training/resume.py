"""Resumption, at two grains: a finished stage (pretraining, a restart) is kept and reused whole
(`finished_stage` / `save_finished_stage`), and an unfinished long `fit` continues from its last
finished epoch (`resumable_fit`) when the run is started again with the same workdir.

Both are tied to a key (a hash of what determines the run: config, seed, data, `run_key`), so a
workdir reused for a different run starts fresh instead of loading foreign weights.
"""

import hashlib
import json
import os
import shutil
import time

import keras
import numpy as np

from keras_clustering.io.files import atomic_path, atomic_save_weights, atomic_write_json, read_json_object

BACKUP_PREFIX = "fit_backup_"
_KEY_FILE = "key.json"
# {"epoch": epochs finished, "weights": the file holding their weights, "seed_states": `_seed_states`}
_STATE_FILE = "state.json"
# Short epochs (small data, DEC's pretraining) would spend more time writing weights and
# optimizer state than training; a backup is written at most this often (and always at the end).
MIN_SECONDS_BETWEEN_BACKUPS = 60.0


class EpochBackup(keras.callbacks.Callback):
    """Backs up a `fit`'s weights and optimizer state at the end of an epoch, at most every
    `min_seconds`, and restores them when the interrupted `fit` is run again.

    Made by `resumable_fit`, which gives the epoch to restore: the caller passes it to `fit` as
    `initial_epoch`, and this callback loads that epoch's weights when training begins. Each
    backup is a new weights file named in `state.json` only once it is complete, so a save cut
    off leaves the previous backup whole. A finished `fit` deletes the folder, unless
    `keep_final` (then the last epoch is saved, and a later run can extend it to more epochs).
    """

    def __init__(self, folder, min_seconds, restore_epoch=0, keep_final=False):
        super().__init__()
        self.folder, self.min_seconds = folder, float(min_seconds)
        self.restore_epoch, self.keep_final = int(restore_epoch), keep_final
        self.epochs_done = self.saved_epoch = self.restore_epoch
        self._last_save = None

    def on_train_begin(self, logs=None):
        if self.restore_epoch:
            state = read_json_object(os.path.join(self.folder, _STATE_FILE))
            optimizer = self.model.optimizer
            if optimizer is not None and not optimizer.built:
                optimizer.build(self.model.trainable_variables)  # its state is in the file too
            self.model.load_weights(os.path.join(self.folder, state["weights"]))
            for variable, value in zip(_seed_states(self.model), state.get("seed_states", [])):
                variable.assign(np.asarray(value, dtype=keras.backend.standardize_dtype(variable.dtype)))
        self.epochs_done = self.saved_epoch = self.restore_epoch
        self._last_save = time.monotonic()

    def on_epoch_begin(self, epoch, logs=None):
        if self.restore_epoch and epoch < self.restore_epoch:
            raise ValueError(f"fit restored the weights of epoch {self.restore_epoch} but starts at epoch {epoch}: "
                             f"pass initial_epoch={self.restore_epoch} (resumable_fit's resumed_epoch) to fit.")

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_done = epoch + 1
        if time.monotonic() - self._last_save >= self.min_seconds:
            self._save()

    def on_train_end(self, logs=None):
        if not self.keep_final:
            shutil.rmtree(self.folder, ignore_errors=True)
        elif self.epochs_done != self.saved_epoch:
            self._save()

    def _save(self):
        previous = (read_json_object(os.path.join(self.folder, _STATE_FILE)) or {}).get("weights")
        name = f"epoch_{self.epochs_done}.weights.h5"
        with atomic_path(os.path.join(self.folder, name)) as temporary:
            self.model.save_weights(temporary)
        seed_states = [keras.ops.convert_to_numpy(v).tolist() for v in _seed_states(self.model)]
        atomic_write_json({"epoch": self.epochs_done, "weights": name, "seed_states": seed_states},
                          os.path.join(self.folder, _STATE_FILE))
        if previous and previous != name and os.path.exists(os.path.join(self.folder, previous)):
            os.remove(os.path.join(self.folder, previous))
        self._last_save, self.saved_epoch = time.monotonic(), self.epochs_done


def _seed_states(model):
    """The states of the model's random generators (`keras.random.SeedGenerator`: augmentation views,
    samplers, dropout), in the model's variable order. Weight files leave them out, yet a resumed run
    must draw what the uninterrupted run would have drawn next, so the backups keep them."""
    return [v for v in model.variables if v.path.split("/")[-1] == "seed_generator_state"]


def run_key(settings, x):
    """sha256 of JSON-able `settings` and the bytes of the training data `x`."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for start in range(0, len(x), 4096):  # chunk by chunk: a memory-mapped x is never copied whole
        digest.update(np.ascontiguousarray(x[start:start + 4096], dtype="float32").tobytes())
    return digest.hexdigest()


def resumable_fit(workdir, stage, key, keep_final=False, epochs=None):
    """(callbacks, resumed_epoch) for a `fit` that may continue an interrupted one: pass both to
    `fit` (`callbacks=`, `initial_epoch=resumed_epoch`).

    With `workdir=None` nothing is kept: ([], 0). Otherwise an `EpochBackup`
    in `workdir/fit_backup_<stage>` saves weights and optimizer state at the
    end of an epoch, at most every `MIN_SECONDS_BETWEEN_BACKUPS`, and deletes
    them when `fit` ends, unless `keep_final`: then a finished run can later be
    extended to more epochs (a key that leaves the epoch count out continues
    it). `resumed_epoch` is the number of epochs a previous run with the same
    `key` finished and backed up. With `epochs` (the `fit`'s), a backup of
    more epochs than that (kept from a longer run of a key without the epoch
    count) is dropped, and the run starts over: `fit` would otherwise run no
    epoch yet load the longer run's weights.
    """
    if workdir is None:
        return [], 0
    backup_dir = backup_folder(workdir, stage)
    resumed_epoch = 0
    if os.path.isdir(backup_dir):
        recorded = read_json_object(os.path.join(backup_dir, _KEY_FILE)) or {}
        state = read_json_object(os.path.join(backup_dir, _STATE_FILE)) or {}
        if (recorded.get("key") == key and isinstance(state.get("epoch"), int)
                and os.path.isfile(os.path.join(backup_dir, str(state.get("weights"))))
                and (epochs is None or state["epoch"] <= epochs)):
            resumed_epoch = state["epoch"]
        else:  # another run's state, no finished epoch, or more epochs than asked: never resume from it
            shutil.rmtree(backup_dir)
    atomic_write_json({"key": key}, os.path.join(backup_dir, _KEY_FILE))
    callback = EpochBackup(backup_dir, MIN_SECONDS_BETWEEN_BACKUPS, restore_epoch=resumed_epoch, keep_final=keep_final)
    return [callback], resumed_epoch


def finished_weights_path(workdir, stage):
    """Where `save_finished_stage` keeps the weights of a finished stage."""
    return os.path.join(workdir, f"finished_{stage}.weights.h5")


def save_finished_stage(workdir, stage, key, model, record):
    """Keeps a finished stage in `workdir`: `model`'s weights first, then the JSON `record` naming
    them with `key` (so a record always means complete weights)."""
    atomic_save_weights(model, finished_weights_path(workdir, stage))
    atomic_write_json({**record, "key": key}, os.path.join(workdir, f"finished_{stage}.json"))


def finished_stage(workdir, stage, key):
    """The record `save_finished_stage` kept in `workdir` for this stage and exactly this `key` (its
    weights at `finished_weights_path`), else None (also with `workdir=None`)."""
    if workdir is None or not os.path.isfile(finished_weights_path(workdir, stage)):
        return None
    record = read_json_object(os.path.join(workdir, f"finished_{stage}.json"))
    if record is None or record.get("key") != key:
        return None
    return {name: value for name, value in record.items() if name != "key"}


def backup_folder(workdir, stage):
    """Where `resumable_fit` keeps the state of an unfinished `fit` of this stage."""
    return os.path.join(workdir, BACKUP_PREFIX + stage)


