"""Probes: questions about what a compaction removed, their haystack, their scoring, shared sets."""
