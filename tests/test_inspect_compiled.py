"""`aisp tools inspect-compiled`: the code torch.compile generated for one side, from a fresh
process with empty compiler caches (a real Inductor compile on the CPU, ~10 s)."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core.inspect_compiled import collect

COMMON = '''
from core.benchmark import Benchmark, Workload


class Pointwise(Benchmark):
    supports_cpu = True

    def make_inputs(self, seed):
        return self.randn(64, 64, gen=self.generator(seed))

    def workload(self):
        return Workload(bytes=64 * 64 * 4)
'''
BASELINE = '''
from ._c_common import Pointwise


class Eager(Pointwise):
    def run(self, x):
        return (x * 2).relu().sum(-1)


get_benchmark = Eager
'''
OPTIMIZED = '''
import torch

from ._c_common import Pointwise


class Compiled(Pointwise):
    def setup(self, ctx):
        self.fn = torch.compile(lambda x: (x * 2).relu().sum(-1))
        self.fn(torch.zeros(64, 64))  # compile here, as a compile pair does

    def run(self, x):
        return self.fn(x)


get_benchmark = Compiled
'''


@pytest.fixture
def compiled_chapter(make_chapter, fake_root, monkeypatch):
    make_chapter("ch94", {"_c_common.py": COMMON, "baseline_c.py": BASELINE,
                          "optimized_c.py": OPTIMIZED})
    monkeypatch.setenv("AISP_ROOT", str(fake_root))
    return fake_root


def test_inspect_compiled_lists_the_kernels_inductor_made(compiled_chapter, tmp_path):
    out = tmp_path / "optimized"
    result = CliRunner().invoke(app, ["tools", "inspect-compiled", "ch94:c", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 output-code module(s), 1 kernel(s)" in result.output
    assert "cpp_fused_mul_relu_sum_0" in result.output  # x * 2, relu and sum fused in one
    copied = [p for p in out.glob("*.py")]
    assert len(copied) == 1 and "def call(" in copied[0].read_text()


def test_inspect_compiled_says_when_nothing_was_compiled(compiled_chapter, tmp_path):
    result = CliRunner().invoke(app, ["tools", "inspect-compiled", "ch94:c", "--side", "baseline",
                                      "--out", str(tmp_path / "baseline")])
    assert result.exit_code == 0, result.output
    assert "0 kernel(s)" in result.output and "nothing compiled" in result.output


def test_inspect_compiled_rejects_unknown_targets_and_sides(compiled_chapter):
    result = CliRunner().invoke(app, ["tools", "inspect-compiled", "ch94:nope"])
    assert result.exit_code == 2
    result = CliRunner().invoke(app, ["tools", "inspect-compiled", "ch94:c", "--side", "middle"])
    assert result.exit_code == 2 and "--side must be optimized or baseline" in result.output


def test_collect_skips_modules_that_are_not_output_code(tmp_path):
    cache = tmp_path / "cache" / "ab"
    cache.mkdir(parents=True)
    (cache / "kernel.py").write_text("import triton\n@triton.jit\ndef k(): pass\n")
    (cache / "out.py").write_text(
        "triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''\n...''')\n"
        "triton_red_fused_sum_1 = async_compile.triton('triton_red_fused_sum_1', '''...''')\n"
        "def call(args):\n    pass\n")
    code = collect(tmp_path / "cache", tmp_path / "out")
    assert code.kernels == {"out.py": ["triton_poi_fused_add_0", "triton_red_fused_sum_1"]}
    assert code.kernel_count == 2 and (tmp_path / "out" / "out.py").exists()
