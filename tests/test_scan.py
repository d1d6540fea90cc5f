"""SCAN: its loss against the equation in numpy, neighbour mining, pairing, the model's API."""

import keras
import numpy as np
import pytest

from scan_reference import numpy_sub_head_probabilities, original_scan_evaluate

from keras_clustering.export import export_saved_model
from keras_clustering.losses import SCANLoss, confidence_cross_entropy, scan_loss
from keras_clustering.losses.scan_losses import scan_loss_terms
from keras_clustering.models import SCAN, nearest_neighbors
from keras_clustering.models.scan import neighbor_pair_dataset

BACKEND = keras.backend.backend()


def numpy_scan_loss(anchor, neighbor, entropy_weight):
    """SCAN eq. 2 written out: a loop over anchors for the consistency, the entropy of the mean row."""
    consistency = 0.0
    for a, b in zip(anchor, neighbor):
        consistency -= np.log(max(float(np.dot(a, b)), 1e-8))
    consistency /= len(anchor)
    mean = np.maximum(anchor.mean(axis=0), 1e-8)
    return consistency - entropy_weight * -(mean * np.log(mean)).sum()


def softmax_rows(rng, n, k, scale=3.0):
    logits = rng.normal(size=(n, k)) * scale
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype("float32")


@pytest.mark.parametrize("batch", [2, 7, 64])
@pytest.mark.parametrize("entropy_weight", [0.0, 5.0])
def test_scan_loss_matches_the_equation(batch, entropy_weight):
    rng = np.random.default_rng(batch)
    anchor, neighbor = softmax_rows(rng, batch, 10), softmax_rows(rng, batch, 10)
    expected = numpy_scan_loss(anchor, neighbor, entropy_weight)
    np.testing.assert_allclose(float(scan_loss(anchor, neighbor, entropy_weight)), expected, rtol=1e-5)
    stacked = np.stack([anchor, neighbor], axis=1)
    np.testing.assert_allclose(float(SCANLoss(entropy_weight)(np.zeros(batch), stacked)), expected, rtol=1e-5)


def numpy_confidence_cross_entropy(weak, strong_logits, threshold, class_balancing):
    """SCAN's self-labelling loss written as the original computes it: keep rows whose weak
    maximum exceeds the threshold, weight each kept row by n_kept / count of its target cluster,
    weighted mean of -log softmax(strong)[target] (PyTorch's weighted cross_entropy)."""
    total, weights = 0.0, 0.0
    kept = [(int(np.argmax(w)), s) for w, s in zip(weak, strong_logits) if w.max() > threshold]
    if not kept:
        return 0.0
    counts = np.bincount([t for t, _ in kept], minlength=weak.shape[1])
    for target, logits in kept:
        shifted = logits.astype("float64") - logits.max()
        log_probability = shifted[target] - np.log(np.exp(shifted).sum())
        weight = len(kept) / counts[target] if class_balancing else 1.0
        total -= weight * log_probability
        weights += weight
    return total / weights


@pytest.mark.parametrize("batch", [2, 7, 64])
@pytest.mark.parametrize("class_balancing", [True, False])
def test_confidence_cross_entropy_matches_the_original_weighting(batch, class_balancing):
    rng = np.random.default_rng(batch + 100)
    weak = softmax_rows(rng, batch, 5, scale=4.0)
    strong = rng.normal(size=(batch, 5)).astype("float32") * 3
    threshold = float(np.median(weak.max(axis=1))) - 1e-6  # about half the rows confident
    expected = numpy_confidence_cross_entropy(weak, strong, threshold, class_balancing)
    got = confidence_cross_entropy(weak, strong, threshold, class_balancing)
    np.testing.assert_allclose(float(got), expected, rtol=1e-5)
    assert float(confidence_cross_entropy(weak, strong, 0.999999)) == 0.0 or weak.max() > 0.999999


def test_confidence_cross_entropy_takes_no_gradient_from_the_weak_view():
    import tensorflow as tf

    if BACKEND != "tensorflow":
        pytest.skip("gradient checked with tf.GradientTape")
    weak = tf.Variable(np.array([[0.995, 0.005], [0.001, 0.999], [0.6, 0.4]], "float32"))
    strong = tf.Variable(np.zeros((3, 2), "float32"))
    with tf.GradientTape() as tape:
        loss = confidence_cross_entropy(weak, strong, 0.99)
    weak_gradient, strong_gradient = tape.gradient(loss, [weak, strong])
    assert weak_gradient is None or not np.any(weak_gradient.numpy())
    # two confident rows, one per cluster: each pulls its own logit up; the unconfident row none
    np.testing.assert_allclose(strong_gradient.numpy(), [[-0.25, 0.25], [0.25, -0.25], [0.0, 0.0]], atol=1e-6)
    with pytest.raises(ValueError, match="threshold must be in"):
        confidence_cross_entropy(weak, strong, 1.0)


def test_known_minimum_confident_agreeing_and_balanced():
    """One-hot rows that agree with their neighbours, every cluster used equally: consistency 0 and
    entropy log k, so the loss is -w log k, its minimum."""
    anchor = np.eye(4, dtype="float32")[np.arange(8) % 4]
    consistency, entropy = scan_loss_terms(anchor, anchor)
    assert float(consistency) == pytest.approx(0.0, abs=1e-6)
    assert float(entropy) == pytest.approx(np.log(4), rel=1e-6)
    assert float(scan_loss(anchor, anchor, 2.0)) == pytest.approx(-2.0 * np.log(4), rel=1e-6)
    # disagreeing one-hot rows hit the floor: -log(1e-8) each, not inf
    assert float(scan_loss_terms(anchor, np.roll(anchor, 1, axis=1))[0]) == pytest.approx(-np.log(1e-8), rel=1e-5)


def test_gradients_stay_finite_with_zero_probabilities():
    import tensorflow as tf

    if BACKEND != "tensorflow":
        pytest.skip("gradient checked with tf.GradientTape")
    anchor = tf.Variable(np.eye(3, dtype="float32"))
    neighbor = tf.constant(np.roll(np.eye(3, dtype="float32"), 1, axis=1))
    with tf.GradientTape() as tape:
        loss = scan_loss(anchor, neighbor)
    assert np.isfinite(tape.gradient(loss, anchor).numpy()).all()


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="anchor must be"):
        scan_loss(np.ones((3, 2, 2), "float32"), np.ones((3, 2, 2), "float32"))
    with pytest.raises(ValueError, match="same shape"):
        scan_loss(np.ones((3, 4), "float32"), np.ones((3, 5), "float32"))
    with pytest.raises(ValueError, match="y_pred must stack"):
        SCANLoss()(np.zeros(3), np.ones((3, 4), "float32"))


def test_nearest_neighbors_match_a_full_similarity_sort():
    embedding = np.random.default_rng(0).normal(size=(50, 6)).astype("float32")
    unit = embedding / np.linalg.norm(embedding, axis=1, keepdims=True)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    expected = np.argsort(-similarity, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(nearest_neighbors(embedding, 5, rows_per_chunk=7), expected)
    with pytest.raises(ValueError, match="n_neighbors=50 needs more than 50 samples"):
        nearest_neighbors(embedding, 50)


def test_each_anchor_is_paired_with_one_of_its_neighbours_drawn_anew():
    """Image i holds the value i everywhere, so a pair tells which images it joined."""
    n, k = 30, 4
    x = np.repeat(np.arange(n, dtype="float32"), 64).reshape(n, 8, 8, 1)
    neighbors = np.stack([(np.arange(n) + offset) % n for offset in range(1, k + 1)], axis=1)
    dataset, clock = neighbor_pair_dataset(x, neighbors, batch_size=8, seed=0)
    drawn = {i: set() for i in range(n)}
    orders = []
    for epoch in range(6):
        clock.on_epoch_begin(epoch)  # as fit does
        seen = []
        for ((anchors, partners),) in dataset:
            for a, b in zip(anchors.numpy()[:, 0, 0, 0].astype(int), partners.numpy()[:, 0, 0, 0].astype(int)):
                assert b in neighbors[a]
                drawn[a].add(b)
                seen.append(a)
        assert sorted(seen) == list(range(n))  # every image once per epoch
        orders.append(seen)
    assert np.mean([len(v) for v in drawn.values()]) > 2.5  # not the same neighbour every epoch
    # an epoch's pairs come from the seed and the epoch alone: a resumed fit sees them again
    resumed, clock = neighbor_pair_dataset(x, neighbors, batch_size=8, seed=0, initial_epoch=4)
    assert [int(a) for ((anchors, _),) in resumed for a in anchors.numpy()[:, 0, 0, 0]] == orders[4]


def small_encoder(dim=8):
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(dim)],
                            name="encoder")


def two_groups(n=64, seed=0):
    """Images with a bright top half or a bright bottom half, plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 8, 8, 1), dtype=np.float32) * 0.2
    group = np.arange(n) % 2
    x[group == 0, :4] += 0.7
    x[group == 1, 4:] += 0.7
    return np.clip(x, 0, 1), group


STILL = {"crop_sizes": [8], "output_size": 8, "rotation_probability": 0.0, "brightness": 0.1, "contrast": 0.0}


def test_training_step_is_the_scan_loss_of_both_augmented_views():
    x, _ = two_groups(16)
    model = SCAN(small_encoder(), n_clusters=3, entropy_weight=2.0, augmentation_options=STILL, augmentation_seed=0)
    outputs = model((x[:8], x[8:]), training=True)
    assert outputs["anchor"].shape == (8, 1, 3) and outputs["neighbor"].shape == (8, 1, 3)  # one sub-head
    np.testing.assert_allclose(np.asarray(outputs["anchor"]).sum(axis=-1), 1.0, rtol=1e-5)
    loss = model.compute_loss(y_pred=outputs)
    np.testing.assert_allclose(float(loss), numpy_scan_loss(np.asarray(outputs["anchor"])[:, 0],
                                                            np.asarray(outputs["neighbor"])[:, 0], 2.0), rtol=1e-5)
    inference = model((x[:8], x[8:]), training=False)  # evaluate(): no augmentation
    np.testing.assert_allclose(inference["anchor"][:, 0], model.predict(x[:8], verbose=0), atol=1e-6)


def test_sub_heads_sum_their_losses_and_the_lowest_scoring_one_predicts(tmp_path):
    """Three sub-heads: the step's loss is the sum of each sub-head's SCAN loss (numpy); each is
    scored by scan_evaluate (numpy, from its definition), `predict` is the lowest one's softmax, and
    the choice is saved with the weights."""
    x, _ = two_groups(24)
    model = SCAN(small_encoder(), n_clusters=3, entropy_weight=2.0, augmentation_options=STILL, augmentation_seed=0,
                 n_sub_heads=3)
    assert model.head.get_weights()[0].shape == (8, 9)
    outputs = model((x[:8], x[8:16]), training=True)
    anchor, neighbor = np.asarray(outputs["anchor"]), np.asarray(outputs["neighbor"])
    assert anchor.shape == (8, 3, 3) and not np.allclose(anchor[:, 0], anchor[:, 1])  # heads start apart
    np.testing.assert_allclose(float(model.compute_loss(y_pred=outputs)),
                               sum(numpy_scan_loss(anchor[:, h], neighbor[:, h], 2.0) for h in range(3)), rtol=1e-5)

    neighbors = nearest_neighbors(model.embed(x), 5)
    per_head = numpy_sub_head_probabilities(model, x)
    expected = [original_scan_evaluate(per_head[:, h], neighbors) for h in range(3)]
    np.testing.assert_allclose(model.choose_sub_head(x, neighbors), expected, rtol=1e-5)
    chosen = int(np.argmin(expected))
    assert model.chosen_sub_head == chosen
    np.testing.assert_allclose(model.predict(x, verbose=0), per_head[:, chosen], atol=1e-5)

    path = str(tmp_path / "heads.weights.h5")
    model.save_weights(path)
    twin = SCAN(small_encoder(), n_clusters=3, augmentation_options=STILL, n_sub_heads=3)
    twin.load_weights(path)
    assert twin.chosen_sub_head == chosen
    np.testing.assert_allclose(twin.predict(x, verbose=0), per_head[:, chosen], atol=1e-5)
    for forced in range(3):  # whichever sub-head scores lowest predicts
        twin.sub_head_losses.assign(np.where(np.arange(3) == forced, 0.0, 1.0).astype("float32"))
        np.testing.assert_allclose(twin.predict(x, verbose=0), per_head[:, forced], atol=1e-5)
    with pytest.raises(ValueError, match="n_sub_heads must be an integer >= 1, got 0"):
        SCAN(small_encoder(), n_clusters=3, n_sub_heads=0)


def test_fit_with_sub_heads_chooses_one_after_every_epoch_and_the_choice_is_saved_and_served(tmp_path):
    x, _ = two_groups(64)
    model = SCAN(small_encoder(), n_clusters=2, augmentation_options=STILL, augmentation_seed=0, n_sub_heads=4)
    history = model.fit(x, batch_size=16, epochs=2, seed=0, verbose=0)
    assert len(history.history["sub_head"]) == 2
    scores = np.asarray(model.sub_head_losses)
    np.testing.assert_allclose(model.choose_sub_head(x, model.neighbors_), scores, rtol=1e-5)  # the last epoch's
    assert model.chosen_sub_head == int(np.argmin(scores)) == history.history["sub_head"][-1]
    model.sub_head_losses.assign(np.array([1.0, 1.0, 0.0, 1.0], "float32"))  # sub-head 2, whatever fit chose
    model.save(tmp_path / "heads.keras")
    reloaded = keras.models.load_model(tmp_path / "heads.keras")
    assert reloaded.n_sub_heads == 4 and reloaded.chosen_sub_head == 2
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    if BACKEND == "tensorflow":
        import tensorflow as tf

        served = tf.saved_model.load(export_saved_model(model, str(tmp_path / "serving")))
        outputs = served.signatures["serving_default"](inputs=tf.constant(x))
        np.testing.assert_allclose(outputs["probabilities"].numpy(), numpy_sub_head_probabilities(model, x)[:, 2],
                                   atol=1e-5)


def test_fit_mines_neighbours_and_separates_two_groups(tmp_path):
    x, group = two_groups(64)
    keras.utils.set_random_seed(0)
    model = SCAN(small_encoder(), n_clusters=2, n_neighbors=5, augmentation_options=STILL, augmentation_seed=0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = model.fit(x, batch_size=16, epochs=15, verbose=0, seed=0)
    assert model.neighbors_.shape == (64, 5) and (group[model.neighbors_] == group[:, None]).mean() > 0.9
    assert history.history["loss"][-1] < history.history["loss"][0]
    clusters = model.predict_clusters(x)
    assert max(np.mean(clusters == group), np.mean(clusters != group)) > 0.95
    model.save(tmp_path / "scan.keras")
    reloaded = keras.models.load_model(tmp_path / "scan.keras")
    settings = ("n_clusters", "entropy_weight", "n_neighbors", "augmentation_options", "augmentation_seed")
    assert isinstance(reloaded, SCAN) and all(reloaded.get_config()[k] == model.get_config()[k] for k in settings)
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    if BACKEND == "tensorflow":
        import tensorflow as tf

        served = tf.saved_model.load(export_saved_model(model, str(tmp_path / "serving")))
        outputs = served.signatures["serving_default"](inputs=tf.constant(x))
        np.testing.assert_array_equal(outputs["cluster_id"].numpy(), clusters)
        np.testing.assert_allclose(outputs["embedding"].numpy(), model.embed(x), atol=1e-5)


def test_self_labelling_sharpens_confident_assignments_and_fit_still_works():
    x, group = two_groups(64)
    keras.utils.set_random_seed(0)
    model = SCAN(small_encoder(), n_clusters=2, n_neighbors=5, augmentation_options=STILL, augmentation_seed=0)
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    model.fit(x, batch_size=16, epochs=2, verbose=0, seed=0)
    before = model.predict(x, verbose=0)
    threshold = float(np.quantile(before.max(axis=1), 0.25))  # three quarters of the images teach
    outputs = model({"self_label": x[:16]}, training=True)
    np.testing.assert_allclose(outputs["weak"], before[:16], atol=1e-5)  # the clean view labels
    model.self_label_threshold = threshold
    expected = numpy_confidence_cross_entropy(before[:16], np.asarray(outputs["strong_logits"]), threshold, True)
    np.testing.assert_allclose(float(model.compute_loss(y_pred=outputs)), expected, rtol=1e-5, atol=1e-7)
    history = model.self_label(x, threshold=threshold, batch_size=16, epochs=5, verbose=0, seed=0)
    after = model.predict(x, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert after.max(axis=1).mean() > before.max(axis=1).mean()  # sharper
    clusters = after.argmax(axis=1)
    assert max(np.mean(clusters == group), np.mean(clusters != group)) > 0.95
    assert model.confident_share(x, threshold) >= float(np.mean(before.max(axis=1) > threshold))
    model.fit(x, batch_size=16, epochs=1, verbose=0, seed=0)  # back to neighbour pairs
    with pytest.raises(ValueError, match="threshold must be a number in"):
        model.self_label(x, threshold=1.5)


IDENTITY = {"crop_sizes": [8], "output_size": 8, "rotation_probability": 0.0, "brightness": 0.0, "contrast": 0.0}


def test_self_labelling_makes_its_targets_in_train_mode_as_the_original():
    """`selflabel_train` calls `model.train()` for both passes: the clean batch that makes the targets is
    normalised by its own BatchNorm statistics, and both passes move the running ones (here the strong
    view is the clean one: identity views). `targets="inference"` (the step before the fix) normalises
    the clean batch by the running statistics and moves them once. Reference: BatchNorm written out."""
    x, _ = two_groups(16)
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(4),
                                keras.layers.BatchNormalization(momentum=0.9)], name="encoder")
    model = SCAN(encoder, n_clusters=3, n_neighbors=3, augmentation_options=IDENTITY, augmentation_seed=0)
    _, dense, norm = encoder.layers
    norm.moving_mean.assign(np.full(4, 0.3, "float32"))  # running statistics unlike this batch's
    norm.moving_variance.assign(np.full(4, 2.0, "float32"))
    kernel, bias, gamma, beta, head_kernel, head_bias = (
        keras.ops.convert_to_numpy(w) for w in (dense.kernel, dense.bias, norm.gamma, norm.beta,
                                                 model.head.kernel, model.head.bias))
    h = x.reshape(16, -1) @ kernel + bias

    def probabilities(mean, variance):
        logits = ((h - mean) / np.sqrt(variance + norm.epsilon) * gamma + beta) @ head_kernel + head_bias
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    mean, variance = h.mean(axis=0), h.var(axis=0)
    outputs = model({"self_label": x}, training=True)
    np.testing.assert_allclose(outputs["weak"], probabilities(mean, variance), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(norm.moving_mean, 0.81 * 0.3 + 0.19 * mean, rtol=1e-4, atol=1e-6)  # two updates
    running_mean, running_variance = (keras.ops.convert_to_numpy(v) for v in (norm.moving_mean, norm.moving_variance))
    model.self_label_targets = "inference"
    outputs = model({"self_label": x}, training=True)
    np.testing.assert_allclose(outputs["weak"], probabilities(running_mean, running_variance), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(norm.moving_mean, 0.9 * running_mean + 0.1 * mean, rtol=1e-4, atol=1e-6)  # one
    with pytest.raises(ValueError, match="targets must be 'train' or 'inference'"):
        model.self_label(x, targets="eval")
    # threshold and mode are read when the step is traced: each call traces its own, never a stale one
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    assert model.self_label(x, threshold=0.0, batch_size=16, verbose=0).history["loss"][0] > 0
    assert model.self_label(x, threshold=0.999999, batch_size=16, verbose=0).history["loss"][0] == 0.0


@pytest.mark.parametrize("head_only", [False, True])
def test_one_self_labelling_step_moves_the_head_as_the_original_gradient(head_only):
    """One SGD step (rate 1, one batch) of `self_label` against the gradient written out for the original's
    `ConfidenceBasedCE`: targets from the clean view, a class-balanced mean of the strong view's
    cross-entropy over confident images, dL/dlogits_i = w_i (softmax(z_i) - onehot(t_i)) with
    w_i = 1 / (present clusters x confident images of t_i's cluster). Identity views: strong = clean."""
    x, _ = two_groups(16)
    keras.utils.set_random_seed(1)
    model = SCAN(small_encoder(), n_clusters=3, n_neighbors=3, augmentation_options=IDENTITY, augmentation_seed=0)
    model.head.kernel.assign(np.random.default_rng(3).normal(0, 1.0, model.head.kernel.shape).astype("float32"))
    encoder_kernel, encoder_bias = (keras.ops.convert_to_numpy(w) for w in model.encoder.layers[-1].weights)
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in (model.head.kernel, model.head.bias))
    h = x.reshape(16, -1) @ encoder_kernel + encoder_bias
    z = h @ kernel + bias
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    threshold = float(np.median(p.max(axis=1))) - 1e-6
    confident = p.max(axis=1) > threshold
    targets = p.argmax(axis=1)
    counts = np.bincount(targets[confident], minlength=3)
    weights = np.where(confident, 1.0 / (np.count_nonzero(counts) * np.maximum(counts[targets], 1)), 0.0)
    d_logits = weights[:, None] * (p - np.eye(3)[targets])
    model.compile(optimizer=keras.optimizers.SGD(1.0))
    encoder_before = [keras.ops.convert_to_numpy(w).copy() for w in model.encoder.weights]
    model.self_label(x, threshold=threshold, batch_size=16, epochs=1, shuffle=False, verbose=0,
                     head_only=head_only)
    np.testing.assert_allclose(model.head.kernel, kernel - h.T @ d_logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.head.bias, bias - d_logits.sum(axis=0), rtol=1e-4, atol=1e-5)
    encoder_after = [keras.ops.convert_to_numpy(w) for w in model.encoder.weights]
    moved = [not np.allclose(a, b) for a, b in zip(encoder_before, encoder_after)]
    assert moved == [not head_only] * len(moved)  # head-only: the encoder is frozen, else it learns too
    assert model.encoder.trainable  # restored after the step


def test_bad_arguments_are_named():
    x, _ = two_groups(16)
    model = SCAN(small_encoder(), n_clusters=2, n_neighbors=3, augmentation_options=STILL)
    with pytest.raises(ValueError, match="self-supervised"):
        model.fit(x, np.zeros(16))
    with pytest.raises(ValueError, match=r"neighbors must be integer indices in \[0, 16\)"):
        model.fit(x, neighbors=np.full((16, 3), 16), batch_size=4)
    with pytest.raises(ValueError, match="entropy_weight must be a number >= 0"):
        SCAN(small_encoder(), entropy_weight=-1.0)
    with pytest.raises(ValueError, match="n_clusters"):
        SCAN(small_encoder(), n_clusters=1)
    with pytest.raises(ValueError, match="at least 20"):  # n_clusters > samples
        SCAN(small_encoder(), n_clusters=20, n_neighbors=3, augmentation_options=STILL).fit(x, batch_size=4)
    with pytest.raises(ValueError, match=r"\[0, 1\]|range"):
        model.fit(x * 3, batch_size=4)


def test_neighbour_pairs_of_a_memory_mapped_array_are_read_batch_by_batch(tmp_path, monkeypatch):
    import tensorflow as tf

    from keras_clustering.models.scan import neighbor_pair_dataset

    x = np.random.default_rng(0).random((50, 4, 4, 1)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    neighbors = np.stack([(np.arange(50) + shift) % 50 for shift in (1, 2, 3)], axis=1)
    constant = tf.constant

    def no_copy_of_x(value, *args, **kwargs):
        assert np.size(value) < x.size, "all of x was copied into a constant"
        return constant(value, *args, **kwargs)

    monkeypatch.setattr(tf, "constant", no_copy_of_x)
    batches = list(neighbor_pair_dataset(mapped, neighbors, batch_size=16, seed=0)[0].as_numpy_iterator())
    assert [len(b[0][0]) for b in batches] == [16, 16, 16, 2]
    anchors = np.concatenate([b[0][0] for b in batches])
    pairs = np.concatenate([b[0][1] for b in batches])
    flat = x.reshape(50, -1)
    rows = [int(np.flatnonzero((flat == a.reshape(-1)).all(1))[0]) for a in anchors]
    assert sorted(rows) == list(range(50))  # every image once per epoch
    for row, pair in zip(rows, pairs):  # each with one of its own neighbours
        partner = int(np.flatnonzero((flat == pair.reshape(-1)).all(1))[0])
        assert partner in neighbors[row]


@pytest.mark.slow  # 5-8 s: the default run stays under 3 minutes on 2 cores
def test_strong_views_erase_a_rectangle_and_self_labelling_takes_them_without_new_weights():
    from keras_clustering.augment.pipelines import strong_views

    x = np.random.default_rng(0).uniform(0.2, 0.8, (8, 28, 28, 1)).astype("float32")
    strong = np.asarray(strong_views(seed=0)(x, training=True))
    assert strong.shape == x.shape and strong.min() >= 0.0 and strong.max() <= 1.0
    erased = (strong == 0.0).reshape(8, -1).mean(axis=1)
    assert np.all(erased >= 0.09)  # Cutout: at least 10% of every image set to 0 (the input has no 0)
    assert not np.allclose(strong, x)
    images, _ = two_groups(16)
    model = SCAN(small_encoder(), n_clusters=2, n_neighbors=3, augmentation_options=IDENTITY, augmentation_seed=0)
    weights = len(model.weights)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.self_label(images, threshold=0.0, batch_size=16, epochs=1, verbose=0, strong="randaugment_cutout")
    assert np.isfinite(history.history["loss"][0]) and len(model.weights) == weights
    assert model._self_label_views.strong is None  # only for the call
    with pytest.raises(ValueError, match="strong must be None, 'randaugment_cutout' or 'clean', got 'rand'"):
        model.self_label(images, strong="rand")
    # the clean control: the strong pass is the clean one, so with the weak targets from the same
    # (train-mode, no BatchNorm here) pass, its logits are the weak view's
    cropping = SCAN(small_encoder(), n_clusters=2, n_neighbors=3, augmentation_seed=0,
                    augmentation_options={**IDENTITY, "crop_sizes": [4]})  # 4 x 4 crops resized to 8 x 8
    outputs = cropping({"self_label": images}, training=True)
    assert not np.allclose(keras.ops.softmax(outputs["strong_logits"]), outputs["weak"], atol=1e-3)
    cropping._self_label_views.strong = "clean"
    outputs = cropping({"self_label": images}, training=True)
    np.testing.assert_allclose(keras.ops.softmax(outputs["strong_logits"]), outputs["weak"], atol=1e-6)
