"""Data shipped with Assay (installed as `assay.data`): read through `assay.stages.core.config.DATA_DIR`."""
