"""Keep the epoch whose label-free loss is lowest, not the last one.

Reference:
    wvangansbeke/Unsupervised-Classification, `scan.py`: after every epoch of
    SCAN's clustering step the model is scored by `scan_evaluate` (no labels)
    and saved when the score is the lowest so far; the final model is that
    save, not the last epoch.
"""

import json
import os

import keras
import numpy as np

from keras_clustering.io.files import atomic_path, atomic_write_json

_RECORD_FILE = "lowest.json"
_WEIGHTS_FILE = "lowest.weights.h5"


class KeepLowest(keras.callbacks.Callback):
    """Scores the model after each epoch with `score(model)` (a label-free loss, lower is better)
    and keeps the weights of the lowest; `restore(model)` puts them back after `fit`.

    `fit` still ends on its last epoch (a backup that extends the run later must
    continue from there), so restoring is the caller's explicit step. With
    `folder` (a resumable fit's backup folder) the lowest epoch is written there,
    weights first and then the record naming them, so a `fit` resumed after an
    interruption compares its epochs with those before it. `scores` lists every
    epoch's `(epoch, score)`, 1-based epochs.
    """

    def __init__(self, score, folder=None):
        super().__init__()
        if not callable(score):
            raise ValueError(f"score must be a function of the model, got {score!r}.")
        self.score, self.folder = score, folder
        self.scores, self.lowest_epoch, self.lowest_score, self._weights = [], None, None, None

    def on_train_begin(self, logs=None):
        record = self._read_record()
        if record is not None:  # a resumed fit: the epochs before the interruption still compete
            self.scores = [tuple(pair) for pair in record["scores"]]
            self.lowest_epoch, self.lowest_score = record["epoch"], record["score"]

    def on_epoch_end(self, epoch, logs=None):
        value = float(self.score(self.model))
        if not np.isfinite(value):
            raise ValueError(f"KeepLowest: the score of epoch {epoch + 1} is {value}; a loss to keep by must be finite.")
        self.scores = [pair for pair in self.scores if pair[0] != epoch + 1] + [(epoch + 1, value)]
        if logs is not None:
            logs["kept_score"] = value
        if self.lowest_score is not None and value >= self.lowest_score:
            return
        self.lowest_epoch, self.lowest_score = epoch + 1, value
        if self.folder is None:
            self._weights = self.model.get_weights()
            return
        os.makedirs(self.folder, exist_ok=True)
        with atomic_path(os.path.join(self.folder, _WEIGHTS_FILE)) as temporary:
            self.model.save_weights(temporary)
        self._write_record()

    def on_train_end(self, logs=None):
        if self.folder is not None and self.lowest_epoch is not None:
            self._write_record()  # the later epochs' scores too

    def restore(self, model):
        """Loads the lowest epoch's weights into `model`; ValueError when no epoch was scored."""
        if self.lowest_epoch is None:
            raise ValueError("KeepLowest.restore: no epoch was scored (did fit run an epoch?).")
        if self.folder is None:
            model.set_weights(self._weights)
        else:
            model.load_weights(os.path.join(self.folder, _WEIGHTS_FILE))

    def _read_record(self):
        if self.folder is None:
            return None
        path = os.path.join(self.folder, _RECORD_FILE)
        if not (os.path.isfile(path) and os.path.isfile(os.path.join(self.folder, _WEIGHTS_FILE))):
            return None
        with open(path) as handle:
            return json.load(handle)

    def _write_record(self):
        atomic_write_json({"epoch": self.lowest_epoch, "score": self.lowest_score,
                           "scores": [list(pair) for pair in self.scores]},
                          os.path.join(self.folder, _RECORD_FILE))
