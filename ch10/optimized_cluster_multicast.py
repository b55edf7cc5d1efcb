"""Clusters of 2 CTAs: each multicasts half of W to both; L2 serves W once per pair of CTAs."""
from ch10._cluster_multicast_common import MulticastWeights


class MulticastToTwo(MulticastWeights):
    cluster_size = 2


get_benchmark = MulticastToTwo

if __name__ == "__main__":
    from core.single import main
    main(MulticastToTwo)
