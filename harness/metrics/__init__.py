"""Metric math as plain functions; task ``utils.py`` files are glue that call into it."""
