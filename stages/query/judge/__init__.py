"""Judge backends: the local judge, the LLM judges (Ollama, cloud) and System One; the prompt-injection detector they share lives in `stages.index.injection_detector`."""
