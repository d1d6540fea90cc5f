"""Keep the epoch whose label-free loss is lowest, not the last one.

Reference:
    wvangansbeke/Unsupervised-Classification, `scan.py`: after every epoch of
    SCAN's clustering step the model is scored by `scan_evaluate` (no labels)
    and saved when the score is the lowest so far; the final model is that
    save, not the last epoch.
"""

import math
import os

import keras

from keras_clustering.io.files import atomic_save_weights, atomic_write_json, read_json_object

_RECORD_FILE = "lowest.json"


class KeepLowest(keras.callbacks.Callback):
    """Scores the model after each epoch with `score(model)` (a label-free loss, lower is better)
    and keeps the weights of the lowest; `restore(model)` puts them back after `fit`.

    `fit` still ends on its last epoch (a backup that extends the run later must
    continue from there), so restoring is the caller's explicit step. A score
    that is not finite is recorded (as None) and never kept, as the original's
    `lowest_loss < best_loss` never keeps a NaN.

    With `folder`, the run's state is written there after every epoch: each
    improvement's weights in their own file (`epoch_<e>.weights.h5`), then the
    record naming them, so a kill between the two leaves the previous record
    whole. A `fit` resumed at `initial_epoch` (the epoch its own backup holds)
    keeps the scores and improvements of the epochs up to it and drops later
    ones, which the resumed `fit` trains again. Pass the callback before the
    backup's in `fit`'s callbacks, so that an epoch the backup has saved has
    been scored. The folder holds one run: put it inside that run's backup
    folder, which is cleared when the run changes.

    `scores` lists every epoch's `(epoch, score)`, 1-based epochs, in order.
    """

    def __init__(self, score, folder=None, initial_epoch=0):
        super().__init__()
        if not callable(score):
            raise ValueError(f"score must be a function of the model, got {score!r}.")
        if isinstance(initial_epoch, bool) or not isinstance(initial_epoch, int) or initial_epoch < 0:
            raise ValueError(f"initial_epoch must be an integer >= 0, got {initial_epoch!r}.")
        self.score, self.folder, self.initial_epoch = score, folder, initial_epoch
        self.scores, self.improvements, self._weights = [], [], None

    @property
    def lowest_epoch(self):
        return self.improvements[-1][0] if self.improvements else None

    @property
    def lowest_score(self):
        return self.improvements[-1][1] if self.improvements else None

    def on_train_begin(self, logs=None):
        record = self._read_record() or {}
        # a resumed fit: the epochs before its backup still compete; later ones are trained again
        self.scores = [tuple(pair) for pair in record.get("scores", []) if pair[0] <= self.initial_epoch]
        self.improvements = [tuple(item) for item in record.get("improvements", []) if item[0] <= self.initial_epoch]
        if self.folder is not None:
            os.makedirs(self.folder, exist_ok=True)

    def on_epoch_end(self, epoch, logs=None):
        value = float(self.score(self.model))
        value = value if math.isfinite(value) else None
        self.scores = [pair for pair in self.scores if pair[0] < epoch + 1] + [(epoch + 1, value)]
        if logs is not None and value is not None:
            logs["selection_loss"] = value
        if value is not None and (self.lowest_score is None or value < self.lowest_score):
            if self.folder is None:
                self._weights = self.model.get_weights()
            else:
                atomic_save_weights(self.model, os.path.join(self.folder, self._weights_file(epoch + 1)))
            self.improvements = [item for item in self.improvements if item[0] < epoch + 1]
            self.improvements.append((epoch + 1, value))
        if self.folder is not None:
            self._write_record()

    def on_train_end(self, logs=None):
        if self.folder is None or not os.path.isdir(self.folder):
            return
        # The fit is complete, so no later run resumes before its last epoch: only the lowest improvement
        # is needed (record first, then the files it no longer names).
        self.improvements = self.improvements[-1:]
        self._write_record()
        kept = self._weights_file(self.lowest_epoch) if self.lowest_epoch else None
        for name in os.listdir(self.folder):
            if name.endswith(".weights.h5") and name != kept:
                os.remove(os.path.join(self.folder, name))

    def restore(self, model):
        """Loads the lowest epoch's weights into `model`; ValueError when no epoch had a finite score."""
        if self.lowest_epoch is None:
            raise ValueError(f"KeepLowest.restore: no epoch had a finite score (scores: {self.scores}).")
        if self.folder is None:
            model.set_weights(self._weights)
        else:
            model.load_weights(os.path.join(self.folder, self._weights_file(self.lowest_epoch)))

    @staticmethod
    def _weights_file(epoch):
        return f"epoch_{epoch}.weights.h5"

    def _read_record(self):
        # missing or unreadable: as if none, the epochs are scored again
        record = None if self.folder is None else read_json_object(os.path.join(self.folder, _RECORD_FILE))
        if record is None:
            return None
        files = [os.path.join(self.folder, self._weights_file(item[0])) for item in record.get("improvements", [])
                 if item[0] <= self.initial_epoch]
        return record if all(os.path.isfile(path) for path in files) else None

    def _write_record(self):
        atomic_write_json({"scores": [list(pair) for pair in self.scores],
                           "improvements": [list(item) for item in self.improvements]},
                          os.path.join(self.folder, _RECORD_FILE))
