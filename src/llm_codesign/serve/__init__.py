"""Serving: step times to serving metrics (TTFT, TPOT, tok/s/user, tok/s/GPU) for aggregated and
disaggregated deployments, and one deployment's full estimate."""
