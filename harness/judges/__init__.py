"""Judges used by audits: entailment deciders over pairs of responses."""
