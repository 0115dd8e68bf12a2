"""llm-codesign: hardware-aware co-design of large language models.

Predicts accuracy (a quality proxy), throughput (output tokens/s per GPU) and interactivity
(tokens/s per user, time to first token) for any model shape on any GPU and deployment.
"""

__version__ = "0.1.0"
