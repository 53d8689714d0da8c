"""Publish Prefect artifacts only inside a run (direct mode has no API to publish to)."""

from __future__ import annotations

from assay.tasks.lazy import in_prefect_run


def publish_markdown(key: str, markdown: str, description: str) -> None:
    if not in_prefect_run():
        return
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(markdown=markdown, key=key, description=description)
