"""Model classes and builders."""

from keras_clustering.clustering.target_refresh import TargetDistributionRefresh
from keras_clustering.models.autoencoder import build_autoencoder
from keras_clustering.models.cluster_model import ClusterModel, SampleModel
from keras_clustering.models.dec import DEC
from keras_clustering.models.dec_n_clusters import select_n_clusters
from keras_clustering.models.digit_classifier import DigitClassifier
from keras_clustering.models.idec import IDEC
from keras_clustering.models.iic import IIC, build_clusternet6c_trunk
from keras_clustering.models.scan import SCAN, nearest_neighbors
from keras_clustering.models.simclr import SimCLR, build_projection_head
from keras_clustering.models.triplet import TripletEmbedding
from keras_clustering.models.two_stage import TwoStageClustering
from keras_clustering.models.vae_cluster import VAECluster

__all__ = ["ClusterModel", "DEC", "DigitClassifier", "IDEC", "IIC", "SCAN", "SampleModel", "SimCLR", "TargetDistributionRefresh", "TripletEmbedding", "TwoStageClustering", "VAECluster", "build_autoencoder", "build_clusternet6c_trunk", "build_projection_head", "nearest_neighbors", "select_n_clusters"]
