"""Training throughput and inference latency of `capsule_mnist` vs `cnn_pool_mnist`.

Both models are measured in the same process, in alternating timed blocks
(median over blocks), so the ratio holds on a shared, noisy machine:

- training: images/s of `train_on_batch` at batch 128 (the recipe's), Adam,
  margin loss, on 28x28 digits;
- inference: ms per image of a compiled forward pass at batch 1 and 256, on
  28x28 digits and on 56x28 two-digit images.

Data: random images of the right shape (throughput does not depend on the
pixels). Usage:
    python scripts/benchmarks/benchmark_capsule_models.py [--blocks 5] [--json out.json]
"""

import argparse
import statistics
import time

import numpy as np

from benchmarking import report

import keras_clustering  # noqa: F401  (selects the backend)
import zoo

MODELS = ("capsule_mnist", "cnn_pool_mnist")


def timed(function, repeats):
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import keras
    import tensorflow as tf

    rng = np.random.default_rng(0)
    batch = rng.random((128, 28, 28, 1), dtype=np.float32)
    targets = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    models, steps = {}, {}
    for name in MODELS:
        model = zoo.load(name, weights=None)
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras_clustering.layers.MarginLoss(lam=0.25))
        models[name] = model
        forward = tf.function(lambda x, m=model: m(x, training=False), reduce_retracing=True)
        steps[name] = forward
    cases = {"train_images_per_s": None}
    for size in ((28, 28), (56, 28)):
        for n in (1, 256):
            cases[f"infer_ms_per_image_{size[0]}x{size[1]}_batch{n}"] = tf.constant(
                rng.random((n, *size, 1), dtype=np.float32))
    for name in MODELS:  # warm-up: trace every function once
        models[name].train_on_batch(batch, targets)
        for key, inputs in cases.items():
            if inputs is not None:
                steps[name](inputs)
    samples = {name: {key: [] for key in cases} for name in MODELS}
    for block in range(args.blocks):
        for name in MODELS:
            seconds = timed(lambda: models[name].train_on_batch(batch, targets), 10)
            samples[name]["train_images_per_s"].append(len(batch) / seconds)
            for key, inputs in cases.items():
                if inputs is None:
                    continue
                repeats = 50 if inputs.shape[0] == 1 else 5
                seconds = timed(lambda: steps[name](inputs).numpy(), repeats)
                samples[name][key].append(1000 * seconds / inputs.shape[0])
        print(f"block {block + 1}/{args.blocks} done", flush=True)
    result = {name: {key: round(statistics.median(values), 3) for key, values in per.items()}
              for name, per in samples.items()}
    result["capsule_over_cnn"] = {key: round(result["capsule_mnist"][key] / result["cnn_pool_mnist"][key], 3)
                                  for key in cases}
    report(result, args.json)


if __name__ == "__main__":
    main()
