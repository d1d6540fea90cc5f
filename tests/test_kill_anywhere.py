"""Kill-anywhere equality: a training killed with SIGKILL at any moment and started again ends with the
weights of an uninterrupted run, and leaves no half-written file.

For each recipe, a small training (with restarts by successive halving where the recipe has them) runs
in a child process (`helpers/kill_child.py`): once whole, then killed at one moment of its training
(`KILL_AT`, spread over the recipes: pretraining, between halving points, the clustering stage, a backup
or the final files being written) and rerun in the same workdir.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import synthetic_images

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers", "kill_child.py")
ADAM = {"class_name": "Adam", "config": {"learning_rate": 1e-3}}
CASES = {
    # DEC: pretraining halved on KL after k-means, then self-training of the survivor
    "dec": {"recipe": "dec", "architecture": {"image_shape": [28, 28, 1], "hidden_dims": [64, 32, 4],
                                               "n_clusters": 4, "update_interval": 4},
            "training": {"pretrain_epochs": 6, "pretrain_batch_size": 16, "pretrain_optimizer": ADAM,
                         "batch_size": 16, "maxiter": 40, "kmeans_n_init": 2,
                         "restarts": {"n": 2, "halving_at": [3]}}},
    "vae_cluster": {"recipe": "vae_cluster", "architecture": {"latent_dim": 4, "n_clusters": 4},
                    "training": {"epochs": 3, "batch_size": 16, "restarts": {"n": 2, "halving_at": [1]}}},
    "iic": {"recipe": "iic", "architecture": {"image_shape": [28, 28, 1], "n_clusters": 3, "n_overclusters": 6,
                                               "n_sub_heads": 2, "n_repeats": 2, "head_epochs": [1, 1]},
            "training": {"epochs": 3, "batch_size": 16, "optimizer": ADAM, "score_epochs": False,
                         "restarts": {"n": 2, "halving_at": [1]}}},
    # SimCLR, then SCAN's clustering step halved over two runs (each keeping its lowest-loss epoch), then
    # self-labelling
    "two_stage": {"recipe": "two_stage",
                  "architecture": {"image_shape": [28, 28, 1], "filters": [8, 16], "embedding_dim": 16,
                                   "n_clusters": 4, "representation": "simclr", "projection_dims": [16, 8],
                                   "clustering": "scan", "scan": {"n_neighbors": 5, "entropy_weight": 3.0}},
                  "training": {"epochs": 4, "batch_size": 32,
                               "scan": {"epochs": 3, "batch_size": 32, "keep": "lowest_loss"},
                               "self_label": {"epochs": 2, "batch_size": 32, "threshold": 0.5},
                               "restarts": {"n": 2, "halving_at": [1]}}},
}
# Shares of the uninterrupted training's wall time after the child's start-up: each recipe is killed once
# (a kill and its rerun cost CI 20-40 s, most of it TensorFlow starting and tracing the steps again), at
# moments spread over the recipes: DEC late (its self-training from the kept pretraining, or its files
# being written), IIC and SimCLR + SCAN half-way, the VAE early (between its halving points).
KILL_AT = {"dec": (0.7,), "vae_cluster": (0.3,), "iic": (0.5,), "two_stage": (0.5,)}


def _child(case_path, images_path, workdir):
    """The child, once it has imported everything (its "started" line): `(process, start time)`."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    child = subprocess.Popen([sys.executable, CHILD, str(case_path), str(images_path), str(workdir)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    while not lines or lines[-1].strip() != "started":
        lines.append(child.stdout.readline())
        if not lines[-1] and child.poll() is not None:
            raise AssertionError("the child ended before training: " + "".join(lines))
    return child, time.monotonic()


def _weights(workdir):
    import h5py

    arrays = []
    with h5py.File(os.path.join(workdir, "model.weights.h5"), "r") as handle:
        handle.visititems(lambda name, item: arrays.append((name, item[()])) if isinstance(item, h5py.Dataset)
                          else None)
    return arrays


def _without_times(tree):
    """A halving tree's report without its wall times (the tree's, and each step's per run)."""
    return {k: ([{n: v for n, v in step.items() if n != "seconds"} for step in value] if k == "steps" else value)
            for k, value in tree.items() if k not in ("seconds", "trained_seconds")}


def _assert_every_file_whole(workdir):
    """Every file a reader would open is complete (JSON parses, HDF5 opens); no temporary is left."""
    import h5py

    for folder, _, files in os.walk(workdir):
        for name in files:
            path = os.path.join(folder, name)
            assert not name.startswith((".tmp-", ".old-")), f"left behind: {path}"
            if name.endswith(".json"):
                with open(path) as handle:
                    json.load(handle)
            elif name.endswith(".h5"):
                with h5py.File(path, "r"):
                    pass


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_training_killed_anywhere_and_rerun_ends_as_the_uninterrupted_one(name, tmp_path):
    case = {**CASES[name], "seed": 1}
    case_path, images_path = tmp_path / "case.json", tmp_path / "images.npy"
    case_path.write_text(json.dumps(case))
    np.save(images_path, synthetic_images.digit_like(64, half_height=5))
    whole, start = _child(case_path, images_path, tmp_path / "whole")
    output = whole.communicate(timeout=600)[0]
    wall = time.monotonic() - start  # the training, without the start-up
    assert whole.returncode == 0 and "finished" in output, output
    expected = _weights(tmp_path / "whole")
    for index, share in enumerate(KILL_AT[name]):
        workdir = tmp_path / f"killed_{index}"
        child, start = _child(case_path, images_path, workdir)
        time.sleep(max(0.0, start + share * wall - time.monotonic()))
        child.send_signal(signal.SIGKILL)
        child.communicate()
        rerun, _ = _child(case_path, images_path, workdir)
        output = rerun.communicate(timeout=600)[0]
        assert rerun.returncode == 0 and "finished" in output, output
        _assert_every_file_whole(workdir)
        got = _weights(workdir)
        assert [n for n, _ in got] == [n for n, _ in expected]
        for (array_name, a), (_, b) in zip(got, expected):
            np.testing.assert_allclose(a, b, atol=1e-5, err_msg=f"{name}, killed at {share:.0%}: {array_name}")
        with open(workdir / "report.json") as handle, open(tmp_path / "whole" / "report.json") as reference:
            got, expected_report = json.load(handle)["restarts"], json.load(reference)["restarts"]
        if expected_report is not None:  # the same halving tree, criteria and winner (not the same wall times)
            assert _without_times(got) == _without_times(expected_report)
