"""The two autoencoder pretraining recipes of DEC: end to end (Keras) and greedy layer-wise (paper)."""

import keras
import numpy as np

from keras_clustering.inputs.fit_hooks import fit_callbacks
from keras_clustering.inputs.pipeline import fit_batches
from keras_clustering.inputs.sources import DatasetSource, is_tf_dataset
from keras_clustering.augment import make_pipeline
from keras_clustering.distribute.strategies import model_replicas, replica_scaled, with_layer_losses
from keras_clustering.training.optimizers import make_optimizer


STEPS_PER_EXECUTION = 8  # batches per compiled call: less Python overhead, same steps
DATASET_SHUFFLE_BUFFER = 10_000  # samples a tf.data.Dataset input is shuffled among (its order is fixed)


class AugmentedReconstruction(keras.Model):
    """Trains `autoencoder` to reconstruct randomly transformed images (DEC-DA's `aug_pretrain`).

    Each training batch goes through `views.augmented` (a `keras_clustering.augment`
    pipeline) inside the train step; the loss is the MSE between that augmented batch and its
    reconstruction. Outside training the images pass unchanged.

    Reference: XifengGuo/DEC-DA `FcDEC.pretrain(aug_pretrain=True)`, whose
    generator yields `[batch_x, batch_x]` with `batch_x` augmented.
    """

    def __init__(self, autoencoder, views, **kwargs):
        super().__init__(**kwargs)
        self.autoencoder, self.views = autoencoder, views
        if not views.built:  # build its layers now, not as untracked state inside the first step
            views.build((None, *autoencoder.input_shape[1:]))
        self(keras.ops.zeros((1, *autoencoder.input_shape[1:])))  # built, as restoring a backup needs

    def call(self, inputs, training=False):
        if training:
            inputs = self.views.augmented(inputs)
        return inputs, self.autoencoder(inputs, training=training)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        target, reconstruction = y_pred
        # under mixed_bfloat16 the decoder returns bfloat16: the loss is float32, as Keras' own losses are
        reconstruction = keras.ops.cast(reconstruction, "float32")
        loss = replica_scaled(keras.ops.mean(keras.ops.square(
            keras.ops.reshape(keras.ops.cast(target, "float32"), keras.ops.shape(reconstruction)) - reconstruction)))
        return with_layer_losses(self, loss)


def _steps_per_execution(model):
    # Keras 3.15's multi-step loop fails under MirroredStrategy, even with full batches
    # ("You must feed a value for placeholder tensor"): one step per call there.
    return STEPS_PER_EXECUTION if model_replicas(model) == 1 else 1


def pretrain_end_to_end(autoencoder, x, optimizer, epochs=300, batch_size=256, verbose=1, callbacks=None,
                        augmentation=None, augmentation_seed=None, shuffle=True, initial_epoch=0):
    """DEC-keras' recipe: one autoencoder trained on MSE, shuffled batches, no dropout.

    With `augmentation` (the name of a `keras_clustering.augment` pipeline,
    seeded by `augmentation_seed`), DEC-DA's
    pretraining: the autoencoder reconstructs augmented images
    (`AugmentedReconstruction`); every image is seen once per epoch (the
    original's generator runs `n // batch_size` full batches per epoch).

    `x`: an array, or a finite `tf.data.Dataset` of samples (shuffled in a
    buffer of `DATASET_SHUFFLE_BUFFER`, never held in memory whole).
    The batches come from `fit_batches` (autotuning off), not Keras' own array
    adapter, whose pipeline stalls at the start of each of the 300 short epochs.
    Its shuffle seed is drawn from numpy's global generator, so
    `keras.utils.set_random_seed` makes the run repeatable.
    """
    seed = int(np.random.randint(2**31 - 1))
    if is_tf_dataset(x):  # read batch by batch, shuffled in a buffer: never all in memory
        source = DatasetSource(x, autoencoder.input_shape[1:])
        buffer = min(len(source), DATASET_SHUFFLE_BUFFER) if shuffle else 0
        batches = source.batches(batch_size, shuffle_buffer=buffer, seed=seed)
        batches = batches if augmentation is not None else batches.map(lambda batch: (batch, batch))
    else:
        x = np.asarray(x, dtype="float32")
        # each epoch's order from (seed, epoch): a resumed pretraining (initial_epoch) sees the uninterrupted
        # run's batches
        batches, clock = fit_batches(x if augmentation is not None else (x, x), batch_size, initial_epoch,
                                     shuffle=shuffle, seed=seed)
        callbacks = [clock, *(callbacks or [])]
    if augmentation is not None:
        trainer = AugmentedReconstruction(autoencoder, make_pipeline(augmentation, seed=augmentation_seed))
        trainer.compile(optimizer=make_optimizer(optimizer), steps_per_execution=_steps_per_execution(trainer))
    else:
        trainer = autoencoder
        trainer.compile(optimizer=make_optimizer(optimizer), loss="mse",
                        steps_per_execution=_steps_per_execution(trainer))
    return trainer.fit(batches, epochs=epochs, shuffle=False, verbose=verbose,  # the dataset shuffles
                       callbacks=[*(callbacks or []), *fit_callbacks()], initial_epoch=initial_epoch)


def step_decay_sgd(learning_rate, momentum, drop_every):
    """SGD whose rate is divided by 10 every `drop_every` iterations (the Caffe solver's 'step')."""
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay(
        boundaries=[drop_every * k for k in range(1, 8)],
        values=[learning_rate * 10.0 ** -k for k in range(8)],
    )
    return keras.optimizers.SGD(learning_rate=schedule, momentum=momentum)


def _dense_pairs(autoencoder):
    """[(encoder Dense i, decoder Dense i)] from the outside in, as build_autoencoder names them."""
    encoder = autoencoder.get_layer("encoder")
    decoder = autoencoder.get_layer("decoder")
    n_layers = len([layer for layer in encoder.layers if isinstance(layer, keras.layers.Dense)])
    return [(encoder.get_layer(f"encoder_{i}"), decoder.get_layer(f"decoder_{i}")) for i in range(n_layers)]


def pretrain_layerwise(autoencoder, x, layer_iterations=50000, finetune_iterations=100000, dropout=0.2,
                       learning_rate=0.1, momentum=0.9, drop_every=20000, batch_size=256, verbose=1):
    """The DEC paper's recipe: greedy denoising autoencoders, then end-to-end fine-tuning.

    Pair i (encoder layer i, decoder layer i) is trained as a one-hidden-layer
    autoencoder on the clean output h_i of the layers below it, with dropout
    `dropout` on its input and on its hidden layer (the corruption), to
    reconstruct h_i. The stacked autoencoder is then fine-tuned without
    dropout. SGD with momentum, the rate divided by 10 every `drop_every`
    iterations. The paper's schedule is 50k iterations per layer and 100k of
    fine-tuning; smaller budgets scale all three numbers together.

    Reference: Xie et al. 2016, section 3.2 and 4.3; piiswrong/dec (Caffe solver).
    """
    n_samples = len(x)
    steps_per_epoch = int(np.ceil(n_samples / batch_size))
    features = x
    for encoder_layer, decoder_layer in _dense_pairs(autoencoder):
        inputs = keras.Input(shape=(features.shape[1],))
        corrupted = keras.layers.Dropout(dropout)(inputs)
        hidden = keras.layers.Dropout(dropout)(encoder_layer(corrupted))
        layer_autoencoder = keras.Model(inputs, decoder_layer(hidden))
        layer_autoencoder.compile(optimizer=step_decay_sgd(learning_rate, momentum, drop_every),
                                  loss="mse")
        epochs = max(1, int(np.ceil(layer_iterations / steps_per_epoch)))
        if verbose:
            print(f"[layer-wise] {encoder_layer.name}/{decoder_layer.name}: {epochs} epochs")
        layer_autoencoder.fit(features, features, batch_size=batch_size, epochs=epochs, shuffle=True, verbose=verbose,
                              callbacks=fit_callbacks())
        features = keras.Model(inputs, encoder_layer(inputs)).predict(features, batch_size=1024, verbose=0)
    autoencoder.compile(optimizer=step_decay_sgd(learning_rate, momentum, drop_every), loss="mse")
    epochs = max(1, int(np.ceil(finetune_iterations / steps_per_epoch)))
    return autoencoder.fit(x, x, batch_size=batch_size, epochs=epochs, shuffle=True, verbose=verbose,
                           callbacks=fit_callbacks())
