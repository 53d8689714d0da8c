"""Judge backends: the local judge and the LLM judges (Ollama, cloud); the prompt-injection detector they share lives in `stages.index.injection_detector`."""
