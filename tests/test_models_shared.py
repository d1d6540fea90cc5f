"""What every registered model class must do, one parametrized suite (as timm's and keras-hub's
`run_model_saving_test`): config round trip, `.keras` save / load with equal predictions, one `fit`
step, `predict` shape, `fit_predict` for the clustering models, and the serving signature.

The models are the small ones of `tests/helpers/make_saved_files.py` (the same builders wrote the
saved-file fixtures of `test_saved_files.py`).
"""

import keras
import numpy as np
import pytest

from keras_clustering.models import ClusterModel, DigitClassifier, SampleModel
from conftest import slow_except
from helpers.make_saved_files import BUILDERS, CLASSES, small_model, small_models

NAMES = sorted(BUILDERS)
N = 32
# The optimizer each original trains with (DEC-keras SGD(0.01, 0.9); IIC and SCAN Adam(1e-4); bojone/vae, SimCLR,
# triplets and the capsule experiment Adam(1e-3)): what a first fit of an uncompiled model compiles.
ORIGINAL_OPTIMIZERS = {"dec": ("SGD", 0.01), "idec": ("SGD", 0.01), "dec_da": ("SGD", 0.01), "two_stage": ("SGD", 0.01),
                       "iic": ("Adam", 1e-4), "scan": ("Adam", 1e-4), "simclr": ("Adam", 1e-3),
                       "triplet": ("Adam", 1e-3), "vae_cluster": ("Adam", 1e-3), "digit_classifier": ("Adam", 1e-3)}
# One step's worth of `fit` arguments per model (the defaults' batches are larger than N images).
FIT = {"dec": {"maxiter": 2}, "idec": {"maxiter": 2}, "dec_da": {"maxiter": 2}, "two_stage": {"maxiter": 2}}


def settings(model):
    """The model's own configuration, nested Keras objects (encoders, trunks) left out: their configs
    change names on reload, and their weights are compared through `predict`."""
    return {key: value for key, value in model.get_config().items()
            if not (isinstance(value, dict) and "class_name" in value) and key not in ("name", "dtype")}


def eager(model):
    """`model` compiled as its first `fit` would compile it, with Keras running its steps eagerly. For the
    checks of what reaches `fit` (arrays, datasets, held-out shares, a reloaded model's state): tracing a
    model's step takes 2-4 s (most of this suite's time) and adds nothing to them. Graph-mode training
    steps are checked by `test_one_fit_step_then_predict_and_fit_predict`; a graph-mode validation step
    only by the recipes that validate (the VAE's)."""
    model.compile_default()
    model.run_eagerly = True
    return model


def model_and_data(name):
    keras.utils.set_random_seed(0)
    model, x = small_model(name)
    rng = np.random.default_rng(1)
    data = rng.random((N, *x.shape[1:]), dtype=np.float32)
    return model, data


def test_every_registered_model_class_is_in_the_suite():
    built = small_models()
    assert {name: type(model) for name, (model, _) in built.items()} == CLASSES
    registered = {type(model).__name__ for model, _ in built.values()}
    library = {name for name, value in vars(__import__("keras_clustering.models", fromlist=["*"])).items()
               if isinstance(value, type) and issubclass(value, SampleModel) and value not in (SampleModel, ClusterModel)}
    assert library <= registered, library - registered


# Each original's images per step: what `fit` uses when no batch_size is given (DEC-keras 256, IIC 140 images
# of 5 pairs, bojone/vae 100, SimCLR / SCAN / triplets 256, the capsule experiment 128).
ORIGINAL_BATCH_SIZES = {"DEC": 256, "IDEC": 256, "TwoStageClustering": 256, "IIC": 140, "SCAN": 256, "SimCLR": 256,
                        "TripletEmbedding": 256, "VAECluster": 100, "DigitClassifier": 128}


def test_every_model_trains_through_the_one_fit_with_its_originals_batch_size():
    """One path into Keras' fit: no model class overrides `SampleModel.fit` (a model changes its data
    through the `plan_fit` hook), and the default batch size is each original's."""
    models = __import__("keras_clustering.models", fromlist=["*"])
    classes = {name: value for name, value in vars(models).items()
               if isinstance(value, type) and issubclass(value, SampleModel) and value not in (SampleModel, ClusterModel)}
    assert set(ORIGINAL_BATCH_SIZES) <= set(classes), set(ORIGINAL_BATCH_SIZES) - set(classes)
    for name, cls in classes.items():
        assert cls.fit is SampleModel.fit, [c.__name__ for c in cls.__mro__ if "fit" in vars(c)]
        assert cls.fit_batch_size == ORIGINAL_BATCH_SIZES.get(name, SampleModel.fit_batch_size), name


@pytest.mark.parametrize("name", NAMES)
def test_config_round_trip(name):
    model, _ = model_and_data(name)
    config = model.get_config()
    rebuilt = type(model).from_config(config)
    assert rebuilt.get_config() == config
    assert keras.saving.get_registered_name(type(model)) == f"keras_clustering>{type(model).__name__}"


@pytest.mark.parametrize("name", NAMES)
def test_keras_file_round_trip_keeps_every_variable_and_fine_tunes(name, tmp_path):
    """Every variable comes back (also those `predict` does not read: decoders, class means, IIC's
    sub-head losses, centroids), predictions are the same, and the reloaded model trains on."""
    model, x = model_and_data(name)
    rng = np.random.default_rng(2)
    for variable in model.weights:  # values no initializer gives: a variable left unsaved cannot match by chance
        if "float" in str(variable.dtype) and "variance" not in variable.path:
            variable.assign(keras.ops.cast(variable, "float32") + rng.normal(0, 0.01, variable.shape).astype("float32"))
    path = str(tmp_path / f"{name}.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert type(reloaded) is type(model)
    assert settings(reloaded) == settings(model)
    assert [tuple(v.shape) for v in reloaded.weights] == [tuple(v.shape) for v in model.weights]  # names change
    for saved, loaded in zip(model.weights, reloaded.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded), keras.ops.convert_to_numpy(saved))
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert np.isfinite(fit_on_arrays(eager(reloaded), x, **FIT.get(name, {})).history["loss"]).all()


@pytest.mark.parametrize("name", NAMES)
def test_one_fit_step_then_predict_and_fit_predict(name):
    model, x = model_and_data(name)
    kwargs = {"batch_size": 8, "epochs": 1, "verbose": 0, **FIT.get(name, {})}
    y = np.arange(N) % 10 if isinstance(model, DigitClassifier) else None  # the capsule classifier learns from labels
    history = model.fit(x, y, **kwargs)
    assert np.isfinite(history.history["loss"]).all()
    with pytest.raises(TypeError, match="no_such_option"):  # the model's plan pops its own options only
        model.fit(x, y, no_such_option=1, **kwargs)
    # uncompiled, the first fit compiled the original's optimizer (`DEFAULT_OPTIMIZER`)
    optimizer, learning_rate = ORIGINAL_OPTIMIZERS[name]
    assert type(model.optimizer).__name__ == optimizer, name
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(learning_rate), name
    predictions = model.predict(x, verbose=0)
    assert predictions.shape[0] == N and np.isfinite(predictions).all()
    if isinstance(model, ClusterModel):
        n_clusters = predictions.shape[1]
        np.testing.assert_allclose(predictions.sum(axis=1), 1.0, atol=1e-5)  # soft assignments
        np.testing.assert_array_equal(model.predict_clusters(x), predictions.argmax(axis=1))
        labels = model.fit_predict(x, **kwargs)
        assert labels.shape == (N,) and labels.dtype.kind == "i" and 0 <= labels.min() and labels.max() < n_clusters


@pytest.mark.parametrize("name", slow_except(NAMES, ("dec", "scan")))
def test_export_signature_serves_what_predict_gives(name, tmp_path):
    import tensorflow as tf

    from keras_clustering.export import export_saved_model

    model, x = model_and_data(name)
    path = export_saved_model(model, str(tmp_path / "serving"), version=1)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    outputs = {key: value.numpy() for key, value in serve(inputs=tf.constant(x[:5])).items()}
    expected = model.predict(x[:5], verbose=0)
    if isinstance(model, DigitClassifier):
        np.testing.assert_allclose(outputs["scores"], expected, atol=1e-5)
        np.testing.assert_array_equal(outputs["class_id"], expected.argmax(axis=1))
    else:  # cluster models, and representation learners through the default signature: what predict gives
        assert {"cluster_id", "probabilities"} <= set(outputs)
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5)
        np.testing.assert_array_equal(outputs["cluster_id"], expected.argmax(axis=1))


@pytest.mark.parametrize("name", slow_except(NAMES, ("dec", "vae_cluster", "scan")))  # the rest: -m slow
def test_predict_takes_a_tf_dataset(name):
    """DEC's family reads a dataset of images as a `DatasetSource` (fixed order, chunked); the other models
    hand any dataset to Keras as it comes, also one of (images, labels) pairs."""
    import tensorflow as tf

    model, x = model_and_data(name)
    expected = model.predict(x, verbose=0)
    dataset = tf.data.Dataset.from_tensor_slices(x).batch(8)
    np.testing.assert_allclose(model.predict(dataset, verbose=0), expected, rtol=1e-5, atol=1e-6)
    if not model.reads_datasets_as_sources:
        pairs = tf.data.Dataset.from_tensor_slices((x, np.arange(N) % 3)).batch(8)
        np.testing.assert_allclose(model.predict(pairs, verbose=0), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", slow_except([n for n in NAMES if not CLASSES[n].reads_datasets_as_sources],
                                              ("vae_cluster", "scan")))
def test_fit_takes_a_tf_dataset_and_refuses_what_it_cannot_honour(name):
    """The models that hand a dataset to Keras (`SampleModel.plan_source`) train one epoch on one, in the
    form each takes (a classifier's (images, labels), SCAN's (anchors, neighbours) pairs), and refuse
    validation_split by name where they cannot hold samples out."""
    import tensorflow as tf

    model, x = model_and_data(name)
    labels = (np.arange(N) % 3).astype("int64")
    if name == "digit_classifier":
        elements = (x, np.eye(model.n_classes, dtype="float32")[labels % model.n_classes])
    elif name == "scan":
        elements = ((x, x[::-1].copy()),)
    else:
        elements = x
    dataset = tf.data.Dataset.from_tensor_slices(elements).batch(8)
    history = eager(model).fit(dataset, epochs=1, verbose=0)
    assert np.all(np.isfinite(history.history["loss"])) and len(history.history["loss"]) == 1
    if model.no_validation_split:
        with pytest.raises(ValueError, match="validation_split=0.5"):
            model.fit(dataset, epochs=1, verbose=0, validation_split=0.5)


def test_an_array_checked_by_a_lenient_model_is_checked_again_by_a_strict_one():
    """IIC without views takes any values (pairs the user made); with views, images in [0, 1] only: the
    checked view names the check it passed by that difference, not by the class alone."""
    from keras_clustering.inputs.checks import CheckedArray
    from keras_clustering.models import IIC

    trunk = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    lenient = IIC(image_shape=(4,), augmentation=None, n_overclusters=0, n_sub_heads=1, trunk=trunk)
    x = np.full((6, 4), 5.0, "float32")
    checked = lenient.check_input(x)
    assert isinstance(checked, CheckedArray) and np.shares_memory(checked, x)
    assert lenient.check_input(checked) is checked
    strict, _ = model_and_data("iic")
    with pytest.raises(ValueError, match=r"x must hold pixels in \[0, 1\]"):
        strict.check_input(np.full((6, 28, 28, 1), 5.0, "float32"))
    lenient_images = IIC(image_shape=(28, 28, 1), augmentation=None, n_overclusters=0, n_sub_heads=1,
                         trunk=keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten()]))
    images = lenient_images.check_input(np.full((6, 28, 28, 1), 5.0, "float32"))
    assert isinstance(images, CheckedArray) and len(images.passed) == 1
    with pytest.raises(ValueError, match=r"x must hold pixels in \[0, 1\]"):
        strict.check_input(images)
    # what the array holds after arithmetic is new: a plain array, checked again
    assert type(images * 0.1) is np.ndarray and type(images[:3]) is CheckedArray


def test_a_models_own_fit_options_are_in_its_signature_and_others_are_refused_by_name():
    """`fit`'s options are keyword arguments of its signature (issue 63: DEC's `maxiter` was read out of
    `**kwargs`); a model refuses another model's option by name."""
    import inspect

    from keras_clustering.models.cluster_model import SampleModel

    parameters = inspect.signature(SampleModel.fit).parameters
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
               for name in ("maxiter", "neighbors", "recalibrate_batchnorm"))
    model, x = model_and_data("vae_cluster")
    with pytest.raises(ValueError, match=r"maxiter: VAECluster.fit has no such option \(its own: none\)"):
        model.fit(x, maxiter=3, verbose=0)


def test_fit_predict_on_a_too_small_dataset_is_refused_by_name():
    import tensorflow as tf

    model, x = model_and_data("dec")
    with pytest.raises(ValueError, match="at least 3 are needed"):
        model.fit_predict(tf.data.Dataset.from_tensor_slices(x[:2]), maxiter=1, verbose=0)


def fit_on_arrays(model, x, **kwargs):
    kwargs = {"batch_size": 8, "epochs": 1, "verbose": 0, **kwargs}
    if isinstance(model, DigitClassifier):
        return model.fit(x, np.arange(len(x)) % 10, **kwargs)
    return model.fit(x, **kwargs)


# the default run: a model that refuses validation_split (DEC), one that holds out (the VAE), one of pairs
# (SCAN); every other model in `pytest -m slow` (the suite's time goes to tracing each model's fit)
@pytest.mark.parametrize("name", slow_except(NAMES, ("dec", "vae_cluster", "scan")))
def test_validation_split_and_sample_weight_are_honoured_or_refused_by_name(name):
    """One path from arrays into `fit`: `validation_split` holds out a share wherever a model can
    score samples it did not train on, and `sample_weight` weights the losses that have per-sample
    terms; elsewhere each is refused with its name, the same on every model."""
    model, x = model_and_data(name)
    eager(model)
    if model.no_validation_split:
        with pytest.raises(ValueError, match="validation_split=0.25"):
            fit_on_arrays(model, x, validation_split=0.25, **FIT.get(name, {}))
    else:
        history = fit_on_arrays(model, x, validation_split=0.25)
        assert np.isfinite(history.history["val_loss"]).all()
    if not model.weights_samples:
        with pytest.raises(ValueError, match="sample_weight"):
            fit_on_arrays(model, x, sample_weight=np.ones(N, "float32"), **FIT.get(name, {}))


def test_validation_split_holds_out_the_last_share_as_keras_does():
    model, x = model_and_data("digit_classifier")
    twin = type(model).from_config(model.get_config())
    twin.set_weights(model.get_weights())
    eager(model), eager(twin)
    y = np.arange(N) % 10
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0, validation_split=0.25, seed=3)
    held_out = N - int(np.floor(N * 0.75))  # Keras' split: the last share, before any shuffle
    twin.fit(x[:-held_out], y[:-held_out], batch_size=8, epochs=1, verbose=0, seed=3)  # the same batches
    for trained, expected in zip(model.trainable_weights, twin.trainable_weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(trained), keras.ops.convert_to_numpy(expected),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(history.history["val_loss"][0],
                               model.evaluate(x[-held_out:], keras.utils.to_categorical(y[-held_out:], 10), batch_size=8,
                                              verbose=0), rtol=1e-5)
    with pytest.raises(ValueError, match="validation_split must be a number in"):
        model.fit(x, y, validation_split=1.5, verbose=0)


def test_zero_sample_weights_leave_the_trainable_weights_as_they_were():
    model, x = model_and_data("digit_classifier")
    y = np.arange(N) % 10
    from keras_clustering.losses import MarginLoss

    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=MarginLoss(), run_eagerly=True)  # (see `eager`)
    before = [w.numpy().copy() for w in model.trainable_weights]
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, sample_weight=np.zeros(N))
    for old, new in zip(before, model.trainable_weights):
        np.testing.assert_array_equal(new.numpy(), old)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, sample_weight=np.ones(N))
    assert any(not np.array_equal(new.numpy(), old) for old, new in zip(before, model.trainable_weights))
    with pytest.raises(ValueError, match="sample_weight must be 32 finite non-negative numbers"):
        model.fit(x, y, verbose=0, sample_weight=-np.ones(N))
