"""Fast tests: in-process, no subprocess, no Chromium, no sweep over every shared report."""
