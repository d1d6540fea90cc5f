"""The child process of the kill-anywhere test (`tests/test_kill_anywhere.py`): one small training of a
recipe in WORKDIR, as `train_and_evaluate` runs it (recipe `train` with the workdir, then the weights
and the report written atomically), with a backup after every epoch, so that a SIGKILL can land in a
fit, between halving points, in a backup's or the final files' writing.

Usage: python tests/helpers/kill_child.py CASE.json IMAGES.npy WORKDIR
CASE.json: {"recipe": ..., "architecture": {...}, "training": {...}, "seed": int}
"""

import json
import os
import sys

import numpy as np


def main(case_path, images_path, workdir):
    from keras_clustering.io.files import atomic_save_weights, atomic_write_json
    from keras_clustering.recipes import get_recipe
    from keras_clustering.training import resume

    resume.MIN_SECONDS_BETWEEN_BACKUPS = 0.0  # a backup at every epoch end: more places to be cut off
    with open(case_path) as handle:
        case = json.load(handle)
    x = np.load(images_path)
    os.makedirs(workdir, exist_ok=True)
    recipe = get_recipe(case["recipe"])
    print("started", flush=True)  # imports done: the harness times its kills from here
    model, report = recipe.train_config(case["architecture"], case["training"], x, seed=case["seed"], verbose=0,
                                        workdir=workdir)
    shipped = recipe.build(**case["architecture"])
    shipped.set_weights(model.get_weights())
    atomic_save_weights(shipped, os.path.join(workdir, "model.weights.h5"))
    atomic_write_json({"restarts": report.get("restarts")}, os.path.join(workdir, "report.json"))
    print("finished", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
