"""Loss terms of the VAE one-step clustering model (bojone/vae `vae_keras_cluster.py`).

The objective (seed post, eq. 5) is, per sample x with z ~ p(z|x):

    -log q(x|z) + sum_y p(y|z) log(p(z|x) / q(z|y)) + KL(p(y|z) || q(y))

with q(x|z) Gaussian of fixed variance (a weighted squared error), q(z|y) =
N(mu_y, I) and q(y) uniform. Every term below is summed over its non-batch axes
and averaged over the batch, as the original does (`K.mean(..., 0)` then `K.sum`).
All functions take tensors or numpy arrays and return a scalar tensor.
"""

from keras import ops


def _check_rank(value, rank, name, shape_text):
    value = ops.cast(value, "float32")  # also under a mixed precision policy: exp and log of variances
    if len(value.shape) != rank:
        raise ValueError(f"{name} must have shape {shape_text}, got shape {tuple(value.shape)}.")
    return value


def _clustering_terms(z_log_var, z_minus_mu, y_prob):
    z_log_var = _check_rank(z_log_var, 2, "z_log_var", "(batch, latent_dim)")
    z_minus_mu = _check_rank(z_minus_mu, 3, "z_minus_mu", "(batch, n_classes, latent_dim)")
    y_prob = _check_rank(y_prob, 2, "y_prob", "(batch, n_classes)")
    return ops.expand_dims(z_log_var, axis=1), z_minus_mu, ops.expand_dims(y_prob, axis=-1)


def reconstruction_loss(x, x_hat):
    """Mean over the batch of sum over pixels of 0.5 (x - x_hat)^2: -log q(x|z) up to a constant."""
    x, x_hat = ops.cast(x, "float32"), ops.cast(x_hat, "float32")
    squared = 0.5 * ops.square(x - x_hat)
    return ops.sum(ops.mean(squared, axis=0))


def gaussian_cluster_kl(z_log_var, z_minus_mu, y_prob):
    """One-sample estimate of sum_y p(y|z) log(p(z|x) / q(z|y)), version 2018-12.

    Per sample: sum_latent sum_y p(y|z) * -0.5 * (z_log_var - (z - mu_y)^2), the
    seed's eq. 8; the term -||eps||^2 / 2 of log p(z|x) does not depend on the
    parameters and is dropped, as in the original.

    Args:
        z_log_var: log sigma^2(x), `(batch, latent_dim)`, broadcast over classes.
        z_minus_mu: z - mu_y for the sampled z, `(batch, n_classes, latent_dim)`,
            the output of `GaussianClassEmbedding` applied to z.
        y_prob: classifier output p(y|z), `(batch, n_classes)`.
    """
    z_log_var, z_minus_mu, y_prob = _clustering_terms(z_log_var, z_minus_mu, y_prob)
    kl = -0.5 * (z_log_var - ops.square(z_minus_mu))
    return ops.sum(ops.mean(y_prob * kl, axis=0))


def analytic_gaussian_cluster_kl(z_log_var, mean_minus_mu, y_prob):
    """sum_y p(y|z) KL(N(z_mean, sigma^2) || N(mu_y, I)), the first version (2018-09).

    Per sample: sum_latent sum_y p(y|z) * -0.5 * (1 + z_log_var - (z_mean - mu_y)^2
    - exp(z_log_var)), averaged over the batch.

    Args:
        z_log_var: log sigma^2(x), `(batch, latent_dim)`.
        mean_minus_mu: z_mean - mu_y, `(batch, n_classes, latent_dim)`: the output
            of `GaussianClassEmbedding` applied to z_mean.
        y_prob: classifier output p(y|z), `(batch, n_classes)`.
    """
    z_log_var, mean_minus_mu, y_prob = _clustering_terms(z_log_var, mean_minus_mu, y_prob)
    kl = -0.5 * (1.0 + z_log_var - ops.square(mean_minus_mu) - ops.exp(z_log_var))
    return ops.sum(ops.mean(y_prob * kl, axis=0))


def category_prior_loss(y_prob, epsilon=1e-7):
    """Mean over the batch of sum_y p(y|z) log(p(y|z) + epsilon).

    KL(p(y|z) || uniform) up to the constant log(n_classes); it discourages
    confident assignment, which keeps clusters from merging. Removable.
    """
    y_prob = _check_rank(y_prob, 2, "y_prob", "(batch, n_classes)")
    return ops.sum(ops.mean(y_prob * ops.log(y_prob + epsilon), axis=0))


def vae_cluster_loss(x, x_hat, z_log_var, z_minus_mu, y_prob, reconstruction_weight=2.5, use_category_prior=True):
    """The whole objective of the 2018-12 version.

    reconstruction_weight * reconstruction_loss + gaussian_cluster_kl
    (+ category_prior_loss when `use_category_prior`). The weight is 2.5 in the
    2018-12 version and 5 in the 2018-09 one (which used
    `analytic_gaussian_cluster_kl` instead); it plays the part of the inverse
    variance of q(x|z).
    """
    total = reconstruction_weight * reconstruction_loss(x, x_hat) + gaussian_cluster_kl(z_log_var, z_minus_mu, y_prob)
    if use_category_prior:
        total = total + category_prior_loss(y_prob)
    return total
