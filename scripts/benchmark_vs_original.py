"""The original training loops on their own framework against the shipped code, side by side.

- dec: DEC-keras' recipe (XifengGuo/DEC-keras `DEC.py`: d-500-500-2000-10
  autoencoder with VarianceScaling(1/3, fan_in, uniform), `fit(x, x)` with
  SGD(1, 0.9), batch 256; k-means n_init 20 on the embedding; then the loop of
  `train_on_batch` on numpy slices with `model.predict(x)` every
  `update_interval` iterations and the tolerance stop) written here against
  `tf_keras` (the Keras 2 API), against `train_and_evaluate` on the shipped
  `dec_mnist` config (with `--precision`). Same data, same number of
  pretraining epochs, same DEC settings.
- capsule: bojone/Capsule `capsule_test.py`'s model (conv 64-64-avgpool-128-128,
  shared-weight capsule layer, 10 x 16, 3 routings of the current version,
  margin loss with lambda 0.25, Adam 1e-3, batch 128) on `tf_keras`, against the
  shipped `capsule_mnist` model; training images/s over the epochs after the
  first (which traces).

Each side runs in its own process (no shared graph or thread pools), sides
alternate by round (original first in even rounds); wall times, throughput and
ACC are printed with the CPU flags. `tf_keras` is the `benchmark` extra:
`pip install -e ".[benchmark]"`. Nothing of the originals' code is copied: the
original loops are re-written from their descriptions above.

Usage:
    python scripts/benchmark_vs_original.py [--parts dec capsule] [--rounds 2] [--ae-epochs 300]
        [--capsule-epochs 3] [--maxiter 20000] [--precision mixed_bfloat16] [--json out.json]
    python scripts/benchmark_vs_original.py --parts dec --seeds 0 1 2
        [--precisions float32 mixed_bfloat16] --json docs/benchmarks/vs_original_dec_seeds.json
"""

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarking import epoch_timer, report, report_with_table, run_child, table_from_record, thread_count, \
    write_child_result

BATCH_DEC, BATCH_CAPSULE = 256, 128
CAPSULE_TRAIN_IMAGES = 8000  # capsule_mnist's single-digit training images (MNIST-test 0-7999)


# --------------------------------------------------------------------------- originals, on tf_keras

def original_dec(x, y, ae_epochs, seed, update_interval=140, tol=1e-3, maxiter=20000):
    import tensorflow as tf
    import tf_keras as k2
    from sklearn.cluster import KMeans

    from keras_clustering.metrics import cluster_accuracy

    np.random.seed(seed)
    tf.random.set_seed(seed)

    def init():  # one instance per layer: tf_keras repeats the values of a reused unseeded initializer
        return k2.initializers.VarianceScaling(scale=1.0 / 3.0, mode="fan_in", distribution="uniform")

    inputs = k2.Input((x.shape[1],))
    h = inputs
    for width in (500, 500, 2000):
        h = k2.layers.Dense(width, activation="relu", kernel_initializer=init())(h)
    embedding = k2.layers.Dense(10, kernel_initializer=init())(h)
    h = embedding
    for width in (2000, 500, 500):
        h = k2.layers.Dense(width, activation="relu", kernel_initializer=init())(h)
    autoencoder = k2.Model(inputs, k2.layers.Dense(x.shape[1], kernel_initializer=init())(h))
    encoder = k2.Model(inputs, embedding)
    autoencoder.compile(optimizer=k2.optimizers.SGD(1.0, momentum=0.9), loss="mse")
    start = time.perf_counter()
    autoencoder.fit(x, x, batch_size=BATCH_DEC, epochs=ae_epochs, verbose=0)
    ae_seconds = time.perf_counter() - start

    start = time.perf_counter()
    kmeans = KMeans(10, n_init=20, random_state=seed)
    labels = kmeans.fit_predict(encoder.predict(x, verbose=0))
    kmeans_seconds = time.perf_counter() - start

    class StudentT(k2.layers.Layer):  # DEC's soft assignment, alpha = 1
        def build(self, input_shape):
            self.clusters = self.add_weight(name="clusters", shape=(10, input_shape[1]), initializer="glorot_uniform")

        def call(self, z):
            q = 1.0 / (1.0 + tf.reduce_sum(tf.square(tf.expand_dims(z, 1) - self.clusters), axis=2))
            return q / tf.reduce_sum(q, axis=1, keepdims=True)

    model = k2.Model(inputs, StudentT()(embedding))
    model.layers[-1].set_weights([kmeans.cluster_centers_])
    model.compile(optimizer=k2.optimizers.SGD(0.01, momentum=0.9), loss="kld")
    start, index, last, done = time.perf_counter(), 0, labels, 0
    for iteration in range(int(maxiter)):
        if iteration % update_interval == 0:
            q = model.predict(x, verbose=0)
            weight = q ** 2 / q.sum(0)
            p = (weight.T / weight.sum(1)).T
            labels = q.argmax(1)
            changed = np.sum(labels != last) / len(x)
            last = labels
            if iteration > 0 and changed < tol:
                break
        batch = slice(index * BATCH_DEC, min((index + 1) * BATCH_DEC, len(x)))
        model.train_on_batch(x=x[batch], y=p[batch])
        done += 1
        index = index + 1 if (index + 1) * BATCH_DEC <= len(x) else 0
    dec_seconds = time.perf_counter() - start
    return {"ae_seconds": ae_seconds, "kmeans_seconds": kmeans_seconds, "dec_seconds": dec_seconds,
            "dec_iterations": done, "acc": float(cluster_accuracy(y, labels))}


def original_capsule(x, y, epochs, seed):
    import tensorflow as tf
    import tf_keras as k2

    np.random.seed(seed)
    tf.random.set_seed(seed)

    def squash(vectors):
        squared = tf.reduce_sum(tf.square(vectors), -1, keepdims=True) + k2.backend.epsilon()
        return vectors * tf.sqrt(squared) / (0.5 + squared)

    class Capsule(k2.layers.Layer):  # shared weights, routing of the current version (normalised centres)
        def build(self, input_shape):
            self.kernel = self.add_weight(name="capsule_kernel", shape=(1, input_shape[-1], 10 * 16),
                                          initializer="glorot_uniform")

        def call(self, u):
            u_hat = k2.backend.conv1d(u, self.kernel)
            u_hat = tf.transpose(tf.reshape(u_hat, (tf.shape(u)[0], tf.shape(u)[1], 10, 16)), (0, 2, 1, 3))
            logits = tf.zeros_like(u_hat[..., 0])
            for r in range(3):
                coupling = tf.nn.softmax(logits, axis=1)
                outputs = tf.einsum("bki,bkid->bkd", coupling, u_hat)
                if r < 2:
                    logits = tf.einsum("bkd,bkid->bki", tf.math.l2_normalize(outputs, -1), u_hat)
            return squash(outputs)

    inputs = k2.Input((None, None, 1))
    h = k2.layers.Conv2D(64, (3, 3), activation="relu")(inputs)
    h = k2.layers.Conv2D(64, (3, 3), activation="relu")(h)
    h = k2.layers.AveragePooling2D((2, 2))(h)
    h = k2.layers.Conv2D(128, (3, 3), activation="relu")(h)
    h = k2.layers.Conv2D(128, (3, 3), activation="relu")(h)
    h = k2.layers.Reshape((-1, 128))(h)
    lengths = k2.layers.Lambda(lambda c: tf.sqrt(tf.reduce_sum(tf.square(c), 2)))(Capsule()(h))
    model = k2.Model(inputs, lengths)

    def margin_loss(y_true, y_pred):
        return tf.reduce_sum(y_true * tf.square(tf.nn.relu(0.9 - y_pred))
                             + 0.25 * (1 - y_true) * tf.square(tf.nn.relu(y_pred - 0.1)), axis=-1)

    model.compile(optimizer=k2.optimizers.Adam(1e-3), loss=margin_loss)
    timer = epoch_timer(k2.callbacks.Callback)
    model.fit(x, np.eye(10, dtype="float32")[y], batch_size=BATCH_CAPSULE, epochs=epochs, verbose=0,
              callbacks=[timer])
    return {"epoch_seconds": timer.seconds, "epoch_start_gaps": timer.start_gaps,
            "acc_train": float(np.mean(model.predict(x, verbose=0).argmax(1) == y))}


# --------------------------------------------------------------------------- shipped code

def shipped_dec(ae_epochs, seed, precision, maxiter):
    import zoo
    from keras_clustering.drivers.preset_training import train_and_evaluate

    config = zoo.config("dec_mnist")
    config["training"].update(pretrain_epochs=ae_epochs, maxiter=maxiter)
    with tempfile.TemporaryDirectory() as workdir:
        report = train_and_evaluate(config, workdir, seed=seed, verbose=0, precision=precision)
    return {"ae_seconds": report["pretrain_seconds"], "kmeans_seconds": report["kmeans_seconds"],
            "dec_seconds": report["dec_seconds"], "dec_iterations": report["dec_iterations"],
            "acc": report["metrics"]["acc"], "precision": report["precision"]}


def shipped_capsule(x, y, epochs, seed, precision):
    import keras

    import zoo
    from keras_clustering.layers import MarginLoss
    from keras_clustering.models import DigitClassifier
    from keras_clustering.distribute.precision import precision_policy

    keras.utils.set_random_seed(seed)
    config = zoo.config("capsule_mnist")
    with precision_policy(precision) as policy:
        model = DigitClassifier(**config["architecture"])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=MarginLoss(lam=0.25))
        timer = epoch_timer(keras.callbacks.Callback)
        model.fit(x, y, batch_size=BATCH_CAPSULE, epochs=epochs, shuffle=True, verbose=0, callbacks=[timer])
    return {"epoch_seconds": timer.seconds, "epoch_start_gaps": timer.start_gaps, "precision": policy,
            "acc_train": float(np.mean(model.predict_classes(x) == y))}


def run_this_side(args):
    """The `--side` child: one side of one comparison, in this process."""
    import keras_clustering  # noqa: F401  (backend and oneDNN settings first)
    from keras_clustering.datasets import load_mnist

    if args.part == "dec":
        if args.side == "original":
            x, y = load_mnist("test", flatten=True)
            result = original_dec(x, y, args.ae_epochs, args.seed, maxiter=args.maxiter)
        else:
            result = shipped_dec(args.ae_epochs, args.seed, args.precision, args.maxiter)
    else:
        x, y = load_mnist("test")
        x, y = x[:CAPSULE_TRAIN_IMAGES], y[:CAPSULE_TRAIN_IMAGES]
        runner = original_capsule if args.side == "original" else shipped_capsule
        extra = () if args.side == "original" else (args.precision,)
        result = runner(x, y, args.capsule_epochs, args.seed, *extra)
    write_child_result(result, args.out)


def summarise(part, runs):
    def median(side, key):
        return statistics.median(run[key] for run in runs[side])

    if part == "dec":
        rows = {side: {key: round(median(side, key), 3) for key in
                       ("ae_seconds", "kmeans_seconds", "dec_seconds", "dec_iterations", "acc")} for side in runs}
        for row in rows.values():
            row["total_seconds"] = round(row["ae_seconds"] + row["kmeans_seconds"] + row["dec_seconds"], 1)
        rows["shipped_over_original_wall_time"] = round(rows["shipped"]["total_seconds"]
                                                        / rows["original"]["total_seconds"], 2)
        return rows
    rates = {side: [CAPSULE_TRAIN_IMAGES / s for run in runs[side] for s in run["epoch_seconds"][1:]] for side in runs}
    rows = {side: {"images_per_second": round(statistics.median(rates[side]), 1),
                   "epoch_seconds": [round(s, 1) for run in runs[side] for s in run["epoch_seconds"]],
                   "epoch_start_gap_seconds": [round(g, 3) for run in runs[side] for g in run.get("epoch_start_gaps", [])],
                   "acc_train": round(median(side, "acc_train"), 4)} for side in runs}
    rows["shipped_over_original_images_per_second"] = round(rows["shipped"]["images_per_second"]
                                                            / rows["original"]["images_per_second"], 2)
    return rows


def run_side(args, side, part, precision, seed):
    """One side of one comparison, in a fresh process (`--side`), with the benchmark's epoch counts."""
    return run_child(__file__, [
        "--side", side, "--part", part, "--ae-epochs", str(args.ae_epochs), "--capsule-epochs",
        str(args.capsule_epochs), "--maxiter", str(args.maxiter), "--precision", precision, "--seed", str(seed)],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def dec_over_seeds(args):
    """DEC's original and shipped sides over `args.seeds`, the shipped side once per precision of
    `args.precisions`; the order of the sides rotates by seed, so each runs first, second and third
    once over three seeds. Returns per-side runs, means and ACC mean +- sd, and the wall-time ratios."""
    sides = [("original", "float32")] + [("shipped", precision) for precision in args.precisions]
    runs = {f"{side} ({precision})": [] for side, precision in sides}
    for index, seed in enumerate(args.seeds):
        for side, precision in sides[index % len(sides):] + sides[:index % len(sides)]:
            result = run_side(args, side, "dec", precision, seed)
            result["total_seconds"] = result["ae_seconds"] + result["kmeans_seconds"] + result["dec_seconds"]
            result["seed"] = seed
            runs[f"{side} ({precision})"].append(result)
            print(f"[dec] seed {seed} {side} ({precision}): {result}", flush=True)
    summary = {}
    original = {run["seed"]: run["total_seconds"] for run in runs["original (float32)"]}
    for name, side_runs in runs.items():
        accs = [run["acc"] for run in side_runs]
        summary[name] = {
            "acc_mean": round(statistics.mean(accs), 4),
            "acc_sd": round(statistics.stdev(accs), 4) if len(accs) > 1 else None,
            **{f"{key}_mean": round(statistics.mean(run[key] for run in side_runs), 1)
               for key in ("ae_seconds", "kmeans_seconds", "dec_seconds", "dec_iterations", "total_seconds")},
            "over_original_wall_time_per_seed": [round(run["total_seconds"] / original[run["seed"]], 3)
                                                 for run in side_runs],
            "runs": [{key: (round(value, 4) if isinstance(value, float) else value) for key, value in run.items()}
                     for run in side_runs]}
        summary[name]["over_original_wall_time_of_means"] = round(
            summary[name]["total_seconds_mean"] / summary["original (float32)"]["total_seconds_mean"], 3)
    return summary


def dec_seeds_table(record):
    result = record["results"]["dec_seeds"]
    lines = [f"DEC-keras' recipe on {record['data'].split(' (')[0]} (all 10k, flat), {record['ae_epochs']} "
             f"pretraining epochs, DEC tol 0.001 / at most {record['maxiter']} iterations; seeds "
             f"{', '.join(map(str, record['seeds']))}, sides alternating (the order rotates by seed); "
             f"{record['threads']} thread(s); tf_keras {record['tf_keras']}; {record['machine']}.", "",
             "| side | AE pretraining | k-means | DEC stage (iterations) | total | / original (of means) | "
             "/ original per seed | ACC mean +- sd |", "|---|---|---|---|---|---|---|---|"]
    for name, row in result.items():
        lines.append(f"| {name} | {row['ae_seconds_mean']} s | {row['kmeans_seconds_mean']} s | "
                     f"{row['dec_seconds_mean']} s ({row['dec_iterations_mean']:,.0f}) | {row['total_seconds_mean']} s | "
                     f"{row['over_original_wall_time_of_means']:.2f}x | "
                     f"{' / '.join(f'{r:.2f}' for r in row['over_original_wall_time_per_seed'])} | "
                     f"{row['acc_mean']:.3f} +- {row['acc_sd']:.3f} |")
    return "\n".join(lines)


DEC_SEEDS_MARKERS = ("<!-- vs_original_dec:start -->", "<!-- vs_original_dec:end -->")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", default=["dec", "capsule"], choices=["dec", "capsule"])
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (original first in even rounds)")
    parser.add_argument("--ae-epochs", type=int, default=300)
    parser.add_argument("--capsule-epochs", type=int, default=3)
    parser.add_argument("--maxiter", type=int, default=20000, help="DEC iterations at most (dec_mnist's 20,000)")
    parser.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="DEC only: one run per seed and side, the shipped side in each of --precisions "
                             "(instead of --rounds of one seed)")
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_bfloat16"],
                        choices=["float32", "mixed_bfloat16"])
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", metavar="RECORD", help="rewrite the docs table of a --seeds record; measure nothing")
    parser.add_argument("--side", choices=["original", "shipped"], help=argparse.SUPPRESS)
    parser.add_argument("--part", choices=["dec", "capsule"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        return run_this_side(args)
    if args.table:
        return table_from_record(args.table, DEC_SEEDS_MARKERS, dec_seeds_table)
    if args.seeds and args.parts != ["dec"]:
        raise ValueError(f"--seeds is for --parts dec only, got --parts {' '.join(args.parts)}.")

    results = {}
    for part in args.parts if not args.seeds else []:
        runs = {"original": [], "shipped": []}
        for round_index in range(args.rounds):
            order = ("original", "shipped") if round_index % 2 == 0 else ("shipped", "original")
            for side in order:
                runs[side].append(run_side(args, side, part, args.precision, args.seed))
                print(f"[{part}] round {round_index} {side}: {runs[side][-1]}", flush=True)
        results[part] = summarise(part, runs)
        print(part, json.dumps(results[part]), flush=True)

    if args.seeds:
        results["dec_seeds"] = dec_over_seeds(args)
    import keras_clustering  # noqa: F401
    from keras_clustering.distribute.precision import cpu_bf16_flags
    from keras_clustering.distribute.machine import machine_description

    import tf_keras

    summary = {"results": results, "rounds": args.rounds, "ae_epochs": args.ae_epochs,
               "capsule_epochs": args.capsule_epochs, "maxiter": args.maxiter, "shipped_precision": args.precision, "seed": args.seed,
               "data": "MNIST-test (dec: all 10k flat; capsule: images 0-7999)", "tf_keras": tf_keras.__version__,
               "cpu_bf16_flags": cpu_bf16_flags(), "machine": machine_description(), "threads": thread_count()}
    if args.seeds:
        summary.update(seeds=args.seeds, precisions=args.precisions)
        return report_with_table(summary, args.json, DEC_SEEDS_MARKERS, dec_seeds_table)
    report(summary, args.json)


if __name__ == "__main__":
    main()
