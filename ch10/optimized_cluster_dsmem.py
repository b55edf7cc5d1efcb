"""Clusters of 2 CTAs: each loads half of W and copies the other half from its peer (DSMEM)."""
from ch10._cluster_dsmem_common import ClusterWeights


class ClusterOfTwo(ClusterWeights):
    cluster_size = 2


get_benchmark = ClusterOfTwo

if __name__ == "__main__":
    from core.single import main
    main(ClusterOfTwo)
