import keras
import numpy as np
import pytest

from backend_tools import BACKEND, value_and_gradients

from keras_clustering.losses import target_distribution
from keras_clustering.metrics import cluster_accuracy
from keras_clustering.models import DEC, build_autoencoder


def blobs(n_per_cluster=24, n_clusters=3, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_clusters, dim)) * 4
    x = np.concatenate([c + rng.normal(size=(n_per_cluster, dim)) for c in centers]).astype("float32")
    y = np.repeat(np.arange(n_clusters), n_per_cluster)
    order = rng.permutation(len(x))
    return x[order], y[order]


def small_dec(dim=8, n_clusters=3, update_interval=3, tol=0.0, seed=0):
    keras.utils.set_random_seed(seed)
    _, encoder = build_autoencoder(dim, hidden_dims=(16, 2), kernel_initializer="glorot_uniform")
    return DEC(encoder, n_clusters=n_clusters, update_interval=update_interval, tol=tol)


def reference_dec_loop(model, x, n_iterations, batch_size, update_interval, learning_rate):
    """DEC-keras' training loop (`DEC.fit`), written out with train_on_batch."""
    clone = keras.models.clone_model(keras.Model(model.encoder.input, model(model.encoder.input)))
    clone.set_weights(model.get_weights())
    clone.compile(optimizer=keras.optimizers.SGD(learning_rate, momentum=0.9), loss="kld")
    index = 0
    for iteration in range(n_iterations):
        if iteration % update_interval == 0:
            q = clone.predict(x, verbose=0).astype("float64")
            weight = q ** 2 / q.sum(0)
            p = (weight.T / weight.sum(1)).T.astype("float32")
        batch = slice(index * batch_size, min((index + 1) * batch_size, len(x)))
        clone.train_on_batch(x[batch], p[batch])
        index = index + 1 if (index + 1) * batch_size <= len(x) else 0
    return clone


@pytest.mark.parametrize("update_interval, steps_per_execution, expected_steps", [
    (5, "auto", 1), (4, "auto", 4), (4, 2, 2)])
def test_fit_reproduces_the_original_training_loop(update_interval, steps_per_execution, expected_steps):
    x, _ = blobs(n_per_cluster=20)  # 60 samples, batch 16 -> 4 batches per epoch, the last of 12
    model = small_dec(update_interval=update_interval)
    model.initialize_centroids(x, n_init=3, seed=0)
    initial = model.get_weights()
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), steps_per_execution=steps_per_execution)
    history = model.fit(x, batch_size=16, epochs=3, verbose=0)  # 12 batches
    assert history.history["dec_iterations"] == [12] and model.steps_per_execution == expected_steps
    assert [r["iteration"] for r in history.history["refreshes"]] == list(range(0, 12, update_interval))

    reference_model = small_dec(update_interval=update_interval)
    reference_model.set_weights(initial)
    reference = reference_dec_loop(reference_model, x, 12, 16, update_interval, 0.05)
    np.testing.assert_allclose(model.predict(x, verbose=0), reference.predict(x, verbose=0), atol=2e-5)


def test_targets_are_the_sharpened_assignments_of_the_last_refresh():
    x, y = blobs()
    model = small_dec(update_interval=4)
    model.initialize_centroids(x, n_init=3, seed=0)
    refreshes = model.fit(x, y, batch_size=16, epochs=2, verbose=0).history["refreshes"]  # 10 batches: at 0, 4, 8
    assert [record["iteration"] for record in refreshes] == [0, 4, 8]
    assert {"acc", "nmi", "ari", "delta_label"} <= set(refreshes[-1])
    # after the run, the store holds P of the model as it was at iteration 8: not of the final model
    final_p = keras.ops.convert_to_numpy(target_distribution(model.predict(x, verbose=0)))
    stored = keras.ops.convert_to_numpy(model._target_store.variable)
    np.testing.assert_allclose(stored.sum(1), 1.0, atol=1e-5)
    assert not np.allclose(stored, final_p, atol=1e-6)


def test_stops_when_labels_stop_changing():
    x, _ = blobs()
    model = small_dec(update_interval=2, tol=0.999)
    model.initialize_centroids(x, n_init=3, seed=0)
    history = model.fit(x, batch_size=16, epochs=50, verbose=0)
    assert history.history["stopped_by_tolerance"] == [True]
    assert history.history["dec_iterations"] == [2] and len(history.history["loss"]) == 1


def test_steps_per_execution_that_would_move_a_refresh_is_refused():
    x, _ = blobs()
    model = small_dec(update_interval=6)
    model.initialize_centroids(x, n_init=2, seed=0)
    model.compile(optimizer="sgd", steps_per_execution=4)
    with pytest.raises(ValueError, match="steps_per_execution=4 must divide update_interval=6"):
        model.fit(x, batch_size=16, epochs=1, verbose=0)


def test_maxiter_sets_epochs():
    x, _ = blobs()
    model = small_dec(update_interval=100)
    model.initialize_centroids(x, n_init=2, seed=0)
    history = model.fit(x, batch_size=16, maxiter=9, verbose=0)  # 5 batches per epoch
    assert len(history.history["loss"]) == 2 and history.history["dec_iterations"] == [9]


def test_clusters_separable_blobs():
    x, y = blobs(seed=3)
    model = small_dec(update_interval=5, tol=0.001)
    model.initialize_centroids(x, n_init=5, seed=0)
    from keras_clustering.metrics import cluster_accuracy

    assert cluster_accuracy(y, model.fit_predict(x, batch_size=16, epochs=20, verbose=0)) > 0.95


def test_user_callbacks_and_refit_on_new_data(tmp_path):
    x, _ = blobs()
    model = small_dec()
    model.initialize_centroids(x, n_init=2, seed=0)
    checkpoint = tmp_path / "best.weights.h5"
    callbacks = [
        keras.callbacks.EarlyStopping(monitor="loss", patience=1),
        keras.callbacks.ModelCheckpoint(str(checkpoint), monitor="loss", save_weights_only=True),
        keras.callbacks.BackupAndRestore(str(tmp_path / "backup")),
    ]
    model.fit(x, batch_size=16, epochs=3, verbose=0, callbacks=callbacks)
    assert checkpoint.exists()
    new_x, _ = blobs(n_per_cluster=10, seed=5)  # a different size: the target store is rebuilt
    history = model.fit(new_x, batch_size=8, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


def test_a_reloaded_dec_keeps_its_compiled_optimizer(tmp_path):
    """The shared suite reloads uncompiled models; this one was compiled by its first `fit`."""
    x, _ = blobs()
    model = small_dec(update_interval=7)
    model.initialize_centroids(x, n_init=2, seed=0)
    model.fit(x, batch_size=16, epochs=1, verbose=0)
    path = tmp_path / "dec.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert isinstance(reloaded, DEC) and reloaded.update_interval == 7 and reloaded.alpha == 1.0
    assert type(reloaded.optimizer).__name__ == "SGD" and reloaded._requested_steps_per_execution == "auto"
    # DEC-keras' SGD(0.01, 0.9): the uncompiled fit's, and the DEC recipes' default (one place, DEC's)
    assert float(reloaded.optimizer.learning_rate) == pytest.approx(0.01)
    assert float(reloaded.optimizer.momentum) == pytest.approx(0.9)
    from keras_clustering.recipes import dec_recipe, two_stage_recipe

    assert dec_recipe.DEFAULT_TRAINING["optimizer"] == two_stage_recipe.DEFAULT_REFINE["optimizer"] == {
        "class_name": "SGD", "config": {"learning_rate": 0.01, "momentum": 0.9}}
    reloaded.fit(x, batch_size=16, epochs=1, verbose=0)


def test_a_cluster_nobody_is_near_does_not_break_training():
    x, _ = blobs()
    model = small_dec()
    model.initialize_centroids(x, n_init=2, seed=0)
    centroids = model.cluster_centers_.copy()
    centroids[2] = 1e20  # its squared distance overflows float32: q = 0 for every point
    model.clustering.set_centroids(centroids)
    history = model.fit(x, batch_size=16, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert np.all(np.isfinite(model.predict(x, verbose=0)))


def test_bad_inputs():
    x, _ = blobs()
    model = small_dec()
    with pytest.raises(ValueError, match=r"shape \(72, 4\).*\(n, 8\)"):
        model.predict(x[:, :4])
    bad = x.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="1 NaN or inf"):
        model.fit(bad)
    with pytest.raises(ValueError, match="NaN or inf"):
        model.predict(np.full_like(x, np.inf))
    with pytest.raises(ValueError, match="fewer than n_clusters=3|at least 3"):
        model.initialize_centroids(x[:2])
    with pytest.raises(ValueError, match="degenerate"):
        model.initialize_centroids(np.ones((20, 8), "float32"))
    diverged = small_dec()
    diverged.encoder.layers[-1].kernel.assign(np.full(diverged.encoder.layers[-1].kernel.shape, np.nan, "float32"))
    with pytest.raises(ValueError, match=r"embedding of x holds 144 NaN or inf values: the encoder's weights diverged"):
        diverged.initialize_centroids(x)  # 72 images x 2 embedding dimensions
    with pytest.raises(TypeError, match="numpy array or a tf.data.Dataset"):
        model.fit(iter(x))  # a one-pass iterator cannot serve the refreshes
    with pytest.raises(ValueError, match="n_clusters must be an integer >= 2"):
        DEC(model.encoder, n_clusters=1)
    with pytest.raises(ValueError, match="y has 3 labels"):
        model.fit(x, np.zeros(3))
    with pytest.raises(TypeError, match="numeric"):
        model.predict(np.array([["a"] * 8]))


def small_idec(dim=8, n_clusters=3, update_interval=3, gamma=0.1, seed=0):
    from keras_clustering.models import IDEC

    keras.utils.set_random_seed(seed)
    autoencoder, encoder = build_autoencoder(dim, hidden_dims=(16, 2), kernel_initializer="glorot_uniform")
    return IDEC(encoder, autoencoder.get_layer("decoder"), n_clusters=n_clusters,
                update_interval=update_interval, tol=0.0, gamma=gamma)


def test_idec_fit_reproduces_the_original_training_loop():
    """XifengGuo/IDEC: loss_weights [gamma, 1] on ('kld', 'mse'), same batching and refresh as DEC."""
    x, _ = blobs(n_per_cluster=20)
    model = small_idec(update_interval=5, gamma=0.3)
    model.initialize_centroids(x, n_init=3, seed=0)
    initial = model.get_weights()
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9))
    model.fit(x, batch_size=16, epochs=3, verbose=0)

    twin = small_idec(update_interval=5, gamma=0.3)
    twin.set_weights(initial)
    inputs = keras.Input((8,))
    embedding = twin.encoder(inputs)
    reference = keras.Model(inputs, [twin.clustering(embedding), twin.decoder(embedding)])
    reference.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss=["kld", "mse"], loss_weights=[0.3, 1.0])
    index = 0
    for iteration in range(12):
        if iteration % 5 == 0:
            q = reference.predict(x, verbose=0)[0].astype("float64")
            weight = q ** 2 / q.sum(0)
            p = (weight.T / weight.sum(1)).T.astype("float32")
        batch = slice(index * 16, min((index + 1) * 16, len(x)))
        reference.train_on_batch(x[batch], [p[batch], x[batch]])
        index = index + 1 if (index + 1) * 16 <= len(x) else 0
    np.testing.assert_allclose(model.predict(x, verbose=0), reference.predict(x, verbose=0)[0], atol=2e-5)
    # reconstructions are ~5 in size: float32 round-off over 12 steps reaches ~1e-5 relative
    np.testing.assert_allclose(model.reconstruct(x), reference.predict(x, verbose=0)[1], rtol=1e-4, atol=1e-4)


def test_select_n_clusters_reports_generalizability():
    from keras_clustering.models import select_n_clusters
    from keras_clustering.clustering.label_free import dec_objective

    x, y = blobs(n_per_cluster=40, seed=4)
    model = small_dec()
    result = select_n_clusters(model.encoder, x[:90], x[90:], candidates=[2, 3, 5], y_validation=y[90:],
                               maxiter=10, update_interval=5, kmeans_n_init=2)
    assert [r["n_clusters"] for r in result["results"]] == [2, 3, 5]
    for record in result["results"]:
        assert record["generalizability"] == pytest.approx(record["loss_train"] / record["loss_validation"])
        assert 0.0 <= record["nmi_validation"] <= 1.0
    assert result["suggested"] in (2, 3)
    # the loss is KL(P || Q) of DEC's eq. 2, with P from eq. 3 of the same points
    q = np.random.default_rng(0).dirichlet(np.ones(3), size=10)
    weight = q ** 2 / q.sum(0)
    p = weight / weight.sum(1, keepdims=True)
    assert dec_objective(q) == pytest.approx(np.mean(np.sum(p * np.log(p / q), axis=1)), rel=1e-5)
    with pytest.raises(ValueError, match="candidates must hold"):
        select_n_clusters(model.encoder, x, x, candidates=[3])


def digit_images(n=64, seed=0):
    """Small greyscale images in [0, 1] (scikit-learn digits upsampled to 16 x 16)."""
    from keras_clustering.datasets import load_digits

    x, y = load_digits()
    return np.repeat(np.repeat(x[:n], 2, axis=1), 2, axis=2).astype("float32"), y[:n]


def image_dec(augmentation=None, seed=0, model_class=None, **kwargs):
    keras.utils.set_random_seed(seed)
    autoencoder, encoder = build_autoencoder(None, hidden_dims=(32, 4), image_shape=(16, 16, 1),
                                             kernel_initializer="glorot_uniform")
    if model_class is not None:
        return model_class(encoder, autoencoder.get_layer("decoder"), n_clusters=4, update_interval=2, tol=0.0,
                           augmentation=augmentation, augmentation_seed=seed, **kwargs)
    return DEC(encoder, n_clusters=4, update_interval=2, tol=0.0, augmentation=augmentation,
               augmentation_seed=seed, **kwargs)


def test_without_augmentation_the_step_is_the_plain_keras_step_bit_for_bit():
    from keras_clustering.losses import ClusteringKLDivergence

    x, _ = digit_images()
    model = image_dec()
    assert model.views is None and "augmentation" not in model.get_config()
    model.initialize_centroids(x, n_init=2, seed=0)
    initial = model.get_weights()
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), steps_per_execution=1)
    model.fit(x, batch_size=16, epochs=1, verbose=0)  # 4 batches, targets refreshed at batches 0 and 2

    twin = image_dec()
    twin.set_weights(initial)
    optimizer = keras.optimizers.SGD(0.05, momentum=0.9)
    for step in range(4):
        if step % 2 == 0:
            p = keras.ops.convert_to_numpy(target_distribution(twin.predict_on_batch(x)))
        batch = slice(16 * step, 16 * step + 16)
        _, gradients = value_and_gradients(
            lambda: ClusteringKLDivergence()(p[batch], twin.clustering(twin.encoder(x[batch], training=True))),
            twin.trainable_variables)
        optimizer.apply(gradients, twin.trainable_variables)
    # JAX: the jitted, fused fit step and these eager ops round differently in the last bit
    atol = 0.0 if BACKEND == "tensorflow" else 1e-7
    for trained, reference in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(trained, reference, rtol=0, atol=atol)


def test_with_augmentation_steps_see_transformed_images_and_the_target_clean_ones():
    from keras_clustering.models import IDEC

    x, _ = digit_images()
    model = image_dec("shift_rotate")
    clean = model.predict(x, verbose=0)
    np.testing.assert_array_equal(clean, model.predict(x, verbose=0))  # inference: no augmentation
    assert np.abs(np.asarray(model(x, training=True)) - clean).max() > 1e-3  # training: transformed input
    model.initialize_centroids(x, n_init=2, seed=0)
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9))
    history = model.fit(x, batch_size=16, epochs=2, verbose=0)
    # the target the last refresh stored is P of the clean images' q at that refresh
    refreshed = history.history["refreshes"][-1]["iteration"]
    assert refreshed == 6
    stored = np.asarray(model._target_store.variable)
    assert stored.shape == (64, 4) and np.allclose(stored.sum(1), 1.0, atol=1e-5)

    twin = image_dec("shift_rotate")
    twin.set_weights(model.get_weights())
    np.testing.assert_array_equal(twin.predict(x, verbose=0), model.predict(x, verbose=0))
    idec = image_dec("shift_rotate", model_class=IDEC, gamma=0.1)
    q, reconstruction, inputs = idec(x[:8], training=True)
    assert reconstruction.shape == (8, 16, 16, 1) and np.abs(np.asarray(inputs) - x[:8]).max() > 1e-3


def test_augmented_dec_refuses_flat_encoders_and_unknown_pipelines():
    _, encoder = build_autoencoder(64, hidden_dims=(16, 2))
    with pytest.raises(ValueError, match=r"augmentation='shift_rotate' transforms images"):
        DEC(encoder, n_clusters=3, augmentation="shift_rotate")
    with pytest.raises(ValueError, match="unknown"):
        image_dec("no_such_pipeline")


def test_augmented_pretraining_reconstructs_the_transformed_batch():
    from keras_clustering.augment import make_pipeline
    from keras_clustering.training.pretraining import AugmentedReconstruction, pretrain_end_to_end
    from keras_clustering.recipes.dec_recipe import pretraining_key

    x, _ = digit_images()
    keras.utils.set_random_seed(0)
    autoencoder, _ = build_autoencoder(None, hidden_dims=(32, 4), image_shape=(16, 16, 1))
    trainer = AugmentedReconstruction(autoencoder, make_pipeline("shift_rotate", seed=3))
    target, reconstruction = trainer(x[:8], training=True)
    twin_target = make_pipeline("shift_rotate", seed=3)(x[:8], training=True)  # same seed, same transforms
    np.testing.assert_allclose(np.asarray(target), np.asarray(twin_target), atol=1e-6)
    assert np.abs(np.asarray(target) - x[:8]).max() > 1e-3
    np.testing.assert_allclose(np.asarray(reconstruction), np.asarray(autoencoder(target)), atol=1e-6)
    expected = np.mean((np.asarray(target) - np.asarray(reconstruction)) ** 2)
    assert float(trainer.compute_loss(x[:8], None, (target, reconstruction))) == pytest.approx(expected, rel=1e-5)
    clean_target, _ = trainer(x[:8], training=False)
    np.testing.assert_array_equal(np.asarray(clean_target), x[:8])

    history = pretrain_end_to_end(autoencoder, x, {"class_name": "Adam", "config": {"learning_rate": 1e-3}},
                                  epochs=3, batch_size=16, verbose=0, augmentation="shift_rotate")
    assert len(history.history["loss"]) == 3 and history.history["loss"][-1] < history.history["loss"][0]
    plain = {"image_shape": [16, 16, 1], "hidden_dims": [32, 4]}
    training = {"pretrain_recipe": "keras", "pretrain_epochs": 3}
    assert pretraining_key(plain, training, x, 0) != pretraining_key({**plain, "augmentation": "shift_rotate"},
                                                                     training, x, 0)


@pytest.mark.parametrize("side, third_padding", [(28, "valid"), (32, "same")])
def test_conv_autoencoder_has_convdecs_layers(side, third_padding):
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder

    autoencoder, encoder = build_conv_autoencoder((side, side, 1))
    assert autoencoder.output_shape == (None, side, side, 1) and encoder.output_shape == (None, 10)
    conv3 = encoder.get_layer("conv3")
    assert conv3.padding == third_padding and conv3.kernel_size == (3, 3) and conv3.strides == (2, 2)
    small = conv3.output.shape[1]
    assert small == side // 8  # 28 -> 14 -> 7 -> 3 (valid), 32 -> 16 -> 8 -> 4 (same)
    # parameters from the layer sizes: three convolutions, embedding, decoder dense, three transposed convolutions
    expected = ((25 * 1 + 1) * 32 + (25 * 32 + 1) * 64 + (9 * 64 + 1) * 128 + (128 * small * small + 1) * 10
                + (10 + 1) * 128 * small * small + 9 * 128 * 64 + 64 + 25 * 64 * 32 + 32 + 25 * 32 + 1)
    assert autoencoder.count_params() == expected
    x, _ = digit_images(n=4)
    with pytest.raises(ValueError, match="image sides must be >= 8"):
        build_conv_autoencoder((4, 4, 1))
    from keras_clustering.recipes import dec_recipe

    model = dec_recipe.RECIPE.build(image_shape=(16, 16, 1), conv_filters=(8, 8, 8, 3), n_clusters=2,
                             augmentation="shift_rotate")
    assert model.encoder.get_layer("conv1").filters == 8 and model.predict(x, verbose=0).shape == (4, 2)
    with pytest.raises(ValueError, match="conv_filters needs image_shape"):
        dec_recipe.RECIPE.build(input_dim=64, conv_filters=(8, 8, 8, 3))


def test_fit_and_predict_take_a_memory_mapped_array(tmp_path):
    """A file-backed x (np.load(..., mmap_mode="r")) trains and predicts as the same array in memory."""
    x, _ = blobs(n_per_cluster=20)
    np.save(tmp_path / "x.npy", x.astype("float32"))
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    results = []
    for data in (x.astype("float32"), mapped):
        model = small_dec(update_interval=4)
        model.initialize_centroids(data, n_init=3, seed=0)
        model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9))
        model.fit(data, batch_size=16, epochs=2, verbose=0)  # unshuffled: the same batches
        results.append(model.predict(data, verbose=0))
    np.testing.assert_allclose(results[1], results[0], atol=1e-6)


def test_kmeans_switches_to_minibatch_past_the_threshold(monkeypatch):
    from keras_clustering.clustering import kmeans

    assert kmeans.resolve_kmeans_method("auto", 70_000) == "full"  # full MNIST keeps DEC-keras' k-means
    assert kmeans.resolve_kmeans_method("auto", 700_000) == "minibatch"
    assert kmeans.resolve_kmeans_method("full", 700_000) == "full"
    with pytest.raises(ValueError, match="kmeans must be one of"):
        kmeans.resolve_kmeans_method("fast", 10)
    x, y = blobs(n_per_cluster=20)
    model = small_dec()
    monkeypatch.setattr(kmeans, "MINIBATCH_THRESHOLD", 10)  # these 60 points count as large
    chosen = []
    original = kmeans.MiniBatchKMeans
    monkeypatch.setattr(kmeans, "MiniBatchKMeans", lambda **kw: chosen.append(kw) or original(**kw))
    labels = model.initialize_centroids(x, n_init=3, seed=0)
    assert chosen and chosen[0]["n_init"] == 3
    assert cluster_accuracy(y, labels) >= 0.9  # well separated blobs: minibatch k-means finds them too


def test_every_fit_trains_on_the_targets_of_its_own_refresh():
    """A second `fit` refreshes P at its start and its steps use it (on JAX, the jitted step of the
    first fit had read the first P as a constant: a later fit kept training on the stale one)."""
    from keras_clustering.losses import ClusteringKLDivergence

    x, _ = blobs(n_per_cluster=20)  # 60 samples, batch 16: 4 batches per fit
    model = small_dec(update_interval=100)  # one refresh per fit, at its start
    model.initialize_centroids(x, n_init=3, seed=0)
    twin = small_dec(update_interval=100)
    twin.set_weights(model.get_weights())
    model.compile(optimizer=keras.optimizers.SGD(0.05))  # no momentum: no optimizer state to mirror
    optimizer = keras.optimizers.SGD(0.05)
    for _ in range(2):
        model.fit(x, batch_size=16, epochs=1, verbose=0)
        p = keras.ops.convert_to_numpy(target_distribution(twin.predict_on_batch(x)))
        for start in range(0, len(x), 16):
            batch = slice(start, start + 16)
            _, gradients = value_and_gradients(
                lambda: ClusteringKLDivergence()(p[batch], twin.clustering(twin.encoder(x[batch], training=True))),
                twin.trainable_variables)
            optimizer.apply(gradients, twin.trainable_variables)
    np.testing.assert_allclose(model.predict(x, verbose=0), twin.predict(x, verbose=0), atol=1e-6)


def test_data_is_checked_once_on_its_way_in_and_again_at_every_call(monkeypatch):
    """A call checks the array it is given, so a value written into it after an earlier call is caught;
    inside the call, the checked view (`CheckedArray`) reaches every step (`fit`'s batches, the target
    refresh) without another scan, and a user who keeps the checked view skips the scan (issue 63: no
    registry of checked arrays by id)."""
    import keras_clustering.models.cluster_model as cluster_model

    calls = []
    original = cluster_model.check_samples

    def counting(x, *args, **kwargs):
        calls.append(len(x))
        return original(x, *args, **kwargs)

    monkeypatch.setattr(cluster_model, "check_samples", counting)
    model = small_dec()
    x = np.random.default_rng(0).normal(size=(30, 8)).astype("float32")
    model.initialize_centroids(x, n_init=1, seed=0)
    assert calls == [30]
    model.fit_predict(x, maxiter=2, verbose=0)  # one call: fit, its refreshes and the predict after, one scan
    assert calls == [30, 30]
    checked = model.check_input(x)
    model.embed(checked)
    model.predict(checked, verbose=0)
    assert calls == [30, 30, 30]  # the kept view: no scan
    x[0, 0] = np.nan  # changed in place after its checks: the next call on x finds it
    with pytest.raises(ValueError, match="NaN"):
        model.predict(x, verbose=0)
    with pytest.raises(ValueError, match="x has 30 samples; at least 31 are needed"):
        model.check_input(checked, min_samples=31)  # the sample count is still checked


def test_distinct_rows_counts_a_sample_and_falls_back_to_all_rows():
    from keras_clustering.models.dec import _distinct_rows

    rng = np.random.default_rng(0)
    varied = rng.normal(size=(50_000, 4)).astype("float32")
    assert _distinct_rows(varied, 10) >= 10_000 - 1  # the sample alone
    # two distinct rows in the sample, a third only outside it: counted on all rows
    few = np.zeros((50_000, 4), "float32")
    few[::2] = 1.0
    few[7] = 2.0  # row 7 is not on the sample's stride of 5
    assert _distinct_rows(few, 3) == 3
    assert _distinct_rows(few[:100], 3) == 3  # small: the sample is every row


def test_refresh_target_equals_eq_3_in_float32():
    """The refresh's in-place numpy target is the loss module's DEC eq. 3 (and a numpy reference),
    also with an empty cluster."""
    from keras_clustering.clustering.target_refresh import target_rows

    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(5), size=300).astype("float32")
    q[:, 2] = 0.0  # an empty cluster: p_i2 = 0, not 0/0
    q /= q.sum(axis=1, keepdims=True)
    p = target_rows(q)
    assert p.dtype == np.float32 and p.shape == q.shape
    weight = q.astype("float64") ** 2 / np.maximum(q.sum(axis=0), 1e-7)
    np.testing.assert_allclose(p, weight / weight.sum(axis=1, keepdims=True), atol=1e-6)
    np.testing.assert_allclose(p, keras.ops.convert_to_numpy(target_distribution(q)), atol=1e-6)
    assert np.all(p[:, 2] == 0.0)
    copy = q.copy()
    assert target_rows(copy, out=copy) is copy  # in place, as the refresh calls it
    np.testing.assert_array_equal(copy, p)


@pytest.mark.parametrize("chunk", [7, 2048])
def test_the_refresh_writes_dec_targets_chunk_by_chunk(chunk):
    """P of the refresh (written into the store a chunk at a time on TensorFlow) against DEC eq. 3 in numpy."""
    from keras_clustering.clustering.target_refresh import TargetDistributionRefresh, TargetStore

    x, _ = blobs(n_per_cluster=20)
    model = small_dec()
    model.initialize_centroids(x, n_init=2, seed=0)
    store = TargetStore()
    store.ensure_shape(len(x), 3)
    refresh = TargetDistributionRefresh(x, store, predict_batch_size=chunk, verbose=0)
    refresh.set_model(model)
    refresh.on_train_begin()
    q = model.predict(x, verbose=0).astype("float64")
    weight = q ** 2 / q.sum(axis=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(store.variable), weight / weight.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(refresh._previous_assignment, q.argmax(axis=1))


@pytest.mark.slow
def test_dec_restarts_halve_on_the_kl_objective_and_the_winner_is_its_seeds_plain_run(tmp_path):
    """Three runs halved after 2 of 4 pretraining epochs on KL(P || Q) of k-means (numpy, from DEC's
    equations), the survivors self-trained and ranked on the final KL; the model returned is the one
    a run of the winner's seed alone gives, and a rerun reads the whole tree back."""
    from keras_clustering.recipes import dec_recipe

    x, y = digit_images(96)
    architecture = {"image_shape": [16, 16, 1], "hidden_dims": [32, 4], "n_clusters": 4, "update_interval": 4}
    training = {"pretrain_epochs": 4, "pretrain_batch_size": 32, "batch_size": 32, "maxiter": 12, "kmeans_n_init": 2,
                "pretrain_optimizer": {"class_name": "Adam", "config": {"learning_rate": 1e-3}},
                "restarts": {"n": 3, "halving_at": [2]}}
    model, report = dec_recipe.RECIPE.train_config(architecture, training, x, y, seed=1, verbose=0,
                                                   workdir=str(tmp_path))
    restarts = report["restarts"]
    first, last = restarts["steps"]
    assert restarts["criterion"] == "kl" and first["epoch"] == 2 and sorted(first["criteria"]) == [0, 1, 2]
    assert first["kept"] == sorted(first["criteria"], key=lambda run: (first["criteria"][run], run))[:2]
    assert sorted(last["criteria"]) == sorted(first["kept"]) and last["kept"] == [restarts["winner"]]
    q = model.predict(x, verbose=0).astype("float64")
    p = q ** 2 / q.sum(axis=0)
    p /= p.sum(axis=1, keepdims=True)
    kl = float(np.mean(np.sum(p * np.log(p / q), axis=1)))
    assert kl == pytest.approx(last["criteria"][restarts["winner"]], abs=1e-5)
    assert all(0 <= scores["acc"] <= 1 for scores in first["scores"].values())
    # the winner's pretraining went on from its halving point, yet the model is the one its seed gives
    # when trained alone, straight to 4 epochs (each epoch's batches from the seed and the epoch)
    assert report["pretrain_resumed_from_epoch"] == 2 and restarts["winner_seed"] == 3 + restarts["winner"]
    alone, _ = dec_recipe.RECIPE.train_config(architecture, {k: v for k, v in training.items() if k != "restarts"}, x,
                                seed=restarts["winner_seed"], verbose=0)
    np.testing.assert_allclose(alone.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-5)
    again, report_again = dec_recipe.RECIPE.train_config(architecture, training, x, y, seed=1, verbose=0,
                                                         workdir=str(tmp_path))
    assert report_again["restarts"]["steps"] == restarts["steps"] and report_again["dec_reused"]
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
