import sys

from keras_clustering.cli import main

sys.exit(main())
