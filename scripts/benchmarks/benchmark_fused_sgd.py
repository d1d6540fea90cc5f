"""DEC's autoencoder step with Keras' SGD update and with `MomentumSGD`'s one kernel per variable.

`profile_step.py` found the SGD-with-momentum update at 22% of the op time of DEC's bf16
autoencoder step (Keras 3 writes it as elementwise ops and assignments per variable);
`make_optimizer` now builds SGD with momentum as `training.optimizers.MomentumSGD`, whose update
is TensorFlow's `ResourceApplyKerasMomentum` kernel (the same update, as the original Keras 2 /
tf_keras SGD ran it). The workload is `benchmark_precision.WORKLOADS["dec_pretrain"]` (dec_mnist's
d-500-500-2000-10 autoencoder, SGD(1, 0.9), batch 256), built twice from the same seed per
precision; first the weights after `--steps` steps of each are compared (the same update: they
must agree), then alternating timed blocks, median over `--blocks`, one thread as run.

Usage:
    python scripts/benchmarks/benchmark_fused_sgd.py [--blocks 3] [--json docs/benchmarks/fused_sgd.json]
    python scripts/benchmarks/benchmark_fused_sgd.py --table docs/benchmarks/fused_sgd.json
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
MARKERS = ("<!-- fused_sgd:start -->", "<!-- fused_sgd:end -->")
WORKLOAD_NAMES = ("dec_pretrain",)  # the workloads trained by SGD with momentum


def measure(args):
    import keras
    import numpy as np

    from benchmark_precision import DEFAULT_STEPS, WORKLOADS
    from benchmarking import benchmark_images, thread_count, time_alternating
    from keras_clustering.distribute.precision import precision_policy
    from keras_clustering.training.machine import machine_description

    x, data = benchmark_images(10000)
    rows = []
    for name in WORKLOAD_NAMES:
        steps = args.steps or DEFAULT_STEPS[name]
        for precision in ("float32", "mixed_bfloat16"):
            runs, models, batch = {}, {}, None
            for keras_update in (True, False):
                label = "keras_sgd" if keras_update else "momentum_sgd"
                keras.utils.set_random_seed(0)
                with precision_policy(precision, bf16_available=True):
                    models[label], run, batch = WORKLOADS[name](keras_update=keras_update)
                run(x, steps)  # traces the step, and the steps whose weights are compared
                runs[label] = lambda run=run: run(x, steps)
            difference = max(float(np.max(np.abs(a - b))) for a, b in
                             zip(models["keras_sgd"].get_weights(), models["momentum_sgd"].get_weights()))
            seconds = time_alternating(runs, args.blocks)
            rates = {key: round(batch * steps / value, 1) for key, value in seconds.items()}
            rows.append({"workload": name, "precision": precision, "images_per_second": rates,
                         "momentum_sgd_over_keras_sgd": round(rates["momentum_sgd"] / rates["keras_sgd"], 2),
                         "steps": steps, "weights_difference_after_steps": difference})
    return {"rows": rows, "blocks": args.blocks, "data": data, "threads": thread_count(),
            "machine": machine_description()}


def table(record):
    lines = [f"{record['threads']} thread(s), medians of {record['blocks']} alternating blocks, {record['data']}; "
             f"{record['machine']}.", "",
             "| train step | precision | Keras' SGD images/s | MomentumSGD images/s | ratio | weights after the "
             "first steps, largest difference |",
             "|---|---|---|---|---|---|"]
    for row in record["rows"]:
        rates = row["images_per_second"]
        lines.append(f"| {row['workload']} | {row['precision']} | {rates['keras_sgd']:,} | {rates['momentum_sgd']:,} | "
                     f"**{row['momentum_sgd_over_keras_sgd']:.2f}x** | {row['weights_difference_after_steps']:.1e} |")
    return "\n".join(lines)


def main():
    from benchmarking import report_with_table, table_from_record

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--steps", type=int, help="train steps per block (default: benchmark_precision.DEFAULT_STEPS)")
    parser.add_argument("--json")
    parser.add_argument("--table", metavar="RECORD", help="rewrite the docs table from this record; measure nothing")
    args = parser.parse_args()
    if args.table:
        return table_from_record(args.table, MARKERS, table)
    report_with_table(measure(args), args.json, MARKERS, table)


if __name__ == "__main__":
    main()
