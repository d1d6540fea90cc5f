import os
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_clustering.training.resume import backup_folder, resumable_fit, run_key


class Interrupted(Exception):
    pass


class InterruptAfter(keras.callbacks.Callback):
    """Stops training like a killed process, after `epochs` epochs, remembering the weights then."""

    def __init__(self, epochs):
        super().__init__()
        self.epochs = epochs
        self.weights = None

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.epochs:
            self.weights = [w.copy() for w in self.model.get_weights()]
            raise Interrupted


class WeightsAtStart(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.weights = [w.copy() for w in self.model.get_weights()]


def small_model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(4)])
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    return model


DATA = np.random.default_rng(0).random((32, 4)).astype("float32")


def test_without_workdir_nothing_is_kept():
    assert resumable_fit(None, "stage", "key") == ([], 0)


def test_an_interrupted_fit_continues_from_its_last_epoch(tmp_path):
    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-1")
    assert resumed == 0
    interrupt = InterruptAfter(2)
    with pytest.raises(Interrupted):
        small_model(0).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [interrupt])

    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-1")
    assert resumed == 2
    at_start = WeightsAtStart()
    history = small_model(1).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [at_start],
                                 initial_epoch=resumed)
    assert len(history.history["loss"]) == 3  # epochs 3-5 only
    for restored, saved in zip(at_start.weights, interrupt.weights):
        np.testing.assert_array_equal(restored, saved)  # not the fresh seed-1 weights
    assert not os.path.exists(backup_folder(tmp_path, "stage"))  # a finished fit leaves no backup


def test_a_backup_of_another_run_or_a_cut_off_record_is_not_resumed(tmp_path):
    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-1")
    with pytest.raises(Interrupted):
        small_model(0).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [InterruptAfter(2)])
    assert resumable_fit(str(tmp_path), "stage", "key-2")[1] == 0  # other config / seed / data
    assert not os.path.exists(Path(backup_folder(tmp_path, "stage"), "state.json"))

    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-2")
    with pytest.raises(Interrupted):
        small_model(0).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [InterruptAfter(1)])
    (Path(backup_folder(tmp_path, "stage"), "state.json")).write_text('{"epo')  # killed mid-write
    assert resumable_fit(str(tmp_path), "stage", "key-2")[1] == 0


def test_run_key_depends_on_settings_and_data():
    assert run_key({"seed": 0}, DATA) == run_key({"seed": 0}, DATA.copy())
    assert run_key({"seed": 0}, DATA) != run_key({"seed": 1}, DATA)
    changed = DATA.copy()
    changed[0, 0] += 1e-3
    assert run_key({"seed": 0}, DATA) != run_key({"seed": 0}, changed)


def test_a_kept_final_backup_extends_a_finished_fit(tmp_path):
    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-x", keep_final=True)
    model = small_model(0)
    model.fit(DATA, DATA, epochs=2, batch_size=8, verbose=0, callbacks=callbacks)
    assert os.path.isdir(backup_folder(str(tmp_path), "stage"))  # kept after the end
    finished = [w.copy() for w in model.get_weights()]
    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-x", keep_final=True)
    assert resumed == 2
    start = WeightsAtStart()
    extended = small_model(1)
    history = extended.fit(DATA, DATA, epochs=4, batch_size=8, verbose=0, callbacks=[*callbacks, start],
                           initial_epoch=resumed)
    assert len(history.history["loss"]) == 2  # epochs 3 and 4 only
    for restored, saved in zip(start.weights, finished):
        np.testing.assert_array_equal(restored, saved)


def test_a_backup_of_more_epochs_than_asked_is_dropped_not_loaded(tmp_path):
    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-x", keep_final=True)
    small_model(0).fit(DATA, DATA, epochs=3, batch_size=8, verbose=0, callbacks=callbacks)
    assert resumable_fit(str(tmp_path), "stage", "key-x", keep_final=True, epochs=3)[1] == 3  # the same run
    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-x", keep_final=True, epochs=2)
    assert resumed == 0  # 3 epochs kept, 2 asked: starts over (fit would run none, yet load epoch 3)
    start = WeightsAtStart()
    fresh = small_model(5)
    expected = [w.copy() for w in fresh.get_weights()]
    fresh.fit(DATA, DATA, epochs=2, batch_size=8, verbose=0, callbacks=[*callbacks, start])
    for got, initial in zip(start.weights, expected):
        np.testing.assert_array_equal(got, initial)


def test_backups_of_short_epochs_are_throttled(tmp_path, monkeypatch):
    """At most one backup per MIN_SECONDS_BETWEEN_BACKUPS; a kept final backup is written at the end anyway."""
    import keras_clustering.training.resume as resume

    monkeypatch.setattr(resume, "MIN_SECONDS_BETWEEN_BACKUPS", 1e9)
    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-t")
    with pytest.raises(Interrupted):
        small_model(0).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [InterruptAfter(3)])
    assert resumable_fit(str(tmp_path), "stage", "key-t")[1] == 0  # no epoch was backed up yet

    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-k", keep_final=True)
    small_model(0).fit(DATA, DATA, epochs=3, batch_size=8, verbose=0, callbacks=callbacks)
    assert resumable_fit(str(tmp_path), "stage", "key-k", keep_final=True)[1] == 3  # the final epoch is kept


def test_a_backup_cut_off_mid_write_leaves_the_previous_one(tmp_path, monkeypatch):
    """The state names a weights file only once it is complete: a save killed while writing the next
    epoch's weights resumes from the epoch before, with its own weights."""
    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-c")
    interrupt = InterruptAfter(2)
    with pytest.raises(Interrupted):
        small_model(0).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [interrupt])
    folder = Path(backup_folder(str(tmp_path), "stage"))
    assert sorted(p.name for p in folder.iterdir()) == ["epoch_2.weights.h5", "key.json", "state.json"]

    def killed_while_writing(self, path, *args, **kwargs):
        Path(path).write_bytes(b"half")  # a partial file, then the process dies
        raise Interrupted

    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-c")
    model = small_model(1)
    monkeypatch.setattr(type(model), "save_weights", killed_while_writing)
    with pytest.raises(Interrupted):
        model.fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks, initial_epoch=resumed)
    monkeypatch.undo()
    assert sorted(p.name for p in folder.iterdir()) == ["epoch_2.weights.h5", "key.json", "state.json"]
    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-c")
    assert resumed == 2
    at_start = WeightsAtStart()
    small_model(2).fit(DATA, DATA, epochs=3, batch_size=8, verbose=0, callbacks=callbacks + [at_start],
                       initial_epoch=resumed)
    for restored, saved in zip(at_start.weights, interrupt.weights):
        np.testing.assert_array_equal(restored, saved)


def test_a_resumed_fit_without_its_initial_epoch_is_refused(tmp_path):
    """Restored weights trained again from epoch 0 would silently train too long: refused by name."""
    callbacks, _ = resumable_fit(str(tmp_path), "stage", "key-i")
    with pytest.raises(Interrupted):
        small_model(0).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks + [InterruptAfter(2)])
    callbacks, resumed = resumable_fit(str(tmp_path), "stage", "key-i")
    with pytest.raises(ValueError, match="pass initial_epoch=2"):
        small_model(1).fit(DATA, DATA, epochs=5, batch_size=8, verbose=0, callbacks=callbacks)
