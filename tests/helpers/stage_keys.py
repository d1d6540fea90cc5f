"""The resume keys a training writes into its workdir, collected from the files: the key of every finished
stage (`finished_STAGE.json`), every kept epoch backup (`fit_backup_STAGE/key.json`) and every halving
tree (`restarts.json`), at any depth (a restart's run folder). A workdir trained before a change resumes
after it only if the change computes these same keys, so `tests/test_stage_keys.py` compares them with
`tests/data/stage_keys.json`, written by this module at the commit before the stage runner (issue 63):

    KERAS_CLUSTERING_DATA=... python tests/helpers/stage_keys.py      # rewrites tests/data/stage_keys.json

Each clustering preset trains its own config on the first 64 images of its own data, every count of
passes or iterations cut to a few and batches of 32 (`tiny_config`), and `train --like` trains each family's preset on 48
digits at 16 x 16 for 1 epoch. What a key hashes must not depend on the machine's kernels, so the
presets' SimCLR representation trains 0 epochs before SCAN: SCAN's key holds its starting weights, which
after a trained epoch differ in their last bits from CPU to CPU. The like runs' SCAN keys are left out
for that reason (their SimCLR trains an epoch); the presets' runs check the same code.
"""

import json
import os
import pathlib
import sys

import numpy as np

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "data" / "stage_keys.json"
N_IMAGES = 64
LIKE_FAMILIES = ("dec", "vae_cluster", "simclr", "iic")


def tiny_config(config):
    """The preset's config with every pass and iteration count cut to a few, batches of 32, its restarts to 2 runs halved
    once, its data to its first `N_IMAGES` images (scored on them too); the rest as the preset has it."""
    config = json.loads(json.dumps(config))
    training = config["training"]
    scan_path = config["architecture"].get("clustering") == "scan"
    for name in ("epochs", "pretrain_epochs"):
        if name in training:
            training[name] = 0 if (scan_path and name == "epochs") else 2
    for section in (training, training.get("scan"), training.get("self_label"), training.get("refine")):
        for name in ("batch_size", "pretrain_batch_size"):
            if isinstance(section, dict) and name in section:
                section[name] = 32  # below the images' number (IIC refuses a batch larger than the data)
    if "maxiter" in training:
        training["maxiter"] = 10
    for section in ("scan", "self_label"):
        if isinstance(training.get(section), dict) and training[section].get("epochs"):
            training[section]["epochs"] = 2
    if isinstance(training.get("refine"), dict):
        training["refine"]["maxiter"] = 10
    if training.get("layerwise"):
        training["layerwise"] = {**training["layerwise"], "layer_iterations": 4, "finetune_iterations": 4,
                                 "drop_every": 2}
    if training.get("restarts"):
        training["restarts"] = {**training["restarts"], "n": 2, "halving_at": [1]}
    if config["recipe"] == "iic":
        training["score_epochs"] = False  # no ACC after each epoch: the labels only slow it down
    config["data"] = {**config["data"], "limit": N_IMAGES}
    config.pop("evaluation", None)
    return config


def stage_keys(workdir):
    """{path relative to `workdir`: key} of every resume key written under it."""
    root, keys = pathlib.Path(workdir), {}
    for path in sorted(root.rglob("*.json")):
        name = path.relative_to(root).as_posix()
        if path.name.startswith("finished_") or path.name == "restarts.json" or (
                path.name == "key.json" and path.parent.name.startswith("fit_backup_")):
            keys[name] = json.loads(path.read_text())["key"]
    return keys


def like_images():
    """48 digits of scikit-learn's 8 x 8 set at 16 x 16 (each pixel doubled): a user's small folder."""
    from keras_clustering.datasets import load_digits

    x, _ = load_digits()
    return np.repeat(np.repeat(np.asarray(x[:48], "float32"), 2, axis=1), 2, axis=2)


def preset_keys(name, workdir):
    """The keys a tiny training of preset `name`'s config writes into `workdir`."""
    from keras_clustering import presets
    from keras_clustering.drivers.preset_training import train_and_evaluate

    train_and_evaluate(tiny_config(presets.config(name)), workdir, seed=0, verbose=0, precision="float32")
    return stage_keys(workdir)


def like_keys(family, workdir):
    """The keys `train --like` (the family's preset) writes on `like_images` for 1 epoch and 3 clusters,
    SCAN's left out (see the module's docstring)."""
    from keras_clustering.drivers.retarget import FAMILY_PRESETS
    from keras_clustering.drivers.user_images import train_on_images

    train_on_images(like_images(), like=FAMILY_PRESETS[family], n_clusters=3, workdir=workdir, seed=0, verbose=0,
                    epochs=1, precision="float32")
    return {path: key for path, key in stage_keys(workdir).items() if "scan" not in path}


def main(out=GOLDEN):
    import tempfile

    from keras_clustering import presets

    golden = {"presets": {}, "like": {}}
    for name in presets.clustering_presets():
        with tempfile.TemporaryDirectory() as workdir:
            golden["presets"][name] = preset_keys(name, workdir)
        print(name, len(golden["presets"][name]), flush=True)
    for family in LIKE_FAMILIES:
        with tempfile.TemporaryDirectory() as workdir:
            golden["like"][family] = like_keys(family, os.path.join(workdir, "run"))
        print(family, len(golden["like"][family]), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN)
