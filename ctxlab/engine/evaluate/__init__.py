"""What a replay kept and lost: facts, survival, instructions, after-effects, probes, metrics."""
