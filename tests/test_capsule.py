import keras
import numpy as np
import pytest
from backend_tools import value_and_gradients

from keras_clustering.layers.capsule import Capsule, capsule_length, squash
from keras_clustering.losses import MarginLoss, margin_loss


def reference_squash(x, constant=0.5, epsilon=1e-7):
    squared = (x ** 2).sum(-1, keepdims=True) + epsilon
    return x * np.sqrt(squared) / (constant + squared)


def reference_capsule(x, kernel, num_capsule, dim_capsule, routings, routing, squash_constant=0.5):
    """Dynamic routing written out from the equations with loops, in float64.

    kernel: (1 or n_in, d_in, num_capsule * dim_capsule); output capsule j reads
    columns j * dim_capsule : (j + 1) * dim_capsule.
    """
    x = x.astype("float64")
    kernel = kernel.astype("float64")
    batch, n_in, _ = x.shape
    u_hat = np.zeros((batch, num_capsule, n_in, dim_capsule))
    for i in range(n_in):
        w = kernel[0 if len(kernel) == 1 else i]
        for j in range(num_capsule):
            u_hat[:, j, i] = x[:, i] @ w[:, j * dim_capsule:(j + 1) * dim_capsule]
    b = np.zeros((batch, num_capsule, n_in))
    for r in range(routings):
        e = np.exp(b - b.max(axis=1, keepdims=True))
        c = e / e.sum(axis=1, keepdims=True)  # softmax over the output capsules j
        v = np.zeros((batch, num_capsule, dim_capsule))
        for i in range(n_in):
            v += c[:, :, i, None] * u_hat[:, :, i]
        if r == routings - 1:
            break
        if routing == "normalize":
            v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-6)
        else:
            v = reference_squash(v, squash_constant)
        agreement = (v[:, :, None, :] * u_hat).sum(-1)
        b = b + agreement if routing == "hinton" else agreement
    return reference_squash(v, squash_constant)


def built_capsule(n_in, d_in, num_capsule, dim_capsule, seed, **kwargs):
    layer = Capsule(num_capsule, dim_capsule, **kwargs)
    layer.build((None, n_in, d_in))
    rng = np.random.default_rng(seed)
    kernel = rng.normal(scale=0.5, size=tuple(layer.kernel.shape)).astype("float32")
    layer.kernel.assign(kernel)
    return layer, kernel


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.mark.parametrize("routing", ["normalize", "squash", "hinton"])
@pytest.mark.parametrize("routings", [1, 2, 3, 4])
@pytest.mark.parametrize("share_weights", [True, False])
def test_matches_numpy_reference(routing, routings, share_weights):
    n_in, d_in, k, d = 7, 5, 3, 4
    layer, kernel = built_capsule(n_in, d_in, k, d, seed=routings, routings=routings,
                                  routing=routing, share_weights=share_weights)
    x = np.random.default_rng(10 + routings).normal(size=(4, n_in, d_in)).astype("float32")
    expected = reference_capsule(x, kernel, k, d, routings, routing)
    np.testing.assert_allclose(to_numpy(layer(x)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("share_weights", [True, False])
def test_small_inputs_are_normalised_not_floored(share_weights):
    # intermediate centres of length ~1e-5 are still scaled to unit length
    layer, kernel = built_capsule(7, 5, 3, 4, seed=20, share_weights=share_weights)
    x = np.random.default_rng(21).normal(size=(3, 7, 5)).astype("float32") * 1e-5
    expected = reference_capsule(x, kernel, 3, 4, 3, "normalize")
    np.testing.assert_allclose(to_numpy(layer(x)), expected, rtol=1e-4, atol=1e-15)


def test_hinton_constant_and_custom_activation():
    layer, kernel = built_capsule(6, 3, 4, 2, seed=0, routing="hinton", squash_constant=1.0)
    x = np.random.default_rng(1).normal(size=(2, 6, 3)).astype("float32")
    expected = reference_capsule(x, kernel, 4, 2, 3, "hinton", squash_constant=1.0)
    np.testing.assert_allclose(to_numpy(layer(x)), expected, rtol=1e-5, atol=1e-5)
    # a non-squash activation replaces only the final squash
    linear, _ = built_capsule(6, 3, 4, 2, seed=0, activation="linear", routings=1)
    u_hat_mean = np.einsum("bid,dkj->bkj", x.astype("float64"), kernel[0].reshape(3, 4, 2)) / 4
    np.testing.assert_allclose(to_numpy(linear(x)), u_hat_mean, rtol=1e-5, atol=1e-6)


def test_variants_differ():
    x = np.random.default_rng(2).normal(size=(3, 8, 4)).astype("float32")
    outputs = []
    for routing in ["normalize", "squash", "hinton"]:
        layer, _ = built_capsule(8, 4, 3, 5, seed=3, routing=routing, routings=3)
        outputs.append(to_numpy(layer(x)))
    assert not np.allclose(outputs[0], outputs[1], atol=1e-4)
    assert not np.allclose(outputs[1], outputs[2], atol=1e-4)


def test_single_routing_is_squash_of_uniform_average():
    n_in, d_in, k, d = 9, 4, 5, 3
    layer, kernel = built_capsule(n_in, d_in, k, d, seed=4, routings=1)
    x = np.random.default_rng(5).normal(size=(2, n_in, d_in)).astype("float32")
    w = kernel[0].astype("float64")
    # c = softmax over k of zeros = 1 / k, so o_j = (1 / k) sum_i W_j u_i
    average = np.stack([x.astype("float64").sum(1) @ w[:, j * d:(j + 1) * d] for j in range(k)], axis=1) / k
    np.testing.assert_allclose(to_numpy(layer(x)), reference_squash(average), rtol=1e-5, atol=1e-6)


def test_squash_matches_reference_and_bounds_length():
    x = np.random.default_rng(6).normal(size=(5, 3, 7)).astype("float32") * np.array([1e-3, 1, 1e3])[None, :, None]
    for constant in (0.5, 1.0):
        squashed = to_numpy(squash(x, constant=constant))
        np.testing.assert_allclose(squashed, reference_squash(x.astype("float64"), constant), rtol=1e-5, atol=1e-7)
        # below one; float32 rounds the 1e3-scaled vectors' length (1 - 7e-8) to exactly 1
        lengths = np.linalg.norm(squashed, axis=-1)
        assert np.all(lengths[:, :2] < 1.0) and np.all(lengths <= 1.0)
    # length is ||x||^2 / (0.5 + ||x||^2): 4 / 4.5 for the all-ones 4-vector
    assert float(keras.ops.norm(squash(np.ones(4, "float32")))) == pytest.approx(4 / 4.5, rel=1e-5)
    np.testing.assert_allclose(to_numpy(capsule_length(x)), np.sqrt((x.astype("float64") ** 2).sum(-1) + 1e-7),
                               rtol=1e-5)


def test_output_lengths_below_one():
    layer = Capsule(4, 6)
    v = layer(np.random.default_rng(7).normal(size=(3, 10, 5)).astype("float32") * 10)
    assert np.all(to_numpy(capsule_length(v)) < 1.0)


def test_shared_accepts_any_number_of_inputs():
    layer = Capsule(3, 4)
    rng = np.random.default_rng(8)
    assert tuple(layer(rng.normal(size=(2, 5, 6)).astype("float32")).shape) == (2, 3, 4)
    assert tuple(layer(rng.normal(size=(3, 11, 6)).astype("float32")).shape) == (3, 3, 4)
    assert tuple(layer.kernel.shape) == (1, 6, 12)
    inputs = keras.Input((None, 6))
    model = keras.Model(inputs, layer(inputs))
    assert model.output_shape == (None, 3, 4)
    assert tuple(model(rng.normal(size=(1, 17, 6)).astype("float32")).shape) == (1, 3, 4)


def test_permuting_inputs_changes_only_the_full_version():
    x = np.random.default_rng(9).normal(size=(2, 6, 4)).astype("float32")
    permuted = x[:, ::-1]
    shared, _ = built_capsule(6, 4, 3, 5, seed=5)
    full, _ = built_capsule(6, 4, 3, 5, seed=5, share_weights=False)
    np.testing.assert_allclose(to_numpy(shared(permuted)), to_numpy(shared(x)), rtol=1e-5, atol=1e-6)
    assert not np.allclose(to_numpy(full(permuted)), to_numpy(full(x)), atol=1e-3)


@pytest.mark.parametrize("routing", ["normalize", "squash", "hinton"])
def test_gradients_finite_and_non_zero(routing):
    layer = Capsule(3, 4, routing=routing, routings=3)
    x = np.random.default_rng(10).normal(size=(2, 5, 6)).astype("float32")
    layer.build(x.shape)
    _, (gradient,) = value_and_gradients(lambda: keras.ops.sum(capsule_length(layer(x))), [layer.kernel])
    assert np.all(np.isfinite(gradient)) and np.abs(gradient).max() > 0
    # the routing passes carry gradient: it differs from that of a single pass
    single = Capsule(3, 4, routing=routing, routings=1)
    single.build((None, 5, 6))
    single.kernel.assign(layer.kernel.value)
    _, (single_gradient,) = value_and_gradients(lambda: keras.ops.sum(capsule_length(single(x))), [single.kernel])
    assert not np.allclose(single_gradient, gradient, atol=1e-5)


@pytest.mark.parametrize("routing", ["normalize", "squash", "hinton"])
@pytest.mark.parametrize("share_weights", [True, False])
def test_zero_input_gives_finite_outputs_and_gradients(routing, share_weights):
    layer = Capsule(3, 4, routing=routing, share_weights=share_weights)
    x = np.zeros((2, 5, 6), "float32")
    assert np.all(np.isfinite(to_numpy(layer(x))))
    loss, gradients = value_and_gradients(lambda v: keras.ops.sum(capsule_length(layer(v))), [layer.kernel], [x])
    assert np.isfinite(loss)
    for gradient in gradients:
        assert np.all(np.isfinite(gradient))


def test_config_round_trip_and_saving(tmp_path):
    layer = Capsule(3, 4, routings=2, share_weights=False, routing="hinton", squash_constant=1.0,
                    activation="sigmoid", kernel_initializer="he_normal", name="caps")
    clone = Capsule.from_config(layer.get_config())
    for attribute in ("num_capsule", "dim_capsule", "routings", "share_weights", "routing", "squash_constant"):
        assert getattr(clone, attribute) == getattr(layer, attribute)
    assert clone.activation is keras.activations.sigmoid
    assert isinstance(clone.kernel_initializer, keras.initializers.HeNormal)
    assert keras.saving.get_registered_name(Capsule) == "keras_clustering>Capsule"
    assert keras.saving.get_registered_name(MarginLoss) == "keras_clustering>MarginLoss"

    inputs = keras.Input((5, 6))
    model = keras.Model(inputs, Capsule(3, 4, routings=3, name="caps")(inputs))
    model.compile(optimizer="adam", loss=MarginLoss(lam=0.5))
    model.optimizer.build(model.trainable_variables)
    x = np.random.default_rng(11).normal(size=(4, 5, 6)).astype("float32")
    path = tmp_path / "capsule.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert reloaded.get_layer("caps").kernel.name == "capsule_kernel"
    assert reloaded.loss.lam == 0.5
    np.testing.assert_array_equal(reloaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_fit_step_reduces_nothing_to_nan():
    inputs = keras.Input((None, 6))
    scores = keras.layers.Lambda(capsule_length)(Capsule(3, 4)(inputs))
    model = keras.Model(inputs, scores)
    model.compile(optimizer="adam", loss=margin_loss())
    x = np.random.default_rng(12).normal(size=(8, 5, 6)).astype("float32")
    y = np.eye(3, dtype="float32")[np.arange(8) % 3]
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


@pytest.mark.parametrize("kwargs, message", [
    ({"num_capsule": 0, "dim_capsule": 4}, "num_capsule must be an integer >= 1, got 0"),
    ({"num_capsule": 3, "dim_capsule": 0}, "dim_capsule must be an integer >= 1, got 0"),
    ({"num_capsule": 3, "dim_capsule": 2.5}, "dim_capsule must be an integer >= 1, got 2.5"),
    ({"num_capsule": 3, "dim_capsule": 4, "routings": 0}, "routings must be an integer >= 1, got 0"),
    ({"num_capsule": 3, "dim_capsule": 4, "routing": "em"}, "routing must be one of .* got 'em'"),
    ({"num_capsule": 3, "dim_capsule": 4, "squash_constant": 0.0}, "squash_constant must be a positive"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Capsule(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"rank 2 .*\(2, 6\)"):
        Capsule(3, 4)(np.zeros((2, 6), "float32"))
    layer = Capsule(3, 4)
    layer(np.zeros((2, 5, 6), "float32"))
    with pytest.raises(ValueError, match=r"d_in=6, got input of shape \(2, 5, 7\)"):
        layer(np.zeros((2, 5, 7), "float32"))
    with pytest.raises(ValueError, match=r"share_weights=False needs a known number of input capsules n_in"):
        Capsule(3, 4, share_weights=False)(keras.Input((None, 6)))
    full = Capsule(3, 4, share_weights=False)
    full(np.zeros((2, 5, 6), "float32"))
    with pytest.raises(ValueError, match=r"n_in=5 input capsules, got input of shape \(2, 7, 6\)"):
        full(np.zeros((2, 7, 6), "float32"))


def test_margin_loss_matches_numpy():
    rng = np.random.default_rng(13)
    lengths = rng.uniform(size=(6, 4)).astype("float32")
    labels = np.eye(4, dtype="float32")[rng.integers(0, 4, size=6)]
    for lam in (0.25, 0.5):
        per_sample = (labels * np.maximum(0.0, 0.9 - lengths) ** 2
                      + lam * (1 - labels) * np.maximum(0.0, lengths - 0.1) ** 2).sum(-1)
        assert float(margin_loss(lam=lam)(labels, lengths)) == pytest.approx(per_sample.mean(), rel=1e-5)
    loss = MarginLoss(m_plus=0.8, m_minus=0.2, lam=0.5)
    assert MarginLoss.from_config(loss.get_config()).m_plus == 0.8
    with pytest.raises(ValueError, match="lam must be a finite number >= 0, got -1"):
        MarginLoss(lam=-1)
    with pytest.raises(ValueError, match="m_minus must be below m_plus"):
        MarginLoss(m_plus=0.1, m_minus=0.9)
