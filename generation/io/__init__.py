"""Shared file formats: JSON/JSONL records, the DPR passage TSV, resumable outputs."""
