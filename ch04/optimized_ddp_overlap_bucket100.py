"""DDP with 100 MB buckets: fewer, larger all-reduces (closer to peak bus bandwidth each),
but the first one starts later in backward and the last one is longer. Beside the default
25 MB it shows which side of that trade this step sits on."""
from ch04.optimized_ddp_overlap import OverlappedDdp


class BigBuckets(OverlappedDdp):
    bucket_cap_mb = 100


get_benchmark = BigBuckets

if __name__ == "__main__":
    from core.single import main
    main(BigBuckets)
