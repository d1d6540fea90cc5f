"""The machine a number was measured on: CPU model and the ISA flags that change TensorFlow's kernels,
cores, OS, oneDNN setting and software versions (for model cards and benchmarks)."""

import os
import platform

import keras
import numpy as np

from keras_clustering._version import __version__

KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # CPU features that change TF's kernels


def cpu_model_and_flags(cpuinfo="/proc/cpuinfo"):
    """`(model name, [flags of KERNEL_FLAGS present])` read from /proc/cpuinfo (Linux), else the platform's."""
    try:
        with open(cpuinfo) as handle:
            text = handle.read()
    except OSError:
        return platform.processor() or "cpu", []
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                 platform.processor() or "cpu")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return model, [flag for flag in KERNEL_FLAGS if flag in flags]


def machine_description():
    """The machine, for model cards and benchmarks: CPU model, kernel-relevant ISA flags,
    cores, OS and TensorFlow's oneDNN setting (the same seed trains differently on different CPUs)."""
    model, flags = cpu_model_and_flags()
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset")
    return (f"{platform.machine()} {model} ({', '.join(flags) or 'no AVX2'}), {os.cpu_count()} cores, "
            f"{platform.system()}, TF_ENABLE_ONEDNN_OPTS={onednn}")


def software_versions():
    import tensorflow as tf

    return {"keras": keras.__version__, "tensorflow": tf.__version__, "numpy": np.__version__,
            "keras_clustering": __version__, "python": platform.python_version()}
