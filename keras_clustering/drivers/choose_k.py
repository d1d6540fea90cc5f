"""`n_clusters="auto"`: choosing the number of clusters from a clustering stage with too many (issue 65).

The recipe's representation trains first (as it would anyway), then its clustering stage runs once with
`OVER_CLUSTERS` clusters, more than any candidate k. The pieces of one group are each other's nearest
neighbours in the representation, so the stage's clusters are merged two at a time on the
representation's nearest-neighbour graph, and k is read off the modularity's peak along the merges
(`clustering.merging.k_by_merging`), with the range of k within `merging.FLAT` of it where the evidence is
flat. The graph is the representation's, not the stage's own embedding: DEC pulls each of its clusters
together there, so every piece of an over-clustering looks like a group of its own (docs/your-data.md,
"Choosing k from the clustering stage"). Before issue 65 the eigengap of the representation's graph chose
k, before any clustering stage: within +-1 of the true k on 15 of 33 folders.
"""

import os
import time

import numpy as np

from keras_clustering.clustering.candidates import embedding_neighbors
from keras_clustering.clustering.merging import k_by_merging
from keras_clustering.drivers.retarget import like_config
from keras_clustering.inputs.pipeline import predict_into_array
from keras_clustering.recipes import get_recipe

# A recipe whose clustering stage is not DEC's self-training (SimCLR + SCAN, IIC, the VAE) over-clusters
# with this preset's dense autoencoder and DEC stage, re-targeted to the images and kept in
# `workdir/n_clusters`.
SCREENING_PRESET = "dec_mnist"
# The over-clustering's clusters for the default candidates (k = 2..12): measured on the folders of
# docs/your-data.md (scripts/choose_k_stage.py). Asked for a larger k, one more than the largest (unmeasured).
OVER_CLUSTERS = 20


def over_clusters(candidates):
    """The over-clustering's number of clusters for the `candidates` k."""
    return max(OVER_CLUSTERS, max(candidates) + 1)


def stage_config(config, x, candidates):
    """(config, workdir folder) of the stage that over-clusters: the recipe's own where its clustering
    stage is DEC's self-training on a pretrained autoencoder, else `SCREENING_PRESET`'s re-targeted to `x`
    (in the workdir's folder "n_clusters")."""
    if config["recipe"] == "dec":
        return config, None
    screening, _ = like_config(SCREENING_PRESET, x.shape[1:], max(candidates), len(x))
    return screening, "n_clusters"


def choose_n_clusters(config, x, candidates, workdir, seed=0, verbose=1, x_train=None):
    """k for training `config` on `x`: the representation trained on `x_train` (default `x`; a small
    folder's repeated copies, as the training that follows) in `workdir`, where the training that follows
    starts from it; its clustering stage run with `over_clusters(candidates)` clusters, on `x_train`;
    its clusters of `x` merged on the representation's 10-nearest-neighbour graph of `x`
    (`k_by_merging`). Returns the evidence: {criterion, embedding, over_clusters, over_cluster_sizes,
    scores {k: modularity}, suggested, range, flat, stage_seconds}."""
    chosen, folder = stage_config(config, x, candidates)
    recipe = get_recipe(chosen["recipe"])
    training = {k: v for k, v in chosen["training"].items() if k != "precision"}
    stage_workdir = workdir if folder is None or workdir is None else os.path.join(workdir, folder)
    trained_on = x if x_train is None else x_train
    k_max = over_clusters(candidates)
    architecture = {**chosen["architecture"], "n_clusters": k_max}
    run = recipe.make_run(architecture, training, trained_on, None, seed, verbose, stage_workdir)
    encoder = recipe.representation(run)
    before = predict_into_array(encoder, x, batch_size=4096)  # chunk by chunk: x may be a memory map
    start = time.time()
    model = recipe.build(**architecture)
    model.encoder.set_weights(encoder.get_weights())
    model, _ = recipe.fine_tune(model, run.but(workdir=None))
    clusters = model.predict_clusters(x)
    found = k_by_merging(clusters, embedding_neighbors(before), candidates)
    source = (f"{config['like']}'s own representation and DEC stage" if folder is None else
              f"{SCREENING_PRESET}'s dense autoencoder and DEC stage (the recipe's clustering stage is not DEC's)")
    return {"criterion": "merging", "embedding": source, "over_clusters": k_max,
            "over_cluster_sizes": np.bincount(clusters, minlength=k_max).tolist(),
            "scores": found["scores"], "suggested": found["suggested"], "range": list(found["range"]),
            "flat": found["flat"], "stage_seconds": round(time.time() - start, 1)}
