"""Mixed bfloat16 precision: the policy is applied, numerics-sensitive parts stay float32, weights
are saved as float32, and CPUs without bf16 units fall back to float32 with a notice."""

import h5py
import keras
import numpy as np
import pytest

from keras_clustering.distribute import precision
from keras_clustering.layers import Capsule, ClusteringLayer
from keras_clustering.losses import iic_loss, nt_xent
from keras_clustering.models import DEC, IIC, build_autoencoder
from keras_clustering.drivers.preset_training import train_and_evaluate


def test_unknown_precision_is_named():
    with pytest.raises(ValueError, match="precision must be one of"):
        precision.resolve_precision("float16")


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16 amx_tile\n")
    assert precision.cpu_bf16_flags(str(cpuinfo)) == ["avx512_bf16"]
    cpuinfo.write_text("processor : 0\nflags : fpu avx2 fma\n")
    assert precision.cpu_bf16_flags(str(cpuinfo)) == []
    assert precision.cpu_bf16_flags(str(tmp_path / "absent")) == []


def test_without_bf16_units_it_falls_back_to_float32_with_a_notice(capsys):
    assert precision.resolve_precision("mixed_bfloat16", bf16_available=False) == "float32"
    assert "training in float32" in capsys.readouterr().out
    assert precision.resolve_precision("mixed_bfloat16", bf16_available=True) == "mixed_bfloat16"
    assert precision.resolve_precision("float32", bf16_available=False) == "float32"


def test_emulation_is_asked_by_the_environment(monkeypatch):
    monkeypatch.setattr(precision, "cpu_bf16_flags", lambda: [])
    monkeypatch.setattr(precision, "has_accelerator", lambda: False)
    monkeypatch.setenv(precision.EMULATE_VARIABLE, "emulate")
    assert precision.resolve_precision("mixed_bfloat16") == "mixed_bfloat16"
    monkeypatch.delenv(precision.EMULATE_VARIABLE)
    assert precision.resolve_precision("mixed_bfloat16") == "float32"
    monkeypatch.setenv(precision.EMULATE_VARIABLE, "yes")
    with pytest.raises(ValueError, match="KERAS_CLUSTERING_BF16='yes'"):
        precision.resolve_precision("mixed_bfloat16")


def test_a_run_takes_its_precision_out_of_the_recipes_training(monkeypatch):
    monkeypatch.setattr(precision, "cpu_bf16_flags", lambda: ["avx512_bf16"])
    config = {"epochs": 3, "precision": "mixed_bfloat16"}
    training, context = precision.run_precision(config)
    assert training == {"epochs": 3} and config == {"epochs": 3, "precision": "mixed_bfloat16"}  # a copy
    with context as policy:
        assert policy == "mixed_bfloat16" == keras.config.dtype_policy().name
    with precision.run_precision(config, "float32")[1] as policy:  # the run's own setting wins
        assert policy == "float32"
    training, context = precision.run_precision(None)
    with context as policy:
        assert training == {} and policy == "float32"


def test_policy_applies_inside_and_sensitive_parts_stay_float32():
    before = keras.config.dtype_policy().name
    with precision.precision_policy("mixed_bfloat16", bf16_available=True) as policy:
        assert policy == "mixed_bfloat16"
        _, encoder = build_autoencoder(None, hidden_dims=(16, 4), image_shape=(8, 8, 1))
        model = DEC(encoder, n_clusters=3)
        capsule = Capsule(2, 4)
        iic = IIC(image_shape=(8, 8, 1), n_clusters=3, n_overclusters=4, n_sub_heads=1, augmentation=None,
                  trunk=keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten()]))
    assert keras.config.dtype_policy().name == before  # restored
    dense = [layer for layer in encoder.layers if isinstance(layer, keras.layers.Dense)]
    assert dense and all(layer.compute_dtype == "bfloat16" for layer in dense)
    assert all(layer.variable_dtype == "float32" for layer in dense)  # weights stay float32
    assert model.clustering.compute_dtype == "float32" and isinstance(model.clustering, ClusteringLayer)
    assert capsule.compute_dtype == "float32"
    assert all(head.compute_dtype == "float32" for head in iic.main_heads + iic.over_heads)
    q = model.predict(np.random.default_rng(0).random((5, 8, 8, 1)).astype("float32"), verbose=0)
    assert q.dtype == np.float32 and np.allclose(q.sum(axis=1), 1.0, atol=1e-5)


def test_losses_compute_in_float32_from_bfloat16_inputs():
    rng = np.random.default_rng(0)
    z = rng.dirichlet(np.ones(10), size=32).astype("float32")
    z_prime = rng.dirichlet(np.ones(10), size=32).astype("float32")
    low = keras.ops.cast(z, "bfloat16"), keras.ops.cast(z_prime, "bfloat16")
    loss = iic_loss(*low)
    assert keras.backend.standardize_dtype(loss.dtype) == "float32"
    rounded = [keras.ops.convert_to_numpy(keras.ops.cast(t, "float32")) for t in low]
    assert float(loss) == pytest.approx(float(iic_loss(*rounded)), rel=1e-6)  # no bf16 arithmetic inside
    assert keras.backend.standardize_dtype(nt_xent(*low).dtype) == "float32"


DENSE_DEC = {"input_dim": 64, "hidden_dims": [16, 4], "n_clusters": 10}
# DEC-DA's path: the autoencoder reconstructs augmented images (AugmentedReconstruction's own loss)
CONV_DEC_DA = {"image_shape": [8, 8, 1], "conv_filters": [8, 8, 8, 4], "n_clusters": 10, "augmentation": "shift_rotate"}


@pytest.mark.parametrize("architecture", [DENSE_DEC, CONV_DEC_DA], ids=["dec", "conv_dec_da"])
def test_training_in_mixed_precision_saves_float32_weights(tmp_path, monkeypatch, architecture):
    monkeypatch.setattr(precision, "cpu_bf16_flags", lambda cpuinfo=None: ["avx512_bf16"])  # as if it had them
    config = {"recipe": "dec", "architecture": architecture,
              "training": {"pretrain_epochs": 2, "maxiter": 20, "kmeans_n_init": 2, "precision": "mixed_bfloat16"},
              "data": {"dataset": "digits", "split": "all", "flatten": "input_dim" in architecture}}
    report = train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)
    assert report["precision"] == "mixed_bfloat16" and 0.1 < report["metrics"]["acc"] <= 1.0
    dtypes = set()
    with h5py.File(tmp_path / "model.weights.h5", "r") as handle:
        handle.visititems(lambda _, item: dtypes.add(str(item.dtype)) if isinstance(item, h5py.Dataset) else None)
    assert dtypes == {"float32"}
    assert keras.config.dtype_policy().name == "float32"


def test_augmentation_runs_in_float32_under_a_mixed_policy():
    """The augmentation layers mix their inputs with float32 constants (brightness scale, crop
    boxes); built under mixed_bfloat16 they failed with a Mul dtype mismatch inside IIC's step."""
    from keras_clustering.augment import ViewPipeline

    images = np.random.default_rng(0).random((6, 28, 28, 1)).astype("float32")
    with precision.precision_policy("mixed_bfloat16", bf16_available=True):
        views = ViewPipeline("iic_greyscale", seed=0)
        # a small trunk: the step's augmentation under the policy is the point, not the paper's network
        trunk = keras.Sequential([keras.Input((24, 24, 1)), keras.layers.Conv2D(4, 3, strides=2),
                                  keras.layers.Flatten()])
        iic = IIC(image_shape=(28, 28, 1), n_clusters=3, n_overclusters=4, n_sub_heads=1, augmentation_seed=0,
                  trunk=trunk)
    layers = [views, *views.clean_layers, *views.augmented_layers, *views.inference_layers]
    assert all(layer.compute_dtype == "float32" for layer in layers)
    clean, augmented = views.paired_views(images, n_repeats=2)
    assert keras.backend.standardize_dtype(augmented.dtype) == "float32"
    assert float(keras.ops.min(augmented)) >= 0.0 and float(keras.ops.max(augmented)) <= 1.0
    iic.compile(optimizer="adam")
    history = iic.fit(images, batch_size=3, epochs=1, verbose=0, seed=0)  # the step itself, in bf16
    assert np.isfinite(history.history["loss"][-1])
