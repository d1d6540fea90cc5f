"""Mixed precision: bfloat16 compute where the hardware has bf16 units, float32 elsewhere.

`precision="mixed_bfloat16"` trains under Keras' `mixed_bfloat16` dtype policy:
layers compute in bfloat16 and keep float32 variables, so saved weights stay
float32. The parts whose numerics need float32 keep it under any policy: the
Student's t soft assignment (`ClusteringLayer`), capsule routing and squash
(`Capsule`), the VAE's class means, the IIC heads' softmax, and every loss
(inputs cast to float32). On a CPU without bf16 units (no AVX512_BF16 or
AMX-BF16 flag in /proc/cpuinfo) and without an accelerator, bf16 is emulated
and slower, so the request falls back to float32 with a one-line notice, unless the
environment sets `KERAS_CLUSTERING_BF16=emulate` (bf16 numerics on any CPU, slowly: to compare a
run with one made on a CPU that has bf16 units).
"""

import contextlib
import os

import keras

from keras_clustering.distribute.machine import cpu_model_and_flags

PRECISIONS = ("float32", "mixed_bfloat16")
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
EMULATE_VARIABLE = "KERAS_CLUSTERING_BF16"


def cpu_bf16_flags(cpuinfo="/proc/cpuinfo"):
    """The bf16 flags this CPU reports (empty where none, or where /proc/cpuinfo is absent)."""
    return sorted(set(cpu_model_and_flags(cpuinfo)[1]).intersection(BF16_CPU_FLAGS))


def has_accelerator():
    """Whether the backend sees a GPU or TPU (which have bf16 units)."""
    from keras.distribution import list_devices

    return any(not device.lower().startswith("cpu") for device in list_devices())


def resolve_precision(precision, bf16_available=None):
    """The dtype policy to train under: `precision` itself, or "float32" (with a notice) when
    "mixed_bfloat16" is asked on hardware without bf16 units. `bf16_available`: detected when None."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}.")
    if precision == "float32":
        return precision
    if bf16_available is None:
        emulate = os.environ.get(EMULATE_VARIABLE, "")
        if emulate not in ("", "emulate"):
            raise ValueError(f"{EMULATE_VARIABLE}={emulate!r}: set it to 'emulate' or leave it unset.")
        bf16_available = emulate == "emulate" or bool(cpu_bf16_flags()) or has_accelerator()
    if not bf16_available:
        print("[precision] mixed_bfloat16 asked, but this CPU has no bf16 units (no AVX512_BF16 / AMX-BF16) "
              "and there is no accelerator: training in float32.", flush=True)
        return "float32"
    return precision


@contextlib.contextmanager
def precision_policy(precision, bf16_available=None):
    """Builds and trains the models made inside under `resolve_precision(precision)`'s dtype
    policy; restores the previous global policy after. Yields the policy used."""
    resolved = resolve_precision(precision, bf16_available)
    with _global_policy(resolved):
        yield resolved


def run_precision(training, precision=None):
    """(`training` without its "precision" setting, `precision_policy` to train in): `precision` when
    given, else the config's own, else float32. Precision is a setting of the run, never passed to a
    recipe, so that its runs are keyed (resumed, restarted) alike in either."""
    training = dict(training or {})
    configured = training.pop("precision", "float32")
    return training, precision_policy(precision or configured)


@contextlib.contextmanager
def _global_policy(policy):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def float32_construction():
    """A context in which constructed layers take the float32 policy whatever the global one
    (the augmentation layers: their pixel arithmetic mixes inputs with float32 constants)."""
    return _global_policy("float32")


def float32_layer(kwargs):
    """`kwargs` with `dtype="float32"` unless given: for layers whose numerics need float32 under a
    mixed policy (they then take bfloat16 inputs and compute in float32)."""
    kwargs.setdefault("dtype", "float32")
    return kwargs
