"""The shipped catalog: derived parameter counts match the published ones, every number has a source."""

import pytest

import triage
from triage.inputs import catalog
from triage.io.resources import catalog_file
from triage.io.yamlio import load_file

CAT = catalog.load()

# Published counts (safetensors totals of the Hugging Face checkpoints).
PUBLISHED = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "mistral-7b": 7_248_023_552,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-72b": 72_706_203_648,
    "llama-3.1-70b": 70_553_706_496,       # Llama 3 70B's shapes with a 131,072-token window
    "llama-3.1-405b": 405_853_388_800,
}


@pytest.mark.parametrize("key,count", sorted(PUBLISHED.items()))
def test_parameter_count_derived_from_architecture(key, count):
    model = CAT.models[key]
    assert model.params_override is None
    assert model.params == count
    assert model.published_params == count


# GPT-J 6B: the HF checkpoint's 6,050,882,784 (BishopFox/BrokenHill@7bd5a18 docs/memory_requirements.md); the
# derivation counts two norms per layer where GPT-J's parallel block has one (4,096 x 2 x 28 = 229,376 more) and
# no lm_head bias (50,400 fewer): 6,051,061,760, 0.003 % more
@pytest.mark.parametrize("key,published,tolerance", [("mixtral-8x7b", 46_702_792_704, 0.0),
                                                     ("deepseek-v2", 236e9, 0.01),
                                                     ("gpt-j-6b", 6_050_882_784, 3e-5)])
def test_counts_derived_within_a_stated_tolerance(key, published, tolerance):
    model = CAT.models[key]
    assert abs(model.params / published - 1) <= tolerance
    assert model.published_params == published


def test_deepseek_v2_caches_a_latent_per_layer():
    # 60 layers × (512 + 64) elements: 69,120 B per token at fp16, 1/57 of multi-head KV with 128 heads
    assert CAT.models["deepseek-v2"].kv_elements_per_token * 2 == 69_120


def test_llama2_7b_by_hand():
    # per layer: 4·4096² (q,k,v,o) + 3·4096·11008 (gate, up, down) + 2·4096 (norms) = 202,383,360
    m = CAT.models["llama-2-7b"]
    assert m.layer_params == 202_383_360
    assert m.params == 32 * 202_383_360 + 4096 + 2 * 32000 * 4096


def test_gqa_models_have_smaller_kv_per_token():
    assert CAT.models["llama-2-7b"].kv_elements_per_token * 2 == 512 * 1024
    assert CAT.models["llama-3-8b"].kv_elements_per_token * 2 == 128 * 1024


def test_params_without_vocab_are_all_read_per_step():
    m = CAT.models["course-7b"]
    assert m.params == m.body_params == 7.0e9
    assert m.embedding_params == m.lm_head_params == 0


@pytest.mark.parametrize("key", ["a100-80gb", "a100-40gb", "h100-sxm", "h100-pcie", "h200", "b200", "l40s",
                                 "rtx-4090", "mi300x", "gh200", "gb200", "mi325x"])
def test_required_hardware_present_with_sources(key):
    hw = CAT.hardware[key]
    assert hw.memory_bytes > 16 * 2**30 and hw.bandwidth_bytes_per_s > 5e11
    for field in ("memory", "bandwidth", "compute"):
        assert hw.source.get(field), f"{key} has no source for {field}"
    assert hw.interconnect_bytes_per_s and hw.interconnect_kind


def test_gh200_gb200_and_mi325x_from_their_datasheets():
    """Issue 24's systems, each number as its datasheet prints it (dense): GH200 144GB HBM3e at 4.9 TB/s and
    990 TFLOPS BF16; GB200 per GPU 372 GB / 2 = 186 GB, 8 TB/s, FP4 1,440 PFLOPS sparse / 72 GPUs / 2 = 10 PFLOPS;
    MI325X 8 stacks x 32 GiB = 256 GiB, 6.0 TB/s, FP16 1,307.4 TFLOPS dense (2,614.9 with sparsity)."""
    gh, gb, mi = (CAT.hardware[k] for k in ("gh200", "gb200", "mi325x"))
    assert (gh.memory_bytes, gh.bandwidth_bytes_per_s, gh.peak("bf16")) == (144e9, 4.9e12, 990e12)
    assert (gb.memory_bytes, gb.bandwidth_bytes_per_s, gb.peak("fp4")) == (186e9, 8e12, 10e15)
    assert (mi.memory_bytes, mi.bandwidth_bytes_per_s, mi.peak("fp16")) == (256 * 2**30, 6e12, 1307.4e12)
    # a Llama 2 7B decode step at batch 1 reads its 6.738e9 weights x 2 B = 13.477 GB less the embedding table it
    # only looks up (32,000 x 4,096 x 2 B = 0.262 GB), plus 4,096 tokens x 524,288 B of KV = 2.147 GB: 15.36 GB,
    # on the GB200 15.36 GB / 8 TB/s = 1.92 ms at the bound
    d = triage.evaluate({"id": "c", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.5}},
                        {"defaults": {"model": "llama-2-7b", "hardware": "gb200"},
                         "workloads": [{"name": "w", "phase": "decode", "context": 4096, "batch": 1}]},
                        analyse=False).to_dict()["cells"][0]["baseline"]
    assert d["time_s"]["theoretical"] == pytest.approx(d["bytes_per_step"] / 8e12)
    assert d["bytes_per_step"] == pytest.approx(13.477e9 - 0.262e9 + 2.147e9, rel=0.001)


def test_capacities_are_exact_bytes():
    assert CAT.hardware["a100-80gb"].memory_bytes == 81920 * 2**20 == 80 * 2**30
    assert CAT.hardware["a100-80gb"].bandwidth_bytes_per_s == 2.039e12


def test_every_model_entry_has_a_source():
    doc = load_file(catalog_file("models.yaml"))
    assert all(entry.get("source") for entry in doc.data.values())


def test_a_grid_share_is_split_over_its_phases_and_cells_weigh_alike_without_shares():
    from conftest import load_workloads

    m = load_workloads({"workloads": [{"name": "chat", "context": 4096, "share": 0.5}],
                        "grid": {"phase": ["decode", "prefill"], "context": [1024, 2048], "share": 0.5}})
    assert m.share.sum() == pytest.approx(1.0)
    assert m.share[m.block_idx == 0].sum() == pytest.approx(0.5)          # the workload keeps its half
    assert m.share[m.block_idx > 0].sum() == pytest.approx(0.5)           # both phases of the grid: half together
    plain = load_workloads({"defaults": {"hardware": "h100-sxm"}, "workloads": [{"name": "one", "context": 4096}],
                            "grid": {"context": [1024, 2048, 4096, 8192]}})
    assert list(plain.share) == pytest.approx([0.2] * 5)                   # five cells, alike


def test_the_shipped_catalog_meets_the_schema_and_cites_every_entry():
    """The shipped catalog is parsed without re-validation on every run (start-up); this is where its schema
    and its sources are checked, as catalog.load's docstring says: every hardware, model and engine entry
    valid, each with a source, and the default workload file valid."""
    assert catalog.check_shipped() == []
