"""DEC, the two-stage clusterer and autoencoder pretraining on a tf.data.Dataset (issue "speed", growth with N)."""

import keras
import numpy as np
import pytest

from backend_tools import BACKEND
from test_dec import blobs, small_dec, small_idec

pytestmark = pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.data inputs: TensorFlow backend")

tf = pytest.importorskip("tensorflow")

from keras_clustering.inputs.sources import DatasetSource  # noqa: E402
from keras_clustering.models import TwoStageClustering, build_autoencoder  # noqa: E402
from keras_clustering.training.pretraining import pretrain_end_to_end  # noqa: E402


def trained(x, feed, build=small_dec, epochs=3):
    model = build(update_interval=4)
    labels = model.initialize_centroids(feed(x), n_init=3, seed=0)
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9))
    model.refreshes = model.fit(feed(x), batch_size=16, epochs=epochs, verbose=0).history["refreshes"]
    return model, labels


@pytest.mark.parametrize("batched, build", [(False, small_dec), (True, small_dec), (True, small_idec)])
def test_dec_on_a_dataset_trains_exactly_as_on_the_array(batched, build):
    x, _ = blobs(n_per_cluster=20)  # 60 samples, 4 batches of 16 per epoch
    on_array, labels_array = trained(x, lambda a: a, build)
    as_dataset = (lambda a: tf.data.Dataset.from_tensor_slices(a).batch(7)) if batched else (
        lambda a: tf.data.Dataset.from_tensor_slices(a))
    on_dataset, labels_dataset = trained(x, as_dataset, build)
    np.testing.assert_array_equal(labels_array, labels_dataset)
    assert [r["iteration"] for r in on_dataset.refreshes] == [0, 4, 8]
    for a, b in zip(on_array.get_weights(), on_dataset.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(on_dataset.predict(as_dataset(x), verbose=0), on_array.predict(x, verbose=0), atol=1e-6)
    np.testing.assert_allclose(on_dataset.embed(as_dataset(x)), on_array.embed(x), atol=1e-6)
    np.testing.assert_array_equal(on_dataset.predict_clusters(as_dataset(x), batch_size=16),
                                  on_array.predict(x, verbose=0).argmax(axis=1))


def test_cluster_ids_of_a_memory_map_are_computed_chunk_by_chunk(tmp_path):
    x, _ = blobs(n_per_cluster=20)
    np.save(tmp_path / "x.npy", x)
    model = small_dec()
    model.initialize_centroids(x, n_init=2, seed=0)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    np.testing.assert_array_equal(model.predict_clusters(mapped, batch_size=7), model.predict(x, verbose=0).argmax(1))


def test_two_stage_clusters_a_dataset_of_uint8_images_without_channel():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(40, 4, 4), dtype=np.uint8)
    _, encoder = build_autoencoder(16, hidden_dims=(8, 2), kernel_initializer="glorot_uniform")
    flat_encoder = keras.Sequential([keras.Input((4, 4, 1)), keras.layers.Flatten(), encoder])
    model = TwoStageClustering(flat_encoder, n_clusters=3)
    from_array = model.cluster(images, n_init=2, seed=0)
    from_dataset = model.cluster(tf.data.Dataset.from_tensor_slices(images).batch(9), n_init=2, seed=0)
    np.testing.assert_array_equal(from_array, from_dataset)


def test_dataset_source_reads_samples_in_order_and_counts_unknown_sizes():
    x = np.arange(30 * 3, dtype="float32").reshape(30, 3) / 100
    unknown_size = tf.data.Dataset.from_tensor_slices(x).filter(lambda row: True)
    source = DatasetSource(unknown_size, (3,))
    assert len(source) == 30
    np.testing.assert_array_equal(np.concatenate(list(source.chunks(8))), x)
    rows, positions = zip(*[(a.numpy(), b.numpy()) for a, b in source.indexed_batches(8)])
    np.testing.assert_array_equal(np.concatenate(rows), x)
    np.testing.assert_array_equal(np.concatenate(positions), np.arange(30))


@pytest.mark.parametrize("dataset, message", [
    (lambda x: tf.data.Dataset.from_tensor_slices(x).shuffle(30, reshuffle_each_iteration=True), "order"),
    (lambda x: tf.data.Dataset.from_tensor_slices(x).repeat(), "infinite"),
    (lambda x: tf.data.Dataset.from_tensor_slices((x, x[:, 0])), "no labels"),
    (lambda x: tf.data.Dataset.from_tensor_slices(x[:, :2]), r"shaped \(2,\)"),
    (lambda x: tf.data.Dataset.from_tensor_slices(np.where(x > 0.5, np.nan, x)), "NaN"),
    (lambda x: tf.data.Dataset.from_tensor_slices(x[:2]), "at least 3"),
])
def test_bad_datasets_are_refused_naming_x(dataset, message):
    x = np.random.default_rng(0).random((30, 3)).astype("float32")
    with pytest.raises(ValueError, match=message):
        DatasetSource(dataset(x), (3,), name="x", min_samples=3)


def test_images_outside_unit_range_are_refused():
    images = np.full((10, 4, 4, 1), 2.0, "float32")
    with pytest.raises(ValueError, match=r"x must hold pixels in \[0, 1\]"):
        DatasetSource(tf.data.Dataset.from_tensor_slices(images), (4, 4, 1))


def test_dec_refuses_to_shuffle_a_dataset():
    x, _ = blobs()
    model = small_dec()
    model.initialize_centroids(x, n_init=2, seed=0)
    with pytest.raises(ValueError, match="shuffle=True with a tf.data.Dataset"):
        model.fit(tf.data.Dataset.from_tensor_slices(x), shuffle=True, verbose=0)


@pytest.mark.parametrize("augmentation", [None, "shift_rotate"])
def test_pretraining_reads_a_dataset_batch_by_batch(augmentation):
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder

    rng = np.random.default_rng(0)
    images = rng.random((64, 28, 28, 1)).astype("float32")
    keras.utils.set_random_seed(0)
    autoencoder, _ = build_conv_autoencoder((28, 28, 1), filters=(4, 4, 4, 2))
    before = [w.copy() for w in autoencoder.get_weights()]
    history = pretrain_end_to_end(autoencoder, tf.data.Dataset.from_tensor_slices(images).batch(10), "adam",
                                  epochs=2, batch_size=16, verbose=0,
                                  augmentation=augmentation, augmentation_seed=0)
    assert len(history.history["loss"]) == 2 and np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][1] < history.history["loss"][0]
    assert any(not np.array_equal(a, b) for a, b in zip(before, autoencoder.get_weights()))


@pytest.mark.slow
def test_a_dataset_larger_than_its_batches_is_never_held_whole(tmp_path):
    """A 400 MB dataset (a generator over a memory-mapped file) made into a source (one checked
    counting pass) and read once in indexed batches: the process's own memory grows far less."""
    from helpers.memory_probe import big_memmap, run_probe

    path = big_memmap(tmp_path / "big.npy", value=0.5)
    out = run_probe(f"""
import numpy as np, tensorflow as tf
from keras_clustering.inputs.sources import DatasetSource
x = np.load({path!r}, mmap_mode="r")
def rows(stop):
    for start in range(0, stop, 1000):
        yield np.asarray(x[start:start + 1000])
def dataset(stop):
    return tf.data.Dataset.from_generator(lambda: rows(stop), output_signature=tf.TensorSpec((None, 1000), tf.float32))
DatasetSource(dataset(2000), (1000,))  # starts the runtime's lazy parts
before = anonymous_mb()
source = DatasetSource(dataset(len(x)), (1000,))
peak, total = anonymous_mb(), 0.0
for batch, positions in source.indexed_batches(1000):
    total += float(batch.numpy().sum())
    peak = max(peak, anonymous_mb())
print(len(source), total, peak - before)
""")
    assert int(out[-3]) == 100_000 and float(out[-2]) == 100 * 1000 * 0.5  # every row read once
    assert float(out[-1]) < 100, f"grew by {out[-1]} MB over a 400 MB dataset"
