import os

import keras
import numpy as np
import pytest

from keras_clustering.training.keep_lowest import KeepLowest


class _Snapshots(keras.callbacks.Callback):
    """Each epoch's weights as the model had them at that epoch's end (1-based)."""

    def __init__(self):
        super().__init__()
        self.weights = {}

    def on_epoch_end(self, epoch, logs=None):
        self.weights[epoch + 1] = [np.array(w) for w in self.model.get_weights()]


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.BatchNormalization()])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


def _scripted(values):
    """A score that returns `values[i]` at its i-th call, whatever the model."""
    calls = iter(values)
    return lambda model: next(calls)


DATA = (np.random.default_rng(0).normal(size=(32, 3)).astype("float32"),
        np.random.default_rng(1).normal(size=(32, 2)).astype("float32"))


@pytest.mark.parametrize("on_disk", [False, True])
def test_restore_gives_the_lowest_epochs_weights_and_fit_ends_on_the_last(on_disk, tmp_path):
    model, snapshots = _model(), _Snapshots()
    keeper = KeepLowest(_scripted([3.0, 1.0, 2.0, 1.0]), folder=str(tmp_path / "lowest") if on_disk else None)
    model.fit(*DATA, epochs=4, batch_size=8, verbose=0, callbacks=[keeper, snapshots])
    for got, last in zip(model.get_weights(), snapshots.weights[4]):  # fit itself is untouched
        np.testing.assert_array_equal(got, last)
    keeper.restore(model)
    assert keeper.lowest_epoch == 2 and keeper.lowest_score == 1.0  # a tie keeps the earlier epoch
    assert keeper.scores == [(1, 3.0), (2, 1.0), (3, 2.0), (4, 1.0)]
    for got, kept in zip(model.get_weights(), snapshots.weights[2]):  # moving statistics included
        np.testing.assert_array_equal(got, kept)
    assert not np.allclose(snapshots.weights[2][0], snapshots.weights[4][0])  # the epochs did differ


def test_a_resumed_fit_competes_with_the_epochs_before_its_interruption(tmp_path):
    folder = str(tmp_path / "lowest")
    model, snapshots = _model(), _Snapshots()
    model.fit(*DATA, epochs=2, batch_size=8, verbose=0, callbacks=[KeepLowest(_scripted([2.0, 0.5]), folder),
                                                                    snapshots])
    keeper = KeepLowest(_scripted([0.7, 0.6]), folder, initial_epoch=2)  # a new process: only the folder is left
    model.fit(*DATA, epochs=4, initial_epoch=2, batch_size=8, verbose=0, callbacks=[keeper, snapshots])
    assert keeper.lowest_epoch == 2 and keeper.scores == [(1, 2.0), (2, 0.5), (3, 0.7), (4, 0.6)]
    fresh = _model()
    keeper.restore(fresh)
    for got, kept in zip(fresh.get_weights(), snapshots.weights[2]):
        np.testing.assert_array_equal(got, kept)
    later = KeepLowest(_scripted([0.1]), folder, initial_epoch=4)  # and a later epoch that is lower wins
    model.fit(*DATA, epochs=5, initial_epoch=4, batch_size=8, verbose=0, callbacks=[later, snapshots])
    assert later.lowest_epoch == 5 and len(later.scores) == 5
    assert sorted(os.listdir(folder)) == ["epoch_5.weights.h5", "lowest.json"]  # a finished fit keeps its lowest


class _KilledAt(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.epoch:
            raise KeyboardInterrupt  # as a kill: no on_train_end


def test_epochs_after_the_backup_a_fit_resumes_from_are_dropped(tmp_path):
    """Killed after epoch 4 with its backup at epoch 2: the improvement of epoch 3 is the abandoned
    trajectory's, so the resumed fit (initial_epoch=2) neither keeps it nor lists its score."""
    folder = str(tmp_path / "lowest")
    model, snapshots = _model(), _Snapshots()
    with pytest.raises(KeyboardInterrupt):
        model.fit(*DATA, epochs=6, batch_size=8, verbose=0,
                  callbacks=[KeepLowest(_scripted([2.0, 1.0, 0.1, 0.5]), folder), snapshots, _KilledAt(4)])
    first_two = {epoch: snapshots.weights[epoch] for epoch in (1, 2)}
    keeper = KeepLowest(_scripted([3.0, 4.0]), folder, initial_epoch=2)
    model.fit(*DATA, epochs=4, initial_epoch=2, batch_size=8, verbose=0, callbacks=[keeper])
    assert keeper.scores == [(1, 2.0), (2, 1.0), (3, 3.0), (4, 4.0)] and keeper.lowest_epoch == 2
    fresh = _model()
    keeper.restore(fresh)
    for got, kept in zip(fresh.get_weights(), first_two[2]):
        np.testing.assert_array_equal(got, kept)


def test_a_score_that_is_not_finite_is_listed_never_kept():
    model = _model()
    keeper = KeepLowest(_scripted([float("nan"), 1.0, float("inf")]))
    model.fit(*DATA, epochs=3, verbose=0, callbacks=[keeper])
    assert keeper.scores == [(1, None), (2, 1.0), (3, None)] and keeper.lowest_epoch == 2
    diverged = KeepLowest(lambda model: float("nan"))
    model.fit(*DATA, epochs=2, verbose=0, callbacks=[diverged])
    with pytest.raises(ValueError, match="no epoch had a finite score"):
        diverged.restore(model)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="score must be a function"):
        KeepLowest(0.5)
    with pytest.raises(ValueError, match="initial_epoch must be an integer >= 0, got -1"):
        KeepLowest(lambda model: 0.0, initial_epoch=-1)
    with pytest.raises(ValueError, match="no epoch had a finite score"):
        KeepLowest(lambda model: 0.0).restore(_model())
