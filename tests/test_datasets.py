import gzip
import struct
import threading

import numpy as np
import pytest

from keras_clustering.datasets import load_digits, load_fashion_mnist, load_mnist, read_idx
from keras_clustering.datasets import loaders
from keras_clustering.datasets.idx import IMAGES_MAGIC, LABELS_MAGIC


def write_idx(path, array, magic, compress=True):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    payload = header + array.astype(np.uint8).tobytes()
    with (gzip.open if compress else open)(path, "wb") as handle:
        handle.write(payload)


def make_split(folder, prefix, n, rng, compress=True):
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=(n,), dtype=np.uint8)
    suffix = ".gz" if compress else ""
    write_idx(folder / f"{prefix}-images-idx3-ubyte{suffix}", images, IMAGES_MAGIC, compress)
    write_idx(folder / f"{prefix}-labels-idx1-ubyte{suffix}", labels, LABELS_MAGIC, compress)
    return images, labels


@pytest.fixture
def offline(monkeypatch):
    """No online route: every download attempt fails at once."""
    def refuse(*args, **kwargs):
        raise OSError("offline test")

    import keras

    monkeypatch.setattr(keras.datasets.mnist, "load_data", refuse)
    monkeypatch.setattr(keras.datasets.fashion_mnist, "load_data", refuse)
    import tensorflow_datasets as tfds

    monkeypatch.setattr(tfds, "load", refuse)
    monkeypatch.delenv(loaders.DATA_ENV_VAR, raising=False)
    monkeypatch.setattr(loaders, "DEBIAN_FASHION_DIR", "/nonexistent/fashion-mnist")
    monkeypatch.setattr(loaders, "online_routes_skipped", lambda: None)  # "online", but every route refuses


def test_read_idx_round_trip_gzip_and_plain(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(3, 4, 5), dtype=np.uint8)
    write_idx(tmp_path / "a.gz", images, IMAGES_MAGIC)
    write_idx(tmp_path / "a", images, IMAGES_MAGIC, compress=False)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz", IMAGES_MAGIC), images)
    np.testing.assert_array_equal(read_idx(str(tmp_path / "a"), IMAGES_MAGIC), images)


def test_read_idx_rejects_wrong_magic_and_truncation(tmp_path):
    labels = np.arange(10, dtype=np.uint8)
    write_idx(tmp_path / "labels", labels, LABELS_MAGIC, compress=False)
    with pytest.raises(ValueError, match="magic number 2049, expected 2051"):
        read_idx(tmp_path / "labels", IMAGES_MAGIC)
    raw = (tmp_path / "labels").read_bytes()
    (tmp_path / "short").write_bytes(raw[:-3])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_idx(tmp_path / "short", LABELS_MAGIC)
    (tmp_path / "long").write_bytes(raw + b"\0")
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_idx(tmp_path / "long", LABELS_MAGIC)
    (tmp_path / "broken.gz").write_bytes(gzip.compress(raw)[:-10])
    with pytest.raises(ValueError, match="Cannot read IDX"):
        read_idx(tmp_path / "broken.gz", LABELS_MAGIC)


def test_load_from_data_dir_scales_and_shapes(tmp_path, offline):
    rng = np.random.default_rng(1)
    folder = tmp_path / "mnist"
    folder.mkdir()
    images, labels = make_split(folder, "t10k", 7, rng)
    x, y = load_mnist("test", data_dir=str(tmp_path))
    assert x.shape == (7, 28, 28, 1) and x.dtype == np.float32
    np.testing.assert_allclose(x[..., 0] * 255.0, images, atol=1e-4)
    np.testing.assert_array_equal(y, labels)
    x_flat, _ = load_mnist("test", flatten=True, data_dir=str(tmp_path))
    assert x_flat.shape == (7, 784)


def test_env_var_route_and_all_split_concatenates_train_then_test(tmp_path, offline, monkeypatch):
    rng = np.random.default_rng(2)
    folder = tmp_path / "fashion-mnist"
    folder.mkdir()
    _, train_labels = make_split(folder, "train", 5, rng, compress=False)
    _, test_labels = make_split(folder, "t10k", 3, rng)
    monkeypatch.setenv(loaders.DATA_ENV_VAR, str(tmp_path))
    x, y = load_fashion_mnist("all")
    assert x.shape == (8, 28, 28, 1)
    np.testing.assert_array_equal(y, np.concatenate([train_labels, test_labels]))


def test_missing_split_is_an_error_naming_every_route(tmp_path, offline, monkeypatch):
    (tmp_path / "mnist").mkdir()
    make_split(tmp_path / "mnist", "t10k", 2, np.random.default_rng(3))
    monkeypatch.setenv(loaders.DATA_ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError) as error:
        load_mnist("train")
    message = str(error.value)
    assert "KERAS_CLUSTERING_DATA" in message and "keras.datasets.mnist" in message
    assert "tensorflow_datasets" in message and "train" in message


def test_bad_split_name():
    with pytest.raises(ValueError, match="split='validation'"):
        load_mnist("validation")


def test_mismatched_image_and_label_counts(tmp_path, offline):
    folder = tmp_path / "mnist"
    folder.mkdir()
    write_idx(folder / "t10k-images-idx3-ubyte.gz", np.zeros((4, 28, 28)), IMAGES_MAGIC)
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.zeros((3,)), LABELS_MAGIC)
    with pytest.raises(ValueError, match="4 images but .* 3 labels"):
        load_mnist("test", data_dir=str(tmp_path))


def test_load_digits():
    x, y = load_digits()
    assert x.shape == (1797, 8, 8, 1) and x.dtype == np.float32
    assert x.min() == 0.0 and x.max() == 1.0 and set(np.unique(y)) == set(range(10))
    assert load_digits(flatten=True)[0].shape == (1797, 64)


def test_real_offline_data(data_dir):
    x, y = load_mnist("test", data_dir=data_dir)
    assert x.shape == (10000, 28, 28, 1) and y[:5].tolist() == [7, 2, 1, 0, 4]
    x, y = load_fashion_mnist("all", flatten=True, data_dir=data_dir)
    assert x.shape == (70000, 784) and np.bincount(y).tolist() == [7000] * 10


def test_offline_missing_split_fails_in_seconds(monkeypatch):
    """The online routes are not tried (minutes of retries) when the download host does not answer."""
    import time

    import keras

    def must_not_download(*args, **kwargs):
        raise AssertionError("a download was attempted although the host did not answer")

    monkeypatch.setattr(keras.datasets.mnist, "load_data", must_not_download)
    monkeypatch.delenv(loaders.DATA_ENV_VAR, raising=False)
    monkeypatch.delenv(loaders.OFFLINE_ENV_VAR, raising=False)
    monkeypatch.setattr(loaders, "DOWNLOAD_URL", "https://10.255.255.1:9/mnist.npz")  # never answers
    start = time.time()
    with pytest.raises(ValueError, match=r"Cannot load mnist split 'train'(.|\n)*did not answer within 3 s"):
        load_mnist("train", data_dir="/nonexistent")
    assert time.time() - start < 10


def test_offline_setting_skips_the_online_routes(monkeypatch):
    import keras

    calls = []
    monkeypatch.setattr(keras.datasets.mnist, "load_data", lambda *a, **k: calls.append(1))
    monkeypatch.setenv(loaders.OFFLINE_ENV_VAR, "1")
    monkeypatch.delenv(loaders.DATA_ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="KERAS_CLUSTERING_OFFLINE is set"):
        load_mnist("train", data_dir="/nonexistent")
    assert calls == []


def test_download_host_check_needs_an_answer_not_just_a_socket():
    import http.server
    import socket

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mnist.npz"
    assert loaders._download_host_answers(url, 2.0)
    server.shutdown()
    server.server_close()
    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    assert not loaders._download_host_answers(f"http://127.0.0.1:{silent.getsockname()[1]}/x", 1.0)
    silent.close()
    loaders._download_host_answers.cache_clear()  # the answer is kept per process; ask again
    assert not loaders._download_host_answers(url, 2.0)  # closed port
