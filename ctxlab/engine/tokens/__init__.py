"""Token counting: the cl100k reference counter and its table, the Qwen tokenizer, stored counts."""
