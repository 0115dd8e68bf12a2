"""Exploration over the cost model: deployment search and Pareto frontiers, shape design, the
guideline lint and the quality proxy."""
