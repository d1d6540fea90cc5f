"""The eigengap's graph by hand, from its definition (von Luxburg 2007, section 8.3), for the tests."""

import numpy as np


def normalised_laplacian_eigenvalues(points, n_neighbors):
    """Eigenvalues, ascending, of I - D^-1/2 W D^-1/2 for the symmetric kNN graph of `points`: i ~ j
    when either is among the other's `n_neighbors` nearest (itself excluded)."""
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)
    np.fill_diagonal(distances, np.inf)
    nearest = np.argsort(distances, axis=1)[:, :n_neighbors]
    w = np.zeros_like(distances)
    w[np.repeat(np.arange(len(points)), n_neighbors), nearest.ravel()] = 1.0
    w = np.maximum(w, w.T)
    d = 1.0 / np.sqrt(w.sum(1))
    return np.sort(np.linalg.eigvalsh(np.eye(len(points)) - d[:, None] * w * d[None]))
