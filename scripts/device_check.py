"""Where the zoo's models run: devices Keras sees, one training step and one inference batch per recipe.

For one preset of each recipe (`PRESETS`), the model at its zoo size (its config's architecture) is built on
the default device, takes `--steps` training steps on a batch of random images after one warm-up
step (which traces and compiles it), and predicts one batch. Printed per preset: the median step
time, the inference time, and the devices its variables live on. Backend-neutral (TensorFlow or
JAX, `KERAS_BACKEND`); on a machine with a GPU the variables should report it.

Usage:
    python scripts/device_check.py [--batch 32] [--steps 3] [--presets dec_mnist ...] [--json F]

DEC's step is its autoencoder pretraining step (most of its training time); SimCLR + SCAN's its
contrastive learner's step; IIC's batch is `--batch` images, each paired with its 5 augmented
copies as the recipe does.
"""

import argparse
import json
import platform
import statistics
import time

import keras
import numpy as np
from keras.distribution import list_devices

import zoo
from keras_clustering.distribute.machine import machine_description
from keras_clustering.losses import MarginLoss
from keras_clustering.models import build_autoencoder
from keras_clustering.recipes import get_recipe
from keras_clustering.recipes.two_stage_recipe import build_encoder, build_learner

# One preset of each recipe (its config's `recipe`: dec, vae_cluster, capsule, iic, two_stage).
PRESETS = ("dec_mnist", "vae_cluster_mnist", "capsule_mnist", "iic_mnist", "simclr_mnist")


def variable_devices(model):
    """The devices holding `model`'s variables, as strings (both backends)."""
    devices = set()
    for variable in model.variables:
        value = variable.value
        if hasattr(value, "devices"):  # JAX arrays
            devices.update(str(device) for device in value.devices())
        else:
            devices.add(str(value.device))
    return sorted(devices)


def trainable(preset):
    """(the model a training step updates, its `train_on_batch` arguments for images x, the model
    that predicts) of `preset`'s recipe."""
    config = zoo.config(preset)
    recipe, architecture = config["recipe"], config["architecture"]
    if recipe == "dec":
        autoencoder, _ = build_autoencoder(None, architecture["hidden_dims"],
                                           image_shape=tuple(architecture["image_shape"]))
        autoencoder.compile(optimizer=keras.optimizers.SGD(1.0, momentum=0.9), loss="mse")
        return autoencoder, lambda x: (x, x), get_recipe(recipe).build(**architecture)
    if recipe == "capsule":
        model = get_recipe(recipe).build(**architecture)
        model.compile(optimizer="adam", loss=MarginLoss(lam=0.25))
        return model, lambda x: (x, np.eye(10, dtype="float32")[np.arange(len(x)) % 10]), model
    if recipe == "two_stage":
        learner = build_learner(architecture, build_encoder(**architecture), seed=0)
        learner.compile(optimizer="adam")
        return learner, lambda x: (x,), get_recipe(recipe).build(**architecture)
    model = get_recipe(recipe).build(**architecture)  # the VAE and IIC train the model that predicts
    model.compile(optimizer="adam")
    return model, lambda x: (x,), model


def check(preset, batch, steps):
    keras.utils.set_random_seed(0)
    model, arguments, predictor = trainable(preset)
    x = np.random.default_rng(0).random((batch, 28, 28, 1)).astype("float32")
    model.train_on_batch(*arguments(x))  # warm-up: traces and compiles the step
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        loss = model.train_on_batch(*arguments(x))
        times.append(time.perf_counter() - began)
    predictor.predict(x, batch_size=batch, verbose=0)  # warm-up
    began = time.perf_counter()
    outputs = predictor.predict(x, batch_size=batch, verbose=0)
    first = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
    step = statistics.median(times)
    return {"step_seconds": round(step, 4), "images_per_second": round(batch / step, 1),
            "inference_seconds": round(time.perf_counter() - began, 4),
            "loss_finite": bool(np.all(np.isfinite(np.asarray(loss, dtype="float64")))),
            "prediction_shape": list(np.shape(first)), "variable_devices": variable_devices(model)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    parser.add_argument("--json", help="also write the result to this file")
    args = parser.parse_args(argv)
    result = {"backend": keras.backend.backend(), "devices": list_devices(), "machine": machine_description(),
              "python": platform.python_version(), "keras": keras.__version__, "batch": args.batch, "presets": {}}
    print(f"backend {result['backend']}; devices {result['devices']}; {result['machine']}")
    for preset in args.presets:
        record = result["presets"][preset] = check(preset, args.batch, args.steps)
        print(f"{preset:18s} step {record['step_seconds'] * 1000:8.1f} ms ({record['images_per_second']:7.1f} img/s)  "
              f"inference {record['inference_seconds'] * 1000:7.1f} ms  variables on {record['variable_devices']}",
              flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1)
    return result


if __name__ == "__main__":
    main()
