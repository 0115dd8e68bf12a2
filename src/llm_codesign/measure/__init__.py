"""Measurements: reading kernel tables and serving runs, validating predictions against them,
re-fitting the calibration, data audits, the measured error an estimate carries, and `bench`."""
