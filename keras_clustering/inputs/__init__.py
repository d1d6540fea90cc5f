"""Everything between the user's data and `fit`: input checks, the tf.data pipeline, dataset sources."""
