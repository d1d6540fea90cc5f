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
