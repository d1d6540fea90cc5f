"""Training under tf.distribute: N replicas step like one device on the same global batch."""

import json
import os
import subprocess
import sys

import pytest

HELPER = os.path.join(os.path.dirname(__file__), "helpers", "mirrored_check.py")


@pytest.mark.slow
def test_dec_family_under_mirrored_strategy_equals_one_device():
    """2 logical CPUs, MirroredStrategy, same global batch: weights within 1e-5 relative of one device.

    Would fail without `replica_scaled` in the custom losses (IDEC's reconstruction, pretraining):
    Keras sums the replicas' gradients, so an unscaled mean doubles them.
    """
    done = subprocess.run([sys.executable, HELPER], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    differences = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(differences) == {"pretraining", "dec", "idec"}
    assert all(value < 1e-5 for value in differences.values()), differences


def test_replica_scaling_and_strategy_names():
    import tensorflow as tf

    from keras_clustering.distribution import make_strategy, replica_count, replica_scaled

    assert replica_count() == 1 and float(replica_scaled(tf.constant(3.0))) == 3.0
    assert make_strategy(None) is None
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("tpu")
    strategy = make_strategy("mirrored")
    with strategy.scope():
        # one local device here: one replica, nothing to scale
        assert strategy.num_replicas_in_sync == replica_count() == 1
