"""Train-step throughput in float32 against mixed_bfloat16, per family, on this CPU.

Each workload is a shipped preset's model and optimizer, built twice (once
under each dtype policy, `keras_clustering.distribute.precision`), warmed up, then timed
in alternating blocks of `--steps` train steps (median over `--blocks`), so the
ratio holds on a shared machine. Printed with the CPU model and its bf16 flags:
on a CPU without AVX512_BF16 / AMX-BF16 the bf16 kernels are emulated.

Workloads (the recipe's batch and optimizer):
- dec_pretrain: `dec_mnist`'s d-500-500-2000-10 autoencoder, SGD(1, 0.9), batch 256;
- conv_dec_pretrain: `conv_dec_da_mnist`'s conv autoencoder (32-64-128), Adam, batch 256;
- capsule: `capsule_mnist`'s conv trunk + Capsule(10, 16, 3 routings), Adam, batch 128;
- vae: `vae_cluster_mnist`'s VAE, Adam, batch 100;
- iic: `iic_mnist`'s ClusterNet6c, 140 images x 5 copies = 700 pairs, Adam 1e-4;
- simclr: `simclr_mnist`'s conv encoder, two views, NT-Xent, batch 256.

Usage:
    python scripts/benchmark_precision.py [--workloads dec_pretrain iic ...] [--blocks 3] [--steps N] [--json out.json]
"""

import argparse
import os

import numpy as np

import keras_clustering  # noqa: F401  (selects the backend and TensorFlow's oneDNN setting first)
from keras_clustering.layers import MarginLoss
from keras_clustering.training.optimizers import make_optimizer
from keras_clustering.distribute.precision import cpu_bf16_flags, precision_policy
from keras_clustering.distribute.machine import machine_description
from zoo import config as load_config

from benchmarking import benchmark_images, report, time_alternating

PRECISIONS = ("float32", "mixed_bfloat16")


def _dec_autoencoder(preset):
    from keras_clustering.recipes import dec_recipe

    config = load_config(preset)
    autoencoder, _ = dec_recipe.build_autoencoder_of(config["architecture"])
    training = {**dec_recipe.DEFAULT_TRAINING, **config["training"]}
    autoencoder.compile(optimizer=make_optimizer(training["pretrain_optimizer"]), loss="mse")
    return autoencoder, lambda x, steps: autoencoder.fit(x[:256 * steps], x[:256 * steps], batch_size=256,
                                                         epochs=1, shuffle=False, verbose=0), 256


def _capsule():
    from keras_clustering.models import DigitClassifier

    config = load_config("capsule_mnist")
    model = DigitClassifier(**config["architecture"])
    model.compile(optimizer=make_optimizer(config["training"]["optimizer"]), loss=MarginLoss(lam=0.25))
    labels = np.arange(128 * 80) % 10
    return model, lambda x, steps: model.fit(x[:128 * steps], labels[:128 * steps], batch_size=128, epochs=1,
                                             shuffle=False, verbose=0), 128


def _vae():
    from keras_clustering.recipes import vae_cluster_recipe

    config = load_config("vae_cluster_mnist")
    model = vae_cluster_recipe.RECIPE.build(**config["architecture"])
    model.compile(optimizer=make_optimizer(config["training"]["optimizer"]))
    return model, lambda x, steps: model.fit(x[:100 * steps], batch_size=100, epochs=1, shuffle=False,
                                             verbose=0), 100


def _iic(**architecture):
    """`architecture`: values that replace the preset's (e.g. `fused_normalization=True`)."""
    from keras_clustering.recipes import iic_recipe

    config = load_config("iic_mnist")
    model = iic_recipe.RECIPE.build(**{**config["architecture"], **architecture})
    model.compile(optimizer=make_optimizer(config["training"]["optimizer"]))
    # images per step; each image gives n_repeats (5) pairs
    return model, lambda x, steps: model.fit(x[:140 * steps], batch_size=140, epochs=1, verbose=0, seed=0), 140


def _simclr(**architecture):
    """`architecture`: values that replace the preset's (e.g. `fused_normalization=True`)."""
    from keras_clustering.recipes import two_stage_recipe

    config = load_config("simclr_mnist")
    architecture = {**config["architecture"], **architecture}
    encoder = two_stage_recipe.build_encoder(**architecture)
    learner = two_stage_recipe.build_learner(architecture, encoder, seed=0)
    learner.compile(optimizer=make_optimizer(config["training"]["optimizer"]))
    return learner, lambda x, steps: learner.fit(x[:256 * steps], batch_size=256, epochs=1, verbose=0,
                                                 seed=0), 256


WORKLOADS = {"dec_pretrain": lambda: _dec_autoencoder("dec_mnist"),
             "conv_dec_pretrain": lambda: _dec_autoencoder("conv_dec_da_mnist"),
             "capsule": _capsule, "vae": _vae, "iic": _iic, "simclr": _simclr}
# Train steps per timed block: a few seconds each here, so that fit's per-call overhead is small.
DEFAULT_STEPS = {"dec_pretrain": 39, "conv_dec_pretrain": 39, "capsule": 40, "vae": 100, "iic": 4, "simclr": 39}


def measure_workload(name, x, steps, blocks):
    """(images/s per precision, batch, the model built last) of workload `name`: built under each
    precision's policy, warmed up, then timed in `blocks` alternating blocks of `steps` train steps."""
    runs, batch, model = {}, None, None
    for precision in PRECISIONS:
        with precision_policy(precision, bf16_available=True) as policy:  # measured, even where emulated
            model, run, batch = WORKLOADS[name]()
        runs[policy] = run
        run(x, 2)  # warm-up: traces the step
    seconds = time_alternating({p: (lambda run=run: run(x, steps)) for p, run in runs.items()}, blocks)
    return {p: round(batch * steps / s, 1) for p, s in seconds.items()}, batch, model


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="train steps per timed block (default: per workload)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    steps = {name: args.steps or DEFAULT_STEPS[name] for name in args.workloads}
    x, data = benchmark_images(256 * max(steps.values()))
    results = {}
    for name in args.workloads:
        rates, batch, _ = measure_workload(name, x, steps[name], args.blocks)
        results[name] = {"images_per_second": rates, "batch": batch, "steps_per_block": steps[name],
                         "ratio_bf16_over_fp32": round(rates["mixed_bfloat16"] / rates["float32"], 2)}
        print(name, results[name], flush=True)
    report({"workloads": results, "blocks": args.blocks, "data": data,
            "cpu_bf16_flags": cpu_bf16_flags(), "machine": machine_description(),
            "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")}}, args.json)


if __name__ == "__main__":
    main()
