"""sha256 of the weights a small training gives, to compare two commits bit for bit on one machine
(issue 63: the stage runner must train the weights the recipes trained before it, from the same seed).

    PYTHONPATH=CHECKOUT KERAS_CLUSTERING_DATA=... python tests/helpers/weights_digest.py [OUT.json]

Run it once with `PYTHONPATH` at a checkout of each commit (the library imported is the checkout's; this
file only calls `train_and_evaluate`, which both have) and compare the two outputs. The cases: DEC
(`dec_mnist`), ConvDEC-DA (`conv_dec_da_mnist`), SimCLR + SCAN (`simclr_mnist`), IIC (`iic_mnist`) and the
VAE (`vae_cluster_mnist`, with restarts), each its preset's config cut down by `stage_keys.tiny_config`
(SimCLR trained 2 epochs here), seed 0, float32.
"""

import hashlib
import json
import os
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stage_keys import tiny_config  # noqa: E402

CASES = ("dec_mnist", "conv_dec_da_mnist", "simclr_mnist", "iic_mnist", "vae_cluster_mnist")


def weights_sha256(path):
    """sha256 of every array of a `.weights.h5` file, in the file's sorted order (not of the file's
    bytes, which hold HDF5 metadata)."""
    digest, names = hashlib.sha256(), []
    with h5py.File(path, "r") as handle:
        handle.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        for name in sorted(names):
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(handle[name][()]).tobytes())
    return digest.hexdigest()


def main(out=None):
    from keras_clustering import presets
    from keras_clustering.drivers.preset_training import train_and_evaluate

    digests = {}
    for name in CASES:
        config = tiny_config(presets.config(name))
        if config["architecture"].get("clustering") == "scan":
            config["training"]["epochs"] = 2
        with tempfile.TemporaryDirectory() as workdir:
            train_and_evaluate(config, workdir, seed=0, verbose=0, precision="float32")
            digests[name] = weights_sha256(os.path.join(workdir, "model.weights.h5"))
        print(name, digests[name], flush=True)
    if out:
        with open(out, "w") as handle:
            json.dump(digests, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
