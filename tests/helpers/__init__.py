"""Helpers shared by tests/unit and tests/integration (import as ``tests.helpers.X``)."""
