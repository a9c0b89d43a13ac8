"""ncuroof's tests: tests/unit (fast, in-process) and tests/integration (CLI, Chromium, sweeps)."""
