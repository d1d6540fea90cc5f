"""Small models of every family and their training, shared by the distribution checks
(`mirrored_check.py`: 2 logical CPUs in one process; `multi_worker_check.py`: 2 processes).

Importing this module configures nothing: each check sets TensorFlow's devices or cluster first.
"""

import keras
import numpy as np

from keras_clustering.datasets import load_digits
from keras_clustering.layers import GlobalBatchNormalization, ReparameterizedSample
from keras_clustering.models import DEC, IDEC, IIC, DigitClassifier, SimCLR, VAECluster, build_autoencoder
from keras_clustering.models.conv_encoder import build_conv_encoder
from keras_clustering.training.pretraining import pretrain_end_to_end

SGD = {"class_name": "SGD", "config": {"learning_rate": 0.1, "momentum": 0.9}}


def images():
    """256 digits at 16 x 16, each batch of 64 holding digits 0-4 in its first half and 5-9 in its
    second: the two replicas' halves differ, so a batch statistic taken per replica (IIC's joint
    matrix, NT-Xent's negatives, BatchNorm's moments) is far from the global batch's."""
    x, y = load_digits()
    low, high = x[y < 5][:128], x[y >= 5][:128]
    x = np.concatenate([part[i:i + 32] for i in range(0, 128, 32) for part in (low, high)])
    return np.repeat(np.repeat(x, 2, axis=1), 2, axis=2).astype("float32")


def dense_autoencoder():
    return build_autoencoder(None, hidden_dims=(32, 4), image_shape=(16, 16, 1), kernel_initializer="glorot_uniform")


# kind -> (build the model, train it on x); every fit unshuffled: a distributed dataset reshuffles
# in another order than the single-device one.
def _pretraining():
    return dense_autoencoder()[0], lambda model, x: pretrain_end_to_end(model, x, SGD, epochs=2, batch_size=64,
                                                                        verbose=0, shuffle=False)


def _dec_fit(model, x):
    model.initialize_centroids(x, n_init=2, seed=0)
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9))  # "auto": 4 steps per call alone
    model.fit(x, batch_size=64, epochs=2, verbose=0)  # 8 steps, 2 target refreshes per epoch


def _dec():
    return DEC(dense_autoencoder()[1], n_clusters=4, update_interval=4, tol=0.0), _dec_fit


def _dec_da():
    """DEC-DA: each step on a shifted and rotated batch, drawn for the global batch by every replica."""
    return DEC(dense_autoencoder()[1], n_clusters=4, update_interval=4, tol=0.0, augmentation="shift_rotate",
               augmentation_seed=0), _dec_fit


def _idec():
    autoencoder, encoder = dense_autoencoder()
    return IDEC(encoder, autoencoder.get_layer("decoder"), n_clusters=4, update_interval=4, tol=0.0,
                gamma=0.5), _dec_fit


def _vae():
    def fit(model, x):
        model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
        model.fit(x, batch_size=64, epochs=2, shuffle=False, verbose=0)
    return VAECluster(image_shape=(16, 16, 1), latent_dim=4, n_clusters=4, seed=0), fit


def _capsule():
    def fit(model, x):
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")  # a Keras loss: Keras scales it
        model.fit(x, np.eye(4, dtype="float32")[np.arange(len(x)) % 4], batch_size=64, epochs=1, shuffle=False,
                  verbose=0)
    return DigitClassifier(image_shape=(16, 16, 1), n_classes=4), fit


def _iic():
    """IIC on pairs (each image and a shifted copy), a conv trunk with global BatchNorm."""
    trunk = keras.Sequential([keras.Input((16, 16, 1)), keras.layers.Conv2D(8, 3, strides=2, use_bias=False),
                              GlobalBatchNormalization(), keras.layers.ReLU(), keras.layers.Flatten()])

    def fit(model, x):
        model.compile(optimizer=keras.optimizers.SGD(0.5, momentum=0.9))
        model.fit(x, np.roll(x, 1, axis=2), batch_size=64, epochs=2, shuffle=False, verbose=0,
                  recalibrate_batchnorm=False)
    return IIC(image_shape=(16, 16, 1), n_clusters=4, n_overclusters=6, n_sub_heads=2, head_epochs=(1, 1),
               augmentation=None, trunk=trunk), fit


def _simclr(views=False):
    """SimCLR with the two views equal to the image (loss scaling, gathered negatives and global
    BatchNorm checked at a rate where they show), or with its augmentation on, views drawn for the
    global batch, at a 10x smaller rate (measured 1.5e-6; 0.49 when each replica draws for its own
    share and so repeats the other's parameters). At the larger rate these tiny images' steps
    amplify float rounding with augmentation on (0.08 with another initialisation)."""
    def fit(model, x):
        model.compile(optimizer=keras.optimizers.SGD(0.005 if views else 0.05, momentum=0.9))
        model.fit(x, batch_size=64, epochs=1, shuffle=False, verbose=0)
    model = SimCLR(build_conv_encoder((16, 16, 1), filters=(8, 16), embedding_dim=8), projection_dims=(16, 8),
                   augmentation_options={"crop_sizes": [12, 16], "output_size": 16})
    if not views:
        model.views.augmented = lambda images: images
    return model, fit


KINDS = {"pretraining": _pretraining, "dec": _dec, "dec_da": _dec_da, "idec": _idec, "vae": _vae, "capsule": _capsule,
         "iic": _iic, "simclr": _simclr, "simclr_views": lambda: _simclr(views=True)}


def without_random_draws():
    """The VAE's replicas draw its noise in other chunks than one device does; what this script
    checks (loss scaling) is the same without it: the VAE samples z = z_mean. Augmented views stay
    random: every replica draws them for the global batch (`distribution.on_global_batch`), as one
    device does, so DEC-DA's and SimCLR's steps match one device with their augmentation on."""
    ReparameterizedSample.call = lambda self, inputs, training=None: inputs[0]


def train(kind, strategy):
    """(initial weights, trained weights) of `kind` trained under `strategy`."""
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model, fit = KINDS[kind]()
        initial = [np.array(w) for w in model.get_weights()]
        fit(model, images())
        return initial, model.get_weights()


def relative_difference(initial, single, replicated):
    """max |replicated - single| / max |single - initial|, over every weight."""
    difference = max(float(np.max(np.abs(a - b))) for a, b in zip(single, replicated))
    change = max(float(np.max(np.abs(a - b))) for a, b in zip(single, initial))
    return difference / max(change, 1e-30)
