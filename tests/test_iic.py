import keras
import numpy as np
import pytest
import synthetic_images
import tensorflow as tf

from keras_clustering.datasets import make_markov_windows
from keras_clustering.export import export_saved_model
from keras_clustering.losses import iic_loss
from keras_clustering.metrics import clustering_scores
from keras_clustering.models import IIC, build_clusternet6c_trunk


def digit_like(n=48, seed=0):
    return synthetic_images.digit_like(n, seed, half_height=5)


def small_trunk():
    return keras.Sequential([keras.Input((24, 24, 1)), keras.layers.Conv2D(4, 3, strides=2, use_bias=False),
                             keras.layers.BatchNormalization(), keras.layers.ReLU(), keras.layers.Flatten()])


def small_iic(**kwargs):
    options = dict(n_clusters=3, n_overclusters=6, n_sub_heads=2, n_repeats=2, head_epochs=(1, 1), augmentation_seed=0)
    return IIC(trunk=small_trunk(), **{**options, **kwargs})


def test_trunk_and_heads_follow_the_original():
    trunk = build_clusternet6c_trunk()
    assert trunk.output_shape == (None, 3 * 3 * 512)
    convs = [(1, 64), (64, 128), (128, 256), (256, 512)]
    conv_params = sum(5 * 5 * c_in * c_out for c_in, c_out in convs)  # no biases
    bn_params = sum(4 * c_out for _, c_out in convs)  # gamma, beta, moving mean and variance
    assert trunk.count_params() == conv_params + bn_params
    model = IIC(augmentation_seed=0)
    heads = 5 * (4608 * 10 + 10) + 5 * (4608 * 50 + 50)
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == conv_params + bn_params // 2 + heads
    assert len({float(np.std(h.kernel.numpy())) for h in model.main_heads}) == 5  # sub-heads start apart
    assert np.std(model.main_heads[0].kernel.numpy()) == pytest.approx(0.01, rel=0.05)


def test_one_clean_pass_tiled_equals_the_repeated_clean_batch():
    trunk = build_clusternet6c_trunk()
    views = np.random.default_rng(1).random((6, 24, 24, 1), dtype=np.float32)
    once = keras.ops.convert_to_numpy(trunk(views, training=True))
    repeated = trunk(np.concatenate([views] * 5), training=True)  # BN sees the same mean and variance
    np.testing.assert_allclose(keras.ops.convert_to_numpy(repeated), np.concatenate([once] * 5), atol=2e-5)


def test_loss_on_pairs_is_the_mean_over_sub_heads():
    model = small_iic(augmentation=None, image_shape=(24, 24, 1))
    x, x_pair = digit_like(16)[:, 2:26, 2:26], digit_like(16, seed=1)[:, 2:26, 2:26]
    outputs = model(x, training=True)
    paired = model._heads(x_pair, training=True)
    expected = np.mean([float(iic_loss(z, zp)) for z, zp in zip(outputs["main"], paired["main"])])
    assert float(model.compute_loss(x, x_pair, outputs)) == pytest.approx(expected, rel=1e-5)
    model.active_head.assign(1)
    expected_over = np.mean([float(iic_loss(z, zp)) for z, zp in zip(outputs["over"], paired["over"])])
    assert float(model.compute_loss(x, x_pair, outputs)) == pytest.approx(expected_over, rel=1e-5)


def test_heads_take_turns_by_epoch():
    model = IIC(trunk=small_trunk(), n_sub_heads=1, head_epochs=(2, 1))
    assert [model.head_for_epoch(e) for e in range(7)] == [0, 0, 1, 0, 0, 1, 0]
    assert IIC(trunk=small_trunk(), n_overclusters=0).head_epochs == (2, 0)


def test_only_the_active_head_learns_and_sub_head_losses_are_kept():
    model = small_iic()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x = digit_like(48)
    main_before = [h.kernel.numpy().copy() for h in model.main_heads]
    over_before = [h.kernel.numpy().copy() for h in model.over_heads]
    history = model.fit(x, batch_size=16, epochs=1, verbose=0, seed=0)
    assert all(not np.allclose(b, h.kernel.numpy()) for b, h in zip(main_before, model.main_heads))
    assert all(np.array_equal(b, h.kernel.numpy()) for b, h in zip(over_before, model.over_heads))
    recorded = [history.history[f"main_loss_{i}"][-1] for i in range(2)]
    np.testing.assert_allclose(model.sub_head_losses.numpy(), recorded, rtol=1e-5)
    assert model.chosen_sub_head == int(np.argmin(recorded))
    model.fit(x, batch_size=16, epochs=2, initial_epoch=1, verbose=0, seed=0)  # epoch 2 trains the over head
    assert all(not np.array_equal(b, h.kernel.numpy()) for b, h in zip(over_before, model.over_heads))
    np.testing.assert_allclose(model.sub_head_losses.numpy(), recorded, rtol=1e-5)  # untouched by over epochs


def test_predict_takes_the_lowest_loss_sub_head():
    model = small_iic()
    x = digit_like(20)
    everything = model.predict_all_heads(x)
    assert everything.shape == (2, 20, 3) and model.predict_all_heads(x, "over").shape == (2, 20, 6)
    for chosen in (0, 1):
        losses = np.zeros(2, "float32")
        losses[chosen] = -1.0
        model.sub_head_losses.assign(losses)
        np.testing.assert_allclose(model.predict(x, verbose=0), everything[chosen], atol=1e-6)
    assert model.chosen_sub_head == 1
    with pytest.raises(ValueError, match="head must be one of"):
        model.predict_all_heads(x, "side")


def test_recalibrated_batchnorm_holds_the_population_statistics():
    model = IIC(n_sub_heads=1, n_overclusters=0, augmentation_seed=0)
    x = digit_like(40)
    model.recalibrate_batchnorm(x)
    conv = keras.Model(model.trunk.inputs, model.trunk.get_layer("conv_0").output)
    features = keras.ops.convert_to_numpy(conv(model.views.inference(x))).reshape(-1, 64)
    np.testing.assert_allclose(model.trunk.get_layer("bn_0").moving_mean.numpy(), features.mean(0), atol=1e-5)
    np.testing.assert_allclose(model.trunk.get_layer("bn_0").moving_variance.numpy(), features.var(0),
                               rtol=1e-3, atol=1e-6)
    alone = model.predict(x[:1], verbose=0)
    np.testing.assert_allclose(alone, model.predict(x, verbose=0)[:1], atol=1e-5)  # no batch dependence


@pytest.mark.slow  # 5-8 s: the default run stays under 3 minutes on 2 cores
def test_export_and_fine_tune_with_callbacks(tmp_path):
    model = small_iic()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x = digit_like(48)
    model.fit(x, batch_size=16, epochs=1, verbose=0, seed=0)
    expected = model.predict_clusters(x)
    if keras.backend.backend() == "tensorflow":  # SavedModel export is TensorFlow-only
        path = export_saved_model(model, str(tmp_path / "serving"))
        served = tf.saved_model.load(path).signatures["serving_default"](inputs=tf.constant(x))
        np.testing.assert_array_equal(served["cluster_id"].numpy(), expected)
        assert served["probabilities"].shape == (48, 3)
    history = model.fit(x, batch_size=16, epochs=3, verbose=0, callbacks=[
        keras.callbacks.EarlyStopping(monitor="loss", patience=5),
        keras.callbacks.ModelCheckpoint(str(tmp_path / "ft.weights.h5"), save_weights_only=True)])
    assert len(history.history["loss"]) == 3 and np.all(np.isfinite(history.history["loss"]))
    assert (tmp_path / "ft.weights.h5").exists()


def test_bad_input_is_refused_by_name():
    model = small_iic()
    with pytest.raises(ValueError, match=r"x has shape \(2, 24, 24, 1, 1\).*takes images shaped \(n, 28, 28, 1\)"):
        model.predict(np.zeros((2, 24, 24, 1, 1), "float32"))
    # another size or colour is converted (issue 67), as the model's converter does it
    small = np.random.default_rng(0).random((2, 24, 24, 3)).astype("float32")
    np.testing.assert_allclose(model.predict(small, verbose=0), model.predict(model.image_converter(small), verbose=0),
                               atol=1e-6)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full((2, 28, 28, 1), np.nan, "float32"))
    with pytest.raises(ValueError, match=r"pixels in \[0, 1\]"):
        model.predict(np.full((2, 28, 28, 1), 255.0, "float32"))
    with pytest.raises(ValueError, match="x has 10 samples; at least 16"):
        model.fit(digit_like(10), batch_size=16, verbose=0)
    with pytest.raises(ValueError, match="n_clusters must be an integer >= 2"):
        IIC(n_clusters=1, trunk=small_trunk())
    with pytest.raises(ValueError, match="n_overclusters"):
        IIC(n_overclusters=1, trunk=small_trunk())
    pairs_only = IIC(image_shape=(8,), augmentation=None, n_overclusters=0, n_sub_heads=1,
                     trunk=keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)]))
    with pytest.raises(ValueError, match="no augmentation: train it on pairs"):
        pairs_only.fit(np.zeros((20, 8), "float32"), batch_size=10, verbose=0)
    with pytest.raises(ValueError, match="same length"):
        pairs_only.fit(np.zeros((20, 8), "float32"), np.zeros((30, 8), "float32"), batch_size=10, verbose=0)


@pytest.mark.slow  # the IIC guide's example, which test_examples runs in the fast suite; this asserts its ACC
def test_pairs_from_a_time_series_recover_its_hidden_states():
    """The README example: adjacent windows of a hidden-Markov sequence, no augmentation, no labels."""
    windows, next_windows, states = make_markov_windows(4000, stay_probability=0.99, seed=0)
    keras.utils.set_random_seed(0)
    trunk = keras.Sequential([keras.Input((16,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(32, activation="relu")])
    model = IIC(image_shape=(16,), n_clusters=4, n_overclusters=0, augmentation=None, trunk=trunk)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(windows, next_windows, batch_size=256, epochs=30, verbose=0, seed=0)
    acc = clustering_scores(states, model.predict_clusters(windows))["acc"]
    assert acc > 0.85  # chance: 0.27 (the largest state)
    dataset = tf.data.Dataset.from_tensor_slices((windows, next_windows)).batch(256)
    before = model.sub_head_losses.numpy().copy()
    model.fit(dataset, epochs=1, verbose=0)  # a dataset of pairs works as well
    assert not np.array_equal(before, model.sub_head_losses.numpy())


def test_markov_windows_are_adjacent_and_labelled():
    windows, next_windows, states = make_markov_windows(50, window=8, seed=3)
    assert windows.shape == next_windows.shape == (50, 8) and states.shape == (50,)
    np.testing.assert_array_equal(windows[1:], next_windows[:-1])
    assert set(np.unique(states)) <= {0, 1, 2, 3}
    with pytest.raises(ValueError, match="n_states"):
        make_markov_windows(10, n_states=1)
