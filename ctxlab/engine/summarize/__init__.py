"""Summarisers: the summary request, the offline summariser, recorded summaries, the Claude adapter."""
