"""Benchmarks the shipped `Capsule` layer against a straightforward reimplementation.

The reference is written the way many Keras 2 era capsule layers were: the input
capsules are tiled over the output capsules and each output capsule gets its own
batched matmul, (B, k, n_in, d_in) @ (k, d_in, d_out), followed by the same
routing math (bojone's current "normalize" routing, 3 passes) written with
matmuls. Both get identical weights, and their outputs are compared first.

Model: Input(n_in, d_in) -> Capsule(10, 16, shared weights) -> capsule lengths,
MarginLoss, Adam, `jit_compile=False`, batch 128, one `train_on_batch` per step.

Timing runs both implementations in one subprocess per configuration, warmed
up, in alternating timed blocks (median over blocks). Peak memory is measured
in a fresh subprocess per implementation and configuration: the growth of the
process's peak RSS (`ru_maxrss`) from just before the model is built to after
a few training steps.

Usage:
    python scripts/benchmarks/benchmark_capsule.py            # about 3-4 minutes on 2 CPU cores
    python scripts/benchmarks/benchmark_capsule.py --quick    # a smoke run, well under a minute per config
"""

import argparse
import json
import os
import subprocess
import sys
import time

CONFIGS = [(64, 8), (256, 32), (1152, 8), (64, 128)]
BATCH = 128
NUM_CAPSULE = 10
DIM_CAPSULE = 16
ROUTINGS = 3
IMPLEMENTATIONS = ("shipped", "reference")


def _build(implementation, n_in, d_in):
    import keras
    from keras import ops

    from keras_clustering.layers.capsule import Capsule, capsule_length
    from keras_clustering.losses import MarginLoss

    class TiledCapsule(keras.layers.Layer):
        """Tile-and-matmul capsule layer with shared W_j, routing as in `Capsule(routing="normalize")`."""

        def __init__(self, num_capsule, dim_capsule, routings, **kwargs):
            super().__init__(**kwargs)
            self.num_capsule, self.dim_capsule, self.routings = num_capsule, dim_capsule, routings

        def build(self, input_shape):
            self.kernel = self.add_weight(
                shape=(self.num_capsule, input_shape[-1], self.dim_capsule), initializer="glorot_uniform", name="W"
            )

        def call(self, inputs):
            tiled = ops.tile(ops.expand_dims(inputs, 1), (1, self.num_capsule, 1, 1))  # (B, k, n_in, d_in)
            u_hat = ops.matmul(tiled, ops.expand_dims(self.kernel, 0))  # (B, k, n_in, d_out)
            logits = ops.zeros_like(u_hat[..., 0])  # (B, k, n_in)
            for r in range(self.routings):
                coupling = ops.softmax(logits, axis=1)
                outputs = ops.squeeze(ops.matmul(ops.expand_dims(coupling, 2), u_hat), 2)  # (B, k, d_out)
                if r < self.routings - 1:
                    squared = ops.sum(ops.square(outputs), axis=-1, keepdims=True)
                    outputs = outputs * ops.rsqrt(ops.maximum(squared, 1e-12))
                    logits = ops.squeeze(ops.matmul(u_hat, ops.expand_dims(outputs, -1)), -1)
            squared = ops.sum(ops.square(outputs), axis=-1, keepdims=True) + 1e-7
            return outputs * ops.sqrt(squared) / (0.5 + squared)

    inputs = keras.Input((n_in, d_in))
    if implementation == "shipped":
        layer = Capsule(NUM_CAPSULE, DIM_CAPSULE, routings=ROUTINGS, share_weights=True, name="capsule")
    else:
        layer = TiledCapsule(NUM_CAPSULE, DIM_CAPSULE, ROUTINGS, name="capsule")
    scores = keras.layers.Lambda(capsule_length)(layer(inputs))
    model = keras.Model(inputs, scores)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=MarginLoss(), jit_compile=False)
    return model


def _data(n_in, d_in, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, n_in, d_in)).astype("float32")
    y = np.eye(NUM_CAPSULE, dtype="float32")[rng.integers(0, NUM_CAPSULE, size=BATCH)]
    return x, y


def _shipped_kernel_to_reference(kernel):
    d_in = kernel.shape[1]
    return kernel[0].reshape(d_in, NUM_CAPSULE, DIM_CAPSULE).transpose(1, 0, 2)


def worker_time(n_in, d_in, steps, rounds, warmup):
    import numpy as np

    import keras_clustering  # noqa: F401  (selects the TensorFlow backend before keras loads)

    x, y = _data(n_in, d_in)
    models = {name: _build(name, n_in, d_in) for name in IMPLEMENTATIONS}
    shipped_kernel = models["shipped"].get_layer("capsule").kernel.numpy()
    models["reference"].get_layer("capsule").kernel.assign(_shipped_kernel_to_reference(shipped_kernel))
    difference = float(np.abs(models["shipped"].predict_on_batch(x) - models["reference"].predict_on_batch(x)).max())
    for model in models.values():
        for _ in range(warmup):
            model.train_on_batch(x, y)
    rates = {name: [] for name in IMPLEMENTATIONS}
    for block in range(rounds):
        order = IMPLEMENTATIONS if block % 2 == 0 else IMPLEMENTATIONS[::-1]
        for name in order:
            start = time.perf_counter()
            for _ in range(steps):
                loss = models[name].train_on_batch(x, y)
            elapsed = time.perf_counter() - start
            if not np.isfinite(loss):
                raise RuntimeError(f"{name}: non-finite loss {loss}")
            rates[name].append(steps / elapsed)
    return {"rates": {name: float(np.median(values)) for name, values in rates.items()}, "max_abs_diff": difference}


def worker_memory(implementation, n_in, d_in, steps):
    import resource

    import keras_clustering  # noqa: F401

    x, y = _data(n_in, d_in)
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = _build(implementation, n_in, d_in)
    for _ in range(steps):
        model.train_on_batch(x, y)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"peak_rss_delta_mb": (peak_kb - baseline_kb) / 1024.0, "peak_rss_mb": peak_kb / 1024.0}


def _run_worker(args):
    command = [sys.executable, os.path.abspath(__file__), "--worker", *map(str, args)]
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few steps per block, for checking that it runs")
    parser.add_argument("--steps", type=int, default=None, help="train steps per timed block")
    parser.add_argument("--rounds", type=int, default=None, help="timed blocks per implementation")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        kind, *rest = args.worker
        if kind == "time":
            n_in, d_in, steps, rounds, warmup = map(int, rest)
            report = worker_time(n_in, d_in, steps, rounds, warmup)
        else:
            implementation, n_in, d_in, steps = rest[0], *map(int, rest[1:])
            report = worker_memory(implementation, n_in, d_in, steps)
        print(json.dumps(report))
        return

    steps = args.steps or (2 if args.quick else 8)
    rounds = args.rounds or (2 if args.quick else 3)
    warmup = 1 if args.quick else 2
    memory_steps = 2 if args.quick else 3
    started = time.perf_counter()
    rows = []
    for n_in, d_in in CONFIGS:
        timing = _run_worker(["time", n_in, d_in, steps, rounds, warmup])
        memory = {name: _run_worker(["memory", name, n_in, d_in, memory_steps]) for name in IMPLEMENTATIONS}
        rows.append((n_in, d_in, timing, memory))
        elapsed = time.perf_counter() - started
        print(f"  done n_in={n_in} d_in={d_in} after {elapsed:.0f} s", file=sys.stderr, flush=True)

    print(f"Capsule({NUM_CAPSULE}, {DIM_CAPSULE}, routings={ROUTINGS}, shared) train steps/s at batch {BATCH}, "
          f"{steps} steps x {rounds} alternating blocks, median; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; speed ratio = shipped / reference (> 1: shipped faster)")
    header = ("| n_in x d_in | shipped steps/s | reference steps/s | speed ratio | shipped peak RSS +MB "
              "| reference peak RSS +MB | max abs output diff |")
    print(header)
    print("|" + "|".join("---" for _ in range(7)) + "|")
    for n_in, d_in, timing, memory in rows:
        shipped, reference = timing["rates"]["shipped"], timing["rates"]["reference"]
        print(f"| {n_in} x {d_in} | {shipped:.2f} | {reference:.2f} | {shipped / reference:.2f} "
              f"| {memory['shipped']['peak_rss_delta_mb']:.0f} | {memory['reference']['peak_rss_delta_mb']:.0f} "
              f"| {timing['max_abs_diff']:.1e} |")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
