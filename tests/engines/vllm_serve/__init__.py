"""The openai engine against one real `vllm serve` that every module here shares."""
