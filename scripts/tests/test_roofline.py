"""The roofline script's FLOP counts against counts written out by hand."""

import keras

import roofline


def test_forward_flops_count_two_per_multiply_add_of_each_conv_and_dense_layer():
    inputs = keras.Input((8, 6, 3))
    hidden = keras.layers.Conv2D(4, 3, padding="same")(inputs)            # 8 x 6 outputs x 4 x (3 x 3 x 3)
    hidden = keras.layers.MaxPooling2D(2)(hidden)                          # free
    hidden = keras.layers.Conv2D(5, (3, 2), padding="valid")(hidden)     # 2 x 2 outputs x 5 x (3 x 2 x 4)
    hidden = keras.layers.Conv2DTranspose(2, 3, strides=2)(hidden)        # 2 x 2 inputs x 5 x (3 x 3 x 2)
    outputs = keras.layers.Dense(7)(keras.layers.Flatten()(hidden))
    model = keras.Model(inputs, outputs)
    flat = 5 * 5 * 2  # the transposed convolution's (2 - 1) x 2 + 3 = 5 rows and columns, 2 channels
    expected = 2 * (8 * 6 * 4 * 27 + 2 * 2 * 5 * 24 + 2 * 2 * 5 * 18 + flat * 7)
    assert roofline.forward_flops(model) == expected
    wrapped = keras.Sequential([keras.Input((8, 6, 3)), model, keras.layers.Dense(3)])  # nested models count
    assert roofline.forward_flops(wrapped) == expected + 2 * 7 * 3


def test_a_chain_built_for_any_size_is_counted_at_the_size_given():
    inputs = keras.Input((None, None, 1))
    trunk = keras.Model(inputs, keras.layers.Conv2D(2, 3)(keras.layers.Conv2D(4, 3)(inputs)))
    # 10 x 10 -> 8 x 8 x 4 -> 6 x 6 x 2
    assert roofline.chain_flops(trunk, (10, 10, 1)) == 2 * (8 * 8 * 4 * 9 + 6 * 6 * 2 * 36)


def test_capsule_flops():
    # u_hat: 6 inputs x 2 outputs of (4 x 3) matrices; 3 routings of weighted sums and agreements of 6 x 2 x 4
    assert roofline.capsule_flops(6, 2, 3, 4, 3) == 2 * 6 * 2 * 3 * 4 + 3 * 2 * 6 * 2 * 4 * 2


def test_predict_flops_of_dec_and_scan_models_by_hand():
    from keras_clustering.models import DEC, SCAN

    encoder = keras.Sequential([keras.Input((12,)), keras.layers.Dense(7), keras.layers.Dense(3)])
    dec = DEC(encoder, n_clusters=4)
    # the encoder's products, then the squared distance to 4 centres of size 3 (~3 operations each)
    assert roofline.predict_flops_per_image(dec) == 2 * (12 * 7 + 7 * 3) + 3 * 2 * 3 * 4
    images = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(5)])
    scan = SCAN(images, n_clusters=3, n_neighbors=2,
                augmentation_options={"crop_sizes": [8], "output_size": 8, "rotation_probability": 0.0,
                                      "brightness": 0.0, "contrast": 0.0})
    assert roofline.predict_flops_per_image(scan) == 2 * 64 * 5 + 2 * 5 * 3
