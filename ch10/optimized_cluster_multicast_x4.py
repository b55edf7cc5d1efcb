"""Clusters of 4 CTAs: each multicasts a quarter of W to all four; L2 serves W once per four."""
from ch10._cluster_multicast_common import MulticastWeights


class MulticastToFour(MulticastWeights):
    cluster_size = 4


get_benchmark = MulticastToFour

if __name__ == "__main__":
    from core.single import main
    main(MulticastToFour)
