"""The evaluation engine: requests from tasks, a persistent response store, scoring and outputs."""
