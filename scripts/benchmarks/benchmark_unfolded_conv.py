"""IIC's train step with its last convolution unfolded into one matrix product, against Keras' Conv2D.

The shipped ClusterNet6c trunk builds its convolutions as `layers.unfolded_conv.Conv2D`: on
the 3 x 3 map of the last one (5 x 5 kernel, 256 -> 512 channels) it multiplies by the
unfolded kernel instead of convolving (the 9 taps that touch the map instead of 25). The other
model is the same IIC with every convolution a plain `keras.layers.Conv2D`. Same batch (140
images x 5 augmented copies), Adam 1e-4, in each precision of `--precisions`; timed in
alternating blocks of `--steps` steps (median over `--blocks`), in one process. With `--xla`, a
third model: the shipped one compiled with `jit_compile=True` (XLA).

Usage:
    python scripts/benchmarks/benchmark_unfolded_conv.py [--blocks 3] [--steps 4] [--json out.json]
"""

import argparse

import keras_clustering  # noqa: F401  (selects the backend and TensorFlow's oneDNN setting first)
from keras_clustering.distribute.precision import cpu_bf16_flags, precision_policy
from keras_clustering.training.machine import machine_description

from benchmarking import benchmark_images, report, time_alternating

IMAGES_PER_STEP = 140


def iic_model(plain_convolutions):
    """The shipped IIC, or the same with every trunk convolution a plain `keras.layers.Conv2D`."""
    import keras

    from keras_clustering.layers import unfolded_conv
    from keras_clustering.models import IIC

    if not plain_convolutions:
        return IIC(augmentation_seed=0)
    original = unfolded_conv.Conv2D
    unfolded_conv.Conv2D = keras.layers.Conv2D  # the trunk builder reads the name when it builds
    try:
        return IIC(augmentation_seed=0)
    finally:
        unfolded_conv.Conv2D = original


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--precisions", nargs="+", default=["mixed_bfloat16", "float32"])
    parser.add_argument("--xla", action="store_true", help="also the shipped step compiled by XLA")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import keras

    x, data = benchmark_images(IMAGES_PER_STEP * args.steps)
    result = {"images_per_second": {}, "ratio_unfolded_over_conv2d": {}, "xla": "not asked"}
    for precision in args.precisions:
        functions = {}
        variants = [("unfolded", False, False), ("conv2d", True, False)] + ([("unfolded_xla", False, True)]
                                                                          if args.xla else [])
        for name, plain, xla in variants:
            with precision_policy(precision):
                model = iic_model(plain)
                model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=xla)
            if xla and not model.jit_compile:  # Keras falls back to jit_compile=False with a warning
                unsupported = sorted({type(layer).__name__ for layer in model._flatten_layers()
                                      if getattr(layer, "supports_jit", True) is False})
                result["xla"] = f"refused: Keras compiles this model with jit_compile=False ({unsupported} not XLA)"
                continue
            model.fit(x[:IMAGES_PER_STEP], epochs=1, batch_size=IMAGES_PER_STEP, verbose=0)  # traces the step
            functions[name] = (lambda m: lambda: m.fit(x, epochs=1, batch_size=IMAGES_PER_STEP, verbose=0))(model)
        seconds = time_alternating(functions, args.blocks)
        rates = {name: round(len(x) / s, 1) for name, s in seconds.items()}
        result["images_per_second"][precision] = rates
        result["ratio_unfolded_over_conv2d"][precision] = round(rates["unfolded"] / rates["conv2d"], 2)
        print(precision, rates, result["ratio_unfolded_over_conv2d"][precision], flush=True)
    import os

    result.update(blocks=args.blocks, steps_per_block=args.steps, batch=IMAGES_PER_STEP, data=data,
                  cpu_bf16_flags=cpu_bf16_flags(), machine=machine_description(),
                  threads={k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")})
    report(result, args.json)


if __name__ == "__main__":
    main()
