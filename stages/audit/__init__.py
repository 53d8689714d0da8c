"""The audit flow's stages: judgment snapshots, re-judging, statistics, charts and the report."""
