"""Secrets in transcript text: the rules (gitleaks-derived) and the masking."""
