"""Specs: what is deployed and where — hardware, number formats, model shapes (with the Hugging Face
normaliser and the bundled registry), parallel plans, deployments and workloads, engines."""
