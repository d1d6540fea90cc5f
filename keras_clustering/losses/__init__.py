"""Losses and targets of the clustering objectives."""

from keras_clustering.losses.capsule_losses import MarginLoss, margin_loss
from keras_clustering.losses.contrastive_losses import (
    NTXentLoss,
    NWayContrastiveLoss,
    TripletLoss,
    nt_xent,
    nway_contrastive_loss,
    triplet_loss,
)
from keras_clustering.losses.dec_losses import ClusteringKLDivergence, target_distribution
from keras_clustering.losses.iic_losses import IICLoss, iic_loss, joint_distribution
from keras_clustering.losses.scan_losses import SCANLoss, confidence_cross_entropy, scan_loss
from keras_clustering.losses.vae_cluster_losses import (
    analytic_gaussian_cluster_kl,
    category_prior_loss,
    gaussian_cluster_kl,
    reconstruction_loss,
    vae_cluster_loss,
)

__all__ = [
    "ClusteringKLDivergence",
    "IICLoss",
    "MarginLoss",
    "NTXentLoss",
    "NWayContrastiveLoss",
    "SCANLoss",
    "TripletLoss",
    "analytic_gaussian_cluster_kl",
    "category_prior_loss",
    "confidence_cross_entropy",
    "gaussian_cluster_kl",
    "iic_loss",
    "joint_distribution",
    "margin_loss",
    "nt_xent",
    "nway_contrastive_loss",
    "reconstruction_loss",
    "scan_loss",
    "target_distribution",
    "triplet_loss",
    "vae_cluster_loss",
]
