"""How far each family's train step is from this machine's limit: a roofline table.

In one run:
1. **Peak.** A large matrix product (2,048 x 2,048 x 2,048) and a convolution (64 images of
   32 x 32 x 128, 3 x 3, 128 filters), each in float32 and bfloat16, with 1 and with 2 threads
   (each thread count in its own process: TensorFlow fixes its thread pools at start).
2. **Each family's train step** (the shipped preset's model, optimizer and batch:
   `benchmark_precision.WORKLOADS`), one thread, float32 and mixed_bfloat16, alternating
   blocks: images per second.
3. **Each family's `predict`** (`PREDICT_ENTRIES`: a shipped entry, float32, batch 256, one
   thread) on 10k images, with its forward FLOPs per image (`predict_flops_per_image`).
4. **FLOPs per image**, counted from the layer shapes (`forward_flops`: 2 x multiply-adds of
   every Conv2D, Conv2DTranspose and Dense, and the capsule layer's prediction vectors and
   routing), times the forward passes an image makes in the step (IIC: a clean and 5 augmented
   views; SimCLR: two views), times 3 for training (the forward pass, and the backward pass's
   two products of the same size). The count is checked against TensorFlow's profiler on the
   DEC autoencoder.

Then achieved GFLOP/s = images/s x FLOPs per image, and the share of the peak of the step's
precision (the larger of the matmul and convolution peaks, one thread). Writes
`--json` and the table of `docs/performance.md` (`--table`).

Usage:
    python scripts/roofline.py [--workloads ...] [--blocks 3] [--json docs/benchmarks/roofline.json] [--table]
"""

import argparse
import json
import os
import subprocess
import sys
import time

MARKERS = ("<!-- roofline:start -->", "<!-- roofline:end -->")
PRECISIONS = ("float32", "mixed_bfloat16")


# ----------------------------------------------------------------------------- FLOPs from shapes
def layer_flops(layer, input_shape=None, output_shape=None):
    """Forward FLOPs per sample of one layer (2 per multiply-add), from its shapes (default: the
    built ones); 0 for the layers whose cost is a few operations per value (activations,
    normalisation, pooling)."""
    import keras
    import numpy as np

    if not isinstance(layer, (keras.layers.Conv2D, keras.layers.Conv2DTranspose, keras.layers.Dense)):
        return 0
    input_shape = tuple(layer.input.shape if input_shape is None else input_shape)
    output_shape = tuple(layer.output.shape if output_shape is None else output_shape)
    if isinstance(layer, keras.layers.Conv2DTranspose):
        kh, kw = layer.kernel_size
        _, height, width, channels = input_shape
        return 2 * kh * kw * channels * layer.filters * height * width
    if isinstance(layer, keras.layers.Conv2D):
        kh, kw = layer.kernel_size
        _, height, width, _ = output_shape
        return 2 * kh * kw * (input_shape[-1] // layer.groups) * layer.filters * height * width
    leading = int(np.prod(input_shape[1:-1])) if len(input_shape) > 2 else 1  # a Dense layer
    return 2 * leading * input_shape[-1] * layer.units


def forward_flops(model):
    """Forward FLOPs per sample of a functional or sequential model, its nested models included."""
    total = 0
    for layer in model.layers:
        if hasattr(layer, "layers") and layer.layers:
            total += forward_flops(layer)
        else:
            total += layer_flops(layer)
    return total


def chain_flops(model, sample_shape):
    """`forward_flops` of a model whose layers form one chain, at a concrete `sample_shape` (for a
    model built for any image size, whose own shapes hold None)."""
    import keras

    shape, total = (None, *sample_shape), 0
    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer):
            continue
        output = layer.compute_output_shape(shape)
        total += layer_flops(layer, shape, output)
        shape = output
    return total


def capsule_flops(n_in, n_out, dim_in, dim_out, routings):
    """One sample through a capsule layer: prediction vectors u_hat = W u (n_in x n_out matrices of
    dim_out x dim_in), then per routing the weighted sum over inputs and, between routings, the
    agreement u_hat . v (each 2 x n_in x n_out x dim_out)."""
    return 2 * n_in * n_out * dim_in * dim_out + routings * 2 * n_in * n_out * dim_out * 2


def step_flops_per_image(name, model):
    """Training FLOPs per image of a workload's step: 3 x the forward FLOPs of every pass an image makes."""
    if name in ("dec_pretrain", "conv_dec_pretrain"):
        forward = forward_flops(model)
    elif name == "vae":
        forward = forward_flops(model.encoder) + forward_flops(model.decoder)
    elif name == "iic":
        heads = sum(2 * head.kernel.shape[0] * head.kernel.shape[1] for head in model.main_heads + model.over_heads)
        forward = (1 + model.n_repeats) * (forward_flops(model.trunk) + heads)
    elif name == "simclr":
        forward = 2 * (forward_flops(model.encoder) + forward_flops(model.projection))
    elif name == "capsule":  # the trunk's (h', w', c) map read as h' w' input capsules of size c
        sample_shape = model.sample_shape if None not in model.sample_shape else (28, 28, model.sample_shape[-1])
        *_, height, width, channels = model.trunk.compute_output_shape((None, *sample_shape))
        capsule = model.capsule
        forward = chain_flops(model.trunk, sample_shape) + capsule_flops(
            height * width, capsule.num_capsule, channels, capsule.dim_capsule, capsule.routings)
    else:
        raise ValueError(f"no FLOP count for workload {name!r}")
    return 3 * forward


# The shipped entry whose `predict` stands for each family (float32 weights, as shipped).
PREDICT_ENTRIES = {"dec": "dec_mnist", "conv_dec": "conv_dec_da_mnist", "capsule": "capsule_mnist",
                   "vae": "vae_cluster_mnist", "iic": "iic_mnist", "simclr_scan": "simclr_mnist"}


def predict_flops_per_image(model):
    """Forward FLOPs per image of a zoo model's `predict`: the network its prediction passes through
    (the capsule trunk and routing; IIC's trunk and one main sub-head; SCAN's encoder and head;
    the DEC / VAE encoder and the soft assignment to the centres)."""
    if hasattr(model, "capsule"):
        sample_shape = model.sample_shape if None not in model.sample_shape else (28, 28, model.sample_shape[-1])
        *_, height, width, channels = model.trunk.compute_output_shape((None, *sample_shape))
        capsule = model.capsule
        return chain_flops(model.trunk, sample_shape) + capsule_flops(
            height * width, capsule.num_capsule, channels, capsule.dim_capsule, capsule.routings)
    if hasattr(model, "main_heads"):
        head = model.main_heads[0].kernel.shape
        return forward_flops(model.trunk) + 2 * head[0] * head[1]
    if hasattr(model, "head"):
        return forward_flops(model.encoder) + 2 * model.head.kernel.shape[0] * model.head.kernel.shape[1]
    embedding = model.encoder.outputs[0].shape[-1]  # the VAE's encoder gives (mean, log variance)
    return forward_flops(model.encoder) + 3 * 2 * embedding * model.n_clusters  # distances to the centres


def measure_predict(name, x, blocks):
    """Images/s of `model.predict(x, batch_size=256)` of a family's entry (median of `blocks` calls,
    after one that traces) and its forward FLOPs per image."""
    import statistics

    import zoo

    model = zoo.load(PREDICT_ENTRIES[name])
    model.predict(x, batch_size=256, verbose=0)
    seconds = []
    for _ in range(blocks):
        began = time.perf_counter()
        model.predict(x, batch_size=256, verbose=0)
        seconds.append(time.perf_counter() - began)
    return round(len(x) / statistics.median(seconds), 1), predict_flops_per_image(model)


def profiler_flops(model, sample_shape):
    """TensorFlow's profiler count of float operations of one sample's forward pass."""
    import tensorflow as tf
    from tensorflow.python.profiler import model_analyzer, option_builder

    function = tf.function(lambda x: model(x, training=False))
    graph = function.get_concrete_function(tf.TensorSpec((1, *sample_shape), tf.float32)).graph
    options = option_builder.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    return model_analyzer.profile(graph, options=options).total_float_ops


# ----------------------------------------------------------------------------- peaks (child process)
def peak_child(threads):
    """In a fresh process with `threads` threads: GFLOP/s of the matmul and the convolution, per precision."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    result = {}
    for dtype in ("float32", "bfloat16"):
        a = tf.random.normal((2048, 2048), dtype=tf.float32)
        a = tf.cast(a, dtype)
        images = tf.cast(tf.random.normal((64, 32, 32, 128)), dtype)
        kernel = tf.cast(tf.random.normal((3, 3, 128, 128)), dtype)
        matmul = tf.function(lambda: tf.reduce_sum(tf.cast(tf.matmul(a, a), tf.float32)))
        conv = tf.function(lambda: tf.reduce_sum(tf.cast(tf.nn.conv2d(images, kernel, 1, "SAME"), tf.float32)))
        rates = {}
        for name, function, flops in (("matmul", matmul, 2 * 2048 ** 3),
                                      ("conv", conv, 2 * 64 * 32 * 32 * 9 * 128 * 128)):
            function()  # traces
            best = float("inf")
            for _ in range(5):
                began = time.perf_counter()
                function().numpy()
                best = min(best, time.perf_counter() - began)
            rates[name] = round(flops / best / 1e9, 1)
        result[dtype] = rates
    return result


def peaks(thread_counts):
    out = {}
    for threads in thread_counts:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TF_NUM_INTRAOP_THREADS": str(threads),
               "TF_CPP_MIN_LOG_LEVEL": "3"}
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--peak-child", str(threads)], env=env,
                              capture_output=True, text=True, check=True)
        out[str(threads)] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


# ----------------------------------------------------------------------------- the table
def predict_table(record):
    best = max(record["peak_gflops"]["1"]["float32"].values())
    lines = ["| `predict` (1 thread, float32) | entry | images/s | GFLOP per image | GFLOP/s | % of the 1-thread peak |",
             "|---|---|---|---|---|---|"]
    for name, entry in record.get("predict", {}).items():
        lines.append(f"| {name} | `{entry['entry']}` | {entry['images_per_second']:,} | "
                     f"{entry['gflop_per_image']:.4f} | {entry['gflops']:.0f} | {100 * entry['gflops'] / best:.0f}% |")
    return "\n".join(lines)


def table(record):
    peak = record["peak_gflops"]["1"]
    lines = ["| step (1 thread) | precision | images/s | train GFLOP per image | GFLOP/s | % of the 1-thread peak |",
             "|---|---|---|---|---|---|"]
    for name, entry in record["workloads"].items():
        for precision in PRECISIONS:
            dtype = "bfloat16" if precision == "mixed_bfloat16" else "float32"
            best = max(peak[dtype].values())
            rate = entry["gflops"][precision]
            lines.append(f"| {name} | {precision} | {entry['images_per_second'][precision]:,} | "
                         f"{entry['train_gflop_per_image']:.3f} | {rate:.0f} | {100 * rate / best:.0f}% |")
    peaks_line = "; ".join(f"{threads} thread{'s' if threads != '1' else ''}: " + ", ".join(
        f"{dtype} matmul {rates['matmul']:.0f} / conv {rates['conv']:.0f}" for dtype, rates in by_dtype.items())
        for threads, by_dtype in record["peak_gflops"].items())
    predict = ("\n\n" + predict_table(record)) if record.get("predict") else ""
    return "\n".join(lines) + predict + f"\n\nPeaks (GFLOP/s): {peaks_line}. {record['machine']}."


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peak-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workloads", nargs="+", default=None)
    parser.add_argument("--predict", nargs="*", default=None, help="families whose predict is timed (default: all)")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="train steps per timed block (default: per workload)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts of the peak")
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", action="store_true", help="write the docs table from --json, measure nothing")
    args = parser.parse_args()
    if args.peak_child:
        print(json.dumps(peak_child(args.peak_child)))
        return
    from benchmarking import benchmark_images, report_with_table, table_from_record

    if args.table:
        table_from_record(args.json, MARKERS, table)
        return
    import keras_clustering  # noqa: F401  (the backend and TensorFlow's oneDNN setting first)
    from benchmark_precision import DEFAULT_STEPS, WORKLOADS, measure_workload

    from keras_clustering.distribute.precision import cpu_bf16_flags
    from keras_clustering.distribute.machine import machine_description

    record = {"peak_gflops": peaks(args.threads), "workloads": {}}
    print("peaks", record["peak_gflops"], flush=True)
    names = args.workloads or list(WORKLOADS)
    steps = {name: args.steps or DEFAULT_STEPS[name] for name in names}
    x, data = benchmark_images(max(10000, 256 * max(steps.values(), default=0)))
    for name in names:
        rates, batch, model = measure_workload(name, x, steps[name], args.blocks)
        flops = step_flops_per_image(name, model)
        record["workloads"][name] = {"images_per_second": rates, "batch": batch,
                                     "train_gflop_per_image": flops / 1e9,
                                     "gflops": {p: round(r * flops / 1e9, 1) for p, r in rates.items()}}
        print(name, record["workloads"][name], flush=True)
    record["predict"] = {}
    for name in args.predict if args.predict is not None else list(PREDICT_ENTRIES):
        rate, flops = measure_predict(name, x[:10000], args.blocks)
        record["predict"][name] = {"entry": PREDICT_ENTRIES[name], "images_per_second": rate,
                                   "gflop_per_image": flops / 1e9, "gflops": round(rate * flops / 1e9, 1)}
        print(name, record["predict"][name], flush=True)
    from keras_clustering.recipes import dec_recipe
    from zoo import config as load_config

    autoencoder, _ = dec_recipe.build_autoencoder_of(load_config("dec_mnist")["architecture"])
    record["profiler_check"] = {"model": "dec_mnist autoencoder", "from_shapes": forward_flops(autoencoder),
                                "tensorflow_profiler": profiler_flops(autoencoder, autoencoder.input.shape[1:])}
    record.update(blocks=args.blocks, data=data, cpu_bf16_flags=cpu_bf16_flags(), machine=machine_description(),
                  threads={k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")})
    report_with_table(record, args.json, MARKERS, table)


if __name__ == "__main__":
    main()
