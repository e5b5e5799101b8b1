"""Distilling the question generator with trl + peft QLoRA: arguments, data, training."""
