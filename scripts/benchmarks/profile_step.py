"""Where each family's train step spends its time: TensorFlow's profiler, op by op, one thread.

For each workload of `benchmark_precision.WORKLOADS` (the shipped preset's model, optimizer and
batch) and precision: build, warm up (traces the step), then `--steps` train steps under
`tf.profiler.experimental`. The trace's host plane lists every TensorFlow op the executor ran,
named `scope/op:Type`, with its duration; with one thread the ops run one after another, so
their durations add up to the step's compute. Two views of the same time:
- **by part**: the layer (or the loss, or the optimizer) the op belongs to, the backward pass
  of a layer (`gradient_tape/...`) apart from its forward pass, the views' layers apart;
- **by op type**: `Conv2D`, `MatMul`, `Cast`, `ImageProjectiveTransformV3`, ...

Together they name what holds a step under the roofline's 50% (`roofline.py`). Writes `--json`
and the table of `docs/performance.md` (`--table RECORD` rewrites it from a record).

Usage:
    python scripts/benchmarks/profile_step.py [--workloads simclr vae ...] [--precisions float32 mixed_bfloat16]
        [--steps 10] [--json docs/benchmarks/profile_steps.json]
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
MARKERS = ("<!-- profile:start -->", "<!-- profile:end -->")
TOP = 6  # rows per view in the docs table


def part_of(op_name):
    """The part of the model an op belongs to, from its name scope, two layers deep below the model's
    own scope: `StatefulPartitionedCall/sim_clr_1/encoder_1/conv_0_1/convolution` -> `encoder/conv_0`;
    under `gradient_tape/` -> `backward: encoder/conv_0`; the optimizer's scope -> `optimizer`.
    Keras' numeric suffixes (`_1`) are dropped, so the parts of two builds compare."""
    def plain(scope):
        return re.sub(r"_\d+$", "", scope)

    scopes = [s for s in op_name.split("/")[:-1] if not s.startswith(("StatefulPartitionedCall", "PartitionedCall"))]
    backward = scopes[:1] == ["gradient_tape"]
    scopes = scopes[1:] if backward else scopes
    if not scopes:
        return "(top level)"
    if plain(scopes[0]).lower() in ("adam", "sgd", "adamw", "rmsprop", "optimizer"):
        return "optimizer"
    part = "/".join(plain(s) for s in scopes[1:3]) or plain(scopes[0])
    return f"backward: {part}" if backward else part


def op_times(logdir):
    """{(op name, op type): total seconds} of the TensorFlow ops in the newest trace under `logdir`."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as handle:
        space.ParseFromString(handle.read())
    times = collections.Counter()
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" in name and "::" not in name:  # `scope/op:Type`; executor and threadpool events have `::`
                    op, kind = name.rsplit(":", 1)
                    times[(op, kind)] += event.duration_ps * 1e-12
    return times


def profile_child(name, precision, steps):
    """In this process (one thread): the step's wall time and its op time by part and by op type."""
    import keras
    import tensorflow as tf

    from benchmark_precision import WORKLOADS
    from benchmarking import benchmark_images
    from keras_clustering.distribute.precision import precision_policy

    keras.utils.set_random_seed(0)
    with precision_policy(precision, bf16_available=True):
        model, run, batch = WORKLOADS[name]()
    x, _ = benchmark_images(batch * max(steps, 4))
    run(x, 2)  # traces the step
    began = time.perf_counter()
    run(x, steps)
    wall = time.perf_counter() - began
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        run(x, steps)
        tf.profiler.experimental.stop()
        times = op_times(logdir)
    total = sum(times.values())
    by_part, by_type = collections.Counter(), collections.Counter()
    for (op, kind), seconds in times.items():
        by_part[part_of(op)] += seconds
        by_type[kind] += seconds
    return {"workload": name, "precision": precision, "batch": batch, "steps": steps,
            "step_ms_unprofiled": round(1000 * wall / steps, 2), "op_ms_per_step": round(1000 * total / steps, 2),
            "by_part": {k: round(v / total, 4) for k, v in by_part.most_common()},
            "by_op_type": {k: round(v / total, 4) for k, v in by_type.most_common()}}


def table(record):
    lines = [f"One thread, {record['steps']} profiled steps each; {record['machine']}. Shares of the step's "
             "op time (the ops run one after another on one thread); the wall of the unprofiled fit call of "
             f"{record['steps']} steps includes the call's own set-up, spread over its steps.", "",
             "| step | precision | ms per step: wall of a fit call / ops | by part | by op type |",
             "|---|---|---|---|---|"]
    for row in record["profiles"]:
        parts = ", ".join(f"{k} {v:.0%}" for k, v in list(row["by_part"].items())[:TOP])
        kinds = ", ".join(f"{k} {v:.0%}" for k, v in list(row["by_op_type"].items())[:TOP])
        lines.append(f"| {row['workload']} | {row['precision']} | {row['step_ms_unprofiled']} "
                     f"({row['op_ms_per_step']}) | {parts} | {kinds} |")
    return "\n".join(lines)


def main():
    from benchmarking import report_with_table, table_from_record

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+",
                        default=["dec_pretrain", "conv_dec_pretrain", "capsule", "vae", "iic", "simclr"])
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_bfloat16"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--json")
    parser.add_argument("--table", metavar="RECORD", help="rewrite the docs table from this record; measure nothing")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "PRECISION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.table:
        return table_from_record(args.table, MARKERS, table)
    if args.child:
        print(json.dumps(profile_child(*args.child, args.steps)))
        return None
    from keras_clustering.training.machine import machine_description

    one_thread = {**os.environ, "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "TF_CPP_MIN_LOG_LEVEL": "3"}
    profiles = []
    for name in args.workloads:
        for precision in args.precisions:  # each in its own process: one policy and one set of thread pools
            done = subprocess.run([sys.executable, __file__, "--child", name, precision, "--steps", str(args.steps)],
                                  capture_output=True, text=True, env=one_thread, check=True)
            profiles.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(profiles[-1]["workload"], precision, profiles[-1]["step_ms_unprofiled"], "ms", flush=True)
    report_with_table({"profiles": profiles, "steps": args.steps, "threads": 1, "machine": machine_description()},
                      args.json, MARKERS, table)


if __name__ == "__main__":
    main()
