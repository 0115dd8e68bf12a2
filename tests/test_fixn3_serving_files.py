"""fixN3: newcomer newc11's findings #7, #11, #12, #13 and #15 (serving answers and the files they write)."""
import json

from conftest import cli

from llm_codesign.explore.export import _per_rank_concurrency

NEMO_DP = "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --data-parallel-size 2"


def test_a_data_parallel_launch_line_splits_the_endpoints_concurrency_over_its_ranks():
    """#11: one `vllm serve --data-parallel-size 2` is one endpoint: a client's 32 in flight are 16 a rank (its front end
    balances), priced as a TP2 instance at 16, not 32 (which read 64 in all). 33 leaves the busiest rank ceil(33/2) = 17."""
    assert _per_rank_concurrency(32, 2, stated_dp=True) == (16, 32)
    assert _per_rank_concurrency(33, 2, stated_dp=True) == (17, 33)
    assert _per_rank_concurrency(32, 2, stated_dp=False) == (32, None)  # an export's replicas: separate instances
    assert _per_rank_concurrency(32, 1, stated_dp=True) == (32, None)
    assert _per_rank_concurrency(None, 2, stated_dp=True) == (None, None)
    code, out, err = cli("import", NEMO_DP, "--gpu", "h100", "--concurrency", "32", "--json")
    assert code == 0, err
    dp = json.loads(out)
    assert (dp["concurrency"], dp["endpoint_concurrency"], dp["replicas"]) == (16, 32, 2)
    code, out, err = cli("import", NEMO_DP.replace(" --data-parallel-size 2", ""), "--gpu", "h100", "--concurrency", "16", "--json")
    one = json.loads(out)
    assert code == 0 and one["concurrency"] == 16 and "endpoint_concurrency" not in one
    assert dp["tpot_ms"] == one["tpot_ms"]  # a rank at 16 is the TP2 instance at 16
    code, text, err = cli("import", NEMO_DP, "--gpu", "h100", "--concurrency", "32")
    assert code == 0, err
    assert "16 requests on the busiest data-parallel rank (--concurrency 32 at the one endpoint, split over its 2 data-parallel ranks)" in text
