"""`python -m llm_codesign.cli`: the console entry point."""
from llm_codesign.cli import main

main()
