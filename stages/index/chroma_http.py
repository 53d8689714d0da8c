"""A Chroma server client that never goes through a proxy to a loopback server.

chromadb's HTTP client builds its httpx session from the environment's proxies (HTTP_PROXY, ALL_PROXY) and offers no
way to turn that off, so in local mode every passage stored on a `chroma run` at 127.0.0.1 went out through whatever
proxy the shell names (or failed at a gateway's 403). Naming the loopback host in NO_PROXY is the one switch httpx
reads; Assay never reaches a loopback host through a proxy, so adding it for the whole process is safe.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from assay.stages.core.llm_clients import proxy_free


def bypass_proxy_for(host: str) -> None:
    """Add `host` to NO_PROXY and no_proxy (both spellings: httpx reads either), keeping what is there. An IPv6
    address goes in bare (`::1`): httpx matches that, and `[::1]` made every later httpx client fail to build."""
    for name in ("NO_PROXY", "no_proxy"):
        present = [h.strip() for h in os.environ.get(name, "").split(",") if h.strip()]
        if host not in present:
            os.environ[name] = ",".join([*present, host])


def http_client(url: str, settings):
    """chromadb.HttpClient for the server at `url`; a loopback server is reached directly, whatever the proxies."""
    import chromadb

    parsed = urlparse(url if "://" in url else f"http://{url}")
    host = parsed.hostname or "127.0.0.1"
    if proxy_free(url):  # reads a scheme-less URL as http, as above
        bypass_proxy_for(host)
    return chromadb.HttpClient(host=host, port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                               ssl=parsed.scheme == "https", settings=settings)
