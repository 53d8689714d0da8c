"""The evaluate flow's stages: SWE-QA retrieval metrics, semble's benchmark, generated judge sets."""
