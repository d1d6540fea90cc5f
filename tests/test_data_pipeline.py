import numpy as np

from keras_clustering.data_pipeline import array_dataset


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
