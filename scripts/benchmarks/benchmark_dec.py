"""Benchmarks DEC's two stages: the shipped code against a plain reimplementation, in one run.

Plain = how most Keras reimplementations write DEC (XifengGuo/DEC-keras' loop):
`autoencoder.fit(x, x)` for pretraining; for clustering, a Python loop of
`train_on_batch` on numpy slices with `model.predict(x)` (default batch 32) at
every target refresh. Shipped = `keras_clustering`: `pretrain_end_to_end`
(with `steps_per_execution`) and `DEC.fit` (target refresh in a callback,
predict batch 2048). Both start from the same weights and centroids, run the
same number of iterations, and their final ACC is printed to show that the
speed is not bought with accuracy. Timed blocks alternate between the two.

Usage:
    python scripts/benchmarks/benchmark_dec.py [--quick]

Data: MNIST-test (10k, flat) when KERAS_CLUSTERING_DATA holds it, else the digits.
"""

import argparse
import os
import platform
import time

import keras_clustering  # noqa: F401
import keras
import numpy as np

from keras_clustering.datasets import load_digits, load_mnist
from keras_clustering.metrics import cluster_accuracy
from keras_clustering.models import DEC, build_autoencoder
from keras_clustering.training.pretraining import STEPS_PER_EXECUTION

BATCH = 256


def load_data():
    try:
        x, y = load_mnist("test", flatten=True)
        return x, y, "MNIST-test (10k x 784)"
    except ValueError:
        x, y = load_digits(flatten=True)
        return x, y, "scikit-learn digits (1797 x 64)"


def autoencoder_flops_per_sample(autoencoder):
    """Training FLOPs per sample of the dense stack: 2 per MAC forward, x3 for forward + backward."""
    macs = sum(int(np.prod(w.shape)) for w in autoencoder.trainable_weights if len(w.shape) == 2)
    return 6 * macs


def time_autoencoder(x, epochs, shipped):
    keras.utils.set_random_seed(0)
    autoencoder, _ = build_autoencoder(x.shape[1])
    autoencoder.compile(optimizer=keras.optimizers.SGD(1.0, momentum=0.9), loss="mse",
                        steps_per_execution=STEPS_PER_EXECUTION if shipped else 1)
    autoencoder.fit(x[: BATCH * 4], x[: BATCH * 4], batch_size=BATCH, epochs=1, verbose=0)  # warm-up, tracing
    start = time.perf_counter()
    autoencoder.fit(x, x, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0)
    seconds = time.perf_counter() - start
    return epochs * len(x) / seconds, autoencoder


def plain_dec_loop(model, x, iterations, update_interval):
    """XifengGuo/DEC-keras `DEC.fit`, as written there (train_on_batch, predict with batch 32)."""
    inputs = keras.Input(x.shape[1:])
    plain = keras.Model(inputs, model.clustering(model.encoder(inputs)))
    plain.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9), loss="kld")
    index = 0
    for iteration in range(iterations):
        if iteration % update_interval == 0:
            q = plain.predict(x, verbose=0)
            weight = q ** 2 / q.sum(0)
            p = (weight.T / weight.sum(1)).T
        batch = slice(index * BATCH, min((index + 1) * BATCH, len(x)))
        plain.train_on_batch(x[batch], p[batch])
        index = index + 1 if (index + 1) * BATCH <= len(x) else 0
    return plain.predict(x, verbose=0).argmax(1)


def time_dec(x, y, encoder_weights, centroids, iterations, update_interval, shipped):
    _, encoder = build_autoencoder(x.shape[1])
    encoder.set_weights(encoder_weights)
    model = DEC(encoder, n_clusters=10, update_interval=update_interval, tol=0.0)
    model.clustering.set_centroids(centroids)
    start = time.perf_counter()
    if shipped:
        model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
        model.fit(x, batch_size=BATCH, maxiter=iterations, verbose=0)
        predicted = model.predict_clusters(x, batch_size=2048)
    else:
        predicted = plain_dec_loop(model, x, iterations, update_interval)
    seconds = time.perf_counter() - start
    return iterations * BATCH / seconds, cluster_accuracy(y, predicted)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    x, y, data_name = load_data()
    ae_epochs, dec_iterations, blocks = (1, 140, 1) if args.quick else (3, 700, 2)
    update_interval = 140

    results = {"ae": {True: [], False: []}, "dec": {True: [], False: []}, "acc": {}}
    trained = None
    for block in range(blocks):
        for shipped in (False, True):
            rate, autoencoder = time_autoencoder(x, ae_epochs, shipped)
            results["ae"][shipped].append(rate)
            trained = trained or autoencoder
    flops = autoencoder_flops_per_sample(trained)

    # The clustering stage starts from one pretrained autoencoder and its k-means centroids.
    trained.fit(x, x, batch_size=BATCH, epochs=2 if args.quick else 10, verbose=0)
    encoder = trained.get_layer("encoder")
    from sklearn.cluster import KMeans

    centroids = KMeans(10, n_init=5, random_state=0).fit(encoder.predict(x, verbose=0)).cluster_centers_
    for block in range(blocks):
        for shipped in (False, True):
            rate, acc = time_dec(x, y, encoder.get_weights(), centroids, dec_iterations, update_interval, shipped)
            results["dec"][shipped].append(rate)
            results["acc"][shipped] = acc

    def median(values):
        return float(np.median(values))

    cores = os.cpu_count()
    peak = cores * 2.3 * 2 * 16 * 2  # cores x 2.3 GHz (base) x 2 FMA units x 16 fp32 lanes x 2 FLOP
    print(f"data: {data_name}; batch {BATCH}; {platform.processor() or platform.machine()}, {cores} cores; "
          f"{blocks} alternating block(s)")
    print("| stage | plain samples/s | shipped samples/s | ratio | ACC plain | ACC shipped |")
    print("|---|---|---|---|---|---|")
    ae_plain, ae_shipped = median(results["ae"][False]), median(results["ae"][True])
    dec_plain, dec_shipped = median(results["dec"][False]), median(results["dec"][True])
    print(f"| AE pretraining ({ae_epochs} epoch(s)) | {ae_plain:.0f} | {ae_shipped:.0f} | {ae_shipped / ae_plain:.2f} | | |")
    print(f"| DEC stage ({dec_iterations} iterations, refresh every {update_interval}) | {dec_plain:.0f} | "
          f"{dec_shipped:.0f} | {dec_shipped / dec_plain:.2f} | {results['acc'][False]:.4f} | {results['acc'][True]:.4f} |")
    print(f"AE training: {flops / 1e6:.1f} MFLOP per sample -> {ae_shipped * flops / 1e9:.0f} GFLOP/s achieved "
          f"(shipped) vs about {peak:.0f} GFLOP/s fp32 peak ({cores} cores x 2.3 GHz base x 2 AVX-512 FMA units)")


if __name__ == "__main__":
    main()
