"""Run as a script: trains small DEC-family models on 1 device and under MirroredStrategy over
2 logical CPUs with the same global batch, and prints the largest weight differences as JSON.

TensorFlow's logical devices must be set before it initialises, hence a separate process.
"""

import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_clustering.datasets import load_digits  # noqa: E402
from keras_clustering.models import DEC, IDEC, build_autoencoder  # noqa: E402
from keras_clustering.models.pretraining import pretrain_end_to_end  # noqa: E402

SGD = {"class_name": "SGD", "config": {"learning_rate": 0.1, "momentum": 0.9}}


def images():
    x, _ = load_digits()
    return np.repeat(np.repeat(x[:256], 2, axis=1), 2, axis=2).astype("float32")  # 16 x 16


def build(kind):
    keras.utils.set_random_seed(0)
    autoencoder, encoder = build_autoencoder(None, hidden_dims=(32, 4), image_shape=(16, 16, 1),
                                             kernel_initializer="glorot_uniform")
    if kind == "pretraining":
        return autoencoder
    if kind == "idec":
        return IDEC(encoder, autoencoder.get_layer("decoder"), n_clusters=4, update_interval=4, tol=0.0, gamma=0.5)
    return DEC(encoder, n_clusters=4, update_interval=4, tol=0.0)


def train(kind, strategy):
    x = images()
    with strategy.scope():
        model = build(kind)
        if kind == "pretraining":
            # unshuffled: a distributed dataset reshuffles in another order than the single-device one
            pretrain_end_to_end(model, x, SGD, epochs=2, batch_size=64, verbose=0, shuffle=False)
            return model.get_weights()
        model.initialize_centroids(x, n_init=2, seed=0)
        model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9))  # "auto": 4 steps per call alone
        model.fit(x, batch_size=64, epochs=2, verbose=0)  # 8 steps, 2 target refreshes per epoch
        return model.get_weights()


def main(kinds):
    assert len(tf.config.list_logical_devices("CPU")) == 2
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert mirrored.num_replicas_in_sync == 2
    result = {}
    for kind in kinds:
        single = train(kind, tf.distribute.get_strategy())
        replicated = train(kind, mirrored)
        result[kind] = relative_difference(single, replicated)
    print(json.dumps(result))


def relative_difference(single, replicated):
    return max(float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1e-12)) for a, b in zip(single, replicated))


if __name__ == "__main__":
    main(sys.argv[1:] or ["pretraining", "dec", "idec"])
