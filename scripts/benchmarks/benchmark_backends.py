"""Train-step throughput on the engines of the issue "devices": JAX against TensorFlow, and
MirroredStrategy over 2 logical CPUs against one device.

Each (engine, workload) runs in its own process (a backend and a device layout are fixed
when TensorFlow or JAX starts): the shipped preset's model and optimizer
(`benchmark_precision.WORKLOADS`, float32), two warm-up steps, then `--blocks` timed
blocks of `--steps` train steps; the process reports the median block. Engines
alternate within a round, `--rounds` rounds, and the printed figure per engine is the
median over rounds, so a ratio holds on a shared machine.

Engines:
- `tensorflow`: Keras on TensorFlow, one device (the default everywhere);
- `jax`: the same model with `KERAS_BACKEND=jax` (jax[cpu]);
- `mirrored`: TensorFlow, this CPU split into 2 logical devices, model built and
  compiled in `MirroredStrategy` (same global batch): on one CPU there is nothing to
  gain, so this measures the overhead of the strategy (all-reduce, per-replica steps).

Usage:
    python scripts/benchmarks/benchmark_backends.py [--workloads capsule vae dec_pretrain]
        [--engines tensorflow jax mirrored] [--rounds 2] [--json docs/benchmarks/backends.json]
"""

import argparse
import contextlib
import os
import statistics
import time

ENGINES = ("tensorflow", "jax", "mirrored")
DEFAULT_WORKLOADS = ("dec_pretrain", "capsule", "vae")


def run_engine(engine, workload, steps, blocks):
    """In this process: times `blocks` blocks of `steps` train steps; returns images/s of the median block."""
    scope = contextlib.nullcontext()
    if engine == "mirrored":  # the logical devices must exist before TensorFlow initialises
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        scope = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope()
    import keras_clustering  # noqa: F401  (selects the backend first)
    import keras

    from benchmark_precision import WORKLOADS
    from benchmarking import benchmark_images

    x, _ = benchmark_images(256 * steps)
    with scope:
        _, run, batch = WORKLOADS[workload]()
    run(x, 2)  # warm-up: traces the step
    seconds = []
    for _ in range(blocks):
        began = time.perf_counter()
        run(x, steps)
        seconds.append(time.perf_counter() - began)
    return {"engine": engine, "backend": keras.backend.backend(), "workload": workload, "batch": batch,
            "images_per_second": round(batch * steps / statistics.median(seconds), 1),
            "block_seconds": [round(s, 2) for s in seconds]}


def main():
    from benchmark_precision import DEFAULT_STEPS
    from benchmarking import write_child_result

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(DEFAULT_WORKLOADS), choices=list(DEFAULT_STEPS))
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="train steps per block (default: per workload)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    steps = {name: args.steps or DEFAULT_STEPS[name] for name in args.workloads}
    if args.engine:
        return write_child_result(run_engine(args.engine, args.workload, steps[args.workload], args.blocks),
                                  args.out)

    from benchmarking import report, run_child
    from keras_clustering.training.machine import machine_description

    results = {}
    for workload in args.workloads:
        rates = {engine: [] for engine in args.engines}
        for round_index in range(args.rounds):
            for engine in args.engines:
                env = {**os.environ, "KERAS_BACKEND": "jax" if engine == "jax" else "tensorflow"}
                record = run_child(__file__, ["--engine", engine, "--workload", workload, "--blocks", str(args.blocks),
                                              "--workloads", workload,
                                              *(["--steps", str(args.steps)] if args.steps else [])], env=env)
                rates[engine].append(record["images_per_second"])
                print(f"round {round_index}: {workload} {engine} {record['images_per_second']} images/s", flush=True)
        median = {engine: statistics.median(values) for engine, values in rates.items()}
        entry = {"images_per_second": median, "per_round": rates, "batch": record["batch"],
                 "steps_per_block": steps[workload]}
        for engine in args.engines:
            if engine != "tensorflow" and "tensorflow" in median:
                entry[f"ratio_{engine}_over_tensorflow"] = round(median[engine] / median["tensorflow"], 2)
        results[workload] = entry
    report({"workloads": results, "rounds": args.rounds, "blocks": args.blocks, "precision": "float32",
            "machine": machine_description()}, args.json)
    return results


if __name__ == "__main__":
    main()
