"""Exploration over the cost model: deployment search and Pareto frontiers, shape design, the
guideline lint and the quality proxy."""

# design's bounds, shared by the CLI's options (read at its start, before explore.design is imported) and the API's check
# (explore.design.check_options): far beyond a search anyone runs or a list anyone reads
MAX_CANDIDATES = 1_000_000  # shapes a grid search prices
MAX_TOP = 1000  # designs listed
# design's defaults, one for the CLI, the API (lc.design) and the page's POST /api/design (crev12 #4: the page had H200, 5)
DESIGN_GPU = "b200"
DESIGN_TOP = 10
