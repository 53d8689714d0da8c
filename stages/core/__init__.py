"""Shared plumbing of every flow: artifacts (the contracts between stages), settings, workspace identity, LLM clients, progress."""
