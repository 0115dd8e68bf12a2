"""Rendering results computed elsewhere: CSV, PNG/SVG plots and the self-contained HTML report."""
