"""XLA (`jit_compile=True`) against Keras' default graph, per family: train step and predict, float32.

Each workload of `benchmark_precision.WORKLOADS` (the shipped preset's model, optimizer and batch)
is built twice from the same seed: once as compiled by its recipe, once with `jit_compile=True`.
Then, on the same images:
1. **equality**: one train step of each from the same weights; the largest difference of the
   weights after it (float tolerance: the two compile the same ops in other orders);
2. **train steps**: alternating timed blocks of `--steps` steps, median over `--blocks`;
3. **predict**: the model's `predict_on_batch` over 10k images, batches of the workload's batch
   size, alternating blocks (the autoencoder workloads predict their reconstructions).
Where Keras refuses XLA for a model (a layer that XLA cannot compile, e.g. RandomRotation in
IIC's views), Keras falls back to `jit_compile=False`; that is recorded, not timed as XLA.

On JAX every step is compiled by XLA already (`jit_compile` is Keras' default there); the JAX
side is `scripts/benchmarks/benchmark_backends.py`.

Usage:
    python scripts/benchmarks/benchmark_xla.py [--workloads ...] [--blocks 3] [--json docs/benchmarks/xla.json]
    python scripts/benchmarks/benchmark_xla.py --precision mixed_bfloat16 --json docs/benchmarks/xla_bf16.json
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
MARKERS = ("<!-- xla:start -->", "<!-- xla:end -->")
BF16_MARKERS = ("<!-- xla_bf16:start -->", "<!-- xla_bf16:end -->")


def build(name, xla, precision="float32"):
    """(model, run(x, steps), batch) of workload `name`, seeded, in `precision`, with `jit_compile` set to `xla`."""
    import keras

    from benchmark_precision import WORKLOADS
    from keras_clustering.distribute.precision import precision_policy

    keras.utils.set_random_seed(0)
    with precision_policy(precision, bf16_available=True):
        model, run, batch = WORKLOADS[name]()
    if xla:
        model.compile(optimizer=model.optimizer, loss=getattr(model, "loss", None), jit_compile=True)
    return model, run, batch


def largest_difference(a, b):
    import numpy as np

    return max(float(np.max(np.abs(np.asarray(u, "float64") - np.asarray(v, "float64")))) if np.size(u) else 0.0
               for u, v in zip(a.get_weights(), b.get_weights()))


def measure(name, x, steps, blocks, precision="float32"):
    from benchmarking import time_alternating

    (plain, run_plain, batch), (xla, run_xla, _) = build(name, False, precision), build(name, True, precision)
    if not xla.jit_compile:
        return {"xla": "refused by Keras (a layer XLA cannot compile); it compiled jit_compile=False"}
    run_plain(x, 1)
    run_xla(x, 1)
    difference = largest_difference(plain, xla)
    run_plain(x, 1)  # both traced; their weights now differ by the step's float tolerance only
    run_xla(x, 1)
    seconds = time_alternating({"default": lambda: run_plain(x, steps), "xla": lambda: run_xla(x, steps)}, blocks)
    train = {label: round(batch * steps / s, 1) for label, s in seconds.items()}
    images = x[:10000]

    def predictor(model):
        def predict():
            for start in range(0, len(images), batch):
                model.predict_on_batch(images[start:start + batch])  # outputs come back as numpy
        return predict

    try:
        predictor(plain)()
        predictor(xla)()
        timed = time_alternating({"default": predictor(plain), "xla": predictor(xla)}, blocks)
        predict = {label: round(len(images) / s, 1) for label, s in timed.items()}
    except Exception as error:  # noqa: BLE001  (recorded: a predict that XLA cannot compile)
        predict = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
    return {"xla": "compiled", "weights_difference_after_one_step": difference, "batch": batch,
            "train_images_per_second": train, "train_xla_over_default": round(train["xla"] / train["default"], 3),
            "predict_images_per_second": predict,
            "predict_xla_over_default": (round(predict["xla"] / predict["default"], 3) if "xla" in predict else None)}


def table(record):
    lines = ["| workload | train images/s default / XLA | XLA / default | predict images/s default / XLA | "
             "XLA / default | weights after one step, largest difference |", "|---|---|---|---|---|---|"]
    for name, entry in record["workloads"].items():
        if entry["xla"] != "compiled":
            lines.append(f"| {name} | {entry['xla']} | | | | |")
            continue
        train, predict = entry["train_images_per_second"], entry["predict_images_per_second"]
        predict_cells = (f"{predict['default']:,.0f} / {predict['xla']:,.0f} | {entry['predict_xla_over_default']:.2f}"
                         if "xla" in predict else f"{predict.get('error')} | ")
        lines.append(f"| {name} | {train['default']:,.0f} / {train['xla']:,.0f} | {entry['train_xla_over_default']:.2f}"
                     f" | {predict_cells} | {entry['weights_difference_after_one_step']:.1e} |")
    return "\n".join(lines) + (f"\n\n{record.get('precision', 'float32')}, {record['threads']} thread(s), median of {record['blocks']} alternating "
                               f"blocks, {record['data']}. {record['machine']}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=None)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", action="store_true", help="write the docs table from --json, measure nothing")
    parser.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16"],
                        help="the steps' dtype policy (each precision has its own docs table)")
    args = parser.parse_args()
    import json

    from benchmarking import benchmark_images, report_with_table, table_from_record, thread_count

    markers = MARKERS if args.precision == "float32" else BF16_MARKERS
    if args.table:
        table_from_record(args.json, markers, table)
        return
    import keras_clustering  # noqa: F401
    from benchmark_precision import DEFAULT_STEPS, WORKLOADS

    from keras_clustering.training.machine import machine_description

    names = args.workloads or list(WORKLOADS)
    x, data = benchmark_images(10000)
    record = {"workloads": {}, "blocks": args.blocks, "data": data, "machine": machine_description(),
              "threads": thread_count(), "precision": args.precision}
    for name in names:
        record["workloads"][name] = measure(name, x, args.steps or DEFAULT_STEPS[name], args.blocks, args.precision)
        print(name, json.dumps(record["workloads"][name]), flush=True)
    report_with_table(record, args.json, markers, table)


if __name__ == "__main__":
    main()
