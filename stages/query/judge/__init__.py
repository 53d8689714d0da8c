"""Judge backends: the local judge, the LLM judges (Ollama, cloud), and the prompt-injection detector they share."""
