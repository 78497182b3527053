"""Cross-run audits: analyses over several models' saved runs (no model is loaded)."""
