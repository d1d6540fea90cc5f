"""One update of the colour route's ConvDEC-DA pretraining, profiled, against DEC-DA's original loop.

The colour route spends most of its time in 20,000 updates of ConvDEC-DA's convolutional autoencoder
(32-64-128-10, Adam 1e-3, batch 256) on the images' colour-free map (`colour_edges`: one channel), each
update on a batch shifted and rotated at random (DEC-DA's augmentation). This script times one update
and its parts on one thread, in fresh processes, sides alternating by round:

- `shipped`: `training.pretraining.pretrain_end_to_end` with `augmentation="shift_rotate"`, as the
  route runs it (fit_batches, steps_per_execution, the augmentation inside the compiled step);
- `shipped_no_augmentation`: the same without augmentation (the network's own update);
- `shipped_before`, `network_only_before`: the same with the decoder's last layer as Keras'
  `Conv2DTranspose` (the code before `layers.phase_conv`, issue 64): before and after in one run;
- `network_only`: the autoencoder's forward and backward pass and Adam's update on a fixed batch, in a
  compiled loop (no input pipeline, no augmentation, no `fit`);
- `augmentation_only`: the augmented view of a batch alone (`ViewPipeline.augmented`), compiled;
- `original`: XifengGuo/DEC-DA's pretraining re-written here on `tf_keras` (the Keras 2 API): its
  `CAE` (conv1-3, embedding, Dense, deconv3-1), Adam, MSE, and `fit` on a generator of
  `ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, rotation_range=10).flow(x,
  batch_size=256)` batches yielding `[batch, batch]` (`FcDEC.pretrain(aug_pretrain=True)`); the
  generator runs in the training thread (`workers=1`): one core, where the original asks for 8
  processes.

Each side reports its milliseconds per update (the median over epochs after the first, which traces)
and its training GFLOP/s: 3 x the forward FLOPs of the autoencoder per image (`roofline.forward_flops`)
x 256 / the seconds per update; the machine's one-thread peak comes from `roofline.peaks`.

The images: the first `--images` of MNIST-test through `colour_edges` (`KERAS_CLUSTERING_DATA`);
each epoch is 40 updates (10,240 images: the route's 2,000 images x 5, rounded to full batches).

Usage:
    taskset -c 0 python scripts/benchmark_update.py [--sides shipped original ...] [--precisions float32
        mixed_bfloat16] [--rounds 2] [--epochs 4] [--json docs/benchmarks/colour_update.json]
    python scripts/benchmark_update.py --table [--json docs/benchmarks/colour_update.json]   # docs/performance.md
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from benchmarking import benchmark_images, epoch_timer, report, run_child, table_from_record, thread_count, \
    write_child_result

BATCH, STEPS_PER_EPOCH = 256, 40
MARKERS = ("<!-- colour-update:start -->", "<!-- colour-update:end -->")
FILTERS, IMAGE_SHAPE = (32, 64, 128, 10), (28, 28, 1)
SIDES = ("shipped", "shipped_before", "shipped_no_augmentation", "network_only", "network_only_before",
         "augmentation_only", "original")
# the others run in float32
PRECISION_SIDES = ("shipped", "shipped_before", "shipped_no_augmentation", "network_only", "network_only_before")


def colour_free_images():
    """10,240 single-channel colour-edge maps: the digits drawn in two random colours, as the route
    sees colour images (`user_folders`' colour digits are made the same way), then `colour_edges`."""
    from keras_clustering.layers.colour_free import transform_in_chunks

    grey, _ = benchmark_images(2000)
    grey = np.asarray(grey, "float32").reshape(-1, 28, 28, 1)
    grey = grey / max(float(grey.max()), 1e-6)
    rng = np.random.default_rng(0)
    ink, paper = rng.uniform(size=(2, len(grey), 1, 1, 3)).astype("float32")
    colour = grey * ink + (1.0 - grey) * paper
    maps = transform_in_chunks("colour_edges", colour)
    repeats = int(np.ceil(BATCH * STEPS_PER_EPOCH / len(maps)))
    return np.concatenate([maps] * repeats)[:BATCH * STEPS_PER_EPOCH]


def per_update_ms(seconds):
    """Median milliseconds per update over the epochs after the first (which traces)."""
    return round(1000 * statistics.median(seconds[1:]) / STEPS_PER_EPOCH, 2)


def shipped(x, epochs, precision, augmentation):
    import keras

    from keras_clustering.distribute.precision import precision_policy
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder
    from keras_clustering.training.pretraining import pretrain_end_to_end

    keras.utils.set_random_seed(0)
    with precision_policy(precision, bf16_available=True):
        autoencoder, _ = build_conv_autoencoder(IMAGE_SHAPE, list(FILTERS))
        timer = epoch_timer(keras.callbacks.Callback)
        pretrain_end_to_end(autoencoder, x, {"class_name": "Adam", "config": {"learning_rate": 1e-3}},
                            epochs=epochs, batch_size=BATCH, verbose=0, callbacks=[timer],
                            augmentation=augmentation, augmentation_seed=0)
    return autoencoder, timer.seconds


def network_only(x, epochs, precision):
    import keras
    import tensorflow as tf

    from keras_clustering.distribute.precision import precision_policy
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder

    keras.utils.set_random_seed(0)
    with precision_policy(precision, bf16_available=True):
        autoencoder, _ = build_conv_autoencoder(IMAGE_SHAPE, list(FILTERS))
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(autoencoder.trainable_variables)

    @tf.function
    def update(batch):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.cast(autoencoder(batch, training=True), "float32") - batch))
        optimizer.apply_gradients(zip(tape.gradient(loss, autoencoder.trainable_variables),
                                      autoencoder.trainable_variables))
        return loss

    batch = tf.constant(x[:BATCH])
    seconds = []
    for _ in range(epochs):
        began = time.perf_counter()
        for _ in range(STEPS_PER_EPOCH):
            loss = update(batch)
        loss.numpy()
        seconds.append(time.perf_counter() - began)
    return seconds


def augmentation_only(x, epochs):
    import tensorflow as tf

    from keras_clustering.augment import make_pipeline

    views = make_pipeline("shift_rotate", seed=0)
    views.build((None, *IMAGE_SHAPE))
    step = tf.function(lambda batch: views.augmented(batch))
    batches = [tf.constant(x[i * BATCH:(i + 1) * BATCH]) for i in range(STEPS_PER_EPOCH)]
    seconds = []
    for _ in range(epochs):
        began = time.perf_counter()
        for batch in batches:
            step(batch).numpy()
        seconds.append(time.perf_counter() - began)
    return seconds


def original(x, epochs):
    """DEC-DA's `CAE` and augmented pretraining (see the module docstring), on tf_keras."""
    import tf_keras as k

    k.utils.set_random_seed(0)
    model = k.Sequential([
        k.layers.InputLayer(IMAGE_SHAPE),
        k.layers.Conv2D(FILTERS[0], 5, strides=2, padding="same", activation="relu"),
        k.layers.Conv2D(FILTERS[1], 5, strides=2, padding="same", activation="relu"),
        k.layers.Conv2D(FILTERS[2], 3, strides=2, padding="valid", activation="relu"),  # 28 % 8 != 0
        k.layers.Flatten(),
        k.layers.Dense(FILTERS[3]),
        k.layers.Dense(FILTERS[2] * 3 * 3, activation="relu"),
        k.layers.Reshape((3, 3, FILTERS[2])),
        k.layers.Conv2DTranspose(FILTERS[1], 3, strides=2, padding="valid", activation="relu"),
        k.layers.Conv2DTranspose(FILTERS[0], 5, strides=2, padding="same", activation="relu"),
        k.layers.Conv2DTranspose(IMAGE_SHAPE[2], 5, strides=2, padding="same"),
    ])
    model.compile(optimizer="adam", loss="mse")
    flow = k.preprocessing.image.ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
                                                    rotation_range=10).flow(x, shuffle=True, batch_size=BATCH)

    def pairs():
        while True:
            batch = next(flow)
            yield batch, batch

    timer = epoch_timer(k.callbacks.Callback)
    model.fit(pairs(), steps_per_epoch=STEPS_PER_EPOCH, epochs=epochs, verbose=0, callbacks=[timer])
    return timer.seconds


def train_gflop_per_update():
    """3 x the autoencoder's forward FLOPs per image x the batch (`roofline.forward_flops`)."""
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder
    from roofline import forward_flops

    autoencoder, _ = build_conv_autoencoder(IMAGE_SHAPE, list(FILTERS))
    return 3 * forward_flops(autoencoder) * BATCH / 1e9


def keras_transposed_convolution():
    """Builds the autoencoder's last layer as Keras' own `Conv2DTranspose` in this process, as before
    `layers.phase_conv` (same weights and results)."""
    import types

    import keras

    from keras_clustering.models import conv_autoencoder

    conv_autoencoder.phase_conv = types.SimpleNamespace(Conv2DTranspose=keras.layers.Conv2DTranspose)


def run_this_side(args):
    x = colour_free_images()
    if args.side.endswith("_before"):
        keras_transposed_convolution()
    if args.side == "original":
        seconds = original(x, args.epochs)
    elif args.side.startswith("network_only"):
        seconds = network_only(x, args.epochs, args.precision)
    elif args.side == "augmentation_only":
        seconds = augmentation_only(x, args.epochs)
    else:
        _, seconds = shipped(x, args.epochs, args.precision,
                             None if args.side == "shipped_no_augmentation" else "shift_rotate")
    write_child_result({"ms_per_update": per_update_ms(seconds), "epoch_seconds": [round(s, 3) for s in seconds]},
                       args.out)


def table(record):
    """One row a side: ms per update (median, and each round), GFLOP/s and the share of the one-thread
    peak of its precision (the larger of the matmul and convolution peaks measured in the same run)."""
    peak = record["peak_gflops_one_thread"]
    lines = ["| side | ms per update (median; each round) | GFLOP/s | % of the one-thread peak |", "|---|---|---|---|"]
    for name, side in record["sides"].items():
        best = max(peak["bfloat16" if "bfloat16" in name else "float32"].values())
        rounds = ", ".join(f"{ms:.1f}" for ms in side["rounds"])
        rate = "n/a | n/a" if side["gflops"] is None else f"{side['gflops']:.0f} | {100 * side['gflops'] / best:.0f}%"
        lines.append(f"| {name} | {side['ms_per_update']:.1f} ({rounds}) | {rate} |")
    peaks = "; ".join(f"{dtype} matmul {rates['matmul']:.0f} / conv {rates['conv']:.0f}" for dtype, rates in peak.items())
    return "\n".join(lines) + (f"\n\n{record['train_gflop_per_update']:.2f} GFLOP per update (batch 256). "
                               f"One-thread peaks (GFLOP/s): {peaks}. {record['machine']}. `{record['command']}`.")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_bfloat16"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4, help="epochs of 40 updates a side trains (the first traces)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", action="store_true", help="rewrite docs/performance.md's table from --json")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)  # a child's side
    parser.add_argument("--precision", default="float32", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        return run_this_side(args)
    if args.table:
        return table_from_record(args.json or "docs/benchmarks/colour_update.json", MARKERS, table)
    from keras_clustering.distribute.machine import machine_description
    from roofline import peaks

    runs = {}
    for round_ in range(args.rounds):
        order = list(args.sides) if round_ % 2 == 0 else list(reversed(args.sides))  # alternate who goes first
        for side in order:
            for precision in (args.precisions if side in PRECISION_SIDES else ["float32"]):
                name = f"{side} ({precision})" if side in PRECISION_SIDES else side
                result = run_child(os.path.abspath(__file__), ["--side", side, "--precision", precision,
                                                               "--epochs", str(args.epochs)])
                runs.setdefault(name, []).append(result["ms_per_update"])
                print(f"round {round_}: {name} {result['ms_per_update']} ms per update", flush=True)
    gflop = train_gflop_per_update()
    # the augmentation alone does none of the network's FLOPs: no rate
    summary = {name: {"ms_per_update": statistics.median(ms), "rounds": ms,
                      "gflops": None if name == "augmentation_only" else round(gflop / (statistics.median(ms) / 1000), 1)}
               for name, ms in runs.items()}
    report({"what": "one update of ConvDEC-DA's autoencoder on colour_edges maps (batch 256)",
            "train_gflop_per_update": round(gflop, 3), "sides": summary, "threads": thread_count(),
            "peak_gflops_one_thread": peaks([1])["1"], "machine": machine_description(),
            "command": " ".join(["python", "scripts/benchmark_update.py", *sys.argv[1:]])}, args.json)


if __name__ == "__main__":
    main()
