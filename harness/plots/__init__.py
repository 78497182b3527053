"""Plots written next to results.json (matplotlib, headless)."""
