"""Config overlays merged onto a small synthetic base config (no simulator config is copied here)."""

import functools
from pathlib import Path

import pytest

from simflow.errors import UserError
from simflow.sim.config import (
    INSTRUMENTATION,
    config_names,
    instrument,
    l2_bytes,
    load_config,
    merge,
    parse_options,
    parse_overlay,
    tokenize,
    write_run_config,
)

# The simulator's config syntax: '#' comments, a quoted value over two lines, a repeated option
# (the last wins), a flag-like option with a value, and a last line with no newline.
BASE = """# toy base config
-gpgpu_n_clusters 4   # clusters
-gpgpu_n_mem 2
-gpgpu_clock_domains 1000.0:1000.0:1000.0:800.0
-gpgpu_dram_timing_opt "nbk=16:CCD=1:
                        CL=12:WL=2"
-gpgpu_flush_l1_cache 1
-gpgpu_n_mem 4
-network_mode 2
#-inter_config_file toy.icnt"""


def fake_simulator(tmp_path: Path) -> Path:
    base = tmp_path / "sim" / "configs" / "tested-cfgs" / "TOY"
    base.mkdir(parents=True)
    (base / "gpgpusim.config").write_text(BASE)
    (base / "toy.icnt").write_text("topology = fly;\n")
    return tmp_path / "sim"


def test_tokenize_like_the_simulator():
    tokens = tokenize(BASE)
    assert tokens[:2] == ["-gpgpu_n_clusters", "4"]
    assert '"nbk=16:CCD=1: CL=12:WL=2"' in tokens
    assert "#-inter_config_file" not in " ".join(tokens) and "clusters" not in tokens


def test_parse_options_keeps_order_and_repeats():
    pairs = parse_options(BASE)
    assert [name for name, _ in pairs] == ["gpgpu_n_clusters", "gpgpu_n_mem", "gpgpu_clock_domains",
                                           "gpgpu_dram_timing_opt", "gpgpu_flush_l1_cache", "gpgpu_n_mem",
                                           "network_mode"]
    assert parse_options("-flag -other 3") == [("flag", ""), ("other", "3")]
    assert parse_options("-offset -1") == [("offset", "-1")]


def test_merge_replaces_in_place_appends_new_and_last_occurrence_wins():
    merged, added = merge(BASE, {"gpgpu_n_clusters": "8", "gpgpu_max_insn": "1000"})
    assert merged[0] == ("gpgpu_n_clusters", "8")
    assert dict(merged)["gpgpu_n_mem"] == "4"  # the base's later line wins, once
    assert [n for n, _ in merged].count("gpgpu_n_mem") == 1
    assert merged[-1] == ("gpgpu_max_insn", "1000") and added == ["gpgpu_max_insn"]


def test_written_config_reads_back_to_the_same_options(tmp_path):
    root = fake_simulator(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    config = parse_overlay('base = "TOY"\n[options]\ngpgpu_n_clusters = 8\ngpgpu_perf_sim_memcpy = true\n'
                           'gpgpu_cache_dl1 = "S:4:128:64,L:T:m:L:L"\n', "toy8")
    written = write_run_config(config, run, root)
    text = (run / "gpgpusim.config").read_text()
    assert text.startswith("# simflow config toy8: base TOY")
    pairs = dict(parse_options(text))
    assert pairs["gpgpu_n_clusters"] == "8" and pairs["gpgpu_perf_sim_memcpy"] == "1"
    assert pairs["gpgpu_dram_timing_opt"] == '"nbk=16:CCD=1: CL=12:WL=2"'
    assert pairs["gpgpu_cache_dl1"] == "S:4:128:64,L:T:m:L:L" and pairs["gpgpu_n_mem"] == "4"
    assert written.added == ("gpgpu_perf_sim_memcpy", "gpgpu_cache_dl1")
    assert (run / "toy.icnt").read_text() == "topology = fly;\n"  # companion files come along
    other = tmp_path / "run2"
    other.mkdir()
    again = write_run_config(parse_overlay('base = "TOY"\n[options]\ngpgpu_n_clusters = 16\n', "toy16"),
                             other, root)
    assert again.hash != written.hash


def test_l2_bytes_is_a_sub_partitions_slice_times_the_sub_partitions(tmp_path):
    """SM7_QV100's L2: 32 sets x 128-byte lines x 24 ways a sub-partition, 32 channels of 2: 6 MB (the V100's); the
    older form without the sector letter, a cut GPU's fewer channels, and a config that names no L2."""
    volta = {"gpgpu_cache:dl2": "S:32:128:24,L:B:m:L:P,A:192:4,32:0,32", "gpgpu_n_mem": "32",
             "gpgpu_n_sub_partition_per_mchannel": "2"}
    assert l2_bytes(volta) == 6 * 1024 * 1024
    assert l2_bytes({**volta, "gpgpu_n_mem": "8"}) == 1536 * 1024
    assert l2_bytes({"gpgpu_cache:dl2": "64:128:8,L:B:m:W:L,A:32:4,4", "gpgpu_n_mem": "6"}) == 6 * 64 * 128 * 8
    assert l2_bytes(dict(parse_options(BASE))) == 0
    written = tmp_path / "run"
    written.mkdir()
    write_run_config(parse_overlay('base = "TOY"\n[options]\n"gpgpu_cache:dl2" = "S:4:128:8,L:B:m:L:P"\n', "toy"),
                     written, fake_simulator(tmp_path))  # what the sampler reads it from: the written config
    assert l2_bytes(dict(parse_options((written / "gpgpusim.config").read_text()))) == 4 * 128 * 8 * 4


def test_unknown_base_lists_what_the_simulator_has(tmp_path):
    root = fake_simulator(tmp_path)
    with pytest.raises(UserError, match="has no tested config 'SM9_NOPE'; it has: TOY"):
        write_run_config(parse_overlay('base = "SM9_NOPE"\n', "x"), tmp_path, root)


@pytest.mark.parametrize("text,message", [
    ('base = "TOY"\nbogus = 1\n', "unknown key.*bogus.*valid keys: base, description, options"),
    ("[options]\nx = 1\n", "'base' must name a tested config"),
    ('base = "TOY"\n[options]\n"-gpgpu_n_mem" = 1\n', "without the leading dash"),
    ('base = "TOY"\n[options]\nx = [1, 2]\n', "must be a number, string or boolean"),
    ('base = "TOY"\noptions = 3\n', r"\[options\] must be a table"),
    ("base = \n", "not valid TOML"),
])
def test_overlay_mistakes_are_named(text, message):
    with pytest.raises(UserError, match=message):
        parse_overlay(text, "mine")


def test_shipped_configs():
    assert {"SM7_QV100", "SM7_QV100_small"} <= set(config_names())
    assert load_config("SM7_QV100").options == {}
    small = load_config("SM7_QV100_small")
    assert small.base == "SM7_QV100" and small.options == {"gpgpu_n_clusters": "8", "gpgpu_n_mem": "8"}
    with pytest.raises(UserError, match="unknown simulator config 'SM8'; valid configs: .*SM7_QV100_small"):
        load_config("SM8")


def test_user_overlay_by_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('base = "SM7_QV100"\ndescription = "mine"\n[options]\ngpgpu_max_cycle = 100000\n')
    config = load_config(str(path))
    assert (config.name, config.options) == ("mine", {"gpgpu_max_cycle": "100000"})
    with pytest.raises(UserError, match="no config file"):
        load_config(str(tmp_path / "absent.toml"))


def test_instrumentation_prints_progress_without_changing_the_model(tmp_path):
    root = fake_simulator(tmp_path)
    plain, overlaid = tmp_path / "plain", tmp_path / "overlaid"
    plain.mkdir()
    overlaid.mkdir()
    written = write_run_config(parse_overlay('base = "TOY"\n', "toy"), plain, root)
    pairs = dict(parse_options((plain / "gpgpusim.config").read_text()))
    assert pairs["trace_enabled"] == "1" and pairs["trace_components"] == "LIVENESS"
    assert pairs["liveness_message_freq"] == "0" and pairs["gpgpu_runtime_stat"] == "500:10"  # base freq kept
    assert written.instrumentation["gpgpu_runtime_stat"] == "500:10"
    # an overlay that sets an instrumentation option wins; the model's hash ignores instrumentation
    user = write_run_config(parse_overlay('base = "TOY"\n[options]\ngpgpu_runtime_stat = "2000:2"\n'
                                          'trace_enabled = false\n', "mine"), overlaid, root)
    pairs = dict(parse_options((overlaid / "gpgpusim.config").read_text()))
    assert pairs["gpgpu_runtime_stat"] == "2000:2" and pairs["trace_enabled"] == "0"
    assert set(user.instrumentation) == {"trace_components", "liveness_message_freq"}
    assert instrument([("gpgpu_runtime_stat", "1000:2")], {}) == {**INSTRUMENTATION, "gpgpu_runtime_stat": "1000:12"}
    assert instrument([], {})["gpgpu_runtime_stat"] == "500:10"


def test_a_config_is_parsed_once_for_its_text_and_again_once_edited(tmp_path, monkeypatch):
    from simflow.sim import config as config_module

    overlay = tmp_path / "mine.toml"
    overlay.write_text('base = "SM7_QV100"\n[options]\ngpgpu_n_clusters = 40\n')
    parses = []
    monkeypatch.setattr(config_module, "_parsed", functools.lru_cache(maxsize=64)(
        lambda *a: parses.append(a[1]) or config_module.parse_overlay(*a)))
    first = config_module.load_config(str(overlay))
    assert config_module.load_config(str(overlay)) is first and parses == ["mine"]
    overlay.write_text('base = "SM7_QV100"\n[options]\ngpgpu_n_clusters = 20\n')
    assert config_module.load_config(str(overlay)).options["gpgpu_n_clusters"] == "20" and len(parses) == 2
