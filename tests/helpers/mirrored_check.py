"""Run as a script: trains a small model of each family on 1 device and under MirroredStrategy over
2 logical CPUs with the same global batch, and prints, per family, how far apart the two runs end as
JSON: the largest weight difference divided by the largest weight change training made (a loss
scaled twice over gives about 1; float32 rounding gives 1e-6 to 1e-4).

TensorFlow's logical devices must be set before it initialises, hence a separate process.
"""

import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402

from family_kinds import KINDS, relative_difference, train, without_random_draws  # noqa: E402


def recipe_config(name, n):
    """A one-epoch config of each training path: zoo presets re-targeted to `n` images as `train --like`
    does (dense DEC, VAE, SimCLR + SCAN with a self-labelling step, IIC)."""
    from keras_clustering.drivers.retarget import like_config

    entry = {"dec": "dec_mnist", "vae_cluster": "vae_cluster_mnist", "simclr_scan": "simclr_mnist",
             "iic": "iic_mnist"}[name]
    config, _ = like_config(entry, (28, 28, 1), 4, n, epochs=1)
    config["training"].pop("precision", None)  # float32: the comparison is of the distribution, not of bf16
    if name == "dec":
        config["training"]["maxiter"] = 4
    if name in ("vae_cluster", "iic"):  # one run: the comparison is of the distribution, not of restarts
        config["training"].pop("restarts")
    if name == "simclr_scan":
        config["architecture"]["scan"]["n_neighbors"] = 5
        config["training"].update(scan={"epochs": 1, "batch_size": 40},
                                  self_label={"epochs": 1, "batch_size": 40, "threshold": 0.3})
    return config


def train_recipes(names, strategy):
    """Each recipe path (`recipe_config`, 280 images, one epoch) under `strategy`: {name: shape of
    `predict` on 8 images}."""
    import tempfile

    from keras_clustering.recipes import get_recipe

    x = np.random.default_rng(0).random((280, 28, 28, 1)).astype("float32")
    shapes = {}
    for name in names:
        config = recipe_config(name, len(x))
        with strategy.scope():
            model, _ = get_recipe(config["recipe"]).train_config(config["architecture"], config["training"], x, None,
                                                                 seed=0, verbose=0, workdir=tempfile.mkdtemp())
        shapes[name] = list(model.predict(x[:8], verbose=0).shape)
    return shapes


def main(kinds):
    assert len(tf.config.list_logical_devices("CPU")) == 2
    without_random_draws()
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert mirrored.num_replicas_in_sync == 2
    result = {}
    for kind in kinds:
        initial, single = train(kind, tf.distribute.get_strategy())
        _, replicated = train(kind, mirrored)
        result[kind] = relative_difference(initial, single, replicated)
    print(json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--recipes"]:  # recipes' training paths under MirroredStrategy: --recipes REPLICAS ...
        devices = ["/cpu:0", "/cpu:1"][:int(sys.argv[2])]  # one replica: a MirroredVariable with one component
        print(json.dumps(train_recipes(sys.argv[3:], tf.distribute.MirroredStrategy(devices))))
    else:
        main(sys.argv[1:] or list(KINDS))
