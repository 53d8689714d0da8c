"""Publish Prefect artifacts only inside a run (direct mode has no API to publish to)."""

from __future__ import annotations


def publish_markdown(key: str, markdown: str, description: str) -> None:
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(markdown=markdown, key=key, description=description)
