"""Slow tests: the CLI in a subprocess, Chromium, fuzzing, fleets, MCP, every-report sweeps."""
