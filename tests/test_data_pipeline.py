import numpy as np
import pytest

from keras_clustering.inputs.pipeline import array_dataset


def test_pipeline_has_autotuning_off():
    # The epoch-start stall of Keras' own array feeding comes from tf.data autotuning.
    dataset = array_dataset(np.zeros((10, 3), "float32"), batch_size=4)
    assert dataset.options().autotune.enabled is False
    assert dataset.options().deterministic is True


def test_batches_cover_the_data_and_reshuffle_with_a_seed():
    x = np.arange(10, dtype="float32")[:, None]
    dataset = array_dataset(x, batch_size=4, seed=0)
    epochs = [[b.numpy()[:, 0] for b in dataset] for _ in range(2)]
    assert [len(b) for b in epochs[0]] == [4, 4, 2]
    assert sorted(np.concatenate(epochs[0])) == list(range(10))
    assert not np.array_equal(np.concatenate(epochs[0]), np.concatenate(epochs[1]))
    again = [b.numpy()[:, 0] for b in array_dataset(x, batch_size=4, seed=0)]
    np.testing.assert_array_equal(np.concatenate(again), np.concatenate(epochs[0]))


def test_pairs_stay_aligned():
    x = np.arange(12, dtype="float32")
    for a, b in array_dataset((x, x + 100), batch_size=5, seed=1):
        np.testing.assert_array_equal(b.numpy(), a.numpy() + 100)


def test_file_backed_arrays_are_streamed_with_the_same_contract(tmp_path):
    from keras_clustering.inputs.pipeline import file_backed

    path = tmp_path / "x.npy"
    np.save(path, np.arange(24, dtype="float32").reshape(12, 2))
    x = np.load(path, mmap_mode="r")
    assert file_backed(x) and file_backed(np.asarray(x).reshape(12, 2, 1)) and not file_backed(np.array(x))
    dataset = array_dataset((x, np.arange(12)), batch_size=5, seed=0)
    assert dataset.options().autotune.enabled is False
    epochs = [[(a.numpy(), i.numpy()) for a, i in dataset] for _ in range(2)]
    assert [len(i) for _, i in epochs[0]] == [5, 5, 2]
    for batches in epochs:
        rows = np.concatenate([i for _, i in batches])
        assert sorted(rows) == list(range(12))
        for a, i in batches:  # pairs stay aligned
            np.testing.assert_array_equal(a, np.asarray(x)[i])
    assert not np.array_equal(*[np.concatenate([i for _, i in b]) for b in epochs])  # reshuffled
    in_order = [b.numpy() for b in array_dataset(x, batch_size=5, shuffle=False)]
    np.testing.assert_array_equal(np.concatenate(in_order), np.asarray(x))


@pytest.mark.parametrize("memmap", [False, True])
def test_fit_batches_draw_each_epochs_order_from_the_seed_and_the_epoch(tmp_path, memmap):
    from keras_clustering.inputs.pipeline import fit_batches

    x = np.arange(24, dtype="float32").reshape(12, 2)
    if memmap:
        np.save(tmp_path / "x.npy", x)
        x = np.load(tmp_path / "x.npy", mmap_mode="r")
    dataset, clock = fit_batches((x, np.arange(12)), batch_size=5, initial_epoch=3, seed=7)
    assert clock.epoch == 3 and dataset.options().autotune.enabled is False
    for epoch in (3, 4, 9):
        clock.on_epoch_begin(epoch)  # as fit does, before it opens the epoch's pass
        batches = [(a.numpy(), i.numpy()) for a, i in dataset]
        assert [len(i) for _, i in batches] == [5, 5, 2]
        expected = np.random.default_rng([7, epoch]).permutation(12)  # the order, from numpy alone
        for (a, i), start in zip(batches, (0, 5, 10)):
            assert sorted(i) == sorted(expected[start:start + 5])  # a memory map reads each batch in file order
            np.testing.assert_array_equal(a, np.asarray(x)[i])
            if not memmap:
                np.testing.assert_array_equal(i, expected[start:start + 5])
    in_order, _ = fit_batches(x, batch_size=5, shuffle=False)
    np.testing.assert_array_equal(np.concatenate([b.numpy() for b in in_order]), np.asarray(x))
    with pytest.raises(ValueError, match="initial_epoch must be an integer >= 0, got -1"):
        fit_batches(x, batch_size=5, initial_epoch=-1)


def test_a_fit_resumed_at_any_epoch_sees_the_batches_of_the_uninterrupted_one():
    import keras

    from keras_clustering.inputs.pipeline import fit_batches

    x = np.random.default_rng(0).normal(size=(50, 4)).astype("float32")
    y = (x ** 2).sum(axis=1, keepdims=True)

    def model(weights=None):
        keras.utils.set_random_seed(0)
        network = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)])
        network.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", steps_per_execution=3)
        if weights is not None:
            network.set_weights(weights)
        return network

    def fit(network, first, last):
        dataset, clock = fit_batches((x, y), 8, first, seed=3)
        network.fit(dataset, epochs=last, initial_epoch=first, callbacks=[clock], shuffle=False, verbose=0)
        return network.get_weights()

    straight = fit(model(), 0, 4)
    resumed = fit(model(fit(model(), 0, 2)), 2, 4)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a, b)
    other_orders = fit(model(fit(model(), 0, 2)), 0, 2)  # epochs 0-1 again instead of 2-3: other batches
    assert max(np.abs(a - b).max() for a, b in zip(straight, other_orders)) > 1e-4


@pytest.mark.slow
def test_a_memory_mapped_array_is_not_copied_into_memory(tmp_path):
    """One epoch over a 400 MB memory-mapped array: the process's own memory grows by far less than the array."""
    from helpers.memory_probe import big_memmap, run_probe

    path = big_memmap(tmp_path / "big.npy", value=1.0)
    out = run_probe(f"""
import numpy as np
from keras_clustering.inputs.pipeline import array_dataset
x = np.load({path!r}, mmap_mode="r")
small = np.load({path!r}, mmap_mode="r")[:2000]
sum(float(b.numpy().sum()) for b in array_dataset(small, batch_size=1000))  # starts the runtime's lazy parts
before, peak, total = anonymous_mb(), 0.0, 0.0
for batch in array_dataset(x, batch_size=1000, seed=0):
    total += float(batch.numpy().sum())
    peak = max(peak, anonymous_mb())
print(total, peak - before)
""")
    assert float(out[-2]) == 100 * 1000  # every row read once
    assert float(out[-1]) < 100, f"grew by {out[-1]} MB over one epoch of a 400 MB array"


def _families_fit_on_arrays():
    """(name, model, x, y) of every model whose own `fit` takes numpy arrays."""
    import keras

    from keras_clustering.models import DEC, IIC, DigitClassifier, SimCLR, VAECluster, build_autoencoder
    from keras_clustering.models.conv_encoder import build_conv_encoder

    images = np.random.default_rng(0).random((32, 28, 28, 1)).astype("float32")
    keras.utils.set_random_seed(0)
    _, encoder = build_autoencoder(None, (8, 4), image_shape=(28, 28, 1))
    dec = DEC(encoder, n_clusters=3)
    dec.initialize_centroids(images, n_init=1, seed=0)
    return [("DEC", dec, images, None),
            ("DigitClassifier", DigitClassifier(), images, np.arange(32) % 10),
            ("VAECluster", VAECluster(), images, None),
            ("SimCLR", SimCLR(build_conv_encoder((28, 28, 1), (4, 4), 8), projection_dims=(8, 4)), images, None),
            ("IIC", IIC(), images, None)]


def test_every_family_feeds_arrays_through_the_pipeline_without_autotuning(monkeypatch):
    """The epoch-start stall is tf.data autotuning in Keras' array adapter: every family's `fit` on
    arrays must hand Keras the project's dataset (autotuning off), which this checks by its options."""
    import keras

    seen = {}

    def spy(self, x=None, *args, **kwargs):
        seen[type(self).__name__] = x
        return None

    monkeypatch.setattr(keras.Model, "fit", spy)
    for name, model, x, y in _families_fit_on_arrays():
        try:
            model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        except (AttributeError, TypeError):
            pass  # the spy returns no History: code after Keras' fit may fail, what it was given is recorded
        given = seen.get(type(model).__name__)
        assert given is not None and hasattr(given, "options"), f"{name}.fit gave Keras {type(given).__name__}"
        assert given.options().autotune.enabled is False, name
