"""Chapter 16 on the CPU: paged attention through the block table against gather + SDPA,
prefix-block sharing against recomputation, the piecewise decode step against the decoder's
own, batch buckets, and the pair files' CPU sides."""
from __future__ import annotations

import warnings

import pytest
import torch

from ch15.decoder import TINY, Decoder, cached_attention
from ch15.kv import ContiguousKV, PagedKV
from ch16._paged_attention_common import CPU_CFG, PagedBlockMask, build_paged_pool
from ch16._piece_graphs_common import (BUCKETS, attention, bucket_for, post_attention,
                                       pre_attention)
from ch16._prefix_cache_common import PrefixSharingKV
from core.benchmark import BenchContext

CPU = BenchContext(seed=0, device="cpu")


def flex_paged(kv: PagedKV, slots: torch.Tensor, lengths: torch.Tensor, q: torch.Tensor,
               full_blocks: bool = False):
    from torch.nn.attention.flex_attention import flex_attention

    nb, bs, hkv, d = kv.k.shape[1:]
    k = kv.k[0].view(1, nb * bs, hkv, d).transpose(1, 2)
    v = kv.v[0].view(1, nb * bs, hkv, d).transpose(1, 2)
    mask = PagedBlockMask(bs, nb, len(slots), "cpu", full_blocks)(kv.block_table[slots], lengths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "flex_attention called without torch.compile()"
        return flex_attention(q[:, :, None], k, v, block_mask=mask, enable_gqa=True)[:, :, 0], mask


def gather_sdpa(kv: PagedKV, slots: torch.Tensor, lengths: torch.Tensor, q: torch.Tensor):
    max_len = int(lengths.max())
    k, v = kv.read(0, slots, max_len)
    visible = (torch.arange(max_len) < lengths[:, None])[:, None]
    return cached_attention(q[:, None], k, v, visible)[:, 0]


@pytest.mark.parametrize("full_blocks", [False, True])
@pytest.mark.parametrize("lengths", [[47, 171, 66, 152], [16, 1, 33, 200]])
def test_flex_through_the_block_table_equals_gather_then_sdpa(lengths, full_blocks):
    gen = torch.Generator().manual_seed(1)
    kv, slots = build_paged_pool(CPU_CFG, lengths, 16, "cpu", gen)
    table = kv.block_table[slots]
    longest = table[max(range(len(lengths)), key=lengths.__getitem__)]
    assert longest[1] - longest[0] > 1  # grown round-robin: its blocks are scattered
    lens = torch.tensor(lengths)
    q = torch.randn(len(lengths), CPU_CFG.n_heads, CPU_CFG.head_dim, generator=gen)
    got, mask = flex_paged(kv, slots, lens, q, full_blocks)
    torch.testing.assert_close(got, gather_sdpa(kv, slots, lens, q), rtol=1e-5, atol=1e-5)
    n_blocks = (lens + 15) // 16
    if full_blocks:  # each sequence's blocks as full ones, then its last one as partial
        assert mask.full_kv_num_blocks.flatten().tolist() == (n_blocks - 1).tolist()
        assert mask.kv_indices[:, 0, 0, 0].tolist() == table.gather(1, (n_blocks - 1)[:, None]).flatten().tolist()
    else:  # every block partial (no full-block list): the decode kernel splits the row's own
        assert mask.full_kv_num_blocks is None
        assert mask.kv_num_blocks.flatten().tolist() == n_blocks.tolist()
        assert torch.equal(mask.kv_indices[:, 0, 0], table.to(torch.int32))


def test_paged_mask_hides_other_sequences_and_the_tail():
    gen = torch.Generator().manual_seed(2)
    kv, slots = build_paged_pool(CPU_CFG, [40, 40], 16, "cpu", gen)
    lens = torch.tensor([40, 40])
    q = torch.randn(2, CPU_CFG.n_heads, CPU_CFG.head_dim, generator=gen)
    before, _ = flex_paged(kv, slots, lens, q)
    # changing K/V past sequence 0's length (its last block's tail) and in nobody's block
    last0 = int(kv.block_table[slots[0], 2])
    kv.k[0, last0, 8:] += 100.0
    kv.k[0, 0] += 100.0  # the null block
    after, _ = flex_paged(kv, slots, lens, q)
    torch.testing.assert_close(after, before)
    kv.k[0, last0, :8] += 100.0  # inside sequence 0: its output must move, sequence 1's not
    moved, _ = flex_paged(kv, slots, lens, q)
    assert not torch.allclose(moved[0], before[0])
    torch.testing.assert_close(moved[1], before[1])


def test_paged_pair_cpu_sides_agree():
    """...and the Flex side asks for split KV over partial blocks (the plumbing: on the CPU
    Flex runs eagerly and the kernel options have no kernel to reach)."""
    from ch16._paged_attention_common import KERNEL_OPTIONS
    from ch16.baseline_paged_attention import GatherThenSdpa
    from ch16.optimized_paged_attention import FlexPagedDecode

    sides = [GatherThenSdpa(), FlexPagedDecode()]
    for s in sides:
        s.ctx = CPU
        s.setup(CPU)
    calls = []
    real = sides[1].flex
    sides[1].flex = lambda *a, **kw: calls.append(kw) or real(*a, **kw)
    q = sides[0].make_inputs(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [s.run(q) for s in sides]
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    (kw,) = calls
    assert kw["kernel_options"] is KERNEL_OPTIONS and KERNEL_OPTIONS["SPLIT_KV"] > 1
    assert kw["enable_gqa"] is True and kw["block_mask"].full_kv_num_blocks is None
    assert not sides[1].block_mask.full_blocks


def test_shared_prefix_blocks_are_referenced_and_refcounted():
    kv = PrefixSharingKV(TINY, num_blocks=20, max_seqs=4, block_size=16)
    src = kv.allocate(64)
    a = kv.allocate_sharing(src, 64, 80)
    b = kv.allocate_sharing(src, 64, 80)
    shared = kv.blocks_of(src)
    assert kv.blocks_of(a)[:4] == shared == kv.blocks_of(b)[:4]
    assert kv.blocks_of(a)[4] != kv.blocks_of(b)[4]
    assert kv.block_table[a, :4].tolist() == shared
    assert kv.num_free_blocks == 19 - 6 and kv.refcount(shared[0]) == 3
    kv.free(src)
    kv.free(a)
    assert kv.num_free_blocks == 19 - 5 and kv.refcount(shared[0]) == 1  # b still holds them
    kv.free(b)
    assert kv.num_free_blocks == 19 and kv.refcount(shared[0]) == 0
    with pytest.raises(ValueError):
        kv.allocate_sharing(kv.allocate(64), 40, 80)  # not whole blocks


def test_prefix_reuse_gives_the_logits_of_recomputation():
    from ch16.baseline_prefix_cache import RecomputePrefix
    from ch16.optimized_prefix_cache import CachedPrefix

    base, opt = RecomputePrefix(), CachedPrefix()
    for s in (base, opt):
        s.ctx = CPU
        s.setup(CPU)
    suffix = base.make_inputs(7)
    ref = base.run(suffix)
    got = opt.run(suffix)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    assert torch.equal(got.argmax(-1), ref.argmax(-1))
    # and against the no-cache forward over the full prompts
    full = torch.cat([base.prefix.expand(len(suffix), -1), suffix], dim=1)
    torch.testing.assert_close(got, base.model(full)[:, -1], rtol=1e-4, atol=1e-4)
    # the optimized side really reads the cached prefix: corrupt it and the logits move
    opt.kv.k[:, opt.kv.blocks_of(0)] += 1.0
    assert not torch.allclose(opt.run(suffix), ref, atol=1e-3)


def test_bucket_padding_picks_the_smallest_bucket_that_fits():
    assert [bucket_for(n) for n in (1, 2, 3, 5, 8, 9, 17, 20, 24, 25, 32)] == \
        [1, 2, 4, 8, 8, 16, 24, 24, 24, 32, 32]
    assert bucket_for(20) - 20 == 4 and 24 in BUCKETS
    with pytest.raises(ValueError):
        bucket_for(33)


@torch.no_grad()
def test_piecewise_step_with_padding_equals_the_decoders_decode():
    """The cut step (pre-attention / attention / post-attention), padded to a bucket as the
    graph sides run it, gives the decoder's own decode logits for the real rows."""
    model = Decoder(TINY, seed=0)
    kv = ContiguousKV(TINY, 9)
    gen = torch.Generator().manual_seed(3)
    kv.k.copy_(torch.randn(kv.k.shape, generator=gen))
    kv.v.copy_(torch.randn(kv.v.shape, generator=gen))
    n, size, pad_slot = 5, bucket_for(5), 8
    tokens = torch.randint(0, TINY.vocab, (n,), generator=gen)
    slots, positions = torch.arange(n), torch.randint(10, 60, (n,), generator=gen)
    kv_len = int(positions.max()) + 1
    ref = model.decode(tokens, kv, slots, positions, max_len=kv_len)

    pt = torch.zeros(size, dtype=torch.long)
    ps = torch.full((size,), pad_slot)
    pp = torch.zeros(size, dtype=torch.long)
    pt[:n], ps[:n], pp[:n] = tokens, slots, positions
    pos = pp[:, None]
    cos, sin = model.rope_cos[pos][:, :, None], model.rope_sin[pos][:, :, None]
    visible = (torch.arange(kv_len) <= pos)[:, None, :]
    x = model.embed[pt][:, None]
    for layer, block in enumerate(model.blocks):
        q, k, v = pre_attention(block, x, cos, sin)
        x = post_attention(block, x, attention(kv, layer, q, k, v, ps, pos, kv_len, visible))
    got = model._logits(x[:, 0])[:n]
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


def test_flash_sdp_sides_agree_on_cpu():
    from ch16.baseline_flash_sdp import SdpaMaskTensor
    from ch16.optimized_flash_sdp import SdpaIsCausal

    sides = [SdpaMaskTensor(), SdpaIsCausal()]
    for s in sides:
        s.ctx = CPU
        s.setup(CPU)
    qkv = sides[0].make_inputs(1)
    torch.testing.assert_close(sides[1].run(qkv), sides[0].run(qkv), rtol=1e-5, atol=1e-5)
    assert sides[0].mask.shape == (256, 256) and not sides[0].mask[0, 1] and sides[0].mask[1, 0]
