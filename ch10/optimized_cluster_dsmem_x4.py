"""Clusters of 4 CTAs: each loads a quarter of W and copies three quarters from its peers."""
from ch10._cluster_dsmem_common import ClusterWeights


class ClusterOfFour(ClusterWeights):
    cluster_size = 4


get_benchmark = ClusterOfFour

if __name__ == "__main__":
    from core.single import main
    main(ClusterOfFour)
