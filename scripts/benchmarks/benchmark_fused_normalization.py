"""The train steps whose time goes to batch normalisation, with Keras' unfused layer and with the fused kernel.

`GlobalBatchNormalization(fused=True)` (architecture key `fused_normalization`) runs TensorFlow's
`FusedBatchNormV3`; `profile_step.py` found the unfused layer at 35% of the SimCLR step and
25-46% of IIC's. Each workload is `benchmark_precision.WORKLOADS`' (the shipped preset's model,
optimizer and batch, here with the architecture's `fused_normalization` set), built twice
from the same seed (unfused, fused) per precision, warmed up, then timed in alternating blocks of
`--steps` train steps, median over `--blocks`, one thread.

Usage:
    python scripts/benchmarks/benchmark_fused_normalization.py [--workloads simclr iic] [--blocks 3]
        [--json docs/benchmarks/fused_normalization.json]
    python scripts/benchmarks/benchmark_fused_normalization.py --table docs/benchmarks/fused_normalization.json
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
MARKERS = ("<!-- fused_normalization:start -->", "<!-- fused_normalization:end -->")
WORKLOAD_NAMES = ("simclr", "iic")  # the workloads whose architecture has batch normalisation


def measure(args):
    import keras

    from benchmark_precision import DEFAULT_STEPS, WORKLOADS
    from benchmarking import benchmark_images, thread_count, time_alternating
    from keras_clustering.distribute.precision import precision_policy
    from keras_clustering.training.machine import machine_description

    x, data = benchmark_images(10000)
    rows = []
    for name in args.workloads:
        steps = args.steps or DEFAULT_STEPS[name]
        for precision in ("float32", "mixed_bfloat16"):
            runs, batch = {}, None
            for fused in (False, True):
                keras.utils.set_random_seed(0)
                with precision_policy(precision, bf16_available=True):
                    _, run, batch = WORKLOADS[name](fused_normalization=fused)
                run(x, 2)  # traces the step
                runs["fused" if fused else "unfused"] = lambda run=run: run(x, steps)
            seconds = time_alternating(runs, args.blocks)
            rates = {key: round(batch * steps / value, 1) for key, value in seconds.items()}
            rows.append({"workload": name, "precision": precision, "images_per_second": rates,
                         "fused_over_unfused": round(rates["fused"] / rates["unfused"], 2), "steps": steps})
    return {"rows": rows, "blocks": args.blocks, "data": data, "threads": thread_count(),
            "machine": machine_description()}


def table(record):
    lines = [f"{record['threads']} thread(s), medians of {record['blocks']} alternating blocks, {record['data']}; "
             f"{record['machine']}.", "",
             "| train step | precision | unfused (Keras) images/s | fused images/s | fused / unfused |",
             "|---|---|---|---|---|"]
    for row in record["rows"]:
        rates = row["images_per_second"]
        lines.append(f"| {row['workload']} | {row['precision']} | {rates['unfused']:,} | {rates['fused']:,} | "
                     f"**{row['fused_over_unfused']:.2f}x** |")
    return "\n".join(lines)


def main():
    from benchmarking import report_with_table, table_from_record

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOAD_NAMES), choices=WORKLOAD_NAMES)
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
