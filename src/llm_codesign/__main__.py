"""`python -m llm_codesign`: the console entry point, as `llm-codesign` (and `python -m llm_codesign.cli`)."""
from llm_codesign.cli import main

main()
