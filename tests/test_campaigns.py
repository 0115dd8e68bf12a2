"""measure/campaigns.py: each serving campaign's arrival pattern and scheduler flags (data/measurements/campaigns.toml),
the rows' own columns over them, their validation, and the flags over a group of rows."""
import numpy as np

from llm_codesign.measure import campaigns
from llm_codesign.measure.validate import row_problem
from llm_codesign.spec.engines import SGLANG, get_engine


def test_campaign_settings_follow_the_scripts_and_rows_override_them():
    row = {"source": "inferencex https://github.com/x/actions/runs/1", "backend": "sglang", "gpu": "b200", "weight_dtype": "fp8_block",
           "tp": "8", "isl": "1024", "osl": "1024", "concurrency": "32"}
    s = campaigns.settings(row)
    # dsr1_fp8_b200.sh at TP8: chunk and prompt budget 32768, 128 running and graphed, a poll every 30 iterations from 16 requests
    assert (s["arrival"], s["max_num_tokens"], s["max_prefill_tokens"], s["max_running_requests"], s["cuda_graph_max_bs"],
            s["recv_interval"], s["ignore_eos"]) == ("closed_loop", 32768, 32768, 128, 128, 30, True)
    assert campaigns.settings({**row, "concurrency": "8"})["recv_interval"] == 10
    assert campaigns.settings({**row, "recv_interval": "5", "arrival": "burst"})["recv_interval"] == 5.0
    assert campaigns.settings({**row, "arrival": "burst"})["arrival"] == "burst"
    assert campaigns.settings({"source": "aiconfigurator-core-0.12.0-silicon-sample:x"})["arrival"] == "waves"
    # a row of no campaign: the tool's default (spec.harness.DEFAULT_ARRIVAL)
    assert campaigns.settings({"source": "someone else's runs"}) == {"arrival": "waves", "max_num_tokens": None}
    # trtllm-bench's published runs: identical requests kept in step
    assert campaigns.settings({"source": "trtllm-best-perf-deepseek-r1:b200-min-latency"})["arrival"] == "waves"


def test_a_row_whose_batch_cannot_be_read_says_which():
    """The budget rules size the engine from the row's requests per attention-DP rank: a concurrency or attention_dp that is
    not a whole number is named (the max_batch_size rule was skipped quietly), and the ceiling is exact (513 over 4: 129)."""
    assert campaigns.problem({"concurrency": "many"}, 4) == "line 4 concurrency: 'many' is not valid; a whole number of at least 1 or empty"
    assert campaigns.problem({"concurrency": "64", "attention_dp": "0.5"}, 9) == (
        "line 9 attention_dp: '0.5' is not valid; a whole number of at least 1 or empty")
    row = {"source": "aiconfigurator-core-0.12.0-silicon-sample:x", "backend": "vllm", "isl": "1024", "osl": "1024"}
    assert campaigns.problem({**row, "concurrency": "513", "attention_dp": "4"}, 2) is None
    assert campaigns.settings({**row, "concurrency": "513", "attention_dp": "4"})["max_num_tokens"] == 1024 + 129 + 1500


def test_a_row_with_a_bad_harness_column_says_which():
    assert row_problem({"arrival": "poisson"}, 7) == "line 7 arrival: 'poisson' is not valid; one of waves, closed_loop, burst or empty"
    assert row_problem({"recv_interval": "0.5"}, 3) == "line 3 recv_interval: '0.5' is not valid; a whole number of at least 1 or empty"
    assert row_problem({"ignore_eos": "maybe"}, 2) == "line 2 ignore_eos: 'maybe' is not valid; true or false or empty"
    # a harness's rounds: whole, or inf for the steady state alone (SchedulerFlags.rounds' default)
    assert row_problem({"rounds": "inf"}, 5) is None and row_problem({"rounds": "20"}, 5) is None
    assert row_problem({"rounds": "0.5"}, 5) == "line 5 rounds: '0.5' is not valid; a whole number of at least 1, or inf or empty"
    # the steps a build's scheduler queues ahead of a new request (SchedulerFlags.queued_steps): 0 (synchronous) to 1
    assert row_problem({"queued_steps": "0"}, 4) is None and row_problem({"queued_steps": "1"}, 4) is None
    assert row_problem({"queued_steps": "2"}, 4) == "line 4 queued_steps: '2' is not valid; a number of steps from 0 to 1 or empty"


def test_group_flags_keep_each_rows_value_and_the_engines_defaults():
    b200 = {"source": "inferencex https://github.com/x/actions/runs/1", "backend": "sglang", "gpu": "b200", "weight_dtype": "nvfp4",
            "tp": "8", "isl": "1024", "osl": "1024"}
    sets = [campaigns.settings({**b200, "concurrency": c}) for c in ("4", "64")]
    f = campaigns.group_flags(sets, SGLANG)
    assert f.recv_interval.tolist() == [10.0, 30.0] and f.cuda_graph_max_bs.tolist() == [256.0, 256.0]
    assert f.ignore_eos.tolist() == [True, True] and np.isinf(f.max_prefill_tokens).all()  # the fp4 script sets no prompt budget
    # mixed_chunk: the engine's own where no row states it, but a stated value per row where one does
    assert campaigns.group_flags([{}, {"mixed_chunk": True}], SGLANG).mixed_chunk.tolist() == [False, True]
    assert campaigns.group_flags([{"arrival": "waves", "max_num_tokens": None}], get_engine("trtllm")) is None


def test_inferencex_prefill_ranks_follow_the_bootstrap_room():
    # the campaign's SGLang recipes set --load-balance-method round_robin on their prefill workers, which the builds they
    # ran (0.5.8-0.5.9) read on a PD prefill server as follow_bootstrap_room (server_args.py:790-800@0.5.8.post1): the
    # campaign names no routing, so each engine prices its own, SGLang's ranks queueing their own prompts
    from llm_codesign.serve.disagg import routing_of

    for backend, routing in (("sglang", "random"), ("trtllm", "balanced")):
        row = {"source": "inferencex https://github.com/x/actions/runs/1", "backend": backend, "gpu": "b200", "concurrency": "64"}
        assert "prefill_routing" not in campaigns.settings(row)
        assert routing_of(get_engine(backend), campaigns.settings(row).get("prefill_routing")) == routing


def test_the_silicon_samples_harness_follows_aiconfigurators_workflow():
    # aiperf --num-requests 20C (bench_run.sh.j2:37,97); the benchmark rules' step budget max_batch_size + ISL + 1500
    # (vllm.rule:15, trtllm.rule:15, TensorRT-LLM's rounded up to 32 tokens), max_batch_size priced at the row's requests
    # per attention-DP rank; SGLang's max_prefill_tokens ISL + 1500 (sglang.rule:7), its chunk left at its default, and its
    # chunks mixed into decodes (sglang.rule:8)
    row = {"source": "aiconfigurator-core-0.12.0-silicon-sample:x", "backend": "vllm", "isl": "8192", "osl": "1024", "concurrency": "64",
           "attention_dp": "1"}
    s = campaigns.settings(row)
    assert (s["arrival"], s["rounds"], s["max_num_tokens"]) == ("waves", 20, 8192 + 64 + 1500)
    assert "mixed_chunk" not in s and "max_prefill_tokens" not in s
    # 512 requests over 4 attention-DP ranks: 128 a rank
    assert campaigns.settings({**row, "isl": "1024", "concurrency": "512", "attention_dp": "4"})["max_num_tokens"] == 1024 + 128 + 1500
    # TensorRT-LLM: 1024 + 64 + 1500 = 2588, rounded up to 2592 (81 blocks of 32 tokens)
    assert campaigns.settings({**row, "backend": "trtllm", "isl": "1024"})["max_num_tokens"] == 2592
    s = campaigns.settings({**row, "backend": "sglang", "isl": "1024"})
    assert (s["max_num_tokens"], s["max_prefill_tokens"], s["mixed_chunk"]) == (None, 2524, True)
    # one rule at any ISL the sample holds or not; none where the row records no ISL
    assert campaigns.settings({**row, "isl": "3000", "concurrency": "8"})["max_num_tokens"] == 4508
    assert campaigns.settings({**row, "isl": ""})["max_num_tokens"] is None


def test_the_silicon_samples_older_vllm_builds_fuse_no_all_reduce_with_its_norm():
    # the sample's builds (backend_version) and dates: Llama-3.1-70B's and gpt-oss-120b's runs on vLLM 0.11 and 0.15.1,
    # Kimi-K2.5's INT4 ones on 0.15.1, its B300 TP4 EP4 ones on 0.17.0 (SM100 only); the others' 0.17.0-0.19.0 fuse
    row = {"source": "aiconfigurator-core-0.12.0-silicon-sample:x", "backend": "vllm", "gpu": "b200", "isl": "1024", "osl": "1024",
           "weight_dtype": "nvfp4", "ep": "1"}
    old = {"meta-llama/Llama-3.1-70B", "openai/gpt-oss-120b"}
    for model in (*old, "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"):
        assert campaigns.settings({**row, "model": model}).get("ar_norm_fusion") is (False if model in old else None)
    kimi = {**row, "model": "moonshotai/Kimi-K2.5"}
    assert campaigns.settings({**kimi, "weight_dtype": "int4_wo"})["ar_norm_fusion"] is False
    assert campaigns.settings({**kimi, "gpu": "b300", "ep": "4"})["ar_norm_fusion"] is False
    assert "ar_norm_fusion" not in campaigns.settings({**kimi, "gpu": "b300"})
    assert "ar_norm_fusion" not in campaigns.settings({**row, "model": "openai/gpt-oss-120b", "backend": "sglang"})


def test_a_key_the_table_does_not_know_is_one_line():
    """A misspelt flag or fusion in campaigns.toml is refused where it is read, naming the campaign, the key and the valid
    ones, where it was dropped (a flag) or priced today's build (a fusion) quietly."""
    from importlib import resources

    import pytest

    from llm_codesign.errors import InputError

    text = resources.files("llm_codesign").joinpath("data/measurements/campaigns.toml").read_text()
    assert campaigns.read_campaigns(text) == campaigns.campaigns()
    assert campaigns.fusions_off({"ar_norm_fusion": False, "hop_b_fusion": True, "mixed_chunk": False}) == ("ar_norm",)
    cases = [("set = { ar_norm_fusion = false }", "set = { arnorm_fusion = false }",
              "campaigns.toml [aiconfigurator-core] flags.set: 'arnorm_fusion' is not valid; one of: max_num_tokens, arrival, "
              "max_prefill_tokens, max_running_requests, cuda_graph_max_bs, recv_interval, ignore_eos, mixed_chunk, chunked_prefill, "
              "kv_fraction, rounds, queued_steps, prefill_routing, offline, decode_recv_interval, decode_moe_a2a, sglang_build, per_user_with_ctx, "
              "decode_cuda_graph_max_bs, decode_graphs_to_max_batch, ep_is_tp, act_quant_fusion, "
              "attn_out_fusion, ar_norm_fusion, rope_decode_fusion, hop_b_fusion, pdl_fusion, fp8_bmm_fusion, routing_fusion, mla_meta_fusion, kv_dtype, spec_method, spec_draft_len, spec_acceptance"),
             ("set = { ar_norm_fusion = false }", 'set = { ar_norm_fusion = "no" }',
              "campaigns.toml [aiconfigurator-core] flags.set.ar_norm_fusion: 'no' is not valid; true or false"),
             ("rounds = 20", "round = 20", "campaigns.toml [aiconfigurator-core]: 'round' is not valid; one of: source, flags, arrival, "
              "max_prefill_tokens, max_running_requests, cuda_graph_max_bs, recv_interval, ignore_eos, mixed_chunk, chunked_prefill, "
              "kv_fraction, rounds, queued_steps, prefill_routing, offline, decode_recv_interval, decode_moe_a2a, sglang_build, per_user_with_ctx, "
              "decode_cuda_graph_max_bs, decode_graphs_to_max_batch, ep_is_tp"),
             ("over_isl = {", "over_isls = {", "campaigns.toml [aiconfigurator-core] flags: 'over_isls' is not valid; one of: when, set, "
              "over_isl, over_isl_and_batch, round_up, over_batch"),
             ("over_isl_and_batch = { max_num_tokens", "over_isl_and_batch = { max_num_token",
              "campaigns.toml [aiconfigurator-core] flags.over_isl_and_batch: 'max_num_token' is not valid; one of: max_num_tokens, "
              "max_prefill_tokens"),
             # a misspelt `when` column matched no row; a zero round_up divided by zero in `settings`, with a traceback
             ('when = { backend = "trtllm" }', 'when = { backnd = "trtllm" }',
              "campaigns.toml [aiconfigurator-core] flags.when: 'backnd' is not valid; one of: model, gpu, backend, weight_dtype, "
              "kv_dtype, isl, osl, concurrency, num_gpus, tp, pp, ep, moe_tp, attention_dp, spec_method, spec_draft_len, "
              "prefill_instances, prefill_gpus_per_instance, prefill_tp, prefill_attention_dp, prefill_ep, decode_instances, "
              "decode_gpus_per_instance, decode_tp, decode_attention_dp, decode_ep, min_concurrency, max_concurrency, min_run_id, "
              "max_run_id, measured, min_measured"),
             # a date bound TOML reads as a date, not the builds CSV's text, would compare as neither
             ('min_measured = "2025-12-04"', "min_measured = 2025-12-04",
              "campaigns.toml [aiconfigurator-core] flags.when.min_measured: datetime.date(2025, 12, 4) is not valid; a date, "
              "YYYY-MM-DD (a quoted string)"),
             ("round_up = { max_num_tokens = 32 }", "round_up = { max_num_tokens = 0 }",
              "campaigns.toml [aiconfigurator-core] flags.round_up.max_num_tokens: 0 is not valid; a whole number of tokens, 1 or more"),
             ("over_isl = { max_prefill_tokens = 1500 }", "over_isl = { max_prefill_tokens = -1500 }",
              "campaigns.toml [aiconfigurator-core] flags.over_isl.max_prefill_tokens: -1500 is not valid; a whole number of tokens, "
              "0 or more"),
             ("over_isl_and_batch = { max_num_tokens = 1500 }", 'over_isl_and_batch = { max_num_tokens = "1500" }',
              "campaigns.toml [aiconfigurator-core] flags.over_isl_and_batch.max_num_tokens: '1500' is not valid; a whole number of "
              "tokens, 0 or more"),
             ("tp = 8, min_concurrency = 16", "tp = 8, min_concurrency = 16.5",
              "campaigns.toml [inferencex] flags.when.min_concurrency: 16.5 is not valid; a whole number of at least 1"),
             # a `set` value (and a campaign's own setting) is what its key takes, not text or a number out of range, which
             # reached the pricing as read
             ("set = { max_running_requests = 512,", 'set = { max_running_requests = "many",',
              "campaigns.toml [inferencex] flags.set.max_running_requests: 'many' is not valid; a whole number of at least 1"),
             ("set = { kv_fraction = 0.75 }", "set = { kv_fraction = 2 }",
              "campaigns.toml [inferencex] flags.set.kv_fraction: 2 is not valid; a fraction in (0, 1]"),
             ("set = { recv_interval = 30 }", "set = { recv_interval = 0.5 }",
              "campaigns.toml [inferencex] flags.set.recv_interval: 0.5 is not valid; a whole number of at least 1"),
             ("set = { mixed_chunk = true }", 'set = { mixed_chunk = "yes" }',
              "campaigns.toml [aiconfigurator-core] flags.set.mixed_chunk: 'yes' is not valid; true or false"),
             ("set = { max_num_tokens = 32768, max_prefill_tokens = 32768 }", "set = { max_num_tokens = 32768, max_prefill_tokens = true }",
              "campaigns.toml [inferencex] flags.set.max_prefill_tokens: True is not valid; a whole number of at least 1"),
             ('arrival = "closed_loop"', 'arrival = "closed_loop"\nprefill_routing = "roundrobin"',
              "campaigns.toml [inferencex] prefill_routing: 'roundrobin' is not valid; one of balanced, random"),
             ("set = { decode_recv_interval = 10 }", "set = { decode_recv_interval = 0 }",
              "campaigns.toml [inferencex] flags.set.decode_recv_interval: 0 is not valid; a whole number of at least 1"),
             ('set = { decode_moe_a2a = "deepep_low_latency" }', 'set = { decode_moe_a2a = "deepep" }',
              "campaigns.toml [inferencex] flags.set.decode_moe_a2a: 'deepep' is not valid; one of '', 'deepep_low_latency'"),
             ("rounds = 20", "rounds = 0", "campaigns.toml [aiconfigurator-core] rounds: 0 is not valid; a whole number of at least 1, or inf"),
             ('arrival = "waves"', 'arrival = "poisson"',
              "campaigns.toml [aiconfigurator-core] arrival: 'poisson' is not valid; one of waves, closed_loop, burst")]
    for old, new, line in cases:
        assert old in text
        with pytest.raises(InputError) as e:
            campaigns.read_campaigns(text.replace(old, new, 1))
        assert str(e.value) == line


def test_the_best_perf_pages_rows_take_the_features_of_the_build_each_figure_was_measured_on():
    """One rule for every row of the page (data/measurements/campaigns.toml, docs/modelling-notes.md#revfix10-builds): PDL
    off where the command exports no TRTLLM_ENABLE_PDL=1 on a build before 1.2 (every row's: the spring-2025 build of the
    H200 min-latency figure, release 0.20's b6261862 of the B200 max-throughput refresh, the H200 max-throughput re-run);
    FlashMLA's per-layer metadata (mla_meta off) on every SM90 row, every build before NVIDIA/TensorRT-LLM#12161; the
    gate's sigmoid and bias add apart (routing off) on the spring-2025 build alone, as blog 1's depth scan (MoE TP 2 x EP 4,
    CUTLASS) of that spring; the blog's TRTLLM-backend rows (EP 2) route inside the MoE op."""
    rows = {r["source"].split(":")[1]: r for r in _published()}
    # row: (its build is the spring-2025 one, its command exports TRTLLM_ENABLE_PDL=1, SM90)
    page = {"h200-min-latency": (True, False, True), "h200-max-throughput": (False, False, True),
            "b200-min-latency": (False, True, False), "b200-max-throughput-fp8-kv": (False, False, False),
            "b200-max-throughput-bf16-kv": (False, False, False)}
    assert set(page) == set(rows)
    for name, (spring, exports_pdl, sm90) in page.items():
        want = tuple(f for f, off in (("pdl", not exports_pdl), ("routing", spring), ("mla_meta", sm90)) if off)
        assert campaigns.fusions_off(campaigns.settings(rows[name])) == want, name
    blog = {r["source"]: r for r in _published("trtllm-blog1")}
    assert {campaigns.fusions_off(campaigns.settings(r)) for s, r in blog.items() if "mtp-depth" in s} == {("routing",)}
    assert {campaigns.fusions_off(campaigns.settings(r)) for s, r in blog.items() if "mtp-depth" not in s} == {()}
    assert sum("mtp-depth" in s for s in blog) == 6 and len(blog) == 8


def _published(prefix="trtllm-best-perf"):
    import csv
    from importlib import resources

    rows = []
    for f in ("published_runs.csv", "published_mtp_depth.csv"):
        text = resources.files("llm_codesign").joinpath(f"data/measurements/{f}").read_text()
        rows += [r for r in csv.DictReader(text.splitlines()) if r["source"].startswith(prefix)]
    return rows


def test_tensorrt_llm_builds_before_1_2_launch_nothing_with_pdl():
    """TensorRT-LLM launches with PDL by default from 1.2; a row whose source or the silicon sample's record names an older
    build runs without it (pdl_fusion false) unless its campaign says otherwise. Builds read, as full versions (major, minor,
    patch, rc, post; a final release's rc 10**6): an InferenceX release image, else its run id (TRTLLM_NEW_BUILDS: 1.1.0rc2.post2
    before run 21484110885, 1.2.0rc6.post2 from it), a perf-overview table's release, the sample's backend_version
    (serving_measured_blackwell.builds.csv), else its measured date before the first 1.2 build's (1.2.0rc2, 2025-12-17): 1.1;
    a Dynamo runtime image names Dynamo's version, no build; another engine's row none, whatever alias names TensorRT-LLM."""
    ix = "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1/attempts/1 image=nvcr.io/nvidia/tensorrt-llm/release:"
    ix_run = "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{}/attempts/1 image="
    po = "trtllm_perf_overview_v0_20_total.csv:2 (dominicshanshan/TensorRT-LLM (fork of NVIDIA/TensorRT-LLM) d; v0.20 (PyTorch backend))"
    sample = "aiconfigurator-core-0.12.0-silicon-sample:"
    old, final = (1, 1, 0, 2, 2), 10**6
    cases = [({"source": ix + "1.1.0rc2.post2", "backend": "trtllm"}, old, ("pdl",)),
             ({"source": ix + "1.1.0rc2.post2", "backend": "TensorRT-LLM"}, old, ("pdl",)),
             ({"source": ix + "1.1.0rc2.post2", "backend": "tensorrt-llm"}, old, ("pdl",)),
             ({"source": ix + "1.2.0rc6.post2", "backend": "trtllm"}, (1, 2, 0, 6, 2), ()),
             ({"source": ix + "1.3.0rc14", "backend": "trtllm"}, (1, 3, 0, 14, 0), ()),
             ({"source": ix_run.format(21484110884), "backend": "trtllm"}, old, ("pdl",)),
             ({"source": ix_run.format(21484110885), "backend": "trtllm"}, (1, 2, 0, 6, 2), ()),
             ({"source": po, "backend": "trtllm"}, (0, 20, 0, final, 0), ("pdl",)),
             ({"source": sample + "dsr1_b200_trtllm_fp8_agg_1024x1024_c8_cfg177", "backend": "trtllm"}, old, ("pdl",)),
             ({"source": sample + "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp4_agg_1024x1024_c32_tp8_0_ep8_0_973", "backend": "trtllm"},
              (1, 2, 0, 6, 3), ()),
             # no build recorded, measured 2025-10-29, before the first 1.2 build's 2025-12-17: 1.1
             ({"source": sample + "2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp4_agg_1024x1024_c8_tp2_ep1_257", "backend": "trtllm"}, old,
              ("pdl",)),
             ({"source": "inferencex x image=nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.5.1-rc0.pre3", "backend": "trtllm"}, None, ()),
             ({"source": ix + "1.1.0rc2.post2", "backend": "sglang"}, None, ())]
    for row, build, off in cases:
        assert (campaigns.trtllm_build(row), campaigns.fusions_off(campaigns.settings(row))) == (build, off), row["source"]


def test_trtllm_versions_parse_only_in_known_formats():
    p = campaigns.parse_trtllm_version
    assert p("1.1.0rc2.post2") == (1, 1, 0, 2, 2) and p("1.2.0rc2") == (1, 2, 0, 2, 0) and p("v0.17") == (0, 17, 0, 10**6, 0)
    # full versions compare as releases do: rc < final, post above its rc
    assert p("1.2.0rc2") < p("1.2.0rc6.post2") < p("1.2.0") < p("1.3.0rc1") and p("1.1.0rc2.post2") < campaigns.TRTLLM_PDL_DEFAULT_FROM
    # Dynamo's versions and dev tags are no TensorRT-LLM release
    assert p("0.5.1-rc0.pre3") is None and p("gpt-oss-dev") is None and p("1.1.0-dev.2") is None and p("") is None
    # the shipped builds CSV holds only TensorRT-LLM releases: nothing unparsed for validate's data checks to warn of
    assert campaigns.unparsed_builds() == []


def test_silicon_builds_keeps_only_tensorrt_llm_versions():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from silicon_builds import records

    src = "db-dump/2026-04-27; config_id=1; measured={}T00:00:00.000Z; {}"
    rows = [{"id": "a", "backend": "trtllm", "backend_version": "0.8.1.post2",
             "silicon_data_source": src.format("2026-02-05", "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2")},
            {"id": "b", "backend": "trtllm", "backend_version": "1.3.0rc1",
             "silicon_data_source": "measured=2026-03-17; image=nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.9.0; dynamo_version=0.9.0"},
            {"id": "c", "backend": "trtllm", "backend_version": "1.2.0rc2",
             "silicon_data_source": src.format("2025-12-17", "image=nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc2")},
            {"id": "d", "backend": "trtllm", "backend_version": "", "silicon_data_source": src.format("2025-10-29", "wip=False")},
            {"id": "e", "backend": "trtllm", "backend_version": "gpt-oss-dev", "silicon_data_source": "image=x"},
            {"id": "f", "backend": "vllm", "backend_version": "0.19.0", "silicon_data_source": src.format("2026-04-17", "")}]
    pre = "aiconfigurator-core-0.12.0-silicon-sample:"
    out, rejected = records(rows, [pre + k for k in "abcdef"])
    # another engine's run: its date alone (campaigns.toml's min_measured), never a build
    assert out == [(pre + "a", "", "2026-02-05"), (pre + "b", "1.3.0rc1", "2026-03-17"), (pre + "c", "1.2.0rc2", "2025-12-17"),
                   (pre + "d", "", "2025-10-29"), (pre + "f", "", "2026-04-17")]
    assert rejected == {"0.8.1.post2": 1, "gpt-oss-dev": 1}


def test_which_bundled_runs_lose_pdl():
    """Per bundled file, the runs priced without PDL: the clean sample's 52 on 1.1.0rc2.post2 (39 DeepSeek-R1, 13
    DeepSeek-V3, B200) and its 221 with no build recorded, measured before 2025-12-17 (144 Llama-3.1-70B, 53 DeepSeek-R1,
    19 gpt-oss-120b, 5 DeepSeek-V3; B200 and GB200), InferenceX's 26 on the 1.1.0rc2.post2 image and 125 with no image
    before run 21484110885, every perf-overview row (v0.17, v0.20, v1.0: 881),
    the best-perf page's four runs that export no TRTLLM_ENABLE_PDL=1 on a pre-1.2 build (all but B200 min latency:
    docs/modelling-notes.md#revfix10-builds); none of the disaggregated runs (their recipes export TRTLLM_ENABLE_PDL=1)
    nor MI355X's."""
    import csv
    from collections import Counter
    from importlib import resources

    def off(name):
        text = resources.files("llm_codesign").joinpath(f"data/measurements/{name}").read_text()
        rows = [r for r in csv.DictReader(text.splitlines()) if "pdl" in campaigns.fusions_off(campaigns.settings(r))]
        return len(rows), Counter(r["model"] for r in rows)

    assert off("serving_measured_blackwell_clean.csv") == (273, Counter({"meta-llama/Llama-3.1-70B": 144, "deepseek-ai/DeepSeek-R1": 92,
                                                                     "openai/gpt-oss-120b": 19, "deepseek-ai/DeepSeek-V3": 18}))
    assert off("serving_inferencex_blackwell.csv")[0] == 26 + 125
    assert off("trtllm_perf_overview.csv")[0] == 881
    assert off("published_runs.csv")[0] == 4
    assert off("serving_disagg_blackwell.csv")[0] == off("serving_inferencex_mi355x.csv")[0] == off("published_mtp_depth.csv")[0] == 0


def test_the_disaggregated_sglang_low_latency_recipes_poll_their_decode_workers_every_ten_steps():
    """InferenceX's GB200/GB300 SGLang recipes whose decode workers run no attention DP (the low-latency ones, at commit
    792d8aa4) set scheduler-recv-interval 10 on the decode servers, GB300 FP8's 1; attention-DP decode pools poll every
    loop (SGLang refuses the interval under attention DP), as do B200's recipes and every aggregated row."""
    base = {"source": "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1", "model": "deepseek-ai/DeepSeek-R1-0528",
            "backend": "sglang", "isl": "1024", "osl": "1024", "concurrency": "4", "prefill_instances": "1",
            "decode_instances": "2", "prefill_attention_dp": "1"}
    cases = [({"gpu": "gb200", "weight_dtype": "nvfp4", "decode_attention_dp": "1"}, 10),
             ({"gpu": "gb300", "weight_dtype": "nvfp4", "decode_attention_dp": "1"}, 10),
             ({"gpu": "gb300", "weight_dtype": "fp8_block", "decode_attention_dp": "1"}, 1),
             ({"gpu": "gb200", "weight_dtype": "fp8_block", "decode_attention_dp": "32"}, None),
             ({"gpu": "b200", "weight_dtype": "fp8_block", "decode_attention_dp": "1"}, None),
             ({"gpu": "gb200", "weight_dtype": "fp8_block", "decode_attention_dp": "1", "backend": "trtllm"}, None),
             ({"gpu": "gb200", "weight_dtype": "nvfp4", "tp": "4", "prefill_attention_dp": "", "decode_instances": ""}, None)]
    for extra, want in cases:
        assert campaigns.settings(base | extra).get("decode_recv_interval") == want, extra


def test_sglang_builds_before_0_5_10_stream_the_disaggregated_first_token_a_loop_later():
    """The build an SGLang row's image names (lmsysorg/sglang:vX.Y.Z...), and the first-token rule read from it: before
    0.5.10, or no image named (the shipped rows' December 2025 runs), a loop later; 0.5.10 on, and every other engine, not."""
    src = "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/21831958748/attempts/2 image="
    cases = [("lmsysorg/sglang:v0.5.8.post1-cu130", "sglang", (0, 5, 8), True),
             ("lmsysorg/sglang:v0.5.5.post2 (inferred from same run)", "sglang", (0, 5, 5), True),
             ("lmsysorg/sglang:v0.5.9-cu130", "sglang", (0, 5, 9), True),
             ("lmsysorg/sglang:v0.5.10", "sglang", (0, 5, 10), False),
             ("lmsysorg/sglang:v0.5.12.post1", "sglang", (0, 5, 12), False),
             ("", "sglang", None, False),
             ("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2", "trtllm", None, False)]
    for image, backend, build, late in cases:
        r = {"source": src + image, "backend": backend}
        assert campaigns.sglang_build(r) == build, image
        assert campaigns.first_token_next_loop(r) is late, image
    # no image named: today's build, unless the campaign names the run's (the shipped December 2025 runs, 0.5.5.post2)
    for source, build, late in (("inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20047470193/attempts/3 image=", (0, 5, 5), True),
                                ("inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20413316138/attempts/1 image=", (0, 5, 5), True),
                                ("inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20413316139/attempts/1 image=", None, False),
                                ("my own GB200 runs", None, False)):
        r = {"source": source, "backend": "sglang"}
        assert campaigns.sglang_build(r) == build and campaigns.first_token_next_loop(r) is late, source
    import pytest

    from llm_codesign.errors import InputError

    bad = 'source = "x"\n[[campaign.flags]]\nwhen = { min_run_id = 0 }\nset = { sglang_build = "new" }\n'
    with pytest.raises(InputError, match="sglang_build: 'new' is not valid; an SGLang version"):
        campaigns.read_campaigns('[[campaign]]\n' + bad.replace("min_run_id = 0", "min_run_id = 1"))
    with pytest.raises(InputError, match="min_run_id: 0 is not valid; a whole number of at least 1"):
        campaigns.read_campaigns('[[campaign]]\n' + bad.replace('"new"', '"0.5.5"'))


def test_sglang_rocm_builds_read_from_the_run_id():
    """InferenceX's MI355X SGLang rows by the release of their run's image (amd-master.yaml's history): both formats on the
    sgl-dev 0.5.2 image first; MXFP4 on 0.5.6.post1 from run 20384527243; FP8 on 0.5.5.post3 from run 20720630953 and 0.5.8
    from run 21407590933 (the first run of each, hand-read from serving_inferencex_mi355x.csv where its TPOT steps down).
    Another engine (ATOM), GPU or source: none; the engine read through its aliases."""
    run = "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{}/attempts/1"
    row = {"backend": "sglang", "gpu": "mi355x", "weight_dtype": "fp8_block"}
    cases = [(20216754736, "fp8_block", "0.5.2"), (20720630952, "fp8_block", "0.5.2"), (20720630953, "fp8_block", "0.5.5.post3"),
             (21407590932, "fp8_block", "0.5.5.post3"), (21407590933, "fp8_block", "0.5.8"), (26486957776, "fp8_block", "0.5.8"),
             (18268966303, "mxfp4", "0.5.2"), (20384527242, "mxfp4", "0.5.2"), (20384527243, "mxfp4", "0.5.6.post1"),
             (27213443242, "mxfp4", "0.5.6.post1")]
    for rid, w, build in cases:
        assert campaigns.sglang_rocm_build({**row, "source": run.format(rid), "weight_dtype": w}) == build, (rid, w)
    assert campaigns.sglang_rocm_build({**row, "source": run.format(20216754736), "backend": "SGLang"}) == "0.5.2"
    for other in ({"backend": "atom"}, {"gpu": "b200"}, {"source": "aiconfigurator-core-0.12.0-silicon-sample:x"}, {"weight_dtype": "nvfp4"},
                  {"backend": "no-such-engine"}):
        assert campaigns.sglang_rocm_build({**row, "source": run.format(20216754736), **other}) is None, other
    # 0.5.2's FP8 rows are priced without FP8 MLA products (Engine.without("fp8_bmm")); its MXFP4 ones and later builds with them
    fp8_bmm = {rid_w: campaigns.fusions_off(campaigns.settings({**row, "source": run.format(rid_w[0]), "weight_dtype": rid_w[1]}))
               for rid_w in ((20216754736, "fp8_block"), (20720630953, "fp8_block"), (20216754736, "mxfp4"))}
    assert fp8_bmm == {(20216754736, "fp8_block"): ("fp8_bmm",), (20720630953, "fp8_block"): (), (20216754736, "mxfp4"): ()}


def test_mi355x_rows_kv_cache_is_the_one_their_scripts_pass():
    """The MI355X rows leave kv_dtype blank; the campaign's scripts set it (data/measurements/campaigns.toml, InferenceX
    dsr1_*_mi355x*.sh): ATOM --kv_cache_dtype fp8 always, SGLang MXFP4 --kv-cache-dtype fp8_e4m3 from #330 (run
    20384527243 on), SGLang FP8 from #865 (run 22712332470 on), SGLang's "auto" (the checkpoint's BF16) before."""
    from llm_codesign.cost.memory import kv_bytes_per_token
    from llm_codesign.measure.validate import _precision
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.registry import get_model

    r1 = get_model("deepseek-ai/DeepSeek-R1-0528")
    run = "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{}/attempts/1"

    def kv(backend, dtype, run_id, own=""):
        r = {"source": run.format(run_id), "gpu": "mi355x", "backend": backend, "weight_dtype": dtype, "kv_dtype": own}
        return _precision(r1, r).kv.name

    assert kv("atom", "mxfp4", 21012127808) == kv("atom", "fp8_block", 21012127808) == "fp8"
    assert kv("sglang", "mxfp4", 20216754736) == "bf16" and kv("sglang", "mxfp4", 20384527243) == "fp8"
    assert kv("sglang", "fp8_block", 22469096331) == "bf16" and kv("sglang", "fp8_block", 22712332470) == "fp8"
    assert kv("sglang", "fp8_block", 22469096331, own="fp8") == "fp8"  # the row's own column first
    # a row of no MI355X entry keeps the blank-column rule (FP8 weights: an FP8 cache); no run id matches no bound
    assert _precision(r1, {"source": run.format(22469096331), "gpu": "b200", "backend": "sglang",
                           "weight_dtype": "fp8_block"}).kv.name == "fp8"
    # ... and an MI355X SGLang row naming no run is today's scripts' (FP8), not the oldest runs' BF16
    for w in ("mxfp4", "fp8_block"):
        assert _precision(r1, {"source": "inferencex", "gpu": "mi355x", "backend": "sglang", "weight_dtype": w}).kv.name == "fp8", w
    assert kv("sglang", "mxfp4", 20384527242) == "bf16" and kv("sglang", "fp8_block", 22712332469) == "bf16"
    # what it moves: MLA caches 512 + 64 values a layer a token, 61 layers: 35,136 bytes at FP8, twice that at BF16
    p = _precision(r1, {"source": run.format(20384527243), "gpu": "mi355x", "backend": "sglang", "weight_dtype": "mxfp4"})
    assert float(kv_bytes_per_token(r1, p, Plan(8, 1, 1, 8, 1, 1))) == 61 * 576 * 1


def test_a_campaigns_kv_dtype_and_run_bound_are_checked():
    from importlib import resources

    import pytest

    from llm_codesign.errors import InputError

    text = resources.files("llm_codesign").joinpath("data/measurements/campaigns.toml").read_text()
    for old, new, line in (
            ('set = { kv_dtype = "bf16" }', 'set = { kv_dtype = "fp6" }',
             "campaigns.toml [inferencex] flags.set.kv_dtype: 'fp6' is not valid; one of: "),
            ("max_run_id = 22712332469", "max_run_id = 0",
             "campaigns.toml [inferencex] flags.when.max_run_id: 0 is not valid; a whole number of at least 1"),
            # a weight-only format no engine caches KV in (get_dtype knows it): the formats the CLI takes (check_kv_format)
            ('set = { kv_dtype = "bf16" }', 'set = { kv_dtype = "fp8_block" }',
             "campaigns.toml [inferencex] flags.set.kv_dtype: 'fp8_block' is not valid; one of bf16, fp16, fp8: the KV-cache formats SGLang runs on"),
            ('set = { kv_dtype = "bf16" }', 'set = { kv_dtype = "int4" }',
             "campaigns.toml [inferencex] flags.set.kv_dtype: 'int4' is not valid; one of bf16, fp16, fp8"),
            ('set = { kv_dtype = "bf16" }', 'set = { kv_dtype = "mxfp4" }',
             "campaigns.toml [inferencex] flags.set.kv_dtype: 'mxfp4' is not valid; one of bf16, fp16, fp8"),
            ("set = { ar_norm_fusion = false }", "set = { queued_steps = -1 }",
             "campaigns.toml [aiconfigurator-core] flags.set.queued_steps: -1 is not valid; a number of steps from 0 to 1"),
            # bounds no row meets
            ('weight_dtype = "mxfp4", max_run_id = 20384527242', 'weight_dtype = "mxfp4", min_run_id = 20384527243, max_run_id = 20384527242',
             "campaigns.toml [inferencex] flags.when.min_run_id: 20384527243 is not valid; at most its max_run_id, 20384527242")):
        assert old in text
        with pytest.raises(InputError) as e:
            campaigns.read_campaigns(text.replace(old, new, 1))
        assert str(e.value).startswith(line)


def test_every_shipped_imageless_sglang_disagg_row_has_its_build():
    """Each disaggregated SGLang row naming no image (`image=` blank) is read as a build a campaigns.toml entry names,
    not today's: the December 2025 runs as 0.5.5.post2 and B200 runs 21854539594 / 21933642539 (February 2026, between
    runs naming v0.5.8.post1) as 0.5.8.post1."""
    import csv
    from importlib import resources

    text = resources.files("llm_codesign").joinpath("data/measurements/serving_disagg_blackwell.csv").read_text()
    rows = [r for r in csv.DictReader(text.splitlines()) if r["backend"].strip().lower() == "sglang" and "lmsysorg/sglang:" not in r["source"]]
    assert len(rows) == 60 and [r for r in rows if campaigns.sglang_build(r) is None] == []
    feb = [r for r in rows if campaigns.inferencex_run_id(r["source"]) in (21854539594, 21933642539)]
    assert len(feb) == 12 and {campaigns.sglang_build(r) for r in feb} == {(0, 5, 8)}
    assert all(campaigns.first_token_next_loop(r) for r in feb)


def test_sglang_rocm_build_is_the_inferencex_campaigns_only():
    """A user's row citing an InferenceX run URL but not of the `inferencex` campaign (its source starts otherwise) is
    today's build: no release read, no fp8_bmm off; the campaign's own rows as before. The entries repeating
    SGLANG_ROCM_BUILDS' boundaries in campaigns.toml agree with it."""
    row = {"backend": "sglang", "gpu": "mi355x", "weight_dtype": "fp8_block"}
    user = {**row, "source": "my https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20000/attempts/1"}
    ours = {**row, "source": "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20000/attempts/1"}
    assert campaigns.sglang_rocm_build(user) is None and campaigns.fusions_off(campaigns.settings(user)) == ()
    assert campaigns.sglang_rocm_build(ours) == "0.5.2" and campaigns.fusions_off(campaigns.settings(ours)) == ("fp8_bmm",)
    entries = [e for c in campaigns.campaigns() for e in c.get("flags", ()) if e.get("when", {}).get("gpu") == "mi355x"]
    bounds = {(e["when"].get("weight_dtype"), e["when"]["max_run_id"]) for e in entries if "max_run_id" in e["when"]
              and ("fp8_bmm_fusion" in e["set"] or e["set"].get("kv_dtype") == "bf16" and e["when"].get("weight_dtype") == "mxfp4")}
    assert bounds == {("fp8_block", campaigns.SGLANG_ROCM_BUILDS["fp8_block"][0][0] - 1),
                      ("mxfp4", campaigns.SGLANG_ROCM_BUILDS["mxfp4"][0][0] - 1)}


def test_tensorrt_llm_deepseek_rows_of_the_mtp_dates_run_one_draft_at_the_documented_acceptance():
    # campaigns.toml: the sample's TensorRT-LLM DeepSeek runs measured 2026-01-14, -02-05 and -02-06 (builds CSV) ran MTP-1,
    # their acceptance DeepSeek-V3's report's 85% (1.85 tokens a step); one build (1.1.0rc2.post2) ran both ways by date
    from llm_codesign.measure.validate import _spec, read_rows
    from llm_codesign.spec.plan import SpecDecoding

    rows = {r["source"].split(":", 1)[1]: r for r in read_rows("serving_measured_blackwell_clean.csv")}
    mtp = SpecDecoding("mtp", 1, 1.85)
    assert _spec(rows["2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_agg_1024x1024_c8_tp8_0_ep1_0_1182"]) is None  # 1.2.0rc6.post2, 2026-01-29
    on = [r for r in rows.values() if campaigns._sample_builds().get(r["source"], ("", ""))[1] in ("2026-01-14", "2026-02-05", "2026-02-06")]
    deepseek = [r for r in on if r["backend"] == "trtllm" and r["model"] == "deepseek-ai/DeepSeek-R1"]
    assert len(deepseek) == 78 and all(_spec(r) == mtp for r in deepseek)
    # gpt-oss-120b measured 2026-02-05 has no MTP layer: the entry names DeepSeek's models only
    assert all(_spec(r) is None for r in on if r["model"] == "openai/gpt-oss-120b")
    # a row's own `none` keeps the campaign's speculation off
    assert _spec({**deepseek[0], "spec_method": "none"}) is None


def test_a_campaigns_speculation_is_checked():
    from importlib import resources

    import pytest

    from llm_codesign.errors import InputError

    text = resources.files("llm_codesign").joinpath("data/measurements/campaigns.toml").read_text()
    old = 'set = { spec_method = "mtp", spec_draft_len = 1, spec_acceptance = 1.85 }'
    assert old in text
    for new, line in (('set = { spec_method = "nextn", spec_draft_len = 1, spec_acceptance = 1.85 }',
                       "campaigns.toml [aiconfigurator-core] flags.set.spec_method: 'nextn' is not valid; one of mtp, eagle3, draft"),
                      ('set = { spec_method = "mtp", spec_draft_len = 1, spec_acceptance = 0.85 }',
                       "campaigns.toml [aiconfigurator-core] flags.set.spec_acceptance: 0.85 is not valid; a mean accepted length of at least 1"),
                      ('set = { spec_method = "mtp", spec_draft_len = 0, spec_acceptance = 1.85 }',
                       "campaigns.toml [aiconfigurator-core] flags.set.spec_draft_len: 0 is not valid; a whole number of at least 1")):
        with pytest.raises(InputError) as e:
            campaigns.read_campaigns(text.replace(old, new, 1))
        assert str(e.value).startswith(line)


def test_a_campaigns_own_cuda_graphs_win_over_the_engines_default():
    """TensorRT-LLM's LLM API captures 1-32, 64 and 128 unpadded by default (spec.engines.trtllm); every campaign here sizes
    its own to the run: aiconfigurator's range(1, max_batch_size + 1), InferenceX's padded max CONC (CONC / 4 under
    attention DP), the best-perf page's lists up to max_batch_size. So each row's flag is its batch per attention-DP rank,
    ceil(concurrency / attention_dp): 896 and 384 for the B200 max-throughput runs, 128 for H200's, 1 at one request."""
    rows = {r["source"].split(":")[1]: r for r in _published()}
    want = {"b200-max-throughput-fp8-kv": 896.0, "b200-max-throughput-bf16-kv": 384.0, "h200-max-throughput": 128.0, "b200-min-latency": 1.0}
    assert {k: campaigns.settings(rows[k])["cuda_graph_max_bs"] for k in want} == want
    sample = {"source": "aiconfigurator-core:x", "backend": "trtllm", "concurrency": "256", "attention_dp": "1", "isl": "1024", "osl": "1024"}
    assert campaigns.settings(sample)["cuda_graph_max_bs"] == 256.0
    ix = {"source": "inferencex:1", "backend": "trtllm", "weight_dtype": "nvfp4", "concurrency": "512", "attention_dp": "8", "isl": "1024"}
    assert campaigns.settings(ix)["cuda_graph_max_bs"] == 64.0
    # SGLang's rows keep their scripts' --cuda-graph-max-bs (dsr1_fp4_b200.sh: 256)
    sg = {"source": "inferencex:1", "backend": "sglang", "gpu": "b200", "weight_dtype": "nvfp4", "concurrency": "512", "isl": "1024"}
    assert campaigns.settings(sg)["cuda_graph_max_bs"] == 256.0
    from importlib import resources

    import pytest

    from llm_codesign.errors import InputError

    text = resources.files("llm_codesign").joinpath("data/measurements/campaigns.toml").read_text()
    with pytest.raises(InputError) as e:
        campaigns.read_campaigns(text.replace("over_batch = { cuda_graph_max_bs = 0 }", "over_batch = { cuda_graph_max_bs = -1 }", 1))
    assert str(e.value) == ("campaigns.toml [aiconfigurator-core] flags.over_batch.cuda_graph_max_bs: -1 is not valid; "
                            "a whole number of requests, 0 or more")


def test_trtllm_bench_campaigns_read_tok_s_per_user_with_the_prefill():
    """trtllm-bench's "Per User Output Throughput" is each request's output tokens over its whole latency, the prefill
    included (measure.validate.per_user_with_ctx): the best-perf page's and blog 1's campaigns say so; Artificial
    Analysis's speed after the first token (the Maverick blog) and every serving campaign do not."""
    import pytest

    from llm_codesign.errors import InputError

    for source in ("trtllm-best-perf-deepseek-r1:h200-min-latency", "trtllm-blog1-deepseek-r1-min-latency:b200-strict-mtp3",
                   "trtllm-blog1-deepseek-r1-mtp-depth:b200-mtp3"):
        assert campaigns.settings({"source": source})["per_user_with_ctx"] is True, source
    for source in ("nvidia-blog-llama4-maverick-1000-tps:b200-eagle3", "aiconfigurator-core-0.12.0-silicon-sample:x",
                   "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20047470193/attempts/3 image=",
                   "trtllm_perf_overview_v0_17_total.csv:2"):
        assert "per_user_with_ctx" not in campaigns.settings({"source": source}), source
    with pytest.raises(InputError) as e:
        campaigns.read_campaigns('[[campaign]]\nsource = "x"\nper_user_with_ctx = "yes"\n')
    assert str(e.value) == "campaigns.toml [x] per_user_with_ctx: 'yes' is not valid; true or false"


def test_enable_ep_moe_runs_price_at_ep_equal_to_tp():
    """InferenceX's SGLang NVFP4 B200 runs before d8fe8f73e (2025-11-10) passed --enable-ep-moe, which SGLang read as
    ep_size = tp_size (server_args.py:408-412@0.5.2), with no ep in their config: recorded TP8, EP 1, MoE TP 8, they ran
    EP 8 (campaigns.toml `ep_is_tp`). Such a row prices exactly as the same row written EP 8 / MoE TP 1, and not as written;
    a run after the change (20012793071) keeps its own columns."""
    import csv
    from importlib import resources

    import pytest

    from llm_codesign.errors import InputError
    from llm_codesign.measure.validate import predict_serving

    path = resources.files("llm_codesign").joinpath("data/measurements/serving_inferencex_blackwell.csv")
    rows = [r for r in csv.DictReader(path.open()) if r["backend"] == "sglang" and r["weight_dtype"] == "nvfp4"
            and "/runs/19216506952/" in r["source"] and r["tp"] == "8"]
    assert len(rows) == 1 and (rows[0]["ep"], rows[0]["moe_tp"]) == ("1", "8")
    assert campaigns.settings(rows[0])["ep_is_tp"] is True
    later = dict(rows[0], source=rows[0]["source"].replace("19216506952", "20012793071"))
    assert "ep_is_tp" not in campaigns.settings(later)
    as_run = dict(rows[0], ep="8", moe_tp="1")
    (p_row, p_run, p_later, p_as_run_later), _ = predict_serving([rows[0], as_run, later, dict(as_run, source=later["source"])])
    assert p_row["tpot_ms"] == p_run["tpot_ms"]  # the recorded columns overridden: EP 8, MoE TP 1
    assert p_later["tpot_ms"] != p_as_run_later["tpot_ms"]  # a later run keeps EP 1 / MoE TP 8
    bad = '[[campaign]]\nsource = "x"\n[[campaign.flags]]\nwhen = { min_run_id = 1 }\nset = { ep_is_tp = "yes" }\n'
    with pytest.raises(InputError, match="ep_is_tp: 'yes' is not valid; true or false"):
        campaigns.read_campaigns(bad)
