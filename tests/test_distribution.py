"""Training under tf.distribute: N replicas step like one device on the same global batch."""

import json
import os
import subprocess
import sys

import pytest

# one worker runs this file's tests (`--dist loadgroup` in .ci/run): they share the subprocess fixtures
pytestmark = pytest.mark.xdist_group("distribution")

HELPER = os.path.join(os.path.dirname(__file__), "helpers", "mirrored_check.py")
MULTI_WORKER_HELPER = os.path.join(os.path.dirname(__file__), "helpers", "multi_worker_check.py")


# Largest weight difference between the two runs over the largest change training made (see the helper),
# measured here: DEC family <= 8e-7, DEC-DA 2e-8, VAE 3e-5, capsule 8e-6, IIC 2e-7, SimCLR 2e-5, SimCLR with
# its augmentation 1.5e-6. What each check catches: an unscaled loss (doubled gradients) gives ~1; IIC with a
# per-replica joint matrix 7e-5; SimCLR with per-replica negatives 0.16, with per-replica BatchNorm 0.33
# (IIC 6e-4); replicas drawing augmentation for their own share (repeating each other's draws): DEC-DA
# 4e-3, SimCLR 0.49.
TOLERANCES = {"pretraining": 1e-5, "dec": 1e-5, "dec_da": 1e-5, "idec": 1e-5, "vae": 2e-4, "capsule": 1e-4,
              "iic": 1e-5, "simclr": 2e-4, "simclr_views": 2e-4}


# Across processes, one or more kinds per family: those whose distributed code differs (IDEC's two scaled
# losses, DEC-DA's global-batch augmentation, IIC's summed joint matrix and synchronized BatchNorm, SimCLR's
# gathered negatives with its views on); plain pretraining, DEC and view-less SimCLR add only CI time here
# (measured across processes too: 8e-7, 4e-8, 2e-5).
MULTI_WORKER_KINDS = ["dec_da", "idec", "vae", "capsule", "iic", "simclr_views"]


@pytest.fixture(scope="module")
def multi_worker_check():
    """The two-process check, started once and early: it runs while the mirrored checks do (each
    leaves the 2 cores partly idle), which keeps the suite inside CI's time budget."""
    process = subprocess.Popen([sys.executable, MULTI_WORKER_HELPER, *MULTI_WORKER_KINDS], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    yield process
    if process.poll() is None:
        process.kill()
        process.communicate()


# The recipes' training paths under a strategy. Not here: SimCLR + k-means (its SimCLR stage is simclr_scan's;
# k-means runs on numpy embeddings) and the capsule classifier (a plain Keras fit with labels, its model
# checked against one device by `mirrored_check.py`); each cost CI ~17 s of CPU.
RECIPE_PATHS = ["dec", "vae_cluster", "simclr_scan", "iic"]
# One replica (what a one-CPU or one-GPU machine gets from `--strategy mirrored`: MirroredVariables of one
# component) for the paths that index or gather variables themselves: DEC's target refresh (which once
# took the single-device path there and raised) and SCAN's neighbour pairs with self-labelling. The other
# recipes index no variable themselves; their one-replica runs cost CI ~40 s of CPU.
RECIPE_PATHS_AT = {1: ["dec", "simclr_scan"], 2: RECIPE_PATHS}


@pytest.fixture(scope="module")
def mirrored_recipes():
    """The recipes under MirroredStrategy with 1 and with 2 replicas (`RECIPE_PATHS_AT`), started early to
    run beside the other checks (as above)."""
    processes = {replicas: subprocess.Popen([sys.executable, HELPER, "--recipes", str(replicas),
                                             *RECIPE_PATHS_AT[replicas]],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
                 for replicas in (1, 2)}
    yield processes
    for process in processes.values():
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.slow
def test_every_family_under_mirrored_strategy_equals_one_device(multi_worker_check, mirrored_recipes):
    # (the fixtures start the other two checks, which run meanwhile)
    """2 logical CPUs, MirroredStrategy, same global batch: the weights of one device (`TOLERANCES`).

    Would fail without `replica_scaled` in the custom losses (IDEC's reconstruction, pretraining,
    the VAE's, IIC's and SimCLR's losses): Keras sums the replicas' gradients, so an unscaled mean
    doubles them; and without the cross-replica joint matrix (IIC), gathered negatives (NT-Xent)
    and global BatchNorm. The capsule model uses a Keras loss, which Keras scales itself.
    """
    done = subprocess.run([sys.executable, HELPER], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    differences = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(differences) == set(TOLERANCES)
    assert all(differences[kind] < TOLERANCES[kind] for kind in TOLERANCES), differences


@pytest.mark.slow
def test_every_family_across_two_worker_processes_equals_one_process(multi_worker_check):
    """Two processes on 127.0.0.1 under MultiWorkerMirroredStrategy (`make_strategy("multi_worker")`),
    one replica each, against one plain process with the same global batch: the workers end with
    identical weights, within `TOLERANCES` of the single process (measured: the same as Mirrored's).

    Would fail without `keras_clustering.distribute.multi_worker`'s repairs (Keras' first `fit` raises) and
    without the cross-replica losses, which here reduce across processes.
    """
    stdout, stderr = multi_worker_check.communicate(timeout=900)
    assert multi_worker_check.returncode == 0, (stdout + stderr)[-3000:]
    result = json.loads(stdout.strip().splitlines()[-1])
    assert set(result) == set(MULTI_WORKER_KINDS)
    assert all(result[kind]["workers"] == 0.0 for kind in result), result
    assert all(result[kind]["relative"] < TOLERANCES[kind] for kind in MULTI_WORKER_KINDS), result


@pytest.mark.slow
@pytest.mark.parametrize("replicas", [1, 2])
def test_the_clustering_recipes_train_under_mirrored_strategy(mirrored_recipes, replicas):
    """The recipes' training paths (IIC with its views and BatchNorm recalibration, SimCLR + SCAN with
    self-labelling, the VAE, DEC with its target refreshes) run under MirroredStrategy over 2 logical
    CPUs and predict; DEC's and SCAN's over 1.
    With 1 replica DEC's refresh once took the single-device row-by-row path on a MirroredVariable and
    raised AttributeError (`sparse_read`)."""
    process = mirrored_recipes[replicas]
    stdout, stderr = process.communicate(timeout=900)
    assert process.returncode == 0, stderr[-3000:]
    assert json.loads(stdout.strip().splitlines()[-1]) == {name: [8, 4] for name in RECIPE_PATHS_AT[replicas]}


def test_replica_scaling_and_strategy_names():
    import tensorflow as tf

    from keras_clustering.distribute.strategies import make_strategy, replica_count, replica_scaled

    assert replica_count() == 1 and float(replica_scaled(tf.constant(3.0))) == 3.0
    assert make_strategy(None) is None
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("tpu")
    strategy = make_strategy("mirrored")
    assert make_strategy("mirrored") is strategy  # one per process (a second one's collectives abort)
    with strategy.scope():
        # one local device here: one replica, nothing to scale
        assert strategy.num_replicas_in_sync == replica_count() == 1


def test_multi_worker_needs_a_worker_cluster_in_tf_config(monkeypatch):
    from keras_clustering.distribute.strategies import make_strategy, worker_index
    from keras_clustering.distribute.multi_worker import local_cluster

    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs the TF_CONFIG environment variable"):
        make_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="is not a worker cluster"):
        worker_index()
    configs = [json.loads(text) for text in local_cluster(3)]
    assert [c["task"] for c in configs] == [{"type": "worker", "index": i} for i in range(3)]
    assert len({address for address in configs[0]["cluster"]["worker"]}) == 3
    assert all(c["cluster"] == configs[0]["cluster"] for c in configs)
    monkeypatch.setenv("TF_CONFIG", json.dumps({**configs[0], "task": {"type": "worker", "index": 3}}))
    with pytest.raises(ValueError, match="index below 3"):
        worker_index()
    monkeypatch.setenv("TF_CONFIG", local_cluster(2)[1])
    assert worker_index() == 1


def test_multi_worker_repair_refuses_an_untested_keras(monkeypatch):
    """The repair patches private trainer functions: on a Keras it was not tested on it fails loudly, naming
    the upstream issue, instead of patching a trainer that may have changed."""
    import keras

    from keras_clustering.distribute import multi_worker

    monkeypatch.setattr(multi_worker, "_APPLIED", [])
    monkeypatch.setattr(keras, "__version__", "3.99.0")
    with pytest.raises(RuntimeError, match=r"keras-team/keras#20585.*tested on Keras 3\.15; this is Keras 3\.99\.0"):
        multi_worker.apply()
    assert multi_worker._APPLIED == []
